//! Compatibility: a store written by an older build opens, migrates and
//! answers the same queries (`tests/fixtures/store-schema2/README.md` says how
//! the fixture was made).

use memdb::{Filter, Memdb, Page, Status, TextQuery};
use uuid::Uuid;

fn fixture_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let src =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/store-schema2/memdb.redb");
    std::fs::copy(&src, dir.path().join("memdb.redb")).expect("copy fixture");
    dir
}

fn id(s: &str) -> Uuid {
    s.parse().expect("uuid")
}

#[test]
fn a_schema_2_store_migrates_into_the_default_namespace() {
    let travel = id("6599022a-bf75-4342-a3f8-540a2a4e1854");
    let rust = id("1b5ed57e-f7e0-43be-9d5d-ce6be1c16baa");
    let bread = id("2c6ce1f7-5e0a-4fc2-b319-1032359b6eff");
    let dir = fixture_copy();
    for round in 0..2 {
        // Round 0 migrates a fresh copy. Round 1 migrates a fresh copy again,
        // next to the text index round 0 left behind (its watermark is ahead
        // of the copied store): the index must be rebuilt, not trusted.
        let db = Memdb::open(dir.path()).expect("open old store");
        let page = db
            .list_conversations(&Filter::default(), Page::default())
            .unwrap();
        let ids: Vec<Uuid> = page.conversations.iter().map(|c| c.id).collect();
        assert_eq!(ids, [travel, rust, bread], "round {round}");
        assert_eq!(page.total, 3);
        let pinned = Filter {
            pinned: Some(true),
            ..Filter::default()
        };
        assert_eq!(db.count_conversations(&pinned).unwrap(), 1);
        let archived = Filter {
            status: Some(Status::Archived),
            ..Filter::default()
        };
        assert_eq!(db.count_conversations(&archived).unwrap(), 1);
        let home = Filter {
            folder: Some("/home".into()),
            ..Filter::default()
        };
        assert_eq!(db.count_conversations(&home).unwrap(), 2);
        let r = db.get_conversation_with_messages(rust).unwrap();
        assert_eq!(r.conversation.label, "Rust lifetimes");
        assert!(r.conversation.pinned);
        assert_eq!(r.messages.len(), 2);
        let hits = db.search_text(&TextQuery::new("borrow")).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].message.conversation_id, rust);
        let spaces = db.namespaces().unwrap();
        assert_eq!(spaces.len(), 1);
        assert_eq!(
            (spaces[0].name.as_str(), spaces[0].conversations),
            ("default", 3)
        );
        // Writes after the migration keep the counts and indexes right.
        if round == 0 {
            db.delete_conversation(bread).unwrap();
            assert_eq!(db.count_conversations(&Filter::default()).unwrap(), 2);
            assert_eq!(db.count_conversations(&home).unwrap(), 1);
            db.close().unwrap();
            // Round 1 starts from the untouched fixture again.
            std::fs::copy(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("fixtures/store-schema2/memdb.redb"),
                dir.path().join("memdb.redb"),
            )
            .unwrap();
        }
    }
}
