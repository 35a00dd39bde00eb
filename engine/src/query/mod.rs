//! One search entry point over messages, `Query::search` (Sekha's [`crate::Sekha::search`]), in three modes
//! (SPEC.md §"Search modes"): keyword (BM25 on the text index), semantic
//! (the query's embedding against the message vector space) and hybrid
//! (both rankings fused, by default by relative score with every
//! candidate's similarity; SPEC.md §18). Every surface
//! (CLI, REST, MCP) calls this; none ranks anything itself.
//!
//! This module runs the search and its hybrid pipeline; the parts live
//! beside it: the request and its weights (`request.rs`), fusion
//! (`fusion.rs`), named periods and the scope's timeline (`period.rs`),
//! the stages that read a dialogue's turns (`turns.rs`) and who said a
//! turn (`speaker.rs`).

mod fusion;
mod hits;
mod period;
mod request;
mod sessions;
mod speaker;
mod turns;

pub use period::PERIOD_BOOST;
pub use request::{
    COVERAGE_DEPTH, DEFAULT_ANSWERS, DEFAULT_COVERAGE, DEFAULT_PREVIOUS_TURN,
    DEFAULT_QUESTION_LIFT, DEFAULT_QUESTIONS, DEFAULT_SECOND_NEIGHBOURS, DEFAULT_SEMANTIC_WEIGHT,
    DEFAULT_SESSION_MASS, DEFAULT_SESSION_TAIL, DEFAULT_SESSION_TAIL_RATIO, DEFAULT_SHORT_TURNS,
    DEFAULT_SPEAKER, FusionMethod, FusionWeights, QueryLanguage, SESSION_MASS_TURNS,
    SESSION_TAIL_END, SHORT_TURN_WORDS, SPREAD_WINDOW, SearchMode, SearchRequest, SearchResults,
};

use std::collections::{HashMap, HashSet};

use crate::db::Memdb;
use crate::error::{Error, Result};
use crate::model::filter::{MAX_LIMIT, normalize_filter};
use crate::model::notes::SearchNote;
use crate::model::types::{Filter, ScoreExplain, TextQuery, VectorPlan};
use crate::text::Reading;
use crate::vector::index::VectorSearch;
use crate::vector::spaces::{VectorFilter, VectorHit};
use fusion::{covered_keyword_weight, fuse};
use period::probe_anchor;

/// Largest `offset` a search accepts.
pub const MAX_OFFSET: usize = 10_000;
/// Fewest candidates each ranking contributes to a hybrid fusion.
const MIN_FUSION_DEPTH: usize = 50;

/// The keyword side of a hybrid search whose query is read as syntax
/// ([`QueryLanguage::Syntax`]; natural language builds the same shape in
/// the text index, SPEC.md §16.2). A plain query (no quotes,
/// operators, field filters or wildcards) keeps every word for scoring but
/// requires a match on at least one content (non-stop) word:
/// `+(content words) all words`. So a message that matches only "in" or
/// "how" is no keyword candidate (in a fusion it would rank as high as a
/// real match), while stop words still help rank the real matches. A query
/// using the syntax is kept verbatim. `None` when it has no content word.
/// Stop words are the engine's one list of English function words
/// (NLTK's, in `keywords.rs`).
pub fn hybrid_keyword_query(query: &str) -> Option<String> {
    let syntax = query.contains(['"', ':', '*', '(', ')', '+', '-', '^', '~', '[', ']'])
        || query
            .split_whitespace()
            .any(|w| matches!(w, "AND" | "OR" | "NOT"));
    if syntax {
        return Some(query.to_string());
    }
    let kept: Vec<&str> = query
        .split_whitespace()
        .filter(|w| {
            let bare: String = w
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            !bare.is_empty() && !crate::util::keywords::is_function_word(&bare)
        })
        .collect();
    if kept.is_empty() {
        None
    } else {
        Some(format!(
            "+({}) {}",
            kept.join(" "),
            query.split_whitespace().collect::<Vec<_>>().join(" ")
        ))
    }
}

/// Whether the natural-language query `query` asks: its last character
/// other than white space is a question mark, `?` or the full-width `？`
/// (CJK) or Arabic `؟` ([`FusionWeights::question_lift`]).
fn asks(query: &str) -> bool {
    query.trim_end().ends_with(['?', '？', '؟'])
}

/// How the text index reads the query: `previous_turn`, the weight of
/// the turn before each message (hybrid search only; SPEC.md §18.2).
fn reading(natural: bool, previous_turn: f32) -> Reading {
    if natural {
        Reading::Natural { previous_turn }
    } else {
        Reading::Syntax
    }
}

/// A ranked list of (message id, score), best first.
type Ranking = Vec<(u128, f32)>;

/// The semantic side of a search: the ranking, the query's vector and the
/// message space it was searched in.
struct SemanticSide<'a> {
    ranking: Ranking,
    query: Vec<f32>,
    space: crate::vector::spaces::VectorSpace,
    plan: Vec<VectorPlan>,
    /// Keeps `space` from being deleted by a rebuild's switch while the
    /// search still reads it.
    lease: crate::db::embedding::SpaceLease<'a>,
}

/// The vector search for `k` semantic candidates (clamped to
/// [`MAX_LIMIT`]), its beam at least the index's default.
fn semantic_params(k: usize) -> VectorSearch {
    let k = k.min(MAX_LIMIT);
    VectorSearch {
        k,
        ef: k.max(VectorSearch::default().ef),
    }
}

/// Vector hits as a semantic ranking, those under the request's
/// `min_similarity` dropped.
fn similarity_ranking(hits: Vec<VectorHit>, req: &SearchRequest) -> Ranking {
    let floor = req.min_similarity.unwrap_or(f32::NEG_INFINITY);
    hits.into_iter()
        .filter(|h| h.similarity >= floor)
        .map(|h| (h.record.as_u128(), h.similarity))
        .collect()
}

/// The search pipeline over one store handle (its namespace): made by
/// the systems that search messages ([`crate::Sekha::search`]); it reads
/// the core through the handle's crate-internal API.
#[derive(Clone, Copy)]
pub(crate) struct Query<'a> {
    db: &'a Memdb,
}

impl<'a> Query<'a> {
    pub(crate) fn new(db: &'a Memdb) -> Self {
        Query { db }
    }
}

impl std::ops::Deref for Query<'_> {
    type Target = Memdb;
    fn deref(&self) -> &Memdb {
        self.db
    }
}

impl Query<'_> {
    /// Searches messages by keyword, meaning, or both (see [`SearchMode`]).
    /// Hits are resolved to their message, label and folder; scores are
    /// higher-is-better in every mode.
    pub(crate) fn search(&self, req: &SearchRequest) -> Result<SearchResults> {
        req.validate()?;
        let filter = normalize_filter(&req.filter)?;
        let natural = req.language.is_natural(req.mode);
        if req.mode != SearchMode::Semantic {
            // Over budget is refused outright, not skipped as a keyword
            // side that does not parse is (SPEC §16.1). Natural language
            // can only be too long.
            if natural {
                crate::text::budget::check_natural(&req.query)?;
            } else {
                crate::text::budget::check(&req.query)?;
            }
        }
        let mut notes = Vec::new();
        let window = req.offset + req.limit;
        match req.mode {
            SearchMode::Keyword => {
                if req.min_similarity.is_some() {
                    notes.push(SearchNote::MinSimilarityIgnored);
                }
                if natural && !crate::text::natural::has_words(&req.query) {
                    notes.push(SearchNote::NoWords);
                }
                let ids = self.text_hits_as(
                    &self.text_query(req, &filter, req.limit, req.offset),
                    reading(natural, 0.0),
                )?;
                let mut hits = self.resolve_hits(&ids)?;
                if req.explain {
                    for (i, h) in hits.iter_mut().enumerate() {
                        h.explain = Some(ScoreExplain {
                            keyword_rank: Some(req.offset + i + 1),
                            keyword_score: Some(h.score),
                            ..ScoreExplain::default()
                        });
                    }
                }
                Ok(SearchResults {
                    hits,
                    mode: SearchMode::Keyword,
                    notes,
                    plan: Vec::new(),
                })
            }
            SearchMode::Semantic => {
                let SemanticSide { ranking, plan, .. } =
                    self.semantic_side(req, &filter, window, &mut notes)?;
                let page: Ranking = ranking.into_iter().skip(req.offset).collect();
                let mut hits = self.resolve_hits(&page)?;
                if req.explain {
                    for (i, h) in hits.iter_mut().enumerate() {
                        h.explain = Some(ScoreExplain {
                            semantic_rank: Some(req.offset + i + 1),
                            similarity: Some(h.score),
                            ..ScoreExplain::default()
                        });
                    }
                }
                Ok(SearchResults {
                    hits,
                    mode: SearchMode::Semantic,
                    notes,
                    plan: if req.explain { plan } else { Vec::new() },
                })
            }
            SearchMode::Hybrid => self.hybrid(req, &filter, notes),
        }
    }

    fn text_query(
        &self,
        req: &SearchRequest,
        filter: &Filter,
        limit: usize,
        offset: usize,
    ) -> TextQuery {
        TextQuery {
            query: req.query.clone(),
            filter: filter.clone(),
            conversation_id: req.conversation_id,
            role: req.role.clone(),
            limit,
            offset,
        }
    }

    /// The semantic ranking, with the query vector and the space it was
    /// searched in (hybrid scores keyword-only candidates with them).
    fn semantic_side(
        &self,
        req: &SearchRequest,
        filter: &Filter,
        k: usize,
        notes: &mut Vec<SearchNote>,
    ) -> Result<SemanticSide<'_>> {
        let (embedder, space, lease) = self.semantic_target()?;
        let (query, truncated) = self.query_vector(embedder.as_ref(), &space, &req.query)?;
        if truncated {
            notes.push(SearchNote::QueryTruncated {
                max_tokens: embedder.max_tokens().unwrap_or(0),
            });
        }
        let (pending, capped) = self.pending_for(space.id, 1000)?;
        if pending > 0 {
            notes.push(SearchNote::NotEmbeddedYet {
                pending,
                at_least: capped,
            });
        }
        let vf = VectorFilter {
            scope: filter.clone(),
            conversation_id: req.conversation_id,
            role: req.role.clone(),
            records: None,
        };
        let (hits, plan) =
            self.search_message_vectors(&space.name, &query, semantic_params(k), &vf)?;
        Ok(SemanticSide {
            ranking: similarity_ranking(hits, req),
            query,
            space,
            plan,
            lease,
        })
    }

    /// The most of `query`'s content terms any of the first
    /// [`COVERAGE_DEPTH`] keyword hits holds, in 0..=1 (1 when the query
    /// has no content term: nothing to discount).
    fn keyword_coverage(&self, query: &str, keyword: &Ranking) -> Result<f32> {
        let text = self.text();
        let terms = text.content_terms(query);
        if terms.is_empty() {
            // Nothing to cover (only reporting verbs, say): no message read.
            return Ok(1.0);
        }
        // The messages alone, through the row cache: no conversation read.
        let rows = self.row_reader();
        let mut best: Option<f32> = None;
        for (id, _) in keyword.iter().take(COVERAGE_DEPTH) {
            if let Some(m) = rows.message(*id)? {
                let c = text.coverage(&terms, &m.content.text());
                best = Some(best.map_or(c, |b| b.max(c)));
            }
        }
        Ok(best.unwrap_or(1.0))
    }

    fn hybrid(
        &self,
        req: &SearchRequest,
        filter: &Filter,
        mut notes: Vec<SearchNote>,
    ) -> Result<SearchResults> {
        // Fusion reads at most MAX_LIMIT candidates per ranking, so hybrid
        // pages end 1000 hits deep.
        let depth = (req.offset + req.limit).clamp(MIN_FUSION_DEPTH, MAX_LIMIT);
        // A period the question names ("in May 2023") is a date condition,
        // not words to match: both sides search the rest of the question
        // and the candidates dated inside it are favoured after fusion.
        let natural_query = req.language.is_natural(req.mode);
        let absolute = natural_query
            .then(|| crate::util::dates::query_period(&req.query, None))
            .flatten();
        let relative = natural_query
            && absolute.is_none()
            && crate::util::dates::query_period(&req.query, Some(probe_anchor())).is_some();
        let stripped;
        let req = match absolute {
            Some(p) => {
                let rest = format!("{} {}", &req.query[..p.span.0], &req.query[p.span.1..]);
                if crate::text::natural::has_content(&rest) {
                    stripped = SearchRequest {
                        query: rest,
                        ..req.clone()
                    };
                    &stripped
                } else {
                    req
                }
            }
            None => req,
        };
        let semantic = match self.semantic_side(req, filter, depth, &mut notes) {
            Ok(r) => Some(r),
            Err(e @ (Error::ModelMismatch { .. } | Error::Embedding(_))) => {
                notes.push(SearchNote::SemanticUnavailable {
                    reason: e.to_string(),
                });
                None
            }
            Err(Error::InvalidInput { field, .. }) if field == "mode" => {
                notes.push(SearchNote::NoEmbedder);
                None
            }
            Err(e) => return Err(e),
        };
        let natural = req.language.is_natural(req.mode);
        let keyword_query = if natural {
            // Natural language (SPEC.md §16.2): the text index requires a
            // content word itself; without one, a keyword match would be
            // one through stop words only.
            if !crate::text::natural::has_words(&req.query) {
                notes.push(if semantic.is_some() {
                    SearchNote::KeywordNoWords
                } else {
                    SearchNote::NoWords
                });
                String::new()
            } else if semantic.is_some() && !crate::text::natural::has_content(&req.query) {
                notes.push(SearchNote::KeywordStopWordsOnly);
                String::new()
            } else {
                req.query.clone()
            }
        } else {
            match hybrid_keyword_query(&req.query) {
                Some(q) => q,
                None if semantic.is_some() => {
                    notes.push(SearchNote::KeywordStopWordsOnly);
                    String::new()
                }
                None => req.query.clone(),
            }
        };
        let keyword_text_query = TextQuery {
            query: keyword_query,
            ..self.text_query(req, filter, depth, 0)
        };
        // The turn before counts only in a fused ranking: run as keyword
        // search (no usable embedder), hybrid's hits hold the words asked
        // for, as keyword mode's do (SPEC.md §18.2).
        let previous_turn = if semantic.is_some() {
            req.weights.previous_turn
        } else {
            0.0
        };
        let keyword = match (!keyword_text_query.query.is_empty())
            .then(|| self.text_hits_as(&keyword_text_query, reading(natural, previous_turn)))
            .transpose()
        {
            Ok(r) => r,
            // A query read as syntax may not parse (an unbalanced quote):
            // the semantic ranking still answers. Natural language never
            // fails here.
            Err(Error::InvalidInput { field, reason })
                if field == "query" && semantic.is_some() =>
            {
                notes.push(SearchNote::KeywordSkipped { reason });
                None
            }
            Err(e) => return Err(e),
        };
        let Some(semantic) = semantic else {
            // Keyword only: the page straight from BM25.
            let ids: Ranking = keyword
                .unwrap_or_default()
                .into_iter()
                .skip(req.offset)
                .take(req.limit)
                .collect();
            let mut hits = self.resolve_hits(&ids)?;
            if req.explain {
                for (i, h) in hits.iter_mut().enumerate() {
                    h.explain = Some(ScoreExplain {
                        keyword_rank: Some(req.offset + i + 1),
                        keyword_score: Some(h.score),
                        ..ScoreExplain::default()
                    });
                }
            }
            return Ok(SearchResults {
                hits,
                mode: SearchMode::Keyword,
                notes,
                plan: Vec::new(),
            });
        };
        // Score every candidate on the semantic signal: the exact cosine of
        // each keyword-only candidate, from its stored vector.
        // `_lease` holds the space until the search returns.
        let SemanticSide {
            ranking: semantic,
            query,
            space,
            plan,
            lease: _lease,
        } = semantic;
        let mut keyword = keyword.unwrap_or_default();
        let mut semantic = semantic;
        // A named period's own conversations are searched too, unless a
        // role or time filter narrows the messages (SPEC.md §18.3).
        let period_stage = req.role.is_none() && filter.since.is_none() && filter.until.is_none();
        // The searched conversations' own timeline: the today a relative
        // period is read against, and the conversations that stage searches.
        let timeline = if relative || (absolute.is_some() && period_stage) {
            self.scope_dates(filter, req.conversation_id)?
        } else {
            None
        };
        // The period the question names: a relative one ("last Tuesday")
        // resolved against the scope's latest date, or, in a scope too wide
        // to list, the latest among both rankings' candidates.
        let period = match absolute {
            Some(p) => Some(p),
            None if relative => match timeline.as_ref().and_then(period::ScopeDates::latest) {
                Some(today) => crate::util::dates::query_period(&req.query, Some(today)),
                None => self.relative_period(&req.query, &keyword, &semantic)?,
            },
            None => None,
        };
        // A named period's own conversations, searched on their own: their
        // best turns join both rankings (SPEC.md §18.3).
        if let Some(p) = period
            && period_stage
            && let Some(within) = timeline.as_ref().and_then(|t| t.meeting(&p))
            && !within.is_empty()
        {
            if !keyword_text_query.query.is_empty() {
                // A query the main keyword search could not read was noted
                // there; the period adds nothing to that side then.
                match self.text_hits_within(
                    &keyword_text_query,
                    reading(natural, previous_turn),
                    &within,
                ) {
                    Ok(hits) => period::merge_ranking(&mut keyword, hits),
                    Err(Error::InvalidInput { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            let ids: Vec<u128> = within.iter().map(|c| c.as_u128()).collect();
            let (hits, _) =
                self.search_message_vectors_within(&space, &query, semantic_params(depth), &ids)?;
            period::merge_ranking(&mut semantic, similarity_ranking(hits, req));
        }
        let in_semantic: HashSet<u128> = semantic.iter().map(|x| x.0).collect();
        let keyword_only: Vec<u128> = keyword
            .iter()
            .map(|x| x.0)
            .filter(|id| !in_semantic.contains(id))
            .collect();
        let semantic_fill = self.similarities(&space, &query, &keyword_only)?;
        let mut weights = req.weights;
        // A question leans on meaning (SPEC.md §18.2).
        let lifted = natural_query && weights.question_lift != 1.0 && asks(&req.query);
        if lifted {
            weights.semantic = (weights.semantic * weights.question_lift).min(100.0);
        }
        if weights.coverage > 0.0 && !keyword.is_empty() {
            let covered = self.keyword_coverage(&req.query, &keyword)?;
            weights.keyword = covered_keyword_weight(weights, covered);
        }
        let mut fused = fuse(&keyword, &semantic, &semantic_fill, weights);
        // `explain`: the weights the question moved.
        let keyword_weight = (weights.coverage > 0.0).then_some(weights.keyword);
        let semantic_weight = lifted.then_some(weights.semantic);
        if keyword_weight.is_some() || semantic_weight.is_some() {
            for (_, _, e) in &mut fused {
                e.keyword_weight = keyword_weight;
                e.semantic_weight = semantic_weight;
            }
        }
        if let Some(p) = period {
            self.favour_period(&mut fused, p)?;
        }
        if req.weights.short_turns > 0.0 && natural_query {
            self.discount_short_turns(&mut fused, req.weights.short_turns)?;
        }
        if (req.weights.neighbours > 0.0
            || req.weights.answers > 0.0
            || req.weights.second_neighbours > 0.0)
            && req.role.is_none()
            && filter.since.is_none()
            && filter.until.is_none()
        {
            self.expand_neighbours(&mut fused, req.weights)?;
        }
        let speakers = (req.weights.speaker > 0.0 && natural_query)
            .then_some((req.query.as_str(), req.weights.speaker));
        if speakers.is_some() || req.weights.questions > 0.0 {
            self.weigh_turns(&mut fused, speakers, req.weights.questions)?;
        }
        if req.weights.session_mass > 0.0 || req.weights.session_tail > 0 {
            self.session_pass(&mut fused, req.weights)?;
        }
        if req.weights.per_conversation > 0 {
            self.spread_conversations(&mut fused, req.weights.per_conversation as usize)?;
        }
        let page: Vec<(u128, f32, ScoreExplain)> =
            fused.into_iter().skip(req.offset).take(req.limit).collect();
        let ids: Ranking = page.iter().map(|(id, s, _)| (*id, *s)).collect();
        let explains: HashMap<u128, ScoreExplain> =
            page.into_iter().map(|(id, _, e)| (id, e)).collect();
        let mut hits = self.resolve_hits(&ids)?;
        if req.explain {
            for h in &mut hits {
                h.explain = explains.get(&h.message.id.as_u128()).copied();
            }
        }
        Ok(SearchResults {
            hits,
            mode: SearchMode::Hybrid,
            notes,
            plan: if req.explain { plan } else { Vec::new() },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_asks_when_it_ends_in_a_question_mark() {
        assert!(asks("how was the wrist broken?"));
        assert!(asks("how was the wrist broken ?  \n"));
        assert!(asks("手首はどうして折れたの？"));
        assert!(asks("كيف كسر معصمه؟"));
        assert!(!asks("how was the wrist broken"));
        assert!(!asks("what? no"));
        assert!(!asks(""));
    }

    #[test]
    fn hybrid_keyword_side_requires_a_content_word() {
        assert_eq!(
            hybrid_keyword_query("How long should a  dessert stay in a hot stove?").as_deref(),
            Some("+(long dessert stay hot stove?) How long should a dessert stay in a hot stove?")
        );
        assert_eq!(hybrid_keyword_query("what is it"), None);
        // Query syntax is the user's: kept verbatim.
        for q in [
            "\"in the\" oven",
            "title:the",
            "the AND oven",
            "-the oven",
            "ov*",
        ] {
            assert_eq!(hybrid_keyword_query(q).as_deref(), Some(q));
        }
    }
}
