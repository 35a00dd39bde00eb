//! Memorg's model on the store (SPEC.md §14.9): sessions > conversations >
//! topics > exchanges and memory items as generic record kinds
//! (`db/records.rs`), and the operations of Memorg's `MemorgSystem`:
//! `create_session`, `start_conversation`, `create_topic`, `add_exchange`,
//! `search_context`, `get_memory_usage`, `optimize_context`, and the memory
//! layer (`create_memory_item`, `search_memory`, `get_item_context`, ...).
//!
//! Parents list their children by query (the `record_children` index),
//! never by stored snapshots; a missing parent is `NotFound` and nothing is
//! written. Every record lives in the handle's namespace: a deployment that
//! keeps users apart gives each `user_id` its own namespace (the surfaces'
//! `--namespace`, `X-Memdb-Namespace`), and a session's `user_id` is kept as
//! a field either way.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::db::Memdb;
use crate::db::records::{NewRecord, Record, RecordChange, RecordFilter, RecordKind};
use crate::db::typed::{Kind, Records, decode, encode};
use crate::error::{Error, Result};
use crate::llm::ChatModel;
use crate::memorg::filter::MetadataFilter;
use crate::memorg::importance::base_importance;
use crate::memorg::items::{self, ItemKind, MemoryScope, MemoryType, ScopeTarget, SearchScope};
use crate::memorg::optimizer::{self, Extractive, OptimizedContext, PromptTemplate};
use crate::memorg::parse::{Entity, ParsedContent, entities_from_json, parse_content};
use crate::memorg::scorer::{
    Candidate, MatchType, MultiFactorScorer, Pagination, QueryMetadata, ScoringQuery,
};
use crate::util::time::now;
use crate::util::tokens::TokenCounter;

/// Memorg's `Session`.
pub const SESSION: RecordKind = RecordKind {
    code: 1,
    name: "session",
    sums_into: None,
};
/// Memorg's `Conversation` (not a Sekha conversation).
pub const CONVERSATION: RecordKind = RecordKind {
    code: 2,
    name: "memorg conversation",
    sums_into: None,
};
/// Memorg's `Topic`.
pub const TOPIC: RecordKind = RecordKind {
    code: 3,
    name: "topic",
    sums_into: None,
};
/// Memorg's `Exchange`.
pub const EXCHANGE: RecordKind = RecordKind {
    code: 4,
    name: "exchange",
    sums_into: None,
};
/// Memorg's `MemoryItem` of the memory layer.
pub const MEMORY_ITEM: RecordKind = RecordKind {
    code: 5,
    name: "memory item",
    sums_into: None,
};

/// Longest exchange message, query or item content, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;
/// Longest title or summary, in bytes.
pub const MAX_TITLE_BYTES: usize = 4096;
/// Longest `user_id`, in bytes.
pub const MAX_USER_ID_BYTES: usize = 256;
/// Longest `search_context`/`search_memory` query, in bytes (the
/// natural-language budget of SPEC.md §16.2).
pub const MAX_QUERY_BYTES: usize = 8 * 1024;

fn check_len(field: &'static str, s: &str, max: usize) -> Result<()> {
    if s.len() > max {
        return Err(Error::invalid(
            field,
            format!("is {} bytes; at most {max}", s.len()),
        ));
    }
    Ok(())
}

fn object_or_empty(field: &'static str, v: Value) -> Result<Value> {
    match v {
        Value::Null => Ok(Value::Object(Map::new())),
        Value::Object(_) => Ok(v),
        _ => Err(Error::invalid(field, "must be a JSON object")),
    }
}

fn parse_uuid(field: &'static str, s: &str) -> Result<Uuid> {
    Uuid::parse_str(s.trim()).map_err(|_| Error::invalid(field, format!("{s:?} is not a UUID")))
}

/// A session's body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionBody {
    /// The user the session belongs to.
    pub user_id: String,
    /// The caller's configuration object.
    #[serde(default = "empty_object")]
    pub system_config: Value,
}

impl Kind for SessionBody {
    const KIND: RecordKind = SESSION;
}

/// A conversation's body; a topic's too ([`TopicBody`] adds its entities).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationBody {
    /// Title.
    pub title: String,
    /// Summary.
    pub summary: String,
}

impl Kind for ConversationBody {
    const KIND: RecordKind = CONVERSATION;
}

/// A topic's body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopicBody {
    /// Title.
    pub title: String,
    /// Summary.
    pub summary: String,
    /// Key entities (from the title and summary).
    #[serde(default)]
    pub key_entities: Vec<Entity>,
}

impl Kind for TopicBody {
    const KIND: RecordKind = TOPIC;
}

/// An exchange's body: both messages, raw and parsed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExchangeBody {
    /// The user's message.
    pub user_message: ExchangeMessage,
    /// The system's answer.
    pub system_message: ExchangeMessage,
}

impl Kind for ExchangeBody {
    const KIND: RecordKind = EXCHANGE;
}

/// A memory item's body: its type as Memorg spells it, and the original
/// string of a custom type (`null` otherwise).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryItemBody {
    /// `MemoryType`'s string (`fact`, `session`, ..., or `custom`).
    pub item_type: String,
    /// The custom type's own name.
    #[serde(default)]
    pub custom_type: Option<String>,
}

impl Kind for MemoryItemBody {
    const KIND: RecordKind = MEMORY_ITEM;
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// Memorg's `Session`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// Its id.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// The user the session belongs to.
    pub user_id: String,
    /// The caller's configuration object.
    pub system_config: Value,
    /// Free metadata.
    pub metadata: Value,
}

/// Memorg's `Conversation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemorgConversation {
    /// Its id.
    pub id: Uuid,
    /// The session it belongs to.
    pub session_id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Title.
    pub title: String,
    /// Summary.
    pub summary: String,
    /// Free metadata.
    pub metadata: Value,
}

/// Memorg's `Topic`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topic {
    /// Its id.
    pub id: Uuid,
    /// The conversation it belongs to.
    pub conversation_id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Title.
    pub title: String,
    /// Summary.
    pub summary: String,
    /// Key entities.
    pub key_entities: Vec<Entity>,
    /// Free metadata.
    pub metadata: Value,
}

/// One side of an exchange: Memorg's `Message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExchangeMessage {
    /// The text as given.
    pub raw_content: String,
    /// Entities, intents and sentiment (SPEC.md §14.3).
    pub parsed_content: ParsedContent,
}

/// Memorg's `Exchange`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// Its id.
    pub id: Uuid,
    /// The topic it belongs to.
    pub topic_id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// The user's message.
    pub user_message: ExchangeMessage,
    /// The system's answer.
    pub system_message: ExchangeMessage,
    /// Importance from the documented strategy (persisted; Memorg drops it).
    pub importance_score: f64,
    /// Free metadata.
    pub metadata: Value,
}

/// Memorg's `MemoryItem`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryItem {
    /// Its id.
    pub id: Uuid,
    /// Its type (and the original string for custom types).
    #[serde(flatten)]
    pub kind: ItemKind,
    /// Content (indexed and embedded).
    pub content: String,
    /// Free metadata.
    pub metadata: Value,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Importance, 0..=1.
    pub importance_score: f64,
    /// Parent record (any kind).
    pub parent_id: Option<Uuid>,
    /// Tags, sorted.
    pub tags: Vec<String>,
}

fn session_from(r: &Record) -> Result<Session> {
    let b = decode::<SessionBody>(r)?;
    Ok(Session {
        id: r.id,
        created_at: r.created_at,
        updated_at: r.updated_at,
        user_id: b.user_id,
        system_config: b.system_config,
        metadata: r.metadata.clone(),
    })
}

fn conversation_from(r: &Record) -> Result<MemorgConversation> {
    let b = decode::<ConversationBody>(r)?;
    Ok(MemorgConversation {
        id: r.id,
        session_id: r.parent.unwrap_or_default(),
        created_at: r.created_at,
        updated_at: r.updated_at,
        title: b.title,
        summary: b.summary,
        metadata: r.metadata.clone(),
    })
}

fn topic_from(r: &Record) -> Result<Topic> {
    let b = decode::<TopicBody>(r)?;
    Ok(Topic {
        id: r.id,
        conversation_id: r.parent.unwrap_or_default(),
        created_at: r.created_at,
        updated_at: r.updated_at,
        title: b.title,
        summary: b.summary,
        key_entities: b.key_entities,
        metadata: r.metadata.clone(),
    })
}

fn exchange_from(r: &Record) -> Result<Exchange> {
    let b = decode::<ExchangeBody>(r)?;
    Ok(Exchange {
        id: r.id,
        topic_id: r.parent.unwrap_or_default(),
        created_at: r.created_at,
        updated_at: r.updated_at,
        user_message: b.user_message,
        system_message: b.system_message,
        importance_score: f64::from(r.importance),
        metadata: r.metadata.clone(),
    })
}

/// The record of one exchange: both messages parsed, the documented
/// importance, `"User: <u>\nSystem: <s>"` as the indexed and embedded text.
fn exchange_record(
    topic_id: Uuid,
    user_message: &str,
    system_message: &str,
    metadata: Value,
) -> Result<NewRecord> {
    let user = parse_content(user_message);
    let system = parse_content(system_message);
    let importance = base_importance(user_message, &user, system_message, &system).score;
    let base = NewRecord {
        parent: Some(topic_id),
        text: format!("User: {user_message}\nSystem: {system_message}"),
        embed: true,
        importance: importance as f32,
        metadata,
        ..Default::default()
    };
    let body = ExchangeBody {
        user_message: ExchangeMessage {
            raw_content: user_message.to_string(),
            parsed_content: user,
        },
        system_message: ExchangeMessage {
            raw_content: system_message.to_string(),
            parsed_content: system,
        },
    };
    Records::<ExchangeBody>::new_record(base, &body)
}

/// The system prompt of [`model_entities`] (Memorg's query processor's
/// request, made explicit about the answer's shape).
pub const ENTITY_PROMPT: &str = "Extract the named entities (people, organizations, \
locations, concepts, events) from the user's text. Answer with JSON only: \
{\"entities\": [{\"name\": \"...\", \"type\": \"person|organization|location|concept|event|other\"}]}.";

/// The entities `model` finds in `text`, read by [`entities_from_json`]
/// (every answer shape Memorg accepts).
pub fn model_entities(model: &dyn ChatModel, text: &str) -> Result<Vec<Entity>> {
    let answer = model.complete(ENTITY_PROMPT, text, 256)?;
    entities_from_json(&answer)
}

/// A memory item's type from its body; an unknown type string reads as
/// a custom type of that name (as Memorg's `MemoryType` does).
fn item_kind_of(r: &Record) -> Result<ItemKind> {
    let b = decode::<MemoryItemBody>(r)?;
    let mut k = ItemKind::parse(&b.item_type).unwrap_or(ItemKind {
        memory_type: MemoryType::Custom,
        custom_type: None,
    });
    if k.memory_type == MemoryType::Custom {
        k.custom_type = b.custom_type;
    }
    Ok(k)
}

/// Any record of Memorg's model seen as a memory item (what
/// `get_item_context` and `search_memory` return): chat records keep their
/// type, their text as content and their fields in metadata.
pub fn item_from(r: &Record) -> Result<MemoryItem> {
    let (kind, metadata) = match r.kind {
        c if c == MEMORY_ITEM.code => (item_kind_of(r)?, r.metadata.clone()),
        c => {
            let t = match c {
                1 => MemoryType::Session,
                2 => MemoryType::Conversation,
                3 => MemoryType::Topic,
                4 => MemoryType::Exchange,
                _ => MemoryType::Custom,
            };
            let mut m = r.metadata.as_object().cloned().unwrap_or_default();
            if let Some(b) = r.body.as_object() {
                for (k, v) in b {
                    m.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            (
                ItemKind {
                    memory_type: t,
                    custom_type: None,
                },
                Value::Object(m),
            )
        }
    };
    Ok(MemoryItem {
        id: r.id,
        kind,
        content: r.text.clone(),
        metadata,
        created_at: r.created_at,
        updated_at: r.updated_at,
        importance_score: f64::from(r.importance),
        parent_id: r.parent,
        tags: r.tags.clone(),
    })
}

/// A `search_context` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextSearch {
    /// The question, natural language (at most [`MAX_QUERY_BYTES`]).
    pub query: String,
    /// `all` (default), `session`, `conversation` or `topic`.
    pub scope: SearchScope,
    /// The session, conversation or topic id for the non-`all` scopes.
    pub scope_id: Option<String>,
    /// Results per page (Memorg's `max_results`, default 10).
    pub max_results: usize,
    /// 1-based page.
    pub page: usize,
    /// Reference time for temporal expressions and recency (now by default).
    pub now: Option<DateTime<Utc>>,
}

impl ContextSearch {
    /// `query` over everything, 10 results, page 1.
    pub fn new(query: impl Into<String>) -> ContextSearch {
        ContextSearch {
            query: query.into(),
            scope: SearchScope::All,
            scope_id: None,
            max_results: 10,
            page: 1,
            now: None,
        }
    }
}

/// One `search_context` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextHit {
    /// The exchange.
    pub exchange: Exchange,
    /// The exchange's indexed text (`"User: …\nSystem: …"`).
    pub content: String,
    /// The multi-factor score.
    pub score: f64,
    /// How it matched.
    pub match_type: MatchType,
    /// Each factor's value, weight and contribution.
    pub factors: Vec<crate::memorg::scorer::Factor>,
}

/// What `search_context` answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextResults {
    /// The page of results, best first.
    pub results: Vec<ContextHit>,
    /// Where the page is.
    pub pagination: Pagination,
    /// Terms, entities and the temporal range read from the query.
    pub metadata: QueryMetadata,
}

/// Memorg's `get_memory_usage`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryUsageReport {
    /// Estimated tokens (characters / 4) over every record's text.
    pub total_tokens: u64,
    /// Sessions + conversations + topics + exchanges + memory items.
    pub active_items: u64,
    /// Compressed items (always 0, as in Memorg).
    pub compressed_items: u64,
    /// Exchange and memory-item vectors.
    pub vector_count: u64,
    /// Bytes of the vector index files of this namespace's record spaces.
    pub index_size: u64,
    /// Per kind: sessions, conversations, topics, exchanges, items.
    pub counts: BTreeMap<String, u64>,
}

/// A `search_memory` request (Memorg's memory layer).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemorySearch {
    /// The query.
    pub query: String,
    /// `global` (default) or a chat scope with `scope_id`.
    pub scope: Option<MemoryScope>,
    /// The scope's record id.
    pub scope_id: Option<Uuid>,
    /// Only these item types (strings as `create_memory_item` takes them).
    pub item_types: Vec<String>,
    /// Only items with all these tags.
    pub tags: Vec<String>,
    /// A Chroma-style `where` filter over metadata.
    pub filters: Option<Value>,
    /// Results (default 10).
    pub limit: usize,
}

/// One `search_memory` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryHit {
    /// The item.
    pub item: MemoryItem,
    /// The multi-factor score.
    pub score: f64,
    /// How it matched.
    pub match_type: MatchType,
}

/// `get_item_context`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemContext {
    /// The item itself.
    pub item: MemoryItem,
    /// Ancestors, nearest first, up to the depth asked.
    pub ancestors: Vec<MemoryItem>,
    /// Children, by importance.
    pub children: Vec<MemoryItem>,
    /// Siblings (same parent), by importance, when asked.
    pub siblings: Vec<MemoryItem>,
}

/// `optimize_context`'s answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptimizeReport {
    /// The fitted content (or the rendered template, when one was asked).
    pub optimized_content: String,
    /// Tokens before.
    pub original_length: usize,
    /// Tokens after.
    pub optimized_length: usize,
    /// The optimizer's details.
    pub context: OptimizedContext,
}

/// The record a new memory item is stored as, after Memorg's checks.
fn memory_item_record(
    content: &str,
    item_type: &str,
    parent_id: Option<Uuid>,
    metadata: Value,
    tags: &[String],
    importance: Option<f64>,
) -> Result<NewRecord> {
    if content.trim().is_empty() {
        return Err(Error::invalid("content", "must not be empty"));
    }
    check_len("content", content, MAX_MESSAGE_BYTES)?;
    let kind = ItemKind::parse(item_type)?;
    Ok(NewRecord {
        parent: parent_id,
        text: content.to_string(),
        embed: true,
        tags: items::add_tags(&[], tags)?,
        importance: importance.unwrap_or(0.0) as f32,
        body: encode::<MemoryItemBody>(&MemoryItemBody {
            item_type: kind.memory_type.as_str().to_string(),
            custom_type: kind.custom_type,
        })?,
        metadata: object_or_empty("metadata", metadata)?,
        ..Default::default()
    })
}

/// Memorg on a store handle: sessions, conversations, topics, exchanges
/// and memory items of the handle's namespace (`Memdb::memorg`, through
/// [`crate::Systems`]).
#[derive(Clone, Copy, Debug)]
pub struct Memorg<'a> {
    db: &'a Memdb,
}

impl<'a> Memorg<'a> {
    /// Memorg on handle `db`.
    pub fn new(db: &'a Memdb) -> Memorg<'a> {
        Memorg { db }
    }
}

impl Memorg<'_> {
    /// Memorg's `create_session(user_id, config)`.
    pub fn create_session(&self, user_id: &str, config: Value, metadata: Value) -> Result<Session> {
        let user = user_id.trim();
        if user.is_empty() {
            return Err(Error::invalid("user_id", "must not be empty"));
        }
        check_len("user_id", user, MAX_USER_ID_BYTES)?;
        let config = object_or_empty("config", config)?;
        let r = self.db.create_record(
            SESSION,
            NewRecord {
                text: String::new(),
                body: encode::<SessionBody>(&SessionBody {
                    user_id: user.to_string(),
                    system_config: config,
                })?,
                metadata: object_or_empty("metadata", metadata)?,
                ..Default::default()
            },
        )?;
        session_from(&r)
    }

    /// A session of this namespace.
    pub fn session(&self, id: Uuid) -> Result<Session> {
        session_from(&self.db.get_record(SESSION, id)?)
    }

    /// This namespace's sessions (of `user_id`, when given), oldest first.
    pub fn sessions(&self, user_id: Option<&str>) -> Result<Vec<Session>> {
        self.db
            .records_of_kind(SESSION)?
            .iter()
            .map(session_from)
            .filter(|s| {
                s.as_ref()
                    .map_or(true, |s| user_id.is_none_or(|u| s.user_id == u))
            })
            .collect()
    }

    /// Memorg's `start_conversation(session_id)`, with an optional title.
    pub fn start_conversation(
        &self,
        session_id: Uuid,
        title: Option<&str>,
    ) -> Result<MemorgConversation> {
        let title = title.unwrap_or_default().trim().to_string();
        check_len("title", &title, MAX_TITLE_BYTES)?;
        self.db.get_record(SESSION, session_id)?;
        let r = self.db.create_record(
            CONVERSATION,
            NewRecord {
                parent: Some(session_id),
                text: title.clone(),
                body: encode::<ConversationBody>(&ConversationBody {
                    title: title.clone(),
                    summary: String::new(),
                })?,
                ..Default::default()
            },
        )?;
        conversation_from(&r)
    }

    /// A Memorg conversation of this namespace.
    pub fn conversation(&self, id: Uuid) -> Result<MemorgConversation> {
        conversation_from(&self.db.get_record(CONVERSATION, id)?)
    }

    /// The conversations of a session, oldest first.
    pub fn session_conversations(&self, session_id: Uuid) -> Result<Vec<MemorgConversation>> {
        self.db.get_record(SESSION, session_id)?;
        self.db
            .record_children(session_id, Some(CONVERSATION))?
            .iter()
            .map(conversation_from)
            .collect()
    }

    /// Creates a topic in a conversation (Memorg's
    /// `context_store.create_topic(conversation_id, title)`, a first-class
    /// operation here).
    pub fn create_topic(
        &self,
        conversation_id: Uuid,
        title: &str,
        summary: Option<&str>,
    ) -> Result<Topic> {
        let title = title.trim();
        if title.is_empty() {
            return Err(Error::invalid("title", "must not be empty"));
        }
        check_len("title", title, MAX_TITLE_BYTES)?;
        let summary = summary.unwrap_or_default().trim();
        check_len("summary", summary, MAX_TITLE_BYTES)?;
        self.db.get_record(CONVERSATION, conversation_id)?;
        let entities = parse_content(&format!("{title}. {summary}")).entities;
        let text = if summary.is_empty() {
            title.to_string()
        } else {
            format!("{title}\n{summary}")
        };
        let r = self.db.create_record(
            TOPIC,
            NewRecord {
                parent: Some(conversation_id),
                text,
                body: encode::<TopicBody>(&TopicBody {
                    title: title.to_string(),
                    summary: summary.to_string(),
                    key_entities: entities,
                })?,
                ..Default::default()
            },
        )?;
        topic_from(&r)
    }

    /// A topic of this namespace.
    pub fn topic(&self, id: Uuid) -> Result<Topic> {
        topic_from(&self.db.get_record(TOPIC, id)?)
    }

    /// The topics of a conversation, oldest first.
    pub fn conversation_topics(&self, conversation_id: Uuid) -> Result<Vec<Topic>> {
        self.db.get_record(CONVERSATION, conversation_id)?;
        self.db
            .record_children(conversation_id, Some(TOPIC))?
            .iter()
            .map(topic_from)
            .collect()
    }

    /// Memorg's `add_exchange(topic_id, user_message, system_message)`:
    /// parses both messages, computes the exchange's importance
    /// (`base_importance`, persisted), embeds `"User: <u>\nSystem: <s>"`
    /// once and stores exchange and vector in one transaction.
    pub fn add_exchange(
        &self,
        topic_id: Uuid,
        user_message: &str,
        system_message: &str,
        metadata: Value,
    ) -> Result<Exchange> {
        if user_message.trim().is_empty() {
            return Err(Error::invalid("user_message", "must not be empty"));
        }
        check_len("user_message", user_message, MAX_MESSAGE_BYTES)?;
        check_len("system_message", system_message, MAX_MESSAGE_BYTES)?;
        let metadata = object_or_empty("metadata", metadata)?;
        self.db.get_record(TOPIC, topic_id)?;
        let r = self.db.create_record(
            EXCHANGE,
            exchange_record(topic_id, user_message, system_message, metadata)?,
        )?;
        exchange_from(&r)
    }

    /// Many `add_exchange` calls on one topic in one transaction: the
    /// texts are embedded in batches (`Config::embed_batch`), then every
    /// exchange and vector is written at once. Any invalid exchange writes
    /// nothing. For bulk loads and imports.
    pub fn add_exchanges(
        &self,
        topic_id: Uuid,
        exchanges: &[(String, String)],
    ) -> Result<Vec<Exchange>> {
        self.db.get_record(TOPIC, topic_id)?;
        let mut new = Vec::with_capacity(exchanges.len());
        for (i, (u, s)) in exchanges.iter().enumerate() {
            if u.trim().is_empty() {
                return Err(Error::invalid(
                    format!("exchanges[{i}].user_message"),
                    "must not be empty",
                ));
            }
            check_len("user_message", u, MAX_MESSAGE_BYTES)?;
            check_len("system_message", s, MAX_MESSAGE_BYTES)?;
            new.push(exchange_record(topic_id, u, s, json!({}))?);
        }
        self.db
            .create_records(EXCHANGE, new)?
            .iter()
            .map(exchange_from)
            .collect()
    }

    /// An exchange of this namespace.
    pub fn exchange(&self, id: Uuid) -> Result<Exchange> {
        exchange_from(&self.db.get_record(EXCHANGE, id)?)
    }

    /// The exchanges of a topic, oldest first.
    pub fn topic_exchanges(&self, topic_id: Uuid) -> Result<Vec<Exchange>> {
        self.db.get_record(TOPIC, topic_id)?;
        self.db
            .record_children(topic_id, Some(EXCHANGE))?
            .iter()
            .map(exchange_from)
            .collect()
    }

    /// Deletes a session, conversation, topic, exchange or memory item with
    /// everything under it; returns how many records went.
    pub fn delete(&self, id: Uuid) -> Result<u64> {
        self.db.get_record_any(id)?;
        self.db.delete_record(id)
    }

    /// The scope a search is limited to, checked: the id must name a record
    /// of the scope's kind in this namespace.
    fn resolve_scope(&self, target: &ScopeTarget) -> Result<Option<Uuid>> {
        let (kind, id) = match target {
            ScopeTarget::All => return Ok(None),
            ScopeTarget::Session(id) => (SESSION, id),
            ScopeTarget::Conversation(id) => (CONVERSATION, id),
            ScopeTarget::Topic(id) => (TOPIC, id),
        };
        let id = parse_uuid("scope_id", id)?;
        self.db.get_record(kind, id)?;
        Ok(Some(id))
    }

    /// Memorg's `search_context` (SPEC.md §14.9): candidates from the
    /// vector index (2 × `max_results` × `page`) and the full-text index
    /// (the same number) inside the scope, scored by the multi-factor
    /// scorer, paginated. Query entities come from the heuristic extractor.
    pub fn search_context(&self, req: &ContextSearch) -> Result<ContextResults> {
        self.search_context_with(req, None)
    }

    /// [`Memorg::search_context`] with the query's entities read by `model`
    /// when one is given (Memorg's query processor asks gpt-4o-mini in JSON
    /// mode); a model that fails or answers something that is not an
    /// entity list leaves the heuristic's entities (logged, not an error).
    pub fn search_context_with(
        &self,
        req: &ContextSearch,
        model: Option<&dyn ChatModel>,
    ) -> Result<ContextResults> {
        let mut out = self.search_context_inner(req)?;
        if let Some(m) = model {
            match model_entities(m, req.query.trim()) {
                Ok(entities) => out.metadata.entities = entities,
                Err(e) => tracing::warn!(
                    error = %e,
                    model = %m.name(),
                    "query entities: the model failed; kept the heuristic's"
                ),
            }
        }
        Ok(out)
    }

    fn search_context_inner(&self, req: &ContextSearch) -> Result<ContextResults> {
        let query = req.query.trim();
        if query.is_empty() {
            return Err(Error::invalid("query", "must not be empty"));
        }
        check_len("query", &req.query, MAX_QUERY_BYTES)?;
        if req.max_results == 0 || req.max_results > 100 {
            return Err(Error::invalid(
                "max_results",
                format!("{} is outside 1..=100", req.max_results),
            ));
        }
        if req.page == 0 || req.page > 100 {
            return Err(Error::invalid(
                "page",
                format!("{} is outside 1..=100", req.page),
            ));
        }
        let target = req.scope.with_id(req.scope_id.as_deref())?;
        let scope = self.resolve_scope(&target)?;
        let now = req.now.unwrap_or_else(now);
        let metadata = QueryMetadata::from_query(query, now);
        let want = (2 * req.max_results * req.page).min(crate::model::filter::MAX_LIMIT);
        let found = self.db.search_records(
            query,
            &RecordFilter {
                kinds: vec![EXCHANGE],
                scope,
                ..Default::default()
            },
            want,
            true,
        )?;
        let candidates = self.candidates(&found, EXCHANGE)?;
        let scorer = MultiFactorScorer::default();
        let sq = ScoringQuery {
            embedding: found.query_vector.as_deref(),
            temporal: metadata.temporal_constraints.as_ref(),
            now,
            preferred_categories: &[],
        };
        let page = scorer.rank(candidates, &sq, req.page, req.max_results)?;
        Ok(ContextResults {
            results: page
                .results
                .into_iter()
                .map(|s| {
                    Ok(ContextHit {
                        content: s.item.text.clone(),
                        exchange: exchange_from(&s.item)?,
                        score: s.score,
                        match_type: s.match_type,
                        factors: s.factors,
                    })
                })
                .collect::<Result<_>>()?,
            pagination: page.pagination,
            metadata,
        })
    }

    /// The union of both signals' hits as scorer candidates: the ANN
    /// similarity for vector hits, the stored vector for keyword-only hits
    /// (so the semantic factor applies to every candidate that has one).
    fn candidates(
        &self,
        found: &crate::db::records::RecordCandidates,
        kind: RecordKind,
    ) -> Result<Vec<Candidate<Record>>> {
        let mut order: Vec<Uuid> = Vec::new();
        let mut sims: HashMap<Uuid, f32> = HashMap::new();
        let mut keyword: HashSet<Uuid> = HashSet::new();
        for (id, s) in &found.semantic {
            if sims.insert(*id, *s).is_none() {
                order.push(*id);
            }
        }
        for (id, _) in &found.keyword {
            if keyword.insert(*id) && !sims.contains_key(id) {
                order.push(*id);
            }
        }
        let records = self.db.get_records(&order)?;
        // Keyword-only hits get their stored vectors in one read.
        let mut stored = if found.query_vector.is_some() {
            let keyword_only: Vec<Uuid> = order
                .iter()
                .filter(|id| !sims.contains_key(id))
                .copied()
                .collect();
            self.db.record_vectors(kind, &keyword_only)?
        } else {
            HashMap::new()
        };
        let mut out = Vec::with_capacity(records.len());
        for r in records {
            let mut c = Candidate::new(r.clone()).with_metadata_signals(&r.metadata);
            c.created_at = Some(r.created_at);
            c.importance = Some(f64::from(r.importance));
            c.keyword_hit = keyword.contains(&r.id);
            match sims.get(&r.id) {
                Some(s) => {
                    c.similarity = Some(f64::from(*s));
                    c.vector_hit = true;
                }
                None => c.embedding = stored.remove(&r.id),
            }
            out.push(c);
        }
        Ok(out)
    }

    /// Memorg's `get_memory_usage` for this namespace.
    pub fn memory_usage(&self) -> Result<MemoryUsageReport> {
        let mut counts = BTreeMap::new();
        let mut active = 0;
        let mut chars: u64 = 0;
        for (name, kind) in [
            ("sessions", SESSION),
            ("conversations", CONVERSATION),
            ("topics", TOPIC),
            ("exchanges", EXCHANGE),
            ("memory_items", MEMORY_ITEM),
        ] {
            let records = self.db.records_of_kind(kind)?;
            chars += records
                .iter()
                .map(|r| r.text.chars().count() as u64)
                .sum::<u64>();
            active += records.len() as u64;
            counts.insert(name.to_string(), records.len() as u64);
        }
        let mut vectors = 0;
        let mut bytes = 0;
        for kind in [EXCHANGE, MEMORY_ITEM] {
            vectors += self.db.count_record_vectors(kind)?;
            bytes += self.db.record_index_bytes(kind)?;
        }
        Ok(MemoryUsageReport {
            total_tokens: chars.div_ceil(4),
            active_items: active,
            compressed_items: 0,
            vector_count: vectors,
            index_size: bytes,
            counts,
        })
    }

    /// Memorg's `optimize_context(content, entities, max_tokens)`: fits
    /// `content` into `max_tokens` (extractive summary, then a head/tail
    /// cut), optionally rendered into one of Memorg's two templates.
    pub fn optimize_context(
        &self,
        content: &str,
        entities: &[Entity],
        max_tokens: usize,
        template: Option<PromptTemplate>,
        counter: TokenCounter,
    ) -> Result<OptimizeReport> {
        check_len("content", content, 4 * MAX_MESSAGE_BYTES)?;
        if max_tokens == 0 || max_tokens > 1_000_000 {
            return Err(Error::invalid(
                "max_tokens",
                format!("{max_tokens} is outside 1..=1000000"),
            ));
        }
        let ctx = optimizer::optimize_context(content, entities, max_tokens, &Extractive, counter)?;
        let original = counter.count(content)?;
        let rendered = match template {
            Some(t) => optimizer::render_prompt(&ctx, t),
            None => ctx.content.clone(),
        };
        Ok(OptimizeReport {
            optimized_length: ctx.token_count,
            optimized_content: rendered,
            original_length: original,
            context: ctx,
        })
    }

    /// Memorg's `create_memory_item(content, item_type, parent_id,
    /// metadata, tags)`: an unknown type string becomes `custom` with
    /// `custom_type`; the content is indexed and embedded.
    pub fn create_memory_item(
        &self,
        content: &str,
        item_type: &str,
        parent_id: Option<Uuid>,
        metadata: Value,
        tags: &[String],
        importance: Option<f64>,
    ) -> Result<MemoryItem> {
        let new = memory_item_record(content, item_type, parent_id, metadata, tags, importance)?;
        item_from(&self.db.create_record(MEMORY_ITEM, new)?)
    }

    /// [`Memorg::create_memory_item`] under a caller-chosen id (no parent,
    /// default importance), for integrations whose callers name their
    /// documents (LangChain's `add_documents(ids=...)`); an id already in
    /// use is a `Conflict`.
    pub fn create_memory_item_as(
        &self,
        id: Uuid,
        content: &str,
        item_type: &str,
        metadata: Value,
        tags: &[String],
    ) -> Result<MemoryItem> {
        let new = memory_item_record(content, item_type, None, metadata, tags, None)?;
        item_from(&self.db.put_record_as(MEMORY_ITEM, id, new)?)
    }

    /// A memory item (or any Memorg record seen as one).
    pub fn memory_item(&self, id: Uuid) -> Result<MemoryItem> {
        let r = self.db.get_record_any(id)?;
        if !(SESSION.code..=MEMORY_ITEM.code).contains(&r.kind) {
            return Err(Error::NotFound {
                what: "memory item",
                id: id.to_string(),
            });
        }
        item_from(&r)
    }

    /// Memorg's memory-layer `update`: content (re-embedded), metadata,
    /// importance, tags.
    pub fn update_memory_item(
        &self,
        id: Uuid,
        content: Option<&str>,
        metadata: Option<Value>,
        importance: Option<f64>,
        tags: Option<&[String]>,
    ) -> Result<MemoryItem> {
        self.db.get_record(MEMORY_ITEM, id)?;
        if let Some(c) = content {
            if c.trim().is_empty() {
                return Err(Error::invalid("content", "must not be empty"));
            }
            check_len("content", c, MAX_MESSAGE_BYTES)?;
        }
        let tags = tags.map(|t| items::add_tags(&[], t)).transpose()?;
        let r = self.db.update_record(
            id,
            RecordChange {
                text: content.map(str::to_string),
                embed_text: content.map(str::to_string),
                tags,
                importance: importance.map(|v| v as f32),
                metadata: metadata
                    .map(|m| object_or_empty("metadata", m))
                    .transpose()?,
                ..Default::default()
            },
        )?;
        item_from(&r)
    }

    /// Adds tags to a memory item (set union).
    pub fn add_item_tags(&self, id: Uuid, tags: &[String]) -> Result<MemoryItem> {
        let r = self.db.get_record(MEMORY_ITEM, id)?;
        let merged = items::add_tags(&r.tags, tags)?;
        self.update_memory_item(id, None, None, None, Some(&merged))
    }

    /// Removes tags from a memory item.
    pub fn remove_item_tags(&self, id: Uuid, tags: &[String]) -> Result<MemoryItem> {
        let r = self.db.get_record(MEMORY_ITEM, id)?;
        let left = items::remove_tags(&r.tags, tags);
        self.update_memory_item(id, None, None, None, Some(&left))
    }

    /// Memorg's `get_item_context(id, depth=3, include_siblings)`: the item,
    /// up to `depth` ancestors (nearest first), its children and, when
    /// asked, its siblings, both by importance.
    pub fn item_context(
        &self,
        id: Uuid,
        depth: usize,
        include_siblings: bool,
    ) -> Result<ItemContext> {
        let depth = items::check_context_depth(depth)?;
        let item = self.memory_item(id)?;
        let mut ancestors: Vec<MemoryItem> = self
            .db
            .record_ancestors(id)?
            .iter()
            .map(item_from)
            .collect::<Result<_>>()?;
        ancestors.truncate(depth);
        let mut children: Vec<MemoryItem> = self
            .db
            .record_children(id, None)?
            .iter()
            .map(item_from)
            .collect::<Result<_>>()?;
        items::rank_by_importance(&mut children, |i| i.importance_score);
        let mut siblings = Vec::new();
        if include_siblings && let Some(p) = item.parent_id {
            siblings = self
                .db
                .record_children(p, None)?
                .iter()
                .filter(|r| r.id != id)
                .map(item_from)
                .collect::<Result<_>>()?;
            items::rank_by_importance(&mut siblings, |i| i.importance_score);
        }
        Ok(ItemContext {
            item,
            ancestors,
            children,
            siblings,
        })
    }

    /// Memorg's `search_memory(query, scope, item_types, tags, filters,
    /// limit)` over memory items: keyword and vector candidates inside the
    /// scope, types, tags and metadata filter (resolved to an allow-list
    /// both searches apply), scored by the multi-factor scorer.
    pub fn search_memory(&self, req: &MemorySearch) -> Result<Vec<MemoryHit>> {
        let query = req.query.trim();
        if query.is_empty() {
            return Err(Error::invalid("query", "must not be empty"));
        }
        check_len("query", &req.query, MAX_QUERY_BYTES)?;
        let limit = if req.limit == 0 { 10 } else { req.limit };
        if limit > 100 {
            return Err(Error::invalid(
                "limit",
                format!("{limit} is outside 1..=100"),
            ));
        }
        let scope = match (req.scope.unwrap_or(MemoryScope::Global), req.scope_id) {
            (MemoryScope::Global, None) => None,
            (MemoryScope::Global, Some(_)) => {
                return Err(Error::invalid(
                    "scope_id",
                    "scope `global` takes no scope_id",
                ));
            }
            (_, None) => return Err(Error::invalid("scope_id", "this scope needs a scope_id")),
            (_, Some(id)) => {
                self.db.get_record_any(id)?;
                Some(id)
            }
        };
        let types: Vec<ItemKind> = req
            .item_types
            .iter()
            .map(|t| ItemKind::parse(t))
            .collect::<Result<_>>()?;
        let tags = items::add_tags(&[], &req.tags)?;
        let filter = match &req.filters {
            Some(f) => Some(MetadataFilter::parse(f)?),
            None => None,
        };
        let allowed = if types.is_empty() && filter.as_ref().is_none_or(|f| f.is_trivial()) {
            None
        } else {
            Some(self.db.select_records(&[MEMORY_ITEM], |r| {
                // A body that does not decode matches no type: reading the
                // item reports it as damage.
                let admitted = types.is_empty()
                    || item_kind_of(r).is_ok_and(|k| types.iter().any(|t| t.admits(&k)));
                admitted && filter.as_ref().is_none_or(|f| f.matches(&r.metadata))
            })?)
        };
        let found = self.db.search_records(
            query,
            &RecordFilter {
                kinds: vec![MEMORY_ITEM],
                scope,
                tags,
                allowed,
                exclude_tags: Vec::new(),
            },
            (2 * limit).min(crate::model::filter::MAX_LIMIT),
            true,
        )?;
        let candidates = self.candidates(&found, MEMORY_ITEM)?;
        let now = now();
        let metadata = QueryMetadata::from_query(query, now);
        let sq = ScoringQuery {
            embedding: found.query_vector.as_deref(),
            temporal: metadata.temporal_constraints.as_ref(),
            now,
            preferred_categories: &[],
        };
        let page = MultiFactorScorer::default().rank(candidates, &sq, 1, limit)?;
        page.results
            .into_iter()
            .map(|s| {
                Ok(MemoryHit {
                    item: item_from(&s.item)?,
                    score: s.score,
                    match_type: s.match_type,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::typed::encode;

    fn record(kind: RecordKind, body: Value) -> Record {
        Record {
            id: Uuid::nil(),
            kind: kind.code,
            parent: Some(Uuid::nil()),
            created_at: Utc::now(),
            updated_at: Utc::now(),
            importance: 0.5,
            text: "t".into(),
            tags: Vec::new(),
            body,
            metadata: json!({}),
        }
    }

    /// Bodies as the untyped code wrote them (SPEC.md §14.9) read back,
    /// and a typed write stores the same JSON.
    #[test]
    fn stored_bodies_decode_and_encode_unchanged() {
        let session = json!({"user_id": "alice", "system_config": {"k": 1}});
        let s = session_from(&record(SESSION, session.clone())).unwrap();
        assert_eq!(
            (s.user_id.as_str(), &s.system_config),
            ("alice", &json!({"k": 1}))
        );
        let conversation = json!({"title": "Trip", "summary": ""});
        assert_eq!(
            conversation_from(&record(CONVERSATION, conversation))
                .unwrap()
                .title,
            "Trip"
        );
        let topic = json!({"title": "Rust", "summary": "borrowck", "key_entities": []});
        let t = topic_from(&record(TOPIC, topic.clone())).unwrap();
        assert_eq!(
            encode::<TopicBody>(&TopicBody {
                title: t.title,
                summary: t.summary,
                key_entities: t.key_entities,
            })
            .unwrap(),
            topic
        );
        let written =
            exchange_record(Uuid::nil(), "Where is Lisbon?", "In Portugal.", json!({})).unwrap();
        let e = exchange_from(&record(EXCHANGE, written.body.clone())).unwrap();
        assert_eq!(e.user_message.raw_content, "Where is Lisbon?");
        assert_eq!(e.system_message.raw_content, "In Portugal.");
        assert_eq!(
            written.body["user_message"]["raw_content"],
            "Where is Lisbon?"
        );
        let item = json!({"item_type": "recipe", "custom_type": "recipe"});
        let i = item_from(&record(MEMORY_ITEM, item)).unwrap();
        assert_eq!(i.kind.memory_type, MemoryType::Custom);
        assert_eq!(i.kind.custom_type.as_deref(), Some("recipe"));
    }

    /// A damaged body is an error naming the record, not an empty field.
    #[test]
    fn a_broken_body_is_corruption() {
        let broken = record(SESSION, json!({"system_config": {}}));
        assert!(matches!(
            session_from(&broken),
            Err(Error::Corrupted { .. })
        ));
        let wrong_kind = record(TOPIC, json!({"user_id": "alice"}));
        assert!(matches!(
            session_from(&wrong_kind),
            Err(Error::Corrupted { .. })
        ));
    }
}
