//! The endpoint file of a running memdb-server and the forwarder `memdb mcp`
//! uses when that server holds the data directory.
//!
//! memdb-server writes `<data>/server.json` (`{"url", "pid", "started_at"}`)
//! once it listens and removes it on shutdown (`memdb daemon` reads it too). A second process that finds the store
//! locked by that pid sends each tool call to the server's
//! `POST /mcp/tools/{tool}` route (with `MEMDB_API_KEY`) instead of opening
//! the store, so two processes never write one store. HTTP through ureq
//! (the workspace's client), answers capped at 256 MiB.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// File name of the endpoint file inside the data directory.
pub const ENDPOINT_FILE: &str = "server.json";

/// How long a forwarded call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);
/// Largest answer read from the server (an export of a big store is the
/// largest a tool returns).
const MAX_RESPONSE_BYTES: u64 = 256 << 20;

/// Where a running memdb-server listens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// Base URL, `http://host:port`.
    pub url: String,
    /// The server's process id.
    pub pid: u32,
    /// When the server started listening (RFC 3339, UTC); absent in files
    /// written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
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
        started_at: Some(chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
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
    key: String,
    /// Sent as `X-Memdb-Namespace` when set.
    namespace: Option<String>,
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
        // Resolved once here so a bad endpoint file fails at startup.
        authority
            .to_socket_addrs()
            .map_err(|e| format!("server URL {}: {e}", endpoint.url))?
            .next()
            .ok_or_else(|| format!("server URL {} resolves to no address", endpoint.url))?;
        Ok(Forwarder {
            authority,
            key,
            namespace: None,
        })
    }

    /// The same forwarder addressing namespace `name` (SPEC §12).
    pub fn with_namespace(mut self, name: Option<String>) -> Self {
        self.namespace = name;
        self
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
            .post(
                &format!("{}{tool}", crate::contract::TOOL_ROUTE_PREFIX),
                &body,
            )
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

    fn post(&self, path: &str, body: &[u8]) -> Result<(u16, Vec<u8>), String> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(CALL_TIMEOUT))
            .timeout_connect(Some(Duration::from_secs(10)))
            .build()
            .into();
        let mut request = agent
            .post(&format!("http://{}{path}", self.authority))
            .header("Authorization", &format!("Bearer {}", self.key))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json");
        if let Some(ns) = &self.namespace {
            request = request.header(crate::auth::NAMESPACE_HEADER, ns);
        }
        let mut response = request.send(body).map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BYTES)
            .read_to_vec()
            .map_err(|e| e.to_string())?;
        Ok((status, body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_file_round_trips_and_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let addr: SocketAddr = "0.0.0.0:8123".parse().unwrap();
        let guard = write_endpoint(dir.path(), addr).unwrap();
        let e = read_endpoint(dir.path()).unwrap();
        assert_eq!(e.url, "http://127.0.0.1:8123");
        assert_eq!(e.pid, std::process::id());
        let started = e.started_at.as_deref().unwrap();
        assert!(
            chrono::DateTime::parse_from_rfc3339(started).is_ok(),
            "{started}"
        );
        drop(guard);
        assert!(read_endpoint(dir.path()).is_none());
    }

    #[test]
    fn forwarder_rejects_non_http_urls() {
        let e = Endpoint {
            url: "https://example.invalid".into(),
            pid: 1,
            started_at: None,
        };
        assert!(Forwarder::new(&e, "k".into()).is_err());
    }
}
