//! Generic records (SPEC.md §13): adding a record kind is registering one
//! `RecordKind` value, here a test-only kind defined in this module. The
//! generic machinery stores it, full-text indexes it, embeds it, filters it
//! (namespace, kind, ancestor scope, tags, allow-list) inside both searches,
//! keeps it across a reopen and a text-index rebuild, and deletes it with
//! its subtree and vectors.

use std::collections::HashSet;
use std::sync::Arc;

use memdb::{Config, Error, Hashing, Memdb, NewRecord, RecordChange, RecordFilter, RecordKind};
use serde_json::json;

/// The test-only kind: a bookmark with a URL in its body.
const BOOKMARK: RecordKind = RecordKind {
    code: 1001,
    name: "bookmark",
    sums_into: None,
};
/// A second test kind, to show kinds never mix.
const SHELF: RecordKind = RecordKind {
    code: 1002,
    name: "shelf",
    sums_into: None,
};

fn open(dir: &std::path::Path) -> Memdb {
    let e = Arc::new(Hashing::new(64).expect("hashing embedder"));
    Memdb::open_with(dir, Config::with_embedder(e)).expect("open")
}

fn bookmark(db: &Memdb, shelf: Option<uuid::Uuid>, text: &str, tags: &[&str]) -> uuid::Uuid {
    db.create_record(
        BOOKMARK,
        NewRecord {
            parent: shelf,
            text: text.into(),
            embed: true,
            tags: tags.iter().map(|t| t.to_string()).collect(),
            body: json!({"url": format!("https://example.org/{}", text.len())}),
            ..Default::default()
        },
    )
    .expect("create bookmark")
    .id
}

/// A shelf (not embedded) with `text`.
fn shelf(db: &Memdb, text: &str) -> uuid::Uuid {
    db.create_record(
        SHELF,
        NewRecord {
            text: text.into(),
            ..Default::default()
        },
    )
    .expect("create shelf")
    .id
}

fn ids(hits: &[(uuid::Uuid, f32)]) -> Vec<uuid::Uuid> {
    hits.iter().map(|h| h.0).collect()
}

fn filter(kinds: &[RecordKind]) -> RecordFilter {
    RecordFilter {
        kinds: kinds.to_vec(),
        ..Default::default()
    }
}

#[test]
fn a_test_only_kind_is_stored_indexed_embedded_filtered_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let shelf = shelf(&db, "reading list about databases");
    let a = bookmark(
        &db,
        Some(shelf),
        "postgres vacuum tuning guide",
        &["db", "ops"],
    );
    let b = bookmark(&db, Some(shelf), "redb transactions explained", &["db"]);
    let c = bookmark(&db, None, "lisbon travel tips for march", &["travel"]);

    // Stored, with the kind's own body.
    let got = db.get_record(BOOKMARK, a).unwrap();
    assert_eq!(got.kind, 1001);
    assert_eq!(got.parent, Some(shelf));
    assert_eq!(got.body["url"], "https://example.org/28");
    assert_eq!(got.tags, ["db", "ops"]);
    // Asked as another kind, it does not exist.
    assert!(matches!(
        db.get_record(SHELF, a),
        Err(Error::NotFound { what: "shelf", .. })
    ));

    // Full-text indexed.
    let found = db
        .search_records("vacuum", &filter(&[BOOKMARK]), 10, false)
        .unwrap();
    assert_eq!(ids(&found.keyword), [a]);
    // Kinds never mix: the shelf's text is not a bookmark.
    let found = db
        .search_records("databases", &filter(&[BOOKMARK]), 10, false)
        .unwrap();
    assert!(found.keyword.is_empty(), "{found:?}");
    let found = db
        .search_records("databases", &filter(&[SHELF]), 10, false)
        .unwrap();
    assert_eq!(ids(&found.keyword), [shelf]);

    // Embedded: a vector per bookmark, none for the shelf (not asked).
    assert!(db.record_vector(BOOKMARK, a).unwrap().is_some());
    assert!(db.record_vector(SHELF, shelf).unwrap().is_none());
    assert_eq!(db.count_record_vectors(BOOKMARK).unwrap(), 3);
    let found = db
        .search_records("lisbon travel", &filter(&[BOOKMARK]), 1, true)
        .unwrap();
    assert_eq!(ids(&found.semantic), [c]);

    // Filtered inside both searches: scope (descendants of the shelf),
    // tags, and an allow-list.
    let mut scoped = filter(&[BOOKMARK]);
    scoped.scope = Some(shelf);
    let found = db
        .search_records("lisbon travel tips", &scoped, 10, true)
        .unwrap();
    assert!(found.keyword.is_empty());
    assert!(!ids(&found.semantic).contains(&c), "{found:?}");
    let mut tagged = filter(&[BOOKMARK]);
    tagged.tags = vec!["ops".into()];
    let found = db
        .search_records("redb postgres", &tagged, 10, true)
        .unwrap();
    assert_eq!(ids(&found.keyword), [a]);
    assert_eq!(ids(&found.semantic), [a]);
    let mut listed = filter(&[BOOKMARK]);
    listed.allowed = Some(HashSet::from([b]));
    let found = db
        .search_records("postgres redb", &listed, 10, true)
        .unwrap();
    assert_eq!(ids(&found.keyword), [b]);
    assert_eq!(ids(&found.semantic), [b]);

    // Children by query, ancestors by walking parents.
    let children: Vec<_> = db
        .record_children(shelf, Some(BOOKMARK))
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(children, [a, b]);
    assert_eq!(db.record_ancestors(a).unwrap()[0].id, shelf);

    // Updated text is re-indexed and re-embedded.
    db.update_record(
        b,
        RecordChange {
            text: Some("sqlite fts5 benchmarks".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let found = db
        .search_records("fts5", &filter(&[BOOKMARK]), 10, true)
        .unwrap();
    assert_eq!(ids(&found.keyword), [b]);
    assert_eq!(ids(&found.semantic)[0], b);
    assert!(
        db.search_records("transactions", &filter(&[BOOKMARK]), 10, false)
            .unwrap()
            .keyword
            .is_empty()
    );

    // Survives a reopen, and a rebuild of the text index from the store.
    drop(db);
    std::fs::remove_dir_all(dir.path().join("text")).unwrap();
    let db = open(dir.path());
    assert!(!db.recovery_report().is_empty());
    let found = db
        .search_records("vacuum", &filter(&[BOOKMARK]), 10, true)
        .unwrap();
    assert_eq!(ids(&found.keyword), [a]);
    assert_eq!(ids(&found.semantic)[0], a);
    assert!(db.check().unwrap().is_consistent());

    // Deleting the shelf deletes its subtree, rows, documents and vectors.
    assert_eq!(db.delete_record(shelf).unwrap(), 3);
    assert!(matches!(
        db.get_record(BOOKMARK, a),
        Err(Error::NotFound { .. })
    ));
    assert_eq!(db.count_record_vectors(BOOKMARK).unwrap(), 1);
    let found = db
        .search_records(
            "lisbon travel vacuum redb fts5",
            &filter(&[BOOKMARK]),
            10,
            true,
        )
        .unwrap();
    assert_eq!(ids(&found.keyword), [c]);
    assert_eq!(ids(&found.semantic), [c]);
    assert_eq!(db.delete_record(shelf).unwrap(), 0);
}

#[test]
fn records_are_namespaced_and_bad_input_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let other = db.namespace("other").unwrap();
    let mine = bookmark(&db, None, "zebra crossing photos", &[]);
    let theirs = bookmark(&other, None, "zebra crossing photos", &[]);
    for (handle, own, foreign) in [(&db, mine, theirs), (&other, theirs, mine)] {
        let found = handle
            .search_records("zebra crossing", &filter(&[BOOKMARK]), 10, true)
            .unwrap();
        assert_eq!(ids(&found.keyword), [own]);
        assert_eq!(ids(&found.semantic), [own]);
        assert!(matches!(
            handle.get_record(BOOKMARK, foreign),
            Err(Error::NotFound { .. })
        ));
        assert_eq!(handle.delete_record(foreign).unwrap(), 0);
        assert_eq!(handle.count_records(BOOKMARK).unwrap(), 1);
    }
    // A parent in another namespace does not exist here.
    let err = other
        .create_record(
            BOOKMARK,
            NewRecord {
                parent: Some(mine),
                text: "child".into(),
                ..Default::default()
            },
        )
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    // Bad input: a clear error, nothing written.
    for bad in [
        NewRecord {
            importance: 2.0,
            ..Default::default()
        },
        NewRecord {
            tags: vec![" ".into()],
            ..Default::default()
        },
        NewRecord {
            body: json!([1, 2]),
            ..Default::default()
        },
        NewRecord {
            text: "x".repeat(memdb::MAX_RECORD_TEXT_BYTES + 1),
            ..Default::default()
        },
    ] {
        let err = db.create_record(BOOKMARK, bad).unwrap_err();
        assert!(matches!(err, Error::InvalidInput { .. }), "{err}");
    }
    assert_eq!(db.count_records(BOOKMARK).unwrap(), 1);
}

/// A handle with a model of its own: same provider and name as `open`'s,
/// another dimension (as OpenAI's models take a `dimensions` parameter).
fn open_with_dimension(dir: &std::path::Path, dimension: u32) -> Memdb {
    let e = Arc::new(Hashing::new(dimension).expect("hashing embedder"));
    Memdb::open_with(dir, Config::with_embedder(e)).expect("open")
}

fn record_space_dimensions(db: &Memdb) -> Vec<u32> {
    let mut dims: Vec<u32> = db
        .vector_spaces()
        .unwrap()
        .iter()
        .filter(|s| s.name.starts_with("records/"))
        .map(|s| s.dimension)
        .collect();
    dims.sort_unstable();
    dims
}

#[test]
fn records_are_reembedded_by_a_rebuild_for_another_model() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let namespaced = db.namespace("other").unwrap();
    let a = bookmark(&db, None, "postgres vacuum tuning guide", &[]);
    let c = bookmark(&db, None, "lisbon travel tips for march", &[]);
    let theirs = bookmark(&namespaced, None, "lisbon travel tips for march", &[]);
    // Kept keyword-only: no vector under any model, so a rebuild leaves it.
    let plain = db
        .create_record(
            BOOKMARK,
            NewRecord {
                text: "lisbon tram map".into(),
                ..Default::default()
            },
        )
        .unwrap()
        .id;
    assert_eq!(db.count_record_vectors(BOOKMARK).unwrap(), 2);
    drop((db, namespaced));

    // Same provider and model name, another dimension: its own space, not
    // the 64-dimensional one (a write used to fail on the dimension).
    let db = open_with_dimension(dir.path(), 96);
    assert_eq!(db.count_record_vectors(BOOKMARK).unwrap(), 0);
    let d = bookmark(&db, None, "redb transactions explained", &[]);
    assert_eq!(db.count_record_vectors(BOOKMARK).unwrap(), 1);
    assert_eq!(record_space_dimensions(&db), [64, 64, 96]);
    let found = db
        .search_records("lisbon travel", &filter(&[BOOKMARK]), 10, true)
        .unwrap();
    assert!(found.semantic.iter().all(|h| h.0 == d), "{found:?}");

    // The rebuild re-embeds what had a vector, in every namespace, and
    // drops the other model's spaces once they are replaced.
    db.rebuild_embeddings(&mut |_| {}).unwrap();
    assert_eq!(db.count_record_vectors(BOOKMARK).unwrap(), 3);
    assert!(db.record_vector(BOOKMARK, a).unwrap().is_some());
    assert!(db.record_vector(BOOKMARK, plain).unwrap().is_none());
    assert_eq!(db.count_record_pending(BOOKMARK).unwrap(), 0);
    assert_eq!(record_space_dimensions(&db), [96, 96]);
    let found = db
        .search_records("lisbon travel", &filter(&[BOOKMARK]), 1, true)
        .unwrap();
    assert_eq!(ids(&found.semantic), [c]);
    let other = db.namespace("other").unwrap();
    assert_eq!(other.count_record_vectors(BOOKMARK).unwrap(), 1);
    let found = other
        .search_records("lisbon travel", &filter(&[BOOKMARK]), 1, true)
        .unwrap();
    assert_eq!(ids(&found.semantic), [theirs]);
    assert!(db.check().unwrap().is_consistent());
    // Nothing left to do: a second rebuild queues nothing and keeps all.
    db.rebuild_embeddings(&mut |_| {}).unwrap();
    assert_eq!(db.count_record_vectors(BOOKMARK).unwrap(), 3);
    assert_eq!(record_space_dimensions(&db), [96, 96]);
}

#[test]
fn a_search_computes_only_the_signals_asked_for_and_both_at_once_match_each_alone() {
    use memdb::RecordSignals;
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let a = bookmark(&db, None, "postgres vacuum tuning guide", &["db"]);
    let b = bookmark(&db, None, "vacuum cleaner reviews for lisbon flats", &[]);
    bookmark(&db, None, "redb transactions explained", &["db"]);
    let f = filter(&[BOOKMARK]);
    let signals = |keyword, semantic| RecordSignals { keyword, semantic };

    let both = db
        .search_records_by("vacuum tuning", &f, 10, signals(true, true))
        .unwrap();
    let keyword = db
        .search_records_by("vacuum tuning", &f, 10, signals(true, false))
        .unwrap();
    let semantic = db
        .search_records_by("vacuum tuning", &f, 10, signals(false, true))
        .unwrap();
    // Each signal alone is what the pair computes for it (the two run at
    // once when both are asked for).
    assert_eq!(ids(&both.keyword), [a, b]);
    assert_eq!(both.keyword, keyword.keyword);
    assert_eq!(both.semantic, semantic.semantic);
    assert_eq!(ids(&both.semantic)[0], a, "{both:?}");
    // A signal not asked for is not computed.
    assert!(keyword.semantic.is_empty() && keyword.query_vector.is_none());
    assert!(semantic.keyword.is_empty() && semantic.query_vector.is_some());
    let none = db
        .search_records_by("vacuum tuning", &f, 10, signals(false, false))
        .unwrap();
    assert!(none.keyword.is_empty() && none.semantic.is_empty());
    // Bad input is refused before either runs.
    assert!(matches!(
        db.search_records_by("vacuum", &f, 0, signals(true, true)),
        Err(Error::InvalidInput { field, .. }) if field == "limit"
    ));
}

/// A kind whose vectors sum into its parent's (a shelf's vector from its
/// cards', as KuraDB's source vectors come from their chunks).
const CARD: RecordKind = RecordKind {
    code: 1003,
    name: "card",
    sums_into: Some(SHELF.code),
};

/// The normalized sum of `vectors`, or `None` when there are none.
fn normalized_sum(vectors: &[Vec<f32>]) -> Option<Vec<f32>> {
    let first = vectors.first()?;
    let mut sum = vec![0f64; first.len()];
    for v in vectors {
        for (s, x) in sum.iter_mut().zip(v) {
            *s += f64::from(*x);
        }
    }
    let norm = sum.iter().map(|x| x * x).sum::<f64>().sqrt();
    Some(sum.iter().map(|s| (s / norm) as f32).collect())
}

fn assert_close(got: Option<Vec<f32>>, want: Option<Vec<f32>>) {
    match (got, want) {
        (Some(g), Some(w)) => {
            assert_eq!(g.len(), w.len());
            for (a, b) in g.iter().zip(&w) {
                assert!((a - b).abs() < 1e-5, "{a} vs {b}");
            }
        }
        (g, w) => assert_eq!(g.is_some(), w.is_some(), "got {g:?}, want {w:?}"),
    }
}

#[test]
fn a_kind_with_a_vector_sum_rule_keeps_its_parents_vectors_current() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let shelf = shelf(&db, "a shelf");
    let card = |text: &str| {
        db.create_record(
            CARD,
            NewRecord {
                parent: Some(shelf),
                text: text.into(),
                embed: true,
                ..Default::default()
            },
        )
        .unwrap()
        .id
    };
    let cards = [
        card("volcanic rock samples"),
        card("basalt and obsidian"),
        card("a pumice stone"),
    ];
    let expected = |db: &Memdb| {
        let vs: Vec<Vec<f32>> = db
            .record_children(shelf, Some(CARD))
            .unwrap()
            .iter()
            .filter_map(|c| db.record_vector(CARD, c.id).unwrap())
            .collect();
        normalized_sum(&vs)
    };
    // The shelf was not embedded itself; its vector is its cards' sum.
    assert_close(db.record_vector(SHELF, shelf).unwrap(), expected(&db));
    // An edit re-embeds the card and moves the sum.
    let before = db.record_vector(SHELF, shelf).unwrap();
    db.update_record(
        cards[2],
        RecordChange {
            text: Some("granite countertops".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let after = db.record_vector(SHELF, shelf).unwrap();
    assert_ne!(before, after);
    assert_close(after, expected(&db));
    // The shelf is found by meaning in its own kind's space.
    let near = db
        .nearest_records("basalt obsidian volcanic", &filter(&[SHELF]), 5)
        .unwrap();
    assert_eq!(ids(&near), vec![shelf]);
    // A stage feeding another search may ask for more than MAX_LIMIT.
    let many = db
        .nearest_records(
            "volcanic basalt granite",
            &filter(&[CARD]),
            memdb::MAX_LIMIT + 500,
        )
        .unwrap();
    assert_eq!(many.len(), 3);
    // A deleted card leaves the sum of the others; with none left the
    // shelf has no vector.
    db.delete_record(cards[0]).unwrap();
    assert_close(db.record_vector(SHELF, shelf).unwrap(), expected(&db));
    db.delete_record(cards[1]).unwrap();
    db.delete_record(cards[2]).unwrap();
    assert_eq!(db.record_vector(SHELF, shelf).unwrap(), None);
    // A card written through replace_children, queued for the background
    // pipeline, sums in when the pipeline embeds it.
    db.replace_children(
        shelf,
        None,
        CARD,
        vec![NewRecord {
            text: "quartz crystals".into(),
            embed: true,
            ..Default::default()
        }],
        memdb::EmbedWhen::Background,
    )
    .unwrap();
    assert_eq!(db.record_vector(SHELF, shelf).unwrap(), None);
    db.embed_pending(None, &mut |_| {}).unwrap();
    assert!(db.record_vector(SHELF, shelf).unwrap().is_some());
    assert_close(db.record_vector(SHELF, shelf).unwrap(), expected(&db));
    drop(db);
    let db = open(dir.path());
    assert_close(db.record_vector(SHELF, shelf).unwrap(), expected(&db));
    assert!(db.check().unwrap().is_consistent());
    db.verify_vectors().unwrap();
}

/// One write of a crash-replay test, given the ids made so far.
type Step = Box<dyn Fn(&Memdb, &mut Vec<uuid::Uuid>)>;

/// New records skip the text index's delete (`Op::InsertRecord`, SPEC
/// §4 and §7.3). Creates, an update, a re-parenting replace and a delete,
/// with the text index rolled back to its commit after step `i` (as a
/// SIGKILL leaves it) and caught up by replay on open: every record is
/// found exactly once, a deleted one never.
#[test]
fn inserted_records_replay_without_duplicates() {
    for crash_after in 0..=4 {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("db");
        let snap = d.path().join("text-snapshot");
        let mut config = Config::default();
        config.text_commit_every = u64::MAX;
        {
            let db = Memdb::open_with(&dir, config.clone()).unwrap();
            let s = shelf(&db, "zqshelf");
            let mut ids = Vec::new();
            let steps: Vec<Step> = vec![
                Box::new(|_, _| {}),
                Box::new(move |db, ids| {
                    ids.push(bookmark(db, Some(s), "zqone", &[]));
                    ids.push(bookmark(db, Some(s), "zqtwo", &[]));
                }),
                Box::new(|db, ids| {
                    db.update_record(
                        ids[0],
                        RecordChange {
                            text: Some("zqone zqrenamed".into()),
                            ..Default::default()
                        },
                    )
                    .unwrap();
                }),
                Box::new(move |db, _| {
                    let fresh = NewRecord {
                        text: "zqthree".into(),
                        ..Default::default()
                    };
                    db.replace_children(s, None, BOOKMARK, vec![fresh], memdb::EmbedWhen::Inline)
                        .unwrap();
                }),
                Box::new(move |db, _| {
                    bookmark(db, None, "zqfour", &[]);
                }),
            ];
            for (i, step) in steps.iter().enumerate() {
                step(&db, &mut ids);
                if i == crash_after {
                    db.flush().unwrap();
                    crate::copy_dir(&dir.join("text"), &snap);
                }
            }
        }
        let text = dir.join("text");
        std::fs::remove_dir_all(&text).unwrap();
        crate::copy_dir(&snap, &text);
        let db = Memdb::open_with(&dir, config).unwrap();
        let count = |word: &str| {
            db.search_records(word, &filter(&[BOOKMARK]), 10, false)
                .unwrap()
                .keyword
                .len()
        };
        for (word, want) in [
            ("zqone", 0),
            ("zqtwo", 0),
            ("zqrenamed", 0),
            ("zqthree", 1),
            ("zqfour", 1),
        ] {
            assert_eq!(count(word), want, "{word}, crash after step {crash_after}");
        }
    }
}
