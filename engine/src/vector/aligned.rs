//! Vector storage aligned to cache lines: a growable `f32` buffer whose
//! first element sits on a 64-byte boundary, so that with a dimension that
//! is a multiple of 16 (384, 768, 1536) every vector starts a cache line.
//!
//! A heap `Vec<f32>` starts 16 bytes into a line (the allocator's
//! alignment), which makes every 64-byte SIMD load straddle two lines and
//! leaves each vector's last 16 bytes on a 25th line that a 24-line
//! prefetch misses. The generation file already aligns its vector section
//! (format/GENERATION.md); this gives the in-memory graphs the same layout.
//! No `unsafe`: the blocks are reinterpreted through `zerocopy`. Large
//! buffers are advised for huge pages by the graph that owns them
//! (`pages.rs`).

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// Floats per block: one cache line.
const LANES: usize = 16;

#[derive(Debug, Clone, Copy, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C, align(64))]
struct Block([f32; LANES]);

/// A growable, 64-byte-aligned `f32` buffer (see the module comment).
#[derive(Debug, Clone, Default)]
pub(crate) struct AlignedF32 {
    blocks: Vec<Block>,
    len: usize,
}

impl AlignedF32 {
    /// The stored floats, in order.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[f32] {
        let all = <[f32]>::ref_from_bytes(self.blocks.as_bytes()).unwrap_or_default();
        all.get(..self.len).unwrap_or_default()
    }

    /// The stored floats, to change in place.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [f32] {
        let len = self.len;
        let all = <[f32]>::mut_from_bytes(self.blocks.as_mut_bytes()).unwrap_or_default();
        all.get_mut(..len).unwrap_or_default()
    }

    /// Number of floats stored.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Makes room for `additional` more floats.
    pub(crate) fn reserve(&mut self, additional: usize) {
        let want = self.len.saturating_add(additional).div_ceil(LANES);
        self.blocks.reserve(want.saturating_sub(self.blocks.len()));
    }

    /// Appends `v`.
    pub(crate) fn extend_from_slice(&mut self, v: &[f32]) {
        let (old_len, new_len) = (self.len, self.len + v.len());
        self.blocks
            .resize(new_len.div_ceil(LANES), Block::default());
        self.len = new_len;
        if let Some(dst) = self.as_mut_slice().get_mut(old_len..) {
            dst.copy_from_slice(v);
        }
    }

    /// Asks for huge pages under the buffer (see `pages.rs`); call after
    /// it grows.
    pub(crate) fn advise_huge(&self) {
        super::pages::advise_huge(&self.blocks);
    }

    /// Floats the buffer can hold without reallocating.
    pub(crate) fn capacity(&self) -> usize {
        self.blocks.capacity() * LANES
    }
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
        let b = AlignedF32::from(&expected[..10]);
        assert_eq!(b.as_slice(), &expected[..10]);
    }
}
