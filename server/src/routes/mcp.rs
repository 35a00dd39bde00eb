//! Sekha's MCP-over-HTTP shim: `POST /mcp/tools/{tool}` with the
//! `{success, data, error}` envelope, and `GET /api/v1/mcp/tools`.
//!
//! The tool routes are not written here one by one: [`shim`] makes the
//! handler of each tool of [`crate::contract::TOOLS`], which parses the
//! tool's arguments and calls its function in [`crate::tools`]. Failures
//! keep their HTTP status and answer `{success: false, data: null, error,
//! code}`.

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter, on};
use memdb::Memdb;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::state::AppState;
use crate::wire::{Envelope, EnvelopeError};

/// An [`ApiError`] rendered as a failed envelope.
#[derive(Debug)]
pub struct McpError(pub ApiError);

impl From<ApiError> for McpError {
    fn from(e: ApiError) -> Self {
        McpError(e)
    }
}

impl From<JsonRejection> for McpError {
    fn from(r: JsonRejection) -> Self {
        McpError(r.into())
    }
}

impl IntoResponse for McpError {
    fn into_response(self) -> Response {
        let body = EnvelopeError {
            success: false,
            data: None,
            error: self.0.message.clone(),
            code: self.0.status.as_u16(),
        };
        (self.0.status, axum::Json(body)).into_response()
    }
}

/// Tool arguments with envelope-shaped rejections.
#[derive(Debug, FromRequest)]
#[from_request(via(axum::Json), rejection(McpError))]
pub struct Args<T>(pub T);

/// The handler of a tool's route (`POST /mcp/tools/{tool}`) at `method`:
/// parses the arguments, calls `f` on the blocking pool and answers the
/// envelope. The contract ([`crate::contract::TOOLS`]) makes one per tool.
pub fn shim<A, T>(
    method: MethodFilter,
    f: fn(&Memdb, A) -> Result<T, ApiError>,
) -> MethodRouter<AppState>
where
    A: DeserializeOwned + Send + 'static,
    T: Serialize + Send + 'static,
{
    on(
        method,
        move |State(s): State<AppState>, Args(a): Args<A>| call(s, a, f),
    )
}

async fn call<A, T>(
    s: AppState,
    args: A,
    f: fn(&Memdb, A) -> Result<T, ApiError>,
) -> Result<axum::Json<Envelope<T>>, McpError>
where
    A: Send + 'static,
    T: Serialize + Send + 'static,
{
    let data = s.run(move |db| f(db, args)).await?;
    Ok(axum::Json(Envelope::ok(data)))
}
