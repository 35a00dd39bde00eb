//! Full-text search semantics: BM25 ranking, query syntax, filters, and
//! read-your-writes.

use memdb::*;

use crate::{conv, tmp};

/// Runs `q` and returns the hit texts in rank order.
fn check(db: &Memdb, q: TextQuery) -> Vec<String> {
    db.sekha()
        .search_text(&q)
        .unwrap_or_else(|e| panic!("query {:?} failed: {e}", q.query))
        .into_iter()
        .map(|h| h.message.content.text())
        .collect()
}

fn q(s: &str) -> TextQuery {
    TextQuery::new(s)
}

fn corpus(db: &Memdb) {
    conv(
        db,
        "rust",
        "/work/rust",
        &[
            "the borrow checker rejects this code",
            "lifetimes are tricky in rust",
        ],
    );
    conv(
        db,
        "cooking",
        "/home",
        &["bake the bread at high heat", "the bread was great"],
    );
    conv(
        db,
        "travel",
        "/home/trips",
        &["flights to lisbon are cheap in march"],
    );
}

#[test]
fn ranking_and_syntax() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    corpus(&db);
    // BM25: the shorter message with the term ranks first.
    assert_eq!(
        check(&db, q("bread")),
        vec!["the bread was great", "bake the bread at high heat"]
    );
    // Stemming: "baking" finds "bake".
    assert_eq!(check(&db, q("baking")), vec!["bake the bread at high heat"]);
    // Phrases.
    assert_eq!(
        check(&db, q("\"borrow checker\"")),
        vec!["the borrow checker rejects this code"]
    );
    assert!(check(&db, q("\"checker borrow\"")).is_empty());
    // Boolean operators.
    assert_eq!(
        check(&db, q("bread AND heat")),
        vec!["bake the bread at high heat"]
    );
    assert_eq!(check(&db, q("bread -heat")), vec!["the bread was great"]);
    assert_eq!(
        check(&db, q("bread AND NOT heat")),
        vec!["the bread was great"]
    );
    assert_eq!(check(&db, q("lisbon OR lifetimes")).len(), 2);
    // Prefix.
    assert_eq!(
        check(&db, q("lisb*")),
        vec!["flights to lisbon are cheap in march"]
    );
    assert_eq!(check(&db, q("Tric*")), vec!["lifetimes are tricky in rust"]);
    // Field filters in the query.
    assert_eq!(check(&db, q("bread AND label:cooking")).len(), 2);
    assert!(check(&db, q("bread AND label:rust")).is_empty());
    assert_eq!(check(&db, q("role:user AND march")).len(), 1);
    // Apostrophes inside words are text, not quotes.
    conv(&db, "chat", "/", &["what's the plan for today's lunch"]);
    assert_eq!(
        check(&db, q("what's the plan"))[0],
        "what's the plan for today's lunch"
    );
    assert_eq!(check(&db, q("today's")).len(), 1);
    // Scores are positive and descending.
    let hits = db.sekha().search_text(&q("bread OR rust")).unwrap();
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(hits.iter().all(|h| h.score > 0.0));
}

#[test]
fn filters_scope_results() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    corpus(&db);
    let home = conv(&db, "misc", "/homework", &["bread for the homework party"]);
    let with = |f: Filter| {
        let mut t = q("bread");
        t.filter = f;
        check(&db, t)
    };
    assert_eq!(
        with(Filter {
            folder: Some("/home".into()),
            ..Default::default()
        })
        .len(),
        2,
        "/homework is not under /home"
    );
    assert_eq!(
        with(Filter {
            folder: Some("/homework".into()),
            ..Default::default()
        })
        .len(),
        1
    );
    assert_eq!(
        with(Filter {
            label: Some("misc".into()),
            ..Default::default()
        })
        .len(),
        1
    );
    db.sekha().archive(home.conversation.id).unwrap();
    assert_eq!(
        with(Filter {
            status: Some(Status::Archived),
            ..Default::default()
        }),
        vec!["bread for the homework party"]
    );
    assert_eq!(
        with(Filter {
            status: Some(Status::Active),
            ..Default::default()
        })
        .len(),
        2
    );
    db.sekha().pin(home.conversation.id).unwrap();
    assert_eq!(
        with(Filter {
            pinned: Some(true),
            ..Default::default()
        })
        .len(),
        1
    );
    assert_eq!(
        with(Filter {
            min_importance: Some(6),
            ..Default::default()
        })
        .len(),
        1
    );
    assert_eq!(
        with(Filter {
            max_importance: Some(5),
            ..Default::default()
        })
        .len(),
        2
    );
    let future = chrono::Utc::now() + chrono::Duration::hours(1);
    assert!(
        with(Filter {
            since: Some(future),
            ..Default::default()
        })
        .is_empty()
    );
    assert_eq!(
        with(Filter {
            until: Some(future),
            ..Default::default()
        })
        .len(),
        3
    );
    let mut in_conv = q("bread");
    in_conv.conversation_id = Some(home.conversation.id);
    assert_eq!(check(&db, in_conv).len(), 1);
    let mut by_role = q("bread");
    by_role.role = Some("assistant".into());
    assert!(check(&db, by_role).is_empty());
}

#[test]
fn hits_carry_conversation_scope_and_follow_updates() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    let c = conv(&db, "before", "/old", &["zebra crossing"]);
    let h = &db.sekha().search_text(&q("zebra")).unwrap()[0];
    assert_eq!((h.label.as_str(), h.folder.as_str()), ("before", "/old"));
    assert_eq!(h.message.conversation_id, c.conversation.id);
    db.sekha()
        .update_conversation(
            c.conversation.id,
            ConversationUpdate {
                label: Some("after".into()),
                folder: Some("/new".into()),
                ..Default::default()
            },
        )
        .unwrap();
    let h = &db.sekha().search_text(&q("zebra")).unwrap()[0];
    assert_eq!((h.label.as_str(), h.folder.as_str()), ("after", "/new"));
    let mut scoped = q("zebra");
    scoped.filter.folder = Some("/old".into());
    assert!(
        check(&db, scoped).is_empty(),
        "the index follows a folder change"
    );
    let mut scoped = q("zebra");
    scoped.filter.label = Some("after".into());
    assert_eq!(check(&db, scoped).len(), 1);
}

#[test]
fn paging_and_read_your_writes() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    for i in 0..25 {
        let c = conv(&db, "p", "/", &[&format!("needle number {i}")]);
        // Every write is visible to the very next search.
        let hits = db
            .sekha()
            .search_text(&q(&format!("\"number {i}\"")))
            .unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].message.conversation_id, c.conversation.id);
    }
    let mut all = Vec::new();
    for page in 0..3 {
        let mut t = q("needle");
        t.limit = 10;
        t.offset = page * 10;
        all.extend(check(&db, t));
    }
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 25);
}

/// Searches racing with label changes never leave a stale label cached
/// (the row cache's epoch check): once the writer is done, every search
/// shows the last label, and a deleted conversation's hits are gone.
#[test]
fn cached_hits_never_outlive_a_concurrent_update() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    let c = conv(&db, "label 0", "/", &["quokka sighting report"]);
    let id = c.conversation.id;
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                while !done.load(std::sync::atomic::Ordering::Acquire) {
                    let hits = db.sekha().search_text(&q("quokka")).unwrap();
                    assert_eq!(hits.len(), 1);
                    assert!(hits[0].label.starts_with("label "));
                }
            });
        }
        for i in 1..=200 {
            db.sekha()
                .update_conversation(
                    id,
                    ConversationUpdate {
                        label: Some(format!("label {i}")),
                        ..Default::default()
                    },
                )
                .unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Release);
    });
    for _ in 0..3 {
        assert_eq!(
            db.sekha().search_text(&q("quokka")).unwrap()[0].label,
            "label 200"
        );
    }
    let other = conv(&db, "other", "/", &["quokka in the other one"]);
    db.sekha().delete_conversation(id).unwrap();
    let hits = db.sekha().search_text(&q("quokka")).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].message.conversation_id, other.conversation.id);
}

/// A conversation deleted and imported again under the same ids, with an
/// edited message and label, is found with its new text and label: the
/// row cache dropped the deleted conversation's cached messages.
#[test]
fn cached_rows_follow_delete_and_reimport_of_the_same_ids() {
    let d = tmp();
    let db = Memdb::open(d.path()).unwrap();
    let c = conv(&db, "original", "/", &["wombat burrow depth"]);
    let id = c.conversation.id;
    let hit = &db.sekha().search_text(&q("wombat")).unwrap()[0];
    assert_eq!(hit.label, "original");
    let mut export = db.sekha().export(&Selection::One(id)).unwrap();
    db.sekha().delete_conversation(id).unwrap();
    assert!(db.sekha().search_text(&q("wombat")).unwrap().is_empty());
    let item = &mut export.conversations[0];
    item.conversation.label = "restored".into();
    item.messages[0].content = Content::Text("wombat burrow width".into());
    db.sekha()
        .import(export, ImportOptions::default(), &mut |_, _| {})
        .unwrap();
    let hits = db.sekha().search_text(&q("wombat")).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].message.id, c.messages[0].id, "same message id");
    assert_eq!(hits[0].label, "restored");
    assert_eq!(hits[0].message.content.text(), "wombat burrow width");
}
