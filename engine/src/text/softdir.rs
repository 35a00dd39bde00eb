//! A tantivy [`Directory`] that separates visibility from durability, like
//! Lucene's refresh and flush (SPEC.md §7.2 "Soft commits and checkpoints").
//!
//! **Staging.** Files tantivy writes are kept in memory until the next
//! checkpoint: a tantivy commit ("soft commit") makes documents searchable
//! without creating a single file on disk (on ext4, creating and deleting
//! the seven files of a new segment plus the temporary files of
//! `meta.json` and `.managed.json` was most of a commit's 4-5 ms). Deletes
//! of files that are on disk are deferred to the checkpoint, because the
//! `meta.json` on disk may still refer to them. A file that grows past
//! [`SPILL_BYTES`] (a bulk import's or a big merge's segment) is written to
//! disk instead, without fsync.
//!
//! **Checkpoint.** [`SoftDirectory::checkpoint`] writes the staged files,
//! fsyncs them and the spilled ones, then replaces `.managed.json` and
//! `meta.json` atomically (temporary file, fsync, rename, directory fsync),
//! and only then applies the deferred deletes. So the `meta.json` on disk
//! only ever names files that are durable: a crash or power loss leaves the
//! index of the last checkpoint, which the oplog (kept back to it) brings
//! forward.
//!
//! **Marker.** Before the first spilled write after a checkpoint, a marker
//! file ([`MARKER`]) is created and made durable; a checkpoint that leaves
//! nothing unsynced removes it. Earlier versions soft-committed straight to
//! disk, so a marker found at open still makes the caller verify the index
//! ([`verify_after_unclean_stop`]). Files left by a crash that no `meta.json`
//! names are removed at open ([`sweep_orphans`]).

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use tantivy::Index;
use tantivy::directory::error::{
    DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError,
};
use tantivy::directory::{
    AntiCallToken, Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, OwnedBytes,
    TerminatingWrite, WatchCallback, WatchHandle, WritePtr,
};

use crate::util::lock::{LockFile, Locking};

/// Present while spilled files of the index may not be durable.
pub(crate) const MARKER: &str = "memdb-unsynced";
/// Suffix of the temporary file behind an atomic write.
const TMP_SUFFIX: &str = ".memdb-tmp";
/// A staged file larger than this goes to disk (unsynced) instead.
pub(crate) const SPILL_BYTES: usize = 8 << 20;
/// Written last by a checkpoint, in this order.
const ATOMIC_FILES: [&str; 2] = [".managed.json", "meta.json"];

#[derive(Default)]
struct State {
    /// Files written since the last checkpoint, held in memory.
    staged: HashMap<PathBuf, OwnedBytes>,
    /// Files on disk that tantivy deleted since the last checkpoint.
    deleted: HashSet<PathBuf>,
    /// Files spilled to disk without fsync since the last checkpoint, with a
    /// write sequence number.
    unsynced: HashMap<PathBuf, u64>,
    seq: u64,
    /// Whether the marker file exists (durably).
    marked: bool,
}

impl State {
    /// Whether anything is not durable yet (or an earlier process left the
    /// marker).
    fn dirty(&self) -> bool {
        self.marked || !self.staged.is_empty() || !self.deleted.is_empty()
    }
}

/// See the module documentation.
#[derive(Clone)]
pub(crate) struct SoftDirectory {
    inner: MmapDirectory,
    root: PathBuf,
    state: Arc<Mutex<State>>,
    /// One checkpoint at a time.
    checkpointing: Arc<Mutex<()>>,
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
            state: Arc::new(Mutex::new(State {
                marked,
                ..State::default()
            })),
            checkpointing: Arc::new(Mutex::new(())),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether anything written or deleted is not durable yet (or an earlier
    /// process left the marker).
    pub(crate) fn is_dirty(&self) -> bool {
        self.lock().dirty()
    }

    /// Whether an earlier process, or a spill, left files that may not be
    /// durable.
    pub(crate) fn is_marked(&self) -> bool {
        self.lock().marked
    }

    /// Bytes held in memory.
    pub(crate) fn staged_bytes(&self) -> usize {
        self.lock().staged.values().map(|b| b.len()).sum()
    }

    /// Records that `path` is about to be spilled to disk without fsync,
    /// making the marker durable first if this is the first such write.
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

    /// Makes everything written so far durable: staged files are written and
    /// fsynced, spilled ones fsynced, then `.managed.json` and `meta.json`
    /// replaced atomically, then deferred deletes applied. Removes the marker
    /// when nothing unsynced remains.
    pub(crate) fn checkpoint(&self) -> io::Result<()> {
        let _one = self.checkpointing.lock().unwrap_or_else(|e| e.into_inner());
        let (staged, deleted, unsynced, marked) = {
            let s = self.lock();
            if !s.dirty() {
                return Ok(());
            }
            (
                s.staged.clone(),
                s.deleted.clone(),
                s.unsynced.clone(),
                s.marked,
            )
        };
        if marked && unsynced.is_empty() && staged.is_empty() && deleted.is_empty() {
            // A marker left by an earlier process: its files were never
            // tracked here, so sync the whole directory.
            sync_all_files(&self.root)?;
        }
        // 1. Segment files: written (staged) or synced (spilled), then the
        //    directory, so the new meta.json can only name durable files.
        for (path, bytes) in &staged {
            if ATOMIC_FILES.iter().any(|a| Path::new(a) == path) {
                continue;
            }
            let mut f = File::create(self.root.join(path))?;
            f.write_all(bytes.as_slice())?;
            f.sync_all()?;
        }
        for path in unsynced.keys() {
            match File::open(self.root.join(path)) {
                Ok(f) => f.sync_all()?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        sync_dir(&self.root)?;
        // 2. The file list, then the commit point.
        for name in ATOMIC_FILES {
            if let Some(bytes) = staged.get(Path::new(name)) {
                write_atomic_durable(&self.root.join(name), bytes.as_slice())?;
            }
        }
        sync_dir(&self.root)?;
        // 3. Files no durable meta.json names any more.
        for path in &deleted {
            match std::fs::remove_file(self.root.join(path)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        if !deleted.is_empty() {
            sync_dir(&self.root)?;
        }
        // 4. Reconcile with what happened meanwhile.
        let mut s = self.lock();
        for (path, bytes) in staged {
            match s.staged.get(&path) {
                // Unchanged: served from disk from now on.
                Some(now) if now.as_slice().as_ptr() == bytes.as_slice().as_ptr() => {
                    s.staged.remove(&path);
                }
                // Rewritten meanwhile (meta.json): the newer one stays staged.
                Some(_) => {}
                // Deleted while being written out: the meta.json just made
                // durable may name it, so it goes at the next checkpoint.
                None => {
                    s.deleted.insert(path);
                }
            }
        }
        for path in deleted {
            s.deleted.remove(&path);
        }
        for (path, seq) in unsynced {
            if s.unsynced.get(&path) == Some(&seq) {
                s.unsynced.remove(&path);
            }
        }
        if s.marked && s.unsynced.is_empty() {
            match std::fs::remove_file(self.root.join(MARKER)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            sync_dir(&self.root)?;
            s.marked = false;
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

/// Removes segment files of `root` that the durable `meta.json` does not
/// name (left by a crash after a spill or a checkpoint's writes), and
/// temporary files of atomic writes. Call at open, before any writer exists.
/// Returns how many files were removed.
pub(crate) fn sweep_orphans(index: &Index, root: &Path) -> io::Result<usize> {
    let Ok(metas) = index.load_metas() else {
        return Ok(0);
    };
    let live: HashSet<String> = metas
        .segments
        .iter()
        .map(|s| s.id().uuid_string())
        .collect();
    let mut removed = 0;
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        if !entry.file_type()?.is_file() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let segment = name
            .split_once('.')
            .map(|(stem, _)| stem)
            .filter(|stem| stem.len() == 32 && stem.bytes().all(|b| b.is_ascii_hexdigit()));
        let orphan = name.ends_with(TMP_SUFFIX) || segment.is_some_and(|id| !live.contains(id));
        if orphan {
            std::fs::remove_file(entry.path())?;
            removed += 1;
        }
    }
    if removed > 0 {
        sync_dir(root)?;
    }
    Ok(removed)
}

impl Directory for SoftDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        {
            let s = self.lock();
            if let Some(bytes) = s.staged.get(path) {
                return Ok(Arc::new(bytes.clone()));
            }
            if s.deleted.contains(path) {
                return Err(OpenReadError::FileDoesNotExist(path.to_path_buf()));
            }
        }
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        let mut s = self.lock();
        if s.staged.remove(path).is_some() {
            return Ok(());
        }
        if s.unsynced.remove(path).is_some() {
            // Spilled since the last checkpoint: no durable meta.json names it.
            drop(s);
            return self.inner.delete(path);
        }
        if s.deleted.contains(path) || !self.root.join(path).exists() {
            return Err(DeleteError::FileDoesNotExist(path.to_path_buf()));
        }
        s.deleted.insert(path.to_path_buf());
        Ok(())
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        {
            let s = self.lock();
            if s.staged.contains_key(path) {
                return Ok(true);
            }
            if s.deleted.contains(path) {
                return Ok(false);
            }
        }
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        if self.exists(path).unwrap_or(false) {
            return Err(OpenWriteError::FileAlreadyExists(path.to_path_buf()));
        }
        Ok(io::BufWriter::new(Box::new(StagedFile {
            dir: self.clone(),
            path: path.to_path_buf(),
            buf: Vec::new(),
            spilled: None,
        })))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        {
            let s = self.lock();
            if let Some(bytes) = s.staged.get(path) {
                return Ok(bytes.as_slice().to_vec());
            }
            if s.deleted.contains(path) {
                return Err(OpenReadError::FileDoesNotExist(path.to_path_buf()));
            }
        }
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let mut s = self.lock();
        s.deleted.remove(path);
        s.staged
            .insert(path.to_path_buf(), OwnedBytes::new(data.to_vec()));
        Ok(())
    }

    fn sync_directory(&self) -> io::Result<()> {
        // Deferred to the next checkpoint.
        Ok(())
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        // Not `MmapDirectory`'s lock, which is released by closing alone
        // (`LockFile` says why that is not enough).
        let path = self.root.join(&lock.filepath);
        match LockFile::lock(&path, lock.is_blocking).map_err(LockError::wrap_io_error)? {
            Locking::Held(held) => Ok(DirectoryLock::from(Box::new(held))),
            Locking::Busy(_) => Err(LockError::LockBusy),
        }
    }

    fn watch(&self, callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(callback)
    }
}

/// A file being written: in memory, or on disk once it passed
/// [`SPILL_BYTES`]. Visible (staged) once tantivy terminates it.
struct StagedFile {
    dir: SoftDirectory,
    path: PathBuf,
    buf: Vec<u8>,
    spilled: Option<File>,
}

impl StagedFile {
    fn spill(&mut self) -> io::Result<()> {
        self.dir.note_unsynced(&self.path)?;
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.dir.root.join(&self.path))?;
        file.write_all(&self.buf)?;
        self.buf = Vec::new();
        self.spilled = Some(file);
        Ok(())
    }
}

impl Write for StagedFile {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.spilled.is_none() && self.buf.len() + data.len() > SPILL_BYTES {
            self.spill()?;
        }
        match &mut self.spilled {
            Some(f) => f.write(data),
            None => {
                self.buf.extend_from_slice(data);
                Ok(data.len())
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.spilled {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

impl TerminatingWrite for StagedFile {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        match &mut self.spilled {
            Some(f) => {
                f.flush()?;
                // A checkpoint that synced part of it must not count it as
                // durable: a new sequence number keeps it unsynced.
                let mut s = self.dir.lock();
                s.seq += 1;
                let seq = s.seq;
                s.unsynced.insert(self.path.clone(), seq);
                Ok(())
            }
            None => {
                let bytes = OwnedBytes::new(std::mem::take(&mut self.buf));
                self.dir.lock().staged.insert(self.path.clone(), bytes);
                Ok(())
            }
        }
    }
}

/// Replaces `path` with `data` durably: temporary file, fsync, rename.
fn write_atomic_durable(path: &Path, data: &[u8]) -> io::Result<()> {
    let mut tmp_name = path.as_os_str().to_owned();
    tmp_name.push(TMP_SUFFIX);
    let tmp = PathBuf::from(tmp_name);
    {
        let mut f = File::create(&tmp)?;
        f.write_all(data)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
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

    /// A released lock is free at once even while a copy of its descriptor
    /// lives on, as it does in a child forked before the release that has
    /// not yet exec'd: the release unlocks, it does not only close.
    #[test]
    fn a_released_lock_is_free_while_a_forked_copy_of_it_lives() {
        use tantivy::directory::INDEX_WRITER_LOCK;
        let d = tempfile::tempdir().unwrap();
        let dir = SoftDirectory::open(d.path()).unwrap();
        let path = d.path().join(&INDEX_WRITER_LOCK.filepath);
        let Ok(Locking::Held(held)) = LockFile::lock(&path, false) else {
            panic!("the lock is free");
        };
        assert!(matches!(
            dir.acquire_lock(&INDEX_WRITER_LOCK),
            Err(LockError::LockBusy)
        ));
        // What a fork gives the child: a descriptor sharing the lock's open
        // file description.
        let copy = held.file().try_clone().unwrap();
        drop(held);
        let again = dir.acquire_lock(&INDEX_WRITER_LOCK);
        assert!(again.is_ok(), "the copy kept the lock: {:?}", again.err());
        drop(copy);
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    fn write(dir: &SoftDirectory, name: &str, data: &[u8]) {
        let mut w = dir.open_write(Path::new(name)).unwrap();
        w.write_all(data).unwrap();
        w.terminate().unwrap();
    }

    #[test]
    fn small_files_are_staged_until_a_checkpoint() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SoftDirectory::open(tmp.path()).unwrap();
        assert!(!dir.is_dirty());
        write(&dir, "a.bin", b"hello");
        dir.atomic_write(Path::new("meta.json"), b"{}").unwrap();
        assert!(dir.is_dirty());
        assert_eq!(dir.staged_bytes(), 7);
        // Readable through the directory, absent from the disk.
        assert!(dir.exists(Path::new("a.bin")).unwrap());
        let h = dir.get_file_handle(Path::new("a.bin")).unwrap();
        assert_eq!(h.read_bytes(0..5).unwrap().as_slice(), b"hello");
        assert_eq!(dir.atomic_read(Path::new("meta.json")).unwrap(), b"{}");
        assert!(names(tmp.path()).is_empty(), "{:?}", names(tmp.path()));
        assert!(matches!(
            dir.open_write(Path::new("a.bin")),
            Err(OpenWriteError::FileAlreadyExists(_))
        ));
        dir.checkpoint().unwrap();
        assert!(!dir.is_dirty());
        assert_eq!(dir.staged_bytes(), 0);
        assert_eq!(names(tmp.path()), vec!["a.bin", "meta.json"]);
        assert_eq!(std::fs::read(tmp.path().join("a.bin")).unwrap(), b"hello");
        // Now served from disk.
        let h = dir.get_file_handle(Path::new("a.bin")).unwrap();
        assert_eq!(h.read_bytes(0..5).unwrap().as_slice(), b"hello");
    }

    #[test]
    fn deletes_of_durable_files_wait_for_the_next_checkpoint() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SoftDirectory::open(tmp.path()).unwrap();
        write(&dir, "old.bin", b"old");
        dir.atomic_write(Path::new("meta.json"), b"1").unwrap();
        dir.checkpoint().unwrap();
        // The durable meta.json names old.bin: deleting it must not touch
        // the disk before a newer meta.json is durable.
        dir.delete(Path::new("old.bin")).unwrap();
        dir.atomic_write(Path::new("meta.json"), b"2").unwrap();
        assert!(!dir.exists(Path::new("old.bin")).unwrap());
        assert!(tmp.path().join("old.bin").exists());
        assert_eq!(std::fs::read(tmp.path().join("meta.json")).unwrap(), b"1");
        assert!(matches!(
            dir.delete(Path::new("old.bin")),
            Err(DeleteError::FileDoesNotExist(_))
        ));
        dir.checkpoint().unwrap();
        assert!(!tmp.path().join("old.bin").exists());
        assert_eq!(std::fs::read(tmp.path().join("meta.json")).unwrap(), b"2");
        // A staged file deleted before any checkpoint never reaches the disk.
        write(&dir, "brief.bin", b"x");
        dir.delete(Path::new("brief.bin")).unwrap();
        dir.checkpoint().unwrap();
        assert_eq!(names(tmp.path()), vec!["meta.json"]);
    }

    #[test]
    fn large_files_spill_to_disk_under_the_marker() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = SoftDirectory::open(tmp.path()).unwrap();
        let big = vec![7u8; SPILL_BYTES + 10];
        write(&dir, "big.bin", &big);
        assert!(dir.is_marked());
        assert!(tmp.path().join(MARKER).exists());
        assert_eq!(dir.staged_bytes(), 0);
        assert_eq!(
            std::fs::metadata(tmp.path().join("big.bin")).unwrap().len() as usize,
            big.len()
        );
        let h = dir.get_file_handle(Path::new("big.bin")).unwrap();
        assert_eq!(h.len(), big.len());
        dir.checkpoint().unwrap();
        assert!(!dir.is_marked());
        assert!(!tmp.path().join(MARKER).exists());
        // Spilled and deleted before a checkpoint: removed at once.
        write(&dir, "big2.bin", &big);
        dir.delete(Path::new("big2.bin")).unwrap();
        assert!(!tmp.path().join("big2.bin").exists());
    }

    #[test]
    fn a_marker_from_an_earlier_process_is_seen_and_cleared() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(MARKER), b"x").unwrap();
        std::fs::write(tmp.path().join("old.bin"), b"data").unwrap();
        let dir = SoftDirectory::open(tmp.path()).unwrap();
        assert!(dir.is_dirty() && dir.is_marked());
        dir.checkpoint().unwrap();
        assert!(!dir.is_dirty());
        assert!(!tmp.path().join(MARKER).exists());
        assert!(tmp.path().join("old.bin").exists());
    }

    #[test]
    fn orphans_are_swept_and_live_segments_kept() {
        let tmp = tempfile::tempdir().unwrap();
        {
            let dir = SoftDirectory::open(tmp.path()).unwrap();
            let (schema, f) = {
                let mut b = tantivy::schema::Schema::builder();
                let f = b.add_text_field("t", tantivy::schema::TEXT);
                (b.build(), f)
            };
            let index = Index::create(dir.clone(), schema, Default::default()).unwrap();
            let mut w: tantivy::IndexWriter = index.writer_with_num_threads(1, 15 << 20).unwrap();
            w.add_document(tantivy::doc!(f => "kept")).unwrap();
            w.commit().unwrap();
            drop(w);
            dir.checkpoint().unwrap();
        }
        let orphan = "0123456789abcdef0123456789abcdef.idx";
        std::fs::write(tmp.path().join(orphan), b"left by a crash").unwrap();
        std::fs::write(tmp.path().join(format!("meta.json{TMP_SUFFIX}")), b"x").unwrap();
        let before = names(tmp.path());
        let dir = SoftDirectory::open(tmp.path()).unwrap();
        let index = Index::open(dir).unwrap();
        assert_eq!(sweep_orphans(&index, tmp.path()).unwrap(), 2);
        let after = names(tmp.path());
        assert_eq!(after.len() + 2, before.len(), "{before:?} -> {after:?}");
        let reader = index.reader().unwrap();
        assert_eq!(reader.searcher().num_docs(), 1);
    }
}
