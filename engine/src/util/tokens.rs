//! Token counting for context budgets and summaries: a fast estimate
//! (4 characters per token) or exact cl100k_base / o200k_base counts
//! (tiktoken-rs, whose BPE tables are bundled, so it works offline; cargo
//! feature `tiktoken`, without which asking for either is an error naming
//! the feature).

#[cfg(feature = "tiktoken")]
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
    /// Exact counts with OpenAI's `cl100k_base` encoding (cargo feature
    /// `tiktoken`; without it, counting is an `InvalidInput` error).
    Cl100kBase,
    /// Exact counts with OpenAI's `o200k_base` encoding (the gpt-4o family;
    /// what Memorg 0.1.2 counts with via `encoding_for_model("gpt-4o-mini")`).
    O200kBase,
}

impl TokenCounter {
    /// Tokens in `text`.
    pub fn count(self, text: &str) -> Result<usize> {
        match self {
            TokenCounter::Estimate => Ok(estimate_tokens(text)),
            TokenCounter::Cl100kBase => bpe_count(Encoding::Cl100k, text),
            TokenCounter::O200kBase => bpe_count(Encoding::O200k, text),
        }
    }

    /// Tokens in `text` when at most `limit`; some count above `limit`
    /// otherwise (exact counts stop at the first piece past it, so asking
    /// whether a long text fits a small budget costs the budget, not the
    /// text).
    pub(crate) fn count_within(self, text: &str, limit: usize) -> Result<usize> {
        if self == TokenCounter::Estimate {
            return self.count(text);
        }
        let mut total = 0usize;
        let mut rest = text;
        while !rest.is_empty() && total <= limit {
            let (piece, tail) = rest.split_at(first_piece_len(rest));
            total += self.count(piece)?;
            rest = tail;
        }
        Ok(total)
    }
}

/// The exact BPE encodings.
#[derive(Clone, Copy)]
enum Encoding {
    Cl100k,
    O200k,
}

/// Exact tokens of `text` in `encoding`.
#[cfg(feature = "tiktoken")]
fn bpe_count(encoding: Encoding, text: &str) -> Result<usize> {
    let bpe = match encoding {
        Encoding::Cl100k => cl100k()?,
        Encoding::O200k => o200k()?,
    };
    Ok(pieces(text)
        .map(|piece| bpe.encode_ordinary(piece).len())
        .sum())
}

#[cfg(not(feature = "tiktoken"))]
fn bpe_count(encoding: Encoding, _text: &str) -> Result<usize> {
    let name = match encoding {
        Encoding::Cl100k => "cl100k_base",
        Encoding::O200k => "o200k_base",
    };
    Err(Error::invalid(
        "token_counter",
        format!(
            "{name} is not available: this build of memdb was compiled without the cargo feature `tiktoken`"
        ),
    ))
}

/// Text up to this many bytes is counted in one call.
const WINDOW: usize = 1024;
/// A window with no word boundary (a run of whitespace or one huge word) is
/// cut after this many bytes.
const RUN: usize = 128;

/// `text` cut into pieces tiktoken can count safely. Its pre-tokenizer
/// (fancy-regex) overflows its backtracking stack on long whitespace runs
/// and panics, and its merge loop is quadratic in a piece's length, so a
/// legal 1 MiB message of spaces could crash or stall a count. Pieces are
/// cut before a whitespace character that follows a non-whitespace one:
/// cl100k's pre-tokenizer never joins across that point in ordinary text
/// (` word` starts a new token), so counts are exact there; only inside a
/// boundary-free run longer than a window is the cut arbitrary (at most one
/// token per cut off).
#[cfg(feature = "tiktoken")]
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (piece, tail) = rest.split_at(first_piece_len(rest));
        rest = tail;
        Some(piece)
    })
}

/// The byte length of the first piece an exact count cuts `rest` into
/// (see `pieces`): all of it up to [`WINDOW`] bytes, else up to the last
/// whitespace that follows a non-whitespace character in the first window.
/// An exact count is the sum of its pieces' counts, each piece counted on
/// its own, and a piece depends only on the `WINDOW + 1` bytes it starts
/// ([`PIECE_LOOKAHEAD`]): the context optimizer counts incrementally with
/// this.
pub(crate) fn first_piece_len(rest: &str) -> usize {
    if rest.len() <= WINDOW {
        return rest.len();
    }
    let window = &rest[..floor_char_boundary(rest, WINDOW)];
    let mut cut = None;
    let mut prev_space = true;
    for (i, c) in window.char_indices() {
        let space = c.is_whitespace();
        if space && !prev_space && i > 0 {
            cut = Some(i);
        }
        prev_space = space;
    }
    cut.unwrap_or_else(|| floor_char_boundary(rest, RUN).max(first_char_len(rest)))
}

/// How many leading bytes of the rest of a text decide its first piece
/// ([`first_piece_len`]): two texts that agree on them (or are both
/// shorter and equal) cut the same first piece.
pub(crate) const PIECE_LOOKAHEAD: usize = WINDOW + 1;

/// The largest char boundary of `s` at or below `i`.
fn floor_char_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn first_char_len(s: &str) -> usize {
    s.chars().next().map_or(0, char::len_utf8)
}

/// `ceil(chars / 4)`: the estimate used everywhere a count is not asked for.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

#[cfg(feature = "tiktoken")]
fn cl100k() -> Result<&'static tiktoken_rs::CoreBPE> {
    static BPE: OnceLock<std::result::Result<tiktoken_rs::CoreBPE, String>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::cl100k_base().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| Error::invalid("tokenizer", format!("cl100k_base unavailable: {e}")))
}

#[cfg(feature = "tiktoken")]
fn o200k() -> Result<&'static tiktoken_rs::CoreBPE> {
    static BPE: OnceLock<std::result::Result<tiktoken_rs::CoreBPE, String>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::o200k_base().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| Error::invalid("tokenizer", format!("o200k_base unavailable: {e}")))
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

    #[cfg(not(feature = "tiktoken"))]
    #[test]
    fn cl100k_without_its_feature_is_a_clear_error() {
        let e = TokenCounter::Cl100kBase.count("hello world").unwrap_err();
        assert!(e.to_string().contains("cargo feature `tiktoken`"), "{e}");
    }

    #[cfg(feature = "tiktoken")]
    #[test]
    fn cl100k_counts_known_strings() {
        // "hello world" is two tokens in cl100k_base ("hello", " world").
        assert_eq!(TokenCounter::Cl100kBase.count("hello world").unwrap(), 2);
        assert_eq!(TokenCounter::Cl100kBase.count("").unwrap(), 0);
    }

    #[cfg(feature = "tiktoken")]
    #[test]
    fn o200k_counts_known_strings_and_differs_from_cl100k() {
        assert_eq!(TokenCounter::O200kBase.count("hello world").unwrap(), 2);
        assert_eq!(TokenCounter::O200kBase.count("").unwrap(), 0);
        // o200k's larger vocabulary packs non-English text tighter.
        let text = "これは日本語のテキストです。トークン数を比べます。".repeat(4);
        let o = TokenCounter::O200kBase.count(&text).unwrap();
        let c = TokenCounter::Cl100kBase.count(&text).unwrap();
        assert!(o < c, "o200k {o} vs cl100k {c}");
        let long = "word ".repeat(3000);
        assert_eq!(
            TokenCounter::O200kBase.count(&long).unwrap(),
            o200k().unwrap().encode_ordinary(&long).len()
        );
    }

    #[test]
    fn cl100k_counts_pathological_text_without_panicking() {
        // A legal 1 MiB message: spaces then one letter (tiktoken alone
        // overflows fancy-regex's stack and panics on it).
        let spaces = format!("{}x", " ".repeat(1 << 20));
        let n = TokenCounter::Cl100kBase.count(&spaces).unwrap();
        assert!(n > 0 && n < 1 << 20, "{n}");
        for text in [
            "x".repeat(1 << 20),
            "\n".repeat(1 << 19),
            "\t \r\n".repeat(1 << 17),
            "日本語".repeat(1 << 16),
            "1234567890".repeat(1 << 16),
        ] {
            let n = TokenCounter::Cl100kBase.count(&text).unwrap();
            assert!(n > 0, "{}", &text[..8]);
        }
    }

    #[cfg(feature = "tiktoken")]
    #[test]
    fn cl100k_pieces_are_exact_on_ordinary_text() {
        // Long ordinary text is cut between words: the same count as one
        // call to tiktoken.
        let text = "The borrow checker rejects a reference that outlives its owner; \
                    lifetimes name how long references live, and the compiler checks them. "
            .repeat(60);
        assert!(text.len() > 4 * WINDOW);
        let whole = cl100k().unwrap().encode_ordinary(&text).len();
        assert_eq!(TokenCounter::Cl100kBase.count(&text).unwrap(), whole);
        // Pieces cover the text exactly, in order.
        assert_eq!(pieces(&text).collect::<String>(), text);
        let odd = format!("{}é{}", " ".repeat(3000), "ü".repeat(3000));
        assert_eq!(pieces(&odd).collect::<String>(), odd);
    }
}
