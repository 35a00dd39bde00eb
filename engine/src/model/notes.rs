//! [`SearchNote`]: what a search tells its caller besides the hits
//! (ignored parameters, fallbacks, truncation, messages not embedded yet),
//! typed so that surfaces decide on the variant, never on the wording.
//!
//! Every variant renders (`Display`) to one fixed English line, and that
//! line is the wire form: `SearchResults` serializes its notes as these
//! strings (REST, MCP and `memdb query --json` print them unchanged), and
//! deserializing reads them back into variants.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One note of a search (`SearchResults::notes`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SearchNote {
    /// A keyword search was given `min_similarity`, which only semantic
    /// rankings use.
    MinSimilarityIgnored,
    /// The query was longer than the embedding model's token limit; only
    /// its beginning was embedded.
    QueryTruncated {
        /// The model's limit in tokens (0 when it has none it can name).
        max_tokens: usize,
    },
    /// Messages of the searched space wait in the embed queue, so the
    /// semantic ranking cannot find them yet.
    NotEmbeddedYet {
        /// Queued messages counted.
        pending: u64,
        /// Counting stopped at a cap: at least `pending` are queued.
        at_least: bool,
    },
    /// A hybrid search could not rank semantically (model mismatch or
    /// embedding failure) and answered from the keyword ranking alone.
    SemanticUnavailable {
        /// The error that stopped the semantic side.
        reason: String,
    },
    /// A hybrid search ran without an embedding model configured: keyword
    /// search only.
    NoEmbedder,
    /// The keyword side of a hybrid search was skipped because the query
    /// has only stop words.
    KeywordStopWordsOnly,
    /// The keyword side of a hybrid search read as natural language was
    /// skipped because the query has no word at all (only punctuation).
    KeywordNoWords,
    /// A keyword search read as natural language found nothing to search
    /// for: the query has no word at all.
    NoWords,
    /// The keyword side of a hybrid search was skipped because the query
    /// does not parse as keyword syntax.
    KeywordSkipped {
        /// Why the keyword query was refused.
        reason: String,
    },
}

const MIN_SIMILARITY_IGNORED: &str = "min_similarity applies to semantic rankings: ignored";
const NO_EMBEDDER: &str = "no embedding model configured: hybrid search ran as keyword search";
const KEYWORD_STOP_WORDS: &str = "keyword ranking skipped: the query has only stop words";
const KEYWORD_NO_WORDS: &str = "keyword ranking skipped: the query has no words";
const NO_WORDS: &str = "the query has no words to search for: no keyword hits";
const KEYWORD_SKIPPED: &str = "keyword ranking skipped: ";
const SEMANTIC_UNAVAILABLE: &str = "semantic ranking unavailable, keyword only: ";
const TRUNCATED_HEAD: &str = "the query is longer than the model's limit of ";
const TRUNCATED_TAIL: &str = " tokens: only its beginning was embedded";
const PENDING_TAIL: &str = " message(s) are not embedded yet: semantic ranking misses them until they are (keyword search finds them)";

impl fmt::Display for SearchNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SearchNote::MinSimilarityIgnored => f.write_str(MIN_SIMILARITY_IGNORED),
            SearchNote::QueryTruncated { max_tokens } => {
                write!(f, "{TRUNCATED_HEAD}{max_tokens}{TRUNCATED_TAIL}")
            }
            SearchNote::NotEmbeddedYet { pending, at_least } => {
                let more = if *at_least { "+" } else { "" };
                write!(f, "{pending}{more}{PENDING_TAIL}")
            }
            SearchNote::SemanticUnavailable { reason } => {
                write!(f, "{SEMANTIC_UNAVAILABLE}{reason}")
            }
            SearchNote::NoEmbedder => f.write_str(NO_EMBEDDER),
            SearchNote::KeywordStopWordsOnly => f.write_str(KEYWORD_STOP_WORDS),
            SearchNote::KeywordNoWords => f.write_str(KEYWORD_NO_WORDS),
            SearchNote::NoWords => f.write_str(NO_WORDS),
            SearchNote::KeywordSkipped { reason } => write!(f, "{KEYWORD_SKIPPED}{reason}"),
        }
    }
}

/// Text that is not the rendering of any [`SearchNote`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a search note: {0:?}")]
pub struct UnknownNote(pub String);

impl FromStr for SearchNote {
    type Err = UnknownNote;

    /// The variant whose rendering is `s` (the inverse of `Display`).
    fn from_str(s: &str) -> Result<Self, UnknownNote> {
        let note = match s {
            MIN_SIMILARITY_IGNORED => Some(SearchNote::MinSimilarityIgnored),
            NO_EMBEDDER => Some(SearchNote::NoEmbedder),
            KEYWORD_STOP_WORDS => Some(SearchNote::KeywordStopWordsOnly),
            KEYWORD_NO_WORDS => Some(SearchNote::KeywordNoWords),
            NO_WORDS => Some(SearchNote::NoWords),
            _ => None,
        };
        if let Some(note) = note {
            return Ok(note);
        }
        if let Some(reason) = s.strip_prefix(KEYWORD_SKIPPED) {
            return Ok(SearchNote::KeywordSkipped {
                reason: reason.to_string(),
            });
        }
        if let Some(reason) = s.strip_prefix(SEMANTIC_UNAVAILABLE) {
            return Ok(SearchNote::SemanticUnavailable {
                reason: reason.to_string(),
            });
        }
        if let Some(n) = s
            .strip_prefix(TRUNCATED_HEAD)
            .and_then(|r| r.strip_suffix(TRUNCATED_TAIL))
            .and_then(|n| n.parse().ok())
        {
            return Ok(SearchNote::QueryTruncated { max_tokens: n });
        }
        if let Some(count) = s.strip_suffix(PENDING_TAIL) {
            let (count, at_least) = match count.strip_suffix('+') {
                Some(c) => (c, true),
                None => (count, false),
            };
            if let Ok(pending) = count.parse() {
                return Ok(SearchNote::NotEmbeddedYet { pending, at_least });
            }
        }
        Err(UnknownNote(s.to_string()))
    }
}

impl Serialize for SearchNote {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SearchNote {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_variant() -> Vec<SearchNote> {
        vec![
            SearchNote::MinSimilarityIgnored,
            SearchNote::QueryTruncated { max_tokens: 256 },
            SearchNote::NotEmbeddedYet {
                pending: 3,
                at_least: false,
            },
            SearchNote::NotEmbeddedYet {
                pending: 1000,
                at_least: true,
            },
            SearchNote::SemanticUnavailable {
                reason: "embedding failed: model gone".into(),
            },
            SearchNote::NoEmbedder,
            SearchNote::KeywordStopWordsOnly,
            SearchNote::KeywordNoWords,
            SearchNote::NoWords,
            SearchNote::KeywordSkipped {
                reason: "unbalanced quote".into(),
            },
        ]
    }

    #[test]
    fn notes_render_to_the_fixed_wire_text() {
        // The text surfaces have always sent: changing it changes the wire.
        let texts: Vec<String> = every_variant().iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            [
                "min_similarity applies to semantic rankings: ignored",
                "the query is longer than the model's limit of 256 tokens: only its beginning was embedded",
                "3 message(s) are not embedded yet: semantic ranking misses them until they are (keyword search finds them)",
                "1000+ message(s) are not embedded yet: semantic ranking misses them until they are (keyword search finds them)",
                "semantic ranking unavailable, keyword only: embedding failed: model gone",
                "no embedding model configured: hybrid search ran as keyword search",
                "keyword ranking skipped: the query has only stop words",
                "keyword ranking skipped: the query has no words",
                "the query has no words to search for: no keyword hits",
                "keyword ranking skipped: unbalanced quote",
            ]
        );
    }

    #[test]
    fn every_note_round_trips_through_its_text_and_json() {
        for note in every_variant() {
            assert_eq!(note.to_string().parse::<SearchNote>(), Ok(note.clone()));
            let json = serde_json::to_value(&note).unwrap();
            assert_eq!(json, serde_json::Value::String(note.to_string()));
            assert_eq!(serde_json::from_value::<SearchNote>(json).unwrap(), note);
        }
        let err = "something else".parse::<SearchNote>().unwrap_err();
        assert_eq!(err.to_string(), "not a search note: \"something else\"");
        assert!(serde_json::from_str::<SearchNote>("\"nope\"").is_err());
    }
}
