//! The middleware of memdb-server's router, in the order a request meets
//! it (outermost first): metrics ([`track`]), Host and Origin ([`check`]),
//! the rate limit ([`limit`]), authentication, the read/write split and the
//! namespace ([`require`]), and on `/mcp` the session's owner ([`bind`]).
//! Each is a thin function over `AppState` and a leaf module that holds
//! the logic without knowing the state or the routes: `auth.rs` (keys,
//! namespaces), `guard.rs` (hosts, origins), `ratelimit.rs`, `metrics.rs`,
//! `mcp_sessions.rs`. The read/write split is looked up in the contract
//! tables here ([`contract::permission`]), so neither `auth` nor the
//! contract imports the other's side.

use std::net::SocketAddr;
use std::time::Instant;

use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::auth::{
    self, Access, KURADB_OPEN_ROUTES, KeyId, MCP_ROUTE, Permission, RequestNamespace, authenticate,
    resolve_namespace, unauthorized,
};
use crate::contract;
use crate::error::ApiError;
use crate::guard::{forbidden, host_allowed, origin_allowed};
use crate::mcp_sessions::SESSION_HEADER;
use crate::metrics::method_label;
use crate::state::AppState;

/// Whether the contract declares `route` a read for `method` (a public
/// route, such as `/health`, is a read too). `HEAD` is a read wherever `GET`
/// is.
pub fn is_read(method: &Method, route: &str) -> bool {
    matches!(
        contract::permission(method, route),
        Some(Permission::Read | Permission::StoreRead | Permission::Public)
    )
}

/// Whether the route covers the whole store rather than one namespace
/// (refused to keys limited to namespaces).
pub fn is_store_wide(method: &Method, route: &str) -> bool {
    matches!(
        contract::permission(method, route),
        Some(Permission::StoreRead | Permission::StoreWrite)
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
    authenticate(&state.keys, req).err().map(unauthorized)
}

/// Middleware on every route but `/health`: a valid key (401 otherwise)
/// with the access the route needs (403 for a read-only key on a write),
/// and the namespace the request addresses (400 for an invalid name, 403
/// for one the key may not use).
pub async fn require(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("", |p| p.as_str());
    // `kuradb_open` (loopback only, checked at startup): KuraDB's two
    // read-only routes answer without a key, as KuraDB's do.
    if state.config.kuradb_open
        && req.method() == Method::GET
        && KURADB_OPEN_ROUTES.contains(&route)
    {
        return next.run(req).await;
    }
    let need = needed(req.method(), route);
    let store_wide = is_store_wide(req.method(), route);
    match authenticate(&state.keys, &req) {
        Ok((Access::Read, _)) if need == Access::Write => {
            ApiError::new(StatusCode::FORBIDDEN, "this API key is read-only").into_response()
        }
        Ok((access, key)) => {
            let namespace = match resolve_namespace(&state.keys, &req, key, store_wide) {
                Ok(ns) => ns,
                Err(refusal) => return refusal.into_response(),
            };
            // The MCP handler reads them: write tools need a writing key,
            // a session belongs to the key that opened it, and each call
            // runs on the request's namespace.
            req.extensions_mut().insert(access);
            req.extensions_mut().insert(key);
            req.extensions_mut()
                .insert(RequestNamespace(namespace.clone()));
            auth::with_namespace(namespace, next.run(req)).await
        }
        Err(why) => unauthorized(why),
    }
}

/// Middleware on every route: the Host check, and the Origin check on `/mcp`.
pub async fn check(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()));
    // `/health` answers anyone (load-balancer probes use any Host; it
    // reveals nothing a rebinding page could use).
    if let Some(host) = host
        && req.uri().path() != "/health"
        && !host_allowed(host, &state.config.allowed_hosts)
    {
        return forbidden(
            "host not allowed: add it to allowed_hosts (MEMDB_ALLOWED_HOSTS) to serve it",
        );
    }
    if req.uri().path() == MCP_ROUTE
        && let Some(origin) = req.headers().get(header::ORIGIN)
    {
        let config = &state.config;
        let allowed: Vec<String> = config
            .allowed_origins
            .iter()
            .chain(&config.cors_origins)
            .cloned()
            .collect();
        let loopback = config.listen.ip().is_loopback();
        let ok = origin
            .to_str()
            .is_ok_and(|o| origin_allowed(o, &allowed, loopback));
        if !ok {
            return forbidden(
                "origin not allowed on /mcp: add it to allowed_origins (MEMDB_ALLOWED_ORIGINS)",
            );
        }
    }
    next.run(req).await
}

/// Middleware: 429 with `Retry-After` when the client's bucket is empty.
pub async fn limit(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    if let Some(client) = state.limiter.client(peer, req.headers())
        && let Err(wait) = state.limiter.take(client, Instant::now())
    {
        let mut r = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            format!("rate limit exceeded; retry in {wait} s"),
        )
        .into_response();
        if let Ok(v) = HeaderValue::from_str(&wait.to_string()) {
            r.headers_mut().insert(header::RETRY_AFTER, v);
        }
        return r;
    }
    next.run(req).await
}

/// Middleware: times the request and records it under its route template
/// (routing has run: the template is one of the router's, or `unmatched`)
/// and its [`method_label`].
pub async fn track(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let method = method_label(req.method());
    let start = Instant::now();
    let response = next.run(req).await;
    state.metrics.record(
        method,
        &route,
        response.status().as_u16(),
        start.elapsed().as_secs_f64(),
    );
    response
}

/// Middleware on `/mcp` (inside authentication).
pub async fn bind(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let Some(key) = req.extensions().get::<KeyId>().copied() else {
        // Authentication runs first and sets it; be safe if it did not.
        return ApiError::new(StatusCode::UNAUTHORIZED, "missing API key").into_response();
    };
    let sessions = state.mcp_sessions.clone();
    let session = req
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    match session {
        Some(id) => {
            if sessions.owner(&id).is_some_and(|owner| owner != key) {
                return ApiError::not_found("no such MCP session").into_response();
            }
            let delete = req.method() == Method::DELETE;
            let response = next.run(req).await;
            if delete && response.status().is_success() {
                sessions.owners().remove(&id);
            }
            response
        }
        None => {
            if req.method() == Method::POST
                && sessions.open_count(key).await >= state.config.mcp_sessions_per_key
            {
                return ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!(
                        "this API key has {} open MCP sessions, the limit: end one (DELETE /mcp) or wait for one to expire",
                        state.config.mcp_sessions_per_key
                    ),
                )
                .into_response();
            }
            let response = next.run(req).await;
            if let Some(id) = response
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
            {
                sessions.owners().insert(id.to_string(), key);
            }
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
