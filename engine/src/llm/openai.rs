//! An OpenAI-compatible chat client: `POST {base_url}/chat/completions`,
//! for summaries and label suggestions.
//!
//! One call, one answer: [`OpenAiChat::complete`] sends a system and a user
//! message and returns the first choice's text. Request
//! `{"model", "messages": [{"role": "system", ...}, {"role": "user", ...}],
//! "max_tokens", "temperature"?}`; answer `{"choices": [{"message":
//! {"content"}}]}`. `max_tokens` (not the newer `max_completion_tokens`) is
//! what Ollama, vLLM and LiteLLM accept. An answer cut at `max_tokens` is
//! returned as it is.
//!
//! Transport, retries and key handling: `crate::util::http`, shared with the
//! embedding provider.

use std::time::Duration;

use serde::Deserialize;

use crate::error::{Error, RemoteFailure, Result};
use crate::util::http::{self, HttpPolicy, JsonClient};

/// Settings of [`OpenAiChat`].
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct OpenAiChatConfig {
    /// The API root, `/v1` included (see [`crate::OpenAiConfig::base_url`]).
    pub base_url: String,
    /// The chat model, e.g. `gpt-4o-mini` or `llama3.2`.
    pub model: String,
    /// The environment variable holding the API key (default
    /// `OPENAI_API_KEY`); `None`, or the variable unset: no key is sent.
    pub api_key_env: Option<String>,
    /// Sampling temperature; `None` (default) leaves it to the server.
    pub temperature: Option<f32>,
    /// Whole-request timeout (default 120 s: generation is slow).
    pub timeout: Duration,
    /// Connection timeout (default 10 s).
    pub connect_timeout: Duration,
    /// Retries after a failed attempt (default 4).
    pub max_retries: u32,
    /// Wait before the first retry, doubled each time (default 500 ms).
    pub backoff: Duration,
    /// Longest wait between attempts, `Retry-After` included (default 30 s).
    pub max_backoff: Duration,
    /// The API key itself, sent instead of `api_key_env`'s when set (a
    /// server given the key in its configuration). `Debug` never shows it.
    api_key: Option<String>,
}

impl std::fmt::Debug for OpenAiChatConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiChatConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key_env", &self.api_key_env)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("temperature", &self.temperature)
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_retries", &self.max_retries)
            .field("backoff", &self.backoff)
            .field("max_backoff", &self.max_backoff)
            .finish()
    }
}

impl OpenAiChatConfig {
    /// A config with the defaults above.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiChatConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: Some(crate::util::http::OPENAI_KEY_ENV.into()),
            temperature: None,
            timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            max_retries: 4,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            api_key: None,
        }
    }
    /// Sets the API key itself (`None` or blank: read `api_key_env`).
    pub fn api_key(mut self, key: Option<&str>) -> Self {
        self.api_key = key.map(str::to_string);
        self
    }
    /// Sets the key's environment variable (`None`: never send a key).
    pub fn api_key_env(mut self, name: Option<&str>) -> Self {
        self.api_key_env = name.map(str::to_string);
        self
    }
    /// Sets the sampling temperature.
    pub fn temperature(mut self, t: Option<f32>) -> Self {
        self.temperature = t;
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
}

/// A chat model behind an OpenAI-compatible API.
#[derive(Debug)]
pub struct OpenAiChat {
    client: JsonClient,
    url: String,
    config: OpenAiChatConfig,
}

#[derive(Deserialize)]
struct Response {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
}

impl OpenAiChat {
    /// Checks `config` and reads the API key from its environment variable.
    pub fn new(config: OpenAiChatConfig) -> Result<Self> {
        let base = http::base_url(&config.base_url)?;
        if config.model.trim().is_empty() {
            return Err(Error::invalid("model", "must not be empty"));
        }
        if let Some(t) = config.temperature
            && !(0.0..=2.0).contains(&t)
        {
            return Err(Error::invalid("temperature", "must be between 0 and 2"));
        }
        let policy = HttpPolicy::checked(
            config.timeout,
            config.connect_timeout,
            config.max_retries,
            config.backoff,
            config.max_backoff,
        )?;
        Ok(OpenAiChat {
            client: JsonClient::with_key(
                policy,
                config.api_key.as_deref(),
                config.api_key_env.as_deref(),
            ),
            url: format!("{base}/chat/completions"),
            config,
        })
    }

    /// The settings in use.
    pub fn config(&self) -> &OpenAiChatConfig {
        &self.config
    }

    /// Sends `system` (omitted when empty) and `user` and returns the
    /// model's answer, at most `max_tokens` tokens long.
    pub fn complete(&self, system: &str, user: &str, max_tokens: u32) -> Result<String> {
        if user.trim().is_empty() {
            return Err(Error::invalid("user", "the prompt must not be empty"));
        }
        if max_tokens == 0 {
            return Err(Error::invalid("max_tokens", "must be at least 1"));
        }
        let mut messages = Vec::with_capacity(2);
        if !system.is_empty() {
            messages.push(serde_json::json!({ "role": "system", "content": system }));
        }
        messages.push(serde_json::json!({ "role": "user", "content": user }));
        let mut body = serde_json::json!({
            "model": self.config.model,
            "messages": messages,
            "max_tokens": max_tokens,
        });
        if let Some(t) = self.config.temperature {
            body["temperature"] = t.into();
        }
        let resp: Response = self.client.post_json(&self.url, &body)?;
        resp.choices
            .into_iter()
            .next()
            .and_then(|c| c.message.content)
            .ok_or_else(|| {
                http::remote(
                    &self.url,
                    RemoteFailure::Malformed,
                    None,
                    "the answer has no choices[0].message.content".into(),
                )
            })
    }
}

/// The summarizer, label and importance paths (§19) take any `ChatModel`;
/// this is the one that talks to a real endpoint.
impl crate::llm::ChatModel for OpenAiChat {
    fn complete(&self, system: &str, user: &str, max_tokens: u32) -> Result<String> {
        OpenAiChat::complete(self, system, user, max_tokens)
    }

    fn name(&self) -> String {
        self.config.model.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_configs_and_prompts_are_refused_before_any_request() {
        let chat = OpenAiChat::new(OpenAiChatConfig::new("http://127.0.0.1:9/v1", "m")).unwrap();
        assert_eq!(chat.url, "http://127.0.0.1:9/v1/chat/completions");
        assert!(matches!(
            chat.complete("s", "  ", 10),
            Err(Error::InvalidInput { field, .. }) if field == "user"
        ));
        assert!(matches!(
            chat.complete("s", "hi", 0),
            Err(Error::InvalidInput { field, .. }) if field == "max_tokens"
        ));
        assert!(matches!(
            OpenAiChat::new(OpenAiChatConfig::new("nope", "m")),
            Err(Error::InvalidInput { field, .. }) if field == "base_url"
        ));
        assert!(matches!(
            OpenAiChat::new(OpenAiChatConfig::new("http://h/v1", "m").temperature(Some(3.0))),
            Err(Error::InvalidInput { field, .. }) if field == "temperature"
        ));
    }
}
