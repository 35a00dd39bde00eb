//! memdb-server orchestration routes over crafted data: context assembly
//! within budget with citations, persisted summaries at each level, pruning
//! rules on crafted ages and importances, all-or-nothing prune execution,
//! label suggestions and message scores.

use serde_json::{Value, json};

use crate::server_util::*;

fn create(s: &TestServer, label: &str, importance: u8, days_ago: i64, text: &str) -> String {
    let ts = (chrono::Utc::now() - chrono::Duration::days(days_ago)).to_rfc3339();
    let r = s.send(
        "POST",
        "/api/v1/conversations",
        &json!({"label": label, "folder": "/o", "importance_score": importance,
                "messages": [{"role": "user", "content": text, "timestamp": ts}]}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()["id"].as_str().unwrap().to_string()
}

fn post(s: &TestServer, path: &str, body: Value) -> Value {
    let r = s.send("POST", path, &body);
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.json()
}

#[test]
fn orchestration_routes_over_crafted_data() {
    let s = TestServer::start(config());
    let old = create(&s, "Old", 2, 200, "an ancient note about gardening tools");
    let fresh = create(&s, "Fresh", 8, 0, "gardening plans for the spring tomatoes");
    let low = create(&s, "Low", 1, 1, "gardening trivia of little value");

    let ctx = post(
        &s,
        "/api/v1/context/assemble",
        json!({"query": "gardening", "preferred_labels": ["Fresh"], "context_budget": 100}),
    );
    assert!(ctx["token_count"].as_u64().unwrap() <= 85, "{ctx}");
    assert_eq!(ctx["target_tokens"], 85);
    let first = &ctx["messages"][0];
    // Importance 8, today, preferred label: ranks first.
    assert_eq!(first["conversation_id"], fresh.as_str(), "{ctx}");
    assert_eq!(first["metadata"]["citation"]["label"], "Fresh");
    let ctx = post(
        &s,
        "/api/v1/context/assemble",
        json!({"query": "gardening", "excluded_folders": ["/o"]}),
    );
    assert_eq!(ctx["messages"], json!([]), "{ctx}");

    let d = post(
        &s,
        "/api/v1/summarize",
        json!({"conversation_id": fresh, "level": "daily"}),
    );
    assert_eq!(d["persisted"], true);
    assert_eq!(d["level"], "daily");
    assert!(d["summary"].as_str().unwrap().contains("tomatoes"), "{d}");
    let m = post(
        &s,
        "/api/v1/summarize",
        json!({"conversation_id": fresh, "level": "monthly"}),
    );
    assert_eq!(m["level"], "monthly");
    assert_eq!(m["persisted"], true);
    let r = s.send(
        "POST",
        "/api/v1/summarize",
        &json!({"conversation_id": uuid::Uuid::new_v4(), "level": "daily"}),
    );
    assert_error(&r, 404);

    let report = post(
        &s,
        "/api/v1/prune/dry-run",
        json!({"threshold_days": 90, "importance_threshold": 3}),
    );
    let by_id = |id: &str| {
        report["suggestions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["conversation_id"] == id)
            .cloned()
    };
    let o = by_id(&old).expect("old suggested");
    // Sekha's preview: the label, then what archiving would put away.
    assert_eq!(
        o["preview"], "Old — user: an ancient note about gardening tools",
        "{o}"
    );
    assert!(
        ["archive", "delete"].contains(&o["recommendation"].as_str().unwrap()),
        "{o}"
    );
    assert!(
        o["rules"].as_array().unwrap().contains(&json!("age")),
        "{o}"
    );
    let l = by_id(&low).expect("low importance suggested");
    assert!(
        l["rules"]
            .as_array()
            .unwrap()
            .contains(&json!("importance")),
        "{l}"
    );
    assert!(by_id(&fresh).is_none_or(|f| f["recommendation"] == "keep"));

    // All or nothing: an unknown id fails the whole execution.
    let r = s.send(
        "POST",
        "/api/v1/prune/execute",
        &json!({"conversation_ids": [old, uuid::Uuid::new_v4()]}),
    );
    assert_error(&r, 404);
    assert_eq!(
        s.get(&format!("/api/v1/conversations/{old}")).json()["status"],
        "active"
    );
    let x = post(
        &s,
        "/api/v1/prune/execute",
        json!({"conversation_ids": [old]}),
    );
    assert_eq!(x["archived"], json!([old]));
    assert_eq!(
        s.get(&format!("/api/v1/conversations/{old}")).json()["status"],
        "archived"
    );
    // A read-only key cannot execute.
    let r = s.req(
        "POST",
        "/api/v1/prune/execute",
        Some(RO_KEY),
        Some(&json!({"conversation_ids": [low]}).to_string()),
    );
    assert_error(&r, 403);

    let labels = post(
        &s,
        "/api/v1/labels/suggest",
        json!({"conversation_id": fresh}),
    );
    assert!(
        !labels["suggestions"].as_array().unwrap().is_empty(),
        "{labels}"
    );
    let msg = s.get(&format!("/api/v1/conversations/{fresh}")).json()["messages"][0]["id"].clone();
    let score = post(&s, "/api/v1/messages/score", json!({"message_id": msg}));
    let v = score["importance_score"].as_f64().unwrap();
    assert!((1.0..=10.0).contains(&v), "{score}");
    let r = s.send(
        "POST",
        "/api/v1/messages/score",
        &json!({"message_id": uuid::Uuid::new_v4()}),
    );
    assert_error(&r, 404);

    let d = post(
        &s,
        "/mcp/tools/memory_prune",
        json!({"threshold_days": 30, "importance_threshold": 5.0}),
    );
    assert_eq!(d["success"], true);
    let ids: Vec<&str> = d["data"]["suggestions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["conversation_id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&low.as_str()), "{d}");
    let l = d["data"]["suggestions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["conversation_id"] == low.as_str())
        .unwrap();
    assert_eq!(
        l["preview"], "Low — user: gardening trivia of little value",
        "{l}"
    );
}
