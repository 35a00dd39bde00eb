//! Shared by the crash children (`#[path]`-included): opens a data
//! directory with the 64-dimension `Hashing` embedder, or exits 1 saying
//! why.

use std::sync::Arc;

use memdb::{Config, Hashing, Memdb};

/// The store at `dir` with the hashing embedder.
pub fn open(dir: &str) -> Memdb {
    let embedder = match Hashing::new(64) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("embedder: {e}");
            std::process::exit(1);
        }
    };
    match Memdb::open_with(dir, Config::with_embedder(Arc::new(embedder))) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("open failed: {e}");
            std::process::exit(1);
        }
    }
}
