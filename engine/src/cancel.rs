//! Cooperative cancellation of long engine calls (SPEC.md §21.2): a caller
//! runs a call under a flag ([`with_cancel_flag`]); the engine's long
//! loops (the context optimizer's) check it and stop with
//! [`Error::Cancelled`](crate::Error::Cancelled) once it is set. The flag
//! is per thread: the call runs on the caller's thread, as memdb-server's
//! blocking-pool calls do.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};

thread_local! {
    static FLAG: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Runs `f` with `flag` as this thread's cancellation flag: setting it
/// (from any thread) makes the engine's long loops inside `f` return
/// [`Error::Cancelled`](crate::Error::Cancelled). The previous flag, if
/// any, is restored afterwards, also when `f` panics.
pub fn with_cancel_flag<T>(flag: Arc<AtomicBool>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Arc<AtomicBool>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            FLAG.with(|c| *c.borrow_mut() = prev);
        }
    }
    let prev = FLAG.with(|c| c.borrow_mut().replace(flag));
    let _restore = Restore(prev);
    f()
}

/// `Err(Error::Cancelled)` when this thread's flag is set: what the
/// engine's long loops call, and what an embedder's own loop inside
/// [`with_cancel_flag`] may call too.
pub fn check_cancelled() -> Result<()> {
    let cancelled = FLAG.with(|c| {
        c.borrow()
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    });
    if cancelled {
        Err(Error::Cancelled)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_is_scoped_and_restored() {
        assert!(check_cancelled().is_ok());
        let flag = Arc::new(AtomicBool::new(false));
        with_cancel_flag(flag.clone(), || {
            assert!(check_cancelled().is_ok());
            flag.store(true, Ordering::Relaxed);
            assert!(matches!(check_cancelled(), Err(Error::Cancelled)));
            // A nested scope with its own flag, then the outer one again.
            with_cancel_flag(Arc::new(AtomicBool::new(false)), || {
                assert!(check_cancelled().is_ok())
            });
            assert!(matches!(check_cancelled(), Err(Error::Cancelled)));
        });
        assert!(check_cancelled().is_ok());
    }
}
