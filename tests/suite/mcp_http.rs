//! Streamable HTTP MCP at `/mcp` on memdb-server: the official Python SDK
//! end to end (read-write and read-only keys), and the same bearer auth and
//! rate limiting as the REST routes.

use crate::server_e2e::run_checks;
use crate::server_util::{KEY, RO_KEY, TestServer, config, raw};
use memdb::Systems;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"memdb-tests","version":"1"}}}"#;

fn post_mcp(s: &TestServer, auth: Option<&str>) -> crate::server_util::Resp {
    let mut headers = vec![
        ("Content-Type".to_string(), "application/json".to_string()),
        (
            "Accept".to_string(),
            "application/json, text/event-stream".to_string(),
        ),
    ];
    if let Some(a) = auth {
        headers.push(("Authorization".to_string(), a.to_string()));
    }
    raw(s.addr, "POST", "/mcp", &headers, Some(INIT.as_bytes()))
}

#[test]
fn mcp_endpoint_needs_a_valid_bearer_key() {
    let s = TestServer::start(config());
    let none = post_mcp(&s, None);
    assert_eq!(none.status, 401, "{}", none.text());
    assert_eq!(none.json()["error"], "missing authorization header");
    let wrong = post_mcp(&s, Some("Bearer not-the-key-0123456789abcdefghijklmnop"));
    assert_eq!(wrong.status, 401, "{}", wrong.text());
    assert_eq!(wrong.json()["error"], "invalid API key");
    let basic = post_mcp(&s, Some(&format!("Basic {KEY}")));
    assert_eq!(basic.status, 401, "{}", basic.text());

    let ok = post_mcp(&s, Some(&format!("Bearer {KEY}")));
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert!(ok.header("mcp-session-id").is_some(), "{:?}", ok.headers);
    assert!(ok.text().contains(r#""name":"memdb""#), "{}", ok.text());
    // A read-only key may open a session (its write tools are refused).
    let ro = post_mcp(&s, Some(&format!("Bearer {RO_KEY}")));
    assert_eq!(ro.status, 200, "{}", ro.text());
    s.stop();
}

#[test]
fn mcp_endpoint_is_rate_limited_like_rest() {
    let mut c = config();
    c.rate_limit_per_second = 0.01;
    c.rate_limit_burst = 2;
    let s = TestServer::start(c);
    let auth = format!("Bearer {KEY}");
    assert_eq!(post_mcp(&s, Some(&auth)).status, 200);
    assert_eq!(post_mcp(&s, Some(&auth)).status, 200);
    let limited = post_mcp(&s, Some(&auth));
    assert_eq!(limited.status, 429, "{}", limited.text());
    assert!(limited.header("retry-after").is_some());
    s.stop();
}

#[test]
fn official_python_sdk_over_streamable_http() {
    let mut c = config();
    // Sekha's client compares the tool list with sekha-mcp's seven.
    c.mcp_tools = "sekha".into();
    let s = TestServer::start(c);
    let url = format!("http://{}/mcp", s.addr);
    run_checks("mcp_e2e.py", |c| {
        c.args(["http", &url])
            .env("MEMDB_KEY", KEY)
            .env("MEMDB_RO_KEY", RO_KEY)
    });
    let dir = s.stop();
    let db = memdb::Memdb::open(dir.path()).expect("reopen");
    let stats = db.sekha().stats(&memdb::Filter::default()).expect("stats");
    // The read-only session's memory_store wrote nothing.
    assert_eq!(stats.total_conversations, 2, "{stats:?}");
}

#[test]
fn official_python_sdk_calls_every_memorg_tool_over_streamable_http() {
    let mut c = config();
    c.mcp_tools = "memorg".into();
    let hashing = std::sync::Arc::new(memdb::Hashing::new(64).expect("hashing"));
    let s = TestServer::start_with(c, memdb::Config::with_embedder(hashing));
    let url = format!("http://{}/mcp", s.addr);
    run_checks("memorg_mcp_e2e.py", |c| {
        c.args(["http", &url])
            .env("MEMDB_KEY", KEY)
            .env("MEMDB_RO_KEY", RO_KEY)
    });
    let dir = s.stop();
    let db = memdb::Memdb::open(dir.path()).expect("reopen");
    assert_eq!(db.memorg().memory_usage().expect("usage").active_items, 6);
}
