//! A memdb-server running in-process on 127.0.0.1:0 over a temporary data
//! directory, and a minimal HTTP/1.1 client (std only) to talk to it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use memdb::Memdb;
use memdb_server::ServerConfig;
use serde_json::Value;

/// A read-write key.
pub const KEY: &str = "test-key-0123456789abcdefghijklmnopqrstuvwxyz";
/// A second read-write key.
pub const KEY2: &str = "second-key-0123456789abcdefghijklmnopqrstuvwxyz";
/// A read-only key.
pub const RO_KEY: &str = "readonly-key-0123456789abcdefghijklmnopqrstuvw";

/// A running server; stops (gracefully) on drop.
pub struct TestServer {
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The configuration the tests use unless they change it.
pub fn config() -> ServerConfig {
    ServerConfig {
        api_keys: vec![KEY.into(), KEY2.into()],
        readonly_api_keys: vec![RO_KEY.into()],
        rate_limit_per_second: 0.0,
        ..ServerConfig::default()
    }
}

impl TestServer {
    /// Starts a server with `config` over a new temporary directory.
    pub fn start(config: ServerConfig) -> TestServer {
        Self::start_with(config, memdb::Config::default())
    }

    /// Starts a server whose engine is opened with `engine` (an embedder).
    pub fn start_with(config: ServerConfig, engine: memdb::Config) -> TestServer {
        Self::start_seeded(config, engine, |_| {})
    }

    /// Like [`TestServer::start_with`], with `seed` run on the store before
    /// the server takes it (for state no route creates).
    pub fn start_seeded(
        config: ServerConfig,
        engine: memdb::Config,
        seed: impl FnOnce(&Memdb),
    ) -> TestServer {
        let dir = crate::tmp();
        let db = Memdb::open_with(dir.path(), engine).expect("open");
        seed(&db);
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                addr_tx
                    .send(listener.local_addr().expect("addr"))
                    .expect("send");
                memdb_server::serve(config, db, listener, async {
                    let _ = stop_rx.await;
                })
                .await
                .expect("serve");
            });
        });
        let addr = addr_rx.recv().expect("server address");
        TestServer {
            addr,
            dir,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// Stops the server and waits until the store is closed.
    pub fn stop(mut self) -> tempfile::TempDir {
        self.shutdown();
        std::mem::replace(&mut self.dir, crate::tmp())
    }

    fn shutdown(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            t.join().expect("server thread");
        }
    }

    /// Sends a request; `key` goes in `Authorization: Bearer`.
    pub fn req(&self, method: &str, path: &str, key: Option<&str>, body: Option<&str>) -> Resp {
        let mut headers = Vec::new();
        if let Some(k) = key {
            headers.push(("Authorization".to_string(), format!("Bearer {k}")));
        }
        if body.is_some() {
            headers.push(("Content-Type".to_string(), "application/json".to_string()));
        }
        raw(self.addr, method, path, &headers, body.map(str::as_bytes))
    }

    /// Authorized GET with the read-write key.
    pub fn get(&self, path: &str) -> Resp {
        self.req("GET", path, Some(KEY), None)
    }

    /// Authorized request with a JSON body and the read-write key.
    pub fn send(&self, method: &str, path: &str, body: &Value) -> Resp {
        self.req(method, path, Some(KEY), Some(&body.to_string()))
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    /// The body as JSON (panics with the body text if it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "status {} body is not JSON ({e}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// A header's value (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Sends one HTTP/1.1 request with `Connection: close` and reads the answer.
pub fn raw(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: Option<&[u8]>,
) -> Resp {
    let mut s = TcpStream::connect(addr).expect("connect");
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    let body = body.unwrap_or(b"");
    if !body.is_empty() || method != "GET" {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).expect("write head");
    // The server may answer (413) before reading a large body: ignore write errors.
    let _ = s.write_all(body);
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    parse(&buf)
}

fn parse(buf: &[u8]) -> Resp {
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(buf)));
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("status line");
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status code");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = buf[end + 4..].to_vec();
    let chunked = headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    if chunked {
        body = dechunk(&body);
    }
    Resp {
        status,
        headers,
        body,
    }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = b.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&b[..eol]).into_owned();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("0").trim(), 16)
            .unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = eol + 2;
        out.extend_from_slice(&b[start..start + size]);
        b = &b[start + size + 2..];
    }
    out
}

/// Asserts an `{error, code}` answer with `status`; returns the message.
pub fn assert_error(r: &Resp, status: u16) -> String {
    assert_eq!(r.status, status, "body: {}", r.text());
    let v = r.json();
    assert_eq!(v["code"], status, "body: {v}");
    let msg = v["error"].as_str().expect("error message").to_string();
    assert!(!msg.is_empty());
    assert!(!msg.contains("/tmp"), "internal path leaked: {msg}");
    msg
}

/// The shared store handle is not exposed; count through the API.
pub fn conversation_count(s: &TestServer) -> u64 {
    let r = s.get("/api/v1/conversations/count");
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["count"].as_u64().expect("count")
}
