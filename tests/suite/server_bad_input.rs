//! memdb-server bad input: malformed JSON, wrong types, unknown ids, bad
//! ids, out-of-range limits, unknown summary levels, oversize fields: every
//! one a 4xx `{error, code}` answer that writes nothing.

use serde_json::json;

use crate::server_util::*;

#[test]
fn bad_requests_are_4xx_json_and_write_nothing() {
    let s = TestServer::start(config());
    let r = s.send(
        "POST",
        "/api/v1/conversations",
        &json!({"label": "Keep", "messages": [{"role": "user", "content": "kept message"}]}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["id"].as_str().unwrap().to_string();
    let before = s.get(&format!("/api/v1/conversations/{id}")).json();
    let unknown = uuid::Uuid::new_v4();

    let cases: Vec<(&str, String, Option<String>, u16)> = vec![
        // Malformed JSON and wrong types.
        ("POST", "/api/v1/conversations".into(), Some("{\"label\": ".into()), 400),
        ("POST", "/api/v1/conversations".into(), Some(r#"{"label": 5, "messages": []}"#.into()), 400),
        ("POST", "/api/v1/conversations".into(), Some(r#"{"label": "x"}"#.into()), 400),
        ("POST", "/api/v1/conversations".into(), Some(r#"{"label": "x", "messages": []}"#.into()), 400),
        ("POST", "/api/v1/conversations".into(), Some(r#"{"label": "x", "messages": [{"role": "user", "content": 7}]}"#.into()), 400),
        ("POST", "/api/v1/conversations".into(), Some(r#"{"label": "x", "messages": [{"role": "user", "content": "a", "timestamp": "yesterday"}]}"#.into()), 400),
        ("POST", "/api/v1/conversations".into(), Some(r#"{"label": "x", "importance_score": 11, "messages": [{"role": "user", "content": "a"}]}"#.into()), 400),
        ("POST", "/api/v1/conversations".into(), Some(r#"{"label": "x", "folder": "no-slash", "messages": [{"role": "user", "content": "a"}]}"#.into()), 400),
        ("POST", "/api/v1/conversations".into(), Some(json!({"label": "l".repeat(600), "messages": [{"role": "user", "content": "a"}]}).to_string()), 400),
        ("POST", "/api/v1/conversations".into(), Some(r#"[1,2]"#.into()), 400),
        // Ids: malformed (400) and unknown (404).
        ("GET", "/api/v1/conversations/not-a-uuid".into(), None, 400),
        ("GET", format!("/api/v1/conversations/{unknown}"), None, 404),
        ("PUT", format!("/api/v1/conversations/{unknown}/pin"), None, 404),
        ("PUT", format!("/api/v1/conversations/{unknown}/archive"), None, 404),
        ("PUT", format!("/api/v1/conversations/{unknown}/folder"), Some(r#"{"folder": "/x"}"#.into()), 404),
        ("DELETE", format!("/api/v1/conversations/{unknown}"), None, 404),
        ("PUT", format!("/api/v1/conversations/{id}/label"), Some(r#"{"label": ""}"#.into()), 400),
        ("PUT", format!("/api/v1/conversations/{id}/folder"), Some(r#"{"folder": "/a/../b"}"#.into()), 400),
        ("PUT", format!("/api/v1/conversations/{id}/label"), Some(r#"{"folder": "/a"}"#.into()), 400),
        // Limits and queries.
        ("POST", "/api/v1/query".into(), Some(r#"{"query": "kept", "limit": 0}"#.into()), 400),
        ("POST", "/api/v1/query".into(), Some(r#"{"query": "kept", "limit": 100000}"#.into()), 400),
        ("POST", "/api/v1/query".into(), Some(r#"{"query": "kept", "limit": -1}"#.into()), 400),
        ("POST", "/api/v1/query".into(), Some(r#"{"query": ""}"#.into()), 400),
        ("POST", "/api/v1/query".into(), Some(r#"{"query": "kept", "filters": {"colour": "red"}}"#.into()), 400),
        ("POST", "/api/v1/query".into(), Some(r#"{"query": "kept", "filters": {"status": "gone"}}"#.into()), 400),
        ("POST", "/api/v1/query".into(), Some(r#"{"query": "kept", "mode": "psychic"}"#.into()), 400),
        ("POST", "/api/v1/query".into(), Some(json!({"query": "q".repeat(9000)}).to_string()), 400),
        ("POST", "/api/v1/search/fts".into(), Some(r#"{"query": "\"unbalanced"}"#.into()), 400),
        ("POST", "/api/v1/search/fts".into(), Some(r#"{"query": "kept", "limit": 1001}"#.into()), 400),
        ("GET", "/api/v1/conversations?page_size=0".into(), None, 400),
        ("GET", "/api/v1/conversations?page_size=5000".into(), None, 400),
        ("GET", "/api/v1/conversations?page=0".into(), None, 400),
        ("GET", "/api/v1/conversations?pinned=maybe".into(), None, 400),
        ("GET", "/api/v1/export?format=pdf".into(), None, 400),
        // Summary levels and orchestration bodies.
        ("POST", "/api/v1/summarize".into(), Some(json!({"conversation_id": id, "level": "hourly"}).to_string()), 400),
        ("POST", "/api/v1/summarize".into(), Some(r#"{"conversation_id": "nope", "level": "daily"}"#.into()), 400),
        ("POST", "/api/v1/prune/execute".into(), Some(r#"{"conversation_ids": ["nope"]}"#.into()), 400),
        ("POST", "/api/v1/messages/score".into(), Some(r#"{}"#.into()), 400),
        // Content type, routes, methods.
        ("GET", "/api/v1/nothing-here".into(), None, 404),
        ("PATCH", "/api/v1/query".into(), None, 405),
    ];
    for (method, path, body, status) in cases {
        let r = s.req(method, &path, Some(KEY), body.as_deref());
        let msg = assert_error(&r, status);
        assert!(!msg.contains("src/"), "{msg}");
    }
    // A body without a JSON content type.
    let r = raw(
        s.addr,
        "POST",
        "/api/v1/query",
        &[("Authorization".into(), format!("Bearer {KEY}"))],
        Some(br#"{"query": "kept"}"#),
    );
    assert_error(&r, 415);

    // MCP tools: envelope errors with the status.
    for (tool, body, status) in [
        (
            "memory_store",
            json!({"label": "x", "folder": "/a", "messages": []}),
            400,
        ),
        (
            "memory_store",
            json!({"label": "x", "folder": "/a", "messages": [{"role": "robot", "content": "a"}]}),
            400,
        ),
        ("memory_search", json!({"query": "kept", "limit": 51}), 400),
        ("memory_search", json!({"query": "q".repeat(1001)}), 400),
        (
            "memory_search",
            json!({"query": "kept", "filter_labels": ["a", "b"]}),
            400,
        ),
        ("memory_update", json!({"conversation_id": id}), 400),
        (
            "memory_update",
            json!({"conversation_id": id, "importance_score": 12.0}),
            400,
        ),
        (
            "memory_update",
            json!({"conversation_id": unknown, "label": "y"}),
            404,
        ),
        ("memory_get_context", json!({"conversation_id": "zz"}), 400),
        (
            "memory_get_context",
            json!({"conversation_id": unknown}),
            404,
        ),
        (
            "memory_export",
            json!({"conversation_id": id, "format": "pdf"}),
            400,
        ),
        ("memory_prune", json!({"threshold_days": 0}), 400),
        ("memory_prune", json!({"threshold_days": 400}), 400),
        ("memory_stats", json!({"folder": 3}), 400),
    ] {
        let r = s.send("POST", &format!("/mcp/tools/{tool}"), &body);
        assert_eq!(r.status, status, "{tool} {body}: {}", r.text());
        let v = r.json();
        assert_eq!(v["success"], false, "{v}");
        assert_eq!(v["code"], status);
        assert!(v["data"].is_null());
        assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()));
    }

    // Nothing changed.
    assert_eq!(conversation_count(&s), 1);
    assert_eq!(s.get(&format!("/api/v1/conversations/{id}")).json(), before);
}
