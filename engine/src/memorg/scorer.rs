//! The multi-factor scorer behind `search_context` (Memorg's
//! `MultiFactorScorer` and `RetrievalSystem.rank_results`), SPEC.md §14.6.
//!
//! `score = 0.4 · semantic + 0.3 · temporal + 0.3 · importance`, summed
//! over the factors that apply and not renormalized (Memorg's rule):
//! - **semantic** applies when the query and the item both have a vector:
//!   their cosine similarity, negative values clamped to 0 (Memorg's
//!   docstring promises 0..1; its code passes negatives through);
//! - **temporal** applies when the query has a time range and the item a
//!   creation time: 0 outside the range, 1 for a zero-length range, else
//!   `(1 − |created − start| / (end − start)) · (0.7 + 0.3 · recency)` with
//!   `recency = 1 / (1 + age_seconds / (365·24·3600))`;
//! - **importance** applies when the item has one: the importance times
//!   `1 + 0.1 · min(views / 1000, 1)`, `1 + 0.2 · min(favorites / 100, 1)`
//!   and `1.2` for a preferred category, capped at 1.
//!
//! Memorg computes all this on attributes its candidates (plain dicts)
//! never have, so every score it returns is 0 and every match type
//! IMPORTANCE. Here candidates carry the fields explicitly, and each
//! result says which factors applied and what each contributed.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::memorg::parse::{Entity, parse_content, query_terms};
use crate::memorg::temporal::{TimeRange, parse_temporal};

/// Memorg's semantic weight.
pub const SEMANTIC_WEIGHT: f64 = 0.4;
/// Memorg's temporal weight.
pub const TEMPORAL_WEIGHT: f64 = 0.3;
/// Memorg's importance weight.
pub const IMPORTANCE_WEIGHT: f64 = 0.3;
/// The temporal factor's recency scale: one year, in seconds.
pub const RECENCY_SCALE_SECONDS: f64 = 365.0 * 24.0 * 3600.0;
/// Largest page size `rank` accepts.
pub const MAX_PER_PAGE: usize = 1000;
/// Memorg's `items_per_page` default.
pub const DEFAULT_PER_PAGE: usize = 10;

/// How a result matched (Memorg's `MatchType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchType {
    /// Found by full-text search only, with no semantic factor.
    Keyword,
    /// Semantic similarity carried it.
    Semantic,
    /// The query's time range carried it.
    Temporal,
    /// Several retrieval paths or factors together.
    Hybrid,
    /// Only its importance scored it.
    Importance,
}

impl MatchType {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            MatchType::Keyword => "keyword",
            MatchType::Semantic => "semantic",
            MatchType::Temporal => "temporal",
            MatchType::Hybrid => "hybrid",
            MatchType::Importance => "importance",
        }
    }
}

/// The scorer's weights (Memorg's constructor arguments).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Weights {
    /// Semantic weight (0.4).
    pub semantic: f64,
    /// Temporal weight (0.3).
    pub temporal: f64,
    /// Importance weight (0.3).
    pub importance: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            semantic: SEMANTIC_WEIGHT,
            temporal: TEMPORAL_WEIGHT,
            importance: IMPORTANCE_WEIGHT,
        }
    }
}

impl Weights {
    /// Checks every weight is finite and ≥ 0.
    pub fn validate(&self) -> Result<()> {
        for (name, w) in [
            ("weights.semantic", self.semantic),
            ("weights.temporal", self.temporal),
            ("weights.importance", self.importance),
        ] {
            if !w.is_finite() || w < 0.0 {
                return Err(Error::invalid(
                    name,
                    format!("{w} is not a finite weight ≥ 0"),
                ));
            }
        }
        Ok(())
    }
}

/// The query side of scoring.
#[derive(Debug, Clone, Copy)]
pub struct ScoringQuery<'a> {
    /// The query's vector, if it was embedded.
    pub embedding: Option<&'a [f32]>,
    /// The query's time range, if it has one.
    pub temporal: Option<&'a TimeRange>,
    /// The reference time for recency (Memorg's `context["current_time"]`).
    pub now: DateTime<Utc>,
    /// Categories the user prefers (Memorg's
    /// `context["user_preferences"]["preferred_categories"]`).
    pub preferred_categories: &'a [String],
}

/// One candidate: the caller's item and what the factors read.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate<T> {
    /// The caller's payload (an id, a row).
    pub item: T,
    /// The item's vector.
    pub embedding: Option<Vec<f32>>,
    /// A similarity the caller already computed (from the ANN search);
    /// used instead of `embedding` when set.
    pub similarity: Option<f64>,
    /// When the item was created.
    pub created_at: Option<DateTime<Utc>>,
    /// The item's importance, 0..=1 (sessions, conversations and topics
    /// have none in Memorg).
    pub importance: Option<f64>,
    /// Views, for the importance boost.
    pub view_count: Option<u64>,
    /// Favorites, for the importance boost.
    pub favorite_count: Option<u64>,
    /// Category, for the preferred-category boost.
    pub category: Option<String>,
    /// Found by the vector (ANN) search.
    pub vector_hit: bool,
    /// Found by the full-text search.
    pub keyword_hit: bool,
}

impl<T> Candidate<T> {
    /// A candidate with no signals yet.
    pub fn new(item: T) -> Candidate<T> {
        Candidate {
            item,
            embedding: None,
            similarity: None,
            created_at: None,
            importance: None,
            view_count: None,
            favorite_count: None,
            category: None,
            vector_hit: false,
            keyword_hit: false,
        }
    }

    /// Reads `view_count`, `favorite_count` (non-negative integers) and
    /// `category` (a string) from the item's metadata, where Memorg's
    /// boosts look for them; other shapes are ignored.
    pub fn with_metadata_signals(mut self, metadata: &Value) -> Candidate<T> {
        self.view_count = metadata.get("view_count").and_then(Value::as_u64);
        self.favorite_count = metadata.get("favorite_count").and_then(Value::as_u64);
        self.category = metadata
            .get("category")
            .and_then(Value::as_str)
            .map(str::to_string);
        self
    }
}

/// One factor's contribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Factor {
    /// `semantic`, `temporal` or `importance`.
    pub name: String,
    /// The factor before weighting, 0..=1.
    pub value: f64,
    /// Its weight.
    pub weight: f64,
    /// `value · weight`: its share of the score.
    pub contribution: f64,
    /// How the value came about.
    pub detail: String,
}

/// A scored candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored<T> {
    /// The caller's payload.
    pub item: T,
    /// Sum of the contributions.
    pub score: f64,
    /// How it matched.
    pub match_type: MatchType,
    /// The factors that applied, in the order semantic, temporal,
    /// importance.
    pub factors: Vec<Factor>,
}

/// Memorg's pagination block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pagination {
    /// 1-based.
    pub current_page: usize,
    /// `ceil(total_items / items_per_page)`.
    pub total_pages: usize,
    /// Candidates ranked.
    pub total_items: usize,
    /// Page size.
    pub items_per_page: usize,
}

/// Memorg's query metadata block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryMetadata {
    /// The query's distinct lowercased whitespace tokens.
    pub query_terms: Vec<String>,
    /// Entities in the query.
    pub entities: Vec<Entity>,
    /// The query's time range, if any.
    pub temporal_constraints: Option<TimeRange>,
}

impl QueryMetadata {
    /// What Memorg's `SimpleQueryProcessor` derives from a query, without a
    /// model: terms, heuristic entities and the time range found relative
    /// to `now` (which Memorg never sets). A model's entities can replace
    /// `entities` afterwards.
    pub fn from_query(query: &str, now: DateTime<Utc>) -> QueryMetadata {
        QueryMetadata {
            query_terms: query_terms(query),
            entities: parse_content(query).entities,
            temporal_constraints: parse_temporal(query, now),
        }
    }
}

/// A ranked page.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedPage<T> {
    /// This page's results, best first.
    pub results: Vec<Scored<T>>,
    /// Where this page sits.
    pub pagination: Pagination,
}

/// Cosine similarity of two vectors, in f64: 0 for empty, mismatched,
/// zero-norm or non-finite input (Memorg's guards).
pub fn cosine_similarity(a: &[f32], b: &[f32]) -> f64 {
    if a.is_empty() || a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    let s = dot / (na.sqrt() * nb.sqrt());
    if s.is_finite() {
        s.clamp(-1.0, 1.0)
    } else {
        0.0
    }
}

/// Memorg's temporal relevance of an item created at `created` for a range.
pub fn temporal_relevance(created: DateTime<Utc>, range: &TimeRange, now: DateTime<Utc>) -> f64 {
    if created < range.start || created > range.end {
        return 0.0;
    }
    let total = seconds(range.end - range.start);
    if total <= 0.0 {
        return 1.0;
    }
    let base = 1.0 - seconds(created - range.start).abs() / total;
    let recency = 1.0 / (1.0 + seconds(now - created).max(0.0) / RECENCY_SCALE_SECONDS);
    base * (0.7 + 0.3 * recency)
}

/// Memorg's boosted importance: views, favorites, preferred category,
/// capped at 1.
pub fn boosted_importance<T>(c: &Candidate<T>, importance: f64, preferred: &[String]) -> f64 {
    let mut s = clamp01(importance);
    if let Some(v) = c.view_count {
        s *= 1.0 + 0.1 * (v as f64 / 1000.0).min(1.0);
    }
    if let Some(f) = c.favorite_count {
        s *= 1.0 + 0.2 * (f as f64 / 100.0).min(1.0);
    }
    if c.category
        .as_ref()
        .is_some_and(|cat| preferred.contains(cat))
    {
        s *= 1.2;
    }
    s.min(1.0)
}

fn seconds(d: chrono::Duration) -> f64 {
    d.num_microseconds()
        .map_or_else(|| d.num_seconds() as f64, |us| us as f64 / 1e6)
}

fn clamp01(x: f64) -> f64 {
    if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) }
}

/// The multi-factor scorer.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MultiFactorScorer {
    /// The weights.
    pub weights: Weights,
}

impl MultiFactorScorer {
    /// A scorer with these weights (checked).
    pub fn new(weights: Weights) -> Result<MultiFactorScorer> {
        weights.validate()?;
        Ok(MultiFactorScorer { weights })
    }

    /// Scores one candidate.
    pub fn score<T>(&self, c: Candidate<T>, q: &ScoringQuery<'_>) -> Scored<T> {
        let w = self.weights;
        let mut factors = Vec::with_capacity(3);
        let semantic = match (c.similarity, q.embedding, c.embedding.as_deref()) {
            (Some(s), _, _) => Some((s, "similarity from the vector search")),
            (None, Some(qv), Some(iv)) => Some((
                cosine_similarity(qv, iv),
                "cosine of query and item vectors",
            )),
            _ => None,
        };
        let semantic = semantic.map(|(s, how)| {
            let v = if s.is_finite() {
                s.clamp(0.0, 1.0)
            } else {
                0.0
            };
            factors.push(Factor {
                name: "semantic".into(),
                value: v,
                weight: w.semantic,
                contribution: v * w.semantic,
                detail: format!(
                    "{how}: {s:.4}{}",
                    if s < 0.0 { " (clamped to 0)" } else { "" }
                ),
            });
            v
        });
        let temporal = match (q.temporal, c.created_at) {
            (Some(range), Some(created)) => {
                let v = temporal_relevance(created, range, q.now);
                factors.push(Factor {
                    name: "temporal".into(),
                    value: v,
                    weight: w.temporal,
                    contribution: v * w.temporal,
                    detail: if v == 0.0 {
                        format!(
                            "created {} is outside \"{}\"",
                            created.to_rfc3339(),
                            range.expression
                        )
                    } else {
                        format!(
                            "created {} within \"{}\"",
                            created.to_rfc3339(),
                            range.expression
                        )
                    },
                });
                Some(v)
            }
            _ => None,
        };
        let importance = c.importance.map(|raw| {
            let v = boosted_importance(&c, raw, q.preferred_categories);
            factors.push(Factor {
                name: "importance".into(),
                value: v,
                weight: w.importance,
                contribution: v * w.importance,
                detail: if v == clamp01(raw) {
                    format!("importance {raw:.4}")
                } else {
                    format!("importance {raw:.4} boosted to {v:.4}")
                },
            });
            v
        });
        let score: f64 = factors.iter().map(|f| f.contribution).sum();
        let match_type = self.match_type(&c, semantic, temporal, importance);
        Scored {
            item: c.item,
            score,
            match_type,
            factors,
        }
    }

    /// Memorg's `_determine_match_type`, with KEYWORD and source-based
    /// HYBRID added:
    /// 1. no semantic factor: TEMPORAL if the temporal factor applies, else
    ///    KEYWORD for a full-text hit, else IMPORTANCE;
    /// 2. semantic but no temporal factor: HYBRID when found by both the
    ///    vector and the full-text search, KEYWORD when found by full text
    ///    only, else SEMANTIC;
    /// 3. semantic and temporal without importance: HYBRID;
    /// 4. all three: the largest weighted factor, ties to SEMANTIC, then
    ///    TEMPORAL, then IMPORTANCE.
    fn match_type<T>(
        &self,
        c: &Candidate<T>,
        semantic: Option<f64>,
        temporal: Option<f64>,
        importance: Option<f64>,
    ) -> MatchType {
        let Some(s) = semantic else {
            return if temporal.is_some() {
                MatchType::Temporal
            } else if c.keyword_hit {
                MatchType::Keyword
            } else {
                MatchType::Importance
            };
        };
        let Some(t) = temporal else {
            return match (c.vector_hit, c.keyword_hit) {
                (true, true) => MatchType::Hybrid,
                (false, true) => MatchType::Keyword,
                _ => MatchType::Semantic,
            };
        };
        let Some(i) = importance else {
            return MatchType::Hybrid;
        };
        let w = self.weights;
        let (s, t, i) = (s * w.semantic, t * w.temporal, i * w.importance);
        let max = s.max(t).max(i);
        if s == max {
            MatchType::Semantic
        } else if t == max {
            MatchType::Temporal
        } else {
            MatchType::Importance
        }
    }

    /// Memorg's `rank_results`: scores every candidate, sorts by score
    /// (highest first; equal scores keep candidate order) and returns page
    /// `page` (1-based) of `per_page`. A page past the end is empty.
    pub fn rank<T>(
        &self,
        candidates: Vec<Candidate<T>>,
        q: &ScoringQuery<'_>,
        page: usize,
        per_page: usize,
    ) -> Result<RankedPage<T>> {
        if page == 0 {
            return Err(Error::invalid("page", "pages start at 1"));
        }
        if per_page == 0 || per_page > MAX_PER_PAGE {
            return Err(Error::invalid(
                "max_results",
                format!("{per_page} is outside 1..={MAX_PER_PAGE}"),
            ));
        }
        let mut scored: Vec<Scored<T>> = candidates.into_iter().map(|c| self.score(c, q)).collect();
        scored.sort_by(|a, b| b.score.total_cmp(&a.score));
        let total_items = scored.len();
        let start = (page - 1).saturating_mul(per_page).min(total_items);
        let end = start.saturating_add(per_page).min(total_items);
        let results: Vec<Scored<T>> = scored.drain(start..end).collect();
        Ok(RankedPage {
            results,
            pagination: Pagination {
                current_page: page,
                total_pages: total_items.div_ceil(per_page),
                total_items,
                items_per_page: per_page,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone};

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 18, 12, 0, 0).unwrap()
    }

    fn q<'a>(emb: Option<&'a [f32]>, t: Option<&'a TimeRange>) -> ScoringQuery<'a> {
        ScoringQuery {
            embedding: emb,
            temporal: t,
            now: now(),
            preferred_categories: &[],
        }
    }

    fn range(start: DateTime<Utc>, end: DateTime<Utc>) -> TimeRange {
        TimeRange {
            start,
            end,
            expression: "test".into(),
        }
    }

    #[test]
    fn cosine_guards_and_values() {
        assert_eq!(cosine_similarity(&[1.0, 0.0], &[1.0, 0.0]), 1.0);
        assert_eq!(cosine_similarity(&[1.0, 0.0], &[0.0, 1.0]), 0.0);
        assert_eq!(cosine_similarity(&[1.0, 0.0], &[-1.0, 0.0]), -1.0);
        assert!((cosine_similarity(&[1.0, 1.0], &[1.0, 0.0]) - 0.5f64.sqrt()).abs() < 1e-12);
        assert_eq!(cosine_similarity(&[], &[]), 0.0);
        assert_eq!(cosine_similarity(&[1.0], &[1.0, 2.0]), 0.0);
        assert_eq!(cosine_similarity(&[0.0, 0.0], &[0.0, 0.0]), 0.0);
        assert_eq!(cosine_similarity(&[f32::NAN, 1.0], &[1.0, 1.0]), 0.0);
        assert_eq!(cosine_similarity(&[f32::INFINITY, 1.0], &[1.0, 1.0]), 0.0);
    }

    #[test]
    fn temporal_relevance_is_memorgs_formula() {
        let start = now() - Duration::days(10);
        let end = now();
        let r = range(start, end);
        // Outside.
        assert_eq!(
            temporal_relevance(start - Duration::seconds(1), &r, now()),
            0.0
        );
        assert_eq!(
            temporal_relevance(end + Duration::seconds(1), &r, now()),
            0.0
        );
        // At the start: base 1, age 10 days.
        let recency = 1.0 / (1.0 + 10.0 * 86_400.0 / RECENCY_SCALE_SECONDS);
        let want = 1.0 * (0.7 + 0.3 * recency);
        assert!((temporal_relevance(start, &r, now()) - want).abs() < 1e-12);
        // Halfway: base 0.5, age 5 days.
        let mid = start + Duration::days(5);
        let recency = 1.0 / (1.0 + 5.0 * 86_400.0 / RECENCY_SCALE_SECONDS);
        assert!((temporal_relevance(mid, &r, now()) - 0.5 * (0.7 + 0.3 * recency)).abs() < 1e-12);
        // At the end: base 0 (Memorg favours the start of the range).
        assert_eq!(temporal_relevance(end, &r, now()), 0.0);
        // Zero-length range.
        assert_eq!(temporal_relevance(start, &range(start, start), now()), 1.0);
    }

    #[test]
    fn importance_boosts_multiply_and_cap() {
        let mut c = Candidate::new(());
        assert_eq!(boosted_importance(&c, 0.5, &[]), 0.5);
        c.view_count = Some(500);
        assert!((boosted_importance(&c, 0.5, &[]) - 0.5 * 1.05).abs() < 1e-12);
        c.favorite_count = Some(1000);
        assert!((boosted_importance(&c, 0.5, &[]) - 0.5 * 1.05 * 1.2).abs() < 1e-12);
        c.category = Some("ai".into());
        let pref = vec!["ai".to_string()];
        assert!((boosted_importance(&c, 0.5, &pref) - 0.5 * 1.05 * 1.2 * 1.2).abs() < 1e-12);
        assert_eq!(boosted_importance(&c, 0.9, &pref), 1.0);
        assert_eq!(boosted_importance(&c, f64::NAN, &pref), 0.0);
        let m = Candidate::new(()).with_metadata_signals(&serde_json::json!({
            "view_count": 2000, "favorite_count": -3, "category": "ai"
        }));
        assert_eq!(m.view_count, Some(2000));
        assert_eq!(m.favorite_count, None);
        assert_eq!(m.category.as_deref(), Some("ai"));
    }

    #[test]
    fn score_sums_weighted_factors_that_apply() {
        let s = MultiFactorScorer::default();
        let qv = [1.0f32, 0.0];
        let mut c = Candidate::new("a");
        c.embedding = Some(vec![1.0, 1.0]);
        c.importance = Some(0.5);
        c.vector_hit = true;
        let r = s.score(c, &q(Some(&qv[..]), None));
        let cos = 0.5f64.sqrt();
        assert!((r.score - (0.4 * cos + 0.3 * 0.5)).abs() < 1e-12, "{r:?}");
        assert_eq!(r.factors.len(), 2);
        assert_eq!(r.factors[0].name, "semantic");
        assert_eq!(r.factors[1].name, "importance");
        assert!((r.factors[1].contribution - 0.15).abs() < 1e-12);
        assert_eq!(r.match_type, MatchType::Semantic);

        // A negative cosine is clamped to 0, not subtracted.
        let mut c = Candidate::new("b");
        c.embedding = Some(vec![-1.0, 0.0]);
        c.importance = Some(0.2);
        let r = s.score(c, &q(Some(&qv[..]), None));
        assert!((r.score - 0.06).abs() < 1e-12);
        assert!(r.factors[0].detail.contains("clamped"));

        // A precomputed similarity wins over vectors.
        let mut c = Candidate::new("c");
        c.similarity = Some(0.25);
        c.embedding = Some(vec![1.0, 0.0]);
        let r = s.score(c, &q(Some(&qv[..]), None));
        assert!((r.score - 0.1).abs() < 1e-12);

        // Nothing applies: score 0, IMPORTANCE (Memorg's every result).
        let r = s.score(Candidate::new("d"), &q(None, None));
        assert_eq!(r.score, 0.0);
        assert!(r.factors.is_empty());
        assert_eq!(r.match_type, MatchType::Importance);
    }

    #[test]
    fn match_types_follow_the_rules() {
        let s = MultiFactorScorer::default();
        let qv = [1.0f32, 0.0];
        let tr = range(now() - Duration::days(10), now());
        let base = || {
            let mut c = Candidate::new(());
            c.created_at = Some(now() - Duration::days(9));
            c.importance = Some(0.1);
            c
        };
        // 1. No semantic factor.
        assert_eq!(
            s.score(base(), &q(None, Some(&tr))).match_type,
            MatchType::Temporal
        );
        let mut kw = base();
        kw.keyword_hit = true;
        assert_eq!(
            s.score(kw.clone(), &q(None, None)).match_type,
            MatchType::Keyword
        );
        assert_eq!(
            s.score(base(), &q(None, None)).match_type,
            MatchType::Importance
        );
        // 2. Semantic, no temporal: by retrieval path.
        let mut sem = base();
        sem.embedding = Some(vec![1.0, 0.0]);
        sem.vector_hit = true;
        assert_eq!(
            s.score(sem.clone(), &q(Some(&qv[..]), None)).match_type,
            MatchType::Semantic
        );
        let mut both = sem.clone();
        both.keyword_hit = true;
        assert_eq!(
            s.score(both, &q(Some(&qv[..]), None)).match_type,
            MatchType::Hybrid
        );
        let mut text_only = sem.clone();
        text_only.vector_hit = false;
        text_only.keyword_hit = true;
        assert_eq!(
            s.score(text_only, &q(Some(&qv[..]), None)).match_type,
            MatchType::Keyword
        );
        // 3. Semantic and temporal without importance.
        let mut no_imp = sem.clone();
        no_imp.importance = None;
        assert_eq!(
            s.score(no_imp, &q(Some(&qv[..]), Some(&tr))).match_type,
            MatchType::Hybrid
        );
        // 4. All three: the dominant weighted factor.
        // semantic 0.4·1 = 0.4 beats temporal 0.3·~0.1 and importance 0.03.
        assert_eq!(
            s.score(sem.clone(), &q(Some(&qv[..]), Some(&tr)))
                .match_type,
            MatchType::Semantic
        );
        // Orthogonal vectors: semantic 0; created at the range start → temporal wins.
        let mut tem = sem.clone();
        tem.embedding = Some(vec![0.0, 1.0]);
        tem.created_at = Some(tr.start);
        let r = s.score(tem.clone(), &q(Some(&qv[..]), Some(&tr)));
        assert_eq!(r.match_type, MatchType::Temporal);
        assert_eq!(r.factors.len(), 3);
        // Outside the range with high importance → IMPORTANCE.
        let mut imp = tem;
        imp.created_at = Some(tr.start - Duration::days(1));
        imp.importance = Some(0.9);
        assert_eq!(
            s.score(imp, &q(Some(&qv[..]), Some(&tr))).match_type,
            MatchType::Importance
        );
        // All zero: the tie goes to SEMANTIC.
        let mut zero = sem;
        zero.embedding = Some(vec![0.0, 1.0]);
        zero.created_at = Some(tr.end);
        zero.importance = Some(0.0);
        assert_eq!(
            s.score(zero, &q(Some(&qv[..]), Some(&tr))).match_type,
            MatchType::Semantic
        );
    }

    #[test]
    fn rank_sorts_stably_and_paginates() {
        let s = MultiFactorScorer::default();
        let cands: Vec<Candidate<usize>> = [0.2, 0.9, 0.5, 0.9, 0.1]
            .iter()
            .enumerate()
            .map(|(i, &imp)| {
                let mut c = Candidate::new(i);
                c.importance = Some(imp);
                c
            })
            .collect();
        let p1 = s.rank(cands.clone(), &q(None, None), 1, 2).unwrap();
        assert_eq!(
            p1.results.iter().map(|r| r.item).collect::<Vec<_>>(),
            [1, 3]
        );
        assert_eq!(
            p1.pagination,
            Pagination {
                current_page: 1,
                total_pages: 3,
                total_items: 5,
                items_per_page: 2
            }
        );
        let p3 = s.rank(cands.clone(), &q(None, None), 3, 2).unwrap();
        assert_eq!(p3.results.iter().map(|r| r.item).collect::<Vec<_>>(), [4]);
        let p9 = s.rank(cands.clone(), &q(None, None), 9, 2).unwrap();
        assert!(p9.results.is_empty());
        assert_eq!(p9.pagination.total_items, 5);
        assert!(
            s.rank(cands.clone(), &q(None, None), 0, 2)
                .unwrap_err()
                .to_string()
                .contains("page")
        );
        assert!(s.rank(cands.clone(), &q(None, None), 1, 0).is_err());
        assert!(
            s.rank(cands, &q(None, None), usize::MAX, MAX_PER_PAGE)
                .unwrap()
                .results
                .is_empty()
        );
        let empty = s
            .rank(Vec::<Candidate<u8>>::new(), &q(None, None), 1, 10)
            .unwrap();
        assert_eq!(empty.pagination.total_pages, 0);
    }

    #[test]
    fn weights_are_checked_and_custom_weights_apply() {
        assert!(
            MultiFactorScorer::new(Weights {
                semantic: -1.0,
                ..Weights::default()
            })
            .is_err()
        );
        assert!(
            MultiFactorScorer::new(Weights {
                temporal: f64::NAN,
                ..Weights::default()
            })
            .is_err()
        );
        let s = MultiFactorScorer::new(Weights {
            semantic: 1.0,
            temporal: 0.0,
            importance: 0.0,
        })
        .unwrap();
        let mut c = Candidate::new(());
        c.similarity = Some(0.7);
        c.importance = Some(1.0);
        assert!((s.score(c, &q(None, None)).score - 0.7).abs() < 1e-12);
    }

    #[test]
    fn query_metadata_without_a_model() {
        let m = QueryMetadata::from_query("What did Alice say about Kubernetes last week?", now());
        assert_eq!(m.query_terms[0], "what");
        assert!(m.query_terms.contains(&"week?".to_string()));
        let names: Vec<&str> = m.entities.iter().map(|e| e.name.as_str()).collect();
        assert!(
            names.contains(&"Alice") && names.contains(&"Kubernetes"),
            "{names:?}"
        );
        let t = m.temporal_constraints.unwrap();
        assert_eq!(t.expression, "last week");
        assert_eq!(t.start, Utc.with_ymd_and_hms(2026, 3, 9, 0, 0, 0).unwrap());
        let json = serde_json::to_value(QueryMetadata::from_query("plain", now())).unwrap();
        assert_eq!(json["temporal_constraints"], Value::Null);
    }
}
