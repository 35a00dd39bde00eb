//! Recovery of the derived text index: deleted, corrupted, or behind.

use memdb::*;

use crate::{conv, tmp};

fn snapshot(db: &Memdb, queries: &[&str]) -> Vec<Vec<(uuid::Uuid, String)>> {
    queries
        .iter()
        .map(|s| {
            let mut q = TextQuery::new(*s);
            q.limit = MAX_LIMIT;
            // Compare whole result sets: the order of equal scores depends
            // on document order, which a rebuild may change.
            let mut hits: Vec<_> = db
                .sekha()
                .search_text(&q)
                .unwrap()
                .into_iter()
                .map(|h| (h.message.id, format!("{:.4}", h.score)))
                .collect();
            hits.sort();
            hits
        })
        .collect()
}

fn populate(db: &Memdb) {
    for i in 0..40 {
        conv(
            db,
            &format!("label{}", i % 3),
            "/r",
            &[
                &format!("alpha beta {i}"),
                &format!("gamma delta {} alpha", i * 7),
            ],
        );
    }
}

const QUERIES: &[&str] = &[
    "alpha",
    "gamma AND delta",
    "\"beta 7\"",
    "label:label1 AND alpha",
];

#[test]
fn deleted_index_is_rebuilt_with_the_same_answers() {
    let d = tmp();
    let before = {
        let db = Memdb::open(d.path()).unwrap();
        populate(&db);
        let s = snapshot(&db, QUERIES);
        db.close().unwrap();
        s
    };
    std::fs::remove_dir_all(d.path().join("text")).unwrap();
    let db = Memdb::open(d.path()).unwrap();
    assert_eq!(snapshot(&db, QUERIES), before);
    assert!(db.check().unwrap().is_consistent());
    let report = db.recovery_report();
    assert_eq!(report.len(), 1, "{report:?}");
    assert!(
        report[0].contains("missing") && report[0].contains("rebuilt"),
        "{report:?}"
    );
    db.close().unwrap();
    let db = Memdb::open(d.path()).unwrap();
    assert!(
        db.recovery_report().is_empty(),
        "a clean open reports nothing"
    );
}

#[test]
fn corrupted_index_meta_is_rebuilt() {
    let d = tmp();
    let before = {
        let db = Memdb::open(d.path()).unwrap();
        populate(&db);
        snapshot(&db, QUERIES)
    };
    std::fs::write(d.path().join("text").join("meta.json"), b"{ not json").unwrap();
    let db = Memdb::open(d.path()).unwrap();
    assert_eq!(snapshot(&db, QUERIES), before);
}

#[test]
fn reindex_on_demand() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    populate(&db);
    let before = snapshot(&db, QUERIES);
    assert_eq!(db.reindex().unwrap(), 80);
    assert_eq!(snapshot(&db, QUERIES), before);
    // Writes after a reindex still land in the (new) index.
    conv(&db, "late", "/", &["omega after reindex"]);
    assert_eq!(
        db.sekha()
            .search_text(&TextQuery::new("omega"))
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn stale_index_catches_up_from_the_oplog() {
    let d = tmp();
    // Keep a copy of the index as of an early point, then write more, then
    // put the old index back: on open it must replay the oplog, not rebuild.
    let db = Memdb::open(d.path()).unwrap();
    conv(&db, "early", "/", &["first batch"]);
    db.close().unwrap();
    let saved = d.path().join("text-saved");
    crate::copy_dir(&d.path().join("text"), &saved);
    let db = Memdb::open(d.path()).unwrap();
    let later = conv(&db, "later", "/", &["second batch"]);
    db.sekha()
        .delete_conversation(later.conversation.id)
        .unwrap();
    conv(&db, "latest", "/", &["third batch"]);
    let lsn = db.check().unwrap().store_lsn;
    db.close().unwrap();
    std::fs::remove_dir_all(d.path().join("text")).unwrap();
    std::fs::rename(&saved, d.path().join("text")).unwrap();

    let db = Memdb::open(d.path()).unwrap();
    let report = db.check().unwrap();
    assert!(report.is_consistent(), "{report:?}");
    assert_eq!(report.text_index_lsn, lsn);
    assert_eq!(report.messages, 2);
    assert_eq!(
        db.sekha()
            .search_text(&TextQuery::new("batch"))
            .unwrap()
            .len(),
        2
    );
    assert!(
        db.sekha()
            .search_text(&TextQuery::new("second"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn oplog_is_trimmed_once_the_index_checkpointed() {
    let d = tmp();
    let mut config = Config::default();
    // No background checkpoints: this test decides when they happen.
    config.text_checkpoint_interval = std::time::Duration::ZERO;
    let db = Memdb::open_with(d.path(), config).unwrap();
    for i in 0..10 {
        conv(&db, "t", "/", &[&format!("m{i}")]);
    }
    // A search soft-commits the index (visible, not yet durable): a power
    // loss could still need those entries, so a write keeps them.
    db.sekha().search_text(&TextQuery::new("m1")).unwrap();
    conv(&db, "t", "/", &["one more"]);
    assert!(
        db.oplog_len().unwrap() >= 10,
        "oplog holds {}",
        db.oplog_len().unwrap()
    );
    // A checkpoint makes the commit durable; the next write trims.
    db.flush().unwrap();
    conv(&db, "t", "/", &["and another"]);
    assert!(
        db.oplog_len().unwrap() <= 2,
        "oplog holds {}",
        db.oplog_len().unwrap()
    );
}

#[test]
fn commits_after_every_write_keep_few_segments() {
    // Each write followed by a search is one soft commit, so one new
    // segment; tiered merges (here by the maintenance thread) must keep the
    // count bounded.
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    for i in 0..120 {
        conv(&db, "t", "/", &[&format!("segment churn {i}")]);
        db.sekha().search_text(&TextQuery::new("churn")).unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut report = db.check().unwrap();
    while report.text_segments > 16 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        report = db.check().unwrap();
    }
    assert!(report.is_consistent(), "{report:?}");
    assert!(
        report.text_segments <= 16,
        "{} segments",
        report.text_segments
    );
    let mut query = TextQuery::new("churn");
    query.limit = 200;
    assert_eq!(db.sekha().search_text(&query).unwrap().len(), 120);
}

#[test]
fn optimize_merges_into_one_durable_segment_with_the_same_results() {
    let d = tmp();
    let mut config = Config::default();
    // No maintenance thread: the segments stay as the commits left them.
    config.text_checkpoint_interval = std::time::Duration::ZERO;
    let db = Memdb::open_with(d.path(), config.clone()).unwrap();
    populate(&db);
    for i in 0..6 {
        conv(&db, "t", "/", &[&format!("segment churn {i} red fox")]);
        db.sekha().search_text(&TextQuery::new("churn")).unwrap();
    }
    let queries = ["fox", "red OR churn", "\"red fox\"", "churn -red"];
    let before = snapshot(&db, &queries);
    assert!(db.text_index_status().segments > 1);
    let status = db.optimize().unwrap();
    assert_eq!(status.segments, 1, "{status:?}");
    assert_eq!(status.durable_lsn, status.store_lsn, "{status:?}");
    assert_eq!(snapshot(&db, &queries), before);
    assert!(db.check().unwrap().is_consistent());
    // Optimizing one segment is a no-op, and the merged segment is on disk.
    assert_eq!(db.optimize().unwrap().segments, 1);
    drop(db);
    let db = Memdb::open_with(d.path(), config).unwrap();
    assert_eq!(db.text_index_status().segments, 1);
    assert_eq!(snapshot(&db, &queries), before);
}

#[test]
fn a_background_checkpoint_makes_soft_commits_durable() {
    let d = tmp();
    let mut config = Config::default();
    config.text_checkpoint_interval = std::time::Duration::from_millis(50);
    let db = Memdb::open_with(d.path(), config).unwrap();
    conv(&db, "t", "/", &["soft then durable"]);
    db.sekha().search_text(&TextQuery::new("soft")).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut status = db.text_index_status();
    while status.durable_lsn < status.committed_lsn && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        status = db.text_index_status();
    }
    assert!(
        status.durable_lsn >= status.committed_lsn && status.committed_lsn > 0,
        "the checkpoint thread never synced the index: {status:?}"
    );
    conv(&db, "t", "/", &["next write trims"]);
    assert!(
        db.oplog_len().unwrap() <= 2,
        "oplog holds {}",
        db.oplog_len().unwrap()
    );
}

/// Segment files of a directory, sorted.
fn segment_files(text: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(text)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".idx") || n.ends_with(".pos") || n.ends_with(".term"))
        .collect();
    v.sort();
    v
}

#[test]
fn soft_commits_stay_in_memory_and_a_crash_replays_them() {
    let d = tmp();
    let mut config = Config::default();
    config.text_checkpoint_interval = std::time::Duration::ZERO;
    let text = d.path().join("text");
    {
        let db = Memdb::open_with(d.path(), config.clone()).unwrap();
        let on_disk = segment_files(&text);
        for i in 0..20 {
            conv(&db, "t", "/", &[&format!("power loss {i}")]);
            let mut query = TextQuery::new("power");
            query.limit = 50;
            assert_eq!(db.sekha().search_text(&query).unwrap().len(), i + 1);
        }
        // Twenty soft commits, all searchable, none on disk.
        assert_eq!(segment_files(&text), on_disk);
        // What a crash (or power loss) leaves: the disk as it is now.
        let saved = d.path().join("saved");
        crate::copy_dir(&text, &saved);
        db.flush().unwrap();
        assert_ne!(segment_files(&text), on_disk, "flush wrote nothing");
        drop(db);
        std::fs::remove_dir_all(&text).unwrap();
        std::fs::rename(&saved, &text).unwrap();
    }
    let db = Memdb::open_with(d.path(), config).unwrap();
    assert!(db.check().unwrap().is_consistent());
    let mut query = TextQuery::new("power");
    query.limit = 50;
    assert_eq!(
        db.sekha().search_text(&query).unwrap().len(),
        20,
        "replay from the oplog"
    );
}

#[test]
fn a_marked_index_is_verified_and_a_damaged_one_rebuilt() {
    let d = tmp();
    let text = d.path().join("text");
    {
        let db = Memdb::open(d.path()).unwrap();
        for i in 0..20 {
            conv(&db, "t", "/", &[&format!("power loss {i}")]);
        }
        db.flush().unwrap();
    }
    // What an earlier version (soft commits straight to disk) or a spill
    // can leave after a power loss: the marker, and a segment file whose
    // data never reached the disk.
    std::fs::write(text.join("memdb-unsynced"), b"x").unwrap();
    let victims: Vec<_> = std::fs::read_dir(&text)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "idx"))
        .collect();
    assert!(!victims.is_empty(), "no postings file");
    for victim in victims {
        let len = std::fs::metadata(&victim).unwrap().len() as usize;
        std::fs::write(&victim, vec![0u8; len]).unwrap();
    }

    let db = Memdb::open(d.path()).unwrap();
    let report = db.recovery_report().join("; ");
    assert!(report.contains("unclean stop"), "{report}");
    assert!(db.check().unwrap().is_consistent());
    let mut query = TextQuery::new("power");
    query.limit = 50;
    assert_eq!(db.sekha().search_text(&query).unwrap().len(), 20);
    assert!(!text.join("memdb-unsynced").exists());
}
