//! Conversions between the stored rows (`memdb_format` records) and the
//! public types, and the indexed text of a message.

use memdb_format::{ContentRecord, ConversationRecord, MessageRecord};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::types::{Content, Conversation, Message, PINNED_IMPORTANCE, Status};
use crate::util::time::from_micros;

/// The indexed text of a stored message.
pub(crate) fn record_text(m: &MessageRecord) -> String {
    message_text(m).into_owned()
}

/// [`record_text`], borrowed when the message is plain text.
pub(crate) fn message_text(m: &MessageRecord) -> std::borrow::Cow<'_, str> {
    match &m.content {
        ContentRecord::Text(s) => std::borrow::Cow::Borrowed(s.as_str()),
        ContentRecord::PartsJson(j) => std::borrow::Cow::Owned(
            serde_json::from_str::<Vec<serde_json::Value>>(j)
                .map(|p| Content::Parts(p).text())
                .unwrap_or_default(),
        ),
    }
}

pub(crate) fn conversation_from(id: u128, r: &ConversationRecord) -> Result<Conversation> {
    Ok(Conversation {
        id: Uuid::from_u128(id),
        label: r.label.clone(),
        folder: r.folder.clone(),
        status: Status::from_code(r.status).ok_or_else(|| Error::Corrupted {
            what: format!("conversation {}", Uuid::from_u128(id)),
            reason: format!("unknown status code {}", r.status),
        })?,
        importance_score: r.importance,
        pinned: r.importance >= PINNED_IMPORTANCE,
        word_count: r.word_count,
        session_count: r.session_count,
        message_count: r.message_count,
        created_at: from_micros(r.created_at),
        updated_at: from_micros(r.updated_at),
        metadata: parse_json_object(&r.metadata_json),
    })
}

pub(crate) fn message_from(id: u128, r: &MessageRecord) -> Result<Message> {
    let content = match &r.content {
        ContentRecord::Text(s) => Content::Text(s.clone()),
        ContentRecord::PartsJson(j) => {
            Content::Parts(serde_json::from_str(j).map_err(|e| Error::Corrupted {
                what: format!("message {}", Uuid::from_u128(id)),
                reason: format!("content parts: {e}"),
            })?)
        }
    };
    Ok(Message {
        id: Uuid::from_u128(id),
        conversation_id: Uuid::from_u128(u128::from_le_bytes(r.conversation_id)),
        role: r.role.clone(),
        content,
        timestamp: from_micros(r.timestamp),
        embedding_id: r.embedding_id.clone(),
        metadata: parse_json_object(&r.metadata_json),
    })
}

fn parse_json_object(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|_| serde_json::Value::Object(Default::default()))
}
