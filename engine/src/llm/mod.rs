//! Chat models: the [`ChatModel`] trait the summarizer and the label and
//! importance scorers call, and its OpenAI-compatible HTTP implementation
//! (cargo feature `openai`).
//! No record or index knowledge: callers pass text and get text back.

mod chat;
#[cfg(feature = "openai")]
mod openai;

pub use chat::ChatModel;
#[cfg(feature = "openai")]
pub use openai::{OpenAiChat, OpenAiChatConfig};
