//! [`ChatModel`]: the one interface the engine uses to talk to an LLM.
//!
//! Summaries, label suggestions and importance scores have a heuristic
//! default that needs no model; when a caller passes a `ChatModel`, those
//! features ask it instead (and fall back to the heuristic, saying so, when
//! it fails or answers nonsense). Implementations live outside this module:
//! an OpenAI-compatible HTTP client is provided by the surfaces that
//! configure one; tests use a local double.

use crate::error::Result;

/// A chat-completion model: one system prompt, one user turn, one answer.
pub trait ChatModel: Send + Sync {
    /// Completes `user` under `system`, answering with at most about
    /// `max_tokens` tokens.
    fn complete(&self, system: &str, user: &str, max_tokens: u32) -> Result<String>;
    /// The model's name, recorded with what it produced (e.g. `gpt-4o-mini`).
    fn name(&self) -> String;
}
