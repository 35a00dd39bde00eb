//! Leaf utilities every layer may use: ids of new rows and sets keyed by
//! them, time parsing, dates in free text, the directory lock,
//! the blocking HTTP client for remote providers (cargo feature `openai`),
//! function-word lists, token counting, the `Name:` a dialogue turn opens
//! with, the C allocator's arena limit for
//! the binaries (`malloc.rs`), background threads' CPU priority
//! (`priority.rs`), untrusted work in a limited child process
//! (`sandbox.rs`) and the folder watcher shared by
//! KuraDB and the import folder (`watch.rs`). Nothing here knows about
//! records, tables or indexes.

pub(crate) mod dates;
#[cfg(feature = "openai")]
pub(crate) mod http;
pub(crate) mod idhash;
pub(crate) mod ids;
pub(crate) mod keywords;
pub(crate) mod lock;
pub(crate) mod malloc;
pub(crate) mod priority;
pub(crate) mod sandbox;
pub(crate) mod time;
pub(crate) mod tokens;
pub(crate) mod turn_name;
pub(crate) mod watch;
