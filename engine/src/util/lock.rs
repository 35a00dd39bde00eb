//! One writer per data directory: an exclusive advisory lock on `<dir>/LOCK`.
//!
//! The lock is held for the life of the [`DirLock`], released explicitly on
//! drop, and released by the OS when the process dies, so a crash never leaves a stale lock behind. The
//! holder's pid is written into the file only to make the error message
//! useful; it is never trusted for correctness.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::error::{Error, Result};

/// An acquired directory lock; dropping it releases the lock.
#[derive(Debug)]
pub(crate) struct DirLock {
    _file: File,
}

impl DirLock {
    pub(crate) fn acquire(dir: &Path) -> Result<DirLock> {
        let path = dir.join("LOCK");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(Error::io(&path))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(Error::Locked {
                    dir: dir.to_path_buf(),
                    holder: if holder.is_empty() {
                        String::new()
                    } else {
                        format!(" (pid {holder})")
                    },
                });
            }
            Err(TryLockError::Error(e)) => return Err(Error::io(&path)(e)),
        }
        // Best effort: the pid only decorates the error a second writer sees.
        let _ = file.set_len(0);
        let _ = file.seek(SeekFrom::Start(0));
        let _ = write!(file, "{}", std::process::id());
        let _ = file.flush();
        Ok(DirLock { _file: file })
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // Unlock explicitly instead of relying on close(): a child process
        // forked by this one (before its exec closes our descriptors) shares
        // the open file description, and with it the lock, until it execs.
        // `unlock` releases the description's lock for every holder.
        let _ = self._file.unlock();
    }
}
