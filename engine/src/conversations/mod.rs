//! Sekha's conversation model on top of the engine: context assembly
//! ([`context`]), export and import ([`export`]), pruning ([`prune`]),
//! daily/weekly/monthly summaries ([`summary`]) and label and importance
//! suggestions ([`suggest`]). Each module extends [`crate::Memdb`] with its
//! operations and reaches storage only through the store's typed API.

pub(crate) mod context;
pub(crate) mod export;
pub(crate) mod prune;
pub(crate) mod suggest;
pub(crate) mod summary;
