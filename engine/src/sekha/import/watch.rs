//! The watched import folder (SPEC.md §11.1): export files dropped into a
//! folder are imported and moved out of it, through the shared folder
//! watcher (`util/watch.rs`: notify events, the polling fallback).
//!
//! A pass ([`import_folder`]) looks at the folder's files (not its
//! subfolders) with an import extension ([`super::EXTENSIONS`]), oldest
//! first. A file changed less than [`SETTLE`] ago is left for a moment
//! (it may still be being written; the watcher looks again soon). A file
//! that imports is moved to the imported folder (`DIR/imported/` unless
//! another is named) as `<YYYYMMDD_HHMMSS>_<name>` (UTC; `_2`, `_3`, ...
//! after the time when that name is taken). A file that fails is left in
//! place, its error logged once and reported, and not read again until
//! its size or modification time changes.

use crate::sekha::Sekha;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use super::{ChatFormat, ChatImportReport, has_import_extension};
use crate::db::Memdb;
use crate::error::{Error, Result};
use crate::util::watch::{FolderWatcher, Resync, WatchJob, WatchStats};

/// How long a file must be unchanged before it is read (Sekha waits
/// 500 ms after an event).
pub const SETTLE: Duration = Duration::from_millis(500);
/// The polling fallback's default interval.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);
/// The imported folder's name inside the watched folder (the default).
pub const IMPORTED_DIR: &str = "imported";

/// Where the watcher looks and what it does with files.
#[derive(Debug, Clone)]
pub struct ImportFolder {
    /// The watched folder (created when missing).
    pub dir: PathBuf,
    /// Where imported files go; `dir/imported` when `None` (created when missing).
    pub imported_dir: Option<PathBuf>,
    /// The format to read every file as; `None` detects each.
    pub format: Option<ChatFormat>,
}

impl ImportFolder {
    /// A folder whose files are detected and moved to `dir/imported`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ImportFolder {
            dir: dir.into(),
            imported_dir: None,
            format: None,
        }
    }

    /// The folder imported files are moved to.
    pub fn imported(&self) -> PathBuf {
        self.imported_dir
            .clone()
            .unwrap_or_else(|| self.dir.join(IMPORTED_DIR))
    }

    /// Creates both folders when missing.
    pub fn create(&self) -> Result<()> {
        for d in [self.dir.clone(), self.imported()] {
            std::fs::create_dir_all(&d).map_err(Error::io(&d))?;
        }
        Ok(())
    }
}

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
pub enum FileOutcome {
    /// Imported; moved to `moved_to` (`None` when the move failed: then
    /// `move_error` says why, and the file is not imported again by this
    /// process).
    Imported {
        /// What was stored.
        report: ChatImportReport,
        /// Its new path.
        moved_to: Option<PathBuf>,
        /// Why it could not be moved.
        move_error: Option<String>,
    },
    /// Not imported (nothing stored); left in place.
    Failed {
        /// The file.
        file: PathBuf,
        /// The error, naming the file and the problem.
        error: String,
    },
}

/// What a pass remembers between passes: files that failed, and files
/// imported but not moved, by (size, modification time).
#[derive(Debug, Default)]
pub struct PassMemory {
    seen: HashMap<PathBuf, (u64, Option<SystemTime>)>,
}

/// One pass over the folder: every settled file imported (and moved) or
/// failed (and left). Returns the outcomes and whether a file was left to
/// settle.
pub fn import_folder(
    db: &Memdb,
    folder: &ImportFolder,
    memory: &mut PassMemory,
) -> Result<(Vec<FileOutcome>, bool)> {
    let entries = std::fs::read_dir(&folder.dir).map_err(Error::io(&folder.dir))?;
    let mut files: Vec<(Option<SystemTime>, PathBuf, u64)> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(Error::io(&folder.dir))?;
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if hidden || !has_import_extension(&path) {
            continue;
        }
        // Not followed: a link in the folder could point anywhere (SPEC
        // §11.1); a link is skipped like any other non-file.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue; // gone since the listing
        };
        if meta.is_file() {
            files.push((meta.modified().ok(), path, meta.len()));
        }
    }
    files.sort();
    memory
        .seen
        .retain(|p, _| files.iter().any(|(_, f, _)| f == p));
    let mut out = Vec::new();
    let mut unsettled = false;
    let now = SystemTime::now();
    for (mtime, path, len) in files {
        if memory.seen.get(&path) == Some(&(len, mtime)) {
            continue;
        }
        // A modification time in the future (a skewed clock, an archive's
        // stamps) cannot say whether the file is still being written: it
        // is read, rather than waited for forever.
        if mtime.is_some_and(|t| now.duration_since(t).is_ok_and(|age| age < SETTLE)) {
            unsettled = true;
            continue;
        }
        match Sekha::new(db).import_chat_file(&path, folder.format) {
            Ok(report) => {
                let (moved_to, move_error) = match move_imported(&path, &folder.imported()) {
                    Ok(to) => (Some(to), None),
                    Err(e) => {
                        memory.seen.insert(path.clone(), (len, mtime));
                        (None, Some(e.to_string()))
                    }
                };
                out.push(FileOutcome::Imported {
                    report,
                    moved_to,
                    move_error,
                });
            }
            Err(e) => {
                memory.seen.insert(path.clone(), (len, mtime));
                out.push(FileOutcome::Failed {
                    file: path,
                    error: e.to_string(),
                });
            }
        }
    }
    Ok((out, unsettled))
}

/// Moves an imported file into `to_dir` as `<YYYYMMDD_HHMMSS>_<name>`
/// (a rename; a copy and remove across filesystems).
pub fn move_imported(path: &Path, to_dir: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(to_dir).map_err(Error::io(to_dir))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stamp = chrono::Utc::now().format("%Y%m%d_%H%M%S").to_string();
    let mut target = to_dir.join(format!("{stamp}_{name}"));
    let mut n = 2;
    while target.exists() {
        target = to_dir.join(format!("{stamp}_{n}_{name}"));
        n += 1;
    }
    if std::fs::rename(path, &target).is_err() {
        std::fs::copy(path, &target).map_err(Error::io(&target))?;
        std::fs::remove_file(path).map_err(Error::io(path))?;
    }
    Ok(target)
}

/// A callback told of each file's outcome (on the watcher's thread).
pub type OnFile = Box<dyn Fn(&FileOutcome) + Send>;

/// The running import-folder watcher; dropping it stops it after its
/// current file.
pub struct ImportWatcher {
    inner: FolderWatcher,
}

impl ImportWatcher {
    /// Creates the folders and starts watching: files are imported on
    /// change events and, as the fallback, every `interval` (the first
    /// pass at once, so files already there are imported). Each outcome is
    /// logged and passed to `on_file`.
    pub fn spawn(
        db: Memdb,
        folder: ImportFolder,
        interval: Duration,
        on_file: Option<OnFile>,
    ) -> Result<ImportWatcher> {
        folder.create()?;
        let job = ImportJob {
            db,
            folder,
            memory: PassMemory::default(),
            on_file,
            failing: false,
        };
        Ok(ImportWatcher {
            inner: FolderWatcher::spawn(job, interval)?,
        })
    }

    /// The watcher's counters (`parsed`: files imported; `failures`:
    /// files that failed, and passes that could not read the folder).
    pub fn stats(&self) -> &WatchStats {
        self.inner.stats()
    }
}

struct ImportJob {
    db: Memdb,
    folder: ImportFolder,
    memory: PassMemory,
    on_file: Option<OnFile>,
    /// Whether the last pass could not read the folder (logged once).
    failing: bool,
}

const KEY: &str = "import";

impl WatchJob for ImportJob {
    fn name(&self) -> &'static str {
        "import"
    }

    fn recursive(&self) -> bool {
        false
    }

    fn folders(&mut self, _stats: &WatchStats) -> Option<Vec<(PathBuf, String)>> {
        Some(vec![(self.folder.dir.clone(), KEY.to_string())])
    }

    fn sync(&mut self, _key: &str, stats: &WatchStats) -> Resync {
        let (outcomes, unsettled) = match import_folder(&self.db, &self.folder, &mut self.memory) {
            Ok(r) => {
                self.failing = false;
                r
            }
            Err(e) => {
                if !self.failing {
                    stats.failures.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %e, "import folder cannot be read; retried next trigger");
                }
                self.failing = true;
                return Resync::No;
            }
        };
        for o in &outcomes {
            match o {
                FileOutcome::Imported {
                    report,
                    moved_to,
                    move_error,
                } => {
                    stats.parsed.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(file = %report.file, format = %report.format,
                        conversations = report.conversations, messages = report.messages,
                        moved_to = ?moved_to, "imported");
                    if let Some(e) = move_error {
                        tracing::error!(file = %report.file, error = %e,
                            "imported but not moved; it is not imported again by this process");
                    }
                }
                FileOutcome::Failed { error, .. } => {
                    stats.failures.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(error = %error, "import failed; the file is left in place");
                }
            }
            if let Some(f) = &self.on_file {
                f(o);
            }
        }
        if unsettled { Resync::Soon } else { Resync::No }
    }
}
