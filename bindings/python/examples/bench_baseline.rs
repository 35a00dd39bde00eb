//! The Rust side of the Python package's benchmark (issue #58,
//! `benches/python/run.sh`): the same engine calls the `memdb` Python
//! package makes, from Rust, built with this crate's lockfile and release
//! profile so the engine is the one inside the wheel.
//!
//! ```text
//! bench_baseline insert --dir D --embedder none|hashing --input convs.json [--batch N]
//! bench_baseline search --dir D --embedder none|hashing --queries q.json
//!     --modes keyword,hybrid,semantic --repeat R
//! ```
//!
//! `insert` reads the conversations `benches/python/bench.py` wrote (the
//! dicts its `db.sekha.create_conversation` calls hand the engine) and stores
//! them one `Sekha::create_conversation` call each, as the Python package
//! does (`--batch N`: N per `Sekha::create_conversations` call, a bulk path
//! the package does not expose), then drains the embedding queue and flushes
//! the text index. `search` opens the store, runs every query once per mode
//! as a warm-up, then `repeat` timed passes of `Sekha::search` with the
//! request the Python layer builds (`{query, mode, limit: 10, offset: 0,
//! explain: false, filter: {}}`). Each prints one JSON object on stdout.

use std::path::PathBuf;
use std::time::Instant;

use memdb::{
    Config, EmbedderKind, EmbedderSettings, Memdb, NewConversation, SearchRequest, Systems,
};

fn die(msg: impl std::fmt::Display) -> ! {
    eprintln!("bench_baseline: {msg}");
    std::process::exit(2)
}

/// `--name value` arguments.
struct Args(Vec<String>);

impl Args {
    fn get(&self, name: &str) -> Option<String> {
        let flag = format!("--{name}");
        self.0.iter().position(|a| *a == flag).map(|i| {
            self.0
                .get(i + 1)
                .cloned()
                .unwrap_or_else(|| die(format!("{flag} needs a value")))
        })
    }
    fn need(&self, name: &str) -> String {
        self.get(name)
            .unwrap_or_else(|| die(format!("--{name} is required")))
    }
}

/// Opens the store as `memdb._native.Store.open` does (embedder selection,
/// default config, no malloc-arena limit).
fn open(dir: &PathBuf, embedder: &str) -> Memdb {
    let kind: EmbedderKind = embedder.parse().unwrap_or_else(|e| die(e));
    let selected = memdb::select_embedder(&EmbedderSettings {
        kind,
        stored: Memdb::stored_message_model(dir),
        ..EmbedderSettings::default()
    })
    .unwrap_or_else(|e| die(e));
    let mut config = Config::default();
    config.embedder = selected.embedder;
    Memdb::open_with(dir, config).unwrap_or_else(|e| die(e))
}

fn pct(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn insert(args: &Args) {
    let dir = PathBuf::from(args.need("dir"));
    let embedder = args.need("embedder");
    let batch: usize = args
        .get("batch")
        .map_or(1, |b| b.parse().unwrap_or_else(|e| die(e)));
    let bytes = std::fs::read(args.need("input")).unwrap_or_else(|e| die(e));
    let convs: Vec<NewConversation> = serde_json::from_slice(&bytes).unwrap_or_else(|e| die(e));
    let messages: usize = convs.iter().map(|c| c.messages.len()).sum();
    let conversations = convs.len();
    let db = open(&dir, &embedder);
    let t = Instant::now();
    if batch <= 1 {
        for c in convs {
            db.sekha().create_conversation(c).unwrap_or_else(|e| die(e));
        }
    } else {
        let mut it = convs.into_iter().peekable();
        while it.peek().is_some() {
            let chunk: Vec<NewConversation> = it.by_ref().take(batch).collect();
            db.sekha()
                .create_conversations(chunk)
                .unwrap_or_else(|e| die(e));
        }
    }
    let create_s = t.elapsed().as_secs_f64();
    if db.config().embedder.is_some() {
        db.embed_pending(None, &mut |_| {})
            .unwrap_or_else(|e| die(e));
    }
    db.flush().unwrap_or_else(|e| die(e));
    let total_s = t.elapsed().as_secs_f64();
    db.close().unwrap_or_else(|e| die(e));
    println!(
        "{}",
        serde_json::json!({
            "side": "rust", "embedder": embedder, "batch": batch,
            "conversations": conversations, "messages": messages,
            "create_s": create_s, "total_s": total_s,
        })
    );
}

fn search(args: &Args) {
    let dir = PathBuf::from(args.need("dir"));
    let embedder = args.need("embedder");
    let repeat: usize = args
        .get("repeat")
        .map_or(5, |r| r.parse().unwrap_or_else(|e| die(e)));
    let modes = args.get("modes").unwrap_or_else(|| "keyword".into());
    let bytes = std::fs::read(args.need("queries")).unwrap_or_else(|e| die(e));
    let queries: Vec<String> = serde_json::from_slice(&bytes).unwrap_or_else(|e| die(e));
    let db = open(&dir, &embedder);
    let mut out = serde_json::Map::new();
    for mode in modes.split(',') {
        // The request the Python layer sends, read by the same serde code.
        let requests: Vec<SearchRequest> = queries
            .iter()
            .map(|q| {
                serde_json::from_value(serde_json::json!({
                    "query": q, "mode": mode, "limit": 10, "offset": 0,
                    "explain": false, "filter": {},
                }))
                .unwrap_or_else(|e| die(e))
            })
            .collect();
        let mut hits = 0usize;
        for r in &requests {
            hits += db.sekha().search(r).unwrap_or_else(|e| die(e)).hits.len();
        }
        let mut us = Vec::with_capacity(requests.len() * repeat);
        for _ in 0..repeat {
            for r in &requests {
                let t = Instant::now();
                let res = db.sekha().search(r).unwrap_or_else(|e| die(e));
                us.push(t.elapsed().as_secs_f64() * 1e6);
                std::hint::black_box(res);
            }
        }
        us.sort_by(f64::total_cmp);
        let mean = us.iter().sum::<f64>() / us.len() as f64;
        out.insert(
            mode.to_string(),
            serde_json::json!({
                "n": us.len(), "p50_us": pct(&us, 0.5), "p90_us": pct(&us, 0.9),
                "p99_us": pct(&us, 0.99), "mean_us": mean,
                "hits_per_query": hits as f64 / requests.len() as f64,
            }),
        );
    }
    db.close().unwrap_or_else(|e| die(e));
    println!("{}", serde_json::Value::Object(out));
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = argv.first().cloned() else {
        die("usage: bench_baseline insert|search --dir D ...")
    };
    let args = Args(argv);
    match cmd.as_str() {
        "insert" => insert(&args),
        "search" => search(&args),
        other => die(format!("unknown command {other:?}")),
    }
}
