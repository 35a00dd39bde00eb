//! A generation file of format version 1, written at test time byte by byte
//! from `format/GENERATION.md` (not through `GenerationEncoder`), so that a
//! change to the encoder or the reader that breaks files already on disk
//! fails here even when the two still agree with each other.

use memdb_format::{GenerationEncoder, GenerationParts, GenerationView, Metric};

/// CRC-32 (IEEE, reflected, polynomial 0xEDB88320), bit by bit: the
/// checksum GENERATION.md names, computed without the crate the encoder
/// uses.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

/// Four nodes of dimension 2 under L2 (no normalization), M 2, M0 4: a ring
/// on layer 0, nodes 1 and 3 also on level 1, entry point 3.
struct Graph {
    vectors: Vec<f32>,
    ids: Vec<u128>,
    levels: Vec<u8>,
    layer0: Vec<u32>,
    upper_offsets: Vec<u32>,
    upper: Vec<u32>,
}

const DIM: u32 = 2;
const M: u32 = 2;
const M0: u32 = 4;
const LSN: u64 = 41;
const GENERATION: u64 = 7;
const EF_CONSTRUCTION: u32 = 200;
const ENTRY: u32 = 3;

fn graph() -> Graph {
    let list = |ns: &[u32], slots: u32| {
        let mut v = vec![ns.len() as u32];
        v.extend_from_slice(ns);
        v.resize(1 + slots as usize, 0);
        v
    };
    let mut layer0 = Vec::new();
    for ns in [[1, 3], [2, 0], [3, 1], [0, 2]] {
        layer0.extend(list(&ns, M0));
    }
    let mut upper = Vec::new();
    upper.extend(list(&[3], M)); // node 1, level 1
    upper.extend(list(&[1], M)); // node 3, level 1
    Graph {
        vectors: vec![0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0],
        // Not in id order, so the id index is a real permutation.
        ids: vec![40, 10, 30, 20],
        levels: vec![0, 1, 0, 1],
        layer0,
        upper_offsets: vec![0, 0, 1, 1, 2],
        upper,
    }
}

fn pad_to_64(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(64) {
        out.push(0);
    }
}

fn words(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The file, as GENERATION.md lays it out.
fn by_hand(g: &Graph) -> Vec<u8> {
    let n = g.ids.len();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&i| g.ids[i as usize]);
    let sections: Vec<Vec<u8>> = vec![
        g.vectors.iter().flat_map(|f| f.to_le_bytes()).collect(),
        g.ids.iter().flat_map(|id| id.to_le_bytes()).collect(),
        g.levels.clone(),
        words(&g.layer0),
        words(&g.upper_offsets),
        words(&g.upper),
        words(&order),
    ];
    let mut body = vec![0u8; 256];
    let mut table = Vec::new();
    for s in &sections {
        pad_to_64(&mut body);
        table.push((body.len() as u64, s.len() as u64, crc32(s)));
        body.extend_from_slice(s);
    }
    let file_len = body.len() as u64;
    let mut h = Vec::with_capacity(256);
    h.extend_from_slice(b"MEMDBHNS");
    h.extend_from_slice(&1u32.to_le_bytes()); // version
    h.extend_from_slice(&256u32.to_le_bytes()); // header_len
    h.extend_from_slice(&file_len.to_le_bytes());
    h.extend_from_slice(&DIM.to_le_bytes());
    h.push(2); // metric: L2
    h.push(0); // element type: f32
    h.extend_from_slice(&[0, 0]);
    h.extend_from_slice(&(n as u32).to_le_bytes());
    h.extend_from_slice(&1u32.to_le_bytes()); // max_level
    h.extend_from_slice(&ENTRY.to_le_bytes());
    h.extend_from_slice(&M.to_le_bytes());
    h.extend_from_slice(&M0.to_le_bytes());
    h.extend_from_slice(&EF_CONSTRUCTION.to_le_bytes());
    h.extend_from_slice(&LSN.to_le_bytes());
    h.extend_from_slice(&GENERATION.to_le_bytes());
    for (offset, len, crc) in table {
        h.extend_from_slice(&offset.to_le_bytes());
        h.extend_from_slice(&len.to_le_bytes());
        h.extend_from_slice(&crc.to_le_bytes());
        h.extend_from_slice(&[0; 4]);
    }
    h.extend_from_slice(&[0; 12]);
    assert_eq!(h.len(), 252);
    let crc = crc32(&h);
    h.extend_from_slice(&crc.to_le_bytes());
    body[..256].copy_from_slice(&h);
    body
}

#[test]
fn a_version_1_generation_written_from_the_spec_opens_and_reads_back() {
    let g = graph();
    let file = by_hand(&g);
    let view = GenerationView::parse(&file).expect("parse a version-1 file");
    view.verify_sections().expect("every section checks out");
    assert_eq!(view.version(), 1);
    assert_eq!(
        (view.dimension(), view.m(), view.m0()),
        (DIM, M, M0),
        "header fields"
    );
    assert_eq!(view.metric(), Metric::L2);
    assert_eq!((view.lsn(), view.generation()), (LSN, GENERATION));
    assert_eq!(view.ef_construction(), EF_CONSTRUCTION);
    assert_eq!((view.node_count(), view.max_level()), (4, 1));
    assert_eq!(view.entry_point(), Some(ENTRY));
    assert_eq!(view.file_len(), file.len() as u64);
    for (node, id) in g.ids.iter().enumerate() {
        assert_eq!(view.record_id(node as u32), Some(*id));
        assert_eq!(view.node_of(*id), Some(node as u32));
        assert_eq!(view.level(node as u32), Some(g.levels[node]));
    }
    assert_eq!(view.node_of(25), None);
    assert_eq!(view.vectors_f32().expect("aligned f32"), &g.vectors[..]);
    let neighbors = |node: u32, level: u32| -> Vec<u32> { view.neighbors(node, level).collect() };
    assert_eq!(neighbors(0, 0), [1, 3]);
    assert_eq!(neighbors(2, 0), [3, 1]);
    assert_eq!(neighbors(1, 1), [3]);
    assert_eq!(neighbors(3, 1), [1]);
    assert!(neighbors(0, 1).is_empty(), "node 0 is not on level 1");
}

#[test]
fn todays_encoder_writes_the_spec_layout_byte_for_byte() {
    let g = graph();
    let parts = GenerationParts {
        metric: Metric::L2,
        dimension: DIM,
        m: M,
        m0: M0,
        ef_construction: EF_CONSTRUCTION,
        lsn: LSN,
        generation: GENERATION,
        entry_point: Some(ENTRY),
        vectors: &g.vectors,
        ids: &g.ids,
        levels: &g.levels,
        layer0: &g.layer0,
        upper_offsets: &g.upper_offsets,
        upper: &g.upper,
    };
    let encoder = GenerationEncoder::new(&parts).expect("valid parts");
    let mut written = Vec::new();
    encoder.write_to(&mut written).expect("write to memory");
    assert_eq!(written, by_hand(&g));
}

#[test]
fn a_flipped_byte_in_the_hand_written_file_is_caught() {
    let mut file = by_hand(&graph());
    // Inside the vectors section (starts at 256): parse is O(1) and does
    // not read it, verify_sections does.
    file[260] ^= 0x40;
    let view = GenerationView::parse(&file).expect("header still valid");
    assert!(view.verify_sections().is_err());
    // Inside the header: parse refuses.
    file[40] ^= 1;
    assert!(GenerationView::parse(&file).is_err());
}
