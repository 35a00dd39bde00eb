//! memdb's workspace integration tests, one binary with a module per concern
//! (the ripgrep layout: add to a module before adding a binary).
//!
//! Every test opens real data directories on disk (redb + tantivy), with no
//! mocks. The crash test spawns `memdb-crash-child` and kills it with SIGKILL.

mod api;
mod bad_input;
mod chat_import;
mod compat;
mod contract;
mod crash;
mod embed;
mod hostile;
mod http_stub;
mod kb_hostile;
mod kuradb;
mod mcp_http;
mod mcp_stdio;
mod memorg;
mod memorg_crash;
mod model;
mod namespaces;
mod natural_language;
mod orchestration;
mod proxy;
mod records;
mod recovery;
mod remote;
mod search;
mod semantic;
mod server_api;
mod server_bad_input;
mod server_chat;
mod server_config;
mod server_e2e;
mod server_namespaces;
mod server_orchestration;
mod server_security;
mod server_util;
mod tidy;
mod ui;
mod vector_crash;
mod vectors;

use memdb::Systems;
use memdb::{Memdb, NewConversation, NewMessage};

/// This package's directory (`tests/`), as `cargo test` names it when the
/// test runs, else as it was at compile time. The run's value matters when
/// one target dir serves checkouts at several paths: cargo fingerprints a
/// workspace crate by its path relative to the workspace, so it can reuse a
/// test binary built in another checkout, whose compiled-in
/// `CARGO_MANIFEST_DIR` names that checkout (its files then missing, or
/// another tree's read).
pub fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into())
}

/// A fresh temporary data directory (removed on drop).
/// Waits (up to 20 s) until `f` holds: for work done on another thread
/// (the folder watchers).
pub fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(20) {
        if f() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("timed out waiting until {what}");
}

/// The cosine similarity of two vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("create temp dir")
}

/// Copies the files (not subfolders) of `from` into `to`: an index
/// folder as a crash leaves it.
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Creates a conversation with one message per text, all from `user`.
pub fn conv(
    db: &Memdb,
    label: &str,
    folder: &str,
    texts: &[&str],
) -> memdb::ConversationWithMessages {
    db.sekha()
        .create_conversation(
            NewConversation::new(
                label,
                texts.iter().map(|t| NewMessage::new("user", *t)).collect(),
            )
            .in_folder(folder),
        )
        .expect("create conversation")
}

/// Runs `cmd` (stdout piped) for `delay`, then SIGKILLs it and returns the
/// lines it printed: the crash tests' child loop. Panics if the child exits
/// on its own first (it is meant to run until killed).
pub fn run_until_killed(mut cmd: std::process::Command, delay: std::time::Duration) -> Vec<String> {
    use std::io::{BufRead, BufReader};
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("spawn the child");
    let stdout = child.stdout.take().expect("child stdout");
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<String>>()
    });
    let start = std::time::Instant::now();
    while start.elapsed() < delay {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the child exited on its own: {status}");
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().expect("SIGKILL the child");
    child.wait().expect("reap the child");
    reader.join().expect("reader thread")
}
