//! Test helper for the Memorg crash test: opens a data directory with the
//! `Hashing` embedder, creates a session, conversation and topic if the store
//! has none (printing `TOPIC <id>`, or finding the existing one), then adds
//! exchanges with unique words, printing `ACK <n> <exchange id>` after each
//! `add_exchange` returned, until it is killed.
//!
//! Usage: `memdb-memorg-crash-child DIR START`.

use memdb::Systems;
#[path = "hashing_store.rs"]
mod hashing_store;

use std::io::Write;

use memdb::memorg::system::TOPIC;
use serde_json::json;

/// The unique word of exchange `n` (the parent test searches for it).
fn word(n: u64) -> String {
    format!("marker{n}x")
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(start)) = (args.next(), args.next()) else {
        eprintln!("usage: memdb-memorg-crash-child DIR START");
        std::process::exit(2);
    };
    let start: u64 = start.parse().unwrap_or(0);
    let db = hashing_store::open(&dir);
    let topic = match db
        .records_of_kind(TOPIC)
        .ok()
        .and_then(|t| t.first().map(|r| r.id))
    {
        Some(t) => t,
        None => {
            let made = db
                .memorg()
                .create_session("crash", json!({}), json!({}))
                .and_then(|s| db.memorg().start_conversation(s.id, Some("crash")))
                .and_then(|c| db.memorg().create_topic(c.id, "crash", None));
            match made {
                Ok(t) => t.id,
                Err(e) => {
                    eprintln!("setup: {e}");
                    std::process::exit(1);
                }
            }
        }
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "TOPIC {topic}");
    let _ = out.flush();
    for n in start.. {
        let w = word(n);
        match db.memorg().add_exchange(
            topic,
            &format!("please remember {w} for later"),
            &format!("noted {w}"),
            json!({"n": n}),
        ) {
            Ok(e) => {
                let _ = writeln!(out, "ACK {n} {}", e.id);
                let _ = out.flush();
            }
            Err(e) => {
                eprintln!("add_exchange {n}: {e}");
                std::process::exit(1);
            }
        }
    }
}
