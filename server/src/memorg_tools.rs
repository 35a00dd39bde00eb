//! Memorg's MCP tools: the six of `memorg-mcp` 0.1.2 with its names,
//! arguments and result keys (`create_session`, `start_conversation`,
//! `add_exchange`, `search_context`, `get_memory_usage`,
//! `optimize_context`), plus `create_topic` (Memorg's docs invite it), a
//! hierarchy reader and the memory-item tools of Memorg's memory layer.
//! Each is one function over the engine (`memdb::memorg::system`); the tool
//! table ([`crate::contract::TOOLS`]) lists them in the `memorg` set.
//!
//! Results keep Memorg's keys and add memdb's (ids, match types,
//! pagination): a client written for memorg-mcp finds every key it reads.
//! Times are ISO 8601 in UTC with an explicit `+00:00` offset, as Python's
//! `datetime.isoformat()` writes them. Unknown argument names are refused
//! (memorg-mcp's schemas forbid extra properties), so a misspelt
//! `scope_Id` is an error, not a silent search of everything.

use chrono::{DateTime, Utc};
use memdb::Memdb;
use memdb::Systems;
use memdb::TokenCounter;
use memdb::memorg::items::{MemoryScope, SearchScope};
use memdb::memorg::optimizer::PromptTemplate;
use memdb::memorg::parse::Entity;
use memdb::memorg::system::{ContextSearch, MemoryItem, MemorySearch};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::error::ApiError;

/// Python's `isoformat()` of a UTC time: `2026-12-01T19:51:16.123456+00:00`.
pub fn iso(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6f+00:00").to_string()
}

fn id(field: &str, s: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(s.trim()).map_err(|_| ApiError::invalid(field, format!("{s:?} is not a UUID")))
}

fn object(v: Option<Value>) -> Value {
    match v {
        Some(Value::Object(m)) => Value::Object(m),
        _ => json!({}),
    }
}

// ----- create_session ---------------------------------------------------------

/// `create_session` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSessionArgs {
    /// The user the session belongs to.
    #[schema(min_length = 1, max_length = 256)]
    #[schemars(length(min = 1, max = 256))]
    pub user_id: String,
    /// Session configuration (stored as `system_config`).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub config: Option<Value>,
}

/// `create_session` result (memorg-mcp's keys).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SessionData {
    /// The new session.
    pub session_id: Uuid,
    /// Creation time.
    pub created_at: String,
    /// The user.
    pub user_id: String,
    /// The configuration as stored.
    #[schema(value_type = Object)]
    pub system_config: Value,
}

/// Creates a session.
pub fn create_session(db: &Memdb, args: CreateSessionArgs) -> Result<SessionData, ApiError> {
    let s = db
        .memorg()
        .create_session(&args.user_id, object(args.config), json!({}))?;
    Ok(SessionData {
        session_id: s.id,
        created_at: iso(s.created_at),
        user_id: s.user_id,
        system_config: s.system_config,
    })
}

// ----- start_conversation -----------------------------------------------------

/// `start_conversation` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartConversationArgs {
    /// The session to start it in.
    pub session_id: String,
    /// A title (memdb's addition; Memorg's conversations start untitled).
    #[serde(default)]
    pub title: Option<String>,
}

/// `start_conversation` result.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ConversationData {
    /// The new conversation.
    pub conversation_id: Uuid,
    /// Creation time.
    pub created_at: String,
    /// Title.
    pub title: String,
    /// Summary.
    pub summary: String,
    /// The session it is in.
    pub session_id: Uuid,
}

/// Starts a conversation in a session.
pub fn start_conversation(
    db: &Memdb,
    args: StartConversationArgs,
) -> Result<ConversationData, ApiError> {
    let session = id("session_id", &args.session_id)?;
    let c = db
        .memorg()
        .start_conversation(session, args.title.as_deref())?;
    Ok(ConversationData {
        conversation_id: c.id,
        created_at: iso(c.created_at),
        title: c.title,
        summary: c.summary,
        session_id: c.session_id,
    })
}

// ----- create_topic -----------------------------------------------------------

/// `create_topic` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTopicArgs {
    /// The conversation to add it to.
    pub conversation_id: String,
    /// Title.
    #[schema(min_length = 1, max_length = 4096)]
    #[schemars(length(min = 1, max = 4096))]
    pub title: String,
    /// Summary.
    #[serde(default)]
    pub summary: Option<String>,
}

/// `create_topic` result.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TopicData {
    /// The new topic.
    pub topic_id: Uuid,
    /// Its conversation.
    pub conversation_id: Uuid,
    /// Creation time.
    pub created_at: String,
    /// Title.
    pub title: String,
    /// Summary.
    pub summary: String,
    /// Entities found in the title and summary.
    #[schema(value_type = Vec<Object>)]
    pub key_entities: Vec<Value>,
}

/// Creates a topic in a conversation.
pub fn create_topic(db: &Memdb, args: CreateTopicArgs) -> Result<TopicData, ApiError> {
    let conv = id("conversation_id", &args.conversation_id)?;
    let t = db
        .memorg()
        .create_topic(conv, &args.title, args.summary.as_deref())?;
    Ok(TopicData {
        topic_id: t.id,
        conversation_id: t.conversation_id,
        created_at: iso(t.created_at),
        title: t.title,
        summary: t.summary,
        key_entities: t
            .key_entities
            .iter()
            .filter_map(|e| serde_json::to_value(e).ok())
            .collect(),
    })
}

// ----- add_exchange -----------------------------------------------------------

/// `add_exchange` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddExchangeArgs {
    /// The topic to add it to.
    pub topic_id: String,
    /// What the user said.
    #[schema(min_length = 1)]
    #[schemars(length(min = 1))]
    pub user_message: String,
    /// What the system answered.
    pub system_message: String,
}

/// `add_exchange` result.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ExchangeData {
    /// The new exchange.
    pub exchange_id: Uuid,
    /// Creation time.
    pub created_at: String,
    /// The user's message as stored.
    pub user_message: String,
    /// The system's message as stored.
    pub system_message: String,
    /// Importance (persisted).
    pub importance_score: f64,
    /// Its topic.
    pub topic_id: Uuid,
}

/// Adds an exchange to a topic.
pub fn add_exchange(db: &Memdb, args: AddExchangeArgs) -> Result<ExchangeData, ApiError> {
    let topic = id("topic_id", &args.topic_id)?;
    let e = db
        .memorg()
        .add_exchange(topic, &args.user_message, &args.system_message, json!({}))?;
    Ok(ExchangeData {
        exchange_id: e.id,
        created_at: iso(e.created_at),
        user_message: e.user_message.raw_content,
        system_message: e.system_message.raw_content,
        importance_score: e.importance_score,
        topic_id: e.topic_id,
    })
}

// ----- search_context ---------------------------------------------------------

fn default_max_results() -> usize {
    10
}

fn default_page() -> usize {
    1
}

fn default_scope() -> String {
    "ALL".into()
}

/// `search_context` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchContextArgs {
    /// The question, natural language.
    #[schema(min_length = 1, max_length = 8192)]
    #[schemars(length(min = 1, max = 8192))]
    pub query: String,
    /// `ALL`, `SESSION`, `CONVERSATION` or `TOPIC` (any case).
    #[serde(default = "default_scope")]
    #[schema(default = "ALL")]
    pub scope: String,
    /// The session, conversation or topic id for the non-`ALL` scopes.
    #[serde(default)]
    pub scope_id: Option<String>,
    /// Results per page.
    #[serde(default = "default_max_results")]
    #[schema(minimum = 1, maximum = 100, default = 10)]
    #[schemars(range(min = 1, max = 100))]
    pub max_results: usize,
    /// 1-based page.
    #[serde(default = "default_page")]
    #[schema(minimum = 1, maximum = 100, default = 1)]
    #[schemars(range(min = 1, max = 100))]
    pub page: usize,
}

/// One `search_context` result.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ContextResultData {
    /// The exchange.
    pub id: Uuid,
    /// The match type, as memorg-mcp puts it under `type` (keyword,
    /// semantic, temporal, hybrid or importance).
    #[serde(rename = "type")]
    pub kind: String,
    /// The record type: `exchange`.
    pub record_type: String,
    /// `"User: …\nSystem: …"`.
    pub content: String,
    /// The multi-factor score.
    pub score: f64,
    /// keyword, semantic, temporal, hybrid or importance.
    pub match_type: String,
    /// Its topic.
    pub topic_id: Uuid,
    /// Creation time.
    pub created_at: String,
    /// Importance.
    pub importance_score: f64,
    /// Each factor's value, weight and contribution.
    #[schema(value_type = Vec<Object>)]
    pub factors: Vec<Value>,
}

/// `search_context` result.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SearchContextData {
    /// The query as given.
    pub query: String,
    /// This page's results, best first.
    pub results: Vec<ContextResultData>,
    /// Results on this page (memorg-mcp's `total_results`).
    pub total_results: usize,
    /// Where the page is.
    #[schema(value_type = Object)]
    pub pagination: Value,
    /// `query_terms`, `entities`, `temporal_constraints`.
    #[schema(value_type = Object)]
    pub metadata: Value,
}

/// Searches exchanges.
pub fn search_context(db: &Memdb, args: SearchContextArgs) -> Result<SearchContextData, ApiError> {
    let scope = SearchScope::parse(&args.scope)?;
    let r = db.memorg().search_context(&ContextSearch {
        query: args.query.clone(),
        scope,
        scope_id: args.scope_id,
        max_results: args.max_results,
        page: args.page,
        now: None,
    })?;
    let results: Vec<ContextResultData> = r
        .results
        .into_iter()
        .map(|h| ContextResultData {
            id: h.exchange.id,
            kind: h.match_type.as_str().to_string(),
            record_type: "exchange".into(),
            content: h.content,
            score: h.score,
            match_type: h.match_type.as_str().to_string(),
            topic_id: h.exchange.topic_id,
            created_at: iso(h.exchange.created_at),
            importance_score: h.exchange.importance_score,
            factors: h
                .factors
                .iter()
                .filter_map(|f| serde_json::to_value(f).ok())
                .collect(),
        })
        .collect();
    Ok(SearchContextData {
        query: args.query,
        total_results: results.len(),
        results,
        pagination: serde_json::to_value(r.pagination).map_err(ApiError::internal)?,
        metadata: serde_json::to_value(&r.metadata).map_err(ApiError::internal)?,
    })
}

// ----- get_memory_usage -------------------------------------------------------

/// `get_memory_usage` arguments (none).
#[derive(Debug, Clone, Default, Deserialize, ToSchema, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// `get_memory_usage` result.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MemoryUsageData {
    /// Estimated tokens of everything stored.
    pub total_tokens: u64,
    /// Records.
    pub active_items: u64,
    /// Always 0.
    pub compressed_items: u64,
    /// Vectors.
    pub vector_count: u64,
    /// Bytes of the vector index files.
    pub index_size: u64,
    /// Records per kind.
    #[schema(value_type = Object)]
    pub counts: Value,
}

/// Memory usage of the namespace.
pub fn get_memory_usage(db: &Memdb, _args: NoArgs) -> Result<MemoryUsageData, ApiError> {
    let u = db.memorg().memory_usage()?;
    Ok(MemoryUsageData {
        total_tokens: u.total_tokens,
        active_items: u.active_items,
        compressed_items: u.compressed_items,
        vector_count: u.vector_count,
        index_size: u.index_size,
        counts: serde_json::to_value(&u.counts).map_err(ApiError::internal)?,
    })
}

// ----- optimize_context -------------------------------------------------------

/// `optimize_context` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OptimizeContextArgs {
    /// The text to fit.
    pub content: String,
    /// The token budget.
    #[schema(minimum = 1, maximum = 1000000)]
    #[schemars(range(min = 1, max = 1000000))]
    pub max_tokens: usize,
    /// Entity names to preserve.
    #[serde(default)]
    pub entities: Vec<String>,
    /// `default` or `summary`: render one of Memorg's prompt templates.
    #[serde(default)]
    pub template: Option<String>,
}

/// `optimize_context` result (memorg-mcp's keys: lengths in characters,
/// as Python's `len`; token counts beside them).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OptimizeData {
    /// The fitted text.
    pub optimized_content: String,
    /// Characters before.
    pub original_length: usize,
    /// Characters after.
    pub optimized_length: usize,
    /// o200k tokens before.
    pub original_tokens: usize,
    /// o200k tokens after (at most `max_tokens`).
    pub optimized_tokens: usize,
    /// Optimizer details.
    #[schema(value_type = Object)]
    pub metadata: Value,
}

/// Fits text into a token budget.
pub fn optimize_context(db: &Memdb, args: OptimizeContextArgs) -> Result<OptimizeData, ApiError> {
    let entities: Vec<Entity> = args.entities.iter().map(|n| Entity::named(n)).collect();
    let template = args
        .template
        .as_deref()
        .map(PromptTemplate::parse)
        .transpose()?;
    let r = db.memorg().optimize_context(
        &args.content,
        &entities,
        args.max_tokens,
        template,
        TokenCounter::O200kBase,
    )?;
    Ok(OptimizeData {
        original_length: args.content.chars().count(),
        optimized_length: r.optimized_content.chars().count(),
        optimized_content: r.optimized_content,
        original_tokens: r.original_length,
        optimized_tokens: r.optimized_length,
        metadata: Value::Object(r.context.metadata),
    })
}

// ----- get_session ------------------------------------------------------------

/// `get_session` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetSessionArgs {
    /// The session.
    pub session_id: String,
}

/// A session with its conversations, topics and exchanges (read by query).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HierarchyData {
    /// The session.
    #[schema(value_type = Object)]
    pub session: Value,
    /// Its conversations, each with `topics`, each with `exchanges`.
    #[schema(value_type = Vec<Object>)]
    pub conversations: Vec<Value>,
}

/// A session's whole hierarchy.
pub fn get_session(db: &Memdb, args: GetSessionArgs) -> Result<HierarchyData, ApiError> {
    let sid = id("session_id", &args.session_id)?;
    let s = db.memorg().session(sid)?;
    let mut conversations = Vec::new();
    for c in db.memorg().session_conversations(sid)? {
        let mut topics = Vec::new();
        for t in db.memorg().conversation_topics(c.id)? {
            let exchanges: Vec<Value> = db
                .memorg()
                .topic_exchanges(t.id)?
                .into_iter()
                .map(|e| {
                    json!({
                        "exchange_id": e.id,
                        "created_at": iso(e.created_at),
                        "user_message": e.user_message.raw_content,
                        "system_message": e.system_message.raw_content,
                        "importance_score": e.importance_score,
                        "parsed_user_message": e.user_message.parsed_content,
                    })
                })
                .collect();
            topics.push(json!({
                "topic_id": t.id,
                "created_at": iso(t.created_at),
                "title": t.title,
                "summary": t.summary,
                "key_entities": t.key_entities,
                "exchanges": exchanges,
            }));
        }
        conversations.push(json!({
            "conversation_id": c.id,
            "created_at": iso(c.created_at),
            "title": c.title,
            "summary": c.summary,
            "topics": topics,
        }));
    }
    Ok(HierarchyData {
        session: json!({
            "session_id": s.id,
            "created_at": iso(s.created_at),
            "user_id": s.user_id,
            "system_config": s.system_config,
            "metadata": s.metadata,
        }),
        conversations,
    })
}

// ----- memory items -----------------------------------------------------------

/// A memory item as the tools return it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ItemData {
    /// Its id.
    pub id: Uuid,
    /// session, conversation, topic, exchange, document, entity or custom.
    #[serde(rename = "type")]
    pub kind: String,
    /// The original type string of a custom item.
    pub custom_type: Option<String>,
    /// Content.
    pub content: String,
    /// Metadata.
    #[schema(value_type = Object)]
    pub metadata: Value,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
    /// Importance, 0..=1.
    pub importance_score: f64,
    /// Parent record.
    pub parent_id: Option<Uuid>,
    /// Tags.
    pub tags: Vec<String>,
}

fn item_data(i: MemoryItem) -> ItemData {
    ItemData {
        id: i.id,
        kind: i.kind.memory_type.as_str().to_string(),
        custom_type: i.kind.custom_type,
        content: i.content,
        metadata: i.metadata,
        created_at: iso(i.created_at),
        updated_at: iso(i.updated_at),
        importance_score: i.importance_score,
        parent_id: i.parent_id,
        tags: i.tags,
    }
}

/// `create_memory_item` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateItemArgs {
    /// Content (indexed and embedded).
    #[schema(min_length = 1)]
    #[schemars(length(min = 1))]
    pub content: String,
    /// A type; unknown strings become `custom` with `custom_type`.
    pub item_type: String,
    /// Parent record (any Memorg record or item).
    #[serde(default)]
    pub parent_id: Option<String>,
    /// Metadata.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub metadata: Option<Value>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Importance, 0..=1.
    #[serde(default)]
    #[schema(minimum = 0.0, maximum = 1.0)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub importance_score: Option<f64>,
}

/// Creates a memory item.
pub fn create_memory_item(db: &Memdb, args: CreateItemArgs) -> Result<ItemData, ApiError> {
    let parent = args
        .parent_id
        .as_deref()
        .map(|p| id("parent_id", p))
        .transpose()?;
    let i = db.memorg().create_memory_item(
        &args.content,
        &args.item_type,
        parent,
        object(args.metadata),
        &args.tags,
        args.importance_score,
    )?;
    Ok(item_data(i))
}

/// Arguments naming one item.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemIdArgs {
    /// The item.
    pub item_id: String,
}

/// Reads a memory item (or any Memorg record as one).
pub fn get_memory_item(db: &Memdb, args: ItemIdArgs) -> Result<ItemData, ApiError> {
    Ok(item_data(
        db.memorg().memory_item(id("item_id", &args.item_id)?)?,
    ))
}

/// `update_memory_item` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateItemArgs {
    /// The item.
    pub item_id: String,
    /// New content.
    #[serde(default)]
    pub content: Option<String>,
    /// New metadata (replaces it).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub metadata: Option<Value>,
    /// New importance.
    #[serde(default)]
    #[schema(minimum = 0.0, maximum = 1.0)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub importance_score: Option<f64>,
    /// New tags (replaces them).
    #[serde(default)]
    pub tags: Option<Vec<String>>,
}

/// Changes a memory item.
pub fn update_memory_item(db: &Memdb, args: UpdateItemArgs) -> Result<ItemData, ApiError> {
    let i = db.memorg().update_memory_item(
        id("item_id", &args.item_id)?,
        args.content.as_deref(),
        args.metadata,
        args.importance_score,
        args.tags.as_deref(),
    )?;
    Ok(item_data(i))
}

/// `delete_memory_item` result.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeletedData {
    /// Whether something was deleted.
    pub deleted: bool,
    /// Records removed (the item and everything under it).
    pub removed: u64,
}

/// Deletes a memory item, or a Memorg record, with everything under it.
pub fn delete_memory_item(db: &Memdb, args: ItemIdArgs) -> Result<DeletedData, ApiError> {
    let removed = db.memorg().delete(id("item_id", &args.item_id)?)?;
    Ok(DeletedData {
        deleted: removed > 0,
        removed,
    })
}

/// `add_memory_tags` / `remove_memory_tags` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TagArgs {
    /// The item.
    pub item_id: String,
    /// Tags.
    #[schemars(length(min = 1))]
    pub tags: Vec<String>,
}

/// Adds tags to a memory item.
pub fn add_memory_tags(db: &Memdb, args: TagArgs) -> Result<ItemData, ApiError> {
    Ok(item_data(db.memorg().add_item_tags(
        id("item_id", &args.item_id)?,
        &args.tags,
    )?))
}

/// Removes tags from a memory item.
pub fn remove_memory_tags(db: &Memdb, args: TagArgs) -> Result<ItemData, ApiError> {
    Ok(item_data(db.memorg().remove_item_tags(
        id("item_id", &args.item_id)?,
        &args.tags,
    )?))
}

fn default_memory_scope() -> String {
    "global".into()
}

fn default_item_limit() -> usize {
    10
}

/// `search_memory` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchMemoryArgs {
    /// The query.
    #[schema(min_length = 1, max_length = 8192)]
    #[schemars(length(min = 1, max = 8192))]
    pub query: String,
    /// `global`, `session`, `conversation` or `topic`.
    #[serde(default = "default_memory_scope")]
    pub scope: String,
    /// The scope's record id (non-global scopes).
    #[serde(default)]
    pub scope_id: Option<String>,
    /// Only these item types.
    #[serde(default)]
    pub item_types: Vec<String>,
    /// Only items with all these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// A Chroma-style `where` filter over metadata (`$eq`, `$ne`, `$in`,
    /// `$nin`, `$gt`, `$gte`, `$lt`, `$lte`, `$exists`, `$and`, `$or`).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub filters: Option<Value>,
    /// Results.
    #[serde(default = "default_item_limit")]
    #[schema(minimum = 1, maximum = 100, default = 10)]
    #[schemars(range(min = 1, max = 100))]
    pub limit: usize,
}

/// One `search_memory` result.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ItemHitData {
    /// The item.
    pub item: ItemData,
    /// The multi-factor score.
    pub score: f64,
    /// How it matched.
    pub match_type: String,
}

/// `search_memory` result.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SearchMemoryData {
    /// The query.
    pub query: String,
    /// Hits, best first.
    pub results: Vec<ItemHitData>,
    /// Number of hits.
    pub total_results: usize,
}

/// Searches memory items.
pub fn search_memory(db: &Memdb, args: SearchMemoryArgs) -> Result<SearchMemoryData, ApiError> {
    let scope = MemoryScope::parse(&args.scope)?;
    let scope_id = args
        .scope_id
        .as_deref()
        .map(|s| id("scope_id", s))
        .transpose()?;
    let hits = db.memorg().search_memory(&MemorySearch {
        query: args.query.clone(),
        scope: Some(scope),
        scope_id,
        item_types: args.item_types,
        tags: args.tags,
        filters: args.filters,
        limit: args.limit,
    })?;
    let results: Vec<ItemHitData> = hits
        .into_iter()
        .map(|h| ItemHitData {
            item: item_data(h.item),
            score: h.score,
            match_type: h.match_type.as_str().to_string(),
        })
        .collect();
    Ok(SearchMemoryData {
        query: args.query,
        total_results: results.len(),
        results,
    })
}

fn default_depth() -> usize {
    3
}

/// `get_item_context` arguments.
#[derive(Debug, Clone, Deserialize, ToSchema, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemContextArgs {
    /// The item.
    pub item_id: String,
    /// Ancestors to include.
    #[serde(default = "default_depth")]
    #[schema(minimum = 0, maximum = 64, default = 3)]
    #[schemars(range(min = 0, max = 64))]
    pub depth: usize,
    /// Include siblings.
    #[serde(default)]
    pub include_siblings: bool,
}

/// `get_item_context` result.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ItemContextData {
    /// The item.
    pub item: ItemData,
    /// Ancestors, nearest first.
    pub ancestors: Vec<ItemData>,
    /// Children, by importance.
    pub children: Vec<ItemData>,
    /// Siblings, by importance (when asked).
    pub siblings: Vec<ItemData>,
}

/// An item with its ancestors, children and siblings.
pub fn get_item_context(db: &Memdb, args: ItemContextArgs) -> Result<ItemContextData, ApiError> {
    let c = db.memorg().item_context(
        id("item_id", &args.item_id)?,
        args.depth,
        args.include_siblings,
    )?;
    Ok(ItemContextData {
        item: item_data(c.item),
        ancestors: c.ancestors.into_iter().map(item_data).collect(),
        children: c.children.into_iter().map(item_data).collect(),
        siblings: c.siblings.into_iter().map(item_data).collect(),
    })
}
