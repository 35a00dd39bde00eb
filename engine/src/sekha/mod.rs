//! Sekha: conversations and messages with labels, folders, importance and
//! pinning, as the [`Sekha`] handle on a [`Memdb`] (`db.sekha()`, through
//! [`crate::Systems`]). Its operations, one module each: conversation and
//! message CRUD ([`crud`]), search (delegated to `query/`, [`search`]),
//! context assembly ([`context`]), export and import ([`export`]), pruning
//! ([`prune`]), daily/weekly/monthly summaries ([`summary`]), label and
//! importance suggestions ([`suggest`]), chat-export import ([`import`]),
//! and the text a chat proxy injects and labels its captures with
//! ([`proxy`], pure functions over their results). Every module reaches
//! storage through the core's API only (the write path, snapshots and the
//! store's typed tables).

pub(crate) mod context;
pub(crate) mod crud;
pub(crate) mod export;
pub mod import;
pub(crate) mod proxy;
pub(crate) mod prune;
pub(crate) mod search;
pub(crate) mod suggest;
pub(crate) mod summary;

use crate::db::Memdb;

/// Sekha's operations on a store handle, in that handle's namespace:
/// conversations and messages, search, context assembly, summaries,
/// pruning, labels and importance, export and import. Cheap to make
/// (`db.sekha()`); it borrows the [`Memdb`] it was made from.
#[derive(Clone, Copy)]
pub struct Sekha<'a> {
    db: &'a Memdb,
}

impl<'a> Sekha<'a> {
    pub(crate) fn new(db: &'a Memdb) -> Self {
        Sekha { db }
    }
}

impl std::fmt::Debug for Sekha<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sekha").field("db", self.db).finish()
    }
}
