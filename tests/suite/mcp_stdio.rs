//! The stdio MCP server (`memdb mcp`, built here as `memdb-test-mcp`):
//! driven by the official MCP Python SDK, flooded with malformed JSON-RPC,
//! and started on a directory a memdb-server holds (forwarding, or a clear
//! refusal without a key).

use memdb::Systems;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::server_e2e::{free_port, run_checks, start_server};

const KEY: &str = "sk-mcp-stdio-0123456789abcdefghijklmnopqrstuvwxyz";

fn mcp_command(dir: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_memdb-test-mcp"));
    c.args(["--tools", "sekha"])
        .arg("--data")
        .arg(dir)
        .env_remove("MEMDB_API_KEY")
        .env_remove("MEMDB_API_KEYS")
        .env_remove("MEMDB_EMBEDDER");
    c
}

/// A JSON-RPC peer over a child's stdin/stdout (one message per line).
struct Rpc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every message read that was not the awaited response.
    seen: Vec<Value>,
}

impl Rpc {
    fn spawn(mut cmd: Command) -> Rpc {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn memdb-test-mcp");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Rpc {
            child,
            stdin,
            lines,
            seen: Vec::new(),
        }
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to server");
        stdin.write_all(b"\n").expect("write newline");
    }

    fn send(&mut self, v: &Value) {
        self.send_raw(v.to_string().as_bytes());
    }

    /// Sends a request and waits for the response with its id; every other
    /// line read meanwhile goes to `seen`.
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait_for(id)
    }

    fn wait_for(&mut self, id: u64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no response to request {id} (server gone?)"));
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("server wrote a non-JSON line ({e}): {line}"));
            if v["id"] == json!(id) {
                return v;
            }
            self.seen.push(v);
        }
    }

    fn initialize(&mut self, id: u64) -> Value {
        let r = self.request(
            id,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "memdb-tests", "version": "1"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        r
    }

    fn call(&mut self, id: u64, tool: &str, args: Value) -> Value {
        self.request(id, "tools/call", json!({"name": tool, "arguments": args}))
    }

    /// Closes stdin and waits for the process to exit.
    fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                return s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("memdb mcp did not exit within 30 s of stdin closing");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Rpc {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[test]
fn official_python_sdk_over_stdio() {
    let data = crate::tmp();
    run_checks("mcp_e2e.py", |c| {
        c.arg("stdio")
            .arg(env!("CARGO_BIN_EXE_memdb-test-mcp"))
            .args(["--tools", "sekha"])
            .arg("--data")
            .arg(data.path())
            .env_remove("MEMDB_API_KEY")
            .env_remove("MEMDB_API_KEYS")
    });
    // The client closed stdin: the server exited and released the store.
    let db = memdb::Memdb::open(data.path()).expect("reopen after the session");
    let stats = db.sekha().stats(&memdb::Filter::default()).expect("stats");
    assert_eq!(stats.total_conversations, 2, "{stats:?}");
    assert_eq!(stats.total_messages, 5, "{stats:?}");
}

/// A deterministic xorshift generator (no dependency needed for noise).
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len)
            .map(|_| {
                // Anything but the line separator.
                let b = (self.next() & 0xff) as u8;
                if b == b'\n' { b'x' } else { b }
            })
            .collect()
    }
}

/// One malformed or hostile message (never a valid request with id >= 1e9).
fn malformed(noise: &mut Noise, i: u64) -> Vec<u8> {
    let id = json!(i);
    let v = match noise.below(16) {
        0 => {
            let len = 1 + noise.below(200) as usize;
            return noise.bytes(len);
        }
        1 => return b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ".to_vec(),
        2 => json!([1, 2, 3]),
        3 => json!(null),
        4 => json!("initialize"),
        5 => json!({"jsonrpc": "1.0", "id": id, "method": "tools/list"}),
        6 => json!({"jsonrpc": "2.0", "id": {"nested": true}, "method": "tools/list"}),
        7 => json!({"jsonrpc": "2.0", "id": id, "method": 42}),
        8 => json!({"jsonrpc": "2.0", "id": id, "method": "no/such/method", "params": {}}),
        9 => json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": "oops"}),
        10 => json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                     "params": {"name": "memory_search", "arguments": {"query": 5, "limit": -3}}}),
        11 => json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                     "params": {"name": "memory_nope", "arguments": {}}}),
        12 => json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        13 => json!({"jsonrpc": "2.0", "id": id, "result": {"unexpected": "response"}}),
        14 => json!({"jsonrpc": "2.0", "id": id, "error": {"code": -1, "message": "x"}}),
        _ => json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": "memory_store", "arguments": {"label": "", "folder": "no-slash",
                               "messages": [{"role": "robot", "content": ""}]}}}),
    };
    v.to_string().into_bytes()
}

#[test]
fn malformed_json_rpc_on_stdio_keeps_the_server_answering() {
    let data = crate::tmp();
    let mut rpc = Rpc::spawn(mcp_command(data.path()));
    let mut noise = Noise(0x9E37_79B9_7F4A_7C15);
    // Before initialize: garbage, wrong types, unknown methods, requests,
    // notifications and responses.
    for i in 0..1500 {
        let m = malformed(&mut noise, i);
        rpc.send_raw(&m);
    }
    // One line over the 16 MiB line limit.
    let mut huge = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":""#.to_vec();
    huge.extend(std::iter::repeat_n(b'a', 17 * 1024 * 1024));
    huge.extend(br#""}}}"#);
    rpc.send_raw(&huge);

    let init = rpc.initialize(1_000_000_001);
    assert_eq!(init["result"]["serverInfo"]["name"], "memdb", "{init}");
    for i in 0..1500 {
        let m = malformed(&mut noise, 10_000 + i);
        rpc.send_raw(&m);
    }
    // Oversize content inside a valid request: a tool error, not a crash.
    let big = "word ".repeat(3 * 1024 * 1024 / 5);
    let r = rpc.call(
        1_000_000_002,
        "memory_search",
        json!({"query": big, "limit": 3}),
    );
    assert_eq!(r["result"]["isError"], true, "{r}");
    let list = rpc.request(1_000_000_003, "tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 7, "{list}");
    // On the way, malformed requests got JSON-RPC errors (before initialize
    // too) and bad tool calls tool errors.
    let errors = |pred: &dyn Fn(&Value) -> bool| rpc.seen.iter().filter(|v| pred(v)).count();
    let pre_init =
        errors(&|v| v["error"]["code"].is_i64() && v["id"].as_u64().is_some_and(|i| i < 1500));
    let post_init =
        errors(&|v| v["error"]["code"].is_i64() && v["id"].as_u64().is_some_and(|i| i >= 10_000));
    let tool_errors = errors(&|v| v["result"]["isError"] == json!(true));
    assert!(
        pre_init > 100 && post_init > 100 && tool_errors > 50,
        "JSON-RPC errors before/after initialize {pre_init}/{post_init}, tool errors {tool_errors}, of {} lines",
        rpc.seen.len()
    );
    // Still a working memory: store, then find it.
    let stored = rpc.call(
        1_000_000_004,
        "memory_store",
        json!({"label": "after the storm", "folder": "/fuzz",
               "messages": [{"role": "user", "content": "the lighthouse survived"}]}),
    );
    assert_eq!(stored["result"]["isError"], false, "{stored}");
    let found = rpc.call(
        1_000_000_005,
        "memory_search",
        json!({"query": "lighthouse"}),
    );
    assert_eq!(
        found["result"]["structuredContent"]["results"][0]["content"], "the lighthouse survived",
        "{found}"
    );
    let status = rpc.finish();
    assert!(status.success(), "exit status {status}");
    // Nothing but the one valid conversation was written.
    let db = memdb::Memdb::open(data.path()).expect("reopen");
    assert_eq!(
        db.sekha()
            .stats(&memdb::Filter::default())
            .expect("stats")
            .total_conversations,
        1
    );
}

#[test]
fn directory_held_by_memdb_server_forwards_or_refuses() {
    let data = crate::tmp();
    let port = free_port();
    let mut server = start_server(data.path(), port, KEY, Stdio::null());
    let endpoint: Value = serde_json::from_slice(
        &std::fs::read(data.path().join("server.json")).expect("endpoint file"),
    )
    .expect("endpoint JSON");
    assert_eq!(endpoint["url"], format!("http://127.0.0.1:{port}"));
    assert_eq!(endpoint["pid"], server.id());

    // Without a key: a clear startup failure, nothing served.
    let out = mcp_command(data.path())
        .stdin(Stdio::null())
        .output()
        .expect("run memdb-test-mcp");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("MEMDB_API_KEY") && stderr.contains(&format!("pid {}", server.id())),
        "{stderr}"
    );

    // With the key: tool calls go to the server, which holds the store.
    let mut cmd = mcp_command(data.path());
    cmd.env("MEMDB_API_KEY", KEY);
    let mut rpc = Rpc::spawn(cmd);
    let init = rpc.initialize(1);
    assert_eq!(init["result"]["serverInfo"]["name"], "memdb", "{init}");
    let stored = rpc.call(
        2,
        "memory_store",
        json!({"label": "forwarded", "folder": "/fwd",
               "messages": [{"role": "user", "content": "through the server"}]}),
    );
    assert_eq!(stored["result"]["isError"], false, "{stored}");
    let stats = rpc.call(3, "memory_stats", json!({}));
    assert_eq!(
        stats["result"]["structuredContent"]["total_conversations"], 1,
        "{stats}"
    );
    let bad = rpc.call(4, "memory_search", json!({"query": "x", "limit": 99}));
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    let text = bad["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("limit") && text.contains("400"), "{text}");
    assert!(rpc.finish().success());

    // The server saw the write through its own REST API.
    let r = crate::server_util::raw(
        format!("127.0.0.1:{port}").parse().expect("addr"),
        "GET",
        "/api/v1/stats",
        &[("Authorization".into(), format!("Bearer {KEY}"))],
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["data"]["total_conversations"], 1, "{}", r.text());

    let status = crate::server_e2e::sigterm_and_wait(&mut server);
    assert!(status.success(), "{status}");
    assert!(
        !data.path().join("server.json").exists(),
        "endpoint file left after shutdown"
    );
}

#[test]
fn official_python_sdk_calls_every_memorg_tool_over_stdio() {
    let data = crate::tmp();
    run_checks("memorg_mcp_e2e.py", |c| {
        c.arg("stdio")
            .arg(env!("CARGO_BIN_EXE_memdb-test-mcp"))
            .args(["--tools", "memorg", "--embedder", "hashing"])
            .arg("--data")
            .arg(data.path())
            .env_remove("MEMDB_API_KEY")
            .env_remove("MEMDB_API_KEYS")
    });
    let db = memdb::Memdb::open(data.path()).expect("reopen after the session");
    // One session, conversation, two topics, two exchanges; the note was deleted.
    assert_eq!(db.memorg().memory_usage().expect("usage").active_items, 6);
}

/// `memdb mcp` serving KuraDB's tools over a local store runs the watcher:
/// a knowledge base registered before is synced at start, and `search_rag`
/// answers over stdio with KuraDB's shapes.
#[test]
fn kuradb_tools_over_stdio_see_a_synced_knowledge_base() {
    let data = crate::tmp();
    let inbox = crate::tmp();
    std::fs::write(
        inbox.path().join("otters.md"),
        "Sea otters hold hands while sleeping.\n",
    )
    .unwrap();
    {
        let db = memdb::Memdb::open(data.path()).unwrap();
        db.kuradb()
            .add("animals", &[inbox.path().to_path_buf()])
            .unwrap();
        db.close().unwrap();
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memdb-test-mcp"));
    cmd.args(["--tools", "kuradb", "--embedder", "hashing", "--data"])
        .arg(data.path())
        .env_remove("MEMDB_API_KEY")
        .env_remove("MEMDB_API_KEYS");
    let mut rpc = Rpc::spawn(cmd);
    rpc.initialize(1);
    let list = rpc.request(2, "tools/list", json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["list_rag", "search_rag"]);
    let listed = rpc.call(3, "list_rag", json!({}));
    assert_eq!(
        listed["result"]["structuredContent"]["loaded"],
        json!(["animals"])
    );
    let mut id = 10;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        id += 1;
        let r = rpc.call(
            id,
            "search_rag",
            json!({"db": "animals", "q": "otters", "mode": "keyword"}),
        );
        let data = &r["result"]["structuredContent"];
        if data["keyword"][0]["matches"][0]["chunk"] == 1 {
            assert!(data.get("semantic").is_none(), "{data}");
            break;
        }
        assert!(Instant::now() < deadline, "never synced: {r}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let bad = rpc.call(99, "search_rag", json!({"db": "nope", "q": "x"}));
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert!(rpc.finish().success());
}
