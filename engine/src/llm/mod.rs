//! Chat models: the [`ChatModel`] trait the summarizer and the label and
//! importance scorers call, and its OpenAI-compatible HTTP implementation.
//! No record or index knowledge: callers pass text and get text back.

mod chat;
mod openai;

pub use chat::ChatModel;
pub use openai::{OpenAiChat, OpenAiChatConfig};
