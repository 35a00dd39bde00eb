//! The stored hierarchical summary (table `summaries`, SPEC.md §3.2 and §19.2).
//!
//! One record per generated summary of one conversation at one level
//! (daily, weekly, monthly). Field order is the encoding order (postcard):
//! never reorder, only append behind a new [`crate::RECORD_VERSION`].

use serde::{Deserialize, Serialize};

use crate::envelope::{self, FormatError};

/// A summary row (table `summaries`, key = (conversation `u128`, level
/// `u8`, generated_at µs `i64`, summary id `u128`)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryRecord {
    /// 0 = daily, 1 = weekly, 2 = monthly.
    pub level: u8,
    /// The summary text.
    pub text: String,
    /// Generation time, µs since the epoch (UTC).
    pub generated_at: i64,
    /// Start of the period the sources cover (inclusive), µs.
    pub range_start: i64,
    /// End of the period the sources cover (inclusive), µs.
    pub range_end: i64,
    /// Number of sources: messages for a daily, summaries above.
    pub source_count: u32,
    /// Whitespace-separated words of `text`.
    pub word_count: u32,
    /// Estimated tokens of `text` (characters / 4, rounded up).
    pub token_count: u32,
    /// Which summarizer produced it (`extractive`, or the chat model's name).
    pub model: String,
}

impl SummaryRecord {
    /// Encodes into the versioned envelope.
    pub fn encode(&self) -> Vec<u8> {
        envelope::encode(self)
    }
    /// Decodes from the versioned envelope; never panics.
    pub fn decode(bytes: &[u8]) -> Result<Self, FormatError> {
        envelope::decode("summary record", bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trips_and_refuses_other_versions() {
        let r = SummaryRecord {
            level: 1,
            text: "Weekly: decided to use redb.".into(),
            generated_at: 10,
            range_start: 1,
            range_end: 9,
            source_count: 3,
            word_count: 4,
            token_count: 7,
            model: "extractive".into(),
        };
        let mut bytes = r.encode();
        assert_eq!(bytes[0], crate::RECORD_VERSION);
        assert_eq!(SummaryRecord::decode(&bytes).unwrap(), r);
        bytes[0] = 42;
        assert!(matches!(
            SummaryRecord::decode(&bytes),
            Err(FormatError::UnsupportedVersion { found: 42, .. })
        ));
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = SummaryRecord::decode(&bytes);
        }
    }
}
