//! Memorg's model, the storage-independent half (SPEC.md §22): the logic of
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
//!
//! Design choice: nothing here touches the store, an index or a provider.
//! The engine's storage side feeds these modules rows and vectors and
//! persists what they compute, so every rule is unit-tested with
//! hand-computed expectations. This subsystem imports only `error`, `util`
//! and `model`.

pub mod filter;
pub mod items;
pub mod parse;
pub mod temporal;
