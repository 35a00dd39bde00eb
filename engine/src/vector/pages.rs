//! Transparent huge pages for the in-memory graph's large arrays (its
//! vectors and adjacency lists).
//!
//! A graph search reads vectors and lists at random across arrays of
//! hundreds of megabytes. With 4 KiB pages a 100K x 384 graph spans about
//! 41,000 pages, far more than the TLB holds, so nearly every distance and
//! every list read began with a page-table walk. Advised with
//! `MADV_HUGEPAGE`, the same arrays are about 80 pages of 2 MiB. Measured
//! with and without the advice on the same data, passes interleaved
//! (benches/README.md, hnswlib comparison): search QPS 1.09-1.14x by ef
//! (median 1.11x) at the same recall, and a shorter build.
//!
//! The advice is only advice: a kernel with transparent huge pages set to
//! `never` (or another OS) keeps small pages, and nothing else changes. The
//! first-class storage stays a `Vec`; this module only tells the kernel
//! how to back it.
//!
//! This and `distance.rs` are the vector index's only `unsafe`: one
//! `madvise` call, which changes neither the contents nor the validity of
//! the memory it names.
#![allow(unsafe_code)]

/// Buffers smaller than this are left alone: they cover at most one huge
/// page, and a small buffer (a delta graph's first nodes, a query) is not
/// worth a system call per growth.
pub(crate) const MIN_BYTES: usize = 4 << 20;

/// Asks the kernel to back the allocation of `v` (its whole capacity) with
/// huge pages. Call it after the allocation grows: a reallocation may have
/// moved it. A no-op below [`MIN_BYTES`] and off Linux.
pub(crate) fn advise_huge<T>(v: &Vec<T>) {
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < MIN_BYTES {
        return;
    }
    advise_range(v.as_ptr() as usize, bytes);
}

#[cfg(target_os = "linux")]
fn advise_range(start: usize, bytes: usize) {
    // madvise wants a page-aligned start; only whole pages inside the
    // allocation are named, so no neighbouring memory is advised.
    const PAGE: usize = 4096;
    let (Some(first), Some(end)) = (
        start.checked_next_multiple_of(PAGE),
        start.checked_add(bytes).map(|e| e / PAGE * PAGE),
    ) else {
        return;
    };
    if end > first {
        // SAFETY: `first..end` lies within one live allocation of `v` (its
        // capacity, rounded inward to pages). MADV_HUGEPAGE only changes
        // how the kernel backs those pages: contents, permissions and the
        // mapping itself are unchanged, so no reference into the
        // allocation is affected. A failure (no THP support) is harmless
        // and ignored.
        unsafe {
            libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_range(_start: usize, _bytes: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advising_keeps_contents_and_tolerates_any_size() {
        let small: Vec<u32> = (0..10).collect();
        advise_huge(&small);
        assert_eq!(small, (0..10).collect::<Vec<u32>>());

        let mut big: Vec<u32> = (0..(MIN_BYTES as u32)).collect();
        advise_huge(&big);
        big.push(7);
        advise_huge(&big);
        assert_eq!(big.len(), MIN_BYTES + 1);
        assert!(
            big.iter()
                .take(MIN_BYTES)
                .enumerate()
                .all(|(i, &x)| x == i as u32)
        );
        assert_eq!(big.last(), Some(&7));

        let empty: Vec<u64> = Vec::with_capacity(0);
        advise_huge(&empty);
    }
}
