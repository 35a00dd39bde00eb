//! Bearer-token authentication and the read/write split.
//!
//! Every route but `/health` sits behind [`require`], which also decides
//! from the method and route template whether the route writes. Keys are compared in constant time against every
//! configured key (no early exit on the first match), so timing reveals
//! neither which key matched nor how much of a key was right. Read-only keys
//! get 403 on writes.

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::state::AppState;

/// What a presented key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read routes only.
    Read,
    /// Every route.
    Write,
}

/// The configured keys.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    full: Vec<Vec<u8>>,
    readonly: Vec<Vec<u8>>,
}

impl Keys {
    /// Keys that may write, and keys that may only read.
    pub fn new(full: &[String], readonly: &[String]) -> Self {
        Keys {
            full: full.iter().map(|k| k.as_bytes().to_vec()).collect(),
            readonly: readonly.iter().map(|k| k.as_bytes().to_vec()).collect(),
        }
    }

    /// The access `token` grants, if any. Runs in time independent of which
    /// key (if any) matches.
    pub fn check(&self, token: &[u8]) -> Option<Access> {
        let mut full = subtle::Choice::from(0u8);
        for k in &self.full {
            full |= k.as_slice().ct_eq(token);
        }
        let mut read = subtle::Choice::from(0u8);
        for k in &self.readonly {
            read |= k.as_slice().ct_eq(token);
        }
        if bool::from(full) {
            Some(Access::Write)
        } else if bool::from(read) {
            Some(Access::Read)
        } else {
            None
        }
    }
}

fn unauthorized(message: &str) -> Response {
    let mut r = ApiError::new(StatusCode::UNAUTHORIZED, message).into_response();
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

/// The access the request's `Authorization: Bearer <key>` grants, or why
/// it grants none (the 401 message).
fn authenticate(state: &AppState, req: &Request) -> Result<Access, &'static str> {
    let Some(value) = req.headers().get(header::AUTHORIZATION) else {
        return Err("missing authorization header");
    };
    let Some(token) = value.as_bytes().strip_prefix(b"Bearer ") else {
        return Err("invalid authorization format: expected `Bearer <api key>`");
    };
    state.keys.check(token).ok_or("invalid API key")
}

/// POST routes that change the store (every PUT and DELETE does too).
pub const WRITE_POSTS: &[&str] = &[
    "/api/v1/conversations",
    "/api/v1/rebuild-embeddings",
    "/api/v1/summarize",
    "/api/v1/prune/execute",
    "/mcp/tools/memory_store",
    "/mcp/tools/memory_update",
];

/// The MCP endpoint: any valid key may use it (open, call, close a
/// session); the MCP handler refuses write tools to read-only keys.
pub const MCP_ROUTE: &str = "/mcp";

/// The access a route needs.
pub fn needed(method: &Method, route: &str) -> Access {
    if route == MCP_ROUTE {
        Access::Read
    } else if method == Method::PUT
        || method == Method::DELETE
        || method == Method::PATCH
        || (method == Method::POST && WRITE_POSTS.contains(&route))
    {
        Access::Write
    } else {
        Access::Read
    }
}

/// Middleware on every route but `/health`: a valid key (401 otherwise)
/// with the access the route needs (403 for a read-only key on a write).
pub async fn require(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("", |p| p.as_str());
    let need = needed(req.method(), route);
    match authenticate(&state, &req) {
        Ok(Access::Read) if need == Access::Write => {
            ApiError::new(StatusCode::FORBIDDEN, "this API key is read-only").into_response()
        }
        Ok(access) => {
            // The MCP handler reads it to refuse write tools to read-only keys.
            req.extensions_mut().insert(access);
            next.run(req).await
        }
        Err(why) => unauthorized(why),
    }
}

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
    }
}
