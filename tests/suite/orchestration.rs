//! Orchestration through the public API, with request bodies exactly as the
//! Sekha SDK (`sekha-python-sdk` 0.2.0) and MCP bridge send them: context
//! assembly, summaries, pruning, label suggestions and importance scores.

use chrono::{DateTime, Duration, Utc};
use memdb::Systems;
use memdb::{
    ContextRequest, Error, Extractive, Memdb, NewConversation, NewMessage, PruneAction,
    PruneRequest, Recommendation, Status, SummarizeRequest, SummaryLevel, TokenCounter,
};
use serde_json::json;
use uuid::Uuid;

use crate::tmp;

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-05-01T12:00:00Z")
        .expect("timestamp")
        .with_timezone(&Utc)
}

fn aged(db: &Memdb, label: &str, folder: &str, importance: u8, days: i64, texts: &[&str]) -> Uuid {
    let msgs = texts
        .iter()
        .map(|t| {
            let mut m = NewMessage::new("user", *t);
            m.timestamp = Some(now() - Duration::days(days));
            m
        })
        .collect();
    let mut n = NewConversation::new(label, msgs).in_folder(folder);
    n.importance_score = Some(importance);
    db.sekha()
        .create_conversation(n)
        .expect("create")
        .conversation
        .id
}

#[test]
fn sdk_bodies_deserialize_into_engine_requests() {
    // SekhaClient.assemble_context sends exactly these four fields.
    let r: ContextRequest = serde_json::from_value(json!({
        "query": "q", "preferred_labels": [], "context_budget": 4000, "excluded_folders": []
    }))
    .expect("context body");
    assert_eq!(r.context_budget, 4000);
    assert_eq!(r.token_counter, TokenCounter::Estimate);
    // Sekha's docs give the budget a default of 4000.
    let r: ContextRequest = serde_json::from_value(json!({"query": "q"})).expect("minimal");
    assert_eq!(r.context_budget, 4000);
    let r: ContextRequest =
        serde_json::from_value(json!({"query": "q", "token_counter": "cl100k_base"}))
            .expect("exact");
    assert_eq!(r.token_counter, TokenCounter::Cl100kBase);
    // summarize: {conversation_id, level}.
    let id = Uuid::new_v4();
    let s: SummarizeRequest =
        serde_json::from_value(json!({"conversation_id": id, "level": "weekly"})).expect("summary");
    assert_eq!(s.level, "weekly");
    // prune_dry_run: {threshold_days}; the MCP tool adds importance_threshold.
    let p: PruneRequest = serde_json::from_value(json!({"threshold_days": 30})).expect("prune");
    assert_eq!(p.threshold_days, 30);
    let p: PruneRequest =
        serde_json::from_value(json!({"threshold_days": 30, "importance_threshold": 5.0}))
            .expect("mcp prune");
    assert_eq!(p.importance_threshold, Some(5.0));
    let p: PruneRequest = serde_json::from_value(json!({})).expect("defaults");
    assert_eq!(p.threshold_days, 90);
}

#[test]
fn context_summaries_and_pruning_end_to_end() {
    let dir = tmp();
    let db = Memdb::open(dir.path()).expect("open");
    let rust = aged(
        &db,
        "Rust",
        "/work/rust",
        6,
        1,
        &[
            "Lifetimes tie a reference to the scope it borrows from.",
            "The borrow checker rejects two mutable borrows at once.",
        ],
    );
    let old = aged(&db, "Shopping", "/home", 1, 120, &["Buy milk and eggs."]);
    let pinned = aged(
        &db,
        "About me",
        "/me",
        10,
        200,
        &["My name is Ada and I prefer Rust."],
    );

    // Context: the query's conversation and the pinned one, cited, within budget.
    let mut req = ContextRequest::new("borrow checker lifetimes");
    req.preferred_labels = vec!["Rust".into()];
    req.excluded_folders = vec!["/home".into()];
    req.context_budget = 60;
    req.now = Some(now());
    let ctx = db.sekha().assemble_context(&req).expect("assemble");
    assert_eq!(ctx.target_tokens, 51);
    assert!(ctx.token_count <= 51);
    assert!(ctx.conversation_ids.contains(&pinned));
    assert!(ctx.conversation_ids.contains(&rust));
    assert!(!ctx.conversation_ids.contains(&old));
    for m in &ctx.messages {
        assert_eq!(
            m.metadata["citation"]["conversation_id"],
            json!(m.conversation_id)
        );
        assert!(m.metadata["citation"]["label"].is_string());
    }
    // The JSON carries the SDK's ContextAssembly fields.
    let v = serde_json::to_value(&ctx).expect("serialize");
    for f in ["messages", "token_count", "conversation_ids", "labels"] {
        assert!(v.get(f).is_some(), "{f}");
    }

    // Summaries: persisted, listed, served from a lower level.
    let s = db
        .sekha()
        .summarize(
            &SummarizeRequest {
                conversation_id: rust,
                level: "daily".into(),
                now: Some(now()),
            },
            &Extractive,
        )
        .expect("daily");
    assert!(s.persisted);
    assert_eq!(s.source_count, 2);
    let served = db
        .sekha()
        .latest_summary(rust, SummaryLevel::Weekly)
        .expect("served");
    assert_eq!(served.served_level, SummaryLevel::Daily);
    assert_eq!(served.summary.id, s.id);
    let bad = db.sekha().summarize(
        &SummarizeRequest {
            conversation_id: rust,
            level: "hourly".into(),
            now: None,
        },
        &Extractive,
    );
    assert!(matches!(bad, Err(Error::InvalidInput { ref field, .. }) if field == "level"));
    assert_eq!(
        db.sekha().list_summaries(rust, None).expect("list").len(),
        1
    );

    // Pruning: the old unimportant one is to archive, the pinned one kept.
    let report = db
        .sekha()
        .prune_suggestions(&PruneRequest {
            threshold_days: 90,
            now: Some(now()),
            ..PruneRequest::default()
        })
        .expect("prune");
    let rec = |id| {
        report
            .suggestions
            .iter()
            .find(|s| s.conversation_id == id)
            .map(|s| s.recommendation)
    };
    assert_eq!(rec(old), Some(Recommendation::Archive));
    assert_eq!(rec(pinned), Some(Recommendation::Keep));
    assert_eq!(rec(rust), None);
    let done = db
        .sekha()
        .prune_execute(&[old], PruneAction::Archive)
        .expect("execute");
    assert_eq!(done.archived, vec![old]);
    assert_eq!(
        db.sekha().get_conversation(old).expect("get").status,
        Status::Archived
    );

    // Labels and importance.
    let labels = db.sekha().suggest_labels(rust, None).expect("labels");
    assert!(labels.suggestions.iter().all(|s| s.label != "Rust"));
    assert!(!labels.suggestions.is_empty());
    let msg = db
        .sekha()
        .get_conversation_with_messages(rust)
        .expect("get")
        .messages[0]
        .id;
    let score = db.sekha().score_message(msg, None).expect("score");
    assert!((1.0..=10.0).contains(&score.importance_score));
    assert_eq!(score.message_id, Some(msg));
}

/// `auto_label` (issue 19): the top suggestion is applied at or above the
/// threshold, with Sekha's folder rule when asked (`/work` for a label with
/// a `:`, else `/personal`); under it nothing is written; a threshold
/// outside 0..=1 is refused.
#[test]
fn auto_label_applies_the_top_suggestion_with_sekhas_folder_rule() {
    let d = tmp();
    let db = memdb::Memdb::open(d.path()).expect("open");
    crate::conv(
        &db,
        "Rust: borrow checker",
        "/code",
        &["the rust borrow checker and lifetimes"],
    );
    let c = crate::conv(
        &db,
        "untitled",
        "/inbox",
        &["why does the rust borrow checker reject this borrow"],
    );
    let id = c.conversation.id;
    let top = db
        .sekha()
        .suggest_labels(id, None)
        .expect("suggest")
        .top_suggestion
        .expect("a suggestion");
    assert_eq!(top.label, "Rust: borrow checker");

    let kept = db
        .sekha()
        .auto_label(id, None, 1.0, true)
        .expect("auto label");
    assert!(!kept.applied, "{kept:?}");
    assert_eq!(db.sekha().get_conversation(id).unwrap().label, "untitled");
    assert!(
        kept.notes.iter().any(|n| n.contains("unchanged")),
        "{kept:?}"
    );

    let a = db
        .sekha()
        .auto_label(id, None, 0.5, true)
        .expect("auto label");
    assert!(a.applied, "{a:?}");
    assert_eq!(
        (a.label.as_str(), a.folder.as_str()),
        ("Rust: borrow checker", "/work")
    );
    let stored = db.sekha().get_conversation(id).unwrap();
    assert_eq!((stored.label, stored.folder), (a.label, a.folder));
    assert_eq!(memdb::auto_label_folder("Kyoto trip"), "/personal");

    assert!(matches!(
        db.sekha().auto_label(id, None, 1.5, false),
        Err(memdb::Error::InvalidInput { .. })
    ));
}
