//! The server's chat model (SPEC.md §23.8): the settings of `--chat openai`
//! (flags, `MEMDB_CHAT_*` variables, the `[chat]` table of the TOML file)
//! and the [`memdb::OpenAiChat`] built from them, which the summary, label
//! and importance routes hand to the engine. None is configured by default:
//! those routes then use the engine's extractive and heuristic paths, as
//! they also do (with a note in the answer) whenever the model fails.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::error::ServerError;

/// Which chat model the server asks for summaries, labels and importance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ChatChoice {
    /// No model: extractive summaries, heuristic labels and importance.
    #[default]
    None,
    /// An OpenAI-compatible `/v1/chat/completions` server (OpenAI, Ollama,
    /// vLLM, LiteLLM).
    Openai,
}

/// Settings of the server's chat model. Every field is optional: unset
/// flags fall back to the file's `[chat]` table, then to the defaults.
#[derive(Clone, Default, PartialEq, Eq, Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct ChatSettings {
    /// Chat model for summaries, label suggestions and importance scores:
    /// `none` or `openai` [default: none].
    #[arg(
        long = "chat",
        id = "chat",
        env = "MEMDB_CHAT",
        value_enum,
        value_name = "PROVIDER"
    )]
    pub provider: Option<ChatChoice>,
    /// `--chat openai`: the API root, `/v1` included (e.g.
    /// http://localhost:11434/v1 for Ollama).
    #[arg(
        long = "chat-base-url",
        id = "chat_base_url",
        env = "MEMDB_CHAT_BASE_URL",
        value_name = "URL"
    )]
    pub base_url: Option<String>,
    /// `--chat openai`: the chat model's name on that server.
    #[arg(
        long = "chat-model",
        id = "chat_model",
        env = "MEMDB_CHAT_MODEL",
        value_name = "NAME"
    )]
    pub model: Option<String>,
    /// `--chat openai`: the API key sent as a bearer token [default: none;
    /// local servers need none].
    #[arg(
        long = "chat-key",
        id = "chat_key",
        env = "MEMDB_CHAT_KEY",
        hide_env_values = true
    )]
    pub key: Option<String>,
    /// Seconds one attempt may take [default: 30].
    #[arg(
        long = "chat-timeout",
        id = "chat_timeout",
        env = "MEMDB_CHAT_TIMEOUT",
        value_name = "SECS"
    )]
    pub timeout_secs: Option<u64>,
    /// Retries after a failed attempt (429, 5xx, timeouts) [default: 1].
    #[arg(
        long = "chat-retries",
        id = "chat_retries",
        env = "MEMDB_CHAT_RETRIES",
        value_name = "N"
    )]
    pub max_retries: Option<u32>,
}

impl std::fmt::Debug for ChatSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatSettings")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .field("timeout_secs", &self.timeout_secs)
            .field("max_retries", &self.max_retries)
            .finish()
    }
}

/// Default seconds per attempt: the summary, label and importance routes
/// answer within the server's request timeout (120 s) even after a retry.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;
/// Default retries after a failed attempt.
pub const DEFAULT_RETRIES: u32 = 1;
/// Longest wait between attempts; a `Retry-After` asking for more ends the
/// retries at once (and the heuristic answers).
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);

impl ChatSettings {
    /// These settings, each unset one taken from `base`.
    pub fn or(&self, base: &ChatSettings) -> ChatSettings {
        ChatSettings {
            provider: self.provider.or(base.provider),
            base_url: self.base_url.clone().or_else(|| base.base_url.clone()),
            model: self.model.clone().or_else(|| base.model.clone()),
            key: self.key.clone().or_else(|| base.key.clone()),
            timeout_secs: self.timeout_secs.or(base.timeout_secs),
            max_retries: self.max_retries.or(base.max_retries),
        }
    }

    /// The configured model, `None` for `--chat none` (the default); the
    /// error names the flag or variable to set.
    pub fn build(&self) -> Result<Option<Arc<dyn memdb::ChatModel>>, ServerError> {
        if self.provider.unwrap_or_default() == ChatChoice::None {
            return Ok(None);
        }
        let missing = |what: &str, flag: &str, env: &str| {
            ServerError::Config(format!("--chat openai needs {what}: set {env} ({flag})"))
        };
        let base_url = self
            .base_url
            .as_deref()
            .filter(|u| !u.trim().is_empty())
            .ok_or_else(|| missing("a base URL", "--chat-base-url", "MEMDB_CHAT_BASE_URL"))?;
        let model = self
            .model
            .as_deref()
            .filter(|m| !m.trim().is_empty())
            .ok_or_else(|| missing("a model", "--chat-model", "MEMDB_CHAT_MODEL"))?;
        let timeout = self.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
        if !(1..=3600).contains(&timeout) {
            return Err(ServerError::Config(
                "chat timeout must be between 1 and 3600 seconds".into(),
            ));
        }
        let config = memdb::OpenAiChatConfig::new(base_url.trim(), model.trim())
            .api_key_env(None)
            .api_key(self.key.as_deref())
            .timeout(Duration::from_secs(timeout))
            .max_retries(self.max_retries.unwrap_or(DEFAULT_RETRIES))
            .backoff(Duration::from_millis(250), MAX_BACKOFF);
        let chat = memdb::OpenAiChat::new(config)
            .map_err(|e| ServerError::Config(format!("chat model: {e}")))?;
        Ok(Some(Arc::new(chat)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_by_default_and_openai_needs_url_and_model() {
        assert!(ChatSettings::default().build().unwrap().is_none());
        let mut s = ChatSettings {
            provider: Some(ChatChoice::Openai),
            ..ChatSettings::default()
        };
        let e = s.build().err().unwrap().to_string();
        assert!(e.contains("MEMDB_CHAT_BASE_URL"), "{e}");
        s.base_url = Some("http://127.0.0.1:9/v1".into());
        let e = s.build().err().unwrap().to_string();
        assert!(e.contains("MEMDB_CHAT_MODEL"), "{e}");
        s.model = Some("llama3.2".into());
        s.key = Some("sk-secret-chat-key".into());
        let model = s.build().unwrap().unwrap();
        assert_eq!(model.name(), "llama3.2");
        assert!(!format!("{s:?}").contains("sk-secret"));
        s.base_url = Some("ftp://x".into());
        assert!(s.build().is_err());
    }

    #[test]
    fn the_file_table_parses_and_flags_win() {
        let file: ChatSettings = toml::from_str(
            "provider = \"openai\"\nbase_url = \"http://localhost:11434/v1\"\nmodel = \"a\"",
        )
        .unwrap();
        let flags = ChatSettings {
            model: Some("b".into()),
            ..ChatSettings::default()
        };
        let merged = flags.or(&file);
        assert_eq!(merged.provider, Some(ChatChoice::Openai));
        assert_eq!(merged.model.as_deref(), Some("b"));
        assert!(toml::from_str::<ChatSettings>("nope = 1").is_err());
    }

    #[test]
    fn the_flags_reach_the_server_config() {
        use clap::{CommandFactory, Parser};
        crate::cli::ServerCli::command().debug_assert();
        let cli = crate::cli::ServerCli::try_parse_from([
            "memdb-server",
            "--api-key",
            &"k".repeat(32),
            "--chat",
            "openai",
            "--chat-base-url",
            "http://127.0.0.1:9/v1",
            "--chat-model",
            "m",
            "--openai-model",
            "embed",
            "--upstream-url",
            "http://127.0.0.1:9/v1",
            "--proxy-folder",
            "/captured",
        ])
        .unwrap();
        let c = cli
            .serve
            .config(cli.data, cli.embedder, cli.models_dir, &cli.openai)
            .unwrap();
        assert_eq!(c.chat.provider, Some(ChatChoice::Openai));
        assert_eq!(c.chat.model.as_deref(), Some("m"));
        assert_eq!(c.openai.model.as_deref(), Some("embed"));
        assert_eq!(c.proxy.folder.as_deref(), Some("/captured"));
    }
}
