//! The HNSW **generation file** (SPEC.md §"Generation file"; the byte-by-byte
//! description is `format/GENERATION.md`).
//!
//! A generation is one immutable file: a 256-byte header followed by seven
//! 64-byte-aligned sections (vectors, id map, levels, layer-0 adjacency,
//! upper-layer offsets, upper-layer adjacency, id index). Every integer and
//! float is little-endian. The engine memory-maps the file and searches it in
//! place, so the layout is designed for that:
//!
//! - [`GenerationView::parse`] is O(1): it checks the magic, the version, the
//!   header CRC and every section's bounds, length and alignment, and reads no
//!   section body. After it succeeds every accessor is bounds-safe: a corrupt
//!   body can make a search wrong but never make it panic, and
//!   [`GenerationView::verify_sections`] (O(n): section CRCs plus structural
//!   invariants) is what detects it, in the background.
//! - Adjacency lists have a fixed stride (`1 + M0` words on layer 0, `1 + M` on
//!   upper layers: a count, then neighbors), so a node's list is found by
//!   multiplication, with no per-node index on layer 0.
//!
//! [`GenerationEncoder`] writes the layout from plain slices, either into a
//! `Vec<u8>` or through any [`std::io::Write`].

use std::io::{self, Write};

use zerocopy::little_endian::{F32, U32, U64, U128};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::envelope::FormatError;

/// The first eight bytes of every generation file.
pub const GENERATION_MAGIC: [u8; 8] = *b"MEMDBHNS";
/// The generation format version this build writes.
pub const GENERATION_VERSION: u32 = 1;
/// The oldest generation format version this build reads.
pub const GENERATION_OLDEST_SUPPORTED_VERSION: u32 = 1;
/// Size of the header, and offset of the first possible section.
pub const GENERATION_HEADER_LEN: usize = 256;
/// Every section starts at a multiple of this many bytes.
pub const SECTION_ALIGN: usize = 64;
/// `entry_point` of an empty generation.
pub const NO_ENTRY_POINT: u32 = u32::MAX;
/// Largest dimension a generation may declare.
pub const MAX_DIMENSION: u32 = 65_536;
/// Largest `M` or `M0` (neighbors per list) a generation may declare.
pub const MAX_NEIGHBORS: u32 = 4096;
/// Levels are `0..MAX_LEVELS`.
pub const MAX_LEVELS: u32 = 64;

const WHAT: &str = "generation file";

/// Vector similarity a generation was built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Metric {
    /// Cosine similarity; stored vectors are normalized to unit length.
    Cosine,
    /// Inner product of the vectors as given.
    Dot,
    /// Euclidean distance.
    L2,
}

impl Metric {
    /// The byte stored in the header.
    pub fn to_byte(self) -> u8 {
        match self {
            Metric::Cosine => 0,
            Metric::Dot => 1,
            Metric::L2 => 2,
        }
    }

    /// The metric for a header byte, if known.
    pub fn from_byte(b: u8) -> Option<Self> {
        match b {
            0 => Some(Metric::Cosine),
            1 => Some(Metric::Dot),
            2 => Some(Metric::L2),
            _ => None,
        }
    }
}

/// Element type of the stored vectors. Only `F32` is written by this version;
/// the byte values 1 (`f16`) and 2 (`i8`) are reserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ElementType {
    /// IEEE 754 binary32, little-endian.
    F32,
}

impl ElementType {
    /// The byte stored in the header.
    pub fn to_byte(self) -> u8 {
        match self {
            ElementType::F32 => 0,
        }
    }

    /// Bytes per component.
    pub fn size(self) -> u64 {
        match self {
            ElementType::F32 => 4,
        }
    }
}

/// The sections of a generation file, in file order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Section {
    /// `node_count × dimension` components, node-major.
    Vectors,
    /// `node_count` record ids (`u128`).
    Ids,
    /// `node_count` levels (`u8`).
    Levels,
    /// `node_count` lists of `1 + M0` `u32` words: count, then neighbors.
    Layer0,
    /// `node_count + 1` `u32` list indexes into [`Section::Upper`].
    UpperOffsets,
    /// Upper-layer lists of `1 + M` `u32` words: count, then neighbors.
    Upper,
    /// `node_count` node ids (`u32`) ordered by record id.
    IdIndex,
}

impl Section {
    /// Every section, in file order (= index in the header's section table).
    pub const ALL: [Section; SECTION_COUNT] = [
        Section::Vectors,
        Section::Ids,
        Section::Levels,
        Section::Layer0,
        Section::UpperOffsets,
        Section::Upper,
        Section::IdIndex,
    ];

    /// The section's name in errors and in GENERATION.md.
    pub fn name(self) -> &'static str {
        match self {
            Section::Vectors => "vectors section",
            Section::Ids => "id map section",
            Section::Levels => "levels section",
            Section::Layer0 => "layer 0 section",
            Section::UpperOffsets => "upper offsets section",
            Section::Upper => "upper layers section",
            Section::IdIndex => "id index section",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

const SECTION_COUNT: usize = 7;

/// One entry of the header's section table (24 bytes).
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct SectionEntry {
    offset: U64,
    len: U64,
    crc32: U32,
    reserved: U32,
}

/// The 256-byte header. Field order and sizes are the file layout.
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct Header {
    magic: [u8; 8],
    version: U32,
    header_len: U32,
    file_len: U64,
    dimension: U32,
    metric: u8,
    element_type: u8,
    reserved0: [u8; 2],
    node_count: U32,
    max_level: U32,
    entry_point: U32,
    m: U32,
    m0: U32,
    ef_construction: U32,
    lsn: U64,
    generation: U64,
    sections: [SectionEntry; SECTION_COUNT],
    reserved1: [u8; 12],
    header_crc: U32,
}

/// Bytes of the header covered by `header_crc` (all but the CRC itself).
const HEADER_CRC_COVERS: usize = GENERATION_HEADER_LEN - 4;

/// Where a section lies and its stored checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionInfo {
    /// Byte offset from the start of the file (a multiple of 64).
    pub offset: u64,
    /// Length in bytes (padding excluded).
    pub len: u64,
    /// CRC32 (IEEE) of the section's `len` bytes.
    pub crc32: u32,
}

/// A validated, zero-copy view of a generation file.
///
/// ```
/// use memdb_format::{GenerationEncoder, GenerationParts, GenerationView, Metric};
/// // Two nodes of dimension 2, linked to each other on layer 0 (M0 = 2).
/// let parts = GenerationParts {
///     metric: Metric::L2, dimension: 2, m: 1, m0: 2, ef_construction: 10,
///     lsn: 7, generation: 1, entry_point: Some(0),
///     vectors: &[0.0, 1.0, 1.0, 0.0], ids: &[10, 20], levels: &[0, 0],
///     layer0: &[1, 1, 0, 1, 0, 0], upper_offsets: &[0, 0, 0], upper: &[],
/// };
/// let bytes = GenerationEncoder::new(&parts).unwrap().to_vec();
/// let view = GenerationView::parse(&bytes).unwrap();
/// view.verify_sections().unwrap();
/// assert_eq!(view.neighbors(0, 0).collect::<Vec<_>>(), vec![1]);
/// assert_eq!(view.node_of(20), Some(1));
/// assert!(GenerationView::parse(&bytes[..bytes.len() - 1]).is_err());
/// ```
#[derive(Clone, Copy)]
pub struct GenerationView<'a> {
    header: &'a Header,
    bytes: &'a [u8],
    vectors: &'a [F32],
    ids: &'a [U128],
    levels: &'a [u8],
    layer0: &'a [U32],
    upper_offsets: &'a [U32],
    upper: &'a [U32],
    id_index: &'a [U32],
}

impl std::fmt::Debug for GenerationView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GenerationView")
            .field("version", &self.version())
            .field("metric", &self.metric())
            .field("dimension", &self.dimension())
            .field("node_count", &self.node_count())
            .field("max_level", &self.max_level())
            .field("lsn", &self.lsn())
            .field("generation", &self.generation())
            .field("file_len", &self.file_len())
            .finish_non_exhaustive()
    }
}

fn corrupt(reason: impl Into<String>) -> FormatError {
    FormatError::Corrupt {
        what: WHAT,
        reason: reason.into(),
    }
}

fn to_usize(v: u64, what: &str) -> Result<usize, FormatError> {
    usize::try_from(v).map_err(|_| corrupt(format!("{what} {v} does not fit in memory")))
}

/// Expected byte length of each section, from the header's counts.
fn expected_lens(
    n: u64,
    dim: u64,
    m: u64,
    m0: u64,
    upper_lists: u64,
) -> Option<[u64; SECTION_COUNT]> {
    Some([
        n.checked_mul(dim)?.checked_mul(ElementType::F32.size())?,
        n.checked_mul(16)?,
        n,
        n.checked_mul(m0.checked_add(1)?)?.checked_mul(4)?,
        n.checked_add(1)?.checked_mul(4)?,
        upper_lists.checked_mul(m.checked_add(1)?)?.checked_mul(4)?,
        n.checked_mul(4)?,
    ])
}

impl<'a> GenerationView<'a> {
    /// Validates the header and section table in O(1) and returns a view.
    ///
    /// Checks, in order: length ≥ header, magic, version (newer or older
    /// than this build reads: [`FormatError::UnsupportedFileVersion`]),
    /// header CRC, file length, header fields, then per section its
    /// alignment, order, bounds and length. Section bodies are not read,
    /// except the last word of the upper offsets (it sizes the upper section).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, FormatError> {
        let len = bytes.len() as u64;
        let (header, _) = Header::ref_from_prefix(bytes).map_err(|_| FormatError::Truncated {
            what: "generation header",
            needed: GENERATION_HEADER_LEN as u64,
            len,
        })?;
        if header.magic != GENERATION_MAGIC {
            return Err(corrupt("bad magic: not a memdb generation file"));
        }
        let version = header.version.get();
        if !(GENERATION_OLDEST_SUPPORTED_VERSION..=GENERATION_VERSION).contains(&version) {
            return Err(FormatError::UnsupportedFileVersion {
                what: WHAT,
                found: version,
                oldest: GENERATION_OLDEST_SUPPORTED_VERSION,
                newest: GENERATION_VERSION,
            });
        }
        let stored = header.header_crc.get();
        let computed = crc32fast::hash(bytes.get(..HEADER_CRC_COVERS).unwrap_or_default());
        if stored != computed {
            return Err(FormatError::Checksum {
                what: "generation header",
                stored,
                computed,
            });
        }
        if header.header_len.get() as usize != GENERATION_HEADER_LEN {
            return Err(corrupt(format!(
                "header length {} (version 1 has {GENERATION_HEADER_LEN})",
                header.header_len.get()
            )));
        }
        let file_len = header.file_len.get();
        if len < file_len {
            return Err(FormatError::Truncated {
                what: WHAT,
                needed: file_len,
                len,
            });
        }
        if len > file_len {
            return Err(corrupt(format!(
                "{} bytes after the declared end of file",
                len - file_len
            )));
        }
        Metric::from_byte(header.metric)
            .ok_or_else(|| corrupt(format!("unknown metric {}", header.metric)))?;
        if header.element_type != ElementType::F32.to_byte() {
            return Err(corrupt(format!(
                "element type {} is not supported by this build (only 0 = f32)",
                header.element_type
            )));
        }
        let n = header.node_count.get();
        let dim = header.dimension.get();
        let m = header.m.get();
        let m0 = header.m0.get();
        let max_level = header.max_level.get();
        let ep = header.entry_point.get();
        if dim == 0 || dim > MAX_DIMENSION {
            return Err(corrupt(format!(
                "dimension {dim} outside 1..={MAX_DIMENSION}"
            )));
        }
        if m == 0 || m > MAX_NEIGHBORS || m0 == 0 || m0 > MAX_NEIGHBORS {
            return Err(corrupt(format!(
                "M {m} / M0 {m0} outside 1..={MAX_NEIGHBORS}"
            )));
        }
        if n == u32::MAX {
            return Err(corrupt("node count u32::MAX is reserved"));
        }
        if max_level >= MAX_LEVELS {
            return Err(corrupt(format!("max level {max_level} ≥ {MAX_LEVELS}")));
        }
        if n == 0 {
            if ep != NO_ENTRY_POINT || max_level != 0 {
                return Err(corrupt("empty generation with an entry point or levels"));
            }
        } else if ep >= n {
            return Err(corrupt(format!("entry point {ep} ≥ node count {n}")));
        }

        // Section table: aligned, in order, inside the file.
        let mut ranges = [(0usize, 0usize); SECTION_COUNT];
        let mut prev_end = GENERATION_HEADER_LEN as u64;
        for (i, s) in Section::ALL.iter().enumerate() {
            let e = &header.sections[i];
            let (off, slen) = (e.offset.get(), e.len.get());
            if off % SECTION_ALIGN as u64 != 0 {
                return Err(corrupt(format!(
                    "{} offset {off} is not {SECTION_ALIGN}-byte aligned",
                    s.name()
                )));
            }
            if off < prev_end {
                return Err(corrupt(format!(
                    "{} offset {off} overlaps the previous structure (ends at {prev_end})",
                    s.name()
                )));
            }
            let end = off
                .checked_add(slen)
                .filter(|&end| end <= file_len)
                .ok_or_else(|| corrupt(format!("{} extends past the end of file", s.name())))?;
            prev_end = end;
            ranges[i] = (to_usize(off, "offset")?, to_usize(end, "offset")?);
        }
        let section = |s: Section| -> &'a [u8] {
            let (a, b) = ranges[s.index()];
            bytes.get(a..b).unwrap_or_default()
        };

        // The upper section's size comes from the last upper offset.
        let upper_offsets = <[U32]>::ref_from_bytes(section(Section::UpperOffsets))
            .map_err(|_| corrupt("upper offsets section length is not a multiple of 4"))?;
        let first = upper_offsets.first().map_or(0, |v| v.get());
        let upper_lists = upper_offsets.last().map_or(0, |v| v.get());
        if first != 0 {
            return Err(corrupt(format!("first upper offset is {first}, not 0")));
        }
        let expected = expected_lens(
            u64::from(n),
            u64::from(dim),
            u64::from(m),
            u64::from(m0),
            u64::from(upper_lists),
        )
        .ok_or_else(|| corrupt("section sizes overflow"))?;
        for (i, s) in Section::ALL.iter().enumerate() {
            let got = header.sections[i].len.get();
            if got != expected[i] {
                return Err(corrupt(format!(
                    "{} is {got} bytes, expected {}",
                    s.name(),
                    expected[i]
                )));
            }
        }
        let size_err = |s: Section| corrupt(format!("{} has a partial element", s.name()));
        Ok(GenerationView {
            header,
            bytes,
            vectors: <[F32]>::ref_from_bytes(section(Section::Vectors))
                .map_err(|_| size_err(Section::Vectors))?,
            ids: <[U128]>::ref_from_bytes(section(Section::Ids))
                .map_err(|_| size_err(Section::Ids))?,
            levels: section(Section::Levels),
            layer0: <[U32]>::ref_from_bytes(section(Section::Layer0))
                .map_err(|_| size_err(Section::Layer0))?,
            upper_offsets,
            upper: <[U32]>::ref_from_bytes(section(Section::Upper))
                .map_err(|_| size_err(Section::Upper))?,
            id_index: <[U32]>::ref_from_bytes(section(Section::IdIndex))
                .map_err(|_| size_err(Section::IdIndex))?,
        })
    }

    /// Checks every section's CRC32, then the structural invariants the
    /// accessors do not rely on for safety but search relies on for
    /// correctness: levels ≤ max level, the entry point on the top level,
    /// upper offsets consistent with levels, neighbor counts ≤ M/M0 and ids
    /// < node count, the id index sorted by strictly increasing record id.
    /// O(file size); run it in the background, at compaction and by
    /// `memdb verify`.
    pub fn verify_sections(&self) -> Result<(), FormatError> {
        for (i, s) in Section::ALL.iter().enumerate() {
            let e = &self.header.sections[i];
            let body = usize::try_from(e.offset.get())
                .ok()
                .zip(usize::try_from(e.offset.get().saturating_add(e.len.get())).ok())
                .and_then(|(a, b)| self.bytes.get(a..b))
                .unwrap_or_default();
            let computed = crc32fast::hash(body);
            let stored = e.crc32.get();
            if stored != computed {
                return Err(FormatError::Checksum {
                    what: s.name(),
                    stored,
                    computed,
                });
            }
        }
        self.verify_structure()
    }

    fn verify_structure(&self) -> Result<(), FormatError> {
        let n = self.node_count();
        let max_level = self.max_level();
        for (node, &level) in self.levels.iter().enumerate() {
            if u32::from(level) > max_level {
                return Err(corrupt(format!(
                    "node {node} has level {level} > max level {max_level}"
                )));
            }
        }
        if let Some(ep) = self.entry_point()
            && self.level(ep).map(u32::from) != Some(max_level)
        {
            return Err(corrupt(format!("entry point {ep} is not on the top level")));
        }
        for node in 0..n as usize {
            let a = self.upper_offsets.get(node).map(|v| v.get());
            let b = self.upper_offsets.get(node + 1).map(|v| v.get());
            let level = self.levels.get(node).copied().map(u32::from);
            match (a, b, level) {
                (Some(a), Some(b), Some(l)) if b >= a && b - a == l => {}
                _ => {
                    return Err(corrupt(format!(
                        "upper offsets of node {node} disagree with its level"
                    )));
                }
            }
        }
        let check_lists = |words: &[U32], stride: usize, max: u32, what: &str| {
            for (i, list) in words.chunks_exact(stride).enumerate() {
                let count = list.first().map_or(0, |c| c.get());
                if count > max {
                    return Err(corrupt(format!(
                        "{what} list {i} has {count} > {max} entries"
                    )));
                }
                for nb in list.iter().skip(1).take(count as usize) {
                    if nb.get() >= n {
                        return Err(corrupt(format!(
                            "{what} list {i} names node {} ≥ node count {n}",
                            nb.get()
                        )));
                    }
                }
            }
            Ok(())
        };
        check_lists(self.layer0, self.m0() as usize + 1, self.m0(), "layer 0")?;
        check_lists(self.upper, self.m() as usize + 1, self.m(), "upper layer")?;
        let mut prev: Option<u128> = None;
        for (k, node) in self.id_index.iter().enumerate() {
            let id = self
                .record_id(node.get())
                .ok_or_else(|| corrupt(format!("id index entry {k} names a missing node")))?;
            if prev.is_some_and(|p| p >= id) {
                return Err(corrupt(format!(
                    "id index entry {k} is out of order or repeats a record id"
                )));
            }
            prev = Some(id);
        }
        Ok(())
    }

    /// Format version of the file.
    pub fn version(&self) -> u32 {
        self.header.version.get()
    }
    /// Vector dimension.
    pub fn dimension(&self) -> u32 {
        self.header.dimension.get()
    }
    /// Similarity metric (validated by `parse`).
    pub fn metric(&self) -> Metric {
        Metric::from_byte(self.header.metric).unwrap_or(Metric::L2)
    }
    /// Element type of the vectors section.
    pub fn element_type(&self) -> ElementType {
        ElementType::F32
    }
    /// Number of nodes.
    pub fn node_count(&self) -> u32 {
        self.header.node_count.get()
    }
    /// Highest level of any node (0 for an empty generation).
    pub fn max_level(&self) -> u32 {
        self.header.max_level.get()
    }
    /// Where searches start; `None` when the generation is empty.
    pub fn entry_point(&self) -> Option<u32> {
        let ep = self.header.entry_point.get();
        (ep != NO_ENTRY_POINT).then_some(ep)
    }
    /// Neighbors per list on upper layers.
    pub fn m(&self) -> u32 {
        self.header.m.get()
    }
    /// Neighbors per list on layer 0.
    pub fn m0(&self) -> u32 {
        self.header.m0.get()
    }
    /// `ef_construction` the graph was built with (informational).
    pub fn ef_construction(&self) -> u32 {
        self.header.ef_construction.get()
    }
    /// The oplog LSN this generation covers: every change up to and including
    /// it is in the file.
    pub fn lsn(&self) -> u64 {
        self.header.lsn.get()
    }
    /// The generation number.
    pub fn generation(&self) -> u64 {
        self.header.generation.get()
    }
    /// Total file length in bytes.
    pub fn file_len(&self) -> u64 {
        self.header.file_len.get()
    }
    /// A section's position and stored CRC.
    pub fn section(&self, s: Section) -> SectionInfo {
        let e = &self.header.sections[s.index()];
        SectionInfo {
            offset: e.offset.get(),
            len: e.len.get(),
            crc32: e.crc32.get(),
        }
    }

    /// All vector components, node-major, as little-endian values.
    pub fn vectors_le(&self) -> &'a [F32] {
        self.vectors
    }

    /// All vector components as native `f32`, when that is a plain cast: on a
    /// little-endian target and when the section is 4-byte aligned in memory
    /// (always true for a memory-mapped file, whose sections are 64-byte
    /// aligned from a page-aligned base). `None` otherwise.
    pub fn vectors_f32(&self) -> Option<&'a [f32]> {
        #[cfg(target_endian = "little")]
        {
            <[f32]>::ref_from_bytes(self.vectors.as_bytes()).ok()
        }
        #[cfg(not(target_endian = "little"))]
        {
            None
        }
    }

    /// The vector of `node`, `None` when out of range.
    pub fn vector(&self, node: u32) -> Option<&'a [F32]> {
        let d = self.dimension() as usize;
        let start = (node as usize).checked_mul(d)?;
        self.vectors.get(start..start.checked_add(d)?)
    }

    /// The record id of `node`.
    pub fn record_id(&self, node: u32) -> Option<u128> {
        self.ids.get(node as usize).map(|v| v.get())
    }

    /// The node holding `record_id`: a binary search over the id index,
    /// O(log n). Returns `None` when absent (or when the index is corrupt).
    pub fn node_of(&self, record_id: u128) -> Option<u32> {
        let pos = self
            .id_index
            .binary_search_by(|node| {
                self.record_id(node.get())
                    .unwrap_or(u128::MAX)
                    .cmp(&record_id)
            })
            .ok()?;
        let node = self.id_index.get(pos)?.get();
        (self.record_id(node) == Some(record_id)).then_some(node)
    }

    /// The nodes holding `sorted` (record ids in ascending order), in that
    /// order, absent ids skipped: one pass over the id index that gallops
    /// from each found position to the next id (O(m log(n/m)) for m ids,
    /// and each probe near the last one), instead of m binary searches from
    /// the top.
    pub fn nodes_of_sorted(&self, sorted: &[u128]) -> Vec<u32> {
        let key = |pos: usize| {
            self.id_index
                .get(pos)
                .and_then(|n| self.record_id(n.get()))
                .unwrap_or(u128::MAX)
        };
        let n = self.id_index.len();
        let mut out = Vec::with_capacity(sorted.len());
        let mut lo = 0usize;
        for &id in sorted {
            // Gallop: every position before `lo` holds a smaller id; the
            // first probe at or past `id` bounds the binary search.
            let mut step = 1usize;
            let mut hi = lo;
            while hi < n && key(hi) < id {
                lo = hi + 1;
                hi = lo.saturating_add(step);
                step = step.saturating_mul(2);
            }
            let mut hi = hi.min(n);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if key(mid) < id {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            let pos = lo;
            if key(pos) == id
                && let Some(node) = self.id_index.get(pos)
            {
                out.push(node.get());
            }
        }
        out
    }

    /// The level of `node` (it appears on layers `0..=level`).
    pub fn level(&self, node: u32) -> Option<u8> {
        self.levels.get(node as usize).copied()
    }

    /// The neighbors of `node` on `level`. Never panics: an out-of-range node
    /// or level gives an empty iterator, a count above the stride is clamped,
    /// and neighbor ids ≥ node count are skipped.
    pub fn neighbors(&self, node: u32, level: u32) -> Neighbors<'a> {
        Neighbors::new(self.adjacency(node, level), self.node_count())
    }

    /// The raw list of `node` on `level`: the count word, then the slots,
    /// unvalidated (empty when the node or level is out of range). For
    /// prefetching; read neighbors through [`GenerationView::neighbors`].
    pub fn adjacency(&self, node: u32, level: u32) -> &'a [U32] {
        let list = if level == 0 {
            let stride = self.m0() as usize + 1;
            (node as usize)
                .checked_mul(stride)
                .and_then(|base| self.layer0.get(base..base.checked_add(stride)?))
        } else {
            self.upper_list(node, level)
        };
        list.unwrap_or_default()
    }

    fn upper_list(&self, node: u32, level: u32) -> Option<&'a [U32]> {
        let a = self.upper_offsets.get(node as usize)?.get();
        let b = self.upper_offsets.get(node as usize + 1)?.get();
        if level > b.checked_sub(a)? {
            return None;
        }
        let stride = self.m() as usize + 1;
        let base = (a as usize + level as usize - 1).checked_mul(stride)?;
        self.upper.get(base..base.checked_add(stride)?)
    }
}

/// Iterator over one adjacency list of a [`GenerationView`].
#[derive(Debug, Clone)]
pub struct Neighbors<'a> {
    inner: std::slice::Iter<'a, U32>,
    node_count: u32,
}

impl<'a> Neighbors<'a> {
    fn new(list: &'a [U32], node_count: u32) -> Self {
        let (count, rest) = match list.split_first() {
            Some((c, rest)) => (c.get() as usize, rest),
            None => (0, list),
        };
        Neighbors {
            inner: rest.get(..count.min(rest.len())).unwrap_or_default().iter(),
            node_count,
        }
    }
}

impl Iterator for Neighbors<'_> {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        loop {
            let v = self.inner.next()?.get();
            if v < self.node_count {
                return Some(v);
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.inner.len()))
    }
}

/// The parts of a generation, as plain slices, for [`GenerationEncoder`].
#[derive(Debug, Clone, Copy)]
pub struct GenerationParts<'a> {
    /// Similarity metric.
    pub metric: Metric,
    /// Vector dimension.
    pub dimension: u32,
    /// Neighbors per upper-layer list.
    pub m: u32,
    /// Neighbors per layer-0 list.
    pub m0: u32,
    /// Informational.
    pub ef_construction: u32,
    /// The oplog LSN the generation covers.
    pub lsn: u64,
    /// The generation number.
    pub generation: u64,
    /// The entry point (a node on the top level); `None` iff empty.
    pub entry_point: Option<u32>,
    /// `n × dimension` components, node-major (normalized for cosine).
    pub vectors: &'a [f32],
    /// `n` record ids, distinct.
    pub ids: &'a [u128],
    /// `n` levels.
    pub levels: &'a [u8],
    /// `n × (1 + m0)` words: per node a count then `m0` neighbor slots.
    pub layer0: &'a [u32],
    /// `n + 1` list indexes into `upper`: node `i`'s list for level `l ≥ 1`
    /// is list `upper_offsets[i] + l - 1`.
    pub upper_offsets: &'a [u32],
    /// Lists of `1 + m` words: a count then `m` neighbor slots.
    pub upper: &'a [u32],
}

/// Writes a generation file. `new` validates the parts and computes the
/// header (section CRCs included); writing cannot then fail except on I/O.
#[derive(Debug)]
pub struct GenerationEncoder<'a> {
    parts: GenerationParts<'a>,
    header: Header,
    id_index: Vec<u32>,
}

fn invalid(reason: impl Into<String>) -> FormatError {
    FormatError::InvalidInput {
        what: WHAT,
        reason: reason.into(),
    }
}

fn align_up(v: u64) -> u64 {
    v.div_ceil(SECTION_ALIGN as u64) * SECTION_ALIGN as u64
}

/// Elements per conversion chunk when streaming a section as LE bytes.
const CHUNK: usize = 4096;

/// Calls `f` with the little-endian bytes of `items`, chunk by chunk.
fn for_le_chunks<T: Copy, L: IntoBytes + Immutable, E>(
    items: &[T],
    conv: impl Fn(T) -> L,
    mut f: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), E> {
    let mut buf: Vec<L> = Vec::with_capacity(CHUNK.min(items.len()));
    for chunk in items.chunks(CHUNK) {
        buf.clear();
        buf.extend(chunk.iter().map(|&x| conv(x)));
        f(buf.as_bytes())?;
    }
    Ok(())
}

impl<'a> GenerationEncoder<'a> {
    /// Validates `parts` (lengths, levels, offsets, neighbor counts and ids,
    /// distinct record ids) and prepares the header. O(n log n) (the id
    /// index is a sort).
    pub fn new(parts: &GenerationParts<'a>) -> Result<Self, FormatError> {
        let p = *parts;
        let n = p.ids.len();
        let n32 = u32::try_from(n)
            .ok()
            .filter(|&n| n != u32::MAX)
            .ok_or_else(|| invalid(format!("{n} nodes is too many")))?;
        if p.dimension == 0 || p.dimension > MAX_DIMENSION {
            return Err(invalid(format!("dimension {}", p.dimension)));
        }
        if p.m == 0 || p.m > MAX_NEIGHBORS || p.m0 == 0 || p.m0 > MAX_NEIGHBORS {
            return Err(invalid(format!("M {} / M0 {}", p.m, p.m0)));
        }
        let (dim, m, m0) = (p.dimension as usize, p.m as usize, p.m0 as usize);
        let lens_ok = n.checked_mul(dim) == Some(p.vectors.len())
            && p.levels.len() == n
            && n.checked_mul(m0 + 1) == Some(p.layer0.len())
            && p.upper_offsets.len() == n + 1;
        if !lens_ok {
            return Err(invalid(format!(
                "slice lengths disagree with {n} nodes of dimension {dim}"
            )));
        }
        let max_level = p.levels.iter().copied().max().unwrap_or(0);
        if u32::from(max_level) >= MAX_LEVELS {
            return Err(invalid(format!("level {max_level} ≥ {MAX_LEVELS}")));
        }
        match p.entry_point {
            None if n == 0 => {}
            Some(ep) if (ep as usize) < n && p.levels.get(ep as usize) == Some(&max_level) => {}
            _ => {
                return Err(invalid(
                    "the entry point must be a top-level node (and absent iff empty)",
                ));
            }
        }
        let mut expect = 0u32;
        for (i, (&level, w)) in p.levels.iter().zip(p.upper_offsets.windows(2)).enumerate() {
            let (a, b) = (w[0], w[1]);
            if a != expect || b.checked_sub(a) != Some(u32::from(level)) {
                return Err(invalid(format!(
                    "upper offsets of node {i} disagree with its level"
                )));
            }
            expect = b;
        }
        if p.upper_offsets.first().copied().unwrap_or(0) != 0
            || (expect as usize).checked_mul(m + 1) != Some(p.upper.len())
        {
            return Err(invalid("upper section length disagrees with upper offsets"));
        }
        for (words, stride, what) in [(p.layer0, m0 + 1, "layer 0"), (p.upper, m + 1, "upper")] {
            for (i, list) in words.chunks_exact(stride).enumerate() {
                let count = list.first().copied().unwrap_or(0) as usize;
                if count >= stride {
                    return Err(invalid(format!("{what} list {i} has {count} entries")));
                }
                if list.iter().skip(1).take(count).any(|&nb| nb >= n32) {
                    return Err(invalid(format!("{what} list {i} names a missing node")));
                }
            }
        }
        let mut id_index: Vec<u32> = (0..n32).collect();
        id_index.sort_unstable_by_key(|&i| p.ids.get(i as usize).copied().unwrap_or(0));
        for w in id_index.windows(2) {
            if p.ids.get(w[0] as usize) == p.ids.get(w[1] as usize) {
                return Err(invalid("record ids are not distinct"));
            }
        }

        let lens = expected_lens(
            n as u64,
            u64::from(p.dimension),
            u64::from(p.m),
            u64::from(p.m0),
            u64::from(expect),
        )
        .ok_or_else(|| invalid("section sizes overflow"))?;
        let mut enc = GenerationEncoder {
            parts: p,
            header: Header::new_zeroed(),
            id_index,
        };
        let mut crcs = [0u32; SECTION_COUNT];
        for (i, s) in Section::ALL.iter().enumerate() {
            let mut h = crc32fast::Hasher::new();
            enc.stream_section(*s, |b| -> Result<(), ()> {
                h.update(b);
                Ok(())
            })
            .ok();
            crcs[i] = h.finalize();
        }
        let h = &mut enc.header;
        h.magic = GENERATION_MAGIC;
        h.version = GENERATION_VERSION.into();
        h.header_len = (GENERATION_HEADER_LEN as u32).into();
        h.dimension = p.dimension.into();
        h.metric = p.metric.to_byte();
        h.element_type = ElementType::F32.to_byte();
        h.node_count = n32.into();
        h.max_level = u32::from(max_level).into();
        h.entry_point = p.entry_point.unwrap_or(NO_ENTRY_POINT).into();
        h.m = p.m.into();
        h.m0 = p.m0.into();
        h.ef_construction = p.ef_construction.into();
        h.lsn = p.lsn.into();
        h.generation = p.generation.into();
        let mut off = GENERATION_HEADER_LEN as u64;
        for i in 0..SECTION_COUNT {
            off = align_up(off);
            h.sections[i] = SectionEntry {
                offset: off.into(),
                len: lens[i].into(),
                crc32: crcs[i].into(),
                reserved: 0.into(),
            };
            off += lens[i];
        }
        h.file_len = off.into();
        h.header_crc =
            crc32fast::hash(h.as_bytes().get(..HEADER_CRC_COVERS).unwrap_or_default()).into();
        Ok(enc)
    }

    /// Length of the file `write_to` produces.
    pub fn file_len(&self) -> u64 {
        self.header.file_len.get()
    }

    fn stream_section<E>(
        &self,
        s: Section,
        f: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let p = &self.parts;
        match s {
            Section::Vectors => for_le_chunks(p.vectors, F32::new, f),
            Section::Ids => for_le_chunks(p.ids, U128::new, f),
            Section::Levels => for_le_chunks(p.levels, |b| b, f),
            Section::Layer0 => for_le_chunks(p.layer0, U32::new, f),
            Section::UpperOffsets => for_le_chunks(p.upper_offsets, U32::new, f),
            Section::Upper => for_le_chunks(p.upper, U32::new, f),
            Section::IdIndex => for_le_chunks(&self.id_index, U32::new, f),
        }
    }

    /// Writes the whole file through `w` (sequentially, header first).
    pub fn write_to<W: Write>(&self, mut w: W) -> io::Result<()> {
        w.write_all(self.header.as_bytes())?;
        let mut pos = GENERATION_HEADER_LEN as u64;
        let zeros = [0u8; SECTION_ALIGN];
        for s in Section::ALL {
            let e = &self.header.sections[s.index()];
            let pad = e.offset.get().saturating_sub(pos) as usize;
            w.write_all(zeros.get(..pad).unwrap_or_default())?;
            self.stream_section(s, |b| w.write_all(b))?;
            pos = e.offset.get() + e.len.get();
        }
        Ok(())
    }

    /// The whole file as bytes.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(usize::try_from(self.file_len()).unwrap_or(0));
        // Writing into a Vec cannot fail.
        let _ = self.write_to(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn header_layout_matches_generation_md() {
        assert_eq!(size_of::<Header>(), GENERATION_HEADER_LEN);
        assert_eq!(size_of::<SectionEntry>(), 24);
        assert_eq!(offset_of!(Header, magic), 0);
        assert_eq!(offset_of!(Header, version), 8);
        assert_eq!(offset_of!(Header, header_len), 12);
        assert_eq!(offset_of!(Header, file_len), 16);
        assert_eq!(offset_of!(Header, dimension), 24);
        assert_eq!(offset_of!(Header, metric), 28);
        assert_eq!(offset_of!(Header, element_type), 29);
        assert_eq!(offset_of!(Header, node_count), 32);
        assert_eq!(offset_of!(Header, max_level), 36);
        assert_eq!(offset_of!(Header, entry_point), 40);
        assert_eq!(offset_of!(Header, m), 44);
        assert_eq!(offset_of!(Header, m0), 48);
        assert_eq!(offset_of!(Header, ef_construction), 52);
        assert_eq!(offset_of!(Header, lsn), 56);
        assert_eq!(offset_of!(Header, generation), 64);
        assert_eq!(offset_of!(Header, sections), 72);
        assert_eq!(offset_of!(Header, reserved1), 240);
        assert_eq!(offset_of!(Header, header_crc), 252);
        assert_eq!(offset_of!(SectionEntry, offset), 0);
        assert_eq!(offset_of!(SectionEntry, len), 8);
        assert_eq!(offset_of!(SectionEntry, crc32), 16);
    }

    /// A deterministic little graph: `n` nodes in a ring on layer 0, every
    /// third node on level 1 and node 0 on level 2.
    struct Sample {
        vectors: Vec<f32>,
        ids: Vec<u128>,
        levels: Vec<u8>,
        layer0: Vec<u32>,
        upper_offsets: Vec<u32>,
        upper: Vec<u32>,
    }

    const M: u32 = 2;
    const M0: u32 = 4;
    const DIM: u32 = 3;

    fn sample(n: u32) -> Sample {
        let mut s = Sample {
            vectors: (0..n * DIM).map(|i| i as f32 * 0.5 - 1.0).collect(),
            // Not in node order, so the id index is a real permutation.
            ids: (0..n)
                .map(|i| u128::from((i * 7919) % 1000) << 64 | u128::from(i))
                .collect(),
            levels: (0..n)
                .map(|i| match i {
                    0 => 2,
                    i if i % 3 == 0 => 1,
                    _ => 0,
                })
                .collect(),
            layer0: Vec::new(),
            upper_offsets: vec![0],
            upper: Vec::new(),
        };
        for i in 0..n {
            let nbs = [(i + 1) % n, (i + n - 1) % n];
            let count = if n > 1 { 2 } else { 0 };
            s.layer0.push(count);
            s.layer0.extend(nbs);
            s.layer0.extend([0, 0]);
            for _ in 0..s.levels[i as usize] {
                s.upper.extend([1, 0, 0]);
            }
            let last = *s.upper_offsets.last().unwrap();
            s.upper_offsets.push(last + u32::from(s.levels[i as usize]));
        }
        s
    }

    fn parts(s: &Sample) -> GenerationParts<'_> {
        GenerationParts {
            metric: Metric::Cosine,
            dimension: DIM,
            m: M,
            m0: M0,
            ef_construction: 100,
            lsn: 42,
            generation: 3,
            entry_point: if s.ids.is_empty() { None } else { Some(0) },
            vectors: &s.vectors,
            ids: &s.ids,
            levels: &s.levels,
            layer0: &s.layer0,
            upper_offsets: &s.upper_offsets,
            upper: &s.upper,
        }
    }

    fn encode(s: &Sample) -> Vec<u8> {
        GenerationEncoder::new(&parts(s)).unwrap().to_vec()
    }

    #[test]
    fn sorted_lookups_find_what_binary_searches_find() {
        let s = sample(500);
        let bytes = encode(&s);
        let v = GenerationView::parse(&bytes).unwrap();
        // Present ids (every third), absent ones between and beyond them.
        let mut ids: Vec<u128> = s.ids.iter().step_by(3).copied().collect();
        ids.extend([1 << 127, 5 << 64, u128::MAX, s.ids[7] + (1 << 100)]);
        ids.sort_unstable();
        let expect: Vec<u32> = ids.iter().filter_map(|&id| v.node_of(id)).collect();
        assert_eq!(expect.len(), 167);
        assert_eq!(v.nodes_of_sorted(&ids), expect);
        // Every id, and none.
        let mut all = s.ids.clone();
        all.sort_unstable();
        assert_eq!(v.nodes_of_sorted(&all).len(), 500);
        assert!(v.nodes_of_sorted(&[]).is_empty());
    }

    #[test]
    fn round_trip() {
        let s = sample(10);
        let bytes = encode(&s);
        let v = GenerationView::parse(&bytes).unwrap();
        v.verify_sections().unwrap();
        assert_eq!(v.file_len(), bytes.len() as u64);
        assert_eq!(
            (v.dimension(), v.m(), v.m0(), v.node_count()),
            (DIM, M, M0, 10)
        );
        assert_eq!((v.lsn(), v.generation(), v.ef_construction()), (42, 3, 100));
        assert_eq!(v.metric(), Metric::Cosine);
        assert_eq!(v.max_level(), 2);
        assert_eq!(v.entry_point(), Some(0));
        for i in 0..10u32 {
            let got: Vec<f32> = v.vector(i).unwrap().iter().map(|x| x.get()).collect();
            assert_eq!(got, s.vectors[(i * DIM) as usize..((i + 1) * DIM) as usize]);
            assert_eq!(v.record_id(i), Some(s.ids[i as usize]));
            assert_eq!(v.node_of(s.ids[i as usize]), Some(i));
            assert_eq!(v.level(i), Some(s.levels[i as usize]));
            assert_eq!(
                v.neighbors(i, 0).collect::<Vec<_>>(),
                vec![(i + 1) % 10, (i + 9) % 10]
            );
            for l in 1..=2 {
                let expect = if l <= u32::from(s.levels[i as usize]) {
                    vec![0]
                } else {
                    vec![]
                };
                assert_eq!(v.neighbors(i, l).collect::<Vec<_>>(), expect);
            }
        }
        assert_eq!(v.node_of(12345), None);
        assert_eq!(v.vectors_f32().map(<[f32]>::len).unwrap_or(30), 30);
        for sec in Section::ALL {
            let info = v.section(sec);
            assert_eq!(info.offset % SECTION_ALIGN as u64, 0, "{sec:?}");
        }
        // Streaming through `Write` gives the same bytes.
        let mut streamed = Vec::new();
        GenerationEncoder::new(&parts(&s))
            .unwrap()
            .write_to(&mut streamed)
            .unwrap();
        assert_eq!(streamed, bytes);
    }

    #[test]
    fn section_offsets_follow_the_counts() {
        let s = sample(10);
        let v_bytes = encode(&s);
        let v = GenerationView::parse(&v_bytes).unwrap();
        let expect = [
            (256, 10 * 3 * 4),
            (384, 10 * 16),
            (576, 10),
            (640, 10 * 5 * 4),
            (896, 11 * 4),
            (960, 5 * 3 * 4),
            (1024, 10 * 4),
        ];
        for (sec, (off, len)) in Section::ALL.iter().zip(expect) {
            let info = v.section(*sec);
            assert_eq!((info.offset, info.len), (off, len), "{sec:?}");
        }
        assert_eq!(v.file_len(), 1064);
    }

    #[test]
    fn empty_generation() {
        let s = sample(0);
        let bytes = encode(&s);
        let v = GenerationView::parse(&bytes).unwrap();
        v.verify_sections().unwrap();
        assert_eq!(v.node_count(), 0);
        assert_eq!(v.entry_point(), None);
        assert_eq!(v.neighbors(0, 0).count(), 0);
        assert_eq!(v.node_of(1), None);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = encode(&sample(10));
        for len in 0..bytes.len() {
            assert!(
                GenerationView::parse(&bytes[..len]).is_err(),
                "prefix {len}"
            );
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(GenerationView::parse(&long).is_err());
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        let bytes = encode(&sample(10));
        let v = GenerationView::parse(&bytes).unwrap();
        let covered: Vec<(u64, u64)> = Section::ALL
            .iter()
            .map(|s| {
                (
                    v.section(*s).offset,
                    v.section(*s).offset + v.section(*s).len,
                )
            })
            .collect();
        for i in 0..bytes.len() {
            let in_header = i < GENERATION_HEADER_LEN;
            let in_section = covered.iter().any(|&(a, b)| (a..b).contains(&(i as u64)));
            if !in_header && !in_section {
                continue; // alignment padding is not covered
            }
            let mut bad = bytes.clone();
            bad[i] ^= 0x5A;
            let detected = match GenerationView::parse(&bad) {
                Err(_) => true,
                Ok(v) => v.verify_sections().is_err(),
            };
            assert!(detected, "flip at {i} undetected");
            if in_section && let Ok(v) = GenerationView::parse(&bad) {
                // Header intact: the section CRC catches it. (Parse itself
                // reads the first and last upper offsets, so flips there
                // fail earlier.)
                let err = v.verify_sections();
                assert!(
                    matches!(err, Err(FormatError::Checksum { .. })),
                    "{i}: {err:?}"
                );
            }
        }
    }

    #[test]
    fn newer_version_is_refused_with_both_versions() {
        let mut bytes = encode(&sample(3));
        bytes[8..12].copy_from_slice(&(GENERATION_VERSION + 1).to_le_bytes());
        let err = GenerationView::parse(&bytes).unwrap_err();
        assert_eq!(
            err,
            FormatError::UnsupportedFileVersion {
                what: "generation file",
                found: 2,
                oldest: 1,
                newest: 1
            }
        );
        let msg = err.to_string();
        assert!(msg.contains("version 2") && msg.contains("1 to 1"), "{msg}");
    }

    /// Rewrites the header CRC, so a test reaches the checks behind it.
    fn fix_crc(bytes: &mut [u8]) {
        let crc = crc32fast::hash(&bytes[..HEADER_CRC_COVERS]);
        bytes[HEADER_CRC_COVERS..GENERATION_HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
    }

    #[test]
    fn bad_header_fields_are_rejected_even_with_a_valid_crc() {
        let good = encode(&sample(10));
        let edits: &[(usize, &[u8])] = &[
            (28, &[9]),                         // metric
            (29, &[1]),                         // element type f16: reserved
            (24, &[0, 0, 0, 0]),                // dimension 0
            (40, &[10, 0, 0, 0]),               // entry point out of range
            (36, &[64, 0, 0, 0]),               // max level
            (72, &[1, 1, 0, 0]),                // misaligned vectors offset
            (80, &[0, 0, 0, 1]),                // vectors length
            (72 + 24, &[0, 1, 0, 0]),           // ids overlap vectors
            (72 + 6 * 24, &[0, 255, 255, 255]), // id index past the end
        ];
        for (off, patch) in edits {
            let mut bad = good.clone();
            bad[*off..*off + patch.len()].copy_from_slice(patch);
            fix_crc(&mut bad);
            assert!(GenerationView::parse(&bad).is_err(), "edit at {off}");
        }
    }

    #[test]
    fn corrupt_bodies_never_panic_and_fail_verification() {
        let good = encode(&sample(10));
        let v = GenerationView::parse(&good).unwrap();
        let l0 = v.section(Section::Layer0).offset as usize;
        let up = v.section(Section::UpperOffsets).offset as usize;
        let mut bad = good.clone();
        bad[l0..l0 + 8].copy_from_slice(&[0xFF; 8]); // count and first neighbor
        bad[up + 4..up + 8].copy_from_slice(&[0xFF; 4]); // node 1's upper offset
        let v = GenerationView::parse(&bad).unwrap();
        for node in 0..12 {
            for l in 0..4 {
                let _ = v.neighbors(node, l).count();
            }
        }
        assert_eq!(v.neighbors(0, 0).collect::<Vec<_>>(), vec![9, 0, 0]);
        assert!(v.verify_structure().is_err());
        assert!(v.verify_sections().is_err());
    }

    #[test]
    fn encoder_rejects_inconsistent_parts() {
        let s = sample(5);
        let mut dup = s.ids.clone();
        dup[1] = dup[0];
        let mut l0 = s.layer0.clone();
        l0[1] = 99;
        let mut lv = s.levels.clone();
        lv[1] = 1;
        let base = parts(&s);
        let cases = [
            GenerationParts { ids: &dup, ..base },
            GenerationParts {
                layer0: &l0,
                ..base
            },
            GenerationParts {
                levels: &lv,
                ..base
            },
            GenerationParts {
                entry_point: Some(1),
                ..base
            },
            GenerationParts {
                entry_point: None,
                ..base
            },
            GenerationParts {
                vectors: &s.vectors[1..],
                ..base
            },
        ];
        for (i, c) in cases.iter().enumerate() {
            assert!(
                matches!(
                    GenerationEncoder::new(c),
                    Err(FormatError::InvalidInput { .. })
                ),
                "case {i}"
            );
        }
    }
}
