//! Ids of new rows: UUIDv7 (RFC 9562), time-ordered (SPEC.md §3.1).
//!
//! A v7 id starts with its creation time in milliseconds, and ids made by one
//! process are increasing. Every table keyed by a row's id (conversations,
//! messages, records, summaries, vectors, the embed queue) and every index
//! ending in one therefore takes new rows at its right edge: a batch of new
//! conversations dirties a few B-tree pages instead of one page per row, so
//! commits write less and pages stay full after bulk loads. Ids stay opaque
//! UUIDs to every client; nothing reads the time back out of them.

use uuid::Uuid;

/// A fresh id for a new row.
pub(crate) fn new_id() -> Uuid {
    Uuid::now_v7()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_version_7_and_increase() {
        let ids: Vec<Uuid> = (0..1000).map(|_| new_id()).collect();
        assert!(ids.iter().all(|id| id.get_version_num() == 7));
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "not increasing");
    }
}
