//! Namespaces on memdb-server (SPEC §12): a request addresses one with the
//! `X-Memdb-Namespace` header or the `namespace` query parameter, and a key
//! limited to namespaces never reads, searches (keyword, semantic, hybrid),
//! exports, counts or assembles context from another one, through REST, the
//! MCP tool shim or streamable HTTP MCP (`/mcp`).

use memdb::Systems;
use serde_json::{Value, json};

use crate::server_util::*;

/// A read-write key limited to namespace `alpha`.
const ALPHA: &str = "alpha-key-0123456789abcdefghijklmnopqrstuvwxyz";
/// A read-only key limited to namespace `beta`.
const BETA_RO: &str = "beta-readonly-key-0123456789abcdefghijklmnopqrst";

/// The test configuration with the two limited keys.
fn limited_keys_config() -> memdb_server::ServerConfig {
    let mut c = config();
    c.api_keys.push(ALPHA.into());
    c.readonly_api_keys.push(BETA_RO.into());
    c.key_namespaces = vec![
        memdb_server::KeyNamespaces {
            key: ALPHA.into(),
            namespaces: vec!["alpha".into()],
        },
        memdb_server::KeyNamespaces {
            key: BETA_RO.into(),
            namespaces: vec!["beta".into()],
        },
    ];
    c
}

fn server() -> TestServer {
    let c = limited_keys_config();
    // A real (model-free) embedder, so semantic and hybrid search run.
    let hashing = std::sync::Arc::new(memdb::Hashing::new(256).expect("hashing"));
    TestServer::start_with(c, memdb::Config::with_embedder(hashing))
}

/// A request with `key` and, when given, the namespace header.
fn call(
    s: &TestServer,
    method: &str,
    path: &str,
    key: &str,
    ns: Option<&str>,
    body: Option<&Value>,
) -> Resp {
    let mut headers = vec![("Authorization".to_string(), format!("Bearer {key}"))];
    if let Some(ns) = ns {
        headers.push(("X-Memdb-Namespace".to_string(), ns.to_string()));
    }
    let body = body.map(Value::to_string);
    if body.is_some() {
        headers.push(("Content-Type".to_string(), "application/json".to_string()));
    }
    raw(
        s.addr,
        method,
        path,
        &headers,
        body.as_deref().map(str::as_bytes),
    )
}

fn ok(r: Resp) -> Value {
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

fn store(s: &TestServer, key: &str, ns: Option<&str>, label: &str, text: &str) -> String {
    let body = json!({"label": label, "folder": "/notes",
        "messages": [{"role": "user", "content": text}]});
    let r = call(s, "POST", "/api/v1/conversations", key, ns, Some(&body));
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()["id"].as_str().expect("id").to_string()
}

/// Labels of `/api/v1/query` hits.
fn query_labels(
    s: &TestServer,
    key: &str,
    ns: Option<&str>,
    query: &str,
    mode: &str,
) -> Vec<String> {
    let body = json!({"query": query, "mode": mode, "limit": 20});
    let v = ok(call(s, "POST", "/api/v1/query", key, ns, Some(&body)));
    v["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|h| h["label"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn a_namespace_limited_key_sees_only_its_namespace() {
    let s = server();
    let alpha = store(&s, ALPHA, None, "Alpha", "the zebra secret lives in alpha");
    let beta = store(
        &s,
        KEY,
        Some("beta"),
        "Beta",
        "the giraffe secret lives in beta",
    );
    store(
        &s,
        KEY,
        None,
        "Default",
        "the walrus secret lives in default",
    );

    // Searches of every kind: only the key's namespace answers.
    for mode in ["keyword", "semantic", "hybrid"] {
        for query in ["secret", "zebra", "giraffe", "walrus"] {
            let labels = query_labels(&s, BETA_RO, None, query, mode);
            assert!(
                labels.iter().all(|l| l == "Beta"),
                "{mode} {query}: {labels:?}"
            );
            let labels = query_labels(&s, ALPHA, None, query, mode);
            assert!(
                labels.iter().all(|l| l == "Alpha"),
                "{mode} {query}: {labels:?}"
            );
        }
        assert_eq!(
            query_labels(&s, BETA_RO, None, "giraffe", mode),
            ["Beta"],
            "{mode}"
        );
        assert_eq!(
            query_labels(&s, ALPHA, None, "zebra", mode),
            ["Alpha"],
            "{mode}"
        );
    }
    let fts = ok(call(
        &s,
        "POST",
        "/api/v1/search/fts",
        BETA_RO,
        None,
        Some(&json!({"query": "zebra OR walrus", "limit": 10})),
    ));
    assert_eq!(fts["total"], 0, "{fts}");

    // By id, count, stats, export, context assembly.
    let r = call(
        &s,
        "GET",
        &format!("/api/v1/conversations/{alpha}"),
        BETA_RO,
        None,
        None,
    );
    assert_eq!(r.status, 404, "{}", r.text());
    let v = ok(call(
        &s,
        "GET",
        &format!("/api/v1/conversations/{beta}"),
        BETA_RO,
        None,
        None,
    ));
    assert_eq!(v["label"], "Beta");
    let v = ok(call(
        &s,
        "GET",
        "/api/v1/conversations/count",
        BETA_RO,
        None,
        None,
    ));
    assert_eq!(v["count"], 1, "{v}");
    let v = ok(call(&s, "GET", "/api/v1/stats", BETA_RO, None, None));
    assert_eq!(v["data"]["total_conversations"], 1, "{v}");
    let v = ok(call(
        &s,
        "GET",
        "/api/v1/export?format=json",
        BETA_RO,
        None,
        None,
    ));
    assert_eq!(v["conversation_count"], 1, "{v}");
    let content = v["content"].as_str().expect("content");
    assert!(content.contains("giraffe"), "{content}");
    assert!(
        !content.contains("zebra") && !content.contains("walrus"),
        "{content}"
    );
    let ctx = ok(call(
        &s,
        "POST",
        "/api/v1/context/assemble",
        BETA_RO,
        None,
        Some(&json!({"query": "secret", "context_budget": 2000})),
    ));
    let texts = ctx["messages"].to_string();
    assert!(texts.contains("giraffe"), "{ctx}");
    assert!(
        !texts.contains("zebra") && !texts.contains("walrus"),
        "{ctx}"
    );

    // The MCP tool shim runs on the same namespace.
    let v = ok(call(
        &s,
        "POST",
        "/mcp/tools/memory_search",
        BETA_RO,
        None,
        Some(&json!({"query": "zebra walrus giraffe", "limit": 10})),
    ));
    let hits = v["data"]["results"].as_array().expect("results").clone();
    assert!(!hits.is_empty(), "{v}");
    assert!(
        hits.iter().all(|h| h["conversation_id"] == beta.as_str()),
        "{v}"
    );
    let v = ok(call(
        &s,
        "POST",
        "/mcp/tools/memory_stats",
        ALPHA,
        None,
        Some(&json!({})),
    ));
    assert_eq!(v["data"]["total_conversations"], 1, "{v}");

    // The namespaces it may see.
    let v = ok(call(&s, "GET", "/api/v1/namespaces", BETA_RO, None, None));
    assert_eq!(v["data"]["current"], "beta");
    assert_eq!(
        v["data"]["namespaces"],
        json!([{"name": "beta", "conversations": 1}])
    );
    let v = ok(call(&s, "GET", "/api/v1/namespaces", KEY, None, None));
    let names: Vec<&str> = v["data"]["namespaces"]
        .as_array()
        .expect("namespaces")
        .iter()
        .filter_map(|n| n["name"].as_str())
        .collect();
    assert_eq!(names, ["alpha", "beta", "default"], "{v}");
    s.stop();
}

#[test]
fn other_namespaces_and_store_wide_routes_are_refused_to_limited_keys() {
    let s = server();
    store(&s, KEY, Some("alpha"), "Alpha", "alpha text");
    for (method, path, body) in [
        ("GET", "/api/v1/conversations/count", None),
        ("GET", "/api/v1/export", None),
        ("POST", "/api/v1/query", Some(json!({"query": "alpha"}))),
        (
            "POST",
            "/mcp/tools/memory_search",
            Some(json!({"query": "alpha"})),
        ),
    ] {
        let r = call(&s, method, path, BETA_RO, Some("alpha"), body.as_ref());
        assert_eq!(r.status, 403, "{path}: {}", r.text());
        assert_eq!(
            r.json()["error"],
            "this API key may not use namespace \"alpha\"",
            "{path}"
        );
        // The query parameter is checked the same way.
        let sep = if path.contains('?') { '&' } else { '?' };
        let r = call(
            &s,
            method,
            &format!("{path}{sep}namespace=alpha"),
            BETA_RO,
            None,
            body.as_ref(),
        );
        assert_eq!(r.status, 403, "{path}?namespace: {}", r.text());
    }
    // A limited key cannot write into another namespace either.
    let body = json!({"label": "X", "messages": [{"role": "user", "content": "x"}]});
    let r = call(
        &s,
        "POST",
        "/api/v1/conversations",
        ALPHA,
        Some("beta"),
        Some(&body),
    );
    assert_eq!(r.status, 403, "{}", r.text());
    // Store-wide routes are refused to limited keys, allowed to the others.
    for key in [ALPHA, BETA_RO] {
        let r = call(&s, "GET", "/metrics", key, None, None);
        assert_eq!(r.status, 403, "{}", r.text());
    }
    let r = call(&s, "POST", "/api/v1/rebuild-embeddings", ALPHA, None, None);
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(call(&s, "GET", "/metrics", KEY, None, None).status, 200);
    // Nothing was written by the refused requests.
    let v = ok(call(
        &s,
        "GET",
        "/api/v1/conversations/count",
        KEY,
        Some("beta"),
        None,
    ));
    assert_eq!(v["count"], 0, "{v}");
    s.stop();
}

#[test]
fn unlimited_keys_address_any_namespace_by_header_or_parameter() {
    let s = server();
    store(&s, KEY, Some("team-a"), "A", "apples");
    store(&s, KEY, None, "D", "dates");
    let count =
        |path: &str, ns: Option<&str>| ok(call(&s, "GET", path, KEY, ns, None))["count"].clone();
    assert_eq!(count("/api/v1/conversations/count", None), 1);
    assert_eq!(count("/api/v1/conversations/count", Some("default")), 1);
    assert_eq!(count("/api/v1/conversations/count", Some("team-a")), 1);
    assert_eq!(
        count("/api/v1/conversations/count?namespace=team-a", None),
        1
    );
    assert_eq!(
        count("/api/v1/conversations/count?namespace=nobody", None),
        0
    );
    let v = ok(call(
        &s,
        "GET",
        "/api/v1/conversations?namespace=team-a",
        KEY,
        None,
        None,
    ));
    assert_eq!(v["results"][0]["label"], "A", "{v}");
    // A bad name, or a header and a parameter that disagree: 400.
    let r = call(
        &s,
        "GET",
        "/api/v1/conversations/count",
        KEY,
        Some("no spaces"),
        None,
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["field"], "namespace");
    let r = call(
        &s,
        "GET",
        "/api/v1/conversations/count?namespace=default",
        KEY,
        Some("team-a"),
        None,
    );
    assert_eq!(r.status, 400, "{}", r.text());
    s.stop();
}

/// A streamable-HTTP MCP session on `/mcp`: initialize, then tool calls,
/// each request carrying the key and (optionally) the namespace header.
struct McpSession<'a> {
    server: &'a TestServer,
    key: &'a str,
    id: String,
}

impl<'a> McpSession<'a> {
    fn headers(&self, ns: Option<&str>, session: bool) -> Vec<(String, String)> {
        let mut h = vec![
            ("Authorization".to_string(), format!("Bearer {}", self.key)),
            ("Content-Type".to_string(), "application/json".to_string()),
            (
                "Accept".to_string(),
                "application/json, text/event-stream".to_string(),
            ),
        ];
        if session {
            h.push(("Mcp-Session-Id".to_string(), self.id.clone()));
        }
        if let Some(ns) = ns {
            h.push(("X-Memdb-Namespace".to_string(), ns.to_string()));
        }
        h
    }

    fn open(server: &'a TestServer, key: &'a str) -> McpSession<'a> {
        let mut s = McpSession {
            server,
            key,
            id: String::new(),
        };
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"memdb-tests","version":"1"}}}"#;
        let r = raw(
            server.addr,
            "POST",
            "/mcp",
            &s.headers(None, false),
            Some(init.as_bytes()),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        s.id = r.header("mcp-session-id").expect("session id").to_string();
        let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let r = raw(
            server.addr,
            "POST",
            "/mcp",
            &s.headers(None, true),
            Some(note.as_bytes()),
        );
        assert!(r.status < 300, "{}", r.text());
        s
    }

    /// `tools/call`: the HTTP status and the JSON-RPC result (`Null` when
    /// the request was refused before MCP).
    fn call(&self, ns: Option<&str>, tool: &str, args: Value) -> (u16, Value) {
        let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": tool, "arguments": args}});
        let r = raw(
            self.server.addr,
            "POST",
            "/mcp",
            &self.headers(ns, true),
            Some(body.to_string().as_bytes()),
        );
        if r.status != 200 {
            return (r.status, Value::Null);
        }
        let text = r.text();
        // An SSE stream or a JSON body: the message with id 2.
        let message = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .chain(std::iter::once(text.trim()))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .find(|m| m["id"] == 2)
            .unwrap_or_else(|| panic!("no tools/call answer in {text}"));
        (r.status, message["result"].clone())
    }
}

#[test]
fn mcp_sessions_run_tools_on_the_keys_namespace() {
    let s = server();
    let alpha = store(
        &s,
        KEY,
        Some("alpha"),
        "Alpha",
        "the zebra secret lives in alpha",
    );
    let beta_id = store(
        &s,
        KEY,
        Some("beta"),
        "Beta",
        "the giraffe secret lives in beta",
    );

    let beta = McpSession::open(&s, BETA_RO);
    for query in ["zebra", "giraffe", "secret"] {
        let (status, result) =
            beta.call(None, "memory_search", json!({"query": query, "limit": 10}));
        assert_eq!(status, 200);
        assert_eq!(result["isError"], false, "{result}");
        let hits = result["structuredContent"]["results"]
            .as_array()
            .expect("hits");
        assert!(
            hits.iter().all(|h| h["label"] == "Beta"),
            "{query}: {result}"
        );
        if query != "zebra" {
            assert!(!hits.is_empty(), "{query}: {result}");
        }
    }
    let (_, result) = beta.call(None, "memory_stats", json!({}));
    assert_eq!(
        result["structuredContent"]["total_conversations"], 1,
        "{result}"
    );
    let (_, result) = beta.call(None, "memory_export", json!({"conversation_id": beta_id}));
    let content = result["structuredContent"]["content"]
        .as_str()
        .expect("export");
    assert!(content.contains("giraffe"), "{content}");
    // Another namespace's conversation does not exist for this key.
    for tool in ["memory_export", "memory_get_context"] {
        let (_, result) = beta.call(None, tool, json!({"conversation_id": alpha}));
        assert_eq!(result["isError"], true, "{tool}: {result}");
        assert_eq!(result["structuredContent"]["code"], 404, "{tool}: {result}");
    }
    // Another namespace: refused before the tool runs.
    let (status, _) = beta.call(Some("alpha"), "memory_search", json!({"query": "zebra"}));
    assert_eq!(status, 403);

    // An unlimited key's session may switch namespaces per request.
    let any = McpSession::open(&s, KEY);
    let (_, result) = any.call(Some("alpha"), "memory_stats", json!({}));
    assert_eq!(
        result["structuredContent"]["total_conversations"], 1,
        "{result}"
    );
    let (_, result) = any.call(None, "memory_stats", json!({}));
    assert_eq!(
        result["structuredContent"]["total_conversations"], 0,
        "{result}"
    );
    s.stop();
}

/// Knowledge bases belong to a namespace (SPEC §15.1): through each of
/// KuraDB's seven routes and tools (`GET /api/list`, `/api/search`,
/// `/api/keyword`, `/api/semantic`, the `list_rag` and `search_rag` shims,
/// and `search_rag` over streamable MCP) a limited key, read-write or
/// read-only, sees only its own namespace's bases: not their names, not
/// their chunks, not their files' paths. A name may be taken once per
/// namespace.
#[test]
fn a_limited_key_sees_only_its_namespaces_knowledge_bases() {
    let folders = crate::tmp();
    let make = |name: &str, file: &str, text: &str| {
        let dir = folders.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(file), text).unwrap();
        dir
    };
    let alpha_dir = make(
        "alpha-inbox",
        "alpha-plan.txt",
        "The zebra handbook explains the striped migration.",
    );
    let beta_dir = make(
        "beta-inbox",
        "beta-plan.txt",
        "The giraffe manual explains the long neck.",
    );
    let default_dir = make(
        "default-inbox",
        "default-plan.txt",
        "The walrus guide explains the tusks.",
    );
    let c = limited_keys_config();
    let hashing = std::sync::Arc::new(memdb::Hashing::new(256).expect("hashing"));
    let s = TestServer::start_seeded(c, memdb::Config::with_embedder(hashing), |db| {
        // The same name in two namespaces: two bases.
        for (ns, name, dir) in [
            ("alpha", "docs", &alpha_dir),
            ("beta", "docs", &beta_dir),
            ("beta", "beta-only", &beta_dir),
            ("default", "house", &default_dir),
        ] {
            let h = db.namespace(ns).unwrap();
            h.kuradb().add(name, std::slice::from_ref(dir)).unwrap();
            assert_eq!(h.kuradb().sync(name).unwrap().parsed, 1);
        }
        db.embed_pending(None, &mut |_| {}).unwrap();
        // A base of another namespace does not exist for a handle.
        assert!(
            db.namespace("alpha")
                .unwrap()
                .kuradb()
                .get("beta-only")
                .is_err()
        );
        assert_eq!(db.kuradb().list().unwrap().len(), 1);
        assert_eq!(db.kuradb().list_all().unwrap().len(), 4);
    });

    // What each key may see, and what it must never see.
    let cases = [
        (
            ALPHA,
            "zebra",
            ["giraffe", "walrus", "beta-inbox", "beta-only"],
        ),
        (
            BETA_RO,
            "giraffe",
            ["zebra", "walrus", "alpha-inbox", "house"],
        ),
    ];
    for (key, own, foreign) in cases {
        let clean = |what: &str, r: &Resp| {
            let text = r.text();
            for f in foreign {
                assert!(!text.contains(f), "{what}: {f} leaked: {text}");
            }
        };
        // 1. GET /api/list
        let r = call(&s, "GET", "/api/list", key, None, None);
        assert_eq!(r.status, 200, "{}", r.text());
        clean("/api/list", &r);
        let own_bases = if key == ALPHA {
            json!(["docs"])
        } else {
            json!(["docs", "beta-only"])
        };
        assert_eq!(r.json()["loaded"], own_bases, "{}", r.text());
        // 2-4. The searches: the own base answers, the others do not exist.
        for route in ["/api/search", "/api/keyword", "/api/semantic"] {
            let r = call(
                &s,
                "GET",
                &format!("{route}?db=docs&q={own}"),
                key,
                None,
                None,
            );
            assert_eq!(r.status, 200, "{route}: {}", r.text());
            clean(route, &r);
            if route != "/api/semantic" {
                assert!(r.text().contains(own), "{route}: {}", r.text());
            }
            for other in ["house", "beta-only"] {
                let r = call(
                    &s,
                    "GET",
                    &format!("{route}?db={other}&q=the"),
                    key,
                    None,
                    None,
                );
                if key == BETA_RO && other == "beta-only" {
                    assert_eq!(r.status, 200, "{route}: {}", r.text());
                    continue;
                }
                // KuraDB's answer for an unknown base, naming only what
                // was asked.
                assert_eq!(r.status, 400, "{route} {other}: {}", r.text());
                assert_eq!(r.json(), json!({"error": format!("\"{other}\" not exist")}));
            }
        }
        // 5-6. The MCP tool shims.
        let r = call(
            &s,
            "POST",
            "/mcp/tools/list_rag",
            key,
            None,
            Some(&json!({})),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        clean("list_rag", &r);
        assert!(r.text().contains("docs"), "{}", r.text());
        let r = call(
            &s,
            "POST",
            "/mcp/tools/search_rag",
            key,
            None,
            Some(&json!({"db": "docs", "q": format!("{own} walrus giraffe zebra")})),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        clean("search_rag shim", &r);
        assert!(r.text().contains(own), "{}", r.text());
        let r = call(
            &s,
            "POST",
            "/mcp/tools/search_rag",
            key,
            None,
            Some(&json!({"db": "house", "q": "walrus"})),
        );
        assert!(!r.text().contains("walrus"), "{}", r.text());
        // 7. search_rag over streamable MCP.
        let mcp = McpSession::open(&s, key);
        let (status, result) = mcp.call(
            None,
            "search_rag",
            json!({"db": "docs", "q": format!("{own} walrus giraffe zebra")}),
        );
        assert_eq!(status, 200);
        let text = result.to_string();
        for f in foreign {
            assert!(!text.contains(f), "MCP search_rag: {f} leaked: {text}");
        }
        assert!(text.contains(own), "{text}");
        let (_, result) = mcp.call(None, "search_rag", json!({"db": "house", "q": "walrus"}));
        assert!(!result.to_string().contains("walrus"), "{result}");
        let (_, result) = mcp.call(None, "list_rag", json!({}));
        let text = result.to_string();
        for f in foreign {
            assert!(!text.contains(f), "MCP list_rag: {f} leaked: {text}");
        }
    }
    // An unlimited key sees the default namespace's base unless it names
    // another namespace.
    let r = call(&s, "GET", "/api/list", KEY, None, None);
    assert_eq!(r.json()["loaded"], json!(["house"]), "{}", r.text());
    let r = call(&s, "GET", "/api/list", KEY, Some("beta"), None);
    assert_eq!(
        r.json()["loaded"],
        json!(["docs", "beta-only"]),
        "{}",
        r.text()
    );
    s.stop();
}
