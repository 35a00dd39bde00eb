//! Fuzzes the query-cache value decoder (`memdb_format::QueryCacheEntry`,
//! table `query_cache`): decoding any bytes at any dimension never panics,
//! `decode_seq` agrees with a full decode, and what decodes re-encodes to
//! the same bytes.
//!
//! The first two input bytes pick the dimension the reader expects; the
//! rest is the stored value. The value is also read at the dimension its
//! length implies, which reaches the vector on every input.

#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb_format::{QUERY_CACHE_HEADER_LEN, QueryCacheEntry};

fuzz_target!(|data: &[u8]| {
    let Some((dim, value)) = data.split_first_chunk::<2>() else {
        return;
    };
    check(value, u32::from(u16::from_le_bytes(*dim)));
    let implied = value.len().saturating_sub(QUERY_CACHE_HEADER_LEN + 1) / 4;
    check(value, u32::try_from(implied).unwrap_or(u32::MAX));
});

fn check(value: &[u8], dim: u32) {
    let seq = QueryCacheEntry::decode_seq(value);
    if let Ok(e) = QueryCacheEntry::decode(value, dim) {
        assert_eq!(seq, Ok(e.seq));
        assert_eq!(e.vector.len(), dim as usize);
        assert_eq!(e.encode(), value);
    }
}
