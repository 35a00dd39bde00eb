//! Crash consistency: a writer killed with SIGKILL at random moments loses no
//! acknowledged write, and the text index ends up holding exactly the store's
//! messages.

use std::process::Command;
use std::time::Duration;

use memdb::{Memdb, TextQuery};

use crate::tmp;

const ROUNDS: u64 = 24;

#[test]
fn sigkill_during_writes_loses_no_acknowledged_write() {
    let d = tmp();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|t| t.as_nanos() as u64)
        .unwrap_or(7)
        | 1;
    eprintln!("crash test seed {seed}");
    let mut rng = seed;
    let mut acked: Vec<(String, String)> = Vec::new();
    for round in 0..ROUNDS {
        // Every sixth round starts from a deleted index, so the kill may land
        // during a rebuild too.
        if round % 6 == 5 {
            let _ = std::fs::remove_dir_all(d.path().join("text"));
        }
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_memdb-crash-child"));
        cmd.arg(d.path())
            .arg((seed.wrapping_add(round)).to_string());
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

    let db = Memdb::open(d.path()).unwrap();
    for (id, token) in &acked {
        let id: uuid::Uuid = id.parse().unwrap();
        let msg = db
            .get_message(id)
            .unwrap_or_else(|e| panic!("acknowledged message {id} lost: {e}"));
        assert!(msg.content.text().contains(token.as_str()));
        let hits = db.search_text(&TextQuery::new(token.as_str())).unwrap();
        assert!(
            hits.iter().any(|h| h.message.id == id),
            "acknowledged message {id} ({token}) is not searchable"
        );
    }
    eprintln!(
        "{} acknowledged writes survived {ROUNDS} kills",
        acked.len()
    );
}
