//! Sekha's conversation model on top of the engine: context assembly
//! ([`context`]), export and import ([`export`]), pruning ([`prune`]),
//! daily/weekly/monthly summaries ([`summary`]), label and importance
//! suggestions ([`suggest`]) and the text a chat proxy injects and labels
//! its captures with ([`proxy`]). Each module extends [`crate::Memdb`] with
//! its operations (or, as `proxy`, is pure functions over their results) and
//! reaches storage only through the store's typed API.

pub(crate) mod context;
pub(crate) mod export;
pub(crate) mod proxy;
pub(crate) mod prune;
pub(crate) mod suggest;
pub(crate) mod summary;
