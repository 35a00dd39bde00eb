//! Memorg's model, the storage-independent half (SPEC.md §14): the logic of
//! PyPI `memorg` 0.1.2 as it documents itself, working where its code is
//! broken, as pure functions and data structures over plain values.
//!
//! - [`items`]: memory-item types (unknown strings become `custom` with a
//!   `custom_type`), search and memory scopes, tag edits;
//! - [`filter`]: Chroma-style `where` metadata filters, parsed once and
//!   evaluated over `serde_json` metadata;
//! - [`parse`]: an exchange message's parsed content (entities, intents,
//!   sentiment) by a deterministic heuristic, with a hook for a model;
//! - [`temporal`]: temporal constraints from query text ("yesterday",
//!   "last week", "in March", ISO dates) relative to a reference time;
//! - [`importance`]: an exchange's importance and the two prioritization
//!   strategies (recency-weighted, topic coherence);
//! - [`scorer`]: the multi-factor scorer behind `search_context`, with
//!   per-factor explanations, computed match types and pagination;
//! - [`working_memory`]: the token-budgeted working-memory buffer;
//! - [`optimizer`]: the context-window optimizer (summarize, fit a token
//!   budget, render the prompt templates).
//!
//! ```
//! use chrono::{TimeZone, Utc};
//! use memdb::memorg::filter::MetadataFilter;
//! use memdb::memorg::scorer::{Candidate, MatchType, MultiFactorScorer, QueryMetadata, ScoringQuery};
//! use serde_json::json;
//!
//! let now = Utc.with_ymd_and_hms(2026, 3, 18, 12, 0, 0).unwrap();
//! let meta = QueryMetadata::from_query("what did we decide about Postgres yesterday?", now);
//! let range = meta.temporal_constraints.clone().unwrap();
//! assert_eq!(range.expression, "yesterday");
//!
//! let filter = MetadataFilter::parse(&json!({"category": {"$in": ["db", "infra"]}})).unwrap();
//! assert!(filter.matches(&json!({"category": "db"})));
//!
//! let mut hit = Candidate::new("exchange-1");
//! hit.similarity = Some(0.8);
//! hit.created_at = Some(Utc.with_ymd_and_hms(2026, 3, 17, 9, 0, 0).unwrap());
//! hit.importance = Some(0.6);
//! hit.vector_hit = true;
//! let query = ScoringQuery { embedding: None, temporal: Some(&range), now, preferred_categories: &[] };
//! let page = MultiFactorScorer::default().rank(vec![hit], &query, 1, 10).unwrap();
//! let top = &page.results[0];
//! assert_eq!(top.factors.len(), 3);
//! assert_eq!(top.match_type, MatchType::Semantic); // 0.4 · 0.8 is the largest share
//! ```
//!
//! Design choice: nothing here touches the store, an index or a provider.
//! The engine's storage side feeds these modules rows and vectors and
//! persists what they compute, so every rule is unit-tested with
//! hand-computed expectations. This subsystem imports only `error`, `util`
//! and `model`.

pub mod filter;
pub mod importance;
pub mod items;
pub mod optimizer;
pub mod parse;
pub mod scorer;
pub mod system;
pub mod temporal;
pub mod working_memory;
