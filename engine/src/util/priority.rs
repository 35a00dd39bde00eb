//! Background threads' CPU priority.
//!
//! The embedding worker (and the HNSW inserts it runs) is background work:
//! on a machine with few cores it competes for CPU with the threads that
//! answer requests. Linux schedules each thread with its own nice value
//! (`setpriority(PRIO_PROCESS, tid)` applies to the one thread), so the
//! worker lowers its own priority when it starts, as RocksDB lowers its
//! compaction threads'. It still runs whenever a core is free.

#![allow(unsafe_code)]

/// The nice value background threads take (0 is normal, 19 the lowest).
pub const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread's CPU priority to `nice` (never raises it).
/// Returns whether the scheduler took it; elsewhere than Linux it does
/// nothing and returns false.
pub fn lower_current_thread_priority(nice: i32) -> bool {
    apply(nice.clamp(0, 19))
}

#[cfg(target_os = "linux")]
fn apply(nice: i32) -> bool {
    // SAFETY: gettid and getpriority/setpriority take plain integers and
    // touch no memory the caller owns; on Linux PRIO_PROCESS with a thread
    // id changes only that thread.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        *libc::__errno_location() = 0;
        let current = libc::getpriority(libc::PRIO_PROCESS, tid);
        if *libc::__errno_location() != 0 {
            return false;
        }
        if current >= nice {
            return true;
        }
        libc::setpriority(libc::PRIO_PROCESS, tid, nice) == 0
    }
}

#[cfg(not(target_os = "linux"))]
fn apply(_nice: i32) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_lowers_its_own_priority_and_not_its_siblings() {
        let lowered = std::thread::spawn(|| {
            let ok = lower_current_thread_priority(BACKGROUND_NICE);
            (ok, nice_of_current())
        })
        .join()
        .unwrap();
        if cfg!(target_os = "linux") {
            assert!(lowered.0);
            assert!(lowered.1 >= BACKGROUND_NICE, "nice {}", lowered.1);
            // This thread kept its own.
            assert!(nice_of_current() < BACKGROUND_NICE);
        } else {
            assert!(!lowered.0);
        }
    }

    fn nice_of_current() -> i32 {
        #[cfg(target_os = "linux")]
        // SAFETY: as in `apply`.
        unsafe {
            libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t)
        }
        #[cfg(not(target_os = "linux"))]
        0
    }
}
