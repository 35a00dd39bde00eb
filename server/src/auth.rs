//! Bearer-token authentication and the read/write split.
//!
//! Every route but `/health` sits behind [`require`], which also decides
//! from the method and route template whether the route writes, by looking
//! the route up in the contract tables ([`crate::contract`]): a route is a
//! read only if declared one. Keys are compared in constant time against every
//! configured key (no early exit on the first match), so timing reveals
//! neither which key matched nor how much of a key was right. Read-only keys
//! get 403 on writes.

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::contract::Permission;
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

fn unauthorized(message: &str) -> Response {
    let mut r = ApiError::new(StatusCode::UNAUTHORIZED, message).into_response();
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

/// The access the request's `Authorization: Bearer <key>` grants, or why
/// it grants none (the 401 message).
fn authenticate(state: &AppState, req: &Request) -> Result<(Access, KeyId), &'static str> {
    let Some(value) = req.headers().get(header::AUTHORIZATION) else {
        return Err("missing authorization header");
    };
    let Some(token) = value.as_bytes().strip_prefix(b"Bearer ") else {
        return Err("invalid authorization format: expected `Bearer <api key>`");
    };
    state.keys.identify(token).ok_or("invalid API key")
}

/// The MCP endpoint: any valid key may use it (open, call, close a
/// session); the MCP handler refuses write tools to read-only keys and
/// binds each session to the key that opened it.
pub const MCP_ROUTE: &str = "/mcp";

/// Whether the contract declares `route` a read for `method` (a public
/// route, such as `/health`, is a read too). `HEAD` is a read wherever `GET`
/// is.
pub fn is_read(method: &Method, route: &str) -> bool {
    matches!(
        crate::contract::permission(method, route),
        Some(Permission::Read | Permission::Public)
    )
}

/// The access a route needs: reads are declared in the contract tables
/// ([`crate::contract::ROUTES`], [`crate::contract::TOOLS`]); everything
/// else writes. Authorization fails closed: a route served without being
/// declared a read is refused to read-only keys.
pub fn needed(method: &Method, route: &str) -> Access {
    if route == MCP_ROUTE || is_read(method, route) {
        Access::Read
    } else {
        Access::Write
    }
}

/// The 401 answer for a request without a valid key, or `None` when its key
/// is valid. The fallbacks (unknown route, wrong method) call it first, so
/// an unauthenticated client cannot tell which routes exist.
pub fn reject_unauthenticated(state: &AppState, req: &Request) -> Option<Response> {
    authenticate(state, req).err().map(unauthorized)
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
        Ok((Access::Read, _)) if need == Access::Write => {
            ApiError::new(StatusCode::FORBIDDEN, "this API key is read-only").into_response()
        }
        Ok((access, key)) => {
            // The MCP handler reads them: write tools need a writing key,
            // and a session belongs to the key that opened it.
            req.extensions_mut().insert(access);
            req.extensions_mut().insert(key);
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
        let r2 = "s".repeat(40);
        let keys = Keys::new(std::slice::from_ref(&w), &[r.clone(), r2.clone()]);
        assert_eq!(keys.identify(w.as_bytes()), Some((Access::Write, KeyId(0))));
        assert_eq!(keys.identify(r.as_bytes()), Some((Access::Read, KeyId(1))));
        assert_eq!(keys.identify(r2.as_bytes()), Some((Access::Read, KeyId(2))));
    }

    #[test]
    fn only_declared_reads_are_reads() {
        assert_eq!(needed(&Method::GET, "/api/v1/stats"), Access::Read);
        assert_eq!(needed(&Method::HEAD, "/api/v1/stats"), Access::Read);
        assert_eq!(needed(&Method::POST, "/api/v1/query"), Access::Read);
        assert_eq!(
            needed(&Method::POST, "/api/v1/conversations"),
            Access::Write
        );
        assert_eq!(
            needed(&Method::DELETE, "/api/v1/conversations/{id}"),
            Access::Write
        );
        // A route nobody declared fails closed.
        assert_eq!(needed(&Method::POST, "/api/v1/new-thing"), Access::Write);
        assert_eq!(needed(&Method::GET, "/api/v1/new-thing"), Access::Write);
        assert_eq!(needed(&Method::POST, MCP_ROUTE), Access::Read);
        assert_eq!(needed(&Method::DELETE, MCP_ROUTE), Access::Read);
        assert_eq!(
            needed(&Method::POST, "/mcp/tools/memory_search"),
            Access::Read
        );
        assert_eq!(
            needed(&Method::POST, "/mcp/tools/memory_store"),
            Access::Write
        );
        assert_eq!(
            needed(&Method::POST, "/mcp/tools/memory_nothing"),
            Access::Write
        );
    }
}
