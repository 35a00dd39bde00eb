//! Bearer-token authentication and the read/write split.
//!
//! Every route but `/health` sits behind [`crate::layers::require`], which also decides
//! from the method and route template whether the route writes, by looking
//! the route up in the contract tables ([`crate::contract`]): a route is a
//! read only if declared one. Keys are compared in constant time against every
//! configured key (no early exit on the first match), so timing reveals
//! neither which key matched nor how much of a key was right. Read-only keys
//! get 403 on writes.
//!
//! The middleware also decides which namespace (SPEC §12) the request
//! addresses: the `X-Memdb-Namespace` header or the `namespace` query
//! parameter, else the key's default (`default`, or the first namespace of a
//! key limited to a list). A key limited to namespaces gets 403 for any other
//! namespace and for store-wide routes. The namespace travels with the
//! request as a [`RequestNamespace`] extension (read by the MCP handler) and
//! as a task-local ([`current_namespace`]) that [`crate::state::AppState::run`] reads, so
//! every engine call of a handler runs on that namespace's handle.

use std::sync::Arc;

use axum::extract::{Query, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::error::ApiError;

/// What a presented key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read routes only.
    Read,
    /// Every route.
    Write,
}

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permission {
    /// Anyone: no key is asked for (outside the auth layer).
    Public,
    /// Any valid key, read-only keys included.
    Read,
    /// A key that may write.
    Write,
    /// Any valid key not limited to namespaces (SPEC §12): the route
    /// reads across the whole store.
    StoreRead,
    /// A writing key not limited to namespaces: the route changes the
    /// whole store.
    StoreWrite,
}

impl From<Access> for Permission {
    fn from(a: Access) -> Self {
        match a {
            Access::Read => Permission::Read,
            Access::Write => Permission::Write,
        }
    }
}

/// The configured keys.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    full: Vec<Vec<u8>>,
    readonly: Vec<Vec<u8>>,
    /// By [`KeyId`]: the namespaces a key is limited to (`None`: all).
    limits: Vec<Option<Arc<[String]>>>,
}

impl Keys {
    /// Keys that may write, and keys that may only read; none limited to
    /// namespaces.
    pub fn new(full: &[String], readonly: &[String]) -> Self {
        Self::with_limits(full, readonly, &[])
    }

    /// Keys that may write, keys that may only read, and the namespaces
    /// some of them are limited to (a key listed twice gets the union).
    pub fn with_limits(full: &[String], readonly: &[String], limits: &[KeyNamespaces]) -> Self {
        let limits = full
            .iter()
            .chain(readonly)
            .map(|key| {
                let mut names: Vec<String> = Vec::new();
                for l in limits.iter().filter(|l| l.key == *key) {
                    for n in &l.namespaces {
                        if !names.contains(n) {
                            names.push(n.clone());
                        }
                    }
                }
                (!names.is_empty()).then(|| Arc::from(names))
            })
            .collect();
        Keys {
            full: full.iter().map(|k| k.as_bytes().to_vec()).collect(),
            readonly: readonly.iter().map(|k| k.as_bytes().to_vec()).collect(),
            limits,
        }
    }

    /// The namespaces key `id` is limited to, in configured order (the
    /// first is its default), or `None` when it may use every namespace.
    pub fn limit(&self, id: KeyId) -> Option<&[String]> {
        usize::try_from(id.0)
            .ok()
            .and_then(|i| self.limits.get(i))
            .and_then(|l| l.as_deref())
    }

    /// The access `token` grants, if any. Runs in time independent of which
    /// key (if any) matches.
    pub fn check(&self, token: &[u8]) -> Option<Access> {
        self.identify(token).map(|(access, _)| access)
    }

    /// The access `token` grants and which configured key it is. Every key
    /// is compared, in constant time, whatever matches.
    pub fn identify(&self, token: &[u8]) -> Option<(Access, KeyId)> {
        use subtle::ConditionallySelectable;
        let mut found = subtle::Choice::from(0u8);
        let mut index = 0u64;
        let mut write = subtle::Choice::from(0u8);
        for (i, k) in self.full.iter().chain(&self.readonly).enumerate() {
            let hit = k.as_slice().ct_eq(token);
            index.conditional_assign(&(i as u64), hit);
            write |= hit & subtle::Choice::from(u8::from(i < self.full.len()));
            found |= hit;
        }
        if !bool::from(found) {
            return None;
        }
        let access = if bool::from(write) {
            Access::Write
        } else {
            Access::Read
        };
        Some((access, KeyId(index)))
    }
}

/// Which configured key a request presented (its position in the
/// configuration): MCP sessions belong to the key that opened them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId(pub u64);

/// An API key limited to a list of namespaces (configuration
/// `key_namespaces`, flag `--key-namespaces KEY=NS[,NS...]`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyNamespaces {
    /// One of the configured keys (read-write or read-only).
    pub key: String,
    /// The namespaces it may use; the first is its default.
    pub namespaces: Vec<String>,
}

impl std::str::FromStr for KeyNamespaces {
    type Err = String;

    /// `KEY=NS[,NS...]`. Namespace names cannot hold `=`, so the key is
    /// everything before the last `=` (keys may end in base64 padding).
    fn from_str(s: &str) -> Result<Self, String> {
        let (key, names) = s
            .rsplit_once('=')
            .ok_or("expected KEY=NAMESPACE[,NAMESPACE...]")?;
        let namespaces: Vec<String> = names
            .split(',')
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .collect();
        Ok(KeyNamespaces {
            key: key.trim().to_string(),
            namespaces,
        })
    }
}

/// The namespace a request addresses, as decided by
/// [`crate::layers::require`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestNamespace(pub Arc<str>);

tokio::task_local! {
    static NAMESPACE: Arc<str>;
}

/// Runs `fut` with `namespace` as the task's namespace
/// ([`current_namespace`]).
pub async fn with_namespace<F: std::future::Future>(namespace: Arc<str>, fut: F) -> F::Output {
    NAMESPACE.scope(namespace, fut).await
}

/// The namespace of the request being served on this task, if the auth
/// middleware set one (it does for every authenticated route).
pub fn current_namespace() -> Option<Arc<str>> {
    NAMESPACE.try_with(Arc::clone).ok()
}

/// The request header naming a namespace.
pub const NAMESPACE_HEADER: &str = "x-memdb-namespace";

/// The namespace every unlimited key uses unless the request names one.
pub const DEFAULT_NAMESPACE: &str = "default";

#[derive(serde::Deserialize)]
struct NamespaceParam {
    namespace: Option<String>,
}

/// The namespace the request names (header or query parameter), if any;
/// an error message when the two disagree or the header is not text.
fn requested_namespace(req: &Request) -> Result<Option<String>, String> {
    let header = match req.headers().get(NAMESPACE_HEADER) {
        Some(v) => Some(
            v.to_str()
                .map_err(|_| format!("the {NAMESPACE_HEADER} header is not text"))?
                .trim()
                .to_string(),
        ),
        None => None,
    };
    let param = Query::<NamespaceParam>::try_from_uri(req.uri())
        .ok()
        .and_then(|q| q.0.namespace);
    match (header, param) {
        (Some(h), Some(p)) if h != p => Err(format!(
            "the {NAMESPACE_HEADER} header ({h:?}) and the namespace parameter ({p:?}) disagree"
        )),
        (Some(h), _) => Ok(Some(h)),
        (None, p) => Ok(p),
    }
}

/// The namespace key `key` addresses with this request, or the refusal.
pub fn resolve_namespace(
    keys: &Keys,
    req: &Request,
    key: KeyId,
    store_wide: bool,
) -> Result<Arc<str>, ApiError> {
    let requested =
        requested_namespace(req).map_err(|m| ApiError::new(StatusCode::BAD_REQUEST, m))?;
    if let Some(name) = &requested {
        memdb::validate_namespace(name)?;
    }
    let Some(allowed) = keys.limit(key) else {
        return Ok(Arc::from(requested.as_deref().unwrap_or(DEFAULT_NAMESPACE)));
    };
    if store_wide {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "this API key is limited to namespaces; this route covers the whole store",
        ));
    }
    match requested {
        None => Ok(Arc::from(
            allowed.first().map_or(DEFAULT_NAMESPACE, String::as_str),
        )),
        Some(name) if allowed.contains(&name) => Ok(Arc::from(name)),
        Some(name) => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("this API key may not use namespace {name:?}"),
        )),
    }
}

pub fn unauthorized(message: &str) -> Response {
    let mut r = ApiError::new(StatusCode::UNAUTHORIZED, message).into_response();
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

/// The access the request's `Authorization: Bearer <key>` grants, or why
/// it grants none (the 401 message).
pub fn authenticate(keys: &Keys, req: &Request) -> Result<(Access, KeyId), &'static str> {
    let Some(value) = req.headers().get(header::AUTHORIZATION) else {
        return Err("missing authorization header");
    };
    let Some(token) = value.as_bytes().strip_prefix(b"Bearer ") else {
        return Err("invalid authorization format: expected `Bearer <api key>`");
    };
    keys.identify(token).ok_or("invalid API key")
}

/// The MCP endpoint: any valid key may use it (open, call, close a
/// session); the MCP handler refuses write tools to read-only keys and
/// binds each session to the key that opened it.
pub const MCP_ROUTE: &str = "/mcp";

/// The routes `kuradb_open` serves without a key.
pub const KURADB_OPEN_ROUTES: [&str; 4] =
    ["/api/list", "/api/search", "/api/keyword", "/api/semantic"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_grant_their_access_only() {
        let w = "w".repeat(40);
        let r = "r".repeat(40);
        let keys = Keys::new(std::slice::from_ref(&w), std::slice::from_ref(&r));
        assert_eq!(keys.check(w.as_bytes()), Some(Access::Write));
        assert_eq!(keys.check(r.as_bytes()), Some(Access::Read));
        assert_eq!(keys.check(&w.as_bytes()[..39]), None);
        assert_eq!(keys.check(b""), None);
        let r2 = "s".repeat(40);
        let keys = Keys::new(std::slice::from_ref(&w), &[r.clone(), r2.clone()]);
        assert_eq!(keys.identify(w.as_bytes()), Some((Access::Write, KeyId(0))));
        assert_eq!(keys.identify(r.as_bytes()), Some((Access::Read, KeyId(1))));
        assert_eq!(keys.identify(r2.as_bytes()), Some((Access::Read, KeyId(2))));
    }

    #[test]
    fn limits_belong_to_their_keys() {
        let w = "w".repeat(40);
        let r = "r".repeat(40);
        let limited = [
            KeyNamespaces {
                key: r.clone(),
                namespaces: vec!["a".into(), "b".into()],
            },
            KeyNamespaces {
                key: r.clone(),
                namespaces: vec!["b".into(), "c".into()],
            },
        ];
        let keys = Keys::with_limits(std::slice::from_ref(&w), std::slice::from_ref(&r), &limited);
        let (_, wid) = keys.identify(w.as_bytes()).expect("w");
        let (_, rid) = keys.identify(r.as_bytes()).expect("r");
        assert_eq!(keys.limit(wid), None);
        assert_eq!(
            keys.limit(rid),
            Some(&["a".to_string(), "b".into(), "c".into()][..])
        );
        assert_eq!(keys.limit(KeyId(99)), None);
    }

    #[test]
    fn key_namespaces_parse_from_flags() {
        let k: KeyNamespaces = "abc==def=team-a, team.b".parse().expect("parse");
        assert_eq!(k.key, "abc==def");
        assert_eq!(k.namespaces, vec!["team-a", "team.b"]);
        assert!("no-separator".parse::<KeyNamespaces>().is_err());
    }
}
