//! Server configuration: defaults, then a TOML file, then `MEMDB_*`
//! environment variables and flags (clap merges those two), each overriding
//! the previous. [`ServerConfig::validate`] refuses unusable settings before
//! anything listens.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::ServerError;

/// Shortest accepted API key (Sekha's rule).
pub const MIN_KEY_LEN: usize = 32;

/// Which embedder the engine gets for semantic and hybrid search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderChoice {
    /// No embedder: keyword search only (hybrid falls back to keyword).
    #[default]
    None,
    /// The deterministic hashing embedder (tests, no model files).
    Hashing,
    /// The local ONNX model (all-MiniLM-L6-v2) from the models directory.
    Local,
    /// The local model when it is installed, else none (logged).
    Auto,
}

/// Everything the server needs besides the engine.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Address to listen on (default 127.0.0.1:8080).
    pub listen: SocketAddr,
    /// The memdb data directory (default: the platform data dir + /memdb).
    pub data: Option<PathBuf>,
    /// Keys that may read and write (each at least 32 characters).
    pub api_keys: Vec<String>,
    /// Keys that may only read: writes answer 403.
    pub readonly_api_keys: Vec<String>,
    /// Origins allowed by CORS (none by default: no CORS headers at all).
    pub cors_origins: Vec<String>,
    /// Sustained requests per second per client; 0 disables rate limiting.
    pub rate_limit_per_second: f64,
    /// Bucket size: requests a client may burst above the sustained rate.
    pub rate_limit_burst: u32,
    /// Peers whose `X-Forwarded-For` is trusted to name the client.
    pub trusted_proxies: Vec<IpAddr>,
    /// Largest accepted request body in bytes (413 above it).
    pub body_limit: usize,
    /// The embedder given to the engine.
    pub embedder: EmbedderChoice,
    /// Where the local model lives (default: `$MEMDB_MODELS` or the platform dir).
    pub models_dir: Option<PathBuf>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data: None,
            api_keys: Vec::new(),
            readonly_api_keys: Vec::new(),
            cors_origins: Vec::new(),
            rate_limit_per_second: 50.0,
            rate_limit_burst: 200,
            trusted_proxies: Vec::new(),
            body_limit: 16 << 20,
            embedder: EmbedderChoice::None,
            models_dir: None,
        }
    }
}

impl ServerConfig {
    /// Reads a TOML file whose keys are this struct's fields.
    pub fn from_file(path: &Path) -> Result<Self, ServerError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ServerError::Config(format!("cannot read config file {}: {e}", path.display()))
        })?;
        toml::from_str(&text).map_err(|e| {
            ServerError::Config(format!("config file {}: {}", path.display(), e.message()))
        })
    }

    /// Checks keys, origins and limits; the error says what to fix.
    pub fn validate(&self) -> Result<(), ServerError> {
        if self.api_keys.is_empty() && self.readonly_api_keys.is_empty() {
            return Err(ServerError::Config(
                "no API key configured: set MEMDB_API_KEY (or MEMDB_API_KEYS, comma-separated)"
                    .into(),
            ));
        }
        for (i, key) in self
            .api_keys
            .iter()
            .chain(&self.readonly_api_keys)
            .enumerate()
        {
            if key.chars().count() < MIN_KEY_LEN {
                return Err(ServerError::Config(format!(
                    "API key #{} is shorter than {MIN_KEY_LEN} characters",
                    i + 1
                )));
            }
            if key.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(ServerError::Config(format!(
                    "API key #{} contains whitespace or control characters",
                    i + 1
                )));
            }
        }
        for origin in &self.cors_origins {
            if origin != "*" && axum::http::HeaderValue::from_str(origin).is_err() {
                return Err(ServerError::Config(format!(
                    "invalid CORS origin {origin:?}"
                )));
            }
        }
        if !(self.rate_limit_per_second.is_finite() && self.rate_limit_per_second >= 0.0) {
            return Err(ServerError::Config(
                "rate_limit_per_second must be a number >= 0".into(),
            ));
        }
        if self.rate_limit_per_second > 0.0 && self.rate_limit_burst == 0 {
            return Err(ServerError::Config(
                "rate_limit_burst must be at least 1".into(),
            ));
        }
        if self.body_limit < 1024 {
            return Err(ServerError::Config(
                "body_limit must be at least 1024 bytes".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: char) -> String {
        std::iter::repeat_n(c, MIN_KEY_LEN).collect()
    }

    #[test]
    fn short_or_missing_keys_are_refused() {
        let mut c = ServerConfig::default();
        assert!(c.validate().is_err());
        c.api_keys = vec!["short".into()];
        assert!(c.validate().is_err());
        c.api_keys = vec![key('a')];
        assert!(c.validate().is_ok());
        c.readonly_api_keys = vec![format!("{} ", key('b'))];
        assert!(c.validate().is_err());
    }

    #[test]
    fn file_keys_parse_and_unknown_keys_fail() {
        let c: ServerConfig = toml::from_str(
            "listen = \"0.0.0.0:9000\"\napi_keys = [\"k\"]\nrate_limit_per_second = 2.5\nembedder = \"hashing\"",
        )
        .unwrap();
        assert_eq!(c.listen.port(), 9000);
        assert_eq!(c.rate_limit_per_second, 2.5);
        assert_eq!(c.embedder, EmbedderChoice::Hashing);
        assert!(toml::from_str::<ServerConfig>("nope = 1").is_err());
    }
}
