//! Fuzzes the stored-vector decoder (`memdb_format::decode_vector`, table
//! `vectors`): decoding any bytes at any dimension never panics, and what
//! decodes re-encodes to the same bytes (the layout has one encoding per
//! vector, NaN payloads included).
//!
//! The first two input bytes pick the dimension the reader expects (so the
//! fuzzer tries lengths that fit and lengths that do not); the rest is the
//! stored value. The value is also read at the dimension its length implies,
//! which reaches the component loop on every input.

#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb_format::{decode_vector, encode_vector};

fuzz_target!(|data: &[u8]| {
    let Some((dim, value)) = data.split_first_chunk::<2>() else {
        return;
    };
    check(value, u32::from(u16::from_le_bytes(*dim)));
    let implied = value.len().saturating_sub(1) / 4;
    check(value, u32::try_from(implied).unwrap_or(u32::MAX));
});

fn check(value: &[u8], dim: u32) {
    if let Ok(v) = decode_vector(value, dim) {
        assert_eq!(v.len(), dim as usize);
        assert_eq!(encode_vector(&v), value);
    }
}
