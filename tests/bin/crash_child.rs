//! Test helper for the crash suite: writes to a memdb data directory until it
//! is killed, printing `ACK <message-id> <token>` after every write returns.
//!
//! Usage: `memdb-crash-child DIR SEED [THREADS [hashing]]`. Each message
//! carries a unique token so the parent can check, after a SIGKILL, that
//! every acknowledged message is present and searchable. Writes mix creates,
//! appends, label updates (which reindex a conversation) and searches (which
//! commit the index), so a kill can land in any phase of the write and commit
//! paths. With THREADS > 1 that many writers share the engine, so the kill
//! lands inside group commits (SPEC.md §7.1.1); `hashing` adds the hashing
//! embedder, so stores also embed inline.
use memdb::Systems;
use std::io::Write;

use memdb::{ConversationUpdate, Memdb, NewConversation, NewMessage, TextQuery};

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(seed)) = (args.next(), args.next()) else {
        eprintln!("usage: memdb-crash-child DIR SEED [THREADS [hashing]]");
        std::process::exit(2);
    };
    let seed: u64 = seed.parse().unwrap_or(1);
    let threads: u64 = args.next().and_then(|t| t.parse().ok()).unwrap_or(1).max(1);
    let mut config = memdb::Config::default();
    if args.next().as_deref() == Some("hashing") {
        config.embedder = Some(std::sync::Arc::new(memdb::Hashing::default()));
    }
    let db = match Memdb::open_with(&dir, config) {
        Ok(db) => db,
        Err(e) => {
            eprintln!("open failed: {e}");
            std::process::exit(1);
        }
    };
    println!("OPEN");
    let out = std::sync::Mutex::new(std::io::stdout());
    std::thread::scope(|s| {
        for t in 0..threads {
            let (db, out) = (&db, &out);
            s.spawn(move || write_until_killed(db, seed.wrapping_mul(1000).wrapping_add(t), out));
        }
    });
}

fn write_until_killed(db: &Memdb, seed: u64, out: &std::sync::Mutex<std::io::Stdout>) {
    let mut rng = seed;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut last_conv = None;
    for i in 0u64.. {
        let token = format!("tok{seed}x{i}");
        let msg = NewMessage::new(
            "user",
            format!("crash test message {token} with some words"),
        );
        let result = match (next() % 10, last_conv) {
            (0..=5, _) | (_, None) => {
                let n = 1 + next() % 3;
                let mut msgs = vec![msg];
                for k in 1..n {
                    msgs.push(NewMessage::new(
                        "assistant",
                        format!("reply {k} to {token}"),
                    ));
                }
                db.sekha()
                    .create_conversation(
                        NewConversation::new(format!("c{seed}-{i}"), msgs).in_folder("/crash"),
                    )
                    .map(|c| {
                        last_conv = Some(c.conversation.id);
                        c.messages[0].id
                    })
            }
            (6..=7, Some(id)) => db.sekha().append_messages(id, vec![msg]).map(|m| m[0].id),
            (8, Some(id)) => {
                let _ = db.sekha().update_conversation(
                    id,
                    ConversationUpdate {
                        label: Some(format!("relabel{i}")),
                        ..Default::default()
                    },
                );
                continue;
            }
            (_, Some(_)) => {
                let _ = db.sekha().search_text(&TextQuery::new("crash"));
                continue;
            }
        };
        match result {
            Ok(id) => {
                let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
                let _ = writeln!(out, "ACK {id} {token}");
                let _ = out.flush();
            }
            Err(e) => {
                eprintln!("write failed: {e}");
                std::process::exit(1);
            }
        }
    }
}
