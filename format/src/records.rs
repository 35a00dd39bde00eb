//! Record structs stored in redb values, and the oplog entry.
//!
//! Field order is the encoding order (postcard): never reorder, only append
//! behind a new [`crate::RECORD_VERSION`].

use serde::{Deserialize, Serialize};

use crate::envelope::{self, FormatError};

/// The version byte of a conversation row as this build writes it. Version
/// 1 (before namespaces) is read as namespace 0 (`default`).
pub const CONVERSATION_RECORD_VERSION: u8 = 2;

/// A conversation row (table `conversations`, key = UUID as `u128`).
/// Layout version 2 ([`CONVERSATION_RECORD_VERSION`]); version 1 had every
/// field but the trailing `namespace`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationRecord {
    /// Human label, 1..=500 bytes.
    pub label: String,
    /// Folder path, starts with `/`.
    pub folder: String,
    /// 0 = active, 1 = archived.
    pub status: u8,
    /// 0..=10; 10 means pinned.
    pub importance: u8,
    /// Words over all messages' text.
    pub word_count: u64,
    /// Sekha's session counter (1 on creation).
    pub session_count: u32,
    /// Number of messages.
    pub message_count: u32,
    /// Next per-conversation message sequence number.
    pub next_seq: u32,
    /// Creation time, µs since the epoch (UTC).
    pub created_at: i64,
    /// Last change time, µs since the epoch (UTC).
    pub updated_at: i64,
    /// Free metadata, a JSON object serialized as text.
    pub metadata_json: String,
    /// The namespace the conversation (and its messages) belongs to: the id
    /// of a row of table `namespaces`; 0 is `default`.
    pub namespace: u32,
}

/// Layout version 1 of [`ConversationRecord`] (no namespace).
#[derive(Deserialize)]
struct ConversationRecordV1 {
    label: String,
    folder: String,
    status: u8,
    importance: u8,
    word_count: u64,
    session_count: u32,
    message_count: u32,
    next_seq: u32,
    created_at: i64,
    updated_at: i64,
    metadata_json: String,
}

impl ConversationRecord {
    /// Encodes into the envelope, layout version [`CONVERSATION_RECORD_VERSION`].
    pub fn encode(&self) -> Vec<u8> {
        envelope::encode_as(CONVERSATION_RECORD_VERSION, self)
    }

    /// Decodes layout version 1 (as namespace 0) or 2; never panics.
    pub fn decode(bytes: &[u8]) -> Result<Self, FormatError> {
        const WHAT: &str = "conversation record";
        match envelope::split(WHAT, bytes)? {
            (CONVERSATION_RECORD_VERSION, body) => envelope::decode_body(WHAT, body),
            (1, body) => {
                let v1: ConversationRecordV1 = envelope::decode_body(WHAT, body)?;
                Ok(ConversationRecord {
                    label: v1.label,
                    folder: v1.folder,
                    status: v1.status,
                    importance: v1.importance,
                    word_count: v1.word_count,
                    session_count: v1.session_count,
                    message_count: v1.message_count,
                    next_seq: v1.next_seq,
                    created_at: v1.created_at,
                    updated_at: v1.updated_at,
                    metadata_json: v1.metadata_json,
                    namespace: 0,
                })
            }
            (found, _) => Err(FormatError::UnsupportedVersion {
                what: WHAT,
                found,
                supported: CONVERSATION_RECORD_VERSION,
            }),
        }
    }
}

/// A namespace (table `namespaces`, key = its name): the unit every record
/// belongs to and an API key may be limited to. `default` (id 0) always
/// exists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceRecord {
    /// Small integer id stored in records and index keys; never reused.
    pub id: u32,
    /// Creation time, µs since the epoch (UTC).
    pub created_at: i64,
}

/// A message's content as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ContentRecord {
    /// Plain text.
    Text(String),
    /// OpenAI-style content parts, kept verbatim as JSON text.
    PartsJson(String),
}

/// A message row (table `messages`, key = UUID as `u128`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageRecord {
    /// Owning conversation, UUID bytes.
    pub conversation_id: [u8; 16],
    /// Position within the conversation (tie-breaker for equal timestamps).
    pub seq: u32,
    /// Author role (`user`, `assistant`, `system`, `tool`, ...).
    pub role: String,
    /// Content as given.
    pub content: ContentRecord,
    /// Message time, µs since the epoch (UTC).
    pub timestamp: i64,
    /// Identifier of the message's vector, when embedded.
    pub embedding_id: Option<String>,
    /// Free metadata, a JSON object serialized as text.
    pub metadata_json: String,
}

/// One change recorded in the oplog. Derived indexes replay these.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// A message was created or replaced: (re)index it.
    PutMessage([u8; 16]),
    /// A message was removed: drop it from every index.
    DeleteMessage([u8; 16]),
    /// A conversation's scope fields changed: reindex all of its messages.
    PutConversation([u8; 16]),
    /// A conversation and all of its messages were removed.
    DeleteConversation([u8; 16]),
    /// A record's vector in a vector space was written (space id, record id).
    PutVector(u32, [u8; 16]),
    /// A record's vector in a vector space was removed (space id, record id).
    DeleteVector(u32, [u8; 16]),
    /// A message that did not exist before this entry was created: index it.
    /// Like [`Op::PutMessage`], but tells the text index that no earlier
    /// document can exist for the id, so it may skip the delete (SPEC.md §7.3
    /// says when that is safe during replay).
    InsertMessage([u8; 16]),
    /// A summary of the conversation was stored (table `summaries`). No
    /// derived index holds summaries today; the op gives the write its LSN.
    PutSummary([u8; 16]),
    /// A generic record (table `records`) was created or replaced: (re)index
    /// it. Its vector, if any, is recorded as [`Op::PutVector`].
    PutRecord([u8; 16]),
    /// A generic record was removed: drop it from every index.
    DeleteRecord([u8; 16]),
    /// A generic record that did not exist before this entry was created:
    /// index it. Like [`Op::PutRecord`], but no earlier document can exist
    /// for the id, so the text index may skip the delete (the rule of
    /// [`Op::InsertMessage`]): a bulk load's deletes each held a query
    /// weight in tantivy's delete queue until the next commit.
    InsertRecord([u8; 16]),
}

/// A vector space (table `vector_spaces`, key = its name): one embedding
/// model's vectors, with the identity that keeps models from mixing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpaceRecord {
    /// Small integer id used in keys and file names.
    pub id: u32,
    /// Vector dimension.
    pub dimension: u32,
    /// 0 = cosine, 1 = dot, 2 = L2.
    pub metric: u8,
    /// HNSW M (neighbors per node above layer 0; layer 0 has 2M).
    pub m: u16,
    /// HNSW ef_construction.
    pub ef_construction: u16,
    /// Current generation number (0 = none written yet).
    pub generation: u64,
    /// LSN covered by the current generation.
    pub generation_lsn: u64,
    /// Creation time, µs since the epoch (UTC).
    pub created_at: i64,
    /// Free description of the model (provider, model name), JSON text.
    pub model_json: String,
}

/// The oplog value for one LSN: every change made by one write transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OplogEntry {
    /// Changes in the order they were made.
    pub ops: Vec<Op>,
}

macro_rules! codec {
    ($t:ty, $what:literal) => {
        impl $t {
            /// Encodes into the versioned envelope.
            pub fn encode(&self) -> Vec<u8> {
                envelope::encode(self)
            }
            /// Decodes from the versioned envelope; never panics.
            pub fn decode(bytes: &[u8]) -> Result<Self, FormatError> {
                envelope::decode($what, bytes)
            }
        }
    };
}

codec!(NamespaceRecord, "namespace record");
codec!(MessageRecord, "message record");
codec!(OplogEntry, "oplog entry");
codec!(SpaceRecord, "vector space record");

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn conv() -> ConversationRecord {
        ConversationRecord {
            label: "l".into(),
            folder: "/".into(),
            status: 0,
            importance: 5,
            word_count: 3,
            session_count: 1,
            message_count: 2,
            next_seq: 2,
            created_at: 1,
            updated_at: 2,
            metadata_json: "{}".into(),
            namespace: 7,
        }
    }

    #[test]
    fn a_version_1_conversation_reads_as_namespace_0() {
        // The bytes a build before namespaces wrote for `conv()`.
        let mut c = conv();
        let v1 = [1u8, 1, b'l', 1, b'/', 0, 5, 3, 1, 2, 2, 2, 4, 2, b'{', b'}'];
        c.namespace = 0;
        assert_eq!(ConversationRecord::decode(&v1).unwrap(), c);
        // Re-encoded, it is version 2 and keeps every field.
        let v2 = c.encode();
        assert_eq!(v2[0], CONVERSATION_RECORD_VERSION);
        assert_eq!(&v2[1..v1.len()], &v1[1..]);
        assert_eq!(ConversationRecord::decode(&v2).unwrap(), c);
        // A v1 body with a namespace appended is trailing garbage, not v2.
        let mut bad = v1.to_vec();
        bad.push(3);
        assert!(matches!(
            ConversationRecord::decode(&bad),
            Err(FormatError::Corrupt { .. })
        ));
    }

    #[test]
    fn round_trips_and_rejects_other_versions() {
        let c = conv();
        let mut bytes = c.encode();
        assert_eq!(bytes[0], CONVERSATION_RECORD_VERSION);
        assert_eq!(ConversationRecord::decode(&bytes).unwrap(), c);
        bytes[0] = 9;
        assert!(matches!(
            ConversationRecord::decode(&bytes),
            Err(FormatError::UnsupportedVersion { found: 9, .. })
        ));
        assert!(matches!(
            ConversationRecord::decode(&[]),
            Err(FormatError::Empty { .. })
        ));
    }

    #[test]
    fn trailing_bytes_are_corruption() {
        let mut bytes = OplogEntry {
            ops: vec![Op::DeleteConversation([1; 16])],
        }
        .encode();
        bytes.push(0);
        assert!(matches!(
            OplogEntry::decode(&bytes),
            Err(FormatError::Corrupt { .. })
        ));
    }

    #[test]
    fn op_variant_indexes_are_stable() {
        // postcard encodes the variant index first: appending variants keeps
        // every older entry decodable, reordering would not.
        let cases = [
            (Op::PutMessage([1; 16]), 0u8),
            (Op::DeleteMessage([1; 16]), 1),
            (Op::PutConversation([1; 16]), 2),
            (Op::DeleteConversation([1; 16]), 3),
            (Op::PutVector(7, [1; 16]), 4),
            (Op::DeleteVector(7, [1; 16]), 5),
            (Op::InsertMessage([1; 16]), 6),
            (Op::PutSummary([1; 16]), 7),
            (Op::PutRecord([1; 16]), 8),
            (Op::DeleteRecord([1; 16]), 9),
            (Op::InsertRecord([1; 16]), 10),
        ];
        for (op, index) in cases {
            let entry = OplogEntry {
                ops: vec![op.clone()],
            };
            let bytes = entry.encode();
            // envelope version, ops length (1), variant index.
            assert_eq!(bytes[2], index, "{op:?}");
            assert_eq!(OplogEntry::decode(&bytes).unwrap(), entry);
        }
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = ConversationRecord::decode(&bytes);
            let _ = MessageRecord::decode(&bytes);
            let _ = OplogEntry::decode(&bytes);
            let _ = SpaceRecord::decode(&bytes);
            let _ = NamespaceRecord::decode(&bytes);
        }

        #[test]
        fn message_round_trip(role in "[a-z]{1,10}", text in ".*", ts in any::<i64>(), seq in any::<u32>()) {
            let m = MessageRecord {
                conversation_id: [3; 16], seq, role, content: ContentRecord::Text(text),
                timestamp: ts, embedding_id: None, metadata_json: "{}".into(),
            };
            prop_assert_eq!(MessageRecord::decode(&m.encode()).unwrap(), m);
        }
    }
}
