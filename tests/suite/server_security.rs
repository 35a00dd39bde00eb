//! memdb-server security: bearer auth (401/403 JSON, several keys, read-only
//! keys), rate limiting (429 + Retry-After), CORS from configuration, body
//! limits (413), and no internal paths in errors.

use serde_json::json;

use crate::server_util::*;

fn store_body() -> serde_json::Value {
    json!({"label": "Auth", "folder": "/t", "messages": [{"role": "user", "content": "hello auth"}]})
}

#[test]
fn every_route_but_health_needs_a_valid_key() {
    let s = TestServer::start(config());
    let r = s.req("GET", "/health", None, None);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["status"], "healthy");
    for (method, path) in [
        ("GET", "/api/v1/conversations"),
        ("GET", "/api/v1/conversations/count"),
        ("POST", "/api/v1/query"),
        ("GET", "/metrics"),
        ("GET", "/openapi.json"),
        ("POST", "/mcp/tools/memory_stats"),
        ("POST", "/api/v1/conversations"),
    ] {
        let r = s.req(method, path, None, Some("{}"));
        let msg = assert_error(&r, 401);
        assert!(msg.contains("missing"), "{msg}");
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
        let wrong = format!("{KEY}x");
        let r = s.req(method, path, Some(&wrong), Some("{}"));
        assert!(assert_error(&r, 401).contains("invalid API key"));
        let r = s.raw_auth(method, path, &format!("Basic {KEY}"));
        assert!(assert_error(&r, 401).contains("format"));
    }
    // Nothing was written by the refused requests.
    assert_eq!(conversation_count(&s), 0);
}

#[test]
fn several_keys_and_read_only_keys() {
    let s = TestServer::start(config());
    let body = store_body().to_string();
    let r = s.req("POST", "/api/v1/conversations", Some(KEY2), Some(&body));
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["id"].as_str().unwrap().to_string();
    // The read-only key reads...
    let r = s.req(
        "GET",
        &format!("/api/v1/conversations/{id}"),
        Some(RO_KEY),
        None,
    );
    assert_eq!(r.status, 200);
    let r = s.req(
        "POST",
        "/api/v1/query",
        Some(RO_KEY),
        Some(r#"{"query":"hello"}"#),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    // ...and every write answers 403, changing nothing.
    for (method, path, body) in [
        ("POST", "/api/v1/conversations".to_string(), body.clone()),
        (
            "PUT",
            format!("/api/v1/conversations/{id}/pin"),
            String::new(),
        ),
        (
            "PUT",
            format!("/api/v1/conversations/{id}/label"),
            r#"{"label":"x"}"#.into(),
        ),
        (
            "DELETE",
            format!("/api/v1/conversations/{id}"),
            String::new(),
        ),
        ("POST", "/mcp/tools/memory_store".into(), body.clone()),
        (
            "POST",
            "/mcp/tools/memory_update".into(),
            json!({"conversation_id": id, "label": "y"}).to_string(),
        ),
        ("POST", "/api/v1/rebuild-embeddings".into(), String::new()),
    ] {
        let r = s.req(method, &path, Some(RO_KEY), Some(&body));
        assert!(
            assert_error(&r, 403).contains("read-only"),
            "{method} {path}"
        );
    }
    let r = s.get(&format!("/api/v1/conversations/{id}"));
    let c = r.json();
    assert_eq!(c["label"], "Auth");
    assert_eq!(c["pinned"], false);
    assert_eq!(conversation_count(&s), 1);
}

#[test]
fn rate_limit_answers_429_with_retry_after() {
    let mut c = config();
    c.rate_limit_per_second = 0.5;
    c.rate_limit_burst = 3;
    let s = TestServer::start(c);
    for _ in 0..3 {
        assert_eq!(s.get("/api/v1/conversations/count").status, 200);
    }
    let r = s.get("/api/v1/conversations/count");
    assert_error(&r, 429);
    let wait: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=2).contains(&wait), "{wait}");
    // X-Forwarded-For from an untrusted peer does not buy a new bucket.
    let r = raw(
        s.addr,
        "GET",
        "/api/v1/conversations/count",
        &[
            ("Authorization".into(), format!("Bearer {KEY}")),
            ("X-Forwarded-For".into(), "203.0.113.7".into()),
        ],
        None,
    );
    assert_error(&r, 429);
}

#[test]
fn forwarded_for_names_the_client_behind_a_trusted_proxy() {
    let mut c = config();
    c.rate_limit_per_second = 0.1;
    c.rate_limit_burst = 1;
    c.trusted_proxies = vec!["127.0.0.1".parse().unwrap()];
    let s = TestServer::start(c);
    let via = |client: &str| {
        raw(
            s.addr,
            "GET",
            "/api/v1/conversations/count",
            &[
                ("Authorization".into(), format!("Bearer {KEY}")),
                ("X-Forwarded-For".into(), client.into()),
            ],
            None,
        )
        .status
    };
    assert_eq!(via("198.51.100.1"), 200);
    assert_eq!(via("198.51.100.1"), 429);
    // Another client behind the same proxy has its own bucket.
    assert_eq!(via("198.51.100.2"), 200);
}

#[test]
fn cors_is_off_by_default_and_follows_configuration() {
    let s = TestServer::start(config());
    let origin = [("Origin".to_string(), "https://app.example".to_string())];
    let r = raw(s.addr, "GET", "/health", &origin, None);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("access-control-allow-origin"), None);

    let mut c = config();
    c.cors_origins = vec!["https://app.example".into()];
    let s = TestServer::start(c);
    let preflight = [
        ("Origin".to_string(), "https://app.example".to_string()),
        (
            "Access-Control-Request-Method".to_string(),
            "POST".to_string(),
        ),
        (
            "Access-Control-Request-Headers".to_string(),
            "authorization,content-type".to_string(),
        ),
    ];
    let r = raw(s.addr, "OPTIONS", "/api/v1/query", &preflight, None);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    let other = [("Origin".to_string(), "https://evil.example".to_string())];
    let r = raw(s.addr, "GET", "/health", &other, None);
    assert_eq!(r.header("access-control-allow-origin"), None);
}

#[test]
fn oversize_bodies_are_413_and_write_nothing() {
    let mut c = config();
    c.body_limit = 4096;
    let s = TestServer::start(c);
    let big = json!({"label": "Big", "messages": [{"role": "user", "content": "x".repeat(8000)}]});
    let r = s.send("POST", "/api/v1/conversations", &big);
    assert_error(&r, 413);
    let r = s.send("POST", "/mcp/tools/memory_store", &big);
    assert_eq!(r.status, 413);
    assert_eq!(r.json()["success"], false);
    assert_eq!(conversation_count(&s), 0);
}

impl TestServer {
    fn raw_auth(&self, method: &str, path: &str, auth: &str) -> Resp {
        raw(
            self.addr,
            method,
            path,
            &[("Authorization".to_string(), auth.to_string())],
            None,
        )
    }
}
