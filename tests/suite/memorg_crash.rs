//! Memorg crash consistency: a writer adding exchanges is killed with
//! SIGKILL at random moments; after every reopen each acknowledged exchange
//! is present exactly once, found by its unique word through full-text
//! search, and has its vector (found by semantic search too).

use memdb::Systems;
use std::collections::HashMap;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use memdb::memorg::system::{EXCHANGE, TOPIC};
use memdb::{Config, Hashing, Memdb, RecordFilter};

use crate::tmp;

const ROUNDS: u64 = 8;

fn open(dir: &std::path::Path) -> Memdb {
    Memdb::open_with(
        dir,
        Config::with_embedder(Arc::new(Hashing::new(64).unwrap())),
    )
    .unwrap()
}

#[test]
fn sigkill_during_add_exchange_loses_no_acknowledged_exchange() {
    let d = tmp();
    let mut acked: HashMap<u64, uuid::Uuid> = HashMap::new();
    let mut next = 0u64;
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    for round in 0..ROUNDS {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_memdb-memorg-crash-child"));
        cmd.arg(d.path()).arg(next.to_string());
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let delay = Duration::from_millis(150 + rng % 400);
        for line in crate::run_until_killed(cmd, delay) {
            let parts: Vec<&str> = line.split_whitespace().collect();
            if let ["ACK", n, id] = parts[..] {
                let n: u64 = n.parse().unwrap();
                acked.insert(n, id.parse().unwrap());
                next = next.max(n + 1);
            }
        }
        // A write in flight at the kill may have committed without its ACK:
        // the next round starts past it, so numbers stay unique.
        next += 1;

        let db = open(d.path());
        assert!(db.check().unwrap().is_consistent(), "round {round}");
        let topic = db.records_of_kind(TOPIC).unwrap()[0].id;
        let stored = db.memorg().topic_exchanges(topic).unwrap();
        let mut by_word: HashMap<String, usize> = HashMap::new();
        for e in &stored {
            *by_word
                .entry(e.user_message.raw_content.clone())
                .or_default() += 1;
        }
        assert!(
            by_word.values().all(|&c| c == 1),
            "an exchange stored twice"
        );
        let filter = RecordFilter {
            kinds: vec![EXCHANGE],
            ..Default::default()
        };
        for (n, id) in &acked {
            let e = db
                .memorg()
                .exchange(*id)
                .unwrap_or_else(|e| panic!("round {round}: #{n} lost: {e}"));
            assert_eq!(e.metadata["n"], *n);
            let word = format!("marker{n}x");
            let found = db.search_records(&word, &filter, 5, false).unwrap();
            let hits: Vec<_> = found.keyword.iter().filter(|h| h.0 == *id).collect();
            assert_eq!(hits.len(), 1, "round {round}: #{n} by text: {found:?}");
            assert_eq!(found.keyword.len(), 1, "round {round}: #{n} matched others");
            assert!(
                db.record_vector(EXCHANGE, *id).unwrap().is_some(),
                "#{n} vector"
            );
            // The exchange's own text embeds to its stored vector: the
            // vector index must return it first.
            let own = format!("User: please remember {word} for later\nSystem: noted {word}");
            let by_vector = db.search_records(&own, &filter, 3, true).unwrap();
            assert_eq!(
                by_vector.semantic.first().map(|h| h.0),
                Some(*id),
                "round {round}: #{n} by vector: {by_vector:?}"
            );
        }
        assert_eq!(
            db.count_record_vectors(EXCHANGE).unwrap(),
            stored.len() as u64
        );
    }
    assert!(
        acked.len() > 20,
        "too few exchanges acknowledged: {}",
        acked.len()
    );
}
