//! Request extractors whose rejections are [`ApiError`]s, so malformed JSON,
//! wrong types, bad ids and oversize bodies all answer `{error, code}`.

use axum::extract::{FromRequest, FromRequestParts};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// `axum::Json` with `{error, code}` rejections (400, 413, 415).
#[derive(Debug, Clone, Copy, Default, FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct Json<T>(pub T);

impl<T: serde::Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

/// `axum::extract::Path` with `{error, code}` rejections (400).
#[derive(Debug, Clone, Copy, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct Path<T>(pub T);

/// `axum::extract::Query` with `{error, code}` rejections (400).
#[derive(Debug, Clone, Copy, Default, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct Query<T>(pub T);
