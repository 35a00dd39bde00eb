//! The record model every surface speaks: conversations, messages and the
//! request/response types of the public API ([`types`]), their validation
//! ([`validate`]), the conversation-scope filter semantics ([`filter`]) and
//! the typed notes a search returns ([`notes`]).
//! Pure data and rules: no tables, no indexes.

pub(crate) mod filter;
pub(crate) mod metric;
pub(crate) mod notes;
pub(crate) mod records;
pub(crate) mod types;
pub(crate) mod validate;
