//! The engine's error model (SPEC.md §"Error model").

use std::path::PathBuf;

/// Result alias for engine operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything an engine operation can fail with.
///
/// Surfaces map these to exit codes (CLI) and HTTP statuses (server,
/// SPEC.md §25): `NotFound` → 404, `InvalidInput` → 400, `Conflict` → 409,
/// `Locked` → 503, `Remote` → 502 (504 on a timeout), `Cancelled` → 408,
/// everything else → 500.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The named entity does not exist.
    #[error("{what} {id} not found")]
    NotFound {
        /// Entity kind, e.g. "conversation".
        what: &'static str,
        /// The id that was looked up.
        id: String,
    },
    /// A request field is invalid; nothing was written.
    #[error("invalid {field}: {reason}")]
    InvalidInput {
        /// The offending field (dotted path, e.g. `messages[2].content`).
        field: String,
        /// Why it is invalid.
        reason: String,
    },
    /// The request conflicts with existing state (e.g. an id already exists).
    #[error("conflict: {0}")]
    Conflict(String),
    /// Another process holds the data directory for writing.
    #[error("data directory {dir} is locked by another memdb process{holder}")]
    Locked {
        /// The data directory.
        dir: PathBuf,
        /// ` (pid N)` when known.
        holder: String,
    },
    /// Stored data is damaged.
    #[error("corrupted {what}: {reason}")]
    Corrupted {
        /// What is damaged.
        what: String,
        /// How it was detected.
        reason: String,
    },
    /// The store was written by a newer memdb.
    #[error(
        "store schema version {found} is newer than this build supports ({supported}); upgrade memdb"
    )]
    Incompatible {
        /// Version found on disk.
        found: u64,
        /// Newest version this build reads.
        supported: u64,
    },
    /// An I/O error on a path.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The store failed: an engine-level store condition, described.
    #[error("store error: {0}")]
    Store(String),
    /// The storage backend itself failed (I/O, a full disk, a damaged
    /// page): the backend's error is kept for callers that walk
    /// `Error::source`. `store/errors.rs` converts redb's errors into it.
    #[error("store error: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync + 'static>),
    /// The tantivy index failed.
    #[error("text index error: {0}")]
    TextIndex(String),
    /// The vector index failed.
    #[error("vector index error: {0}")]
    VectorIndex(String),
    /// An embedding provider failed (tokenizer, ONNX Runtime, model output).
    #[error("embedding error: {0}")]
    Embedding(String),
    /// A file the local embedding model needs is not installed.
    #[error(
        "embedding model not installed: {path} is missing; install it with `scripts/install-model.sh {dir}` (or set MEMDB_MODELS to the directory that holds it)"
    )]
    ModelMissing {
        /// The missing file.
        path: PathBuf,
        /// The models directory that was searched.
        dir: PathBuf,
    },
    /// The store's message vectors come from another model than the one
    /// configured; vectors of two models are never compared.
    #[error(
        "this store's message embeddings come from {stored}, but the configured model is {configured}; vectors of different models are never mixed: re-embed with `memdb rebuild-embeddings` (or open the store with the original model)"
    )]
    ModelMismatch {
        /// The model of the stored vectors.
        stored: String,
        /// The configured model.
        configured: String,
    },
    /// A remote (HTTP) provider failed: an OpenAI-compatible embeddings or
    /// chat endpoint, or a model download. The message says what to fix and
    /// never contains the API key.
    #[error("remote provider {endpoint}: {message}")]
    Remote {
        /// The URL that was called (no credentials, no query string).
        endpoint: String,
        /// What went wrong, for callers that branch on it.
        kind: RemoteFailure,
        /// The last HTTP status, when the server answered.
        status: Option<u16>,
        /// Human-readable explanation, with the remedy.
        message: String,
    },
    /// The call was cancelled by its caller ([`crate::with_cancel_flag`]),
    /// e.g. because the request it served timed out.
    #[error("cancelled: the request was abandoned (timed out or its client went away)")]
    Cancelled,
}

/// The kinds of [`Error::Remote`] failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteFailure {
    /// 401 or 403: the API key is missing, wrong or lacks permission.
    Unauthorized,
    /// 404: wrong base URL or unknown model.
    NotFound,
    /// 429 on every attempt: rate limited.
    RateLimited,
    /// 5xx on every attempt.
    Server,
    /// Another 4xx: the server rejected the request (e.g. input too long).
    Rejected,
    /// No connection could be made (refused, DNS, TLS).
    Unreachable,
    /// Connecting or waiting for the answer took longer than the timeout.
    Timeout,
    /// The server answered 2xx with a body that is not what the API defines.
    Malformed,
}

impl Error {
    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidInput {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// Prefixes an invalid field with the item it belongs to:
    /// `label` → `conversations[3].label`.
    pub(crate) fn in_item(self, list: &str, i: usize) -> Self {
        match self {
            Error::InvalidInput { field, reason } => Error::InvalidInput {
                field: format!("{list}[{i}].{field}"),
                reason,
            },
            other => other,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }
}

impl From<tantivy::TantivyError> for Error {
    fn from(e: tantivy::TantivyError) -> Self {
        Error::TextIndex(e.to_string())
    }
}

impl From<memdb_format::FormatError> for Error {
    fn from(e: memdb_format::FormatError) -> Self {
        Error::Corrupted {
            what: "record".into(),
            reason: e.to_string(),
        }
    }
}
