//! The router: every route, its auth, and the layers around them.
//!
//! Layers, outermost first: CORS (only when origins are configured),
//! metrics (labels from a closed set), Host/Origin validation
//! ([`crate::guard`]), rate limit, body read timeout, body limit, then
//! authentication on every route but `/health` (the fallbacks authenticate
//! too), the whole-request timeout (not on `/mcp`) and, on `/mcp`, session
//! ownership. Unknown routes and methods answer `{error, code}` 404/405 to
//! an authenticated client, 401 to anyone else.

pub mod conversations;
pub mod mcp;
pub mod orchestration;
pub mod search;
pub mod system;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use std::time::Duration;

use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::timeout::{RequestBodyTimeoutLayer, TimeoutLayer};

use crate::error::ApiError;
use crate::state::AppState;

/// The authenticated routes (before auth and the other layers).
fn api_routes() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/conversations",
            post(conversations::create).get(conversations::list),
        )
        .route("/api/v1/conversations/count", get(conversations::count))
        .route(
            "/api/v1/conversations/{id}",
            get(conversations::get).delete(conversations::delete),
        )
        .route(
            "/api/v1/conversations/{id}/label",
            put(conversations::set_label),
        )
        .route(
            "/api/v1/conversations/{id}/folder",
            put(conversations::set_folder),
        )
        .route("/api/v1/conversations/{id}/pin", put(conversations::pin))
        .route(
            "/api/v1/conversations/{id}/archive",
            put(conversations::archive),
        )
        .route("/api/v1/query", post(search::query))
        .route("/api/v1/search/fts", post(search::fts))
        .route("/api/v1/rebuild-embeddings", post(search::rebuild))
        .route("/api/v1/context/assemble", post(orchestration::assemble))
        .route("/api/v1/summarize", post(orchestration::summarize))
        .route("/api/v1/prune/dry-run", post(orchestration::prune_dry_run))
        .route("/api/v1/prune/execute", post(orchestration::prune_execute))
        .route(
            "/api/v1/labels/suggest",
            post(orchestration::suggest_labels),
        )
        .route("/api/v1/messages/score", post(orchestration::score_message))
        .route("/api/v1/export", get(system::export))
        .route("/api/v1/stats", get(system::stats))
        .route("/api/v1/mcp/tools", get(mcp::list))
        .route("/mcp/tools/memory_store", post(mcp::memory_store))
        .route("/mcp/tools/memory_search", post(mcp::memory_search))
        .route("/mcp/tools/memory_update", post(mcp::memory_update))
        .route(
            "/mcp/tools/memory_get_context",
            post(mcp::memory_get_context),
        )
        .route("/mcp/tools/memory_prune", post(mcp::memory_prune))
        .route("/mcp/tools/memory_export", post(mcp::memory_export))
        .route("/mcp/tools/memory_stats", post(mcp::memory_stats))
        .route("/mcp/memory/search", post(search::memory_search))
        .route("/mcp/memory/stats", post(system::memory_stats))
        .route("/metrics", get(system::metrics))
        .route("/openapi.json", get(system::openapi))
}

// The fallbacks authenticate first: without a valid key every path but
// `/health` answers 401, so route names do not leak through 404 vs 405.
async fn not_found(State(state): State<AppState>, req: Request) -> Response {
    if let Some(r) = crate::auth::reject_unauthenticated(&state, &req) {
        return r;
    }
    ApiError::not_found("no such route").into_response()
}

async fn method_not_allowed(State(state): State<AppState>, req: Request) -> Response {
    if let Some(r) = crate::auth::reject_unauthenticated(&state, &req) {
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
pub fn router(state: AppState) -> Router {
    let mcp = crate::mcp::http_service(&state, state.mcp_shutdown.clone());
    let mcp = Router::new()
        .route_service(crate::auth::MCP_ROUTE, mcp)
        .route_layer(from_fn_with_state(
            state.clone(),
            crate::mcp::sessions::bind,
        ));
    // The whole-request timeout covers every route but `/mcp`, whose GET
    // is a long-lived event stream.
    let request_timeout = Duration::from_secs(state.config.request_timeout_secs);
    let authed = api_routes()
        .route_layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            request_timeout,
        ))
        .merge(mcp)
        .route_layer(from_fn_with_state(state.clone(), crate::auth::require));
    let app = Router::new()
        .merge(authed)
        .route("/health", get(system::health))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(state.config.body_limit))
        .layer(RequestBodyTimeoutLayer::new(Duration::from_secs(
            state.config.body_timeout_secs,
        )))
        .layer(from_fn_with_state(state.clone(), crate::ratelimit::limit))
        .layer(from_fn_with_state(state.clone(), crate::guard::check))
        .layer(from_fn_with_state(state.clone(), crate::metrics::track));
    let app = match cors(&state.config.cors_origins) {
        Some(layer) => app.layer(layer),
        None => app,
    };
    app.with_state(state)
}
