//! The handlers of memdb-server's routes, one file per family. The
//! contract ([`crate::contract`]) lists them; the router
//! ([`crate::router::router()`]) assembles them with their layers.

pub mod conversations;
pub mod kuradb;
pub mod mcp;
pub mod orchestration;
pub mod proxy;
pub mod search;
pub mod system;
pub mod ui;
