//! `memdb-format`: the byte layouts memdb writes, and nothing else.
//!
//! This crate owns every encoding that reaches disk through redb: the
//! versioned **record envelope** (one version byte, then a postcard body), the
//! record structs stored in the conversation and message tables, the
//! **oplog entry** that every write transaction appends, the raw **vector**
//! value (`encode_vector`) and the **query-cache entry**
//! ([`QueryCacheEntry`]); and the HNSW generation file the vector index
//! writes beside the store. It does no I/O: bytes in, a typed value or a
//! [`FormatError`] out. Decoding never panics on any input, which `fuzz/`
//! checks.
//!
//! Why postcard behind a version byte: postcard is maintained, compact and
//! deterministic, but it is not self-describing, so a layout change must be
//! detectable before the body is parsed. The version byte makes an old or a
//! future record an explicit error ([`FormatError::UnsupportedVersion`])
//! instead of a silent misread.
//!
//! ```
//! use memdb_format::{OplogEntry, Op};
//! let entry = OplogEntry { ops: vec![Op::PutMessage([7; 16])] };
//! let bytes = entry.encode();
//! assert_eq!(OplogEntry::decode(&bytes).unwrap(), entry);
//! assert!(OplogEntry::decode(&bytes[..1]).is_err());
//! ```
//!
//! What this crate is not: it knows nothing of redb, tantivy, files or time
//! zones. Timestamps are `i64` microseconds since the Unix epoch (UTC).

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod envelope;
mod generation;
mod item;
mod query_cache;
mod records;
mod summary;
mod vector;

pub use envelope::{FormatError, RECORD_VERSION};
pub use generation::{
    ElementType, GENERATION_HEADER_LEN, GENERATION_MAGIC, GENERATION_OLDEST_SUPPORTED_VERSION,
    GENERATION_VERSION, GenerationEncoder, GenerationParts, GenerationView, MAX_DIMENSION,
    MAX_LEVELS, MAX_NEIGHBORS, Metric, NO_ENTRY_POINT, Neighbors, SECTION_ALIGN, Section,
    SectionInfo,
};
pub use item::ItemRecord;
pub use query_cache::{QUERY_CACHE_HEADER_LEN, QueryCacheEntry};
pub use records::{
    CONVERSATION_RECORD_VERSION, ContentRecord, ConversationRecord, MessageRecord, NamespaceRecord,
    Op, OplogEntry, SpaceRecord,
};
pub use summary::SummaryRecord;
pub use vector::{VECTOR_ELEMENT_F32, decode_vector, encode_vector, encoded_vector_len};
