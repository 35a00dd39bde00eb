//! The query-embedding cache value (table `query_cache`, SPEC.md §4.2): the
//! entry's eviction sequence number, the truncation flag, then the vector in
//! its stored form ([`crate::encode_vector`]).
//!
//! ```text
//! +-----------+-----------+--------------------------------------+
//! | seq       | truncated | vector                               |
//! | u64 LE    | u8 (0/1)  | [element type u8][dimension × f32 LE] |
//! +-----------+-----------+--------------------------------------+
//! ```
//!
//! `seq` is the entry's key in `query_cache_order` (the FIFO eviction
//! order), so replacing an entry can find and drop its old position. The
//! layout has no version byte of its own: the cache is disposable (an entry
//! that does not decode is embedded again and overwritten), so a future
//! layout would clear the table rather than read the old one. The vector's
//! element-type byte still says what the components are.

use crate::envelope::FormatError;
use crate::vector::{decode_vector, encode_vector};

/// Bytes in front of the vector: `seq` (8) and the truncation flag (1).
pub const QUERY_CACHE_HEADER_LEN: usize = 9;

const WHAT: &str = "query cache entry";

/// One cached query embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryCacheEntry {
    /// Position in the eviction order (`query_cache_order`'s key).
    pub seq: u64,
    /// Whether the query was longer than the model's limit and only its
    /// beginning was embedded.
    pub truncated: bool,
    /// The query's embedding.
    pub vector: Vec<f32>,
}

impl QueryCacheEntry {
    /// The stored bytes.
    pub fn encode(&self) -> Vec<u8> {
        let vector = encode_vector(&self.vector);
        let mut out = Vec::with_capacity(QUERY_CACHE_HEADER_LEN + vector.len());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.push(u8::from(self.truncated));
        out.extend_from_slice(&vector);
        out
    }

    /// Decodes an entry whose vector must have `dimension` components;
    /// never panics. A flag other than 0 or 1 is [`FormatError::Corrupt`];
    /// a short header [`FormatError::Truncated`]; the vector's own errors
    /// as [`crate::decode_vector`] gives them.
    pub fn decode(bytes: &[u8], dimension: u32) -> Result<Self, FormatError> {
        let seq = Self::decode_seq(bytes)?;
        let truncated = match bytes.get(8) {
            Some(0) => false,
            Some(1) => true,
            Some(&flag) => {
                return Err(FormatError::Corrupt {
                    what: WHAT,
                    reason: format!("truncation flag {flag} (expected 0 or 1)"),
                });
            }
            None => {
                return Err(FormatError::Truncated {
                    what: WHAT,
                    needed: QUERY_CACHE_HEADER_LEN as u64,
                    len: bytes.len() as u64,
                });
            }
        };
        let vector = decode_vector(&bytes[QUERY_CACHE_HEADER_LEN..], dimension)?;
        Ok(QueryCacheEntry {
            seq,
            truncated,
            vector,
        })
    }

    /// Only the `seq` of a stored entry (what eviction bookkeeping needs),
    /// without decoding the vector.
    pub fn decode_seq(bytes: &[u8]) -> Result<u64, FormatError> {
        match bytes.first_chunk::<8>() {
            Some(seq) => Ok(u64::from_le_bytes(*seq)),
            None => Err(FormatError::Truncated {
                what: WHAT,
                needed: QUERY_CACHE_HEADER_LEN as u64,
                len: bytes.len() as u64,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn sample() -> QueryCacheEntry {
        QueryCacheEntry {
            seq: 0x0102,
            truncated: true,
            vector: vec![0.5, 2.0],
        }
    }

    #[test]
    fn todays_encoding_is_pinned() {
        // Caches written before this crate owned the layout hold exactly
        // these bytes: seq 258 LE, flag 1, element byte 0, 0.5, 2.0.
        let bytes = sample().encode();
        assert_eq!(hex(&bytes), "020100000000000001000000003f00000040");
        assert_eq!(QueryCacheEntry::decode(&bytes, 2).unwrap(), sample());
        assert_eq!(QueryCacheEntry::decode_seq(&bytes), Ok(0x0102));
    }

    #[test]
    fn truncated_or_corrupt_entries_are_clear_errors() {
        let bytes = sample().encode();
        for cut in 0..QUERY_CACHE_HEADER_LEN {
            assert_eq!(
                QueryCacheEntry::decode(&bytes[..cut], 2),
                Err(FormatError::Truncated {
                    what: "query cache entry",
                    needed: 9,
                    len: cut as u64
                }),
                "cut at {cut}"
            );
        }
        assert_eq!(
            QueryCacheEntry::decode(&bytes[..9], 0),
            Err(FormatError::Empty { what: "vector" })
        );
        assert!(matches!(
            QueryCacheEntry::decode(&bytes[..15], 2),
            Err(FormatError::Truncated { what: "vector", .. })
        ));
        // Another dimension: the vector does not fit.
        assert!(QueryCacheEntry::decode(&bytes, 3).is_err());
        assert!(QueryCacheEntry::decode(&bytes, 1).is_err());
        let mut flag = bytes.clone();
        flag[8] = 2;
        let e = QueryCacheEntry::decode(&flag, 2).unwrap_err();
        assert!(e.to_string().contains("truncation flag 2"), "{e}");
        assert!(QueryCacheEntry::decode_seq(&bytes[..7]).is_err());
    }

    proptest! {
        #[test]
        fn round_trips(seq in any::<u64>(), truncated in any::<bool>(), v in proptest::collection::vec(-1e6f32..1e6, 0..32)) {
            let e = QueryCacheEntry { seq, truncated, vector: v };
            let bytes = e.encode();
            prop_assert_eq!(QueryCacheEntry::decode(&bytes, e.vector.len() as u32).unwrap(), e);
        }

        #[test]
        fn decoding_arbitrary_bytes_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
            dim in 0u32..16,
        ) {
            if let Ok(e) = QueryCacheEntry::decode(&bytes, dim) {
                prop_assert_eq!(e.encode(), bytes);
            }
        }
    }
}
