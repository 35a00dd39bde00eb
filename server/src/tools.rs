//! Sekha's seven MCP tools: argument types matching sekha-mcp's input
//! schemas (names, types, bounds, defaults, required) and one function per
//! tool over the engine.
//!
//! The tool table ([`crate::contract::TOOLS`]) names each tool's function
//! here; from it the HTTP shim (`POST /mcp/tools/{tool}`, `routes::mcp`) and
//! the native MCP server both call these functions, so a tool behaves the
//! same on either surface. Results are the `data` of Sekha's `{success,
//! data, error}` envelope, shaped so sekha-mcp's formatters find every field
//! they read.

use chrono::{DateTime, Utc};
use memdb::Systems;
use memdb::{ConversationUpdate, Filter, Memdb, NewConversation, NewMessage, Selection, Status};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::error::ApiError;
use crate::search;
use crate::wire::{self, Mode, StatsOut};

/// Longest `memory_search` query, in characters (sekha-mcp's bound).
pub const MAX_TOOL_QUERY_CHARS: usize = 1000;
/// Largest `memory_search` limit (sekha-mcp's bound).
pub const MAX_TOOL_LIMIT: usize = 50;
/// Largest `memory_prune` threshold in days (sekha-mcp's bound).
pub const MAX_THRESHOLD_DAYS: u32 = 365;

/// A tool's name, description and input schema, as MCP lists them.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ToolDef {
    /// Tool name.
    pub name: &'static str,
    /// What it does.
    pub description: &'static str,
    /// JSON Schema of the arguments.
    #[serde(rename = "inputSchema")]
    #[schema(value_type = Object)]
    pub input_schema: Value,
}

// ----- memory_store -----------------------------------------------------------

/// A message role accepted by the tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolRole {
    /// The user.
    User,
    /// The assistant.
    Assistant,
    /// The system prompt.
    System,
}

impl ToolRole {
    fn as_str(self) -> &'static str {
        match self {
            ToolRole::User => "user",
            ToolRole::Assistant => "assistant",
            ToolRole::System => "system",
        }
    }
}

/// One message of `memory_store`.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
pub struct ToolMessage {
    /// Message role.
    pub role: ToolRole,
    /// Message content.
    #[schema(min_length = 1)]
    #[schemars(length(min = 1))]
    pub content: String,
    /// ISO 8601 timestamp; now when absent or null.
    #[serde(default)]
    #[schema(format = DateTime)]
    #[schemars(extend("format" = "date-time"))]
    pub timestamp: Option<String>,
    /// Additional message metadata.
    #[serde(default)]
    #[schema(value_type = Option<Object>, default = json!({}))]
    #[schemars(with = "Option<serde_json::Map<String, Value>>", extend("default" = {}))]
    pub metadata: Option<Value>,
}

/// `memory_store` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
pub struct MemoryStoreArgs {
    /// Conversation title/label. Without one, the engine's top label
    /// suggestion is used (the first user message when there is none).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 500)]
    #[schemars(length(min = 1, max = 500))]
    pub label: Option<String>,
    /// Folder path (e.g. /projects/ai). Without one: `/` with a label,
    /// else Sekha's folder for the suggested label (`/work` when it has a
    /// `:`, else `/personal`).
    #[serde(default)]
    #[schema(pattern = r"^/[a-zA-Z0-9_\-/]*$")]
    #[schemars(regex(pattern = r"^/[a-zA-Z0-9_\-/]*$"))]
    pub folder: Option<String>,
    /// The conversation's messages.
    #[schema(min_items = 1, inline)]
    #[schemars(length(min = 1))]
    pub messages: Vec<ToolMessage>,
    /// Importance 0.0-10.0 (rounded to an integer), default 5.
    #[serde(default)]
    #[schema(minimum = 0.0, maximum = 10.0, default = 5.0)]
    #[schemars(range(min = 0.0, max = 10.0), extend("default" = 5.0))]
    pub importance_score: Option<f64>,
}

/// `memory_store` result.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct StoreData {
    /// The new conversation.
    pub conversation_id: Uuid,
    /// Same as `conversation_id`.
    pub id: Uuid,
    /// Label as stored.
    pub label: String,
    /// Folder as stored.
    pub folder: String,
    /// Messages stored.
    pub message_count: u32,
    /// How the label was chosen when the client sent none.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub auto_label: Option<memdb::AutoLabel>,
}

/// Stores a conversation; without a label, labels it with the engine's
/// top suggestion (the heuristic: the tools have no chat model).
pub fn memory_store(db: &Memdb, args: MemoryStoreArgs) -> Result<StoreData, ApiError> {
    let messages = args
        .messages
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            Ok(NewMessage {
                role: m.role.as_str().to_string(),
                content: memdb::Content::Text(m.content),
                timestamp: wire::timestamp(
                    &format!("messages[{i}].timestamp"),
                    m.timestamp.as_deref(),
                )?,
                metadata: m.metadata.filter(|v| !v.is_null()),
            })
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    let importance_score = args
        .importance_score
        .map(|v| wire::importance("importance_score", v))
        .transpose()?;
    let given_label = args.label.is_some();
    let given_folder = args.folder.is_some();
    // Until a suggestion replaces it: the first user message, as Sekha's
    // proxy labels what it captures.
    let label = args.label.unwrap_or_else(|| {
        let first = messages
            .iter()
            .find(|m| m.role == "user")
            .or(messages.first())
            .map(|m| m.content.text())
            .unwrap_or_default();
        memdb::capture_label(&first)
    });
    let created = db.sekha().create_conversation(NewConversation {
        label,
        folder: args.folder,
        importance_score,
        metadata: None,
        messages,
    })?;
    let c = created.conversation;
    let (label, folder, auto_label) = if given_label {
        (c.label, c.folder, None)
    } else {
        // The conversation is stored: a failed suggestion keeps the first
        // message's label rather than failing the call.
        let a = db
            .sekha()
            .auto_label(c.id, None, 0.0, !given_folder)
            .unwrap_or_else(|e| memdb::AutoLabel {
                conversation_id: c.id,
                applied: false,
                label: c.label.clone(),
                folder: c.folder.clone(),
                confidence: None,
                model: "heuristic".into(),
                notes: vec![format!(
                    "label suggestion failed ({e}); the label is unchanged"
                )],
            });
        (a.label.clone(), a.folder.clone(), Some(a))
    };
    Ok(StoreData {
        conversation_id: c.id,
        id: c.id,
        label,
        folder,
        message_count: c.message_count,
        auto_label,
    })
}

// ----- memory_search ----------------------------------------------------------

fn default_limit() -> usize {
    10
}

/// `memory_search` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
pub struct MemorySearchArgs {
    /// Natural language search query.
    #[schema(min_length = 1, max_length = 1000)]
    #[schemars(length(min = 1, max = 1000))]
    pub query: String,
    /// Maximum results to return.
    #[serde(default = "default_limit")]
    #[schema(minimum = 1, maximum = 50, default = 10)]
    #[schemars(range(min = 1, max = 50))]
    pub limit: usize,
    /// Only conversations with this label (at most one label).
    #[serde(default)]
    #[schema(default = json!([]))]
    #[schemars(inner(length(min = 1)))]
    pub filter_labels: Vec<String>,
}

/// One `memory_search` result.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ToolSearchResult {
    /// The message's conversation.
    pub conversation_id: Uuid,
    /// The message.
    pub message_id: Uuid,
    /// Relevance, higher is better.
    pub score: f32,
    /// Same as `score` (the field sekha-mcp reads).
    pub similarity: f32,
    /// The message text.
    pub content: String,
    /// Conversation label.
    pub label: String,
    /// Conversation folder.
    pub folder: String,
    /// Message time.
    pub timestamp: DateTime<Utc>,
    /// Message metadata.
    #[schema(value_type = Object)]
    pub metadata: Value,
}

/// `memory_search` result.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SearchData {
    /// Echo of the query.
    pub query: String,
    /// Results returned.
    pub total_results: usize,
    /// The limit.
    pub limit: usize,
    /// Mode actually used.
    pub mode: Mode,
    /// Fallbacks the engine reported.
    pub notes: Vec<String>,
    /// Results, best first.
    pub results: Vec<ToolSearchResult>,
}

/// Searches messages (hybrid when the engine has an embedder).
pub fn memory_search(db: &Memdb, args: MemorySearchArgs) -> Result<SearchData, ApiError> {
    if args.query.trim().is_empty() {
        return Err(ApiError::invalid("query", "query is empty"));
    }
    if args.query.chars().count() > MAX_TOOL_QUERY_CHARS {
        return Err(ApiError::invalid(
            "query",
            format!("longer than {MAX_TOOL_QUERY_CHARS} characters"),
        ));
    }
    if !(1..=MAX_TOOL_LIMIT).contains(&args.limit) {
        return Err(ApiError::invalid(
            "limit",
            format!("{} is not in 1..={MAX_TOOL_LIMIT}", args.limit),
        ));
    }
    let label = match args.filter_labels.as_slice() {
        [] => None,
        [one] if !one.is_empty() => Some(one.clone()),
        [_] => return Err(ApiError::invalid("filter_labels[0]", "label is empty")),
        _ => {
            return Err(ApiError::invalid(
                "filter_labels",
                "at most one label is supported",
            ));
        }
    };
    let out = search::run(
        db,
        search::Spec {
            query: args.query.clone(),
            mode: Mode::Hybrid,
            language: memdb::QueryLanguage::Natural,
            filter: Filter {
                label,
                ..Filter::default()
            },
            conversation_id: None,
            role: None,
            limit: args.limit,
            offset: 0,
            min_similarity: None,
            explain: false,
            weights: memdb::FusionWeights::default(),
        },
    )?;
    let results: Vec<ToolSearchResult> = out
        .hits
        .into_iter()
        .map(|h| ToolSearchResult {
            conversation_id: h.message.conversation_id,
            message_id: h.message.id,
            score: h.score,
            similarity: h.score,
            content: h.message.content.text(),
            label: h.label,
            folder: h.folder,
            timestamp: h.message.timestamp,
            metadata: h.message.metadata.clone(),
        })
        .collect();
    Ok(SearchData {
        query: args.query,
        total_results: results.len(),
        limit: args.limit,
        mode: out.mode,
        notes: out.notes.iter().map(ToString::to_string).collect(),
        results,
    })
}

// ----- memory_update ----------------------------------------------------------

/// `memory_update` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
pub struct MemoryUpdateArgs {
    /// UUID of the conversation to update.
    #[schema(value_type = String, pattern = r"^[a-f0-9\-]{36}$")]
    #[schemars(with = "String", length(min = 1), regex(pattern = r"^[a-f0-9\-]{36}$"))]
    pub conversation_id: Uuid,
    /// New label.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 500)]
    #[schemars(length(min = 1, max = 500))]
    pub label: Option<String>,
    /// New folder path.
    #[serde(default)]
    #[schema(pattern = r"^/[a-zA-Z0-9_\-/]*$")]
    #[schemars(regex(pattern = r"^/[a-zA-Z0-9_\-/]*$"))]
    pub folder: Option<String>,
    /// New importance 0.0-10.0 (rounded to an integer).
    #[serde(default)]
    #[schema(minimum = 0.0, maximum = 10.0)]
    #[schemars(range(min = 0.0, max = 10.0))]
    pub importance_score: Option<f64>,
    /// New status, `active` or `archived` (Sekha's controller accepts it).
    #[serde(default)]
    #[schemars(extend("enum" = ["active", "archived"]))]
    pub status: Option<String>,
}

/// `memory_update` result.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UpdateData {
    /// The conversation.
    pub conversation_id: Uuid,
    /// Fields whose value changed.
    pub updated_fields: Vec<String>,
    /// Human summary.
    pub message: String,
}

/// Updates label, folder, importance and/or status.
pub fn memory_update(db: &Memdb, args: MemoryUpdateArgs) -> Result<UpdateData, ApiError> {
    let update = ConversationUpdate {
        label: args.label,
        folder: args.folder,
        status: args
            .status
            .as_deref()
            .map(|s| {
                s.parse::<Status>()
                    .map_err(|_| ApiError::invalid("status", "expected active or archived"))
            })
            .transpose()?,
        importance_score: args
            .importance_score
            .map(|v| wire::importance("importance_score", v))
            .transpose()?,
        metadata: None,
    };
    if update == ConversationUpdate::default() {
        return Err(ApiError::invalid(
            "arguments",
            "give at least one of label, folder, importance_score, status",
        ));
    }
    let before = db.sekha().get_conversation(args.conversation_id)?;
    let after = db
        .sekha()
        .update_conversation(args.conversation_id, update)?;
    let mut updated_fields = Vec::new();
    if before.label != after.label {
        updated_fields.push("label".to_string());
    }
    if before.folder != after.folder {
        updated_fields.push("folder".to_string());
    }
    if before.importance_score != after.importance_score {
        updated_fields.push("importance_score".to_string());
    }
    if before.status != after.status {
        updated_fields.push("status".to_string());
    }
    Ok(UpdateData {
        conversation_id: after.id,
        message: if updated_fields.is_empty() {
            "No field changed".to_string()
        } else {
            "Conversation updated successfully".to_string()
        },
        updated_fields,
    })
}

// ----- memory_get_context -----------------------------------------------------

/// `memory_get_context` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
pub struct MemoryGetContextArgs {
    /// UUID of the conversation to retrieve.
    #[schema(value_type = String, pattern = r"^[a-f0-9\-]{36}$")]
    #[schemars(with = "String", length(min = 1), regex(pattern = r"^[a-f0-9\-]{36}$"))]
    pub conversation_id: Uuid,
}

/// A message as the tools show it: content flattened to text.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ToolMessageOut {
    /// Message id.
    pub id: Uuid,
    /// Author role.
    pub role: String,
    /// Text content (content parts joined by newlines).
    pub content: String,
    /// Message time.
    pub timestamp: DateTime<Utc>,
    /// Metadata.
    #[schema(value_type = Object)]
    pub metadata: Value,
}

/// A conversation with messages, as `memory_get_context` returns it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ContextData {
    /// Conversation id.
    pub conversation_id: Uuid,
    /// Label.
    pub label: String,
    /// Folder.
    pub folder: String,
    /// `active` or `archived`.
    pub status: String,
    /// Importance 0..=10.
    pub importance_score: u8,
    /// Words.
    pub word_count: u64,
    /// Sessions.
    pub session_count: u32,
    /// Messages.
    pub message_count: u32,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Messages, oldest first.
    pub messages: Vec<ToolMessageOut>,
}

fn context_data(c: memdb::ConversationWithMessages) -> ContextData {
    let conv = c.conversation;
    ContextData {
        conversation_id: conv.id,
        label: conv.label,
        folder: conv.folder,
        status: conv.status.as_str().to_string(),
        importance_score: conv.importance_score,
        word_count: conv.word_count,
        session_count: conv.session_count,
        message_count: conv.message_count,
        created_at: conv.created_at,
        updated_at: conv.updated_at,
        messages: c
            .messages
            .into_iter()
            .map(|m| ToolMessageOut {
                id: m.id,
                content: m.content.text(),
                role: m.role,
                timestamp: m.timestamp,
                metadata: m.metadata,
            })
            .collect(),
    }
}

/// A conversation with its messages.
pub fn memory_get_context(db: &Memdb, args: MemoryGetContextArgs) -> Result<ContextData, ApiError> {
    Ok(context_data(
        db.sekha()
            .get_conversation_with_messages(args.conversation_id)?,
    ))
}

// ----- memory_prune -----------------------------------------------------------

fn default_threshold_days() -> u32 {
    30
}

/// `memory_prune` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
pub struct MemoryPruneArgs {
    /// Conversations inactive for longer than this are candidates.
    #[serde(default = "default_threshold_days")]
    #[schema(minimum = 1, maximum = 365, default = 30)]
    #[schemars(range(min = 1, max = 365))]
    pub threshold_days: u32,
    /// Conversations at or above this importance are kept.
    #[serde(default)]
    #[schema(minimum = 0.0, maximum = 10.0)]
    #[schemars(range(min = 0.0, max = 10.0))]
    pub importance_threshold: Option<f64>,
}

/// Validates `memory_prune` arguments (the engine computes the suggestions).
pub fn check_prune_args(args: &MemoryPruneArgs) -> Result<Option<f32>, ApiError> {
    if !(1..=MAX_THRESHOLD_DAYS).contains(&args.threshold_days) {
        return Err(ApiError::invalid(
            "threshold_days",
            format!("{} is not in 1..={MAX_THRESHOLD_DAYS}", args.threshold_days),
        ));
    }
    args.importance_threshold
        .map(|v| wire::importance("importance_threshold", v).map(|_| v as f32))
        .transpose()
}

/// Pruning suggestions (the engine's report: `suggestions` with `label`,
/// `age_days`, `importance_score`, `reason`, plus `estimated_token_savings`).
pub fn memory_prune(db: &Memdb, args: MemoryPruneArgs) -> Result<Value, ApiError> {
    let importance = check_prune_args(&args)?;
    let report = db.sekha().prune_suggestions(&memdb::PruneRequest {
        threshold_days: args.threshold_days,
        importance_threshold: importance,
        inactivity_days: None,
        now: None,
        offset: 0,
        limit: None,
    })?;
    serde_json::to_value(report).map_err(ApiError::internal)
}

// ----- memory_export ----------------------------------------------------------

/// Export format of `memory_export`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, ToSchema, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ToolExportFormat {
    /// sekha-mcp's flat JSON object.
    #[default]
    Json,
    /// Markdown for people.
    Markdown,
}

fn yes() -> bool {
    true
}

/// `memory_export` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
pub struct MemoryExportArgs {
    /// UUID of conversation to export.
    #[schema(value_type = String, pattern = r"^[a-f0-9\-]{36}$")]
    #[schemars(with = "String", length(min = 1), regex(pattern = r"^[a-f0-9\-]{36}$"))]
    pub conversation_id: Uuid,
    /// Export format.
    #[serde(default)]
    #[schema(default = "json")]
    pub format: ToolExportFormat,
    /// Include the word and session counts (sekha-mcp's `metadata` object
    /// in JSON, the `Word Count` and `Sessions` lines in Markdown).
    #[serde(default = "yes")]
    #[schema(default = true)]
    pub include_metadata: bool,
}

/// `memory_export` result.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ExportData {
    /// The conversation (with messages).
    pub conversation: ContextData,
    /// The export as sekha-mcp renders it: its flat JSON object (2-space
    /// indent) or its Markdown.
    pub content: String,
    /// Echo of the format.
    pub format: ToolExportFormat,
    /// Echo of the flag.
    pub include_metadata: bool,
}

/// sekha-mcp's JSON export: the conversation's fields, `exported_at`, the
/// messages, and `metadata` with the counts when asked for and the
/// conversation has words (sekha-mcp's rule).
#[derive(Serialize)]
struct SekhaExport<'a> {
    conversation_id: Uuid,
    label: &'a str,
    folder: &'a str,
    status: &'a str,
    importance_score: u8,
    created_at: DateTime<Utc>,
    exported_at: String,
    messages: &'a [ToolMessageOut],
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<SekhaExportMetadata>,
}

#[derive(Serialize)]
struct SekhaExportMetadata {
    word_count: u64,
    session_count: u32,
}

/// Exports one conversation in sekha-mcp's shape (memdb's own export
/// document is `GET /api/v1/export` and `memdb export`).
pub fn memory_export(db: &Memdb, args: MemoryExportArgs) -> Result<ExportData, ApiError> {
    let export = db.sekha().export(&Selection::One(args.conversation_id))?;
    let markdown = match args.format {
        ToolExportFormat::Markdown => Some(export.to_markdown_with(args.include_metadata)),
        ToolExportFormat::Json => None,
    };
    let exported_at = export
        .exported_at
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let Some(conv) = export.conversations.into_iter().next() else {
        return Err(ApiError::not_found(format!(
            "conversation {} not found",
            args.conversation_id
        )));
    };
    let conversation = context_data(conv);
    let content = match markdown {
        Some(md) => md,
        None => {
            let c = &conversation;
            let doc = SekhaExport {
                conversation_id: c.conversation_id,
                label: &c.label,
                folder: &c.folder,
                status: &c.status,
                importance_score: c.importance_score,
                created_at: c.created_at,
                exported_at,
                messages: &c.messages,
                metadata: (args.include_metadata && c.word_count > 0).then_some(
                    SekhaExportMetadata {
                        word_count: c.word_count,
                        session_count: c.session_count,
                    },
                ),
            };
            serde_json::to_string_pretty(&doc).map_err(ApiError::internal)?
        }
    };
    Ok(ExportData {
        conversation,
        content,
        format: args.format,
        include_metadata: args.include_metadata,
    })
}

// ----- memory_stats -----------------------------------------------------------

/// `memory_stats` arguments.
#[derive(Debug, Clone, Default, Deserialize, ToSchema, JsonSchema)]
pub struct MemoryStatsArgs {
    /// Only this folder (and its subfolders).
    #[serde(default)]
    #[schema(pattern = r"^/[a-zA-Z0-9_\-/]*$")]
    #[schemars(regex(pattern = r"^/[a-zA-Z0-9_\-/]*$"))]
    pub folder: Option<String>,
    /// Only this label.
    #[serde(default)]
    pub label: Option<String>,
}

/// Statistics over the store, a folder or a label.
pub fn memory_stats(db: &Memdb, args: MemoryStatsArgs) -> Result<StatsOut, ApiError> {
    let filter = Filter {
        folder: args.folder,
        label: args.label,
        ..Filter::default()
    };
    Ok(db.sekha().stats(&filter)?.into())
}
