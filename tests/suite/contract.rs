//! The server's contract tables (`memdb_server::contract`) against a running
//! memdb-server: every declared route answers over HTTP with its declared
//! access, `/openapi.json` documents exactly the declared operations, and
//! the native MCP endpoint lists exactly the declared tools and refuses the
//! write tools to a read-only key.

use memdb_server::contract::{self, Permission, TOOL_METHOD};
use serde_json::{Value, json};

use crate::server_util::*;

/// Every (method, path, permission) the tables declare, tools included.
fn declared() -> Vec<(&'static str, String, Permission)> {
    contract::ROUTES
        .iter()
        .map(|r| (r.method.as_str(), r.path.to_string(), r.permission))
        .chain(
            contract::TOOLS
                .iter()
                .map(|t| (TOOL_METHOD.as_str(), t.path(), t.access().into())),
        )
        .collect()
}

/// Whether an answer came from the route's handler, not from auth or the
/// fallbacks.
fn reached(r: &Resp) -> bool {
    let body: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
    !matches!(r.status, 401 | 403 | 405) && body["error"] != "no such route"
}

#[test]
fn every_declared_route_answers_with_its_declared_access() {
    let s = TestServer::start(config());
    let r = s.send(
        "POST",
        "/api/v1/conversations",
        &json!({"label": "Contract", "messages": [{"role": "user", "content": "routes"}]}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["id"].as_str().unwrap().to_string();
    let body = |method: &str| (method == "POST" || method == "PUT").then_some("{}");
    let mut writes = 0;
    for (method, path, permission) in declared() {
        let path = path.replace("{id}", &id);
        let what = format!("{method} {path}");
        if permission == Permission::Public {
            let r = s.req(method, &path, None, body(method));
            assert_eq!(r.status, 200, "{what}: {}", r.text());
            continue;
        }
        let r = s.req(method, &path, Some(RO_KEY), body(method));
        if matches!(permission, Permission::Write | Permission::StoreWrite) {
            writes += 1;
            assert!(assert_error(&r, 403).contains("read-only"), "{what}");
        } else {
            assert!(
                reached(&r),
                "{what} with a read key: {} {}",
                r.status,
                r.text()
            );
        }
        let r = s.req(method, &path, Some(KEY), body(method));
        assert!(
            reached(&r),
            "{what} with a write key: {} {}",
            r.status,
            r.text()
        );
    }
    assert!(writes >= 10, "only {writes} write routes");
}

#[test]
fn openapi_documents_exactly_the_declared_routes() {
    let s = TestServer::start(config());
    let doc = s.get("/openapi.json").json();
    let mut documented: Vec<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |m| (m.to_uppercase(), path.clone()))
        })
        .collect();
    let mut expected: Vec<(String, String)> = declared()
        .into_iter()
        .map(|(m, p, _)| (m.to_string(), p))
        .collect();
    documented.sort();
    expected.sort();
    assert_eq!(documented, expected);
    // The REST listing of the tools (Sekha's route) is the table's Sekha set.
    let listed = s.get("/api/v1/mcp/tools").json();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let table: Vec<&str> = contract::TOOLS
        .iter()
        .filter(|t| t.set() == contract::ToolSet::Sekha)
        .map(|t| t.name())
        .collect();
    assert_eq!(names, table);
}

/// The headers of a streamable-HTTP MCP request with `key`, on `session`.
fn mcp_headers(key: &str, session: Option<&str>) -> Vec<(String, String)> {
    let mut headers = vec![
        ("Content-Type".to_string(), "application/json".to_string()),
        (
            "Accept".to_string(),
            "application/json, text/event-stream".to_string(),
        ),
        ("Authorization".to_string(), format!("Bearer {key}")),
    ];
    if let Some(id) = session {
        headers.push(("Mcp-Session-Id".to_string(), id.to_string()));
        headers.push(("Mcp-Protocol-Version".to_string(), "2025-06-18".to_string()));
    }
    headers
}

/// Opens an MCP session with `key` (initialize + initialized).
fn mcp_session(s: &TestServer, key: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "contract", "version": "1"}}});
    let body = init.to_string();
    let r = raw(
        s.addr,
        "POST",
        "/mcp",
        &mcp_headers(key, None),
        Some(body.as_bytes()),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.header("mcp-session-id").expect("session id").to_string();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let r = raw(
        s.addr,
        "POST",
        "/mcp",
        &mcp_headers(key, Some(&id)),
        Some(note.as_bytes()),
    );
    assert_eq!(r.status, 202, "{}", r.text());
    id
}

/// The JSON-RPC result of `method` on `session` (the answer is an SSE
/// stream or plain JSON).
fn mcp_rpc(
    s: &TestServer,
    key: &str,
    session: &str,
    id: u64,
    method: &str,
    params: Value,
) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
    let r = raw(
        s.addr,
        "POST",
        "/mcp",
        &mcp_headers(key, Some(session)),
        Some(body.as_bytes()),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    let answer = text
        .lines()
        .map(|l| l.strip_prefix("data:").unwrap_or(l).trim())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["id"] == id)
        .unwrap_or_else(|| panic!("no answer to {method} in {text}"));
    assert!(answer["error"].is_null(), "{answer}");
    answer["result"].clone()
}

#[test]
fn mcp_lists_the_tool_table_and_refuses_write_tools_to_read_keys() {
    let s = TestServer::start(config());
    let session = mcp_session(&s, RO_KEY);
    let listed = mcp_rpc(&s, RO_KEY, &session, 2, "tools/list", json!({}));
    let tools = listed["tools"].as_array().unwrap();
    assert_eq!(tools.len(), contract::TOOLS.len());
    for (listed, t) in tools.iter().zip(contract::TOOLS) {
        assert_eq!(listed["name"], t.name());
        assert_eq!(listed["description"], t.description());
        assert_eq!(
            listed["inputSchema"],
            Value::Object((*t.input_schema()).clone()),
            "{}",
            t.name()
        );
        assert_eq!(
            listed["annotations"]["readOnlyHint"],
            t.access() == memdb_server::auth::Access::Read,
            "{}",
            t.name()
        );
    }
    let mut id = 10;
    for t in contract::TOOLS {
        id += 1;
        let params = json!({"name": t.name(), "arguments": {}});
        let r = mcp_rpc(&s, RO_KEY, &session, id, "tools/call", params);
        let code = &r["structuredContent"]["code"];
        if t.access() == memdb_server::auth::Access::Write {
            assert_eq!(r["isError"], true, "{}: {r}", t.name());
            assert_eq!(*code, 403, "{}: {r}", t.name());
            let text = r["content"][0]["text"].as_str().unwrap();
            assert!(text.contains("read-only"), "{text}");
        } else {
            assert_ne!(*code, 403, "{}: {r}", t.name());
        }
    }
    // A writing key gets past the check: memory_store writes.
    let session = mcp_session(&s, KEY);
    let store = json!({"name": "memory_store", "arguments": {"label": "Via MCP", "folder": "/c",
        "messages": [{"role": "user", "content": "stored over the contract"}]}});
    let r = mcp_rpc(&s, KEY, &session, 99, "tools/call", store);
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(conversation_count(&s), 1);
}
