//! Crash consistency: a writer killed with SIGKILL at random moments loses no
//! acknowledged write, and the text index ends up holding exactly the store's
//! messages; the same with eight concurrent writers under group commit
//! (SPEC.md §7.1.1) embedding inline, where every message also ends up with
//! exactly one vector once the queue is drained.

use memdb::Systems;
use std::process::Command;
use std::time::Duration;

use memdb::{Memdb, TextQuery};

use crate::tmp;

const ROUNDS: u64 = 24;

#[test]
fn sigkill_during_writes_loses_no_acknowledged_write() {
    kill_rounds(ROUNDS, 1, false);
}

#[test]
fn sigkill_during_concurrent_group_commits_loses_no_acknowledged_write() {
    kill_rounds(CONCURRENT_ROUNDS, 8, true);
}

const CONCURRENT_ROUNDS: u64 = 20;

fn kill_rounds(rounds: u64, threads: u32, hashing: bool) {
    let d = tmp();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|t| t.as_nanos() as u64)
        .unwrap_or(7)
        | 1;
    eprintln!("crash test seed {seed}");
    let mut rng = seed;
    let mut acked: Vec<(String, String)> = Vec::new();
    for round in 0..rounds {
        // Every sixth round starts from a deleted index, so the kill may land
        // during a rebuild too.
        if round % 6 == 5 {
            let _ = std::fs::remove_dir_all(d.path().join("text"));
        }
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_memdb-crash-child"));
        cmd.arg(d.path())
            .arg((seed.wrapping_add(round)).to_string())
            .arg(threads.to_string());
        if hashing {
            cmd.arg("hashing");
        }
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let delay = Duration::from_millis(30 + rng % 400);
        let lines = crate::run_until_killed(cmd, delay); // SIGKILL on Unix
        for line in lines {
            let mut parts = line.split_whitespace();
            if parts.next() == Some("ACK")
                && let (Some(id), Some(tok)) = (parts.next(), parts.next())
            {
                acked.push((id.to_string(), tok.to_string()));
            }
        }

        // Reopen after every kill: recovery must succeed each time.
        let db = Memdb::open(d.path()).unwrap_or_else(|e| panic!("reopen after kill {round}: {e}"));
        let report = db.check().unwrap();
        assert!(report.is_consistent(), "round {round}: {report:?}");
        assert_eq!(report.text_index_lsn, report.store_lsn);
        drop(db);
    }
    assert!(
        acked.len() > 50,
        "the child acknowledged only {} writes",
        acked.len()
    );

    let mut ids = std::collections::HashSet::new();
    for (id, _) in &acked {
        assert!(ids.insert(id.clone()), "message {id} acknowledged twice");
    }
    let db = if hashing {
        let config = memdb::Config::with_embedder(std::sync::Arc::new(memdb::Hashing::default()));
        Memdb::open_with(d.path(), config).unwrap()
    } else {
        Memdb::open(d.path()).unwrap()
    };
    if hashing {
        // Inline embeddings lost with their deferred commit are still
        // queued: draining the queue leaves exactly one vector per message.
        db.embed_pending(None, &mut |_| {}).unwrap();
        let status = db.embedding_status().unwrap();
        let active = status.active.expect("an active space after embedding");
        assert_eq!(active.pending, 0, "{active:?}");
        let messages = db
            .sekha()
            .stats(&memdb::Filter::default())
            .unwrap()
            .total_messages;
        let vectors = db.vector_stats(&active.space).unwrap().count;
        assert_eq!(
            vectors, messages,
            "vectors vs messages after {rounds} kills"
        );
    }
    for (id, token) in &acked {
        let id: uuid::Uuid = id.parse().unwrap();
        let msg = db
            .sekha()
            .get_message(id)
            .unwrap_or_else(|e| panic!("acknowledged message {id} lost: {e}"));
        assert!(msg.content.text().contains(token.as_str()));
        let hits = db
            .sekha()
            .search_text(&TextQuery::new(token.as_str()))
            .unwrap();
        assert!(
            hits.iter().any(|h| h.message.id == id),
            "acknowledged message {id} ({token}) is not searchable"
        );
    }
    eprintln!(
        "{} acknowledged writes from {threads} writer(s) survived {rounds} kills",
        acked.len()
    );
}
