//! A tantivy [`Directory`] that separates visibility from durability, like
//! Lucene's refresh and flush (SPEC.md §5 "Soft commits and checkpoints").
//!
//! Files written through it are not fsynced when tantivy closes them and
//! `sync_directory` does nothing, so a tantivy commit ("soft commit") costs
//! no disk flush: it makes documents searchable, and survives a process
//! crash (the data sits in the page cache), but not necessarily a power
//! loss. [`SoftDirectory::checkpoint`] makes everything written so far
//! durable: it fsyncs each file written since the last checkpoint, then the
//! directory.
//!
//! Before the first unsynced write after a checkpoint, a marker file
//! ([`MARKER`]) is created and made durable; a checkpoint that leaves
//! nothing unsynced removes it. So a marker found at open means "the last
//! process did not checkpoint": the index may be damaged if the machine (not
//! just the process) went down, and the caller verifies it
//! ([`verify_after_unclean_stop`]) before trusting it. The index is derived
//! from the store, so the worst case is a rebuild, never lost data.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use tantivy::Index;
use tantivy::directory::error::{
    DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError,
};
use tantivy::directory::{
    AntiCallToken, Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, TerminatingWrite,
    WatchCallback, WatchHandle, WritePtr,
};

/// Present while files of the index may not be durable.
pub(crate) const MARKER: &str = "memdb-unsynced";
/// Suffix of the temporary file behind an atomic write.
const TMP_SUFFIX: &str = ".memdb-tmp";

#[derive(Default)]
struct SyncState {
    /// Whether the marker file exists (durably).
    marked: bool,
    /// Files written since the last checkpoint, with a write sequence number
    /// so a checkpoint does not forget a file rewritten while it synced.
    unsynced: HashMap<PathBuf, u64>,
    seq: u64,
}

/// See the module documentation.
#[derive(Clone)]
pub(crate) struct SoftDirectory {
    inner: MmapDirectory,
    root: PathBuf,
    state: Arc<Mutex<SyncState>>,
}

impl std::fmt::Debug for SoftDirectory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SoftDirectory({})", self.root.display())
    }
}

impl SoftDirectory {
    /// Opens `root` (which must exist). A marker left by an earlier process
    /// is kept, so the next checkpoint syncs everything and removes it.
    pub(crate) fn open(root: &Path) -> Result<SoftDirectory, OpenDirectoryError> {
        let inner = MmapDirectory::open(root)?;
        let marked = root.join(MARKER).exists();
        Ok(SoftDirectory {
            inner,
            root: root.to_path_buf(),
            state: Arc::new(Mutex::new(SyncState {
                marked,
                ..SyncState::default()
            })),
        })
    }

    fn lock(&self) -> MutexGuard<'_, SyncState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether anything written may not be durable yet.
    pub(crate) fn is_dirty(&self) -> bool {
        self.lock().marked
    }

    /// Records that `path` is about to be written without fsync, making the
    /// marker durable first if this is the first such write.
    fn note_unsynced(&self, path: &Path) -> io::Result<()> {
        let mut state = self.lock();
        if !state.marked {
            let marker = self.root.join(MARKER);
            let mut f = File::create(&marker)?;
            f.write_all(b"files of this index may not be durable\n")?;
            f.sync_all()?;
            sync_dir(&self.root)?;
            state.marked = true;
        }
        state.seq += 1;
        let seq = state.seq;
        state.unsynced.insert(path.to_path_buf(), seq);
        Ok(())
    }

    /// Makes every file written so far durable and, when nothing was written
    /// meanwhile, removes the marker. Files deleted since they were written
    /// need no sync.
    pub(crate) fn checkpoint(&self) -> io::Result<()> {
        let pending: Vec<(PathBuf, u64)> = {
            let state = self.lock();
            if !state.marked {
                return Ok(());
            }
            state
                .unsynced
                .iter()
                .map(|(p, s)| (p.clone(), *s))
                .collect()
        };
        if pending.is_empty() {
            // A marker left by an earlier process: its files were never
            // tracked here, so sync the whole directory.
            sync_all_files(&self.root)?;
        }
        for (path, _) in &pending {
            match File::open(self.root.join(path)) {
                Ok(f) => f.sync_all()?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        sync_dir(&self.root)?;
        let mut state = self.lock();
        for (path, seq) in pending {
            if state.unsynced.get(&path) == Some(&seq) {
                state.unsynced.remove(&path);
            }
        }
        if state.unsynced.is_empty() {
            match std::fs::remove_file(self.root.join(MARKER)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            sync_dir(&self.root)?;
            state.marked = false;
        }
        Ok(())
    }
}

/// After an unclean stop (marker present): checks every file the committed
/// index refers to against its checksum footer. `Err` says what is wrong;
/// the caller rebuilds. Missing files make opening a reader fail, which the
/// caller also treats as damage.
pub(crate) fn verify_after_unclean_stop(index: &Index) -> Result<(), String> {
    let metas = index
        .load_metas()
        .map_err(|e| format!("index meta unreadable: {e}"))?;
    let dir = index.directory();
    for path in metas.list_segment_files() {
        match dir.exists(&path) {
            Ok(true) => {}
            // Candidates include optional components (a delete bitset).
            Ok(false) => continue,
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
        match dir.validate_checksum(&path) {
            Ok(true) => {}
            Ok(false) => return Err(format!("{}: checksum mismatch", path.display())),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
    Ok(())
}

impl Directory for SoftDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)?;
        self.lock().unsynced.remove(path);
        Ok(())
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let full = self.root.join(path);
        self.note_unsynced(path)
            .map_err(|e| OpenWriteError::wrap_io_error(e, full.clone()))?;
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&full)
            .map_err(|e| {
                if e.kind() == io::ErrorKind::AlreadyExists {
                    OpenWriteError::FileAlreadyExists(path.to_path_buf())
                } else {
                    OpenWriteError::wrap_io_error(e, full.clone())
                }
            })?;
        Ok(io::BufWriter::new(Box::new(UnsyncedFile(file))))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.note_unsynced(path)?;
        let full = self.root.join(path);
        let mut tmp_name = full.as_os_str().to_owned();
        tmp_name.push(TMP_SUFFIX);
        let tmp = PathBuf::from(tmp_name);
        {
            let mut f = File::create(&tmp)?;
            f.write_all(data)?;
        }
        std::fs::rename(&tmp, &full)
    }

    fn sync_directory(&self) -> io::Result<()> {
        // Deferred to the next checkpoint.
        Ok(())
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(callback)
    }
}

/// A file closed without fsync.
struct UnsyncedFile(File);

impl Write for UnsyncedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl TerminatingWrite for UnsyncedFile {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        self.0.flush()
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Fsyncs every regular file in `dir` (not recursive) and `dir` itself.
fn sync_all_files(dir: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_file() {
            match File::open(entry.path()) {
                Ok(f) => f.sync_all()?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_lives_from_first_unsynced_write_to_checkpoint() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SoftDirectory::open(tmp.path()).unwrap();
        assert!(!dir.is_dirty());
        assert!(!tmp.path().join(MARKER).exists());
        let mut w = dir.open_write(Path::new("a.bin")).unwrap();
        w.write_all(b"hello").unwrap();
        w.terminate().unwrap();
        assert!(dir.is_dirty());
        assert!(tmp.path().join(MARKER).exists());
        dir.atomic_write(Path::new("meta.json"), b"{}").unwrap();
        assert_eq!(std::fs::read(tmp.path().join("a.bin")).unwrap(), b"hello");
        assert_eq!(dir.atomic_read(Path::new("meta.json")).unwrap(), b"{}");
        dir.checkpoint().unwrap();
        assert!(!dir.is_dirty());
        assert!(!tmp.path().join(MARKER).exists());
        // No temporary file is left behind by the atomic write.
        let names: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(TMP_SUFFIX)), "{names:?}");
    }

    #[test]
    fn a_marker_from_an_earlier_process_is_seen_and_cleared() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(MARKER), b"x").unwrap();
        std::fs::write(tmp.path().join("old.bin"), b"data").unwrap();
        let dir = SoftDirectory::open(tmp.path()).unwrap();
        assert!(dir.is_dirty());
        dir.checkpoint().unwrap();
        assert!(!dir.is_dirty());
        assert!(!tmp.path().join(MARKER).exists());
        assert!(tmp.path().join("old.bin").exists());
    }

    #[test]
    fn deleted_files_need_no_sync() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SoftDirectory::open(tmp.path()).unwrap();
        let w = dir.open_write(Path::new("gone.bin")).unwrap();
        drop(w);
        dir.delete(Path::new("gone.bin")).unwrap();
        dir.checkpoint().unwrap();
        assert!(!dir.is_dirty());
    }
}
