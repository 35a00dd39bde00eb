//! Shared by the engine targets (`query`, `rest_bodies`): one store with a
//! small fixed set of conversations, opened once per fuzzing process, and a
//! worker thread with the stack of the server's threads that runs each
//! input against it.
//!
//! The server runs handlers on tokio threads and engine calls on its
//! blocking pool, both with tokio's default 2 MiB stacks; libFuzzer calls
//! the target on the main thread (8 MiB). Running every input on a 2 MiB
//! thread makes a recursion that would overflow the server's stack crash
//! here too.
//!
//! Panics: the engine's contract is that none reaches its caller, and it
//! turns some it cannot prevent (tantivy debug assertions) into errors with
//! `catch_unwind`. libfuzzer-sys' panic hook would abort on those anyway,
//! before any unwinding, so the worker installs its own: a panic on the
//! worker is recorded, and aborts the process (a crash for libFuzzer, with
//! its message and backtrace) only if it unwinds out of the engine into
//! the target. One the engine caught is printed once per source location.
//! `MEMDB_FUZZ_STRICT_PANICS=1` keeps libfuzzer-sys' hook: every panic,
//! caught or not, is a crash.

// Each target uses only part of this module.
#![allow(dead_code)]

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Mutex, OnceLock};

use memdb::{ConversationUpdate, Memdb, NewConversation, NewMessage, Status, Systems};
use uuid::Uuid;

/// tokio's default thread stack (workers and the blocking pool).
pub const SERVER_STACK: usize = 2 * 1024 * 1024;

/// The store every input of the process runs against.
pub struct Fixture {
    pub db: Memdb,
    /// The fixture conversations, in [`CONVERSATIONS`] order.
    pub ids: Vec<Uuid>,
    _dir: tempfile::TempDir,
}

/// Label, folder, importance, messages (role, text). Message times are in
/// 2021, so summaries of these conversations find nothing in their window
/// and persist nothing (the store does not grow).
const CONVERSATIONS: &[(&str, &str, u8, &[(&str, &str)])] = &[
    (
        "Rust lifetimes",
        "/work/rust",
        7,
        &[
            (
                "user",
                "How do lifetimes work with borrowed references in Rust?",
            ),
            (
                "assistant",
                "A lifetime names the region where a reference is valid; the borrow checker compares them.",
            ),
            (
                "user",
                "Why does the compiler say `x` does not live long enough?",
            ),
        ],
    ),
    (
        "Postgres tuning",
        "/work/db",
        5,
        &[
            (
                "user",
                "Which postgres settings matter for a write-heavy workload?",
            ),
            (
                "assistant",
                "Raise shared_buffers and max_wal_size; checkpoint_completion_target near 0.9.",
            ),
            (
                "system",
                "Answer concisely. Prefer SQL examples: SELECT * FROM pg_stat_bgwriter;",
            ),
        ],
    ),
    (
        "Sourdough",
        "/home/cooking",
        2,
        &[
            (
                "user",
                "My sourdough starter smells like acetone, is it dead?",
            ),
            (
                "assistant",
                "It is hungry, not dead: feed it twice a day at 1:1:1 flour, water and starter.",
            ),
            (
                "user",
                "Crème fraîche or yoghurt in the crumb? Über-soft naïve café bread.",
            ),
        ],
    ),
    (
        "Trip planning",
        "/home/travel",
        10,
        &[
            (
                "user",
                "Plan three days in Kyoto in April: temples, tea and the philosopher's path.",
            ),
            (
                "assistant",
                "Day 1 Fushimi Inari at dawn; day 2 Arashiyama bamboo grove; day 3 Gion.",
            ),
            (
                "user",
                "東京から京都まで新幹線で何分？ 2h15m, ticket ~14,000 yen",
            ),
        ],
    ),
];

fn open() -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = Memdb::open(dir.path()).expect("open the fixture store");
    let ids = (0..CONVERSATIONS.len()).map(|i| create(&db, i)).collect();
    db.flush().expect("flush the fixture store");
    Fixture { db, ids, _dir: dir }
}

/// Creates fixture conversation `i`; returns its id.
fn create(db: &Memdb, i: usize) -> Uuid {
    let (label, folder, importance, messages) = CONVERSATIONS[i];
    let messages = messages
        .iter()
        .enumerate()
        .map(|(j, (role, text))| {
            let mut m = NewMessage::new(*role, *text);
            let t = format!("2021-03-04T{:02}:{:02}:07Z", 8 + i, 10 * j);
            m.timestamp = Some(memdb::parse_timestamp(&t).expect("fixture timestamp"));
            m.metadata = Some(serde_json::json!({ "fixture": i, "turn": j }));
            m
        })
        .collect();
    let mut new = NewConversation::new(label, messages).in_folder(folder);
    new.importance_score = Some(importance);
    new.metadata = Some(serde_json::json!({ "source": "fuzz fixture" }));
    db.sekha().create_conversation(new)
        .expect("create a fixture conversation")
        .conversation
        .id
}

impl Fixture {
    /// Puts the fixture conversations back as [`CONVERSATIONS`] describes
    /// them after an input changed them (label, folder, importance, status),
    /// or re-creates one an input deleted (it gets a new id), so every input
    /// runs against the same store.
    pub fn restore(&mut self) {
        for i in 0..CONVERSATIONS.len() {
            let (label, folder, importance, _) = CONVERSATIONS[i];
            match self.db.sekha().get_conversation(self.ids[i]) {
                Ok(c) => {
                    if c.label != label
                        || c.folder != folder
                        || c.importance_score != importance
                        || c.status != Status::Active
                    {
                        let update = ConversationUpdate {
                            label: Some(label.into()),
                            folder: Some(folder.into()),
                            status: Some(Status::Active),
                            importance_score: Some(importance),
                            metadata: None,
                        };
                        self.db
                            .sekha()
                            .update_conversation(self.ids[i], update)
                            .expect("restore a fixture conversation");
                    }
                }
                Err(memdb::Error::NotFound { .. }) => self.ids[i] = create(&self.db, i),
                Err(e) => panic!("reading fixture conversation {i}: {e}"),
            }
        }
    }
}

type Job = Box<dyn FnOnce(&mut Fixture) + Send>;

struct Worker {
    jobs: SyncSender<Job>,
    done: Receiver<()>,
}

static WORKER: OnceLock<Mutex<Worker>> = OnceLock::new();

thread_local! {
    /// Set on the worker thread.
    static ON_WORKER: Cell<bool> = const { Cell::new(false) };
    /// The last panic on this thread: message, location and backtrace.
    static LAST_PANIC: RefCell<Option<(String, String)>> = const { RefCell::new(None) };
}

/// Records panics on the worker instead of aborting (see the module doc);
/// every other thread keeps the previous hook (libfuzzer-sys' abort).
fn install_panic_hook() {
    if std::env::var_os("MEMDB_FUZZ_STRICT_PANICS").is_some() {
        return;
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !ON_WORKER.get() {
            return previous(info);
        }
        let location = info
            .location()
            .map_or_else(|| "unknown location".to_string(), ToString::to_string);
        let report = format!("{info}\n{}", std::backtrace::Backtrace::force_capture());
        LAST_PANIC.set(Some((location, report)));
    }));
}

/// Runs one job: aborts if a panic unwinds out of it, and reports (once
/// per location) a panic that was caught inside it.
fn run_job(job: Job, fixture: &mut Fixture, caught: &mut HashSet<String>) {
    LAST_PANIC.set(None);
    let escaped = catch_unwind(AssertUnwindSafe(|| job(fixture))).is_err();
    let last = LAST_PANIC.take();
    if escaped {
        let (_, report) = last.unwrap_or_default();
        eprintln!("panic escaped into the fuzz target: {report}");
        std::process::abort();
    }
    if let Some((location, report)) = last
        && caught.insert(location)
    {
        eprintln!("note: a panic was caught inside the engine (not a crash): {report}");
    }
}

/// Runs `job` against the fixture store on the worker thread and waits.
pub fn run(job: impl FnOnce(&mut Fixture) + Send + 'static) {
    let worker = WORKER.get_or_init(|| {
        install_panic_hook();
        let (jobs, job_rx) = sync_channel::<Job>(0);
        let (done_tx, done) = sync_channel::<()>(0);
        std::thread::Builder::new()
            .name("fuzz-worker".into())
            .stack_size(SERVER_STACK)
            .spawn(move || {
                ON_WORKER.set(true);
                let mut fixture = open();
                let mut caught = HashSet::new();
                while let Ok(job) = job_rx.recv() {
                    run_job(job, &mut fixture, &mut caught);
                    if done_tx.send(()).is_err() {
                        break;
                    }
                }
            })
            .expect("spawn the worker thread");
        Mutex::new(Worker { jobs, done })
    });
    let w = worker.lock().unwrap_or_else(|e| e.into_inner());
    w.jobs.send(Box::new(job)).expect("worker alive");
    w.done.recv().expect("worker alive");
}
