//! Bad input: a clear, typed error naming the problem, and nothing written.

use memdb::*;

use crate::{conv, tmp};

fn invalid_field(e: Error) -> String {
    match e {
        Error::InvalidInput { field, reason } => {
            assert!(!reason.is_empty());
            field
        }
        other => panic!("expected InvalidInput, got {other:?}"),
    }
}

/// Asserts the store is exactly as before: same conversations, messages, LSN.
fn unchanged(db: &Memdb, before: &CheckReport) {
    let now = db.check().unwrap();
    assert_eq!(now.conversations, before.conversations);
    assert_eq!(now.messages, before.messages);
    assert_eq!(
        now.store_lsn, before.store_lsn,
        "no oplog entry was written"
    );
}

#[test]
fn rejected_creates_write_nothing() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    let c = conv(&db, "keep", "/", &["existing"]);
    let before = db.check().unwrap();

    let ok_msg = || vec![NewMessage::new("user", "hi")];
    let cases: Vec<(NewConversation, &str)> = vec![
        (NewConversation::new("", ok_msg()), "label"),
        (NewConversation::new("   ", ok_msg()), "label"),
        (NewConversation::new("x".repeat(501), ok_msg()), "label"),
        (NewConversation::new("l", vec![]), "messages"),
        (
            NewConversation::new("l", ok_msg()).in_folder("no-slash"),
            "folder",
        ),
        (
            NewConversation::new("l", ok_msg()).in_folder("/a/../b"),
            "folder",
        ),
        (
            NewConversation::new("l", vec![NewMessage::new("user", "x".repeat(10 << 20))]),
            "messages[0].content",
        ),
        (
            NewConversation::new(
                "l",
                vec![NewMessage::new("user", "ok"), NewMessage::new("user", "  ")],
            ),
            "messages[1].content",
        ),
        (
            NewConversation::new("l", vec![NewMessage::new("", "ok")]),
            "messages[0].role",
        ),
        (
            NewConversation::new("l", vec![NewMessage::new("us er", "ok")]),
            "messages[0].role",
        ),
        (
            NewConversation {
                importance_score: Some(11),
                ..NewConversation::new("l", ok_msg())
            },
            "importance_score",
        ),
        (
            NewConversation {
                metadata: Some(serde_json::json!([1, 2])),
                ..NewConversation::new("l", ok_msg())
            },
            "metadata",
        ),
        (
            NewConversation::new(
                "l",
                vec![NewMessage {
                    content: Content::Parts(vec![serde_json::json!({"text": "no type"})]),
                    ..NewMessage::new("user", "")
                }],
            ),
            "messages[0].content[0]",
        ),
    ];
    for (new, field) in cases {
        let err = db.sekha().create_conversation(new).unwrap_err();
        assert_eq!(invalid_field(err), field);
        unchanged(&db, &before);
    }
    // Appends are validated the same way, and as a whole.
    let err = db
        .sekha()
        .append_messages(
            c.conversation.id,
            vec![
                NewMessage::new("user", "fine"),
                NewMessage::new("user", "x".repeat(10 << 20)),
            ],
        )
        .unwrap_err();
    assert_eq!(invalid_field(err), "messages[1].content");
    assert!(matches!(
        db.sekha()
            .append_messages(uuid::Uuid::new_v4(), vec![NewMessage::new("user", "x")]),
        Err(Error::NotFound { .. })
    ));
    unchanged(&db, &before);
}

#[test]
fn rejected_updates_and_queries() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    let c = conv(&db, "keep", "/", &["some text here"]);
    let before = db.check().unwrap();
    let id = c.conversation.id;
    assert_eq!(
        invalid_field("bogus".parse::<Status>().unwrap_err()),
        "status"
    );
    let bad = [
        ConversationUpdate {
            label: Some("".into()),
            ..Default::default()
        },
        ConversationUpdate {
            folder: Some("x".into()),
            ..Default::default()
        },
        ConversationUpdate {
            importance_score: Some(42),
            ..Default::default()
        },
        ConversationUpdate {
            metadata: Some(serde_json::json!("str")),
            ..Default::default()
        },
    ];
    for u in bad {
        invalid_field(db.sekha().update_conversation(id, u).unwrap_err());
        unchanged(&db, &before);
    }
    assert!(matches!(
        db.sekha()
            .update_conversation(uuid::Uuid::new_v4(), ConversationUpdate::default()),
        Err(Error::NotFound { .. })
    ));

    let q = |s: &str| db.sekha().search_text(&TextQuery::new(s));
    assert_eq!(invalid_field(q("\"unbalanced quote").unwrap_err()), "query");
    assert_eq!(invalid_field(q("   ").unwrap_err()), "query");
    assert_eq!(invalid_field(q("nosuchfield:foo").unwrap_err()), "query");
    let mut big = TextQuery::new("text");
    big.limit = 0;
    assert_eq!(
        invalid_field(db.sekha().search_text(&big).unwrap_err()),
        "limit"
    );
    big.limit = 100_000;
    assert_eq!(
        invalid_field(db.sekha().search_text(&big).unwrap_err()),
        "limit"
    );
    let mut f = TextQuery::new("text");
    f.filter.folder = Some("relative".into());
    assert_eq!(
        invalid_field(db.sekha().search_text(&f).unwrap_err()),
        "filter.folder"
    );
    assert!(matches!(
        db.sekha().list_conversations(
            &Filter::default(),
            Page {
                offset: 0,
                limit: 0
            }
        ),
        Err(Error::InvalidInput { .. })
    ));
    unchanged(&db, &before);
}

#[test]
fn malformed_export_is_rejected_before_writing() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    let c = conv(&db, "src", "/", &["a"]);
    let mut export = db
        .sekha()
        .export(&Selection::One(c.conversation.id))
        .unwrap();
    let d2 = tmp();
    let db2 = Memdb::open(d2.path()).unwrap();
    let before = db2.check().unwrap();
    // A second, invalid conversation: the first must not be written either.
    let mut broken = export.conversations[0].clone();
    broken.conversation.id = uuid::Uuid::new_v4();
    broken.conversation.label = String::new();
    export.conversations.push(broken);
    assert!(matches!(
        db2.sekha()
            .import(export.clone(), ImportOptions::default(), &mut |_, _| {}),
        Err(Error::InvalidInput { .. })
    ));
    unchanged(&db2, &before);
    export.conversations.pop();
    export.version = 99;
    assert!(matches!(
        db2.sekha()
            .import(export, ImportOptions::default(), &mut |_, _| {}),
        Err(Error::InvalidInput { .. })
    ));
    unchanged(&db2, &before);
}

/// Queries the fuzzer found tripping a tantivy debug assertion (an
/// exclusion of a phrase over `*`): an answer or an error, never a panic.
#[test]
fn fuzzer_found_queries_never_panic() {
    let dir = tmp();
    let db = Memdb::open(dir.path()).expect("open");
    conv(
        &db,
        "Zeros",
        "/z",
        &["0 0 and 0-0", "x x2 x%2", "plain words"],
    );
    conv(&db, "More", "/z", &["another 0 0 line", "nothing here"]);
    for q in [
        "*\n*\n-0-0",
        "\u{7f}x%\u{1e}\u{b1}\u{7f}x%2",
        "* -\"0 0\"",
        "a -0-0 *",
    ] {
        // A panic here fails the test; an error must be a typed one.
        match db.sekha().search_text(&TextQuery::new(q)) {
            Ok(_) | Err(Error::TextIndex(_) | Error::InvalidInput { .. }) => {}
            Err(e) => panic!("{q:?}: unexpected error {e}"),
        }
    }
}
