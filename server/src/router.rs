//! The router: every route of the contract tables ([`crate::contract`]),
//! its auth, and the layers around them.
//!
//! Layers, outermost first: CORS (only when origins are configured),
//! metrics (labels from a closed set), Host/Origin validation
//! ([`crate::guard`]), rate limit, body read timeout, body limit, then
//! authentication on every route but the public ones (`/health`,
//! `/api/health`, the web UI's files; the fallbacks authenticate too), the
//! whole-request timeout (not on `/mcp`) and, on `/mcp`, session ownership. Unknown routes and methods answer `{error, code}` 404/405 to
//! an authenticated client, 401 to anyone else.

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use std::time::Duration;

use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::timeout::{RequestBodyTimeoutLayer, TimeoutLayer};

use crate::contract::{self, Permission};
use crate::error::ApiError;
use crate::state::AppState;

/// The contract's routes with (`public`) or without the [`Permission::Public`]
/// ones, and with the authenticated ones every tool's shim route, before
/// auth and the other layers.
fn table_routes(public: bool) -> Router<AppState> {
    let mut router = Router::new();
    for r in contract::ROUTES
        .iter()
        .filter(|r| (r.permission == Permission::Public) == public)
    {
        router = router.route(r.path, (r.handler)(r.method.filter()));
    }
    if !public {
        for t in contract::TOOLS {
            router = router.route(&t.path(), t.handler());
        }
    }
    router
}

// The fallbacks authenticate first: without a valid key every path but
// `/health` answers 401, so route names do not leak through 404 vs 405.
async fn not_found(State(state): State<AppState>, req: Request) -> Response {
    if let Some(r) = crate::layers::reject_unauthenticated(&state, &req) {
        return r;
    }
    ApiError::not_found("no such route").into_response()
}

async fn method_not_allowed(State(state): State<AppState>, req: Request) -> Response {
    if let Some(r) = crate::layers::reject_unauthenticated(&state, &req) {
        return r;
    }
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method not allowed on this route",
    )
    .into_response()
}

fn cors(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(
            origins
                .iter()
                .filter_map(|o| HeaderValue::from_str(o).ok())
                .collect::<Vec<_>>(),
        )
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE])
            .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE]),
    )
}

/// The whole application over `state`.
pub fn router(mut state: AppState) -> Router {
    // The contract's OpenAPI document, built on the first `/openapi.json`.
    state.openapi = std::sync::Arc::new(std::sync::LazyLock::new(|| {
        serde_json::to_value(crate::openapi::document()).unwrap_or_else(|e| {
            tracing::error!(error = %e, "the OpenAPI document does not serialize");
            serde_json::Value::Null
        })
    }));
    let mcp = crate::mcp::http_service(&state, state.mcp_shutdown.clone());
    let mcp = Router::new()
        .route_service(crate::auth::MCP_ROUTE, mcp)
        .route_layer(from_fn_with_state(state.clone(), crate::layers::bind));
    // The whole-request timeout covers every route but `/mcp`, whose GET
    // is a long-lived event stream.
    let request_timeout = Duration::from_secs(state.config.request_timeout_secs);
    let authed = table_routes(false)
        .route_layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            request_timeout,
        ))
        .merge(mcp)
        .route_layer(from_fn_with_state(state.clone(), crate::layers::require));
    let app = Router::new()
        .merge(authed)
        .merge(table_routes(true))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(state.config.body_limit))
        .layer(RequestBodyTimeoutLayer::new(Duration::from_secs(
            state.config.body_timeout_secs,
        )))
        .layer(from_fn_with_state(state.clone(), crate::layers::limit))
        .layer(from_fn_with_state(state.clone(), crate::layers::check))
        .layer(from_fn_with_state(state.clone(), crate::layers::track));
    let app = match cors(&state.config.cors_origins) {
        Some(layer) => app.layer(layer),
        None => app,
    };
    app.with_state(state)
}

#[cfg(test)]
mod tests {
    use memdb::Systems;
    use std::sync::Arc;

    use axum::body::Body;
    use serde_json::Value;
    use tower::ServiceExt as _;

    use super::*;
    use crate::contract::{ROUTES, TOOL_METHOD, TOOLS};

    const WRITE_KEY: &str = "write-key-0123456789abcdefghijklmnopqrstuvwxyz";
    const READ_KEY: &str = "read-key-0123456789abcdefghijklmnopqrstuvwxyz";
    const LIMITED_KEY: &str = "limited-key-0123456789abcdefghijklmnopqrstuvwxyz";

    struct App {
        router: Router,
        _dir: tempfile::TempDir,
        id: String,
    }

    fn app() -> App {
        let dir = tempfile::tempdir().unwrap();
        let db = memdb::Memdb::open(dir.path()).unwrap();
        let id = db
            .sekha()
            .create_conversation(memdb::NewConversation::new(
                "Contract",
                vec![memdb::NewMessage::new("user", "every route answers")],
            ))
            .unwrap()
            .conversation
            .id
            .to_string();
        let config = crate::ServerConfig {
            api_keys: vec![WRITE_KEY.into(), LIMITED_KEY.into()],
            readonly_api_keys: vec![READ_KEY.into()],
            key_namespaces: vec![crate::auth::KeyNamespaces {
                key: LIMITED_KEY.into(),
                namespaces: vec!["team".into()],
            }],
            rate_limit_per_second: 0.0,
            ..crate::ServerConfig::default()
        };
        App {
            router: crate::router(Arc::new(db), config),
            _dir: dir,
            id,
        }
    }

    /// Status and JSON body (`null` when not JSON) of one request; a body
    /// of `{}` goes with POST and PUT.
    async fn send(app: &App, method: &Method, path: &str, key: Option<&str>) -> (u16, Value) {
        let path = path.replace("{id}", &app.id);
        let mut req = Request::builder().method(method.clone()).uri(path);
        if let Some(k) = key {
            req = req.header(header::AUTHORIZATION, format!("Bearer {k}"));
        }
        let body = if *method == Method::POST || *method == Method::PUT {
            req = req.header(header::CONTENT_TYPE, "application/json");
            Body::from("{}")
        } else {
            Body::empty()
        };
        let r = app
            .router
            .clone()
            .oneshot(req.body(body).unwrap())
            .await
            .unwrap();
        let status = r.status().as_u16();
        let bytes = axum::body::to_bytes(r.into_body(), 1 << 26).await.unwrap();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// Whether an answer came from the route's handler, not from auth or
    /// the fallbacks.
    fn reached(status: u16, body: &Value) -> bool {
        !matches!(status, 401 | 403 | 405) && body["error"] != "no such route"
    }

    /// Every (method, path, permission) the tables declare, tools included.
    fn entries() -> Vec<(Method, String, Permission)> {
        ROUTES
            .iter()
            .map(|r| (r.method.method(), r.path.to_string(), r.permission))
            .chain(
                TOOLS
                    .iter()
                    .map(|t| (TOOL_METHOD.method(), t.path(), t.access().into())),
            )
            .collect()
    }

    #[tokio::test]
    async fn every_entry_is_served_with_its_declared_access() {
        let app = app();
        for (method, path, permission) in entries() {
            let what = format!("{method} {path}");
            let (status, body) = send(&app, &method, &path, None).await;
            if permission == Permission::Public {
                assert_eq!(status, 200, "{what}: {body}");
                continue;
            }
            assert_eq!(status, 401, "{what} without a key: {body}");
            let (status, body) = send(&app, &method, &path, Some(READ_KEY)).await;
            match permission {
                Permission::Write | Permission::StoreWrite => {
                    assert_eq!(status, 403, "{what} with a read key: {body}");
                    assert_eq!(body["error"], "this API key is read-only", "{what}");
                }
                _ => assert!(
                    reached(status, &body),
                    "{what} with a read key: {status} {body}"
                ),
            }
            if method == Method::GET {
                let (status, body) = send(&app, &Method::HEAD, &path, Some(READ_KEY)).await;
                assert!(reached(status, &body), "HEAD {path}: {status}");
            }
            let (status, body) = send(&app, &method, &path, Some(WRITE_KEY)).await;
            assert!(
                reached(status, &body),
                "{what} with a write key: {status} {body}"
            );
            // A key limited to namespaces reaches every route of one
            // namespace, and no store-wide route.
            let (status, body) = send(&app, &method, &path, Some(LIMITED_KEY)).await;
            if matches!(permission, Permission::StoreRead | Permission::StoreWrite) {
                assert_eq!(status, 403, "{what} with a limited key: {body}");
                assert!(
                    body["error"]
                        .as_str()
                        .is_some_and(|e| e.contains("whole store")),
                    "{what}: {body}"
                );
            } else {
                assert!(
                    reached(status, &body),
                    "{what} with a limited key: {status} {body}"
                );
            }
        }
    }

    #[tokio::test]
    async fn anything_undeclared_is_401_then_404_or_405() {
        let app = app();
        for (method, path, status_with_key) in [
            (Method::GET, "/api/v1/nothing", 404),
            (Method::POST, "/mcp/tools/memory_nothing", 404),
            (Method::PATCH, "/api/v1/conversations", 405),
            (Method::GET, "/mcp/tools/memory_store", 405),
            (Method::DELETE, "/api/v1/stats", 405),
        ] {
            let (status, _) = send(&app, &method, path, None).await;
            assert_eq!(status, 401, "{method} {path}");
            for key in [READ_KEY, WRITE_KEY] {
                let (status, _) = send(&app, &method, path, Some(key)).await;
                assert_eq!(status, status_with_key, "{method} {path}");
            }
        }
    }
}
