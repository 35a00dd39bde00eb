//! The web UI (SPEC §21.5): its three static files, embedded in the binary
//! and served without a key at `GET /ui`, `/ui/app.js` and `/ui/app.css`,
//! and `GET /api/v1/whoami`, which tells the page (or any client) what the
//! presented key may do.
//!
//! The page itself holds no data: it asks for an API key, keeps it in the
//! browser's session storage and calls the REST routes with it, so the
//! static files need no authentication and reveal nothing. They are sent
//! with a strict Content-Security-Policy (scripts, styles and requests
//! from this origin only, no framing), so nothing outside the binary runs
//! in the page. What this module is not: the page's logic (in
//! `server/ui/app.js`) or any search or ranking (the page calls the
//! existing routes).

use axum::extract::{Extension, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::{Access, KeyId, RequestNamespace};
use crate::error::ErrorBody;
use crate::extract::Json;
use crate::state::AppState;

const INDEX_HTML: &str = include_str!("../../ui/index.html");
const APP_JS: &str = include_str!("../../ui/app.js");
const APP_CSS: &str = include_str!("../../ui/app.css");

/// The policy every UI file is sent with: this origin only, no inline
/// script or style, no framing; `data:` images for the empty favicon.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src 'self' data:; form-action 'none'; \
    frame-ancestors 'none'; base-uri 'none'";

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::X_FRAME_OPTIONS, "DENY"),
            // The files change with the binary: revalidate, never serve
            // a stale script against a newer server.
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// The web UI's page; no authentication (it asks for a key).
#[utoipa::path(get, path = "/ui", tag = "ui",
    responses((status = 200, description = "The web UI (HTML)", body = String, content_type = "text/html")))]
pub async fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX_HTML)
}

/// The web UI's script.
#[utoipa::path(get, path = "/ui/app.js", tag = "ui",
    responses((status = 200, description = "The web UI's script", body = String, content_type = "text/javascript")))]
pub async fn script() -> Response {
    asset("text/javascript; charset=utf-8", APP_JS)
}

/// The web UI's style sheet.
#[utoipa::path(get, path = "/ui/app.css", tag = "ui",
    responses((status = 200, description = "The web UI's style sheet", body = String, content_type = "text/css")))]
pub async fn style() -> Response {
    asset("text/css; charset=utf-8", APP_CSS)
}

/// `GET /api/v1/whoami` answer: what the presented key may do.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WhoamiOut {
    /// `read` (a read-only key) or `write`.
    pub access: String,
    /// The namespace this request addressed (the key's default unless the
    /// request named one).
    pub namespace: String,
    /// The namespaces the key is limited to, its default first; `null`
    /// when it may use every namespace.
    pub namespaces: Option<Vec<String>>,
    /// Server version.
    pub version: String,
}

/// The presented key's access and namespaces.
#[utoipa::path(get, path = "/api/v1/whoami", tag = "system",
    responses((status = 200, body = WhoamiOut),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn whoami(
    State(s): State<AppState>,
    Extension(access): Extension<Access>,
    Extension(key): Extension<KeyId>,
    Extension(current): Extension<RequestNamespace>,
) -> Json<WhoamiOut> {
    Json(WhoamiOut {
        access: match access {
            Access::Read => "read",
            Access::Write => "write",
        }
        .into(),
        namespace: current.0.to_string(),
        namespaces: s.keys.limit(key).map(<[String]>::to_vec),
        version: env!("CARGO_PKG_VERSION").into(),
    })
}
