//! The C allocator: its arena limit, for the binaries, and handing free
//! heap pages back to the system.
//!
//! glibc's malloc gives threads their own arenas (up to 8 per core), and a
//! freed block goes back to the arena that made it. ONNX Runtime allocates
//! its tensors with the C allocator on whichever thread runs a batch, so a
//! bulk embedding leaves free space stranded in several arenas: a 200-file
//! knowledge-base sync of 200 files peaked at 545-593 MB resident with the
//! default and 419-481 MB with one arena, and of 1,000 files at 654 MB
//! against 545 MB, at the same speed (benches/README.md, Stop 37).
//!
//! The arena limit is a process-wide setting, so the library never applies
//! it itself: `memdb` and `memdb-server` do, first thing in `main`. A
//! `MALLOC_ARENA_MAX` in the environment wins (glibc has read it already,
//! and it is not overridden). [`trim`] changes no setting (it returns free
//! pages only), so the library calls it where a large structure was just
//! freed before a memory peak.
#![allow(unsafe_code)]

/// The arena count the binaries ask for: one. On 2 cores one arena also
/// wrote as fast as sixteen (`write_compare`, 8 and 64 writers: 1,563-1,970
/// and 9,947-10,079 stores/s against 1,659-1,734 and 8,739-9,272), and two
/// arenas kept most of the waste (617 MB against 545 MB for 1,000 files).
/// A many-core server that contends on it can set `MALLOC_ARENA_MAX`.
pub const MALLOC_ARENAS: usize = 1;

/// Limits glibc's malloc to `arenas` arenas (at least 1) unless
/// `MALLOC_ARENA_MAX` is set. Returns whether the limit was applied; always
/// `false` on other C libraries.
pub fn limit_malloc_arenas(arenas: usize) -> bool {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return false;
    }
    apply(i32::try_from(arenas.max(1)).unwrap_or(i32::MAX))
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn apply(arenas: i32) -> bool {
    // SAFETY: mallopt only changes a tuning parameter of the allocator; it
    // touches no memory the caller owns, and M_ARENA_MAX takes effect for
    // arenas made after the call (existing ones stay valid).
    unsafe { libc::mallopt(libc::M_ARENA_MAX, arenas) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn apply(_arenas: i32) -> bool {
    false
}

/// Returns the C heap's free memory to the system (glibc's
/// `malloc_trim`): after a large structure is freed, so that a following
/// peak is not stacked on pages the allocator kept. Does nothing on other
/// C libraries.
pub(crate) fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free heap pages; it reads and
    // writes the allocator's own state under its locks, nothing of ours.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_applies_on_glibc_and_allocation_still_works() {
        let applied = limit_malloc_arenas(2);
        if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
            assert_eq!(applied, cfg!(all(target_os = "linux", target_env = "gnu")));
        } else {
            assert!(!applied);
        }
        let handles: Vec<_> = (0..4)
            .map(|i| {
                std::thread::spawn(move || {
                    vec![i as u8; 1 << 20]
                        .iter()
                        .map(|&b| b as usize)
                        .sum::<usize>()
                })
            })
            .collect();
        for (i, h) in handles.into_iter().enumerate() {
            assert_eq!(h.join().ok(), Some(i << 20));
        }
    }
}
