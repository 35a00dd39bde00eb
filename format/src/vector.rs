//! The stored vector (table `vectors`, SPEC.md §4.1): one element-type
//! byte, then every component little-endian.
//!
//! ```text
//! +--------------+---------------------------+
//! | element type | components                |
//! | 1 byte (0)   | dimension × f32 LE        |
//! +--------------+---------------------------+
//! ```
//!
//! The element-type byte is the layout's version: 0 is f32, the only type
//! this build writes or reads (the same values as the generation file's
//! [`ElementType`]; 1 = f16 and 2 = i8 are reserved). The dimension is not
//! stored: it is the vector space's, so the reader passes it and a value of
//! another length is an error. There is no checksum (redb checksums pages).

use crate::envelope::FormatError;
use crate::generation::ElementType;

/// The element-type byte of an f32 vector.
pub const VECTOR_ELEMENT_F32: u8 = 0;

const WHAT: &str = "vector";

/// The stored form of `v`: [`VECTOR_ELEMENT_F32`], then each component as
/// f32 little-endian.
pub fn encode_vector(v: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + v.len() * 4);
    out.push(ElementType::F32.to_byte());
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

/// The length in bytes of a stored vector of `dimension` components.
pub fn encoded_vector_len(dimension: u32) -> u64 {
    1 + u64::from(dimension) * 4
}

/// Decodes a stored vector that must have `dimension` components; never
/// panics. Empty input is [`FormatError::Empty`], an unknown element type or
/// too many bytes [`FormatError::Corrupt`], too few [`FormatError::Truncated`].
pub fn decode_vector(bytes: &[u8], dimension: u32) -> Result<Vec<f32>, FormatError> {
    let (&element, body) = bytes
        .split_first()
        .ok_or(FormatError::Empty { what: WHAT })?;
    if element != VECTOR_ELEMENT_F32 {
        return Err(FormatError::Corrupt {
            what: WHAT,
            reason: format!(
                "element type {element} is not supported (this build reads {VECTOR_ELEMENT_F32} = f32)"
            ),
        });
    }
    let needed = encoded_vector_len(dimension);
    let len = bytes.len() as u64;
    if len < needed {
        return Err(FormatError::Truncated {
            what: WHAT,
            needed,
            len,
        });
    }
    if len > needed {
        return Err(FormatError::Corrupt {
            what: WHAT,
            reason: format!(
                "{len} bytes, expected {needed} for an f32 vector of dimension {dimension}"
            ),
        });
    }
    Ok(body
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Hex of `bytes`, lowercase, no separators.
    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn todays_encoding_is_pinned() {
        // Stores written before this crate owned the layout hold exactly
        // these bytes: a change here breaks every existing store.
        let v = [1.0f32, -2.5, 0.0];
        let bytes = encode_vector(&v);
        assert_eq!(hex(&bytes), "000000803f000020c000000000");
        assert_eq!(bytes.len() as u64, encoded_vector_len(3));
        assert_eq!(decode_vector(&bytes, 3).unwrap(), v);
    }

    #[test]
    fn an_empty_vector_is_the_element_byte_alone() {
        assert_eq!(encode_vector(&[]), vec![0]);
        assert_eq!(decode_vector(&[0], 0).unwrap(), Vec::<f32>::new());
    }

    #[test]
    fn truncated_long_or_unknown_values_are_clear_errors() {
        let bytes = encode_vector(&[1.0, -2.5]);
        assert_eq!(
            decode_vector(&bytes, 3),
            Err(FormatError::Truncated {
                what: "vector",
                needed: 13,
                len: 9
            })
        );
        assert_eq!(
            decode_vector(&bytes[..7], 2),
            Err(FormatError::Truncated {
                what: "vector",
                needed: 9,
                len: 7
            })
        );
        let long = decode_vector(&bytes, 1).unwrap_err();
        assert!(matches!(long, FormatError::Corrupt { .. }), "{long}");
        assert!(long.to_string().contains("dimension 1"), "{long}");
        assert_eq!(
            decode_vector(&[], 0),
            Err(FormatError::Empty { what: "vector" })
        );
        let mut f16 = bytes.clone();
        f16[0] = 1;
        let e = decode_vector(&f16, 2).unwrap_err();
        assert!(e.to_string().contains("element type 1"), "{e}");
    }

    #[test]
    fn a_huge_dimension_is_an_error_not_an_overflow() {
        assert!(matches!(
            decode_vector(&[0, 1, 2, 3, 4], u32::MAX),
            Err(FormatError::Truncated { .. })
        ));
    }

    proptest! {
        #[test]
        fn round_trips_bit_for_bit(bits in proptest::collection::vec(any::<u32>(), 0..64)) {
            // Any bit pattern, NaN payloads included, survives.
            let v: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
            let bytes = encode_vector(&v);
            let back = decode_vector(&bytes, v.len() as u32).unwrap();
            prop_assert_eq!(back.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), bits);
        }

        #[test]
        fn decoding_arbitrary_bytes_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
            dim in 0u32..20,
        ) {
            if let Ok(v) = decode_vector(&bytes, dim) {
                prop_assert_eq!(encode_vector(&v), bytes);
            }
        }
    }
}
