//! What text a message's vector is computed from (SPEC.md §10.1).
//!
//! A conversation turn often means little alone ("Yes, last Tuesday!"): what
//! it answers is in the turn before. A contextual passage embeds the turn
//! together with the start of its neighbouring turns, so the vector carries
//! what the exchange is about while the stored message stays as written.
//! The passage rule is part of a message space's identity (stored with the
//! model in the space's description): a store changes rule only through
//! `rebuild_embeddings`, never by mixing vectors of two rules.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Characters of a neighbouring turn included in a contextual passage: the
/// turn itself comes first and the model reads 256 tokens, so a long
/// neighbour is cut rather than crowding the turn out.
pub const NEIGHBOUR_CHARS: usize = 300;

/// How a message's embedded text is built.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Passage {
    /// The message text alone (every store embedded before passages
    /// existed reads as this).
    #[default]
    Turn,
    /// The message text, then the start of the turn before it in its
    /// conversation.
    WithPrevious,
    /// The message text, then the start of the turns before and after it.
    WithNeighbours,
}

impl Passage {
    /// The name stored in a space's description and accepted by
    /// [`Passage::parse`].
    pub fn name(self) -> &'static str {
        match self {
            Passage::Turn => "turn",
            Passage::WithPrevious => "with-previous",
            Passage::WithNeighbours => "with-neighbours",
        }
    }

    /// Parses a name of [`Passage::name`].
    pub fn parse(s: &str) -> Result<Passage> {
        match s.trim() {
            "turn" => Ok(Passage::Turn),
            "with-previous" => Ok(Passage::WithPrevious),
            "with-neighbours" => Ok(Passage::WithNeighbours),
            other => Err(Error::invalid(
                "passage",
                format!(
                    "unknown passage {other:?}; expected turn, with-previous or with-neighbours"
                ),
            )),
        }
    }

    /// Whether the passage reads the turn before.
    pub fn wants_previous(self) -> bool {
        matches!(self, Passage::WithPrevious | Passage::WithNeighbours)
    }

    /// Whether the passage reads the turn after.
    pub fn wants_next(self) -> bool {
        self == Passage::WithNeighbours
    }

    /// The text to embed for `turn` with its neighbours (those the rule
    /// does not read are ignored). Empty when the turn has no text: a turn
    /// without text is not embedded, whatever its neighbours say.
    pub fn build(self, turn: &str, previous: Option<&str>, next: Option<&str>) -> String {
        if turn.trim().is_empty() || self == Passage::Turn {
            return turn.to_string();
        }
        let mut out = String::with_capacity(turn.len() + 2 * NEIGHBOUR_CHARS + 4);
        out.push_str(turn);
        let neighbours = [
            previous.filter(|_| self.wants_previous()),
            next.filter(|_| self.wants_next()),
        ];
        for n in neighbours.into_iter().flatten() {
            let n = n.trim();
            if n.is_empty() {
                continue;
            }
            out.push_str("\n\n");
            out.push_str(cut(n, NEIGHBOUR_CHARS));
        }
        out
    }
}

/// What a message space does with a passage longer than the model reads
/// (SPEC.md §10.1). Stored in the space's description as `long_passage`;
/// like the passage rule, a store changes it only through
/// `rebuild_embeddings`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum LongPassage {
    /// The model reads the passage's beginning and ignores the rest
    /// (every space from before the rule existed reads as this).
    #[default]
    First,
    /// The passage is cut into the windows the model reads whole
    /// (`Embedder::passages`), each is embedded, and the message's vector
    /// is the normalised mean of theirs: every part of a long turn counts.
    /// Past [`LongPassage::MAX_WINDOWS`] windows, that many spread evenly
    /// over the text (`spread_windows`).
    Mean,
}

impl LongPassage {
    /// The most windows one message is embedded as (about 3,600 tokens
    /// read whole at 256 per window): a message may hold a megabyte, and
    /// the write that stores it may embed it inline.
    pub const MAX_WINDOWS: usize = 16;

    /// The rule every new message space gets.
    pub const NEW_SPACES: LongPassage = LongPassage::Mean;

    /// The name stored in a space's description and accepted by
    /// [`LongPassage::parse`].
    pub fn name(self) -> &'static str {
        match self {
            LongPassage::First => "first",
            LongPassage::Mean => "mean",
        }
    }

    /// Parses a name of [`LongPassage::name`].
    pub fn parse(s: &str) -> Result<LongPassage> {
        match s.trim() {
            "first" => Ok(LongPassage::First),
            "mean" => Ok(LongPassage::Mean),
            other => Err(Error::invalid(
                "long_passage",
                format!("unknown long-passage rule {other:?}; expected first or mean"),
            )),
        }
    }
}

/// The first `max` characters of `s`, ending at a word boundary when one is
/// near.
pub(crate) fn cut(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        None => s,
        Some((end, _)) => {
            let head = &s[..end];
            match head.rfind(char::is_whitespace) {
                Some(space) if space > end / 2 => &head[..space],
                _ => head,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_passage_is_the_text_alone() {
        assert_eq!(Passage::Turn.build("yes", Some("did you?"), None), "yes");
    }

    #[test]
    fn contextual_passages_put_the_turn_first_and_cut_long_neighbours() {
        let p = Passage::WithPrevious.build(
            "Yes, last Tuesday!",
            Some("Did you go to the zoo?"),
            Some("nice"),
        );
        assert_eq!(p, "Yes, last Tuesday!\n\nDid you go to the zoo?");
        let n = Passage::WithNeighbours.build("b", Some("a"), Some("c"));
        assert_eq!(n, "b\n\na\n\nc");
        let long = "word ".repeat(200);
        let p = Passage::WithPrevious.build("t", Some(&long), None);
        assert!(p.chars().count() <= 3 + NEIGHBOUR_CHARS, "{}", p.len());
        assert!(p.ends_with("word"), "cut at a word boundary");
        // No neighbour, or an empty turn: nothing added.
        assert_eq!(Passage::WithNeighbours.build("t", None, Some("  ")), "t");
        assert_eq!(Passage::WithPrevious.build(" ", Some("x"), None), " ");
    }

    #[test]
    fn names_round_trip() {
        for p in [
            Passage::Turn,
            Passage::WithPrevious,
            Passage::WithNeighbours,
        ] {
            assert_eq!(Passage::parse(p.name()).unwrap(), p);
        }
        assert!(Passage::parse("sentence").is_err());
        for l in [LongPassage::First, LongPassage::Mean] {
            assert_eq!(LongPassage::parse(l.name()).unwrap(), l);
        }
        assert!(LongPassage::parse("max").is_err());
    }
}
