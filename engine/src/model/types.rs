//! The engine's public data types: what callers send and what they get back.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::Error;

/// Importance at or above which a conversation counts as pinned (Sekha).
pub const PINNED_IMPORTANCE: u8 = 10;
/// Importance of a new conversation when none is given (Sekha).
pub const DEFAULT_IMPORTANCE: u8 = 5;

/// A conversation's lifecycle status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// In use (the default).
    #[default]
    Active,
    /// Kept but out of the way: excluded from pinned/recent recall and pruning.
    Archived,
}

impl Status {
    pub(crate) fn code(self) -> u8 {
        match self {
            Status::Active => 0,
            Status::Archived => 1,
        }
    }
    pub(crate) fn from_code(code: u8) -> Option<Status> {
        match code {
            0 => Some(Status::Active),
            1 => Some(Status::Archived),
            _ => None,
        }
    }
    /// The lowercase name used on every surface.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Archived => "archived",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Status {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "active" => Ok(Status::Active),
            "archived" => Ok(Status::Archived),
            other => Err(Error::invalid(
                "status",
                format!("unknown status {other:?}: expected \"active\" or \"archived\""),
            )),
        }
    }
}

/// Message content: a string, or OpenAI-style content parts
/// (`[{"type":"text","text":"..."}, {"type":"image_url",...}]`). Only text
/// parts are indexed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Content parts, kept verbatim.
    Parts(Vec<serde_json::Value>),
}

impl Content {
    /// The searchable text: the string itself, or the text parts joined by newlines.
    pub fn text(&self) -> String {
        match self {
            Content::Text(s) => s.clone(),
            Content::Parts(parts) => parts
                .iter()
                .filter(|p| p.get("type").and_then(|t| t.as_str()) == Some("text"))
                .filter_map(|p| p.get("text").and_then(|t| t.as_str()))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Self {
        Content::Text(s.to_string())
    }
}

impl From<String> for Content {
    fn from(s: String) -> Self {
        Content::Text(s)
    }
}

/// A stored conversation (without its messages).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    /// UUID.
    pub id: Uuid,
    /// Human label.
    pub label: String,
    /// Folder path, `/` by default.
    pub folder: String,
    /// Lifecycle status.
    pub status: Status,
    /// 0..=10; 10 means pinned.
    pub importance_score: u8,
    /// Whether `importance_score >= 10`.
    pub pinned: bool,
    /// Whitespace-separated words over all messages' text.
    pub word_count: u64,
    /// Sekha's session counter.
    pub session_count: u32,
    /// Number of messages.
    pub message_count: u32,
    /// Creation time (UTC).
    pub created_at: DateTime<Utc>,
    /// Time of the last change to the conversation or its messages (UTC).
    pub updated_at: DateTime<Utc>,
    /// Free metadata (a JSON object).
    pub metadata: serde_json::Value,
}

/// A stored message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// UUID.
    pub id: Uuid,
    /// Owning conversation.
    pub conversation_id: Uuid,
    /// Author role.
    pub role: String,
    /// Content as given.
    pub content: Content,
    /// Message time (UTC).
    pub timestamp: DateTime<Utc>,
    /// Identifier of the message's vector, once embedded.
    pub embedding_id: Option<String>,
    /// Free metadata (a JSON object).
    pub metadata: serde_json::Value,
}

/// A conversation with its messages in time order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationWithMessages {
    /// The conversation.
    #[serde(flatten)]
    pub conversation: Conversation,
    /// Its messages, oldest first.
    pub messages: Vec<Message>,
}

/// A message to store. This is also the body shape of Sekha's
/// `POST /api/v1/conversations` messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewMessage {
    /// Author role (1..=32 bytes).
    pub role: String,
    /// Content.
    pub content: Content,
    /// Message time; now when absent.
    #[serde(
        default,
        with = "crate::util::time::lenient_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub timestamp: Option<DateTime<Utc>>,
    /// Free metadata (a JSON object); `{}` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
}

impl NewMessage {
    /// A message with `role` and text content, timestamped now.
    pub fn new(role: impl Into<String>, content: impl Into<Content>) -> Self {
        NewMessage {
            role: role.into(),
            content: content.into(),
            timestamp: None,
            metadata: None,
        }
    }
}

/// A conversation to create. Matches Sekha's `POST /api/v1/conversations`
/// body `{label, folder, messages}`, with optional extras.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewConversation {
    /// Human label (required, 1..=500 bytes).
    pub label: String,
    /// Folder path; `/` when absent.
    #[serde(default)]
    pub folder: Option<String>,
    /// Importance 0..=10; 5 when absent.
    #[serde(default)]
    pub importance_score: Option<u8>,
    /// Free metadata (a JSON object).
    #[serde(default)]
    pub metadata: Option<serde_json::Value>,
    /// At least one message.
    pub messages: Vec<NewMessage>,
}

impl NewConversation {
    /// A conversation with a label in folder `/` and the given messages.
    pub fn new(label: impl Into<String>, messages: Vec<NewMessage>) -> Self {
        NewConversation {
            label: label.into(),
            folder: None,
            importance_score: None,
            metadata: None,
            messages,
        }
    }

    /// Sets the folder.
    pub fn in_folder(mut self, folder: impl Into<String>) -> Self {
        self.folder = Some(folder.into());
        self
    }
}

/// Changes to a conversation; `None` fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConversationUpdate {
    /// New label.
    pub label: Option<String>,
    /// New folder.
    pub folder: Option<String>,
    /// New status.
    pub status: Option<Status>,
    /// New importance (0..=10).
    pub importance_score: Option<u8>,
    /// Replacement metadata object.
    pub metadata: Option<serde_json::Value>,
}

/// Scope filters shared by listing, counting, stats and search.
///
/// All given conditions must hold. `folder` is a path prefix on whole path
/// components: `/work` matches `/work` and `/work/py`, not `/workshop`.
/// `since`/`until` bound the conversation's `updated_at` when listing and the
/// message's timestamp when searching (inclusive `since`, exclusive `until`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Filter {
    /// Folder path prefix.
    pub folder: Option<String>,
    /// Exact label.
    pub label: Option<String>,
    /// Status.
    pub status: Option<Status>,
    /// Smallest importance (inclusive).
    pub min_importance: Option<u8>,
    /// Largest importance (inclusive).
    pub max_importance: Option<u8>,
    /// Only pinned (true) or only unpinned (false) conversations.
    pub pinned: Option<bool>,
    /// Lower time bound (inclusive).
    pub since: Option<DateTime<Utc>>,
    /// Upper time bound (exclusive).
    pub until: Option<DateTime<Utc>>,
}

/// Paging: skip `offset`, return at most `limit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Page {
    /// Items to skip.
    pub offset: usize,
    /// Most items to return (1..=1000).
    pub limit: usize,
}

impl Default for Page {
    fn default() -> Self {
        Page {
            offset: 0,
            limit: 50,
        }
    }
}

/// One page of conversations, newest `updated_at` first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationPage {
    /// The page.
    pub conversations: Vec<Conversation>,
    /// Matching conversations in all pages.
    pub total: u64,
    /// Echo of the request.
    pub offset: usize,
    /// Echo of the request.
    pub limit: usize,
}

/// A full-text search request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextQuery {
    /// Query in memdb's query syntax (SPEC.md §"Query syntax").
    pub query: String,
    /// Scope filters.
    #[serde(default)]
    pub filter: Filter,
    /// Only messages of this conversation.
    #[serde(default)]
    pub conversation_id: Option<Uuid>,
    /// Only messages with this role.
    #[serde(default)]
    pub role: Option<String>,
    /// Most hits (1..=1000).
    pub limit: usize,
    /// Hits to skip.
    #[serde(default)]
    pub offset: usize,
}

impl TextQuery {
    /// Top `10` hits for `query`, unfiltered.
    pub fn new(query: impl Into<String>) -> Self {
        TextQuery {
            query: query.into(),
            filter: Filter::default(),
            conversation_id: None,
            role: None,
            limit: 10,
            offset: 0,
        }
    }
}

/// One search hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    /// The message, shared with the row cache (`Arc`: a hit costs no copy
    /// of its content).
    pub message: Arc<Message>,
    /// Its conversation's label.
    pub label: String,
    /// Its conversation's folder.
    pub folder: String,
    /// Higher is better: BM25 (keyword search), cosine similarity
    /// (semantic), or the fused reciprocal-rank score (hybrid).
    pub score: f32,
    /// How the score was made, when the request asked to explain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<ScoreExplain>,
}

/// Totals over the store or a filtered part of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Conversations matched.
    pub total_conversations: u64,
    /// Messages in them.
    pub total_messages: u64,
    /// Words in them.
    pub total_words: u64,
    /// Active conversations.
    pub active: u64,
    /// Archived conversations.
    pub archived: u64,
    /// Pinned conversations.
    pub pinned: u64,
    /// Mean importance (0 when empty).
    pub average_importance: f64,
    /// Conversations per folder.
    pub by_folder: BTreeMap<String, u64>,
    /// Conversations per label.
    pub by_label: BTreeMap<String, u64>,
}

/// Most folders and labels a [`Stats::top`] keeps each.
pub const MAX_STATS_GROUPS: usize = 1000;

impl Stats {
    /// These statistics with only the `n` folders and the `n` labels that
    /// hold the most conversations (ties: by name), so an answer listing
    /// them stays bounded however many distinct labels a store has; the
    /// totals are unchanged. Returns how many folders and labels there were.
    pub fn top(mut self, n: usize) -> (Stats, usize, usize) {
        fn keep(map: &mut BTreeMap<String, u64>, n: usize) -> usize {
            let total = map.len();
            if total > n {
                let mut all: Vec<(String, u64)> = std::mem::take(map).into_iter().collect();
                all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                all.truncate(n);
                *map = all.into_iter().collect();
            }
            total
        }
        let folders = keep(&mut self.by_folder, n);
        let labels = keep(&mut self.by_label, n);
        (self, folders, labels)
    }
}

/// Consistency between the store and the text index.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    /// Conversations in the store.
    pub conversations: u64,
    /// Messages in the store.
    pub messages: u64,
    /// Documents in the text index.
    pub indexed: u64,
    /// Messages (and generic records) the index lacks.
    pub missing_from_index: Vec<Uuid>,
    /// Index documents with no message or record.
    pub extra_in_index: Vec<Uuid>,
    /// LSN of the last write in the store.
    pub store_lsn: u64,
    /// LSN the text index has applied.
    pub text_index_lsn: u64,
    /// LSN of the text index's last checkpoint (durable through a power
    /// loss; SPEC.md §7).
    #[serde(default)]
    pub text_durable_lsn: u64,
    /// Searchable segments in the text index (tiered merges keep this near
    /// `8 x log8(documents)` at most).
    #[serde(default)]
    pub text_segments: u64,
    /// Generic records in the store (SPEC.md §13).
    #[serde(default)]
    pub records: u64,
    /// Generic-record documents in the text index.
    #[serde(default)]
    pub indexed_records: u64,
}

/// Where the text index stands against the store, cheap to read (no scan;
/// for metrics). LSNs as in SPEC.md §7.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TextIndexStatus {
    /// LSN of the last write in the store.
    pub store_lsn: u64,
    /// LSN the index has applied (documents handed to tantivy).
    pub applied_lsn: u64,
    /// LSN of the last (soft) commit: what searches see.
    pub committed_lsn: u64,
    /// LSN of the last checkpoint: what survives a power loss.
    pub durable_lsn: u64,
    /// Searchable segments.
    pub segments: u64,
    /// Bytes of index files held in memory until the next checkpoint.
    pub staged_bytes: u64,
}

/// The row cache's size and counters since open ([`crate::Memdb::row_cache_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RowCacheStats {
    /// `Config::row_cache_bytes`.
    pub budget_bytes: u64,
    /// Estimated bytes held.
    pub bytes: u64,
    /// Messages and conversation rows held.
    pub entries: u64,
    /// Lookups answered from the cache.
    pub hits: u64,
    /// Lookups that read the store.
    pub misses: u64,
}

impl CheckReport {
    /// Whether the index matches the store exactly.
    pub fn is_consistent(&self) -> bool {
        self.missing_from_index.is_empty()
            && self.extra_in_index.is_empty()
            && self.messages == self.indexed
            && self.records == self.indexed_records
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_top_keeps_the_largest_groups_and_their_totals() {
        let mut s = Stats {
            total_conversations: 10,
            ..Stats::default()
        };
        for (i, n) in [("a", 1), ("b", 5), ("c", 3), ("d", 5)] {
            s.by_label.insert(i.to_string(), n);
            s.by_folder.insert(format!("/{i}"), n);
        }
        let (top, folders, labels) = s.clone().top(2);
        assert_eq!((folders, labels), (4, 4));
        assert_eq!(top.by_label.keys().collect::<Vec<_>>(), ["b", "d"]);
        assert_eq!(top.by_folder.len(), 2);
        assert_eq!(top.total_conversations, 10);
        let (same, _, _) = s.clone().top(10);
        assert_eq!(same, s);
    }
}

/// How one vector graph was searched: the filtered-search planner's choice
/// and what it was made from (an `explain` search's `plan`; SPEC.md §9.2).
/// A space's index is a memory-mapped generation plus an in-memory delta,
/// each searched and planned on its own, so a search reports up to two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct VectorPlan {
    /// Which graph of the space's index.
    pub part: IndexPart,
    /// The path the planner chose.
    pub path: VectorPath,
    /// Nodes in that graph (live and tombstoned).
    pub nodes: u64,
    /// Nodes the filter allows: counted for an explicit set, estimated
    /// from a sample of 512 nodes for a predicate (`estimated`), all of
    /// them when unfiltered.
    pub allowed: u64,
    /// Whether `allowed` is a sampled estimate.
    pub estimated: bool,
    /// Allowed-set size at or below which the planner searches exactly
    /// (the larger of `√(ef · nodes)` and 2% of the nodes, at least 1,000).
    pub exact_threshold: u64,
}

/// A graph of a vector space's index (see [`VectorPlan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexPart {
    /// The memory-mapped generation file.
    Generation,
    /// The in-memory delta of vectors written since.
    Delta,
}

/// How a vector graph was searched (see [`VectorPlan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VectorPath {
    /// No filter: a plain HNSW search.
    Unfiltered,
    /// Every allowed node's distance (a small allowed set).
    Exact,
    /// A graph walk over the allowed nodes, a disallowed neighbour standing
    /// in for its own neighbours (ACORN-1).
    TwoHop,
    /// A graph walk through every node, collecting allowed ones (hnswlib's
    /// filtered search; only when forced).
    Walk,
    /// Nothing to search: the graph or the allowed set is empty.
    Empty,
}

/// How one hit's score was made. In hybrid mode every candidate gets its
/// similarity, so `similarity` can be present without `semantic_rank`: a
/// keyword-only candidate's cosine, read from its stored vector.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ScoreExplain {
    /// Rank in the keyword ranking (1 = best), if it was there.
    pub keyword_rank: Option<usize>,
    /// Its BM25 score; `None` when it is not in the keyword ranking.
    pub keyword_score: Option<f32>,
    /// Rank in the semantic ranking (1 = best), if it was there.
    pub semantic_rank: Option<usize>,
    /// Its cosine similarity to the query; in hybrid mode also for a
    /// keyword-only candidate (from its stored vector). `None` when the
    /// message has no vector yet (or there was no semantic ranking).
    pub similarity: Option<f32>,
    /// The fused score (hybrid only), boosts included.
    pub fused: Option<f32>,
    /// What the period the question names added (hybrid only, when it
    /// names one: `PERIOD_BOOST` inside it, 0 outside).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_boost: Option<f32>,
    /// Hybrid neighbour expansion: the rank of the candidate whose
    /// neighbouring turn this is, when that gave it its score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neighbour_of: Option<usize>,
    /// Hybrid keyword coverage: the keyword weight the fusion used, after
    /// the discount for the question's content words the best keyword
    /// match misses (SPEC.md §18.2); absent when coverage is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyword_weight: Option<f32>,
    /// Hybrid: the semantic weight the fusion used when the question lift
    /// raised it (the query asks, SPEC.md §18.2); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic_weight: Option<f32>,
    /// Hybrid speakers: the factor the fused score was multiplied by (1
    /// for a turn of a speaker the question names or of no known speaker,
    /// `1 − weights.speaker` for another speaker's); absent when the stage
    /// did not run (SPEC.md §18.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker_factor: Option<f32>,
    /// What the short-turn stage multiplied the fused score by (below 1
    /// for a short turn that is not a reply); absent when it did not apply
    /// to this hit (SPEC.md §18.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_factor: Option<f32>,
    /// What the session weight multiplied the fused score by (1 and up:
    /// more for a conversation with more near turns); absent when it did
    /// not run (SPEC.md §18.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_factor: Option<f32>,
    /// The place (1 = first) the hit held before the session tail moved
    /// it up to bring in its conversation; absent when it did not move.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_from: Option<usize>,
}

/// Where the bytes of a data directory go ([`crate::Memdb::storage`],
/// `memdb stats --storage`; SPEC.md §3.4).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StorageReport {
    /// Size of `memdb.redb` on disk.
    pub store_file_bytes: u64,
    /// Pages redb has allocated (live and not yet freed), in bytes; the
    /// rest of the file is free space redb reuses before growing it.
    pub store_allocated_bytes: u64,
    /// Every redb table, largest first.
    pub tables: Vec<TableBytes>,
    /// Files under `text/` (the tantivy index).
    pub text_index_bytes: u64,
    /// Files under `vectors/` (HNSW generation files).
    pub vector_files_bytes: u64,
}

/// One redb table's share of the store.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TableBytes {
    /// Table name (SPEC.md §3.1).
    pub name: String,
    /// Rows.
    pub entries: u64,
    /// Bytes of keys and values.
    pub stored_bytes: u64,
    /// Bytes of b-tree structure (page headers, offsets, branch pages).
    pub metadata_bytes: u64,
    /// Bytes of the table's pages holding neither: unfilled page space.
    pub fragmented_bytes: u64,
}

impl TableBytes {
    /// Every byte of the table's pages.
    pub fn total_bytes(&self) -> u64 {
        self.stored_bytes + self.metadata_bytes + self.fragmented_bytes
    }
}
