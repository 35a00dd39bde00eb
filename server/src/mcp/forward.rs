//! The endpoint file of a running memdb-server and the forwarder `memdb mcp`
//! uses when that server holds the data directory.
//!
//! memdb-server writes `<data>/server.json` (`{"url", "pid"}`) once it
//! listens and removes it on shutdown. A second process that finds the store
//! locked by that pid sends each tool call to the server's
//! `POST /mcp/tools/{tool}` route (with `MEMDB_API_KEY`) instead of opening
//! the store, so two processes never write one store. Plain HTTP/1.1 over a
//! TCP connection per call: the server is local (loopback) in this setup.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// File name of the endpoint file inside the data directory.
pub const ENDPOINT_FILE: &str = "server.json";

/// How long a forwarded call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// Where a running memdb-server listens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// Base URL, `http://host:port`.
    pub url: String,
    /// The server's process id.
    pub pid: u32,
}

/// Removes the endpoint file when dropped (if it is still this process's).
#[derive(Debug)]
pub struct EndpointGuard {
    path: PathBuf,
}

impl Drop for EndpointGuard {
    fn drop(&mut self) {
        if read_endpoint_file(&self.path).is_some_and(|e| e.pid == std::process::id()) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The URL clients on this machine use for a server bound to `addr`
/// (an unspecified address is reached through loopback).
pub fn local_url(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        std::net::IpAddr::V4(v4) if v4.is_unspecified() => std::net::Ipv4Addr::LOCALHOST.into(),
        std::net::IpAddr::V6(v6) if v6.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    format!("http://{}", SocketAddr::new(ip, addr.port()))
}

/// Writes `<dir>/server.json` atomically (temporary file, then rename).
pub fn write_endpoint(dir: &Path, addr: SocketAddr) -> std::io::Result<EndpointGuard> {
    let endpoint = Endpoint {
        url: local_url(addr),
        pid: std::process::id(),
    };
    let path = dir.join(ENDPOINT_FILE);
    let tmp = dir.join(format!("{ENDPOINT_FILE}.{}.tmp", endpoint.pid));
    let body = serde_json::to_vec_pretty(&endpoint).map_err(std::io::Error::other)?;
    std::fs::write(&tmp, body)?;
    std::fs::rename(&tmp, &path)?;
    Ok(EndpointGuard { path })
}

fn read_endpoint_file(path: &Path) -> Option<Endpoint> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// The endpoint a running server left in `dir`, if any.
pub fn read_endpoint(dir: &Path) -> Option<Endpoint> {
    read_endpoint_file(&dir.join(ENDPOINT_FILE))
}

/// Sends tool calls to a running memdb-server.
#[derive(Debug, Clone)]
pub struct Forwarder {
    authority: String,
    addr: SocketAddr,
    key: String,
}

impl Forwarder {
    /// A forwarder to `endpoint` authenticating with `key`.
    pub fn new(endpoint: &Endpoint, key: String) -> Result<Self, String> {
        let authority = endpoint
            .url
            .strip_prefix("http://")
            .ok_or_else(|| format!("unsupported server URL {}", endpoint.url))?
            .trim_end_matches('/')
            .to_string();
        let addr = authority
            .to_socket_addrs()
            .map_err(|e| format!("server URL {}: {e}", endpoint.url))?
            .next()
            .ok_or_else(|| format!("server URL {} resolves to no address", endpoint.url))?;
        Ok(Forwarder {
            authority,
            addr,
            key,
        })
    }

    /// The server's base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.authority)
    }

    /// Calls `tool` with `args`; `Ok(data)` or the server's error message.
    /// Blocking: run it on the blocking pool.
    pub fn call(&self, tool: &str, args: &Value) -> Result<Value, String> {
        let body = serde_json::to_vec(args).map_err(|e| e.to_string())?;
        let (status, response) = self
            .post(&format!("/mcp/tools/{tool}"), &body)
            .map_err(|e| format!("memdb-server at {} is unreachable: {e}", self.url()))?;
        let envelope: Value = serde_json::from_slice(&response).map_err(|_| {
            format!(
                "memdb-server answered HTTP {status} without a JSON body: {}",
                String::from_utf8_lossy(&response[..response.len().min(200)])
            )
        })?;
        if status == 200 && envelope.get("success") == Some(&Value::Bool(true)) {
            return Ok(envelope.get("data").cloned().unwrap_or(Value::Null));
        }
        let message = envelope
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("request failed");
        Err(format!("{message} (HTTP {status})"))
    }

    fn post(&self, path: &str, body: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
        let mut stream = TcpStream::connect_timeout(&self.addr, Duration::from_secs(10))?;
        stream.set_read_timeout(Some(CALL_TIMEOUT))?;
        stream.set_write_timeout(Some(CALL_TIMEOUT))?;
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nAccept: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            self.authority,
            self.key,
            body.len()
        );
        stream.write_all(head.as_bytes())?;
        stream.write_all(body)?;
        stream.flush()?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw)?;
        parse_response(&raw)
    }
}

fn bad(msg: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, msg.to_string())
}

/// Status and body of a complete HTTP/1.1 response (`Content-Length`,
/// chunked, or delimited by the connection's end).
fn parse_response(raw: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("truncated HTTP response"))?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let body = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(|| bad("malformed HTTP status line"))?;
    let mut chunked = false;
    let mut length = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked") {
            chunked = true;
        } else if name.eq_ignore_ascii_case("content-length") {
            length = value.parse::<usize>().ok();
        }
    }
    if chunked {
        return Ok((status, dechunk(body)?));
    }
    match length {
        Some(len) if len <= body.len() => Ok((status, body[..len].to_vec())),
        Some(_) => Err(bad("truncated HTTP body")),
        None => Ok((status, body.to_vec())),
    }
}

fn dechunk(mut body: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = body
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| bad("truncated chunk"))?;
        let size_text = String::from_utf8_lossy(&body[..eol]);
        let size_hex = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_hex, 16).map_err(|_| bad("bad chunk size"))?;
        body = &body[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        if body.len() < size + 2 {
            return Err(bad("truncated chunk"));
        }
        out.extend_from_slice(&body[..size]);
        body = &body[size + 2..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_length_and_chunked_bodies() {
        let r = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}trailing";
        assert_eq!(parse_response(r).unwrap(), (200, b"{}".to_vec()));
        let r = b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(parse_response(r).unwrap(), (404, b"abcde".to_vec()));
        assert!(parse_response(b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n{}").is_err());
        assert!(parse_response(b"garbage").is_err());
    }

    #[test]
    fn endpoint_file_round_trips_and_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let addr: SocketAddr = "0.0.0.0:8123".parse().unwrap();
        let guard = write_endpoint(dir.path(), addr).unwrap();
        let e = read_endpoint(dir.path()).unwrap();
        assert_eq!(e.url, "http://127.0.0.1:8123");
        assert_eq!(e.pid, std::process::id());
        drop(guard);
        assert!(read_endpoint(dir.path()).is_none());
    }

    #[test]
    fn forwarder_rejects_non_http_urls() {
        let e = Endpoint {
            url: "https://example.invalid".into(),
            pid: 1,
        };
        assert!(Forwarder::new(&e, "k".into()).is_err());
    }
}
