//! `memdb`: an embedded long-term memory database for LLM agents.
//!
//! This crate is the engine every surface (the `memdb` CLI, `memdb-server`,
//! MCP) calls. It owns:
//! - the **store** (redb): conversations and messages with every Sekha field,
//!   generic records of any other kind (SPEC §13), their secondary indexes
//!   and the **oplog**; it is the source of truth;
//! - the **text index** (tantivy): one BM25 document per message and per
//!   record, derived from the store, caught up from the oplog or rebuilt
//!   after a crash; the **vector index** (HNSW generations + delta);
//! - Sekha's operations ([`Sekha`], `db.sekha()`): create, append, get,
//!   list, count, update, pin, archive, delete, search, context assembly,
//!   summaries, pruning, stats, export and import;
//! - Memorg's model ([`memorg`]: sessions, topics, exchanges, memory items,
//!   `search_context`, the optimizer) and KuraDB's ([`kuradb`]: knowledge
//!   bases over folders, their sync, watcher and search).
//!
//! The one design choice everything rests on: indexes are *derived*. A write
//! is durable once its redb transaction commits, and that transaction also
//! appends an oplog entry; every index records the LSN it has applied and
//! replays from there. So a crash can cost an index some work, never data.
//!
//! ```
//! use memdb::{Memdb, NewConversation, NewMessage, Systems, TextQuery};
//! let dir = tempfile::tempdir().unwrap();
//! let db = Memdb::open(dir.path()).unwrap();
//! let conv = db.sekha().create_conversation(
//!     NewConversation::new("Rust", vec![NewMessage::new("user", "How do lifetimes work?")])
//!         .in_folder("/work"),
//! ).unwrap();
//! let hits = db.sekha().search_text(&TextQuery::new("lifetimes")).unwrap();
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

mod cancel;
mod config;
mod db;
mod embed;
mod error;
pub mod kuradb;
mod llm;
pub mod memorg;
mod model;
mod query;
mod sekha;
mod store;
mod text;
mod util;
mod vector;

pub use cancel::{check_cancelled, with_cancel_flag};
pub use config::{Config, DEFAULT_STORE_CACHE_BYTES};
pub use db::Memdb;
pub use db::embedding::{EmbedProgress, EmbedReport, EmbedWorker, EmbeddingStatus, SpaceModel};
pub use db::namespace::{MAX_NAMESPACE_BYTES, NamespaceInfo, validate_namespace};
pub use db::records::{
    EmbedWhen, MAX_RECORD_JSON_BYTES, MAX_RECORD_TEXT_BYTES, MAX_TAGS, NewRecord, Record,
    RecordCandidates, RecordChange, RecordFilter, RecordKind, RecordSignals,
};
pub use db::typed::{Kind, Records, Typed};
pub use embed::{
    Embedder, EmbedderKind, EmbedderSettings, Embeddings, Hashing, LOCAL_MODEL_ENV,
    LOCAL_PRECISION_ENV, LongPassage, ModelIdentity, NEIGHBOUR_CHARS, OpenAiSettings, Passage,
    SelectedEmbedder, default_models_dir, select_embedder, spread_windows, token_windows,
};
#[cfg(feature = "local-onnx")]
pub use embed::{LocalModel, LocalOnnx, LocalOnnxOptions, LocalPrecision};
#[cfg(feature = "openai")]
pub use embed::{OpenAiConfig, OpenAiEmbedder};
pub use error::{Error, RemoteFailure, Result};
pub use llm::ChatModel;
#[cfg(feature = "openai")]
pub use llm::{OpenAiChat, OpenAiChatConfig};
pub use model::filter::MAX_LIMIT;
pub use model::metric::{MAX_DIMENSION, Metric};
pub use model::notes::{SearchNote, UnknownNote};
pub use model::types::*;
pub use model::validate::{
    MAX_FOLDER_BYTES, MAX_FOLDER_DEPTH, MAX_LABEL_BYTES, MAX_METADATA_BYTES, MAX_ROLE_BYTES,
};
pub use query::{
    COVERAGE_DEPTH, DEFAULT_ANSWERS, DEFAULT_COVERAGE, DEFAULT_PREVIOUS_TURN,
    DEFAULT_QUESTION_LIFT, DEFAULT_QUESTIONS, DEFAULT_SECOND_NEIGHBOURS, DEFAULT_SEMANTIC_WEIGHT,
    DEFAULT_SESSION_MASS, DEFAULT_SESSION_TAIL, DEFAULT_SESSION_TAIL_RATIO, DEFAULT_SHORT_TURNS,
    DEFAULT_SPEAKER, FusionMethod, FusionWeights, MAX_OFFSET, PERIOD_BOOST, QueryLanguage,
    SESSION_MASS_TURNS, SESSION_TAIL_END, SHORT_TURN_WORDS, SPREAD_WINDOW, SearchMode,
    SearchRequest, SearchResults,
};
pub use sekha::Sekha;
pub use sekha::context::{
    AssembledContext, Citation, ContextMessage, ContextRequest, Ranking, RecallCounts,
    RecallSource, pack, rank_score, recency,
};
pub use sekha::export::{
    EXPORT_BATCH, EXPORT_FORMAT, EXPORT_VERSION, Export, ExportFormat, ExportStream, ImportOptions,
    ImportReport, Selection,
};
pub use sekha::import;
pub use sekha::proxy::{
    CAPTURE_LABEL_CHARS, DEFAULT_CAPTURE_FOLDER, DEFAULT_PROXY_BUDGET, UNTITLED_CAPTURE,
    capture_label, context_system_message, proxy_query,
};
pub use sekha::prune::{
    PruneAction, PruneExecuteReport, PruneReport, PruneRequest, PruneRule, PruneSuggestion,
    Recommendation,
};
pub use sekha::suggest::{
    AutoLabel, ImportanceScore, LabelSuggestion, LabelSuggestions, auto_label_folder,
    heuristic_importance,
};
pub use sekha::summary::{
    Extractive, LlmSummarizer, ServedSummary, SummarizeRequest, Summarizer, Summary, SummaryInput,
    SummaryLevel, SummarySource,
};
pub use text::budget::{
    QueryLimits, QueryShape, check as check_query, check_with as check_query_with,
};
pub use util::malloc::{MALLOC_ARENAS, limit_malloc_arenas};
pub use util::time::parse_timestamp;
pub use util::tokens::{TokenCounter, estimate_tokens};
pub use vector::index::{GenerationBuild, VectorSearch, VectorStats};
pub use vector::spaces::{SpaceSpec, VectorFilter, VectorHit, VectorSpace, VerifyOutcome};

/// The systems memdb reproduces, as handles on a store handle: each
/// works in the handle's namespace and reaches the store through the
/// core's API only. `use memdb::Systems` to call them as methods.
pub trait Systems {
    /// Sekha: conversations and messages, search, context assembly,
    /// summaries, pruning, labels, export and chat-export import.
    fn sekha(&self) -> Sekha<'_>;
    /// Memorg: sessions > conversations > topics > exchanges, memory items,
    /// `search_context` and the context optimizer.
    fn memorg(&self) -> memorg::system::Memorg<'_>;
    /// KuraDB: knowledge bases over folders, their sync and search.
    fn kuradb(&self) -> kuradb::KuraDb<'_>;
}

impl Systems for Memdb {
    fn sekha(&self) -> Sekha<'_> {
        Sekha::new(self)
    }

    fn memorg(&self) -> memorg::system::Memorg<'_> {
        memorg::system::Memorg::new(self)
    }

    fn kuradb(&self) -> kuradb::KuraDb<'_> {
        kuradb::KuraDb::new(self)
    }
}

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
    pub use crate::query::hybrid_keyword_query;
    pub use crate::vector::bench::{BenchError, Generation, Graph, clustered, run};
    pub use memdb_format::Metric;
}
