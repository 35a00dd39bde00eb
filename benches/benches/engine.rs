//! Criterion benchmarks of the engine's hot calls.
//!
//! ```text
//! cargo bench -p memdb-benches --bench engine
//! ```
//!
//! - `create_conversation/10_messages`: one durable write of a conversation
//!   with 10 messages into a store that grows as the bench runs;
//! - `search_text/*`: top-10 BM25 search on a prebuilt store of about 20,000
//!   messages, one group member per query kind, cycling through 300 seeded
//!   queries drawn from the corpus;
//! - `list_conversations/*`: the first page (50) of all conversations, and of
//!   one folder among several.
//!
//! The store is built from chitchat when `benches/data/dataset.json` exists
//! (`benches/fetch-data.sh`), else from generated text, so the bench runs
//! anywhere; the source is printed at start, and numbers from the two are not
//! comparable.

use memdb::Systems;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion};
use memdb::{Filter, Memdb, NewConversation, Page, TextQuery};
use memdb_benches::corpus::{self, Corpus};
use memdb_benches::queries::{self, QueryKind};

/// Messages in the search/list store.
const STORE_MESSAGES: usize = 20_000;

fn bench_create(c: &mut Criterion, corpus: &Corpus) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Memdb::open(dir.path()).expect("open");
    // Conversations of exactly 10 messages, cut from the corpus in order.
    let all: Vec<&corpus::Message> = corpus.messages().collect();
    let convs: Vec<NewConversation> = all
        .chunks_exact(10)
        .take(500)
        .enumerate()
        .map(|(i, ms)| {
            corpus::Conversation {
                label: format!("bench {i}"),
                folder: corpus::FOLDER.to_string(),
                messages: ms.iter().map(|m| (*m).clone()).collect(),
            }
            .to_new()
        })
        .collect();
    let mut g = c.benchmark_group("create_conversation");
    g.sample_size(20).measurement_time(Duration::from_secs(5));
    let mut i = 0usize;
    g.bench_function("10_messages", |b| {
        b.iter(|| {
            let new = convs[i % convs.len()].clone();
            i += 1;
            black_box(db.sekha().create_conversation(new).expect("create"))
        })
    });
    g.finish();
}

fn build_store(corpus: &Corpus) -> (tempfile::TempDir, Memdb) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Memdb::open(dir.path()).expect("open");
    for (i, c) in corpus.conversations.iter().enumerate() {
        let mut new = c.to_new();
        // Spread conversations over four folders for the filtered listing.
        new.folder = Some(format!("{}/{}", corpus::FOLDER, i % 4));
        db.sekha().create_conversation(new).expect("create");
    }
    // Commit the text index before timing searches.
    db.sekha()
        .search_text(&TextQuery::new("warmup"))
        .expect("search");
    (dir, db)
}

fn bench_search(c: &mut Criterion, db: &Memdb, corpus: &Corpus) {
    let set = queries::generate(corpus, 300, 42);
    let mut g = c.benchmark_group("search_text");
    g.sample_size(20).measurement_time(Duration::from_secs(4));
    for kind in QueryKind::ALL {
        let qs: Vec<TextQuery> = set
            .iter()
            .filter(|q| q.kind == kind)
            .map(|q| TextQuery::new(q.memdb.as_str()))
            .collect();
        let mut i = 0usize;
        g.bench_function(BenchmarkId::new("top10", kind.name()), |b| {
            b.iter(|| {
                let q = &qs[i % qs.len()];
                i += 1;
                black_box(db.sekha().search_text(q).expect("search"))
            })
        });
    }
    g.finish();
}

fn bench_list(c: &mut Criterion, db: &Memdb) {
    let mut g = c.benchmark_group("list_conversations");
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    let page = Page {
        offset: 0,
        limit: 50,
    };
    g.bench_function("first_page_50", |b| {
        b.iter(|| {
            black_box(
                db.sekha()
                    .list_conversations(&Filter::default(), page)
                    .expect("list"),
            )
        })
    });
    let folder = Filter {
        folder: Some(format!("{}/1", corpus::FOLDER)),
        ..Filter::default()
    };
    g.bench_function("folder_first_page_50", |b| {
        b.iter(|| black_box(db.sekha().list_conversations(&folder, page).expect("list")))
    });
    g.finish();
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs each
    // bench once as a smoke test, on a small store.
    let messages = if std::env::args().any(|a| a == "--bench") {
        STORE_MESSAGES
    } else {
        2_000
    };
    let path = corpus::default_data_path();
    let base = corpus::load_or_generate(&path, messages).expect("corpus");
    let corpus = base.sized(messages);
    drop(base);
    eprintln!(
        "engine bench: corpus {} ({} messages, {} conversations){}",
        corpus.source,
        corpus.message_count(),
        corpus.conversations.len(),
        if corpus.source == "generated" {
            "; run benches/fetch-data.sh for chitchat"
        } else {
            ""
        }
    );
    let mut c = Criterion::default().configure_from_args();
    bench_create(&mut c, &corpus);
    let (_dir, db) = build_store(&corpus);
    bench_search(&mut c, &db, &corpus);
    bench_list(&mut c, &db);
    c.final_summary();
}
