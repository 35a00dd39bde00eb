//! The generic record row (table `records`, SPEC.md §3 and §13): one layout
//! for every record kind that is not a Sekha conversation or message
//! (Memorg's sessions, conversations, topics, exchanges and memory items
//! today; KuraDB's chunks next).
//!
//! A kind is a small integer (`kind`); what the generic machinery needs
//! (namespace, parent, times, importance, the text to index and embed, tags)
//! is a field of its own, and whatever only the kind understands is one JSON
//! object (`body_json`). Field order is the encoding order (postcard): never
//! reorder, only append behind a new [`crate::RECORD_VERSION`].

use serde::{Deserialize, Serialize};

use crate::envelope::{self, FormatError};

/// A generic record row (key = the record's UUID as `u128`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemRecord {
    /// The record kind's code (SPEC.md §13 lists them).
    pub kind: u16,
    /// The namespace id (table `namespaces`).
    pub namespace: u32,
    /// The parent record, when the kind has one (UUID bytes, big-endian
    /// UUID order as `u128::to_le_bytes`).
    pub parent: Option<[u8; 16]>,
    /// Creation time, µs since the epoch (UTC).
    pub created_at: i64,
    /// Last change time, µs since the epoch (UTC).
    pub updated_at: i64,
    /// Importance in `0.0..=1.0` (what the kind makes of it).
    pub importance: f32,
    /// The text the full-text index and the embedder see (may be empty).
    pub text: String,
    /// Tags, sorted and distinct.
    pub tags: Vec<String>,
    /// The kind's own fields, a JSON object serialized as text.
    pub body_json: String,
    /// Free metadata, a JSON object serialized as text.
    pub metadata_json: String,
}

impl ItemRecord {
    /// Encodes into the versioned envelope.
    pub fn encode(&self) -> Vec<u8> {
        envelope::encode(self)
    }

    /// Decodes from the versioned envelope; never panics.
    pub fn decode(bytes: &[u8]) -> Result<Self, FormatError> {
        envelope::decode("item record", bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn record() -> ItemRecord {
        ItemRecord {
            kind: 4,
            namespace: 1,
            parent: Some([9; 16]),
            created_at: 2,
            updated_at: 3,
            importance: 0.5,
            text: "hi".into(),
            tags: vec!["a".into()],
            body_json: "{}".into(),
            metadata_json: "{}".into(),
        }
    }

    #[test]
    fn pins_todays_bytes() {
        let bytes = record().encode();
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "010401010909090909090909090909090909090904060000003f026869010161027b7d027b7d"
        );
        assert_eq!(ItemRecord::decode(&bytes).unwrap(), record());
    }

    #[test]
    fn refuses_other_versions_and_trailing_bytes() {
        let mut bytes = record().encode();
        bytes.push(0);
        assert!(matches!(
            ItemRecord::decode(&bytes),
            Err(FormatError::Corrupt { .. })
        ));
        bytes.pop();
        bytes[0] = 9;
        assert!(matches!(
            ItemRecord::decode(&bytes),
            Err(FormatError::UnsupportedVersion { .. })
        ));
    }

    proptest! {
        #[test]
        fn decoding_any_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = ItemRecord::decode(&bytes);
        }
    }
}
