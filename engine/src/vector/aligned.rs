//! Vector storage aligned to cache lines: a growable `f32` buffer whose
//! first element sits on a 64-byte boundary, so that with a dimension that
//! is a multiple of 16 (384, 768, 1536) every vector starts a cache line.
//!
//! A heap `Vec<f32>` starts 16 bytes into a line (the allocator's
//! alignment), which makes every 64-byte SIMD load straddle two lines and
//! leaves each vector's last 16 bytes on a 25th line that a 24-line
//! prefetch misses. The generation file already aligns its vector section
//! (format/GENERATION.md); this gives the in-memory graphs the same layout.
//!
//! Small buffers (a query, a delta's first nodes) are heap blocks,
//! reinterpreted through `zerocopy`. From [`MAP_MIN_BYTES`] on, the buffer
//! is an anonymous private mapping that grows with `mremap(2)`: the kernel
//! moves the pages, so growing never holds the old and the new copy at
//! once (a heap reallocation of an over-aligned buffer allocates, copies
//! and then frees: at a 100K x 384 compaction build that was 134 MB twice
//! at the moment of the copy), and reserved capacity that was never
//! written costs no resident memory. The mapping is advised for huge pages
//! (`pages.rs`).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Floats per block: one cache line.
const LANES: usize = 16;

/// Bytes from which the buffer lives in its own mapping (the size from
/// which huge pages are asked for, `pages::MIN_BYTES`).
pub(crate) const MAP_MIN_BYTES: usize = super::pages::MIN_BYTES;

#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C, align(64))]
struct Block([f32; LANES]);

/// Where the blocks live.
#[derive(Debug)]
enum Storage {
    Heap(Vec<Block>),
    /// An anonymous private mapping of `map.len()` bytes (its capacity),
    /// page aligned; bytes past the buffer's length are zero.
    Mapped(memmap2::MmapMut),
}

impl Default for Storage {
    fn default() -> Self {
        Storage::Heap(Vec::new())
    }
}

/// A growable, 64-byte-aligned `f32` buffer (see the module comment).
#[derive(Debug, Default)]
pub(crate) struct AlignedF32 {
    storage: Storage,
    len: usize,
}

impl Clone for AlignedF32 {
    fn clone(&self) -> Self {
        AlignedF32::from(self.as_slice())
    }
}

impl AlignedF32 {
    /// The stored floats, in order.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[f32] {
        let bytes: &[u8] = match &self.storage {
            Storage::Heap(blocks) => blocks.as_bytes(),
            Storage::Mapped(map) => map,
        };
        let all = <[f32]>::ref_from_bytes(bytes).unwrap_or_default();
        all.get(..self.len).unwrap_or_default()
    }

    /// The stored floats, to change in place.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [f32] {
        let len = self.len;
        let bytes: &mut [u8] = match &mut self.storage {
            Storage::Heap(blocks) => blocks.as_mut_bytes(),
            Storage::Mapped(map) => map,
        };
        let all = <[f32]>::mut_from_bytes(bytes).unwrap_or_default();
        all.get_mut(..len).unwrap_or_default()
    }

    /// Number of floats stored.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Floats the buffer can hold without growing.
    pub(crate) fn capacity(&self) -> usize {
        match &self.storage {
            Storage::Heap(blocks) => blocks.capacity() * LANES,
            Storage::Mapped(map) => map.len() / 4,
        }
    }

    /// Room for `additional` more floats without another growth.
    pub(crate) fn reserve(&mut self, additional: usize) {
        let want = self.len.saturating_add(additional);
        if want > self.capacity() {
            self.grow_to(want, want);
        }
    }

    /// Appends `v`.
    pub(crate) fn extend_from_slice(&mut self, v: &[f32]) {
        let (old_len, new_len) = (self.len, self.len + v.len());
        if new_len > self.capacity() {
            // Amortized doubling, as a Vec grows.
            let doubled = self.capacity().saturating_mul(2);
            self.grow_to(new_len, doubled.max(new_len));
        }
        if let Storage::Heap(blocks) = &mut self.storage {
            blocks.resize(new_len.div_ceil(LANES), Block::default());
        }
        self.len = new_len;
        if let Some(dst) = self.as_mut_slice().get_mut(old_len..) {
            dst.copy_from_slice(v);
        }
    }

    /// Grows the capacity to hold at least `need` floats, `target` if it
    /// takes a new allocation. Moves to a mapping at [`MAP_MIN_BYTES`]; if
    /// the system refuses a mapping, the heap is used (the old behaviour).
    fn grow_to(&mut self, need: usize, target: usize) {
        let bytes = target.div_ceil(LANES).saturating_mul(size_of::<Block>());
        if bytes < MAP_MIN_BYTES
            && let Storage::Heap(blocks) = &mut self.storage
        {
            let want = need.div_ceil(LANES);
            blocks.reserve(
                target
                    .div_ceil(LANES)
                    .max(want)
                    .saturating_sub(blocks.len()),
            );
            return;
        }
        let grown = match &mut self.storage {
            Storage::Mapped(map) => remap(map, bytes).is_ok(),
            Storage::Heap(_) => false,
        };
        if grown {
            self.advise_huge();
            return;
        }
        match memmap2::MmapMut::map_anon(bytes) {
            Ok(mut map) => {
                let old = self.as_slice();
                if let Some(dst) = <[f32]>::mut_from_bytes(&mut map)
                    .ok()
                    .and_then(|all| all.get_mut(..old.len()))
                {
                    dst.copy_from_slice(old);
                }
                self.storage = Storage::Mapped(map);
                self.advise_huge();
            }
            Err(_) => {
                let old = std::mem::take(&mut self.storage);
                let mut blocks = Vec::with_capacity(target.div_ceil(LANES));
                match old {
                    Storage::Heap(b) => blocks.extend_from_slice(&b),
                    Storage::Mapped(map) => {
                        let n = self.len.div_ceil(LANES);
                        let used = <[Block]>::ref_from_bytes(&map)
                            .ok()
                            .and_then(|b| b.get(..n))
                            .unwrap_or_default();
                        blocks.extend_from_slice(used);
                    }
                }
                self.storage = Storage::Heap(blocks);
            }
        }
    }

    /// Asks for huge pages under the buffer (see `pages.rs`); call after
    /// it grows.
    pub(crate) fn advise_huge(&self) {
        match &self.storage {
            Storage::Heap(blocks) => super::pages::advise_huge(blocks),
            Storage::Mapped(map) => {
                // Advice only: a kernel without transparent huge pages
                // keeps small pages and nothing else changes.
                #[cfg(target_os = "linux")]
                let _ = map.advise(memmap2::Advice::HugePage);
                #[cfg(not(target_os = "linux"))]
                let _ = map;
            }
        }
    }

    /// Whether the buffer lives in its own mapping (tests).
    #[cfg(test)]
    fn is_mapped(&self) -> bool {
        matches!(self.storage, Storage::Mapped(_))
    }
}

/// Grows an anonymous mapping to `bytes` in place or by moving its pages.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn remap(map: &mut memmap2::MmapMut, bytes: usize) -> std::io::Result<()> {
    // SAFETY: `map` is an anonymous private mapping (no file behind it, so
    // no access can fall past a file's end), and it is borrowed mutably, so
    // no reference into it outlives the move. The grown tail is zero-filled
    // by the kernel.
    unsafe { map.remap(bytes, memmap2::RemapOptions::new().may_move(true)) }
}

/// Without `mremap(2)` the caller copies into a new mapping.
#[cfg(not(target_os = "linux"))]
fn remap(_map: &mut memmap2::MmapMut, _bytes: usize) -> std::io::Result<()> {
    Err(std::io::Error::other("mremap is Linux only"))
}

impl From<&[f32]> for AlignedF32 {
    fn from(v: &[f32]) -> Self {
        let mut a = AlignedF32::default();
        a.extend_from_slice(v);
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_values_in_order_and_aligned_across_growth() {
        let mut a = AlignedF32::default();
        assert!(a.as_slice().is_empty());
        let mut expected = Vec::new();
        for i in 0..100u16 {
            let v: Vec<f32> = (0..37u16)
                .map(|j| f32::from(i) * 100.0 + f32::from(j))
                .collect();
            a.extend_from_slice(&v);
            expected.extend_from_slice(&v);
            assert_eq!(a.as_slice(), &expected[..]);
            assert_eq!(a.as_slice().as_ptr() as usize % 64, 0);
        }
        assert_eq!(a.len(), 3_700);
        assert!(a.capacity() >= 3_700);
        assert!(!a.is_mapped(), "a small buffer stays on the heap");
        let b = AlignedF32::from(&expected[..10]);
        assert_eq!(b.as_slice(), &expected[..10]);
    }

    #[test]
    fn a_large_buffer_moves_to_a_mapping_and_keeps_every_value() {
        // 384-float vectors past the mapping threshold and through several
        // doublings of the mapping.
        let dim = 384;
        let n = 3 * MAP_MIN_BYTES / (dim * 4) + 7;
        let mut a = AlignedF32::default();
        for i in 0..n {
            let v: Vec<f32> = (0..dim).map(|j| (i * dim + j) as f32).collect();
            a.extend_from_slice(&v);
            assert_eq!(a.as_slice().as_ptr() as usize % 64, 0);
        }
        assert!(a.is_mapped());
        assert_eq!(a.len(), n * dim);
        assert!(a.capacity() >= n * dim);
        for (k, x) in a.as_slice().iter().enumerate() {
            assert_eq!(*x, k as f32, "float {k}");
        }
        a.as_mut_slice()[5] = -1.0;
        let c = a.clone();
        assert_eq!(c.as_slice(), a.as_slice());
        assert_eq!(c.as_slice()[5], -1.0);
        // Reserving past the capacity keeps the contents.
        let before = a.as_slice().to_vec();
        a.reserve(4 * MAP_MIN_BYTES);
        assert!(a.capacity() >= a.len() + 4 * MAP_MIN_BYTES);
        assert_eq!(a.as_slice(), &before[..]);
    }
}
