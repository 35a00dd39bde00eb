//! The OpenAI-compatible embedding provider: `POST {base_url}/embeddings`.
//!
//! Speaks the wire format OpenAI defined and Ollama, vLLM, LiteLLM (and so
//! Sekha's bridge) serve: request `{"model", "input": [texts]}`, answer
//! `{"data": [{"index", "embedding": [floats]}]}`. Texts go in batches of
//! `batch_size`, one request per batch, and come back in input order (by
//! `index` when the server sends it). Every vector must have the configured
//! dimension, checked on every answer, and is L2-normalised here, so the
//! vectors compare by cosine whatever the server does.
//!
//! Over-long input is the server's call: OpenAI refuses it (a 400, reported
//! as [`RemoteFailure::Rejected`](crate::RemoteFailure) with the server's
//! message), Ollama truncates it silently. The provider cannot know which, so
//! it reports no text as truncated. An empty text is sent as one space (the
//! OpenAI API refuses empty strings).
//!
//! Transport, retries and key handling: `crate::util::http`.

use std::time::Duration;

use serde::Deserialize;

use crate::embed::{Embedder, Embeddings, ModelIdentity, l2_normalize};
use crate::error::{Error, RemoteFailure, Result};
use crate::model::metric::{MAX_DIMENSION, Metric};
use crate::util::http::{self, HttpPolicy, JsonClient};

/// Settings of [`OpenAiEmbedder`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OpenAiConfig {
    /// The API root, `/v1` included: `https://api.openai.com/v1`,
    /// `http://localhost:11434/v1` (Ollama), `http://localhost:8000/v1` (vLLM).
    pub base_url: String,
    /// The model name the server knows, e.g. `text-embedding-3-small`.
    pub model: String,
    /// The vectors' dimension (required: it is part of the model identity,
    /// and every answer is checked against it).
    pub dimension: u32,
    /// The environment variable holding the API key (default
    /// `OPENAI_API_KEY`); `None`, or the variable unset: no key is sent.
    pub api_key_env: Option<String>,
    /// Texts per request (default 64).
    pub batch_size: usize,
    /// Whole-request timeout (default 60 s).
    pub timeout: Duration,
    /// Connection timeout (default 10 s).
    pub connect_timeout: Duration,
    /// Retries after a failed attempt (default 4).
    pub max_retries: u32,
    /// Wait before the first retry, doubled each time (default 500 ms).
    pub backoff: Duration,
    /// Longest wait between attempts, `Retry-After` included (default 30 s).
    pub max_backoff: Duration,
    /// Sends `"dimensions": dimension` in each request, for models that can
    /// shorten their vectors (OpenAI's `text-embedding-3-*`). Default off:
    /// other servers may refuse the field.
    pub request_dimensions: bool,
}

impl OpenAiConfig {
    /// Default environment variable of the API key.
    pub const DEFAULT_KEY_ENV: &'static str = crate::util::http::OPENAI_KEY_ENV;

    /// A config with the defaults above.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>, dimension: u32) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            model: model.into(),
            dimension,
            api_key_env: Some(Self::DEFAULT_KEY_ENV.into()),
            batch_size: 64,
            timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
            max_retries: 4,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            request_dimensions: false,
        }
    }
    /// Sets the key's environment variable (`None`: never send a key).
    pub fn api_key_env(mut self, name: Option<&str>) -> Self {
        self.api_key_env = name.map(str::to_string);
        self
    }
    /// Sets the texts per request.
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n;
        self
    }
    /// Sets the whole-request timeout.
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }
    /// Sets the retries after a failed attempt.
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }
    /// Sets the first retry's wait and the longest wait.
    pub fn backoff(mut self, first: Duration, max: Duration) -> Self {
        self.backoff = first;
        self.max_backoff = max;
        self
    }
    /// Sends the `dimensions` request field.
    pub fn request_dimensions(mut self, on: bool) -> Self {
        self.request_dimensions = on;
        self
    }
}

/// Embeddings from an OpenAI-compatible server. Identity: provider
/// `openai`, name = the model, the configured dimension, cosine.
#[derive(Debug)]
pub struct OpenAiEmbedder {
    client: JsonClient,
    url: String,
    config: OpenAiConfig,
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

impl OpenAiEmbedder {
    /// Identity provider name.
    pub const PROVIDER: &'static str = "openai";
    /// Most texts per request.
    pub const MAX_BATCH: usize = 2048;

    /// Checks `config` and reads the API key from its environment variable.
    /// Nothing is sent until the first [`embed`](Embedder::embed).
    pub fn new(config: OpenAiConfig) -> Result<Self> {
        let base = http::base_url(&config.base_url)?;
        if config.model.trim().is_empty() {
            return Err(Error::invalid("model", "must not be empty"));
        }
        if config.dimension == 0 || config.dimension > MAX_DIMENSION {
            return Err(Error::invalid(
                "dimension",
                format!(
                    "must be between 1 and {MAX_DIMENSION}, got {}",
                    config.dimension
                ),
            ));
        }
        if !(1..=Self::MAX_BATCH).contains(&config.batch_size) {
            return Err(Error::invalid(
                "batch_size",
                format!("must be between 1 and {}", Self::MAX_BATCH),
            ));
        }
        let policy = HttpPolicy::checked(
            config.timeout,
            config.connect_timeout,
            config.max_retries,
            config.backoff,
            config.max_backoff,
        )?;
        Ok(OpenAiEmbedder {
            client: JsonClient::new(policy, config.api_key_env.as_deref()),
            url: format!("{base}/embeddings"),
            config,
        })
    }

    /// The settings in use.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    fn embed_batch(&self, texts: &[&str], out: &mut Vec<Vec<f32>>) -> Result<()> {
        let input: Vec<&str> = texts
            .iter()
            .map(|t| if t.is_empty() { " " } else { *t })
            .collect();
        let mut body = serde_json::json!({ "model": self.config.model, "input": input });
        if self.config.request_dimensions {
            body["dimensions"] = self.config.dimension.into();
        }
        let resp: Response = self.client.post_json(&self.url, &body)?;
        let malformed =
            |what: String| http::remote(&self.url, RemoteFailure::Malformed, None, what);
        if resp.data.len() != texts.len() {
            return Err(malformed(format!(
                "sent {} texts, got {} embeddings back",
                texts.len(),
                resp.data.len()
            )));
        }
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for (pos, item) in resp.data.into_iter().enumerate() {
            let i = item.index.unwrap_or(pos);
            let dim = item.embedding.len();
            if dim != self.config.dimension as usize {
                return Err(Error::invalid(
                    "dimension",
                    format!(
                        "model `{}` returned {dim}-dimensional vectors but the configuration says {}; set the dimension to {dim} (a new vector space: re-embed with `memdb rebuild-embeddings`)",
                        self.config.model, self.config.dimension
                    ),
                ));
            }
            match slots.get_mut(i) {
                Some(slot @ None) => {
                    let mut v = item.embedding;
                    l2_normalize(&mut v);
                    *slot = Some(v);
                }
                Some(Some(_)) => return Err(malformed(format!("index {i} appears twice"))),
                None => {
                    return Err(malformed(format!(
                        "index {i} is out of range for {} texts",
                        texts.len()
                    )));
                }
            }
        }
        for slot in slots {
            // Every slot is filled: as many distinct in-range indexes as texts.
            out.push(slot.ok_or_else(|| malformed("an index is missing".into()))?);
        }
        Ok(())
    }
}

impl Embedder for OpenAiEmbedder {
    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            provider: Self::PROVIDER.into(),
            name: self.config.model.clone(),
            dimension: self.config.dimension,
            metric: Metric::Cosine,
        }
    }

    fn embed_report(&self, texts: &[&str]) -> Result<Embeddings> {
        let mut vectors = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.config.batch_size) {
            self.embed_batch(chunk, &mut vectors)?;
        }
        Ok(Embeddings {
            truncated: vec![false; vectors.len()],
            vectors,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_configs_are_refused_before_any_request() {
        let ok = || OpenAiConfig::new("http://127.0.0.1:9/v1", "m", 8);
        assert!(OpenAiEmbedder::new(ok()).is_ok());
        for (config, field) in [
            (OpenAiConfig::new("ftp://x/v1", "m", 8), "base_url"),
            (OpenAiConfig::new("localhost:11434", "m", 8), "base_url"),
            (OpenAiConfig::new("http://", "m", 8), "base_url"),
            (OpenAiConfig::new("http://h/v1", " ", 8), "model"),
            (OpenAiConfig::new("http://h/v1", "m", 0), "dimension"),
            (ok().batch_size(0), "batch_size"),
            (ok().batch_size(5000), "batch_size"),
            (ok().timeout(Duration::ZERO), "timeout"),
        ] {
            match OpenAiEmbedder::new(config) {
                Err(Error::InvalidInput { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
    }

    #[test]
    fn identity_names_the_model() {
        let e = OpenAiEmbedder::new(OpenAiConfig::new(
            "https://api.openai.com/v1/",
            "text-embedding-3-small",
            1536,
        ))
        .unwrap();
        let id = e.identity();
        assert_eq!(
            (id.provider.as_str(), id.name.as_str(), id.dimension),
            ("openai", "text-embedding-3-small", 1536)
        );
        assert_eq!(e.url, "https://api.openai.com/v1/embeddings");
        assert!(e.embed(&[]).unwrap().is_empty());
    }
}
