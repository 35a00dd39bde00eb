//! Host and Origin validation (DNS rebinding and cross-site requests).
//!
//! **Host**, on every route but `/health`: a request is served when its `Host` (or the
//! HTTP/2 authority) is an IP literal, `localhost`, or a name listed in
//! `allowed_hosts` (`*` accepts any). A DNS-rebinding page reaches the
//! server under a name its attacker controls, never under an IP literal,
//! so IP literals are always safe; a deployment behind a domain name lists
//! it. A request without a Host (HTTP/1.0) is served: browsers always send
//! one. Refused: 403 `{error, code}`.
//!
//! **Origin**, on `/mcp` (the MCP specification requires it of streamable
//! HTTP servers): a request carrying `Origin` is served when the origin is
//! in `allowed_origins` or `cors_origins` (`*` in either accepts any), or
//! when the server listens on loopback and the origin is a loopback one
//! (`http(s)://localhost|127.0.0.1|[::1]`, any port). Every other origin,
//! `null` included, gets 403. Requests without `Origin` (every non-browser
//! client) are served.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// A parsed `scheme://host[:port]` origin, host lowercased, port explicit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `http` or `https` (or another scheme, compared as written).
    pub scheme: String,
    /// Host name or IP literal (IPv6 without brackets).
    pub host: String,
    /// The port, the scheme's default when absent.
    pub port: Option<u16>,
}

impl Origin {
    /// Parses an origin as browsers send it; `None` when malformed.
    pub fn parse(s: &str) -> Option<Origin> {
        let (scheme, rest) = s.split_once("://")?;
        if scheme.is_empty() || rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
            return None;
        }
        let scheme = scheme.to_ascii_lowercase();
        let (host, port) = split_host_port(rest)?;
        let port = port.or(match scheme.as_str() {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        });
        Some(Origin {
            scheme,
            host: host.to_ascii_lowercase(),
            port,
        })
    }

    fn is_loopback(&self) -> bool {
        is_loopback_host(&self.host)
    }
}

/// Splits `host[:port]` (IPv6 in brackets); `None` when malformed.
fn split_host_port(s: &str) -> Option<(&str, Option<u16>)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?.parse().ok()?),
        };
        return Some((host, port));
    }
    match s.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => Some((host, Some(port.parse().ok()?))),
        // A bare IPv6 address (not valid in a Host header, but unambiguous).
        Some(_) => Some((s, None)),
        None => Some((s, None)),
    }
    .filter(|(h, _)| !h.is_empty())
}

fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether a request's host (from `Host` or the URI authority) may be served.
pub fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let Some((name, _)) = split_host_port(host) else {
        return false;
    };
    if name.parse::<std::net::IpAddr>().is_ok() || name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    allowed
        .iter()
        .any(|a| a == "*" || a.eq_ignore_ascii_case(name) || a.eq_ignore_ascii_case(host))
}

/// Whether a request's `Origin` may call `/mcp`: listed in `allowed` (the
/// configured `allowed_origins` and `cors_origins`; `*` admits any), or a
/// loopback origin calling a loopback listener.
pub fn origin_allowed(origin: &str, allowed: &[String], loopback_listener: bool) -> bool {
    if allowed.iter().any(|o| o == "*") {
        return true;
    }
    let Some(o) = Origin::parse(origin) else {
        return false;
    };
    if loopback_listener && o.is_loopback() {
        return true;
    }
    allowed
        .iter()
        .any(|a| Origin::parse(a).is_some_and(|a| a == o))
}

pub fn forbidden(message: &str) -> Response {
    ApiError::new(StatusCode::FORBIDDEN, message).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_parse_with_default_ports() {
        let o = Origin::parse("HTTP://LocalHost").unwrap();
        assert_eq!(
            (o.scheme.as_str(), o.host.as_str(), o.port),
            ("http", "localhost", Some(80))
        );
        let o = Origin::parse("https://[::1]:8443").unwrap();
        assert_eq!((o.host.as_str(), o.port), ("::1", Some(8443)));
        assert!(o.is_loopback());
        assert!(Origin::parse("null").is_none());
        assert!(Origin::parse("http://a.example/path").is_none());
        assert!(Origin::parse("http://a.example:99999").is_none());
        assert_eq!(
            Origin::parse("https://app.example"),
            Origin::parse("https://app.example:443")
        );
    }

    #[test]
    fn hosts_pass_as_ip_literals_localhost_or_listed_names() {
        assert!(host_allowed("127.0.0.1:8080", &[]));
        assert!(host_allowed("[::1]:8080", &[]));
        assert!(host_allowed("10.1.2.3", &[]));
        assert!(host_allowed("LOCALHOST:3000", &[]));
        assert!(!host_allowed("evil.example", &[]));
        assert!(!host_allowed("evil.example:8080", &[]));
        assert!(!host_allowed("127.0.0.1.evil.example", &[]));
        let listed = vec!["memory.example.com".to_string()];
        assert!(host_allowed("memory.example.com:443", &listed));
        assert!(!host_allowed("other.example.com", &listed));
        assert!(host_allowed("anything.example", &["*".to_string()]));
        assert!(!host_allowed("", &[]));
    }
}
