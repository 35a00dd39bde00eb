//! Token counting for context budgets and summaries: a fast estimate
//! (4 characters per token) or exact cl100k_base counts (tiktoken-rs, whose
//! BPE tables are bundled, so it works offline).

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How tokens are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenCounter {
    /// `ceil(chars / 4)` over Unicode scalar values (Sekha's 4 characters
    /// per token, rounded up so no message is free).
    #[default]
    Estimate,
    /// Exact counts with OpenAI's `cl100k_base` encoding.
    Cl100kBase,
}

impl TokenCounter {
    /// Tokens in `text`.
    pub fn count(self, text: &str) -> Result<usize> {
        match self {
            TokenCounter::Estimate => Ok(estimate_tokens(text)),
            TokenCounter::Cl100kBase => Ok(cl100k()?.encode_ordinary(text).len()),
        }
    }
}

/// `ceil(chars / 4)`: the estimate used everywhere a count is not asked for.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

fn cl100k() -> Result<&'static tiktoken_rs::CoreBPE> {
    static BPE: OnceLock<std::result::Result<tiktoken_rs::CoreBPE, String>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::cl100k_base().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| Error::invalid("tokenizer", format!("cl100k_base unavailable: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_rounds_up_per_character() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abc"), 1);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        // Characters, not bytes: four 3-byte characters are one token.
        assert_eq!(estimate_tokens("日本語字"), 1);
    }

    #[test]
    fn cl100k_counts_known_strings() {
        // "hello world" is two tokens in cl100k_base ("hello", " world").
        assert_eq!(TokenCounter::Cl100kBase.count("hello world").unwrap(), 2);
        assert_eq!(TokenCounter::Cl100kBase.count("").unwrap(), 0);
    }
}
