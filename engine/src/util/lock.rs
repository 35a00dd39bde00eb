//! Advisory file locks (`flock`) that are released by an explicit unlock:
//! one writer per data directory (an exclusive lock on `<dir>/LOCK`,
//! [`DirLock`]) and the text index's writer and meta locks
//! (`text::softdir`), both on [`LockFile`].
//!
//! A lock is held for the life of its [`LockFile`], released explicitly on
//! drop, and released by the OS when the process dies, so a crash never
//! leaves a stale lock behind. The data directory lock's holder writes its
//! pid into the file only to make the error message useful; it is never
//! trusted for correctness.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use crate::error::{Error, Result};

/// A file whose advisory lock this process holds; dropping it unlocks.
///
/// Unlocking explicitly instead of relying on close(): a child process
/// forked by another thread (a `Command` anywhere in this process) shares
/// the open file description, and with it the lock, until it execs. Closing
/// alone would leave the lock held that long, and the next taker (this
/// process reopening a store, or its text index) would read it as busy.
/// `unlock` releases the description's lock for every holder.
#[derive(Debug)]
pub(crate) struct LockFile(File);

/// What [`LockFile::lock`] found.
pub(crate) enum Locking {
    /// The lock is this process's now.
    Held(LockFile),
    /// Another holder has it; the file is open (for reading what the holder
    /// wrote into it).
    Busy(File),
}

impl LockFile {
    /// Opens `path` (creating it) for reading and writing and takes its
    /// exclusive lock: waiting for it when `wait`, else answering
    /// [`Locking::Busy`] when another holder has it.
    pub(crate) fn lock(path: &Path, wait: bool) -> io::Result<Locking> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        if wait {
            file.lock()?;
        } else {
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => return Ok(Locking::Busy(file)),
                Err(TryLockError::Error(e)) => return Err(e),
            }
        }
        Ok(Locking::Held(LockFile(file)))
    }

    /// The locked file.
    pub(crate) fn file(&self) -> &File {
        &self.0
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// An acquired directory lock; dropping it releases the lock.
#[derive(Debug)]
pub(crate) struct DirLock {
    _lock: LockFile,
}

impl DirLock {
    pub(crate) fn acquire(dir: &Path) -> Result<DirLock> {
        let path = dir.join("LOCK");
        let lock = match LockFile::lock(&path, false).map_err(Error::io(&path))? {
            Locking::Held(lock) => lock,
            Locking::Busy(mut file) => {
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
        };
        // Best effort: the pid only decorates the error a second writer sees.
        let mut file = lock.file();
        let _ = file.set_len(0);
        let _ = file.seek(SeekFrom::Start(0));
        let _ = write!(file, "{}", std::process::id());
        let _ = file.flush();
        Ok(DirLock { _lock: lock })
    }
}
