//! memdb's workspace integration tests, one binary with a module per concern
//! (the ripgrep layout: add to a module before adding a binary).
//!
//! Every test opens real data directories on disk (redb + tantivy), with no
//! mocks. The crash test spawns `memdb-crash-child` and kills it with SIGKILL.

mod api;
mod bad_input;
mod contract;
mod crash;
mod embed;
mod hostile;
mod http_stub;
mod kuradb;
mod mcp_http;
mod mcp_stdio;
mod memorg;
mod memorg_crash;
mod model;
mod namespaces;
mod natural_language;
mod orchestration;
mod records;
mod recovery;
mod remote;
mod search;
mod semantic;
mod server_api;
mod server_bad_input;
mod server_e2e;
mod server_namespaces;
mod server_orchestration;
mod server_security;
mod server_util;
mod tidy;
mod vector_crash;
mod vectors;

use memdb::{Memdb, NewConversation, NewMessage};

/// A fresh temporary data directory (removed on drop).
pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("create temp dir")
}

/// Creates a conversation with one message per text, all from `user`.
pub fn conv(
    db: &Memdb,
    label: &str,
    folder: &str,
    texts: &[&str],
) -> memdb::ConversationWithMessages {
    db.create_conversation(
        NewConversation::new(
            label,
            texts.iter().map(|t| NewMessage::new("user", *t)).collect(),
        )
        .in_folder(folder),
    )
    .expect("create conversation")
}
