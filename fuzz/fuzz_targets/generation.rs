//! Fuzzes the generation-file parser: `GenerationView::parse`, then
//! `verify_sections` and every accessor a search uses must never panic.
//!
//! The first input byte picks a mode, so the fuzzer reaches past the header
//! checksum instead of stopping at it:
//! - 0: the rest of the input is the file, as is;
//! - 1: the same, with the header CRC recomputed (reaches the field and
//!   section-table checks);
//! - 2: the input describes a small graph; it is encoded, then the remaining
//!   input bytes are XORed in at chosen offsets and the header CRC is fixed
//!   (reaches section bodies: counts, neighbor ids, offsets, the id index).
//!   An unmutated valid encoding must parse and verify, and read back equal.

#![no_main]

use libfuzzer_sys::fuzz_target;
use memdb_format::{
    GENERATION_HEADER_LEN, GenerationEncoder, GenerationParts, GenerationView, Metric,
};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => walk(rest),
        1 => {
            let mut bytes = rest.to_vec();
            fix_header_crc(&mut bytes);
            walk(&bytes);
        }
        _ => structured(rest),
    }
});

fn fix_header_crc(bytes: &mut [u8]) {
    if bytes.len() >= GENERATION_HEADER_LEN {
        let crc = crc32(&bytes[..GENERATION_HEADER_LEN - 4]);
        bytes[GENERATION_HEADER_LEN - 4..GENERATION_HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
    }
}

/// CRC-32 (IEEE), bitwise: the fuzz crate depends on memdb-format only.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Everything a search does with a view, bounded.
fn walk(bytes: &[u8]) {
    let Ok(view) = GenerationView::parse(bytes) else {
        return;
    };
    let _ = view.verify_sections();
    let n = view.node_count();
    let _ = (view.vectors_f32(), view.vectors_le().len(), view.file_len());
    for node in 0..n.min(512).saturating_add(2) {
        let _ = view
            .vector(node)
            .map(|v| v.iter().map(|x| x.get()).sum::<f32>());
        let _ = view.level(node);
        if let Some(id) = view.record_id(node) {
            let _ = view.node_of(id);
        }
        for level in 0..=view.max_level().saturating_add(1).min(70) {
            for nb in view.neighbors(node, level) {
                assert!(nb < n, "neighbor {nb} out of range");
            }
        }
    }
    // A greedy walk from the entry point, as a search starts.
    if let Some(mut cur) = view.entry_point() {
        for _ in 0..64 {
            match view.neighbors(cur, 0).next() {
                Some(nb) => cur = nb,
                None => break,
            }
        }
    }
    let _ = view.node_of(0);
    let _ = view.node_of(u128::MAX);
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
}

fn structured(input: &[u8]) {
    let mut r = Reader(input);
    let n = usize::from(r.u8() % 24);
    let dim = 1 + u32::from(r.u8() % 8);
    let m = 1 + u32::from(r.u8() % 4);
    let m0 = 1 + u32::from(r.u8() % 8);
    let metric = match r.u8() % 3 {
        0 => Metric::Cosine,
        1 => Metric::Dot,
        _ => Metric::L2,
    };
    let levels: Vec<u8> = (0..n).map(|_| r.u8() % 3).collect();
    let vectors: Vec<f32> = (0..n * dim as usize)
        .map(|_| f32::from(r.u8()) - 128.0)
        .collect();
    let ids: Vec<u128> = (0..n)
        .map(|_| u128::from(r.u8()) << 100 | u128::from(r.u8()))
        .collect();
    let list = |r: &mut Reader, stride: u32| -> Vec<u32> {
        let count = u32::from(r.u8()) % (stride + 1);
        let mut l = vec![count];
        l.extend((0..stride).map(|_| u32::from(r.u8()) % (n as u32 + 1)));
        l
    };
    let layer0: Vec<u32> = (0..n).flat_map(|_| list(&mut r, m0)).collect();
    let mut upper_offsets = vec![0u32];
    let mut upper = Vec::new();
    for &l in &levels {
        for _ in 0..l {
            upper.extend(list(&mut r, m));
        }
        upper_offsets.push(upper_offsets.last().copied().unwrap_or(0) + u32::from(l));
    }
    let max = levels.iter().copied().max().unwrap_or(0);
    let entry_point = levels.iter().position(|&l| l == max).map(|p| p as u32);
    let parts = GenerationParts {
        metric,
        dimension: dim,
        m,
        m0,
        ef_construction: 10,
        lsn: u64::from(r.u8()),
        generation: 1,
        entry_point,
        vectors: &vectors,
        ids: &ids,
        levels: &levels,
        layer0: &layer0,
        upper_offsets: &upper_offsets,
        upper: &upper,
    };
    let Ok(encoder) = GenerationEncoder::new(&parts) else {
        return;
    };
    let mut bytes = encoder.to_vec();
    {
        let view = GenerationView::parse(&bytes).expect("a fresh encoding parses");
        view.verify_sections().expect("a fresh encoding verifies");
        assert_eq!(view.node_count() as usize, n);
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(view.record_id(i as u32), Some(*id));
            assert_eq!(view.node_of(*id), Some(i as u32));
        }
    }
    // Mutations: (offset lo, offset hi, xor) triples from the rest of the input.
    let mut mutated = false;
    while r.0.len() >= 3 {
        let off = usize::from(u16::from_le_bytes([r.u8(), r.u8()])) % bytes.len();
        bytes[off] ^= r.u8();
        mutated = true;
    }
    if mutated {
        fix_header_crc(&mut bytes);
    }
    walk(&bytes);
}
