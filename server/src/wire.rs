//! REST wire types: request bodies and query strings as Sekha's clients send
//! them, responses as they read them, converted from and to engine types.
//!
//! Only this module (and `tools`) knows the JSON shapes; handlers convert and
//! call the engine. Every type derives `ToSchema` so `/openapi.json` is
//! generated from them.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use memdb::{
    Content, Conversation, ConversationWithMessages, Message, NewConversation, NewMessage,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::error::ApiError;

/// Longest accepted search query, in bytes.
pub const MAX_QUERY_BYTES: usize = memdb::QueryLimits::DEFAULT.max_bytes;

// ----- requests -----------------------------------------------------------

/// A message to store (Sekha's message shape).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct MessageIn {
    /// Author role: 1..=32 ASCII letters, digits, `_`, `-` (e.g. `user`).
    pub role: String,
    /// A non-blank string, or an array of OpenAI content parts.
    #[schema(value_type = Value)]
    pub content: Value,
    /// RFC 3339 or naive ISO timestamp (UTC); now when absent or null.
    #[serde(default)]
    pub timestamp: Option<String>,
    /// A JSON object; `{}` when absent or null.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
}

/// `POST /api/v1/conversations` body.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct CreateConversation {
    /// Label, 1..=500 bytes.
    pub label: String,
    /// Folder path starting with `/`; `/` when absent or null.
    #[serde(default)]
    pub folder: Option<String>,
    /// Importance 0..=10 (rounded to an integer); 5 when absent or null.
    #[serde(default)]
    pub importance_score: Option<f64>,
    /// A JSON object.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    /// At least one message.
    pub messages: Vec<MessageIn>,
}

/// Converts a JSON content value into engine content.
pub fn content(field: &str, v: Value) -> Result<Content, ApiError> {
    match v {
        Value::String(s) => Ok(Content::Text(s)),
        Value::Array(parts) => Ok(Content::Parts(parts)),
        _ => Err(ApiError::invalid(
            field,
            "expected a string or an array of content parts",
        )),
    }
}

/// Converts a 0..=10 number into the engine's integer importance (rounded).
pub fn importance(field: &str, v: f64) -> Result<u8, ApiError> {
    if !v.is_finite() || !(0.0..=10.0).contains(&v) {
        return Err(ApiError::invalid(
            field,
            format!("{v} is not a number in 0..=10"),
        ));
    }
    Ok(v.round() as u8)
}

/// Parses an optional timestamp field.
pub fn timestamp(field: &str, v: Option<&str>) -> Result<Option<DateTime<Utc>>, ApiError> {
    v.map(|s| {
        memdb::parse_timestamp(s)
            .ok_or_else(|| ApiError::invalid(field, format!("{s:?} is not an RFC 3339 timestamp")))
    })
    .transpose()
}

impl MessageIn {
    /// The engine message; `field` prefixes error fields (`messages[2]`).
    pub fn into_new(self, field: &str) -> Result<NewMessage, ApiError> {
        Ok(NewMessage {
            role: self.role,
            content: content(&format!("{field}.content"), self.content)?,
            timestamp: timestamp(&format!("{field}.timestamp"), self.timestamp.as_deref())?,
            metadata: self.metadata.filter(|m| !m.is_null()),
        })
    }
}

impl CreateConversation {
    /// The engine request.
    pub fn into_new(self) -> Result<NewConversation, ApiError> {
        let messages = self
            .messages
            .into_iter()
            .enumerate()
            .map(|(i, m)| m.into_new(&format!("messages[{i}]")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(NewConversation {
            label: self.label,
            folder: self.folder,
            importance_score: self
                .importance_score
                .map(|v| importance("importance_score", v))
                .transpose()?,
            metadata: self.metadata.filter(|m| !m.is_null()),
            messages,
        })
    }
}

/// `PUT /api/v1/conversations/{id}/label` body.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct LabelUpdate {
    /// New label.
    pub label: String,
    /// New folder (Sekha sends both; absent keeps the folder).
    #[serde(default)]
    pub folder: Option<String>,
}

/// `PUT /api/v1/conversations/{id}/folder` body.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct FolderUpdate {
    /// New folder; the label is not touched.
    pub folder: String,
}

/// `GET /api/v1/conversations` query.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Namespace to address (SPEC §12); the same as the
    /// `X-Memdb-Namespace` header. Read by the auth layer, not the handler.
    pub namespace: Option<String>,
    /// Exact label.
    pub label: Option<String>,
    /// Folder prefix on whole path components.
    pub folder: Option<String>,
    /// Only pinned (true) or unpinned (false).
    pub pinned: Option<bool>,
    /// Only archived (true) or active (false).
    pub archived: Option<bool>,
    /// Page number, from 1 (default 1).
    pub page: Option<usize>,
    /// Page size 1..=1000 (default 50).
    pub page_size: Option<usize>,
}

/// `GET /api/v1/conversations/count` query.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CountParams {
    /// Namespace to address (SPEC §12); the same as the
    /// `X-Memdb-Namespace` header. Read by the auth layer, not the handler.
    pub namespace: Option<String>,
    /// Exact label.
    pub label: Option<String>,
    /// Folder prefix.
    pub folder: Option<String>,
}

/// Search mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// BM25 over message text.
    Keyword,
    /// Cosine similarity of embeddings (needs an embedder).
    Semantic,
    /// Both, fused (relative score by default, or reciprocal rank).
    Hybrid,
}

/// Filters of `POST /api/v1/query` (Sekha's documented keys and memdb's).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryFilters {
    /// Folder prefix.
    pub folder: Option<String>,
    /// Exact label.
    pub label: Option<String>,
    /// `active` or `archived`.
    pub status: Option<String>,
    /// Shorthand for status archived (true) / active (false).
    pub archived: Option<bool>,
    /// Only pinned (true) or unpinned (false).
    pub pinned: Option<bool>,
    /// Smallest importance (inclusive).
    #[serde(alias = "importance_min")]
    pub min_importance: Option<u8>,
    /// Largest importance (inclusive).
    #[serde(alias = "importance_max")]
    pub max_importance: Option<u8>,
    /// Message time lower bound (inclusive).
    #[serde(alias = "date_from")]
    pub since: Option<String>,
    /// Message time upper bound (exclusive).
    #[serde(alias = "date_to")]
    pub until: Option<String>,
    /// Only this author role.
    pub role: Option<String>,
    /// Only this conversation.
    pub conversation_id: Option<Uuid>,
}

/// `POST /api/v1/query` body.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct QueryBody {
    /// The question, in natural language in every mode: colons, quotes,
    /// operators and wildcards are text (`/api/v1/search/fts` takes the
    /// query syntax).
    pub query: String,
    /// Most results, 1..=1000 (default 10).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Results to skip (default 0).
    #[serde(default)]
    pub offset: Option<usize>,
    /// Scope filters.
    #[serde(default)]
    pub filters: Option<QueryFilters>,
    /// Search mode (default hybrid).
    #[serde(default)]
    pub mode: Option<Mode>,
    /// memdb extension: semantic candidates whose cosine similarity is under
    /// this floor are dropped (semantic and hybrid mode; -1..=1; a keyword
    /// match stays in hybrid mode; ignored with a note in keyword mode).
    #[serde(default)]
    pub min_similarity: Option<f32>,
    /// memdb extension: attach to each result how its score was made
    /// (`explain`, SPEC §18.4). Default false.
    #[serde(default)]
    pub explain: Option<bool>,
    /// memdb extension: hybrid fusion settings (SPEC §18.2, §18.3); each
    /// absent field keeps its default.
    #[serde(default)]
    pub weights: Option<QueryWeights>,
}

/// `weights` of `POST /api/v1/query` (memdb extension).
#[derive(Debug, Clone, Copy, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryWeights {
    /// Weight of the keyword ranking, 0..=100 (default 1).
    pub keyword: Option<f32>,
    /// Weight of the semantic ranking, 0..=100 (default 0.5).
    pub semantic: Option<f32>,
    /// Share of a top hit's score its neighbouring turns enter with, 0..=1
    /// (default 0.5; 0 off).
    pub neighbours: Option<f32>,
    /// Share of a top hit's score the turn after it enters with when the
    /// hit asks something (holds a `?`), 0..=1 (default 0.8; SPEC.md
    /// §18.3).
    pub answers: Option<f32>,
    /// Share of a top hit's score the turns two before and after it enter
    /// with, 0..=1 (default 0.4; 0 off; SPEC.md §18.3).
    pub second_neighbours: Option<f32>,
    /// At most this many of the first 50 hits from one conversation; the
    /// rest move behind them, 0..=1000 (default 0: off).
    pub per_conversation: Option<u32>,
    /// How far the keyword weight follows the share of the question's
    /// content words its best match holds, 0..=1 (default 0.5; 0 off;
    /// SPEC.md §18.2).
    pub coverage: Option<f32>,
    /// Share of its fused score a turn of a speaker the question does not
    /// name loses, when it names another candidate's speaker, 0..=1
    /// (SPEC.md §18.3).
    pub speaker: Option<f32>,
    /// Share of its fused score a turn that only asks loses, 0..=1
    /// (default 0.2; 0 off; SPEC.md §18.3).
    pub questions: Option<f32>,
    /// Most share of its fused score a short turn (under 10 content
    /// words) that is not a reply loses, 0..=1 (default 0.3; 0 off;
    /// SPEC.md §18.3).
    pub short_turns: Option<f32>,
    /// Weight of the question's words in the turn before each message, in
    /// the keyword ranking of a hybrid search, 0..=1 (default 0.3; 0 off;
    /// SPEC.md §18.2).
    pub previous_turn: Option<f32>,
    /// Factor on the semantic weight when the query asks (ends in `?`, `？` or `؟`),
    /// 1..=10 (default 3; 1 off; SPEC.md §18.2).
    pub question_lift: Option<f32>,
    /// Session weight: a hit's fused score times `1 + session_mass · m / max
    /// m`, `m` the mean of its conversation's 3 best scores among the first
    /// 50, 0..=10 (default 0.5; 0 off; SPEC.md §18.3).
    pub session_mass: Option<f32>,
    /// Session tail: how many of places 1-10, counted from the tenth, go
    /// to the best hit of a conversation not yet above them, 0..=10
    /// (default 4; 0 off; SPEC.md §18.3).
    pub session_tail: Option<u32>,
    /// Least share of the displaced hit's score the session tail's hit
    /// needs, 0..=1 (default 0.8).
    pub session_tail_ratio: Option<f32>,
}

impl QueryWeights {
    /// The engine's weights: the defaults, with what was given.
    pub fn to_engine(self) -> memdb::FusionWeights {
        let d = memdb::FusionWeights::default();
        memdb::FusionWeights {
            keyword: self.keyword.unwrap_or(d.keyword),
            semantic: self.semantic.unwrap_or(d.semantic),
            neighbours: self.neighbours.unwrap_or(d.neighbours),
            answers: self.answers.unwrap_or(d.answers),
            second_neighbours: self.second_neighbours.unwrap_or(d.second_neighbours),
            per_conversation: self.per_conversation.unwrap_or(d.per_conversation),
            coverage: self.coverage.unwrap_or(d.coverage),
            speaker: self.speaker.unwrap_or(d.speaker),
            questions: self.questions.unwrap_or(d.questions),
            short_turns: self.short_turns.unwrap_or(d.short_turns),
            previous_turn: self.previous_turn.unwrap_or(d.previous_turn),
            question_lift: self.question_lift.unwrap_or(d.question_lift),
            session_mass: self.session_mass.unwrap_or(d.session_mass),
            session_tail: self.session_tail.unwrap_or(d.session_tail),
            session_tail_ratio: self.session_tail_ratio.unwrap_or(d.session_tail_ratio),
            ..d
        }
    }
}

/// `POST /api/v1/search/fts` body.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct FtsBody {
    /// Query in memdb's query syntax.
    pub query: String,
    /// Most results, 1..=1000 (default 10).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// `GET /api/v1/export` query.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ExportParams {
    /// Namespace to address (SPEC §12); the same as the
    /// `X-Memdb-Namespace` header. Read by the auth layer, not the handler.
    pub namespace: Option<String>,
    /// Exact label.
    pub label: Option<String>,
    /// Folder prefix.
    pub folder: Option<String>,
    /// `markdown` (default) or `json`.
    pub format: Option<String>,
}

/// `GET /api/v1/stats` query.
#[derive(Debug, Clone, Default, Deserialize, IntoParams, ToSchema)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StatsParams {
    /// Namespace to address (SPEC §12); the same as the
    /// `X-Memdb-Namespace` header. Read by the auth layer, not the handler.
    pub namespace: Option<String>,
    /// Folder prefix.
    pub folder: Option<String>,
    /// Exact label.
    pub label: Option<String>,
}

// ----- responses ----------------------------------------------------------

/// A stored message.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MessageOut {
    /// Message id.
    pub id: Uuid,
    /// Owning conversation.
    pub conversation_id: Uuid,
    /// Author role.
    pub role: String,
    /// Content as stored: a string or content parts.
    #[schema(value_type = Value)]
    pub content: Value,
    /// Message time (UTC).
    pub timestamp: DateTime<Utc>,
    /// Id of the message's embedding, if any.
    pub embedding_id: Option<String>,
    /// Metadata object.
    #[schema(value_type = Object)]
    pub metadata: Value,
}

/// Content as JSON: the string, or the parts array.
pub fn content_json(c: &Content) -> Value {
    match c {
        Content::Text(s) => Value::String(s.clone()),
        Content::Parts(p) => Value::Array(p.clone()),
    }
}

impl From<Message> for MessageOut {
    fn from(m: Message) -> Self {
        MessageOut {
            content: content_json(&m.content),
            id: m.id,
            conversation_id: m.conversation_id,
            role: m.role,
            timestamp: m.timestamp,
            embedding_id: m.embedding_id,
            metadata: m.metadata,
        }
    }
}

/// A conversation (with its messages where the route says so).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ConversationOut {
    /// Conversation id.
    pub id: Uuid,
    /// Same as `id` (Sekha returns both).
    pub conversation_id: Uuid,
    /// Label.
    pub label: String,
    /// Folder path.
    pub folder: String,
    /// `active` or `archived`.
    pub status: String,
    /// Whether status is archived.
    pub archived: bool,
    /// Importance 0..=10.
    pub importance_score: u8,
    /// Whether importance is 10.
    pub pinned: bool,
    /// Words over all messages.
    pub word_count: u64,
    /// Sessions.
    pub session_count: u32,
    /// Messages.
    pub message_count: u32,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Metadata object.
    #[schema(value_type = Object)]
    pub metadata: Value,
    /// Messages, oldest first (single-conversation routes only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<MessageOut>>,
}

impl From<Conversation> for ConversationOut {
    fn from(c: Conversation) -> Self {
        ConversationOut {
            id: c.id,
            conversation_id: c.id,
            label: c.label,
            folder: c.folder,
            status: c.status.as_str().to_string(),
            archived: c.status == memdb::Status::Archived,
            importance_score: c.importance_score,
            pinned: c.pinned,
            word_count: c.word_count,
            session_count: c.session_count,
            message_count: c.message_count,
            created_at: c.created_at,
            updated_at: c.updated_at,
            metadata: c.metadata,
            messages: None,
        }
    }
}

impl From<ConversationWithMessages> for ConversationOut {
    fn from(c: ConversationWithMessages) -> Self {
        let mut out = ConversationOut::from(c.conversation);
        out.messages = Some(c.messages.into_iter().map(MessageOut::from).collect());
        out
    }
}

/// A page of conversations.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ConversationList {
    /// Conversations, most recently updated first.
    pub results: Vec<ConversationOut>,
    /// Matching conversations in all pages.
    pub total: u64,
    /// This page (from 1).
    pub page: usize,
    /// Page size.
    pub page_size: usize,
    /// Pages in all.
    pub total_pages: u64,
    /// Whether a next page exists.
    pub has_next: bool,
    /// Whether a previous page exists.
    pub has_prev: bool,
}

/// `GET /api/v1/conversations/count` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CountOut {
    /// Matching conversations.
    pub count: u64,
    /// Echo of the label filter.
    pub label: Option<String>,
    /// Echo of the folder filter.
    pub folder: Option<String>,
}

/// `DELETE /api/v1/conversations/{id}` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeleteOut {
    /// The deleted conversation.
    pub conversation_id: Uuid,
    /// Always true.
    pub deleted: bool,
    /// Messages removed with it.
    pub messages_deleted: u64,
}

/// One search result.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SearchResultOut {
    /// The message's conversation.
    pub conversation_id: Uuid,
    /// The message.
    pub message_id: Uuid,
    /// Relevance, higher is better (BM25, cosine similarity or fused RRF by mode).
    pub score: f32,
    /// The message text.
    pub content: String,
    /// Author role.
    pub role: String,
    /// Conversation label.
    pub label: String,
    /// Conversation folder.
    pub folder: String,
    /// Message time.
    pub timestamp: DateTime<Utc>,
    /// Message metadata.
    #[schema(value_type = Object)]
    pub metadata: Value,
    /// How the score was made (only when the request asked to explain):
    /// `keyword_rank`, `keyword_score`, `semantic_rank`, `similarity`,
    /// `fused`, `period_boost`, `neighbour_of`, `keyword_weight`,
    /// `semantic_weight`, `speaker_factor`, `short_factor`, `session_factor`,
    /// `session_from` (SPEC §18.4).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub explain: Option<memdb::ScoreExplain>,
}

/// `POST /api/v1/query` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct QueryOut {
    /// Results, best first.
    pub results: Vec<SearchResultOut>,
    /// Results in this answer.
    pub total: usize,
    /// Echo of the query.
    pub query: String,
    /// The mode actually used.
    pub mode: Mode,
    /// What the engine wants the caller to know (fallbacks, truncation).
    pub notes: Vec<String>,
    /// Page number (from 1) implied by offset and limit.
    pub page: usize,
    /// The limit.
    pub page_size: usize,
    /// Only when the request asked to explain and a vector search ran: how
    /// each graph of the message space's index was searched (`part`
    /// generation|delta, `path` unfiltered|exact|two_hop|walk|empty,
    /// `nodes`, `allowed`, `estimated`, `exact_threshold`; SPEC §9.2).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub plan: Vec<memdb::VectorPlan>,
}

/// One full-text hit (Sekha's FTS row plus label, folder and score).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FtsHitOut {
    /// Message id.
    pub id: Uuid,
    /// Conversation id.
    pub conversation_id: Uuid,
    /// Author role.
    pub role: String,
    /// Content as stored: a string or content parts.
    #[schema(value_type = Value)]
    pub content: Value,
    /// Message time.
    pub timestamp: DateTime<Utc>,
    /// Embedding id, if any.
    pub embedding_id: Option<String>,
    /// Metadata.
    #[schema(value_type = Object)]
    pub metadata: Value,
    /// Conversation label.
    pub label: String,
    /// Conversation folder.
    pub folder: String,
    /// BM25 score, higher is better.
    pub score: f32,
}

/// `POST /api/v1/search/fts` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FtsOut {
    /// Hits, best first.
    pub results: Vec<FtsHitOut>,
    /// Hits returned.
    pub total: usize,
    /// Echo of the query.
    pub query: String,
}

/// `POST /api/v1/rebuild-embeddings` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RebuildOut {
    /// `completed`, or `started` while embeddings rebuild in the background.
    pub status: String,
    /// Documents in the rebuilt text index.
    pub documents_indexed: u64,
    /// What was rebuilt and what was not.
    pub notes: Vec<String>,
}

/// `GET /api/v1/export` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ExportOut {
    /// The rendered export.
    pub content: String,
    /// `markdown` or `json`.
    pub format: String,
    /// Conversations exported.
    pub conversation_count: usize,
}

/// Statistics (`data` of `GET /api/v1/stats` and `memory_stats`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StatsOut {
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
    /// Distinct folders, sorted.
    pub folders: Vec<String>,
    /// Distinct labels, sorted.
    pub labels: Vec<String>,
    /// Conversations per folder.
    pub by_folder: BTreeMap<String, u64>,
    /// Conversations per label.
    pub by_label: BTreeMap<String, u64>,
    /// Distinct folders in all: `folders` and `by_folder` list at most the
    /// 1000 holding the most conversations.
    pub folders_total: usize,
    /// Distinct labels in all (`labels` and `by_label`: at most 1000).
    pub labels_total: usize,
}

impl From<memdb::Stats> for StatsOut {
    fn from(s: memdb::Stats) -> Self {
        let (s, folders_total, labels_total) = s.top(memdb::MAX_STATS_GROUPS);
        StatsOut {
            folders_total,
            labels_total,
            total_conversations: s.total_conversations,
            total_messages: s.total_messages,
            total_words: s.total_words,
            active: s.active,
            archived: s.archived,
            pinned: s.pinned,
            average_importance: s.average_importance,
            folders: s.by_folder.keys().cloned().collect(),
            labels: s.by_label.keys().cloned().collect(),
            by_folder: s.by_folder,
            by_label: s.by_label,
        }
    }
}

/// Sekha's MCP envelope `{success, data, error}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Envelope<T> {
    /// Whether the call succeeded.
    pub success: bool,
    /// The result.
    pub data: Option<T>,
    /// The error message on failure.
    pub error: Option<String>,
}

impl<T> Envelope<T> {
    /// A success.
    pub fn ok(data: T) -> Self {
        Envelope {
            success: true,
            data: Some(data),
            error: None,
        }
    }
}

/// The envelope of a failed MCP call (with the HTTP status as `code`).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EnvelopeError {
    /// Always false.
    pub success: bool,
    /// Always null.
    #[schema(value_type = Option<Object>)]
    pub data: Option<Value>,
    /// What went wrong.
    pub error: String,
    /// The HTTP status.
    pub code: u16,
}

// ----- orchestration requests --------------------------------------------------

fn default_budget() -> usize {
    4000
}

/// `POST /api/v1/context/assemble` body.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ContextBody {
    /// What the context is for.
    pub query: String,
    /// Labels whose recent messages are recalled and ranked up.
    #[serde(default)]
    pub preferred_labels: Vec<String>,
    /// Token budget (15% is kept in reserve), default 4000.
    #[serde(default = "default_budget")]
    pub context_budget: usize,
    /// Folders (path prefixes) never recalled.
    #[serde(default)]
    pub excluded_folders: Vec<String>,
    /// How tokens are counted: `estimate` (4 characters per token, default)
    /// or `cl100k_base` (exact).
    #[serde(default)]
    pub token_counter: Option<TokenCounting>,
}

/// Token counting of context assembly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TokenCounting {
    /// `ceil(chars / 4)`.
    Estimate,
    /// OpenAI's cl100k_base encoding.
    Cl100kBase,
}

/// Summary level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SummaryLevel {
    /// The last 24 hours, about 200 words.
    Daily,
    /// From dailies, about 500 words.
    Weekly,
    /// From weeklies, about 1000 words.
    Monthly,
}

/// `POST /api/v1/summarize` body.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct SummarizeBody {
    /// The conversation.
    pub conversation_id: Uuid,
    /// `daily` (default), `weekly` or `monthly`.
    #[serde(default = "daily")]
    pub level: SummaryLevel,
}

fn daily() -> SummaryLevel {
    SummaryLevel::Daily
}

/// `POST /api/v1/prune/dry-run` body.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct PruneDryRunBody {
    /// Days without activity after which a conversation is old (default 90).
    #[serde(default)]
    pub threshold_days: Option<u32>,
    /// Importance below which a conversation is low-importance (default 3).
    #[serde(default)]
    pub importance_threshold: Option<f64>,
    /// Days without activity after which a younger conversation is idle (default 30).
    #[serde(default)]
    pub inactivity_days: Option<u32>,
    /// Suggestions skipped before the page (default 0).
    #[serde(default)]
    pub offset: Option<usize>,
    /// Most suggestions in the answer, 1..=1000 (default 1000);
    /// `total_suggestions` counts them all.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// What prune execution does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PruneActionWire {
    /// Set status archived (Sekha's behaviour).
    #[default]
    Archive,
    /// Delete with messages, vectors and summaries.
    Delete,
}

/// `POST /api/v1/prune/execute` body.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct PruneExecuteBody {
    /// Conversations to act on (all must exist, else 404 and nothing changes).
    pub conversation_ids: Vec<Uuid>,
    /// `archive` (default) or `delete`.
    #[serde(default)]
    pub action: PruneActionWire,
}

/// `POST /api/v1/labels/suggest` body.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct LabelSuggestBody {
    /// The conversation.
    pub conversation_id: Uuid,
}

/// `POST /api/v1/messages/score` body.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct ScoreBody {
    /// The message.
    pub message_id: Uuid,
}

// ----- the SDK's unified MCPClient ---------------------------------------------

/// Filters of the SDK's `MCPClient` (`/mcp/memory/*`): lists, of which
/// memdb's filter takes at most one value each.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryFilters {
    /// Labels (at most one).
    #[serde(default)]
    pub labels: Vec<String>,
    /// Folder prefixes (at most one).
    #[serde(default)]
    pub folders: Vec<String>,
    /// Lower time bound (inclusive).
    #[serde(default)]
    pub start_date: Option<String>,
    /// Upper time bound (exclusive).
    #[serde(default)]
    pub end_date: Option<String>,
}

impl MemoryFilters {
    /// The engine filter; more than one label or folder is 400.
    pub fn to_filter(&self) -> Result<memdb::Filter, ApiError> {
        let one = |field: &str, v: &[String]| -> Result<Option<String>, ApiError> {
            match v {
                [] => Ok(None),
                [x] => Ok(Some(x.clone())),
                _ => Err(ApiError::invalid(field, "at most one value is supported")),
            }
        };
        Ok(memdb::Filter {
            label: one("filters.labels", &self.labels)?,
            folder: one("filters.folders", &self.folders)?,
            since: timestamp("filters.start_date", self.start_date.as_deref())?,
            until: timestamp("filters.end_date", self.end_date.as_deref())?,
            ..memdb::Filter::default()
        })
    }
}

/// `POST /mcp/memory/search` body (the SDK's `MCPClient.memory_search`).
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct MemorySearchBody {
    /// The question, in natural language in every mode.
    pub query: String,
    /// Most results, 1..=1000 (default 10).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Scope.
    #[serde(default)]
    pub filters: Option<MemoryFilters>,
    /// Search mode (default hybrid).
    #[serde(default)]
    pub mode: Option<Mode>,
}

/// `POST /mcp/memory/stats` body (the SDK's `MCPClient.memory_stats`).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct MemoryStatsBody {
    /// Scope.
    #[serde(default)]
    pub filters: MemoryFilters,
}

/// `GET /api/v1/namespaces`: the namespaces the key may see.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NamespacesOut {
    /// The namespace this request addressed (the key's default unless the
    /// request named one).
    pub current: String,
    /// Namespaces that hold records, by name, limited to the key's list
    /// for a key limited to namespaces.
    pub namespaces: Vec<NamespaceOut>,
}

/// One namespace of [`NamespacesOut`].
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NamespaceOut {
    /// Its name.
    pub name: String,
    /// Conversations in it.
    pub conversations: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What a wire type may do differently from the engine type it mirrors.
    struct Mirror<'a> {
        /// Keys the wire adds (each documented on the wire type).
        added: &'a [&'a str],
        /// Engine keys the wire does not carry.
        dropped: &'a [&'a str],
    }

    /// Checks `wire` against `engine`: every engine field is on the wire
    /// under the same name with the same value, unless listed as dropped;
    /// every wire field is an engine field or listed as added. A field
    /// added to or renamed in the engine type fails here until its wire
    /// twin follows (or the difference is listed).
    fn assert_mirrors(engine: &impl Serialize, wire: &impl Serialize, m: Mirror<'_>) {
        let e = serde_json::to_value(engine).unwrap();
        let w = serde_json::to_value(wire).unwrap();
        let (Value::Object(e), Value::Object(w)) = (e, w) else {
            panic!("both must serialize to objects")
        };
        for (k, v) in &e {
            if m.dropped.contains(&k.as_str()) {
                assert!(
                    !w.contains_key(k),
                    "{k} is listed as dropped but is on the wire"
                );
                continue;
            }
            assert_eq!(w.get(k), Some(v), "engine field {k} differs on the wire");
        }
        for k in w.keys() {
            assert!(
                e.contains_key(k) || m.added.contains(&k.as_str()),
                "wire field {k} is neither an engine field nor listed as added"
            );
        }
        for k in m.added {
            assert!(
                w.contains_key(*k),
                "{k} is listed as added but is not on the wire"
            );
        }
    }

    fn sample_message(n: u8) -> Message {
        Message {
            id: Uuid::from_u128(u128::from(n) + 100),
            conversation_id: Uuid::from_u128(1),
            role: "user".into(),
            content: if n.is_multiple_of(2) {
                Content::Text(format!("message {n}"))
            } else {
                Content::Parts(vec![json!({"type": "text", "text": "part"})])
            },
            timestamp: DateTime::from_timestamp(1_700_000_000 + i64::from(n), 0).unwrap(),
            embedding_id: Some(format!("e{n}")),
            metadata: json!({"k": n}),
        }
    }

    fn sample_conversation() -> Conversation {
        Conversation {
            id: Uuid::from_u128(1),
            label: "Trip".into(),
            folder: "/travel".into(),
            status: memdb::Status::Archived,
            importance_score: 10,
            pinned: true,
            word_count: 42,
            session_count: 2,
            message_count: 3,
            created_at: DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
            updated_at: DateTime::from_timestamp(1_700_000_100, 0).unwrap(),
            metadata: json!({"source": "test"}),
        }
    }

    #[test]
    fn message_out_mirrors_the_engine_message() {
        for n in 0..2 {
            let m = sample_message(n);
            assert_mirrors(
                &m,
                &MessageOut::from(m.clone()),
                Mirror {
                    added: &[],
                    dropped: &[],
                },
            );
        }
    }

    #[test]
    fn conversation_out_mirrors_the_engine_conversation() {
        let c = sample_conversation();
        // Sekha answers `conversation_id` beside `id` and `archived` beside `status`.
        let added = ["conversation_id", "archived"];
        assert_mirrors(
            &c,
            &ConversationOut::from(c.clone()),
            Mirror {
                added: &added,
                dropped: &[],
            },
        );
        let full = ConversationWithMessages {
            conversation: c,
            messages: vec![sample_message(0), sample_message(1)],
        };
        assert_mirrors(
            &full,
            &ConversationOut::from(full.clone()),
            Mirror {
                added: &added,
                dropped: &[],
            },
        );
    }

    #[test]
    fn stats_out_mirrors_the_engine_stats() {
        let s = memdb::Stats {
            total_conversations: 3,
            total_messages: 9,
            total_words: 99,
            active: 2,
            archived: 1,
            pinned: 1,
            average_importance: 6.5,
            by_folder: [("/a".to_string(), 2), ("/b".to_string(), 1)].into(),
            by_label: [("x".to_string(), 3)].into(),
        };
        // The sorted name lists and the totals before the top-1000 cut.
        let added = ["folders", "labels", "folders_total", "labels_total"];
        assert_mirrors(
            &s,
            &StatsOut::from(s.clone()),
            Mirror {
                added: &added,
                dropped: &[],
            },
        );
    }
}
