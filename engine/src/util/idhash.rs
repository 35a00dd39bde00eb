//! Hash sets and maps keyed by row ids (`u128`), hashed with foldhash
//! (seeded per process) instead of SipHash.
//!
//! The vector index checks a record id against such a set for every node a
//! search visits (the delta's live map, the generation's tombstones, an
//! allow-list); a profile of KuraDB's two-stage search put a quarter of its
//! time in SipHash there, as the row cache's profile had (a third of a
//! cache hit). The seed is random per process, so ids chosen to collide in
//! one process do not collide in another.

use std::collections::{HashMap, HashSet};

/// The hasher state of every id-keyed set and map.
pub(crate) type IdHashState = foldhash::fast::RandomState;

/// A set of row ids.
pub(crate) type IdSet = HashSet<u128, IdHashState>;

/// A map from row ids.
pub(crate) type IdMap<V> = HashMap<u128, V, IdHashState>;
