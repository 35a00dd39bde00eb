//! The record envelope: `[version: u8][postcard body]` (SPEC.md §"Record envelope").

use serde::{Serialize, de::DeserializeOwned};

/// The version byte written in front of every record this build writes.
pub const RECORD_VERSION: u8 = 1;

/// Why a byte string is not a valid record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The input is empty: not even a version byte.
    #[error("{what}: empty record")]
    Empty {
        /// Which record type was being decoded.
        what: &'static str,
    },
    /// The version byte names a layout this build cannot read.
    #[error(
        "{what}: record version {found} is not supported (this build reads version {supported})"
    )]
    UnsupportedVersion {
        /// Which record type was being decoded.
        what: &'static str,
        /// The version byte found.
        found: u8,
        /// The version this build reads.
        supported: u8,
    },
    /// The body does not decode as the record type.
    #[error("{what}: corrupt record body: {reason}")]
    Corrupt {
        /// Which record type was being decoded.
        what: &'static str,
        /// The decoder's explanation.
        reason: String,
    },
    /// The input ends before the structure it declares (a truncated file).
    #[error("{what}: truncated: needs {needed} bytes, has {len}")]
    Truncated {
        /// Which structure was being read.
        what: &'static str,
        /// Bytes the structure needs.
        needed: u64,
        /// Bytes available.
        len: u64,
    },
    /// A stored CRC32 does not match the bytes it covers.
    #[error("{what}: checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    Checksum {
        /// Which header or section the checksum covers.
        what: &'static str,
        /// The CRC32 stored in the file.
        stored: u32,
        /// The CRC32 of the bytes read.
        computed: u32,
    },
    /// A file's format version is outside the range this build reads.
    #[error(
        "{what}: format version {found} is not supported (this build reads versions {oldest} to {newest}); rebuild the file from the store"
    )]
    UnsupportedFileVersion {
        /// Which file kind was being opened.
        what: &'static str,
        /// The version stored in the file.
        found: u32,
        /// The oldest version this build reads.
        oldest: u32,
        /// The newest version this build reads (and the one it writes).
        newest: u32,
    },
    /// An encoder was handed parts that do not form a valid structure.
    #[error("{what}: cannot encode: {reason}")]
    InvalidInput {
        /// Which structure was being encoded.
        what: &'static str,
        /// What is wrong with the parts.
        reason: String,
    },
}

pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    encode_as(RECORD_VERSION, value)
}

/// Encodes `value` behind the version byte `version` (a record type whose
/// layout has more than one version writes its newest).
pub(crate) fn encode_as<T: Serialize>(version: u8, value: &T) -> Vec<u8> {
    let out = vec![version];
    // postcard only fails on writers that run out of space or on types it
    // cannot represent (maps with non-serializable keys); a Vec never runs out
    // and our record types contain neither, so an error here is a bug.
    match postcard::to_extend(value, out) {
        Ok(bytes) => bytes,
        Err(e) => unreachable!("record types always serialize: {e}"),
    }
}

pub(crate) fn decode<T: DeserializeOwned>(
    what: &'static str,
    bytes: &[u8],
) -> Result<T, FormatError> {
    let (&version, body) = bytes.split_first().ok_or(FormatError::Empty { what })?;
    if version != RECORD_VERSION {
        return Err(FormatError::UnsupportedVersion {
            what,
            found: version,
            supported: RECORD_VERSION,
        });
    }
    decode_body(what, body)
}

/// The version byte of an envelope and the body behind it.
pub(crate) fn split<'a>(
    what: &'static str,
    bytes: &'a [u8],
) -> Result<(u8, &'a [u8]), FormatError> {
    let (&version, body) = bytes.split_first().ok_or(FormatError::Empty { what })?;
    Ok((version, body))
}

/// Decodes a postcard body that must be consumed exactly.
pub(crate) fn decode_body<T: DeserializeOwned>(
    what: &'static str,
    body: &[u8],
) -> Result<T, FormatError> {
    let (value, rest) = postcard::take_from_bytes(body).map_err(|e| FormatError::Corrupt {
        what,
        reason: e.to_string(),
    })?;
    if !rest.is_empty() {
        return Err(FormatError::Corrupt {
            what,
            reason: format!("{} trailing bytes", rest.len()),
        });
    }
    Ok(value)
}
