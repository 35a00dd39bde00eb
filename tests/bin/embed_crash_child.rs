//! Test helper for the embedding crash test: opens a data directory with the
//! local ONNX model (embed-on-write off), stores `N` messages if the store is
//! empty (printing `STORED`), then drains the embedding queue in small
//! batches, printing `EMBEDDED <done>` after each, until it is killed.
//!
//! Usage: `memdb-embed-crash-child DIR N`.

use memdb::Systems;
use std::io::Write;
use std::sync::Arc;

use memdb::{Config, LocalOnnx, Memdb, NewConversation, NewMessage, default_models_dir};

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(n)) = (args.next(), args.next()) else {
        eprintln!("usage: memdb-embed-crash-child DIR N");
        std::process::exit(2);
    };
    let n: usize = n.parse().unwrap_or(500);
    let model = match default_models_dir().and_then(|d| LocalOnnx::open(&d)) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("model: {e}");
            std::process::exit(1);
        }
    };
    let mut config = Config::with_embedder(Arc::new(model));
    config.embed_on_write = false;
    config.embed_batch = 16;
    let db = match Memdb::open_with(&dir, config) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("open failed: {e}");
            std::process::exit(1);
        }
    };
    let mut out = std::io::stdout().lock();
    let empty = db
        .sekha()
        .stats(&Default::default())
        .map(|s| s.total_messages == 0)
        .unwrap_or(false);
    if empty {
        let convs: Vec<NewConversation> = (0..n / 10)
            .map(|c| {
                NewConversation::new(
                    format!("topic {c}"),
                    (0..10)
                        .map(|i| {
                            NewMessage::new(
                                "user",
                                format!(
                                    "note {i} of conversation {c}: the quick brown fox number {} jumps",
                                    c * 10 + i
                                ),
                            )
                        })
                        .collect(),
                )
            })
            .collect();
        if let Err(e) = db.sekha().create_conversations(convs) {
            eprintln!("store: {e}");
            std::process::exit(1);
        }
    }
    let _ = writeln!(out, "STORED");
    let _ = out.flush();
    let result = db.embed_pending(None, &mut |p| {
        let _ = writeln!(out, "EMBEDDED {}", p.done);
        let _ = out.flush();
    });
    match result {
        Ok(r) => {
            let _ = writeln!(std::io::stdout(), "DONE {}", r.embedded);
        }
        Err(e) => {
            eprintln!("embed: {e}");
            std::process::exit(1);
        }
    }
}
