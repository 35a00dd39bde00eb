//! A local HTTP/1.1 test server speaking just enough of the protocol for
//! the remote-provider tests (a std `TcpListener` thread, one scripted reply
//! per request). Shared by `tests/suite/remote.rs` and, through `#[path]`,
//! by `cli/tests/openai.rs`, which uses only part of it (hence the allow).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
}

/// What the server answers.
pub enum Reply {
    Json(u16, Value),
    /// Status, extra header lines, raw body.
    Raw(u16, &'static str, String),
    /// Waits, then answers 200 `{}` (the client should have given up).
    Stall(Duration),
    /// 200 `text/event-stream`: each string as one `data:` event, flushed
    /// one by one, then the connection is closed.
    Sse(Vec<String>),
    /// As `Sse`, waiting this long before each event after the first.
    SseSlow(Vec<String>, Duration),
}

pub type Handler = dyn Fn(usize, &Seen) -> Reply + Send + Sync;

/// A local HTTP/1.1 server answering each request with `handler(n, request)`.
pub struct Server {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub fn start(handler: impl Fn(usize, &Seen) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let handler: Arc<Handler> = Arc::new(handler);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Some(req) = read_request(&mut stream) else {
                    continue;
                };
                let n = {
                    let mut log = log.lock().expect("log");
                    log.push(req.clone());
                    log.len() - 1
                };
                let (status, extra, body) = match handler(n, &req) {
                    reply @ (Reply::Sse(_) | Reply::SseSlow(..)) => {
                        let (events, pause) = match reply {
                            Reply::SseSlow(e, d) => (e, d),
                            Reply::Sse(e) => (e, Duration::ZERO),
                            _ => unreachable!(),
                        };
                        let _ = stream.write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
                        );
                        for (i, e) in events.into_iter().enumerate() {
                            if i > 0 {
                                std::thread::sleep(pause);
                            }
                            let _ = stream.write_all(format!("data: {e}\n\n").as_bytes());
                            let _ = stream.flush();
                        }
                        continue;
                    }
                    Reply::Json(status, v) => (status, "", v.to_string()),
                    Reply::Raw(status, extra, body) => (status, extra, body),
                    Reply::Stall(d) => {
                        std::thread::sleep(d);
                        (200, "", "{}".to_string())
                    }
                };
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(body.as_bytes());
            }
        });
        Server { addr, seen }
    }

    pub fn base(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("log").clone()
    }
}

fn read_request(stream: &mut std::net::TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut length = 0usize;
    let mut authorization = None;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (name, value) = h.split_once(':')?;
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().ok()?,
            "authorization" => authorization = Some(value.trim().to_string()),
            _ => {}
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    Some(Seen {
        path,
        authorization,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}
