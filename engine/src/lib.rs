//! `memdb`: an embedded long-term memory database for LLM agents.
//!
//! This crate is the engine every surface (the `memdb` CLI, `memdb-server`,
//! MCP) calls. It owns:
//! - the **store** (redb): conversations and messages with every Sekha field,
//!   their secondary indexes and the **oplog**; it is the source of truth;
//! - the **text index** (tantivy): one BM25 document per message, derived from
//!   the store, caught up from the oplog or rebuilt after a crash;
//! - the operations: create, append, get, list, count, update, pin, archive,
//!   delete, search, stats, export and import.
//!
//! The one design choice everything rests on: indexes are *derived*. A write
//! is durable once its redb transaction commits, and that transaction also
//! appends an oplog entry; every index records the LSN it has applied and
//! replays from there. So a crash can cost an index some work, never data.
//!
//! ```
//! use memdb::{Memdb, NewConversation, NewMessage, TextQuery};
//! let dir = tempfile::tempdir().unwrap();
//! let db = Memdb::open(dir.path()).unwrap();
//! let conv = db.create_conversation(
//!     NewConversation::new("Rust", vec![NewMessage::new("user", "How do lifetimes work?")])
//!         .in_folder("/work"),
//! ).unwrap();
//! let hits = db.search_text(&TextQuery::new("lifetimes")).unwrap();
//! assert_eq!(hits[0].message.conversation_id, conv.conversation.id);
//! assert_eq!(hits[0].folder, "/work");
//! ```
//!
//! What it is not: it has no HTTP, CLI or MCP code (those crates parse,
//! authorize, call and serialize), and it never panics on user input.

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod budget;
mod chat;
mod checkpoint;
mod config;
mod context;
mod db;
mod embed;
mod embedding;
mod error;
mod export;
mod http;
mod keywords;
mod llm;
mod lock;
mod pairs;
mod plainquery;
mod prune;
mod rowcache;
mod search;
mod softdir;
mod spaces;
mod store;
mod suggest;
mod summary;
mod text;
mod time;
mod tokens;
mod types;
mod validate;
mod vector;
mod vindex;

pub use budget::{QueryLimits, QueryShape, check as check_query, check_with as check_query_with};
pub use chat::ChatModel;
pub use config::Config;
pub use context::{
    AssembledContext, Citation, ContextMessage, ContextRequest, Ranking, RecallCounts,
    RecallSource, pack, rank_score, recency,
};
pub use db::{MAX_LIMIT, Memdb};
pub use embed::{
    Embedder, Embeddings, Hashing, LocalOnnx, LocalOnnxOptions, ModelIdentity, OpenAiConfig,
    OpenAiEmbedder, default_models_dir,
};
pub use embedding::{EmbedProgress, EmbedReport, EmbedWorker, EmbeddingStatus, SpaceModel};
pub use error::{Error, RemoteFailure, Result};
pub use export::{
    EXPORT_BATCH, EXPORT_FORMAT, EXPORT_VERSION, Export, ExportFormat, ExportStream, ImportOptions,
    ImportReport, Selection,
};
pub use llm::{OpenAiChat, OpenAiChatConfig};
pub use prune::{
    PruneAction, PruneExecuteReport, PruneReport, PruneRequest, PruneRule, PruneSuggestion,
    Recommendation,
};
pub use search::{
    FusionMethod, FusionWeights, MAX_OFFSET, ScoreExplain, SearchMode, SearchRequest, SearchResults,
};
pub use spaces::{
    MAX_DIMENSION, Metric, SpaceSpec, VectorFilter, VectorHit, VectorSpace, VerifyOutcome,
};
pub use suggest::{ImportanceScore, LabelSuggestion, LabelSuggestions, heuristic_importance};
pub use summary::{
    Extractive, LlmSummarizer, ServedSummary, SummarizeRequest, Summarizer, Summary, SummaryInput,
    SummaryLevel, SummarySource,
};
pub use time::parse_timestamp;
pub use tokens::{TokenCounter, estimate_tokens};
pub use types::*;
pub use validate::{
    MAX_FOLDER_BYTES, MAX_FOLDER_DEPTH, MAX_LABEL_BYTES, MAX_METADATA_BYTES, MAX_ROLE_BYTES,
};
pub use vindex::{VectorSearch, VectorStats};

/// The README's Rust tour, compiled and run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
mod readme {}

/// Internals for the benchmark binaries in `benches/` (feature
/// `bench-internals`, off by default). Not part of the API: no stability,
/// no docs.
#[cfg(feature = "bench-internals")]
#[doc(hidden)]
pub mod bench_internals {
    pub use crate::search::hybrid_keyword_query;
    pub use crate::vector::bench::{BenchError, Generation, Graph, clustered, run};
    pub use memdb_format::Metric;
}
