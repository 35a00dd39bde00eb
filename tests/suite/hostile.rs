//! Hostile clients against the real `memdb-server` binary (issue: one
//! request from a read-only key could kill it). Each test is one attack
//! that used to crash, stall or bloat the server; every client is std-only.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::server_e2e::{free_port, wait_healthy};
use crate::server_util::{KEY, KEY2, RO_KEY, Resp, assert_error, raw};

/// The real server binary on a free loopback port; killed on drop.
struct Server {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Starts `memdb-server` with the test keys, no rate limit, and `env`.
    fn start(env: &[(&str, &str)]) -> Server {
        let dir = crate::tmp();
        let port = free_port();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_memdb-test-server"));
        cmd.arg("--data")
            .arg(dir.path())
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env("MEMDB_API_KEYS", format!("{KEY},{KEY2}"))
            .env("MEMDB_READONLY_API_KEYS", RO_KEY)
            .env("MEMDB_RATE_LIMIT", "0")
            .env_remove("MEMDB_API_KEY")
            .env_remove("MEMDB_CONFIG")
            .env_remove("MEMDB_EMBEDDER")
            .env("MEMDB_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start memdb-server");
        wait_healthy(port, &mut child);
        Server {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            _dir: dir,
        }
    }

    fn req(&self, method: &str, path: &str, key: Option<&str>, body: Option<&Value>) -> Resp {
        let mut headers = vec![(
            "Accept".to_string(),
            "application/json, text/event-stream".to_string(),
        )];
        if let Some(k) = key {
            headers.push(("Authorization".into(), format!("Bearer {k}")));
        }
        if body.is_some() {
            headers.push(("Content-Type".into(), "application/json".into()));
        }
        let body = body.map(Value::to_string);
        raw(
            self.addr,
            method,
            path,
            &headers,
            body.as_deref().map(str::as_bytes),
        )
    }

    fn post(&self, path: &str, key: &str, body: &Value) -> Resp {
        self.req("POST", path, Some(key), Some(body))
    }

    /// Asserts the process is alive and answers `/health`.
    fn assert_up(&mut self) {
        assert!(
            self.child.try_wait().expect("wait").is_none(),
            "memdb-server died"
        );
        let r = self.req("GET", "/health", None, None);
        assert_eq!(r.status, 200, "{}", r.text());
    }

    fn store(&self, label: &str, text: &str) -> String {
        let r = self.post(
            "/api/v1/conversations",
            KEY,
            &json!({"label": label, "folder": "/h", "messages": [{"role": "user", "content": text}]}),
        );
        assert_eq!(r.status, 201, "{}", r.text());
        r.json()["id"].as_str().expect("id").to_string()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
    }
    headers
}

/// An MCP `initialize` over streamable HTTP with `key`, optionally from a
/// browser `origin`.
fn mcp_init(s: &Server, key: &str, origin: Option<&str>) -> Resp {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "1"}}});
    let mut headers = mcp_headers(key, None);
    if let Some(o) = origin {
        headers.push(("Origin".to_string(), o.to_string()));
    }
    raw(
        s.addr,
        "POST",
        "/mcp",
        &headers,
        Some(init.to_string().as_bytes()),
    )
}

/// A JSON-RPC call on an open MCP session.
fn mcp_call(s: &Server, key: &str, session: &str, id: u64, method: &str, params: Value) -> Resp {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut headers = mcp_headers(key, Some(session));
    headers.push(("Mcp-Protocol-Version".to_string(), "2025-06-18".to_string()));
    raw(
        s.addr,
        "POST",
        "/mcp",
        &headers,
        Some(body.to_string().as_bytes()),
    )
}

/// Opens an MCP session (initialize + initialized) and returns its id.
fn mcp_session(s: &Server, key: &str) -> String {
    let r = mcp_init(s, key, None);
    assert_eq!(r.status, 200, "{}", r.text());
    let id = r.header("mcp-session-id").expect("session id").to_string();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let headers = mcp_headers(key, Some(&id));
    let r = raw(
        s.addr,
        "POST",
        "/mcp",
        &headers,
        Some(note.to_string().as_bytes()),
    );
    assert_eq!(r.status, 202, "{}", r.text());
    id
}

fn nested(depth: usize) -> String {
    format!("{}hello{}", "(".repeat(depth), ")".repeat(depth))
}

#[test]
fn deeply_nested_queries_answer_400_on_every_search_surface() {
    let mut s = Server::start(&[]);
    s.store("Greeting", "hello world");
    let session = mcp_session(&s, RO_KEY);
    // 10,000 levels (over the length limit) and 4,000 (within it: the
    // depth limit answers).
    for depth in [10_000, 4_000] {
        let q = nested(depth);
        for (path, body) in [
            ("/api/v1/search/fts", json!({"query": q})),
            ("/api/v1/query", json!({"query": q, "mode": "hybrid"})),
            ("/api/v1/query", json!({"query": q, "mode": "keyword"})),
            ("/mcp/tools/memory_search", json!({"query": q})),
            ("/mcp/memory/search", json!({"query": q})),
            ("/api/v1/context/assemble", json!({"query": q})),
        ] {
            let r = s.post(path, RO_KEY, &body);
            // Only `search/fts` reads the syntax; the other searches read
            // natural language, where parentheses are text and only the
            // length is limited (8 KiB; 1,000 characters for the tool).
            let syntax = path == "/api/v1/search/fts";
            let too_long = depth == 10_000 || path == "/mcp/tools/memory_search";
            if syntax || too_long {
                assert!(
                    r.status == 400 || (r.status == 200 && path == "/api/v1/context/assemble"),
                    "{path} at depth {depth}: {} {}",
                    r.status,
                    r.text()
                );
            } else {
                assert_eq!(r.status, 200, "{path} at depth {depth}: {}", r.text());
                if path != "/api/v1/context/assemble" {
                    assert_eq!(r.json()["results"][0]["content"], "hello world", "{path}");
                }
            }
            if r.status == 400 {
                let v = r.json();
                let field_ok = v["field"] == "query" || v["error"].as_str().is_some();
                assert!(field_ok, "{v}");
            }
            s.assert_up();
        }
        // The native MCP tool: a tool error, not a dead server.
        let r = mcp_call(
            &s,
            RO_KEY,
            &session,
            7,
            "tools/call",
            json!({"name": "memory_search", "arguments": {"query": q}}),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(r.text().contains("\"isError\":true"), "{}", r.text());
        s.assert_up();
    }
    // The library surface names the limit.
    let r = s.post("/api/v1/search/fts", RO_KEY, &json!({"query": nested(40)}));
    let msg = assert_error(&r, 400);
    assert!(msg.contains("nesting deeper than 32"), "{msg}");
    assert_eq!(r.json()["field"], "query");
}

#[test]
fn regex_floods_answer_400_without_compiling() {
    let mut s = Server::start(&[]);
    s.store("Regex", "aa ba ca");
    // 1,000 regex terms (about 26 KB: over the length limit), and 300 (under
    // it: the regex-count limit answers).
    for n in [1000, 300] {
        let q: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    "content_raw:/(?:.?){{55}}{}a/",
                    (b'a' + (i % 26) as u8) as char
                )
            })
            .collect();
        let body = json!({"query": q.join(" ")});
        let mut best = Duration::MAX;
        for _ in 0..3 {
            let t = Instant::now();
            let r = s.post("/api/v1/search/fts", RO_KEY, &body);
            best = best.min(t.elapsed());
            assert_error(&r, 400);
        }
        // Before the budget, each term compiled a DFA (~0.125 s each).
        assert!(best < Duration::from_millis(50), "{n} terms took {best:?}");
    }
    // One expensive regex alone is refused too.
    let r = s.post(
        "/api/v1/search/fts",
        RO_KEY,
        &json!({"query": "content_raw:/(?:.?){55}aa/"}),
    );
    assert!(assert_error(&r, 400).contains("positions"));
    // An ordinary regex still works.
    let r = s.post(
        "/api/v1/search/fts",
        RO_KEY,
        &json!({"query": "content_raw:/b.*/"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    s.assert_up();
}

#[test]
fn junk_methods_do_not_grow_metrics() {
    let s = Server::start(&[]);
    // One junk request first: its `other` label may appear once.
    let junk = format!("{}0", "Q".repeat(1999));
    raw(s.addr, &junk, "/api/v1/stats", &[], None);
    // And one scrape: the scrape itself is recorded under GET /metrics.
    s.req("GET", "/metrics", Some(KEY), None);
    let before = s.req("GET", "/metrics", Some(KEY), None);
    assert_eq!(before.status, 200);
    for i in 0..1000 {
        let method: String = std::iter::repeat_n((b'A' + (i % 26) as u8) as char, 1990)
            .chain(format!("{i:010}").chars())
            .collect();
        let r = raw(s.addr, &method, "/api/v1/stats", &[], None);
        assert!(r.status >= 400, "{}", r.status);
    }
    let after = s.req("GET", "/metrics", Some(KEY), None);
    let (a, b) = (before.body.len() as f64, after.body.len() as f64);
    assert!(
        b <= a * 1.1,
        "/metrics grew from {a} to {b} bytes:\n{}",
        after.text()
    );
}

/// Reads until the peer closes; `Err` if it is still open after `limit`.
fn closed_within(stream: &mut TcpStream, limit: Duration) -> Result<Duration, String> {
    let start = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Ok(start.elapsed()),
            Ok(_) => {}
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return Ok(start.elapsed()),
        }
        if start.elapsed() > limit {
            return Err(format!("still open after {limit:?}"));
        }
    }
}

#[test]
fn stalled_connections_are_closed_and_capped() {
    let mut s = Server::start(&[
        ("MEMDB_HEADER_TIMEOUT", "2"),
        ("MEMDB_MAX_CONNECTIONS_PER_IP", "8"),
    ]);
    // Half a request line, then silence: closed after the header timeout.
    let mut half = TcpStream::connect(s.addr).expect("connect");
    half.write_all(b"GET /health HT").expect("write");
    let took = closed_within(&mut half, Duration::from_secs(10)).expect("half-sent request");
    assert!(
        took >= Duration::from_millis(1500),
        "closed too early: {took:?}"
    );
    // An idle keep-alive connection after a full request: closed too.
    let mut idle = TcpStream::connect(s.addr).expect("connect");
    idle.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .expect("write");
    closed_within(&mut idle, Duration::from_secs(10)).expect("idle keep-alive");

    // Eight stalled sockets from one address are held; the ninth is
    // closed at once.
    let stalled: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut c = TcpStream::connect(s.addr).expect("connect");
            c.write_all(b"GET /").expect("write");
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut ninth = TcpStream::connect(s.addr).expect("connect");
    let took = closed_within(&mut ninth, Duration::from_secs(1)).expect("over the cap");
    assert!(took < Duration::from_secs(1));
    drop(stalled);
    std::thread::sleep(Duration::from_millis(300));
    s.assert_up();
}

#[test]
fn foreign_origins_and_hosts_are_refused() {
    let s = Server::start(&[]);
    let r = mcp_init(&s, KEY, Some("http://evil.example"));
    assert!(assert_error(&r, 403).contains("origin"));
    let r = mcp_init(&s, KEY, Some("null"));
    assert_error(&r, 403);
    // Loopback origins are allowed on a loopback listener.
    let own = format!("http://127.0.0.1:{}", s.addr.port());
    let r = mcp_init(&s, KEY, Some(&own));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = mcp_init(&s, KEY, Some("http://localhost:3000"));
    assert_eq!(r.status, 200, "{}", r.text());
    // A DNS-rebinding Host is refused on every route.
    let mut stream = TcpStream::connect(s.addr).expect("connect");
    let req = format!(
        "GET /api/v1/stats HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer {KEY}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(req.as_bytes()).expect("write");
    let mut buf = String::new();
    let _ = stream.read_to_string(&mut buf);
    assert!(buf.starts_with("HTTP/1.1 403"), "{buf}");
}

#[test]
fn cl100k_context_assembly_survives_a_whitespace_message() {
    let s = Server::start(&[]);
    // The largest legal message: 1 MiB of spaces ending in one letter.
    let text = format!("{}x", " ".repeat((1 << 20) - 1));
    let id = s.store("Spaces", &text);
    let r = s.req(
        "PUT",
        &format!("/api/v1/conversations/{id}/pin"),
        Some(KEY),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    for key in [KEY, RO_KEY] {
        let r = s.post(
            "/api/v1/context/assemble",
            key,
            &json!({"query": "x", "token_counter": "cl100k_base", "context_budget": 2_000_000}),
        );
        assert_eq!(r.status, 200, "{}", r.text());
    }
}

#[test]
fn exports_are_consistent_snapshots_under_concurrent_deletes() {
    let s = Server::start(&[]);
    let ids: Vec<String> = (0..120)
        .map(|i| s.store(&format!("c{i}"), &format!("message number {i}")))
        .collect();
    let keep: std::collections::HashSet<String> = ids[100..].iter().cloned().collect();
    let doomed: Vec<String> = ids[..100].to_vec();
    let addr = s.addr;
    let deleter = std::thread::spawn(move || {
        for id in doomed {
            let r = raw(
                addr,
                "DELETE",
                &format!("/api/v1/conversations/{id}"),
                &[("Authorization".to_string(), format!("Bearer {KEY}"))],
                None,
            );
            assert!(r.status == 200 || r.status == 204, "{}", r.text());
        }
    });
    let mut exports = 0;
    while !deleter.is_finished() || exports < 3 {
        let r = s.req("GET", "/api/v1/export?format=json", Some(RO_KEY), None);
        assert_eq!(r.status, 200, "{}", r.text());
        let v = r.json();
        let doc: Value = serde_json::from_str(v["content"].as_str().expect("content"))
            .expect("the export document is JSON");
        let convs = doc["conversations"].as_array().expect("conversations");
        assert_eq!(v["conversation_count"].as_u64(), Some(convs.len() as u64));
        let seen: std::collections::HashSet<String> = convs
            .iter()
            .map(|c| c["id"].as_str().expect("id").to_string())
            .collect();
        assert_eq!(seen.len(), convs.len(), "duplicates in one export");
        assert!(
            keep.is_subset(&seen),
            "an undeleted conversation is missing"
        );
        for c in convs {
            assert_eq!(c["messages"].as_array().map(Vec::len), Some(1), "{c}");
        }
        exports += 1;
    }
    deleter.join().expect("deleter");
    assert!(exports >= 3);
}

#[test]
fn mcp_sessions_belong_to_their_key_and_are_capped() {
    let s = Server::start(&[("MEMDB_MCP_SESSIONS_PER_KEY", "2")]);
    let mine = mcp_session(&s, KEY);
    // Another key, read-only, cannot end or use it.
    let headers = vec![
        ("Authorization".to_string(), format!("Bearer {RO_KEY}")),
        ("Mcp-Session-Id".to_string(), mine.clone()),
    ];
    let r = raw(s.addr, "DELETE", "/mcp", &headers, None);
    assert_error(&r, 404);
    let r = mcp_call(&s, RO_KEY, &mine, 2, "tools/list", json!({}));
    assert_error(&r, 404);
    // The owner still can.
    let r = mcp_call(&s, KEY, &mine, 3, "tools/list", json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("memory_search"));
    // Two sessions per key: the third initialize is refused, other keys
    // are not affected.
    let _second = mcp_session(&s, KEY);
    let r = mcp_init(&s, KEY, None);
    assert_error(&r, 429);
    mcp_session(&s, KEY2);
    // Ending one's own session frees a slot.
    let headers = vec![
        ("Authorization".to_string(), format!("Bearer {KEY}")),
        ("Mcp-Session-Id".to_string(), mine.clone()),
    ];
    let r = raw(s.addr, "DELETE", "/mcp", &headers, None);
    assert!(r.status < 300, "{} {}", r.status, r.text());
    mcp_session(&s, KEY);
}

#[test]
fn smaller_holes_are_closed() {
    let s = Server::start(&[]);
    s.store("Small", "some content here");
    // `field:*` is bad input, not an internal error.
    let r = s.post("/api/v1/search/fts", RO_KEY, &json!({"query": "content:*"}));
    assert_error(&r, 400);
    // Context assembly takes at most 8 KiB of query, like search.
    let r = s.post(
        "/api/v1/context/assemble",
        RO_KEY,
        &json!({"query": "word ".repeat(4000)}),
    );
    assert_error(&r, 400);
    // Without a key, unknown routes and wrong methods both answer 401: the
    // route table does not leak.
    assert_error(&s.req("GET", "/api/v1/nope", None, None), 401);
    assert_error(&s.req("PATCH", "/api/v1/stats", None, None), 401);
    assert_error(&s.req("PATCH", "/api/v1/stats", Some(KEY), None), 405);
    assert_error(&s.req("GET", "/api/v1/nope", Some(KEY), None), 404);
    // Writes need a writing key; reads do not.
    let r = s.post(
        "/api/v1/conversations",
        RO_KEY,
        &json!({"label": "x", "messages": [{"role": "user", "content": "y"}]}),
    );
    assert_error(&r, 403);
    // A folder of hundreds of components is refused before indexing.
    let deep = "/a".repeat(300);
    let r = s.post(
        "/api/v1/conversations",
        KEY,
        &json!({"label": "x", "folder": deep, "messages": [{"role": "user", "content": "y"}]}),
    );
    assert!(assert_error(&r, 400).contains("components"));
}
