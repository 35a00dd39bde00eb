//! Compatibility: stores and files written by older builds open, migrate
//! and answer the same queries. The old files are written at test time
//! (`schema2.rs`, `generation.rs` say how and from what), not committed.

mod generation;
mod schema2;

use memdb::Systems;
use memdb::{Filter, Memdb, Page, Status, TextQuery};
use uuid::Uuid;

fn old_store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    schema2::write(&dir.path().join("memdb.redb"));
    dir
}

#[test]
fn a_schema_2_store_migrates_into_the_default_namespace() {
    let travel = Uuid::from_u128(schema2::TRAVEL);
    let rust = Uuid::from_u128(schema2::RUST);
    let bread = Uuid::from_u128(schema2::BREAD);
    let dir = old_store();
    for round in 0..2 {
        // Round 0 migrates a fresh schema-2 store. Round 1 migrates a fresh
        // one again, next to the text index round 0 left behind (its
        // watermark is ahead of the new store): the index must be rebuilt,
        // not trusted.
        let db = Memdb::open(dir.path()).expect("open old store");
        let page = db
            .sekha()
            .list_conversations(&Filter::default(), Page::default())
            .unwrap();
        let ids: Vec<Uuid> = page.conversations.iter().map(|c| c.id).collect();
        assert_eq!(ids, [travel, rust, bread], "round {round}");
        assert_eq!(page.total, 3);
        let pinned = Filter {
            pinned: Some(true),
            ..Filter::default()
        };
        assert_eq!(db.sekha().count_conversations(&pinned).unwrap(), 1);
        let archived = Filter {
            status: Some(Status::Archived),
            ..Filter::default()
        };
        assert_eq!(db.sekha().count_conversations(&archived).unwrap(), 1);
        let home = Filter {
            folder: Some("/home".into()),
            ..Filter::default()
        };
        assert_eq!(db.sekha().count_conversations(&home).unwrap(), 2);
        let r = db.sekha().get_conversation_with_messages(rust).unwrap();
        assert_eq!(r.conversation.label, "Rust lifetimes");
        assert!(r.conversation.pinned);
        assert_eq!(r.messages.len(), 2);
        let b = db.sekha().get_conversation_with_messages(bread).unwrap();
        assert!(
            b.messages[1].content.text().contains("1:1:1 ratio"),
            "content parts of a schema-2 row read back"
        );
        let hits = db.sekha().search_text(&TextQuery::new("borrow")).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].message.conversation_id, rust);
        let hits = db.sekha().search_text(&TextQuery::new("starter")).unwrap();
        assert_eq!(hits.len(), 2, "both sourdough messages are indexed");
        let spaces = db.namespaces().unwrap();
        assert_eq!(spaces.len(), 1);
        assert_eq!(
            (spaces[0].name.as_str(), spaces[0].conversations),
            ("default", 3)
        );
        let report = db.check().expect("check the migrated store");
        assert_eq!((report.conversations, report.messages), (3, 6));
        assert!(report.missing_from_index.is_empty(), "{report:?}");
        assert!(report.extra_in_index.is_empty(), "{report:?}");
        // Writes after the migration keep the counts and indexes right.
        if round == 0 {
            db.sekha().delete_conversation(bread).unwrap();
            assert_eq!(
                db.sekha().count_conversations(&Filter::default()).unwrap(),
                2
            );
            assert_eq!(db.sekha().count_conversations(&home).unwrap(), 1);
            assert!(
                db.sekha()
                    .search_text(&TextQuery::new("starter"))
                    .unwrap()
                    .is_empty()
            );
            db.close().unwrap();
            // Round 1 starts from an untouched schema-2 store again.
            std::fs::remove_file(dir.path().join("memdb.redb")).unwrap();
            schema2::write(&dir.path().join("memdb.redb"));
        }
    }
}
