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
    assert_eq!(db.search_text(&TextQuery::new("omega")).unwrap().len(), 1);
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
    copy_dir(&d.path().join("text"), &saved);
    let db = Memdb::open(d.path()).unwrap();
    let later = conv(&db, "later", "/", &["second batch"]);
    db.delete_conversation(later.conversation.id).unwrap();
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
    assert_eq!(db.search_text(&TextQuery::new("batch")).unwrap().len(), 2);
    assert!(
        db.search_text(&TextQuery::new("second"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn oplog_is_trimmed_once_the_index_committed() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    for i in 0..10 {
        conv(&db, "t", "/", &[&format!("m{i}")]);
    }
    db.search_text(&TextQuery::new("m1")).unwrap(); // forces a commit
    conv(&db, "t", "/", &["one more"]); // trims entries the index has committed
    assert!(
        db.oplog_len().unwrap() <= 2,
        "oplog holds {}",
        db.oplog_len().unwrap()
    );
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}
