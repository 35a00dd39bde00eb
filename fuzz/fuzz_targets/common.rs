//! Shared by the engine targets (`query`, `rest_bodies`): one store with a
//! small fixed set of conversations, opened once per fuzzing process, and a
//! worker thread with the stack of the server's threads that runs each
//! input against it.
//!
//! The server runs handlers on tokio threads and engine calls on its
//! blocking pool, both with tokio's default 2 MiB stacks; libFuzzer calls
//! the target on the main thread (8 MiB). Running every input on a 2 MiB
//! thread makes a recursion that would overflow the server's stack crash
//! here too. A panic on the worker aborts the process (libfuzzer-sys'
//! panic hook), so libFuzzer records it like one on the main thread.

// Each target uses only part of this module.
#![allow(dead_code)]

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Mutex, OnceLock};

use memdb::{ConversationUpdate, Memdb, NewConversation, NewMessage, Status};
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
    db.create_conversation(new)
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
            match self.db.get_conversation(self.ids[i]) {
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

/// Runs `job` against the fixture store on the worker thread and waits.
pub fn run(job: impl FnOnce(&mut Fixture) + Send + 'static) {
    let worker = WORKER.get_or_init(|| {
        let (jobs, job_rx) = sync_channel::<Job>(0);
        let (done_tx, done) = sync_channel::<()>(0);
        std::thread::Builder::new()
            .name("fuzz-worker".into())
            .stack_size(SERVER_STACK)
            .spawn(move || {
                let mut fixture = open();
                while let Ok(job) = job_rx.recv() {
                    job(&mut fixture);
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
