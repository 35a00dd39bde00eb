//! The one error type of every route: `{error, code}` JSON bodies with the
//! right status, built from engine errors and extractor rejections; and
//! [`ServerError`], why the server could not start or stop.
//!
//! Internal failures (I/O, store, index) are logged with their detail and
//! answered with a generic message: no paths or backtraces leave the server.

use axum::Json;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// An error answer: HTTP status, message, and the request field at fault.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Human message (never an internal path).
    pub message: String,
    /// Dotted path of the offending request field, when known.
    pub field: Option<String>,
}

/// The JSON body of every error answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: String,
    /// The HTTP status code, repeated (Sekha's convention).
    pub code: u16,
    /// The offending request field (dotted path), for validation errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl ApiError {
    /// An error with a status and message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            field: None,
        }
    }

    /// 400 naming the invalid field.
    pub fn invalid(field: impl Into<String>, reason: impl std::fmt::Display) -> Self {
        let field = field.into();
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: format!("invalid {field}: {reason}"),
            field: Some(field),
        }
    }

    /// 404 for an unknown route or entity.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    /// 500 with a generic message; the detail goes to the log only.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        tracing::error!(error = %detail, "internal error");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
    }

    /// The response body.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: self.message.clone(),
            code: self.status.as_u16(),
            field: self.field.clone(),
        }
    }
}

impl From<memdb::Error> for ApiError {
    fn from(e: memdb::Error) -> Self {
        match e {
            memdb::Error::NotFound { what, id } => {
                ApiError::not_found(format!("{what} {id} not found"))
            }
            memdb::Error::InvalidInput { field, reason } => ApiError::invalid(field, reason),
            memdb::Error::Conflict(msg) => ApiError::new(StatusCode::CONFLICT, msg),
            memdb::Error::Locked { .. } => {
                tracing::error!(error = %e, "data directory locked");
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "store unavailable")
            }
            // A remote provider (embeddings, chat) failed: the gateway's
            // fault, not ours. Its message names the endpoint and the
            // remedy, never the API key.
            memdb::Error::Remote { kind, .. } => {
                tracing::warn!(error = %e, "remote provider failed");
                let status = if kind == memdb::RemoteFailure::Timeout {
                    StatusCode::GATEWAY_TIMEOUT
                } else {
                    StatusCode::BAD_GATEWAY
                };
                ApiError::new(status, e.to_string())
            }
            // The caller went away or the request timed out: nobody reads
            // this answer, but say what happened rather than 500.
            memdb::Error::Cancelled => {
                ApiError::new(StatusCode::REQUEST_TIMEOUT, "request cancelled")
            }
            other => ApiError::internal(other),
        }
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        let status = match r.status() {
            // Wrong types and missing fields are bad input like any other.
            StatusCode::UNPROCESSABLE_ENTITY => StatusCode::BAD_REQUEST,
            s => s,
        };
        let message = match &r {
            JsonRejection::BytesRejection(_) if status == StatusCode::PAYLOAD_TOO_LARGE => {
                "request body too large".to_string()
            }
            _ => r.body_text(),
        };
        ApiError::new(status, message)
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> Self {
        let status = if r.status().is_server_error() {
            StatusCode::INTERNAL_SERVER_ERROR
        } else {
            StatusCode::BAD_REQUEST
        };
        ApiError::new(status, r.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, r.body_text())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body())).into_response()
    }
}

/// Why the server could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The configuration is unusable.
    #[error("configuration: {0}")]
    Config(String),
    /// The store could not be opened.
    #[error("opening the store: {0}")]
    Open(#[source] memdb::Error),
    /// The listen address could not be bound.
    #[error("binding the listen address: {0}")]
    Bind(#[source] std::io::Error),
    /// Serving failed.
    #[error("serving: {0}")]
    Serve(#[source] std::io::Error),
    /// Closing the store failed.
    #[error("closing the store: {0}")]
    Close(#[source] memdb::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(kind: memdb::RemoteFailure) -> ApiError {
        memdb::Error::Remote {
            endpoint: "http://embed.example/v1/embeddings".into(),
            kind,
            status: None,
            message: "no answer".into(),
        }
        .into()
    }

    #[test]
    fn remote_failures_are_gateway_errors() {
        let e = remote(memdb::RemoteFailure::Unreachable);
        assert_eq!(e.status, StatusCode::BAD_GATEWAY);
        assert!(e.message.contains("embed.example"), "{}", e.message);
        assert_eq!(
            remote(memdb::RemoteFailure::Timeout).status,
            StatusCode::GATEWAY_TIMEOUT
        );
    }
}
