//! Namespaces through the library: a handle on one namespace never reads,
//! searches (keyword, semantic, hybrid), lists, counts, exports, summarizes
//! or assembles context from another, and cannot touch another's records by
//! id. Runs with the lexical `Hashing` embedder so semantic search is real
//! vector search without model files.

use memdb::Systems;
use std::sync::Arc;

use memdb::{
    Config, ContextRequest, Error, Filter, Hashing, Memdb, NewConversation, NewMessage, Page,
    SearchMode, SearchRequest, Selection, TextQuery,
};

fn open(dir: &std::path::Path) -> Memdb {
    let e = Arc::new(Hashing::new(64).expect("hashing embedder"));
    Memdb::open_with(dir, Config::with_embedder(e)).expect("open")
}

fn store(db: &Memdb, label: &str, text: &str) -> uuid::Uuid {
    db.sekha()
        .create_conversation(
            NewConversation::new(label, vec![NewMessage::new("user", text)]).in_folder("/shared"),
        )
        .expect("create")
        .conversation
        .id
}

fn is_not_found<T: std::fmt::Debug>(r: Result<T, Error>) -> bool {
    matches!(r, Err(Error::NotFound { .. }))
}

#[test]
fn a_namespace_sees_only_its_own_records() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let acme = db.namespace("acme").unwrap();
    let beta = db.namespace("beta").unwrap();
    // Reads of a namespace nobody wrote to yet see nothing.
    assert_eq!(
        acme.sekha()
            .count_conversations(&Filter::default())
            .unwrap(),
        0
    );

    let d = store(&db, "shared", "the zebra migration plan for default");
    let a = store(&acme, "shared", "the zebra migration plan for acme");
    let b = store(&beta, "shared", "the zebra migration plan for beta");
    assert_eq!(acme.namespace_name(), "acme");
    let names: Vec<String> = db
        .namespaces()
        .unwrap()
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert_eq!(names, ["acme", "beta", "default"]);

    for (handle, own, others) in [(&db, d, [a, b]), (&acme, a, [d, b]), (&beta, b, [d, a])] {
        let ns = handle.namespace_name().to_string();
        // Listing, counting, stats.
        let page = handle
            .sekha()
            .list_conversations(&Filter::default(), Page::default())
            .unwrap();
        let ids: Vec<_> = page.conversations.iter().map(|c| c.id).collect();
        assert_eq!(ids, [own], "{ns}");
        assert_eq!(page.total, 1, "{ns}");
        let by_label = Filter {
            label: Some("shared".into()),
            ..Filter::default()
        };
        assert_eq!(
            handle.sekha().count_conversations(&by_label).unwrap(),
            1,
            "{ns}"
        );
        assert_eq!(
            handle
                .sekha()
                .stats(&Filter::default())
                .unwrap()
                .total_conversations,
            1
        );
        // Search in every mode.
        handle.embed_pending(None, &mut |_| {}).unwrap();
        let hits = handle
            .sekha()
            .search_text(&TextQuery::new("zebra"))
            .unwrap();
        assert_eq!(hits.len(), 1, "{ns}");
        assert_eq!(hits[0].message.conversation_id, own);
        for mode in [
            SearchMode::Keyword,
            SearchMode::Semantic,
            SearchMode::Hybrid,
        ] {
            let found = handle
                .sekha()
                .search(&SearchRequest::new("zebra migration plan").mode(mode))
                .unwrap();
            let convs: Vec<_> = found
                .hits
                .iter()
                .map(|h| h.message.conversation_id)
                .collect();
            assert_eq!(convs, [own], "{ns} {mode:?}: {:?}", found.notes);
        }
        // Context assembly.
        let ctx = handle
            .sekha()
            .assemble_context(&ContextRequest::new("zebra migration"))
            .unwrap();
        assert_eq!(ctx.conversation_ids, [own], "{ns}");
        // Export.
        let export = handle
            .sekha()
            .export(&Selection::Matching(Filter::default()))
            .unwrap();
        assert_eq!(export.conversations.len(), 1, "{ns}");
        assert_eq!(export.conversations[0].conversation.id, own);
        // By id: another namespace's records do not exist here.
        for other in others {
            assert!(is_not_found(handle.sekha().get_conversation(other)), "{ns}");
            assert!(is_not_found(
                handle.sekha().get_conversation_with_messages(other)
            ));
            assert!(is_not_found(handle.sekha().export(&Selection::One(other))));
            assert!(is_not_found(handle.sekha().pin(other)));
            assert!(is_not_found(handle.sekha().archive(other)));
            assert!(is_not_found(
                handle
                    .sekha()
                    .append_messages(other, vec![NewMessage::new("user", "x")])
            ));
            assert!(is_not_found(handle.sekha().delete_conversation(other)));
            assert!(is_not_found(handle.sekha().list_summaries(other, None)));
        }
    }
    // Nothing above changed another namespace's record.
    assert_eq!(db.sekha().get_conversation(d).unwrap().importance_score, 5);
    assert_eq!(
        acme.sekha()
            .get_conversation_with_messages(a)
            .unwrap()
            .messages
            .len(),
        1
    );
}

#[test]
fn namespaces_survive_reopen_and_bad_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let a;
    {
        let db = open(dir.path());
        a = store(
            &db.namespace("user@example.com").unwrap(),
            "l",
            "persisted hello",
        );
        db.close().unwrap();
    }
    let db = open(dir.path());
    assert!(is_not_found(db.sekha().get_conversation(a)));
    let ns = db.namespace("user@example.com").unwrap();
    assert_eq!(ns.sekha().get_conversation(a).unwrap().label, "l");
    assert_eq!(
        ns.sekha()
            .search_text(&TextQuery::new("persisted"))
            .unwrap()
            .len(),
        1
    );
    assert!(
        db.sekha()
            .search_text(&TextQuery::new("persisted"))
            .unwrap()
            .is_empty()
    );
    for bad in ["", "a b", "../x", "-x"] {
        assert!(
            matches!(db.namespace(bad), Err(Error::InvalidInput { .. })),
            "{bad:?}"
        );
    }
}
