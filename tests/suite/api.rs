//! The engine API, operation by operation.

use memdb::*;

use crate::{conv, tmp};

#[test]
fn create_get_append_roundtrip() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    let c = db
        .sekha().create_conversation(NewConversation {
            label: "Trip planning".into(),
            folder: Some("/personal/travel/".into()),
            importance_score: None,
            metadata: Some(serde_json::json!({"source": "test"})),
            messages: vec![
                NewMessage::new("user", "Where should we go in March?"),
                NewMessage {
                    role: "assistant".into(),
                    content: Content::Parts(vec![
                        serde_json::json!({"type": "text", "text": "Lisbon is mild"}),
                        serde_json::json!({"type": "image_url", "image_url": {"url": "http://x/y.png"}}),
                    ]),
                    timestamp: None,
                    metadata: Some(serde_json::json!({"model": "m"})),
                },
            ],
        })
        .unwrap();
    let conv = &c.conversation;
    assert_eq!(conv.folder, "/personal/travel", "trailing slash normalized");
    assert_eq!(conv.status, Status::Active);
    assert_eq!(conv.importance_score, 5);
    assert!(!conv.pinned);
    assert_eq!(conv.session_count, 1);
    assert_eq!(conv.message_count, 2);
    assert_eq!(conv.word_count, 6 + 3);
    assert_eq!(conv.metadata["source"], "test");

    let got = db.sekha().get_conversation_with_messages(conv.id).unwrap();
    assert_eq!(got.messages.len(), 2);
    assert_eq!(
        got.messages[0].content.text(),
        "Where should we go in March?"
    );
    assert_eq!(got.messages[1].content.text(), "Lisbon is mild");
    assert!(matches!(got.messages[1].content, Content::Parts(ref p) if p.len() == 2));

    let added = db
        .sekha()
        .append_messages(conv.id, vec![NewMessage::new("user", "Book flights")])
        .unwrap();
    let after = db.sekha().get_conversation(conv.id).unwrap();
    assert_eq!(after.message_count, 3);
    assert!(after.updated_at >= conv.updated_at);
    let msgs = db
        .sekha()
        .get_conversation_with_messages(conv.id)
        .unwrap()
        .messages;
    assert_eq!(
        msgs.last().unwrap().id,
        added[0].id,
        "messages are in time order"
    );
    assert_eq!(
        db.sekha().get_message(added[0].id).unwrap().content.text(),
        "Book flights"
    );
}

#[test]
fn messages_keep_given_timestamps_and_order() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    let t1 = parse_timestamp("2025-01-01T10:00:00Z").unwrap();
    let t0 = parse_timestamp("2024-12-31T10:00:00").unwrap();
    let mk = |text: &str, t| NewMessage {
        timestamp: Some(t),
        ..NewMessage::new("user", text)
    };
    let c = db
        .sekha()
        .create_conversation(NewConversation::new(
            "t",
            vec![mk("later", t1), mk("earlier", t0)],
        ))
        .unwrap();
    let msgs = db
        .sekha()
        .get_conversation_with_messages(c.conversation.id)
        .unwrap()
        .messages;
    assert_eq!(msgs[0].content.text(), "earlier");
    assert_eq!(msgs[0].timestamp, t0);
    assert_eq!(msgs[1].timestamp, t1);
}

#[test]
fn list_filters_paging_and_order() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    let a = conv(&db, "alpha", "/work", &["one"]);
    let b = conv(&db, "beta", "/work/rust", &["two"]);
    let c = conv(&db, "gamma", "/workshop", &["three"]);
    let e = conv(&db, "alpha", "/home", &["four"]);
    db.sekha().archive(e.conversation.id).unwrap();
    db.sekha().pin(b.conversation.id).unwrap();

    let all = db
        .sekha()
        .list_conversations(&Filter::default(), Page::default())
        .unwrap();
    assert_eq!(all.total, 4);
    // Newest updated first: the pin and archive touched b and e last.
    assert_eq!(all.conversations[0].id, b.conversation.id);
    assert_eq!(all.conversations[1].id, e.conversation.id);
    for w in all.conversations.windows(2) {
        assert!(w[0].updated_at >= w[1].updated_at);
    }

    let ids = |f: Filter| -> Vec<uuid::Uuid> {
        let mut v: Vec<_> = db
            .sekha()
            .list_conversations(&f, Page::default())
            .unwrap()
            .conversations
            .into_iter()
            .map(|c| c.id)
            .collect();
        v.sort();
        v
    };
    let sorted = |mut v: Vec<uuid::Uuid>| {
        v.sort();
        v
    };
    let work = Filter {
        folder: Some("/work".into()),
        ..Default::default()
    };
    assert_eq!(
        ids(work.clone()),
        sorted(vec![a.conversation.id, b.conversation.id]),
        "/workshop is not under /work"
    );
    assert_eq!(
        ids(Filter {
            label: Some("alpha".into()),
            ..Default::default()
        }),
        sorted(vec![a.conversation.id, e.conversation.id])
    );
    assert_eq!(
        ids(Filter {
            status: Some(Status::Archived),
            ..Default::default()
        }),
        vec![e.conversation.id]
    );
    assert_eq!(
        ids(Filter {
            pinned: Some(true),
            ..Default::default()
        }),
        vec![b.conversation.id]
    );
    assert_eq!(
        ids(Filter {
            min_importance: Some(6),
            ..Default::default()
        }),
        vec![b.conversation.id]
    );
    assert_eq!(
        ids(Filter {
            folder: Some("/".into()),
            status: Some(Status::Active),
            max_importance: Some(5),
            ..Default::default()
        }),
        sorted(vec![a.conversation.id, c.conversation.id])
    );
    assert_eq!(db.sekha().count_conversations(&work).unwrap(), 2);
    assert_eq!(
        db.sekha().count_conversations(&Filter::default()).unwrap(),
        4
    );

    let future = Filter {
        since: Some(chrono::Utc::now() + chrono::Duration::days(1)),
        ..Default::default()
    };
    assert_eq!(db.sekha().count_conversations(&future).unwrap(), 0);
    let past = Filter {
        since: Some(chrono::Utc::now() - chrono::Duration::days(1)),
        ..Default::default()
    };
    assert_eq!(db.sekha().count_conversations(&past).unwrap(), 4);

    let p1 = db
        .sekha()
        .list_conversations(
            &Filter::default(),
            Page {
                offset: 0,
                limit: 3,
            },
        )
        .unwrap();
    let p2 = db
        .sekha()
        .list_conversations(
            &Filter::default(),
            Page {
                offset: 3,
                limit: 3,
            },
        )
        .unwrap();
    assert_eq!(p1.conversations.len(), 3);
    assert_eq!(p2.conversations.len(), 1);
    assert_eq!(p2.total, 4);
    assert!(
        !p1.conversations
            .iter()
            .any(|c| c.id == p2.conversations[0].id)
    );
}

#[test]
fn update_pin_archive_delete() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    let c = conv(&db, "old", "/a", &["hello world"]);
    let id = c.conversation.id;
    let u = db
        .sekha()
        .update_conversation(
            id,
            ConversationUpdate {
                folder: Some("/b".into()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(
        u.label, "old",
        "a folder update keeps the label (Sekha's bug is not reproduced)"
    );
    assert_eq!(u.folder, "/b");
    let u = db
        .sekha()
        .update_conversation(
            id,
            ConversationUpdate {
                label: Some("new".into()),
                importance_score: Some(7),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!((u.label.as_str(), u.importance_score), ("new", 7));
    assert!(db.sekha().pin(id).unwrap().pinned);
    assert_eq!(db.sekha().archive(id).unwrap().status, Status::Archived);
    assert_eq!(
        db.sekha()
            .count_conversations(&Filter {
                label: Some("old".into()),
                ..Default::default()
            })
            .unwrap(),
        0
    );
    assert_eq!(
        db.sekha()
            .count_conversations(&Filter {
                folder: Some("/a".into()),
                ..Default::default()
            })
            .unwrap(),
        0
    );
    assert_eq!(db.sekha().delete_conversation(id).unwrap(), 1);
    assert!(matches!(
        db.sekha().get_conversation(id),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        db.sekha().get_message(c.messages[0].id),
        Err(Error::NotFound { .. })
    ));
    assert!(matches!(
        db.sekha().delete_conversation(id),
        Err(Error::NotFound { .. })
    ));
    assert_eq!(
        db.sekha().count_conversations(&Filter::default()).unwrap(),
        0
    );
    assert!(
        db.sekha()
            .search_text(&TextQuery::new("hello"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn stats_totals() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    let a = conv(&db, "x", "/f1", &["a b c", "d"]);
    conv(&db, "y", "/f1", &["e"]);
    conv(&db, "x", "/f2", &["f g"]);
    db.sekha().pin(a.conversation.id).unwrap();
    let s = db.sekha().stats(&Filter::default()).unwrap();
    assert_eq!(s.total_conversations, 3);
    assert_eq!(s.total_messages, 4);
    assert_eq!(s.total_words, 7);
    assert_eq!(s.pinned, 1);
    assert_eq!(s.active, 3);
    assert!((s.average_importance - 20.0 / 3.0).abs() < 1e-9);
    assert_eq!(s.by_folder["/f1"], 2);
    assert_eq!(s.by_label["x"], 2);
    let f1 = db
        .sekha()
        .stats(&Filter {
            folder: Some("/f1".into()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(f1.total_conversations, 2);
}

#[test]
fn export_import_round_trip() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    let a = conv(
        &db,
        "exported one",
        "/e",
        &["first message", "second message"],
    );
    let b = conv(&db, "exported two", "/e/sub", &["third"]);
    db.sekha().pin(b.conversation.id).unwrap();
    conv(&db, "elsewhere", "/other", &["not exported"]);
    let export = db
        .sekha()
        .export(&Selection::Matching(Filter {
            folder: Some("/e".into()),
            ..Default::default()
        }))
        .unwrap();
    assert_eq!(export.conversations.len(), 2);
    let json = serde_json::to_string(&export).unwrap();

    let md = db
        .sekha()
        .export_to_string(&Selection::One(a.conversation.id), ExportFormat::Markdown)
        .unwrap();
    assert!(md.starts_with("# exported one"));
    assert!(md.contains("### 2. User"));
    assert!(md.contains("second message"));

    let d2 = tmp();
    let db2 = Memdb::open(d2.path()).unwrap();
    let parsed: Export = serde_json::from_str(&json).unwrap();
    let mut last = (0, 0);
    let report = db2
        .sekha()
        .import(parsed.clone(), ImportOptions::default(), &mut |d, t| {
            last = (d, t)
        })
        .unwrap();
    assert_eq!(
        report,
        ImportReport {
            imported: 2,
            messages: 3,
            skipped: 0
        }
    );
    let text = db2.text_index_status();
    assert_eq!(text.committed_lsn, text.store_lsn, "{text:?}");
    assert_eq!(last, (2, 2), "progress ends at done == total");
    let again = db2
        .sekha()
        .export(&Selection::Matching(Filter::default()))
        .unwrap();
    let mut x = export.conversations.clone();
    let mut y = again.conversations.clone();
    x.sort_by_key(|c| c.conversation.id);
    y.sort_by_key(|c| c.conversation.id);
    assert_eq!(x, y, "export -> import -> export is the identity");
    let hits = db2.sekha().search_text(&TextQuery::new("third")).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].folder, "/e/sub");

    // Importing again conflicts and writes nothing; skip_existing skips.
    assert!(matches!(
        db2.sekha()
            .import(parsed.clone(), ImportOptions::default(), &mut |_, _| {}),
        Err(Error::Conflict(_))
    ));
    let r = db2
        .sekha()
        .import(
            parsed,
            ImportOptions {
                skip_existing: true,
            },
            &mut |_, _| {},
        )
        .unwrap();
    assert_eq!((r.imported, r.skipped), (0, 2));
    assert_eq!(
        db2.sekha().count_conversations(&Filter::default()).unwrap(),
        2
    );
}

#[test]
fn second_writer_gets_a_clear_error() {
    let d = tmp();
    let _db = Memdb::open(d.path()).unwrap();
    let err = Memdb::open(d.path()).unwrap_err();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    assert!(
        err.to_string().contains("locked by another memdb process"),
        "{err}"
    );
    assert!(
        err.to_string().contains(&std::process::id().to_string()),
        "names the holder: {err}"
    );
}

#[test]
fn concurrent_readers_and_writer() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    std::thread::scope(|s| {
        for t in 0..3 {
            let db = &db;
            s.spawn(move || {
                for i in 0..20 {
                    let text = format!("thread{t} item{i} concurrency");
                    let c = conv(db, "c", "/c", &[&text]);
                    let hits = db
                        .sekha()
                        .search_text(&TextQuery::new(format!("\"thread{t} item{i}\"")))
                        .unwrap();
                    assert!(
                        hits.iter()
                            .any(|h| h.message.conversation_id == c.conversation.id)
                    );
                }
            });
        }
    });
    let report = db.check().unwrap();
    assert!(report.is_consistent(), "{report:?}");
    assert_eq!(report.messages, 60);
}

#[test]
fn batch_create_is_all_or_nothing() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    let ok = |l: &str| NewConversation::new(l, vec![NewMessage::new("user", format!("batch {l}"))]);
    let created = db
        .sekha()
        .create_conversations(vec![ok("a"), ok("b"), ok("c")])
        .unwrap();
    assert_eq!(created.len(), 3);
    assert_eq!(
        db.sekha().count_conversations(&Filter::default()).unwrap(),
        3
    );
    assert_eq!(
        db.sekha()
            .search_text(&TextQuery::new("batch"))
            .unwrap()
            .len(),
        3
    );
    let err = db
        .sekha()
        .create_conversations(vec![
            ok("d"),
            NewConversation::new("", vec![NewMessage::new("user", "x")]),
        ])
        .unwrap_err();
    match err {
        Error::InvalidInput { field, .. } => assert_eq!(field, "conversations[1].label"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        db.sekha().count_conversations(&Filter::default()).unwrap(),
        3,
        "nothing of the failed batch was written"
    );
}

/// Exports read the snapshot in batches: more conversations than one batch,
/// filtered, come out complete and in list order (newest updated first).
#[test]
fn batched_export_matches_the_listing() {
    let dir = crate::tmp();
    let db = Memdb::open(dir.path()).expect("open");
    let n = memdb::EXPORT_BATCH * 2 + 37;
    for i in 0..n {
        let folder = if i % 3 == 0 { "/three" } else { "/other" };
        crate::conv(&db, &format!("c{i}"), folder, &[&format!("text {i}")]);
    }
    for filter in [
        Filter::default(),
        Filter {
            folder: Some("/three".into()),
            ..Filter::default()
        },
    ] {
        let listed: Vec<uuid::Uuid> = db
            .sekha()
            .list_conversations(
                &filter,
                Page {
                    offset: 0,
                    limit: 1000,
                },
            )
            .expect("list")
            .conversations
            .iter()
            .map(|c| c.id)
            .collect();
        let exported: Vec<uuid::Uuid> = db
            .sekha()
            .export_stream(&Selection::Matching(filter.clone()))
            .expect("export")
            .map(|c| c.expect("conversation").conversation.id)
            .collect();
        assert_eq!(exported.len(), listed.len());
        assert_eq!(exported, listed);
    }
}

#[test]
fn storage_counts_every_table_and_optimize_compacts_the_store() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    let body = |i: usize| {
        (0..400)
            .map(|w| format!("word{} ", (w * 7 + i) % 997))
            .collect::<String>()
    };
    let mut ids = Vec::new();
    for i in 0..300 {
        let c = db
            .sekha()
            .create_conversation(NewConversation::new(
                format!("conversation {i}"),
                vec![
                    NewMessage::new("user", body(i)),
                    NewMessage::new("assistant", format!("kept{i} {}", body(i + 1))),
                ],
            ))
            .unwrap();
        ids.push(c.conversation.id);
    }
    let before = db.storage().unwrap();
    let rows = |r: &memdb::StorageReport, name: &str| {
        r.tables
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("table {name} missing from {r:?}"))
            .entries
    };
    assert_eq!(rows(&before, "messages"), 600);
    assert_eq!(rows(&before, "conversations"), 300);
    assert!(before.store_allocated_bytes <= before.store_file_bytes);
    assert!(before.text_index_bytes > 0);
    for id in &ids[10..] {
        db.sekha().delete_conversation(*id).unwrap();
    }
    db.optimize().unwrap();
    let after = db.storage().unwrap();
    assert_eq!(rows(&after, "messages"), 20);
    // The checkpointed oplog is trimmed and the freed pages given back.
    assert_eq!(rows(&after, "oplog"), 0);
    assert!(
        after.store_file_bytes * 2 < before.store_file_bytes,
        "{} bytes before deleting 97% of the store, {} after optimize",
        before.store_file_bytes,
        after.store_file_bytes
    );
    drop(db);
    let db = Memdb::open(d.path()).unwrap();
    assert!(db.check().unwrap().is_consistent());
    let hits = db.sekha().search_text(&TextQuery::new("kept3")).unwrap();
    assert_eq!(hits.len(), 1);
    assert!(
        db.sekha()
            .search_text(&TextQuery::new("kept200"))
            .unwrap()
            .is_empty()
    );
}
