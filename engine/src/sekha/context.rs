//! Context assembly (SPEC.md §19.1): the four phases that turn a query into
//! the messages an LLM should see, within a token budget.
//!
//! 1. **Recall**: semantic top 200 (excluded folders removed), every message
//!    of pinned active conversations, and the last 7 days of active
//!    conversations carrying a preferred label; de-duplicated by message.
//! 2. **Ranking**: `0.5·importance + 0.3·recency + 0.2·label_match` with
//!    `recency = max(0.1, 2^(−days_old/7))` and `label_match = 5` when the
//!    conversation's label is preferred (Sekha's definitions).
//! 3. **Assembly**: greedy packing in rank order into
//!    `floor(0.85 · budget)` tokens; a message that does not fit is skipped
//!    and packing continues.
//! 4. **Enhancement**: each kept message carries a citation (label, folder,
//!    timestamp, ids), also inserted as `metadata.citation`.
//!
//! The ranking and packing are pure functions ([`recency`], [`rank_score`],
//! [`pack`]) so their arithmetic is unit-tested by hand; everything is
//! deterministic given the request's `now`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use memdb_format::ConversationRecord;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::filter::folder_matches;
use crate::model::types::{Content, Status, TextQuery};
use crate::model::validate;
use crate::query::{SearchMode, SearchRequest};
use crate::sekha::Sekha;
use crate::store::conversations::{self, ConversationsView};
use crate::util::time::{from_micros, now, to_micros};
use crate::util::tokens::TokenCounter;

/// Semantic candidates recalled before ranking (Sekha: 200).
pub const SEMANTIC_RECALL: usize = 200;
/// Window of the preferred-label recall, in days (Sekha: 7).
pub const RECENT_LABEL_DAYS: i64 = 7;
/// Share of the budget reserved for the system prompt, in percent (Sekha: 15).
pub const RESERVED_PERCENT: usize = 15;
/// Largest accepted `context_budget`, in tokens.
pub const MAX_CONTEXT_BUDGET: usize = 2_000_000;
/// Most entries in `preferred_labels` or `excluded_folders`.
pub const MAX_CONTEXT_LIST: usize = 100;
/// Longest accepted query, in bytes: the one query limit of every surface
/// (SPEC §16.1).
pub const MAX_CONTEXT_QUERY_BYTES: usize = crate::text::budget::QueryLimits::DEFAULT.max_bytes;
/// Label-match value when the conversation's label is preferred (Sekha: 5.0,
/// so a match adds `0.2 · 5 = 1.0` to the score).
pub const LABEL_MATCH: f64 = 5.0;

fn default_budget() -> usize {
    4000
}

/// A context-assembly request: the body of Sekha's
/// `POST /api/v1/context/assemble`, plus optional `token_counter` and `now`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextRequest {
    /// What the context is for (1..=32 KiB, not blank).
    pub query: String,
    /// Labels whose conversations rank higher and whose last 7 days are recalled.
    #[serde(default)]
    pub preferred_labels: Vec<String>,
    /// Token budget (1..=2,000,000; default 4000); 15% is kept in reserve.
    #[serde(default = "default_budget")]
    pub context_budget: usize,
    /// Folders (and their subfolders) that contribute nothing.
    #[serde(default)]
    pub excluded_folders: Vec<String>,
    /// How tokens are counted (default: 4 characters per token).
    #[serde(default)]
    pub token_counter: TokenCounter,
    /// Semantic hits need a cosine similarity above this (-1..=1, default
    /// 0: orthogonal or opposite messages are not "recalled").
    #[serde(default)]
    pub min_similarity: f32,
    /// The time recency is measured from (default: now). For tests and replays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<DateTime<Utc>>,
}

impl ContextRequest {
    /// A request for `query` with the default budget and nothing preferred or excluded.
    pub fn new(query: impl Into<String>) -> Self {
        ContextRequest {
            query: query.into(),
            preferred_labels: Vec::new(),
            context_budget: default_budget(),
            excluded_folders: Vec::new(),
            token_counter: TokenCounter::Estimate,
            min_similarity: 0.0,
            now: None,
        }
    }
}

/// Where a candidate came from (a message may come from several).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecallSource {
    /// The semantic (or fallback keyword) search.
    Semantic,
    /// A pinned conversation.
    Pinned,
    /// The last 7 days of a preferred label.
    RecentLabel,
}

/// What a kept message points back to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Citation {
    /// The conversation's label.
    pub label: String,
    /// The conversation's folder.
    pub folder: String,
    /// The message's timestamp.
    pub timestamp: DateTime<Utc>,
    /// The conversation.
    pub conversation_id: Uuid,
    /// The message.
    pub message_id: Uuid,
}

/// The three ranking inputs of a message and the resulting score.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ranking {
    /// The conversation's importance (0..=10).
    pub importance: f64,
    /// Whole days between the message and `now` (0 for future messages).
    pub days_old: i64,
    /// `max(0.1, 2^(−days_old/7))`.
    pub recency: f64,
    /// 5 when the label is preferred, else 0.
    pub label_match: f64,
    /// `0.5·importance + 0.3·recency + 0.2·label_match`.
    pub score: f64,
}

/// One message of the assembled context, in Sekha's message shape plus
/// the citation, its ranking and its token cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextMessage {
    /// Message id.
    pub id: Uuid,
    /// Its conversation.
    pub conversation_id: Uuid,
    /// Author role.
    pub role: String,
    /// Content as stored.
    pub content: Content,
    /// Message time.
    pub timestamp: DateTime<Utc>,
    /// The message's vector id, if embedded.
    pub embedding_id: Option<String>,
    /// The message's metadata with `citation` added (Sekha's enhancement).
    pub metadata: serde_json::Value,
    /// The citation (same as `metadata.citation`, typed).
    pub citation: Citation,
    /// Tokens this message costs, as counted by the request's counter.
    pub tokens: usize,
    /// Its ranking.
    pub ranking: Ranking,
    /// Which recall sources found it.
    pub sources: Vec<RecallSource>,
}

/// How many candidates each recall source produced (before de-duplication).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecallCounts {
    /// Semantic hits kept after removing excluded folders.
    pub semantic: usize,
    /// Messages of pinned conversations.
    pub pinned: usize,
    /// Messages of the last 7 days of preferred labels.
    pub recent_label: usize,
    /// Distinct messages after de-duplication.
    pub distinct: usize,
}

/// The assembled context. Serializes with the SDK's `ContextAssembly`
/// fields (`messages`, `token_count`, `conversation_ids`, `labels`) plus
/// the budget arithmetic, recall counts and notes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssembledContext {
    /// Kept messages in rank order (best first).
    pub messages: Vec<ContextMessage>,
    /// Tokens used by `messages` (≤ `target_tokens`).
    pub token_count: usize,
    /// The request's budget.
    pub context_budget: usize,
    /// `floor(budget · 0.85)`: what the messages may use.
    pub target_tokens: usize,
    /// Distinct conversations of the kept messages, in order of first appearance.
    pub conversation_ids: Vec<Uuid>,
    /// Distinct labels of the kept messages, in order of first appearance.
    pub labels: Vec<String>,
    /// Candidate counts per recall source.
    pub recall: RecallCounts,
    /// The time recency was measured from.
    pub now: DateTime<Utc>,
    /// What degraded, e.g. keyword recall standing in for semantic search.
    pub notes: Vec<String>,
}

/// `max(0.1, 2^(−days_old/7))`: a 7-day half-life with a floor (Sekha).
pub fn recency(days_old: i64) -> f64 {
    (-(days_old.max(0) as f64) / 7.0).exp2().max(0.1)
}

/// `0.5·importance + 0.3·recency + 0.2·label_match`.
pub fn rank_score(importance: f64, recency: f64, label_match: f64) -> f64 {
    0.5 * importance + 0.3 * recency + 0.2 * label_match
}

/// Whole days from `then` to `now`, truncated; 0 when `then` is in the future.
pub fn days_old(now: DateTime<Utc>, then: DateTime<Utc>) -> i64 {
    (now - then).num_days().max(0)
}

/// The result of packing: which items were kept, tokens used, and the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packing {
    /// Indexes into the input, in input order.
    pub kept: Vec<usize>,
    /// Sum of the kept items' tokens.
    pub used: usize,
    /// `floor(budget · (100 − 15) / 100)`.
    pub target: usize,
}

/// Greedy packing in the given (rank) order: an item is kept when it fits
/// in what is left of the target, otherwise skipped; packing stops once the
/// target is reached.
pub fn pack(tokens: &[usize], budget: usize) -> Packing {
    let packed: Result<Packing> = pack_with(tokens.len(), budget, |i| Ok(tokens.get(i).copied()));
    packed.unwrap_or(Packing {
        kept: Vec::new(),
        used: 0,
        target: budget.saturating_mul(100 - RESERVED_PERCENT) / 100,
    })
}

/// [`pack`] over `n` items whose token costs are computed only when
/// packing reaches them (`None`: the item vanished, skip it), so a long
/// ranked list costs only the messages actually considered.
fn pack_with(
    n: usize,
    budget: usize,
    mut tokens_of: impl FnMut(usize) -> Result<Option<usize>>,
) -> Result<Packing> {
    let target = budget.saturating_mul(100 - RESERVED_PERCENT) / 100;
    let mut kept = Vec::new();
    let mut used = 0usize;
    for i in 0..n {
        if used >= target {
            break;
        }
        let Some(t) = tokens_of(i)? else { continue };
        if used + t <= target {
            kept.push(i);
            used += t;
        }
    }
    Ok(Packing { kept, used, target })
}

struct Candidate {
    id: u128,
    conv: u128,
    /// Message timestamp (µs), from the search hit or the index key.
    ts: i64,
    sources: Vec<RecallSource>,
    /// Position in the semantic result list (ties in score go to the better hit).
    semantic_rank: usize,
}

impl Sekha<'_> {
    /// Assembles context for `req` (SPEC.md §19.1). Reads only; writes nothing.
    pub fn assemble_context(&self, req: &ContextRequest) -> Result<AssembledContext> {
        let (preferred, excluded) = validate_request(req)?;
        let now = req.now.unwrap_or_else(now);
        let mut notes = Vec::new();

        // Phase 1: recall.
        let semantic =
            self.recall_semantic(&req.query, SEMANTIC_RECALL, req.min_similarity, &mut notes)?;
        let (txn, rows) = self.db.row_snapshot()?;
        let view = ConversationsView::open(&txn)?;
        let mut conv_cache: HashMap<u128, Option<Arc<ConversationRecord>>> = HashMap::new();
        let mut conv_of = |id: u128| -> Result<Option<Arc<ConversationRecord>>> {
            if let Some(c) = conv_cache.get(&id) {
                return Ok(c.clone());
            }
            let c = rows.conversation(id)?;
            conv_cache.insert(id, c.clone());
            Ok(c)
        };
        let is_excluded = |folder: &str| excluded.iter().any(|x| folder_matches(x, folder));

        let mut candidates: Vec<Candidate> = Vec::new();
        let mut index: HashMap<u128, usize> = HashMap::new();
        let mut add = |cands: &mut Vec<Candidate>,
                       (id, ts): (u128, i64),
                       conv: u128,
                       src: RecallSource,
                       rank| match index.get(&id) {
            Some(&i) => {
                let c: &mut Candidate = &mut cands[i];
                if !c.sources.contains(&src) {
                    c.sources.push(src);
                }
                c.semantic_rank = c.semantic_rank.min(rank);
            }
            None => {
                index.insert(id, cands.len());
                cands.push(Candidate {
                    id,
                    conv,
                    ts,
                    sources: vec![src],
                    semantic_rank: rank,
                });
            }
        };
        let mut counts = RecallCounts::default();
        for (rank, (mid, cid, ts)) in semantic.into_iter().enumerate() {
            match conv_of(cid)? {
                Some(c) if !is_excluded(&c.folder) => {
                    counts.semantic += 1;
                    add(
                        &mut candidates,
                        (mid, ts),
                        cid,
                        RecallSource::Semantic,
                        rank,
                    );
                }
                _ => {}
            }
        }
        // At most `target` messages can ever be kept (each costs ≥ 1 token),
        // so per conversation only the newest `target` are recalled.
        let target = pack(&[], req.context_budget).target;
        let per_conv_cap = target.max(1);
        // Pinned: importance ≥ 10, active.
        let ns = self.db.ns_read()?;
        let pinned = conversations::pinned_ids(&txn, ns)?;
        for cid in pinned {
            let Some(c) = conv_of(cid)? else { continue };
            if c.status != Status::Active.code() || is_excluded(&c.folder) {
                continue;
            }
            for m in view.newest_messages(cid, i64::MIN, i64::MAX, per_conv_cap)? {
                counts.pinned += 1;
                add(&mut candidates, m, cid, RecallSource::Pinned, usize::MAX);
            }
        }
        // Recent labeled: the last 7 days of active conversations with a preferred label.
        let since = to_micros(now - Duration::days(RECENT_LABEL_DAYS));
        let until = to_micros(now);
        for label in &preferred {
            for cid in conversations::ids_with_label(&txn, ns, label)? {
                let Some(c) = conv_of(cid)? else { continue };
                if c.status != Status::Active.code() || is_excluded(&c.folder) {
                    continue;
                }
                for m in view.newest_messages(cid, since, until, per_conv_cap)? {
                    counts.recent_label += 1;
                    add(
                        &mut candidates,
                        m,
                        cid,
                        RecallSource::RecentLabel,
                        usize::MAX,
                    );
                }
            }
        }
        counts.distinct = candidates.len();

        // Phase 2: ranking, from conversation rows and timestamps only.
        let preferred_set: HashSet<&str> = preferred.iter().map(String::as_str).collect();
        let mut ranked = Vec::with_capacity(candidates.len());
        for cand in candidates {
            let Some(c) = conv_of(cand.conv)? else {
                continue;
            };
            let ts = from_micros(cand.ts);
            let d = days_old(now, ts);
            let r = recency(d);
            let lm = if preferred_set.contains(c.label.as_str()) {
                LABEL_MATCH
            } else {
                0.0
            };
            let importance = f64::from(c.importance);
            let ranking = Ranking {
                importance,
                days_old: d,
                recency: r,
                label_match: lm,
                score: rank_score(importance, r, lm),
            };
            ranked.push((ranking, cand, c));
        }
        ranked.sort_by(|a, b| {
            b.0.score
                .total_cmp(&a.0.score)
                .then(a.1.semantic_rank.cmp(&b.1.semantic_rank))
                .then(b.1.ts.cmp(&a.1.ts))
                .then(a.1.id.cmp(&b.1.id))
        });

        // Phase 3: assembly; messages are read only when packing reaches them.
        let mut texts: HashMap<usize, (crate::model::types::Message, usize)> = HashMap::new();
        let packing = pack_with(ranked.len(), req.context_budget, |i| {
            let id = ranked[i].1.id;
            let Some(m) = rows.message(id)? else {
                return Ok(None); // deleted since the search
            };
            let msg = crate::model::types::Message::clone(&m);
            let t = req.token_counter.count(&msg.content.text())?;
            texts.insert(i, (msg, t));
            Ok(Some(t))
        })?;

        // Phase 4: enhancement.
        let mut out = AssembledContext {
            messages: Vec::with_capacity(packing.kept.len()),
            token_count: packing.used,
            context_budget: req.context_budget,
            target_tokens: packing.target,
            conversation_ids: Vec::new(),
            labels: Vec::new(),
            recall: counts,
            now,
            notes,
        };
        for &i in &packing.kept {
            let (ranking, cand, conv) = &ranked[i];
            let Some((msg, tokens)) = texts.remove(&i) else {
                continue;
            };
            let citation = Citation {
                label: conv.label.clone(),
                folder: conv.folder.clone(),
                timestamp: msg.timestamp,
                conversation_id: msg.conversation_id,
                message_id: msg.id,
            };
            let mut metadata = match msg.metadata {
                serde_json::Value::Object(o) => o,
                _ => serde_json::Map::new(),
            };
            metadata.insert(
                "citation".into(),
                serde_json::to_value(&citation)
                    .map_err(|e| Error::invalid("citation", e.to_string()))?,
            );
            if !out.conversation_ids.contains(&msg.conversation_id) {
                out.conversation_ids.push(msg.conversation_id);
            }
            if !out.labels.contains(&conv.label) {
                out.labels.push(conv.label.clone());
            }
            out.messages.push(ContextMessage {
                id: msg.id,
                conversation_id: msg.conversation_id,
                role: msg.role,
                content: msg.content,
                timestamp: msg.timestamp,
                embedding_id: msg.embedding_id,
                metadata: serde_json::Value::Object(metadata),
                citation,
                tokens,
                ranking: *ranking,
                sources: cand.sources.clone(),
            });
        }
        Ok(out)
    }

    /// Semantic recall: `(message, conversation, timestamp µs)`, best first.
    ///
    /// The one place that chooses the search mode: semantic search when an
    /// embedder is configured; otherwise, or when semantic search fails,
    /// keyword (BM25) search over the query's words, with a note.
    fn recall_semantic(
        &self,
        query: &str,
        limit: usize,
        min_similarity: f32,
        notes: &mut Vec<String>,
    ) -> Result<Vec<(u128, u128, i64)>> {
        let pairs = |hits: Vec<crate::model::types::SearchHit>| -> Vec<(u128, u128, i64)> {
            hits.into_iter()
                .map(|h| {
                    (
                        h.message.id.as_u128(),
                        h.message.conversation_id.as_u128(),
                        to_micros(h.message.timestamp),
                    )
                })
                .collect()
        };
        if self.db.config().embedder.is_some() {
            // The retrieval `/api/v1/query` runs (hybrid, with its passages,
            // periods and neighbour expansion), so the context holds what a
            // query finds; the similarity floor drops semantic candidates
            // not above it (a keyword match stays).
            let req = SearchRequest::new(query)
                .limit(limit)
                .min_similarity(min_similarity.next_up().min(1.0));
            match self.search(&req) {
                Ok(r) if r.mode == SearchMode::Hybrid => {
                    notes.extend(r.notes.iter().map(ToString::to_string));
                    return Ok(pairs(r.hits));
                }
                Ok(r) => {
                    notes.extend(r.notes.iter().map(ToString::to_string));
                    notes.push("semantic ranking unavailable: keyword (BM25) recall used".into());
                }
                Err(e) => notes.push(format!(
                    "semantic search failed ({e}): keyword (BM25) recall used"
                )),
            }
        } else {
            notes.push("no embedder configured: keyword (BM25) recall used".into());
        }
        // Keyword fallback: the query's words OR-ed, so natural language
        // never trips the query syntax.
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .take(64)
            .map(str::to_lowercase)
            .collect();
        if words.is_empty() {
            notes.push("the query has no words: no search recall".into());
            return Ok(Vec::new());
        }
        let mut q = TextQuery::new(words.join(" "));
        q.limit = limit;
        Ok(pairs(self.search_text(&q)?))
    }
}

fn validate_request(req: &ContextRequest) -> Result<(Vec<String>, Vec<String>)> {
    if req.query.trim().is_empty() {
        return Err(Error::invalid("query", "query is empty"));
    }
    if req.query.len() > MAX_CONTEXT_QUERY_BYTES {
        return Err(Error::invalid(
            "query",
            format!(
                "query is {} bytes; the limit is {MAX_CONTEXT_QUERY_BYTES}",
                req.query.len()
            ),
        ));
    }
    if !(-1.0..=1.0).contains(&req.min_similarity) {
        return Err(Error::invalid(
            "min_similarity",
            format!("{} is outside -1..=1", req.min_similarity),
        ));
    }
    if req.context_budget == 0 || req.context_budget > MAX_CONTEXT_BUDGET {
        return Err(Error::invalid(
            "context_budget",
            format!("{} is outside 1..={MAX_CONTEXT_BUDGET}", req.context_budget),
        ));
    }
    for (field, list) in [
        ("preferred_labels", &req.preferred_labels),
        ("excluded_folders", &req.excluded_folders),
    ] {
        if list.len() > MAX_CONTEXT_LIST {
            return Err(Error::invalid(
                field,
                format!("{} entries; the limit is {MAX_CONTEXT_LIST}", list.len()),
            ));
        }
    }
    let preferred = req
        .preferred_labels
        .iter()
        .enumerate()
        .map(|(i, l)| validate::label(&format!("preferred_labels[{i}]"), l))
        .collect::<Result<Vec<_>>>()?;
    let excluded = req
        .excluded_folders
        .iter()
        .enumerate()
        .map(|(i, f)| validate::folder(&format!("excluded_folders[{i}]"), f))
        .collect::<Result<Vec<_>>>()?;
    Ok((preferred, excluded))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Systems;
    use crate::db::Memdb;
    use crate::model::types::{NewConversation, NewMessage};

    #[test]
    fn recency_halves_every_seven_days_with_a_floor() {
        assert_eq!(recency(0), 1.0);
        assert_eq!(recency(7), 0.5);
        assert_eq!(recency(14), 0.25);
        assert!((recency(3) - 2f64.powf(-3.0 / 7.0)).abs() < 1e-12);
        // 2^(-24/7) = 0.0929 < 0.1: the floor applies from day 24 on.
        assert_eq!(recency(23), 2f64.powf(-23.0 / 7.0));
        assert_eq!(recency(24), 0.1);
        assert_eq!(recency(1000), 0.1);
        // Future messages are "today", not more recent than today.
        assert_eq!(recency(-5), 1.0);
    }

    #[test]
    fn rank_score_matches_hand_computation() {
        // importance 5, today, label match: 2.5 + 0.3 + 1.0.
        assert!((rank_score(5.0, recency(0), LABEL_MATCH) - 3.8).abs() < 1e-12);
        // pinned, a week old, no match: 5.0 + 0.15.
        assert!((rank_score(10.0, recency(7), 0.0) - 5.15).abs() < 1e-12);
        // importance 0, ancient, no match: only the floor, 0.03.
        assert!((rank_score(0.0, recency(365), 0.0) - 0.03).abs() < 1e-12);
        // A label match (+1.0) outweighs two importance points only when
        // recency differs little: importance 7 old (3.53) vs 5 + match today (3.8).
        assert!(rank_score(5.0, recency(0), LABEL_MATCH) > rank_score(7.0, recency(100), 0.0));
    }

    #[test]
    fn days_old_truncates_whole_days() {
        let now = DateTime::parse_from_rfc3339("2026-03-10T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(days_old(now, now - Duration::hours(47)), 1);
        assert_eq!(days_old(now, now - Duration::hours(48)), 2);
        assert_eq!(days_old(now, now + Duration::hours(30)), 0);
    }

    #[test]
    fn packing_reserves_fifteen_percent() {
        // budget 100 → target 85.
        assert_eq!(
            pack(&[85], 100),
            Packing {
                kept: vec![0],
                used: 85,
                target: 85
            }
        );
        assert_eq!(
            pack(&[86], 100),
            Packing {
                kept: vec![],
                used: 0,
                target: 85
            }
        );
        // floor(0.85 · 4000) = 3400; floor(0.85 · 7) = 5.
        assert_eq!(pack(&[], 4000).target, 3400);
        assert_eq!(pack(&[], 7).target, 5);
        assert_eq!(pack(&[1], 1).target, 0);
    }

    #[test]
    fn packing_skips_what_does_not_fit_and_continues() {
        // target 85: 50 fits (50), 40 does not (90), 30 fits (80), 10 does not, 5 fits (85).
        let p = pack(&[50, 40, 30, 10, 5, 1], 100);
        assert_eq!(p.kept, vec![0, 2, 4]);
        assert_eq!(p.used, 85);
        // Exactly filling the target stops packing even if 0-cost items follow.
        let p = pack(&[85, 0], 100);
        assert_eq!(p.kept, vec![0]);
    }

    #[test]
    fn packing_when_nothing_fits() {
        let p = pack(&[100, 200, 90], 100);
        assert!(p.kept.is_empty());
        assert_eq!(p.used, 0);
    }

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn conv(db: &Memdb, label: &str, folder: &str, imp: u8, msgs: &[(&str, &str)]) -> Uuid {
        let mut n = NewConversation::new(
            label,
            msgs.iter()
                .map(|(t, ts)| {
                    let mut m = NewMessage::new("user", *t);
                    m.timestamp = Some(at(ts));
                    m
                })
                .collect(),
        )
        .in_folder(folder);
        n.importance_score = Some(imp);
        db.sekha().create_conversation(n).unwrap().conversation.id
    }

    #[test]
    fn assembles_ranks_and_cites_end_to_end() {
        let dir = tempfile::tempdir().unwrap();
        let db = Memdb::open(dir.path()).unwrap();
        let now = at("2026-03-10T12:00:00Z");
        // Semantic (keyword) hit, importance 5, 14 days old: 2.5 + 0.075 = 2.575.
        let a = conv(
            &db,
            "Rust",
            "/work",
            5,
            &[("borrow checker rules", "2026-02-24T12:00:00Z")],
        );
        // Pinned, no query words, 70 days old: 5 + 0.03 = 5.03.
        let p = conv(
            &db,
            "Facts",
            "/me",
            10,
            &[("my name is Ada", "2025-12-30T12:00:00Z")],
        );
        // Preferred label, 2 days old: 2 + 0.3·2^(-2/7) + 1.0.
        let l = conv(
            &db,
            "Garden",
            "/home",
            4,
            &[("tomatoes need sun", "2026-03-08T12:00:00Z")],
        );
        // Preferred label but 8 days old: outside the 7-day window, not recalled.
        conv(
            &db,
            "Garden",
            "/home",
            4,
            &[("old seeds", "2026-03-02T11:00:00Z")],
        );
        // Matches the query but in an excluded folder.
        conv(
            &db,
            "Secret",
            "/private/x",
            9,
            &[("borrow money", "2026-03-09T12:00:00Z")],
        );
        let mut req = ContextRequest::new("borrow checker?");
        req.preferred_labels = vec!["Garden".into()];
        req.excluded_folders = vec!["/private".into()];
        req.now = Some(now);
        let ctx = db.sekha().assemble_context(&req).unwrap();
        let order: Vec<Uuid> = ctx.messages.iter().map(|m| m.conversation_id).collect();
        assert_eq!(order, vec![p, l, a]);
        let expect_l = 2.0 + 0.3 * 2f64.powf(-2.0 / 7.0) + 1.0;
        assert!((ctx.messages[1].ranking.score - expect_l).abs() < 1e-9);
        assert!((ctx.messages[0].ranking.score - 5.03).abs() < 1e-9);
        assert!((ctx.messages[2].ranking.score - 2.575).abs() < 1e-9);
        assert_eq!(ctx.messages[0].sources, vec![RecallSource::Pinned]);
        assert_eq!(ctx.messages[2].sources, vec![RecallSource::Semantic]);
        assert_eq!(ctx.recall.semantic, 1);
        assert_eq!(ctx.labels, vec!["Facts", "Garden", "Rust"]);
        let cit = &ctx.messages[2].metadata["citation"];
        assert_eq!(cit["label"], "Rust");
        assert_eq!(cit["folder"], "/work");
        assert_eq!(cit["conversation_id"], a.to_string());
        // ceil(len/4) tokens each.
        let used: usize = ctx.messages.iter().map(|m| m.tokens).sum();
        assert_eq!(ctx.token_count, used);
        assert_eq!(ctx.messages[0].tokens, "my name is Ada".len().div_ceil(4));
        assert!(ctx.token_count <= ctx.target_tokens);
    }

    #[test]
    fn budget_limits_and_dedup() {
        let dir = tempfile::tempdir().unwrap();
        let db = Memdb::open(dir.path()).unwrap();
        let now = at("2026-03-10T12:00:00Z");
        // A pinned conversation whose message also matches the query and a
        // preferred label: three sources, one message.
        conv(
            &db,
            "Pins",
            "/",
            10,
            &[("alpha beta gamma delta", "2026-03-10T11:00:00Z")],
        );
        let mut req = ContextRequest::new("alpha");
        req.preferred_labels = vec!["Pins".into()];
        req.now = Some(now);
        let ctx = db.sekha().assemble_context(&req).unwrap();
        assert_eq!(ctx.messages.len(), 1);
        assert_eq!(ctx.recall.distinct, 1);
        assert_eq!(ctx.messages[0].sources.len(), 3);
        // 22 chars → 6 tokens; budget 7 → target 5: nothing fits.
        req.context_budget = 7;
        let ctx = db.sekha().assemble_context(&req).unwrap();
        assert!(ctx.messages.is_empty());
        assert_eq!(ctx.token_count, 0);
        // Budget 8 → target 6: fits exactly.
        req.context_budget = 8;
        let ctx = db.sekha().assemble_context(&req).unwrap();
        assert_eq!(ctx.token_count, 6);
        // Exact counting with cl100k_base gives a different, smaller count.
        req.token_counter = TokenCounter::Cl100kBase;
        if cfg!(feature = "tiktoken") {
            let ctx = db.sekha().assemble_context(&req).unwrap();
            assert_eq!(ctx.token_count, 4);
        } else {
            assert!(db.sekha().assemble_context(&req).is_err());
        }
    }

    #[test]
    fn semantic_recall_with_an_embedder() {
        let dir = tempfile::tempdir().unwrap();
        let embedder = std::sync::Arc::new(crate::Hashing::new(64).unwrap());
        let db = Memdb::open_with(dir.path(), crate::Config::with_embedder(embedder)).unwrap();
        let now = at("2026-03-10T12:00:00Z");
        let a = conv(
            &db,
            "Rust",
            "/work",
            5,
            &[("borrow checker rules", "2026-03-09T12:00:00Z")],
        );
        conv(
            &db,
            "Other",
            "/work",
            5,
            &[("weather tomorrow", "2026-03-09T12:00:00Z")],
        );
        let mut req = ContextRequest::new("borrow checker");
        req.now = Some(now);
        let ctx = db.sekha().assemble_context(&req).unwrap();
        assert!(
            !ctx.notes
                .iter()
                .any(|n| n.contains("keyword (BM25) recall")),
            "{:?}",
            ctx.notes
        );
        // The unrelated message shares no hashed word (similarity 0) and is
        // not recalled; with the floor lowered below 0 it is.
        assert_eq!(ctx.messages.len(), 1);
        assert_eq!(ctx.messages[0].conversation_id, a);
        assert_eq!(ctx.messages[0].sources, vec![RecallSource::Semantic]);
        assert_eq!(ctx.recall.semantic, 1);
        req.min_similarity = -1.0;
        let ctx = db.sekha().assemble_context(&req).unwrap();
        assert_eq!(ctx.recall.semantic, 2);
    }

    #[test]
    fn bad_requests_are_invalid_input() {
        let dir = tempfile::tempdir().unwrap();
        let db = Memdb::open(dir.path()).unwrap();
        let field = |r: &ContextRequest| match db.sekha().assemble_context(r) {
            Err(Error::InvalidInput { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(&ContextRequest::new("  ")), "query");
        let mut r = ContextRequest::new("x");
        r.context_budget = 0;
        assert_eq!(field(&r), "context_budget");
        let mut r = ContextRequest::new("x");
        r.excluded_folders = vec!["nope".into()];
        assert_eq!(field(&r), "excluded_folders[0]");
        let mut r = ContextRequest::new("x");
        r.min_similarity = f32::NAN;
        assert_eq!(field(&r), "min_similarity");
        let mut r = ContextRequest::new("x");
        r.preferred_labels = vec!["".into()];
        assert_eq!(field(&r), "preferred_labels[0]");
        // A query with only punctuation recalls nothing and says so.
        let ctx = db
            .sekha()
            .assemble_context(&ContextRequest::new("?!"))
            .unwrap();
        assert!(ctx.messages.is_empty());
        assert!(ctx.notes.iter().any(|n| n.contains("no words")));
    }
}
