//! Memorg's model on the store (SPEC.md §14.9), through the library: the
//! hierarchy built by query, `add_exchange` with persisted importance and
//! one vector, `search_context` in every scope with real scores and match
//! types, namespaces keeping two users apart, memory items with tags,
//! metadata filters and `get_item_context`, and bad calls that write
//! nothing. The lexical `Hashing` embedder makes the vector side real
//! without model files.

use memdb::Systems;
use std::sync::Arc;

use memdb::memorg::items::{MemoryScope, SearchScope};
use memdb::memorg::scorer::MatchType;
use memdb::memorg::system::{ContextSearch, EXCHANGE, MemorySearch};
use memdb::{Config, Error, Hashing, Memdb};
use serde_json::json;

fn open(dir: &std::path::Path) -> Memdb {
    let e = Arc::new(Hashing::new(256).expect("hashing embedder"));
    Memdb::open_with(dir, Config::with_embedder(e)).expect("open")
}

struct Tree {
    session: uuid::Uuid,
    conversation: uuid::Uuid,
    databases: uuid::Uuid,
    travel: uuid::Uuid,
    vacuum: uuid::Uuid,
    lisbon: uuid::Uuid,
}

fn build(db: &Memdb, user: &str) -> Tree {
    let s = db
        .memorg()
        .create_session(user, json!({"model": "x"}), json!({}))
        .unwrap();
    let c = db
        .memorg()
        .start_conversation(s.id, Some("planning"))
        .unwrap();
    let databases = db.memorg().create_topic(c.id, "databases", None).unwrap();
    let travel = db
        .memorg()
        .create_topic(c.id, "travel", Some("trips in 2026"))
        .unwrap();
    let vacuum = db
        .memorg()
        .add_exchange(
            databases.id,
            "How do I tune Postgres autovacuum for a large table?",
            "Lower autovacuum_vacuum_scale_factor and raise the cost limit.",
            json!({}),
        )
        .unwrap();
    db.memorg()
        .add_exchange(
            databases.id,
            "Does redb support concurrent write transactions?",
            "No: one writer at a time, readers never block.",
            json!({}),
        )
        .unwrap();
    let lisbon = db
        .memorg()
        .add_exchange(
            travel.id,
            "What should I see in Lisbon in March?",
            "Alfama, the Belem tower and a day trip to Sintra.",
            json!({}),
        )
        .unwrap();
    db.memorg()
        .add_exchange(
            travel.id,
            "Is the train from Lisbon to Porto fast?",
            "About three hours on the Alfa Pendular.",
            json!({}),
        )
        .unwrap();
    Tree {
        session: s.id,
        conversation: c.id,
        databases: databases.id,
        travel: travel.id,
        vacuum: vacuum.id,
        lisbon: lisbon.id,
    }
}

#[test]
fn the_hierarchy_is_built_and_listed_by_query() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = build(&db, "alice");
    let s = db.memorg().session(t.session).unwrap();
    assert_eq!(s.user_id, "alice");
    assert_eq!(s.system_config, json!({"model": "x"}));
    let convs = db.memorg().session_conversations(t.session).unwrap();
    assert_eq!(convs.len(), 1);
    assert_eq!(convs[0].title, "planning");
    let topics: Vec<String> = db
        .memorg()
        .conversation_topics(t.conversation)
        .unwrap()
        .into_iter()
        .map(|t| t.title)
        .collect();
    assert_eq!(topics, ["databases", "travel"]);
    let ex = db.memorg().topic_exchanges(t.databases).unwrap();
    assert_eq!(ex.len(), 2);
    assert_eq!(ex[0].id, t.vacuum);
    // Parsed content and importance are persisted: a question scores above
    // the 0.3 base.
    let vacuum = db.memorg().exchange(t.vacuum).unwrap();
    assert!(vacuum.importance_score > 0.3, "{}", vacuum.importance_score);
    assert!(
        vacuum
            .user_message
            .parsed_content
            .intents
            .iter()
            .any(|i| i == "question"),
        "{:?}",
        vacuum.user_message.parsed_content
    );
    // One vector per exchange, of "User: …\nSystem: …".
    assert_eq!(db.count_record_vectors(EXCHANGE).unwrap(), 4);
    let usage = db.memorg().memory_usage().unwrap();
    assert_eq!(usage.active_items, 1 + 1 + 2 + 4);
    assert_eq!(usage.vector_count, 4);
    assert!(usage.total_tokens > 0);
    assert_eq!(db.memorg().sessions(Some("alice")).unwrap().len(), 1);
    assert!(db.memorg().sessions(Some("bob")).unwrap().is_empty());
}

#[test]
fn search_context_scores_and_scopes() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = build(&db, "alice");
    let r = db
        .memorg()
        .search_context(&ContextSearch::new("postgres autovacuum"))
        .unwrap();
    assert_eq!(r.results[0].exchange.id, t.vacuum);
    assert!(r.results[0].score > 0.0);
    assert!(r.results.windows(2).all(|w| w[0].score >= w[1].score));
    assert_eq!(r.results[0].match_type, MatchType::Hybrid);
    assert!(r.results[0].content.starts_with("User: How do I tune"));
    assert_eq!(r.metadata.query_terms, ["postgres", "autovacuum"]);

    // A topic scope never returns another topic's exchanges.
    let mut q = ContextSearch::new("lisbon postgres train redb");
    q.scope = SearchScope::Topic;
    q.scope_id = Some(t.databases.to_string());
    let r = db.memorg().search_context(&q).unwrap();
    assert!(!r.results.is_empty());
    for hit in &r.results {
        assert_eq!(hit.exchange.topic_id, t.databases);
    }
    q.scope_id = Some(t.travel.to_string());
    let r = db.memorg().search_context(&q).unwrap();
    assert!(r.results.iter().all(|h| h.exchange.topic_id == t.travel));
    assert!(r.results.iter().any(|h| h.exchange.id == t.lisbon));
    // Session and conversation scopes cover every topic below them.
    for (scope, id) in [
        (SearchScope::Session, t.session),
        (SearchScope::Conversation, t.conversation),
    ] {
        q.scope = scope;
        q.scope_id = Some(id.to_string());
        let r = db.memorg().search_context(&q).unwrap();
        assert_eq!(r.pagination.total_items, 4, "{scope:?}");
    }
    // Pagination.
    let mut q = ContextSearch::new("lisbon postgres train redb");
    q.max_results = 3;
    let first = db.memorg().search_context(&q).unwrap();
    assert_eq!(first.results.len(), 3);
    assert_eq!(first.pagination.total_pages, 2);
    q.page = 2;
    let second = db.memorg().search_context(&q).unwrap();
    assert_eq!(second.results.len(), 1);
    assert!(
        first
            .results
            .iter()
            .all(|h| h.exchange.id != second.results[0].exchange.id)
    );

    // A temporal expression adds the temporal factor.
    let r = db
        .memorg()
        .search_context(&ContextSearch::new("what about lisbon today"))
        .unwrap();
    assert!(r.metadata.temporal_constraints.is_some());
    assert!(r.results[0].factors.iter().any(|f| f.name == "temporal"));
}

#[test]
fn bad_calls_are_clear_errors_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = build(&db, "alice");
    let before = db.memorg().memory_usage().unwrap();
    let unknown = uuid::Uuid::new_v4();
    assert!(matches!(
        db.memorg().add_exchange(unknown, "hi", "hello", json!({})),
        Err(Error::NotFound { what: "topic", .. })
    ));
    // A conversation id is not a topic.
    assert!(matches!(
        db.memorg()
            .add_exchange(t.conversation, "hi", "hello", json!({})),
        Err(Error::NotFound { what: "topic", .. })
    ));
    assert!(matches!(
        db.memorg()
            .add_exchange(t.databases, "  ", "hello", json!({})),
        Err(Error::InvalidInput { .. })
    ));
    assert!(matches!(
        db.memorg().start_conversation(unknown, None),
        Err(Error::NotFound {
            what: "session",
            ..
        })
    ));
    assert!(matches!(
        db.memorg().create_topic(t.conversation, "", None),
        Err(Error::InvalidInput { .. })
    ));
    assert!(matches!(
        db.memorg().create_session("", json!({}), json!({})),
        Err(Error::InvalidInput { .. })
    ));
    assert!(SearchScope::parse("BOGUS").is_err());
    let mut q = ContextSearch::new("x".repeat(100_000));
    assert!(matches!(
        db.memorg().search_context(&q),
        Err(Error::InvalidInput { .. })
    ));
    q.query = "postgres".into();
    q.scope = SearchScope::Topic;
    assert!(matches!(
        db.memorg().search_context(&q),
        Err(Error::InvalidInput { .. })
    ));
    q.scope_id = Some(t.session.to_string());
    assert!(matches!(
        db.memorg().search_context(&q),
        Err(Error::NotFound { .. })
    ));
    assert_eq!(db.memorg().memory_usage().unwrap(), before);
}

#[test]
fn two_users_in_two_namespaces_never_see_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let alice = db.namespace("alice").unwrap();
    let bob = db.namespace("bob").unwrap();
    let a = build(&alice, "alice");
    let b = build(&bob, "bob");
    for (me, mine, theirs) in [(&alice, &a, &b), (&bob, &b, &a)] {
        let r = me
            .memorg()
            .search_context(&ContextSearch::new("postgres lisbon redb train"))
            .unwrap();
        assert_eq!(r.pagination.total_items, 4);
        let topics = [mine.databases, mine.travel];
        assert!(
            r.results
                .iter()
                .all(|h| topics.contains(&h.exchange.topic_id))
        );
        assert!(matches!(
            me.memorg().session(theirs.session),
            Err(Error::NotFound { .. })
        ));
        assert!(matches!(
            me.memorg()
                .add_exchange(theirs.databases, "hi", "there", json!({})),
            Err(Error::NotFound { .. })
        ));
        let mut q = ContextSearch::new("postgres");
        q.scope = SearchScope::Session;
        q.scope_id = Some(theirs.session.to_string());
        assert!(matches!(
            me.memorg().search_context(&q),
            Err(Error::NotFound { .. })
        ));
        assert_eq!(me.memorg().memory_usage().unwrap().active_items, 8);
    }
    assert_eq!(db.memorg().memory_usage().unwrap().active_items, 0);
}

#[test]
fn memory_items_with_tags_filters_and_context() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = build(&db, "alice");
    let note = db
        .memorg()
        .create_memory_item(
            "Alice prefers window seats on trains",
            "note",
            Some(t.session),
            json!({"category": "travel", "priority": 3}),
            &["prefs".into(), "travel".into()],
            Some(0.8),
        )
        .unwrap();
    assert_eq!(note.kind.custom_type.as_deref(), Some("note"));
    let doc = db
        .memorg()
        .create_memory_item(
            "Postgres runbook: vacuum, analyze, reindex",
            "document",
            Some(t.session),
            json!({"category": "db", "priority": 7}),
            &["ops".into()],
            Some(0.4),
        )
        .unwrap();
    let entity = db
        .memorg()
        .create_memory_item("Lisbon", "entity", None, json!({"kind": "city"}), &[], None)
        .unwrap();

    let search = |req: MemorySearch| -> Vec<uuid::Uuid> {
        db.memorg()
            .search_memory(&req)
            .unwrap()
            .into_iter()
            .map(|h| h.item.id)
            .collect()
    };
    let base = MemorySearch {
        query: "trains postgres lisbon".into(),
        ..Default::default()
    };
    let all = search(base.clone());
    assert_eq!(all.len(), 3);
    // Types, tags and metadata filters (equality, $in, ranges, $exists).
    assert_eq!(
        search(MemorySearch {
            item_types: vec!["document".into()],
            ..base.clone()
        }),
        [doc.id]
    );
    assert_eq!(
        search(MemorySearch {
            item_types: vec!["note".into()],
            ..base.clone()
        }),
        [note.id]
    );
    assert_eq!(
        search(MemorySearch {
            tags: vec!["prefs".into()],
            ..base.clone()
        }),
        [note.id]
    );
    for (filter, want) in [
        (json!({"category": "db"}), vec![doc.id]),
        (
            json!({"category": {"$in": ["travel", "food"]}}),
            vec![note.id],
        ),
        (json!({"priority": {"$gte": 5}}), vec![doc.id]),
        (json!({"kind": {"$exists": true}}), vec![entity.id]),
    ] {
        assert_eq!(
            search(MemorySearch {
                filters: Some(filter.clone()),
                ..base.clone()
            }),
            want,
            "{filter}"
        );
    }
    // Scope: items under the session.
    let scoped = search(MemorySearch {
        scope: Some(MemoryScope::Session),
        scope_id: Some(t.session),
        ..base.clone()
    });
    assert_eq!(scoped.len(), 2);
    assert!(!scoped.contains(&entity.id));

    // Tags.
    let tagged = db
        .memorg()
        .add_item_tags(note.id, &["seat".into()])
        .unwrap();
    assert_eq!(tagged.tags, ["prefs", "seat", "travel"]);
    let untagged = db
        .memorg()
        .remove_item_tags(note.id, &["travel".into()])
        .unwrap();
    assert_eq!(untagged.tags, ["prefs", "seat"]);

    // Context: ancestors up to the depth, children and siblings by importance.
    let ctx = db.memorg().item_context(note.id, 3, true).unwrap();
    assert_eq!(ctx.ancestors.len(), 1);
    assert_eq!(ctx.ancestors[0].id, t.session);
    let siblings: Vec<_> = ctx.siblings.iter().map(|i| i.id).collect();
    assert_eq!(siblings[0], doc.id);
    assert!(siblings.contains(&t.conversation));
    let ctx = db.memorg().item_context(t.vacuum, 2, false).unwrap();
    assert_eq!(ctx.ancestors.len(), 2);
    assert_eq!(ctx.ancestors[0].id, t.databases);

    // Update re-indexes; delete removes it.
    db.memorg()
        .update_memory_item(
            doc.id,
            Some("Kubernetes upgrade checklist"),
            None,
            None,
            None,
        )
        .unwrap();
    let hits = db.memorg().search_memory(&base).unwrap();
    let doc_hit = hits.iter().find(|h| h.item.id == doc.id);
    // No keyword match any more: at most a (weak) semantic neighbour, last.
    if let Some(h) = doc_hit {
        assert_eq!(h.match_type, MatchType::Semantic, "{h:?}");
        assert_eq!(hits.last().map(|l| l.item.id), Some(doc.id));
    }
    assert_eq!(db.memorg().delete(entity.id).unwrap(), 1);
    assert!(matches!(
        db.memorg().memory_item(entity.id),
        Err(Error::NotFound { .. })
    ));
    // Deleting the session removes its whole subtree, items included.
    let removed = db.memorg().delete(t.session).unwrap();
    assert_eq!(removed, 1 + 1 + 2 + 4 + 2);
    assert_eq!(db.memorg().memory_usage().unwrap().active_items, 0);
    assert!(db.check().unwrap().is_consistent());
}

#[test]
fn a_memory_item_under_a_caller_chosen_id() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let m = db.memorg();
    let id = uuid::Uuid::from_u128(0x1234);
    let item = m
        .create_memory_item_as(
            id,
            "named by the caller",
            "document",
            json!({"k": 1}),
            &["a".into()],
        )
        .unwrap();
    assert_eq!(item.id, id);
    assert_eq!(m.memory_item(id).unwrap().content, "named by the caller");
    // The id is taken: a conflict, and the first item is unchanged.
    let again = m.create_memory_item_as(id, "second", "document", json!({}), &[]);
    assert!(matches!(again, Err(Error::Conflict(_))), "{again:?}");
    assert_eq!(m.memory_item(id).unwrap().content, "named by the caller");
    // Bad input writes nothing.
    let other = uuid::Uuid::from_u128(0x5678);
    let empty = m.create_memory_item_as(other, "  ", "document", json!({}), &[]);
    assert!(
        matches!(empty, Err(Error::InvalidInput { .. })),
        "{empty:?}"
    );
    assert!(matches!(m.memory_item(other), Err(Error::NotFound { .. })));
}

#[test]
fn bulk_add_exchanges_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = build(&db, "alice");
    let pairs: Vec<(String, String)> = (0..50)
        .map(|i| {
            (
                format!("question number {i} about zebras"),
                format!("answer {i}"),
            )
        })
        .collect();
    let added = db.memorg().add_exchanges(t.databases, &pairs).unwrap();
    assert_eq!(added.len(), 50);
    assert_eq!(db.memorg().topic_exchanges(t.databases).unwrap().len(), 52);
    assert_eq!(db.count_record_vectors(EXCHANGE).unwrap(), 54);
    assert!(added.iter().all(|e| e.importance_score > 0.0));
    let r = db
        .memorg()
        .search_context(&ContextSearch::new("question number 17 zebras"))
        .unwrap();
    assert_eq!(r.results[0].exchange.id, added[17].id);
    // One blank message: nothing of the batch is written.
    let mut bad = pairs.clone();
    bad[30].0 = " ".into();
    let err = db.memorg().add_exchanges(t.databases, &bad).unwrap_err();
    assert!(err.to_string().contains("exchanges[30]"), "{err}");
    assert_eq!(db.memorg().topic_exchanges(t.databases).unwrap().len(), 52);
    assert!(matches!(
        db.memorg().add_exchanges(t.conversation, &pairs),
        Err(Error::NotFound { what: "topic", .. })
    ));
}

/// A chat-model double answering one fixed text (or failing).
struct Scripted(Option<&'static str>);

impl memdb::ChatModel for Scripted {
    fn complete(&self, _system: &str, _user: &str, _max_tokens: u32) -> memdb::Result<String> {
        self.0
            .map(str::to_string)
            .ok_or_else(|| Error::Embedding("the model is down".into()))
    }
    fn name(&self) -> String {
        "scripted".into()
    }
}

#[test]
fn query_entities_come_from_a_chat_model_when_given() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = build(&db, "alice");
    let q = ContextSearch::new("what did we decide about autovacuum");
    let plain = db.memorg().search_context(&q).unwrap();
    let model = Scripted(Some(
        r#"{"entities": [{"name": "Postgres", "type": "technology"}]}"#,
    ));
    let with = db.memorg().search_context_with(&q, Some(&model)).unwrap();
    let names: Vec<&str> = with
        .metadata
        .entities
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(names, ["Postgres"]);
    // The ranking does not depend on the entities.
    assert_eq!(with.results[0].exchange.id, t.vacuum);
    assert_eq!(with.results.len(), plain.results.len());
    // A failing or nonsensical model keeps the heuristic's entities.
    for bad in [Scripted(None), Scripted(Some("I cannot help with that"))] {
        let r = db.memorg().search_context_with(&q, Some(&bad)).unwrap();
        assert_eq!(r.metadata.entities, plain.metadata.entities);
    }
}
