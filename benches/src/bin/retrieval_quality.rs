//! `retrieval_quality`: recall@10 and MRR@10 of memdb's keyword, semantic
//! and hybrid search on real chat data, with queries whose answer is known.
//!
//! ```text
//! benches/quality/run.sh            # fetches data, installs model and WordNet, runs
//! cargo run --release -p memdb-benches --bin retrieval_quality -- --conversations 1000
//! ```
//!
//! 1. Loads the chitchat corpus (`benches/fetch-data.sh`) and picks
//!    `--conversations` of its conversations at random with `--seed` (kept in
//!    corpus order).
//! 2. Stores them in a memdb store under `--dir` with the local MiniLM model
//!    as the embedder: `create_conversations` in batches of about 20,000
//!    messages with `embed_on_write` off, then one `embed_pending` pass. The
//!    store and its message ids (`ids.json`) are kept, so a rerun with the
//!    same subset skips the import and the embedding.
//! 3. Builds the query sets of `memdb_benches::quality` (reference,
//!    reworded, synonyms; `--queries` each) and runs each query in keyword,
//!    semantic and hybrid mode (default fusion weights), then hybrid with a
//!    few other fusion settings, top 10.
//! 4. Prints, per set and mode, recall@10 and MRR@10, whether hybrid is at
//!    least as good as the better single mode, and where hybrid lost or
//!    gained targets against each single mode; `--json PATH` writes the same.

use memdb::Systems;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use clap::Parser;
use memdb::{
    Config, FusionMethod, FusionWeights, LocalOnnx, LocalOnnxOptions, Memdb, SearchMode,
    SearchRequest,
};
use memdb_benches::corpus::{self, Corpus};
use memdb_benches::quality::{self, Pos, Query, Scores};
use memdb_benches::wordnet::WordNet;
use memdb_benches::{Rng, disk_usage};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Retrieval quality of keyword, semantic and hybrid search on chitchat.
#[derive(Debug, Parser)]
struct Args {
    /// Conversations to store (chitchat has 7,168; about 37 messages each).
    /// Embedding is the cost: about 155 messages per CPU-second.
    #[arg(long, default_value_t = 1000)]
    conversations: usize,
    /// Queries per set.
    #[arg(long, default_value_t = 500)]
    queries: usize,
    /// Seed of the subset and of the query sets.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// chitchat dataset.json (default: benches/data/dataset.json).
    #[arg(long)]
    data: Option<PathBuf>,
    /// Store directory (default: benches/data/quality/c<N>-s<seed>[-int8]-<passage>,
    /// so each passage rule gets its own store); reused when it holds the
    /// same subset.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Models directory (default: memdb's, see scripts/install-model.sh).
    #[arg(long)]
    models: Option<PathBuf>,
    /// ONNX Runtime intra-op threads of the embedder.
    #[arg(long, default_value_t = 1)]
    intra_threads: usize,
    /// Run the model's products in floats (the export's graph) instead of
    /// int8; a store keeps the model it was built with, so give each its
    /// own `--dir`.
    #[arg(long)]
    float: bool,
    /// The local model (`minilm`, `e5-small-v2`; default the engine's). A
    /// store keeps its model: the default store directory names it.
    #[arg(long, value_parser = parse_model)]
    model: Option<memdb::LocalModel>,
    /// Passage rule of the message space (`turn`, `with-previous`,
    /// `with-neighbours`; default the engine's) for a new store. A store
    /// built before keeps its rule: with `--dir`, give each rule its own.
    #[arg(long, value_parser = parse_passage)]
    passage: Option<memdb::Passage>,
    /// WordNet database directory (Debian's wordnet-base); the synonyms set
    /// is skipped when it is missing.
    #[arg(long, default_value = "/usr/share/wordnet")]
    wordnet: PathBuf,
    /// Print this many queries of each set with their targets.
    #[arg(long, default_value_t = 0)]
    show: usize,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write every query's hybrid candidates with both signals (JSON lines:
    /// keyword and semantic rankings 50 deep, each candidate's BM25 and
    /// cosine) to this file, to study fusions offline.
    #[arg(long)]
    dump: Option<PathBuf>,
    /// Depth of the rankings in `--dump` (the engine's is 50 for a top 10).
    #[arg(long, default_value_t = DEPTH)]
    dump_depth: usize,
}

fn parse_passage(s: &str) -> Result<memdb::Passage, String> {
    memdb::Passage::parse(s).map_err(|e| e.to_string())
}

/// What `ids.json` records about a stored subset.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct StoredSubset {
    conversations: usize,
    seed: u64,
    messages: usize,
    /// Message ids per conversation, in corpus order.
    ids: Vec<Vec<Uuid>>,
}

/// One ranking configuration.
#[derive(Debug, Clone, Copy)]
struct Setting {
    name: &'static str,
    mode: SearchMode,
    weights: FusionWeights,
}

const fn hybrid(
    name: &'static str,
    method: FusionMethod,
    keyword: f32,
    semantic: f32,
    rrf_k: f32,
) -> Setting {
    Setting {
        name,
        mode: SearchMode::Hybrid,
        weights: FusionWeights {
            keyword,
            semantic,
            rrf_k,
            method,
            ..DEFAULT_WEIGHTS
        },
    }
}

const DEFAULT_WEIGHTS: FusionWeights = FusionWeights {
    keyword: 1.0,
    semantic: memdb::DEFAULT_SEMANTIC_WEIGHT,
    rrf_k: 60.0,
    method: FusionMethod::RelativeScore,
    neighbours: 0.5,
    answers: memdb::DEFAULT_ANSWERS,
    second_neighbours: memdb::DEFAULT_SECOND_NEIGHBOURS,
    per_conversation: 0,
    coverage: memdb::DEFAULT_COVERAGE,
    speaker: memdb::DEFAULT_SPEAKER,
    questions: memdb::DEFAULT_QUESTIONS,
    short_turns: memdb::DEFAULT_SHORT_TURNS,
    previous_turn: memdb::DEFAULT_PREVIOUS_TURN,
    question_lift: memdb::DEFAULT_QUESTION_LIFT,
    session_mass: memdb::DEFAULT_SESSION_MASS,
    session_tail: memdb::DEFAULT_SESSION_TAIL,
    session_tail_ratio: memdb::DEFAULT_SESSION_TAIL_RATIO,
};

/// The settings every set is run with: the three modes at their defaults,
/// then other hybrid fusion settings (for the diagnosis, not the verdict).
const SETTINGS: [Setting; 15] = [
    Setting {
        name: "keyword",
        mode: SearchMode::Keyword,
        weights: DEFAULT_WEIGHTS,
    },
    Setting {
        name: "semantic",
        mode: SearchMode::Semantic,
        weights: DEFAULT_WEIGHTS,
    },
    hybrid(
        "hybrid",
        FusionMethod::RelativeScore,
        1.0,
        memdb::DEFAULT_SEMANTIC_WEIGHT,
        60.0,
    ),
    hybrid(
        "hybrid relative sem=1 (before)",
        FusionMethod::RelativeScore,
        1.0,
        1.0,
        60.0,
    ),
    hybrid(
        "hybrid relative kw=2",
        FusionMethod::RelativeScore,
        2.0,
        1.0,
        60.0,
    ),
    hybrid(
        "hybrid relative sem=0.7",
        FusionMethod::RelativeScore,
        1.0,
        0.7,
        60.0,
    ),
    hybrid(
        "hybrid relative sem=0.3",
        FusionMethod::RelativeScore,
        1.0,
        0.3,
        60.0,
    ),
    hybrid(
        "hybrid relative sem=2",
        FusionMethod::RelativeScore,
        1.0,
        2.0,
        60.0,
    ),
    Setting {
        name: "hybrid coverage=0 (before)",
        mode: SearchMode::Hybrid,
        weights: FusionWeights {
            coverage: 0.0,
            ..DEFAULT_WEIGHTS
        },
    },
    Setting {
        name: "hybrid previous_turn=0 (before)",
        mode: SearchMode::Hybrid,
        weights: FusionWeights {
            previous_turn: 0.0,
            ..DEFAULT_WEIGHTS
        },
    },
    Setting {
        name: "hybrid no session pass (before)",
        mode: SearchMode::Hybrid,
        weights: FusionWeights {
            session_mass: 0.0,
            session_tail: 0,
            ..DEFAULT_WEIGHTS
        },
    },
    Setting {
        name: "hybrid no neighbours",
        mode: SearchMode::Hybrid,
        weights: FusionWeights {
            neighbours: 0.0,
            ..DEFAULT_WEIGHTS
        },
    },
    hybrid("hybrid rrf k=60", FusionMethod::Rrf, 1.0, 1.0, 60.0),
    hybrid("hybrid rrf k=10", FusionMethod::Rrf, 1.0, 1.0, 10.0),
    hybrid("hybrid rrf sem=2 k=10", FusionMethod::Rrf, 1.0, 2.0, 10.0),
];

#[derive(Debug, Serialize)]
struct SettingResult {
    setting: String,
    recall_at_10: f64,
    mrr_at_10: f64,
    errors: usize,
}

#[derive(Debug, Serialize)]
struct SetResult {
    set: &'static str,
    queries: usize,
    results: Vec<SettingResult>,
    /// Hybrid (default weights) recall minus the better single mode's.
    hybrid_margin: f64,
    /// Targets in the single mode's top 10 but not hybrid's, and the reverse.
    lost_vs_keyword: usize,
    gained_vs_keyword: usize,
    lost_vs_semantic: usize,
    gained_vs_semantic: usize,
    examples: Vec<(String, String)>,
    /// Fusions replayed in the harness from the single-mode rankings.
    replayed: Vec<SettingResult>,
}

#[derive(Debug, Serialize)]
struct Report {
    conversations: usize,
    messages: usize,
    seed: u64,
    import_secs: Option<f64>,
    embed_secs: Option<f64>,
    embed_per_sec: Option<f64>,
    store_bytes: u64,
    sets: Vec<SetResult>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let data = args.data.clone().unwrap_or_else(corpus::default_data_path);
    let full = corpus::load_chitchat(&data)?;
    let subset = pick(&full, args.conversations, args.seed);
    let messages = subset.message_count();
    eprintln!(
        "subset: {} conversations, {messages} messages (seed {})",
        subset.conversations.len(),
        args.seed
    );

    let models = match &args.models {
        Some(m) => m.clone(),
        None => memdb::default_models_dir()?,
    };
    let model = LocalOnnx::open_with(
        &models,
        LocalOnnxOptions::default()
            .model(args.model.unwrap_or_default())
            .intra_threads(args.intra_threads)
            .precision(if args.float {
                memdb::LocalPrecision::Float
            } else {
                memdb::LocalPrecision::Int8
            }),
    )
    .with_context(|| format!("loading the model from {}", models.display()))?;
    let model: Arc<LocalOnnx> = Arc::new(model);
    let mut config = Config::with_embedder(model.clone());
    config.embed_on_write = false;
    if let Some(p) = args.passage {
        config.message_passage = p;
    }

    let dir = args.dir.clone().unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
            "data/quality/c{}-s{}{}-{}",
            args.conversations,
            args.seed,
            match args.model.unwrap_or_default() {
                memdb::LocalModel::MiniLm if args.float => "".to_string(),
                memdb::LocalModel::MiniLm => "-int8".to_string(),
                other => format!("-{}", other.as_str()),
            },
            config.message_passage.name()
        ))
    });
    let (db, ids, import_secs, embed_secs) = open_or_build(&dir, config, &subset, &args)?;
    let id_of = |(ci, mi): Pos| ids.ids[ci][mi];
    let mut report = Report {
        conversations: subset.conversations.len(),
        messages,
        seed: args.seed,
        import_secs,
        embed_secs,
        embed_per_sec: embed_secs.map(|s| messages as f64 / s),
        store_bytes: disk_usage(&dir),
        sets: Vec::new(),
    };

    let mut sets: Vec<(&'static str, Vec<Query>)> = vec![
        (
            "reference",
            quality::reference(&subset, args.queries, args.seed),
        ),
        (
            "reworded",
            quality::reworded(&subset, args.queries, args.seed + 1),
        ),
    ];
    match WordNet::load(&args.wordnet) {
        Ok(wn) => sets.push((
            "synonyms",
            quality::synonyms(&subset, &wn, args.queries, args.seed + 2),
        )),
        Err(e) => eprintln!("synonyms set skipped: {e:#}"),
    }

    if let Some(path) = &args.dump {
        let mut out = String::new();
        for (name, queries) in &sets {
            for q in queries {
                let line = dump_query(&db, model.as_ref(), name, q, &id_of, args.dump_depth)?;
                out.push_str(&line.to_string());
                out.push('\n');
            }
            eprintln!("{name}: dumped {} queries", queries.len());
        }
        std::fs::write(path, out).with_context(|| format!("writing {}", path.display()))?;
    }

    for (name, queries) in &sets {
        for q in queries.iter().take(args.show) {
            println!(
                "{name}: {:?} -> {:?}",
                q.text,
                plain_target(&subset, q.target)
            );
        }
        let t = Instant::now();
        let mut ranks: Vec<Vec<Option<usize>>> = Vec::new();
        let mut results = Vec::new();
        for s in SETTINGS {
            let mut errors = 0;
            let r: Vec<Option<usize>> = queries
                .iter()
                .map(|q| {
                    rank_of(&db, q, s, &id_of).unwrap_or_else(|e| {
                        if errors == 0 {
                            eprintln!("{name}/{}: {:?}: {e}", s.name, q.text);
                        }
                        errors += 1;
                        None
                    })
                })
                .collect();
            let sc = Scores::from_ranks(&r);
            results.push(SettingResult {
                setting: s.name.to_string(),
                recall_at_10: sc.recall,
                mrr_at_10: sc.mrr,
                errors,
            });
            ranks.push(r);
        }
        let found = |i: usize, q: usize| ranks[i][q].is_some();
        let count = |a: usize, b: usize| {
            (0..queries.len())
                .filter(|&q| found(a, q) && !found(b, q))
                .count()
        };
        let examples = (0..queries.len())
            .filter(|&q| (found(0, q) || found(1, q)) && !found(2, q))
            .take(5)
            .map(|q| {
                (
                    queries[q].text.clone(),
                    plain_target(&subset, queries[q].target),
                )
            })
            .collect();
        let replayed = replay(&db, queries, &id_of)?;
        let best_single = results[0].recall_at_10.max(results[1].recall_at_10);
        let set = SetResult {
            set: name,
            queries: queries.len(),
            hybrid_margin: results[2].recall_at_10 - best_single,
            lost_vs_keyword: count(0, 2),
            gained_vs_keyword: count(2, 0),
            lost_vs_semantic: count(1, 2),
            gained_vs_semantic: count(2, 1),
            results,
            examples,
            replayed,
        };
        eprintln!(
            "{name}: {} queries x {} settings in {:.1}s",
            queries.len(),
            SETTINGS.len(),
            t.elapsed().as_secs_f64()
        );
        report.sets.push(set);
    }

    print_report(&report);
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// `n` conversations of `corpus` drawn with `seed`, in corpus order.
fn pick(corpus: &Corpus, n: usize, seed: u64) -> Corpus {
    let mut idx: Vec<usize> = (0..corpus.conversations.len()).collect();
    let mut rng = Rng::new(seed);
    for i in (1..idx.len()).rev() {
        let j = rng.below(i + 1);
        idx.swap(i, j);
    }
    idx.truncate(n);
    idx.sort_unstable();
    Corpus {
        conversations: idx
            .into_iter()
            .map(|i| corpus.conversations[i].clone())
            .collect(),
        source: corpus.source,
    }
}

type Opened = (Memdb, StoredSubset, Option<f64>, Option<f64>);

/// Opens the store of this subset at `dir`, or builds it: bulk import with
/// embedding off, then one embedding pass.
fn open_or_build(
    dir: &Path,
    config: Config,
    subset: &Corpus,
    args: &Args,
) -> anyhow::Result<Opened> {
    let ids_path = dir.join("ids.json");
    let messages = subset.message_count();
    if let Ok(bytes) = std::fs::read(&ids_path) {
        let stored: StoredSubset = serde_json::from_slice(&bytes)?;
        if stored.conversations == args.conversations
            && stored.seed == args.seed
            && stored.messages == messages
        {
            let db = Memdb::open_with(dir, config)?;
            let left = db.embed_pending(None, &mut |_| {})?;
            eprintln!(
                "reusing the store at {} ({} messages embedded now)",
                dir.display(),
                left.embedded
            );
            return Ok((db, stored, None, None));
        }
    }
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    let t = Instant::now();
    let db = Memdb::open_with(dir, config)?;
    let mut ids = Vec::with_capacity(subset.conversations.len());
    let mut batch = Vec::new();
    let mut batch_messages = 0;
    for (i, c) in subset.conversations.iter().enumerate() {
        batch.push(c.to_new());
        batch_messages += c.messages.len();
        if batch_messages >= 20_000 || i + 1 == subset.conversations.len() {
            for created in db
                .sekha()
                .create_conversations(std::mem::take(&mut batch))?
            {
                ids.push(created.messages.iter().map(|m| m.id).collect::<Vec<_>>());
            }
            batch_messages = 0;
        }
    }
    db.flush()?;
    let import_secs = t.elapsed().as_secs_f64();
    eprintln!("imported {messages} messages in {import_secs:.1}s; embedding...");

    let t = Instant::now();
    let mut next = 0.0;
    let report = db.embed_pending(None, &mut |p| {
        let share = p.done as f64 / p.total.max(1) as f64;
        if share >= next {
            eprintln!(
                "  embedded {} of {} ({:.0}/s)",
                p.done,
                p.total,
                p.done as f64 / t.elapsed().as_secs_f64().max(1e-9)
            );
            next = share + 0.1;
        }
    })?;
    let embed_secs = t.elapsed().as_secs_f64();
    eprintln!("embedded {} messages in {embed_secs:.1}s", report.embedded);
    let stored = StoredSubset {
        conversations: args.conversations,
        seed: args.seed,
        messages,
        ids,
    };
    // Written last: its presence means the store is complete.
    std::fs::write(&ids_path, serde_json::to_vec(&stored)?)?;
    Ok((db, stored, Some(import_secs), Some(embed_secs)))
}

/// The 1-based rank of `q`'s target in the top 10 of `setting`, after
/// dropping the excluded message.
fn rank_of(
    db: &Memdb,
    q: &Query,
    setting: Setting,
    id_of: &dyn Fn(Pos) -> Uuid,
) -> anyhow::Result<Option<usize>> {
    let exclude = q.exclude.map(id_of);
    let mut req = SearchRequest::new(q.text.as_str())
        .mode(setting.mode)
        .limit(10 + usize::from(exclude.is_some()));
    req.weights = setting.weights;
    let res = db.sekha().search(&req)?;
    let target = id_of(q.target);
    Ok(res
        .hits
        .iter()
        .filter(|h| Some(h.message.id) != exclude)
        .take(10)
        .position(|h| h.message.id == target)
        .map(|p| p + 1))
}

/// Depth of each ranking in a hybrid search (the engine's for top 10).
const DEPTH: usize = 50;

/// The ranking of `query` in `mode`, `DEPTH` deep, without the excluded
/// message: (id, score).
fn ranking(
    db: &Memdb,
    query: &str,
    mode: SearchMode,
    exclude: Option<Uuid>,
) -> anyhow::Result<Vec<(u128, f32)>> {
    if query.trim().is_empty() {
        return Ok(Vec::new());
    }
    let req = SearchRequest::new(query)
        .mode(mode)
        .limit(DEPTH + usize::from(exclude.is_some()));
    Ok(db
        .sekha()
        .search(&req)?
        .hits
        .into_iter()
        .filter(|h| Some(h.message.id) != exclude)
        .take(DEPTH)
        .map(|h| (h.message.id.as_u128(), h.score))
        .collect())
}

/// Replays fusions from the single-mode rankings, to tell apart what the
/// hybrid keyword side's stop-word removal and what the fusion method do:
/// RRF over the keyword ranking without stop words (what the engine does,
/// a check of the replay), RRF over the verbatim keyword ranking, and
/// relative score fusion (min-max normalised scores, summed) over both.
fn replay(
    db: &Memdb,
    queries: &[Query],
    id_of: &dyn Fn(Pos) -> Uuid,
) -> anyhow::Result<Vec<SettingResult>> {
    type Fusion = (
        &'static str,
        fn(&[(u128, f32)], &[(u128, f32)]) -> Vec<u128>,
    );
    let fusions: [Fusion; 4] = [
        ("rrf k=60 (= engine)", |k, s| quality::rrf(k, s, 60.0)),
        ("rrf k=10", |k, s| quality::rrf(k, s, 10.0)),
        ("relative score 1:1", |k, s| {
            quality::relative_score(k, s, 1.0, 1.0)
        }),
        ("relative score kw 1 : sem 2", |k, s| {
            quality::relative_score(k, s, 1.0, 2.0)
        }),
    ];
    let mut ranks = vec![Vec::new(); 2 * fusions.len()];
    for q in queries {
        let exclude = q.exclude.map(id_of);
        let target = id_of(q.target).as_u128();
        let verbatim = ranking(db, &q.text, SearchMode::Keyword, exclude)?;
        let dropped = ranking(
            db,
            &quality::drop_stop_words(&q.text),
            SearchMode::Keyword,
            exclude,
        )?;
        let semantic = ranking(db, &q.text, SearchMode::Semantic, exclude)?;
        for (i, (_, f)) in fusions.iter().enumerate() {
            for (j, kw) in [&dropped, &verbatim].into_iter().enumerate() {
                let fused = f(kw, &semantic);
                ranks[2 * i + j].push(
                    fused
                        .iter()
                        .take(10)
                        .position(|&id| id == target)
                        .map(|p| p + 1),
                );
            }
        }
    }
    Ok(ranks
        .iter()
        .enumerate()
        .map(|(n, r)| {
            let sc = Scores::from_ranks(r);
            let (name, _) = fusions[n / 2];
            SettingResult {
                setting: if n % 2 == 0 {
                    format!("{name}, kw no stop words")
                } else {
                    format!("{name}, kw verbatim")
                },
                recall_at_10: sc.recall,
                mrr_at_10: sc.mrr,
                errors: 0,
            }
        })
        .collect())
}

/// One query's hybrid candidates, as the engine gathers them at `depth`
/// (`DEPTH` for a top 10), each scored on both signals: `kw` and `sem` are the rankings
/// (id, score), `bm25` and `cos` every candidate's (and the target's)
/// scores, absent when it does not match the keyword query or has no
/// vector. Ids are decimal strings.
fn dump_query(
    db: &Memdb,
    model: &dyn memdb::Embedder,
    set: &str,
    q: &Query,
    id_of: &dyn Fn(Pos) -> Uuid,
    depth: usize,
) -> anyhow::Result<serde_json::Value> {
    let target = id_of(q.target).as_u128();
    let exclude = q.exclude.map(|p| id_of(p).as_u128());
    let kw_query = memdb::bench_internals::hybrid_keyword_query(&q.text);
    let ranking = |query: &str, mode: SearchMode| -> anyhow::Result<Vec<(u128, f32)>> {
        let req = SearchRequest::new(query).mode(mode).limit(depth);
        Ok(db
            .sekha()
            .search(&req)?
            .hits
            .into_iter()
            .map(|h| (h.message.id.as_u128(), h.score))
            .collect())
    };
    let kw = match &kw_query {
        Some(k) => ranking(k, SearchMode::Keyword)?,
        None => Vec::new(),
    };
    let sem = ranking(&q.text, SearchMode::Semantic)?;
    let mut ids: Vec<u128> = kw.iter().chain(&sem).map(|x| x.0).collect();
    ids.push(target);
    ids.sort_unstable();
    ids.dedup();
    let qv = model.embed(&[q.text.as_str()])?.pop().unwrap_or_default();
    let mut cos = serde_json::Map::new();
    for &id in &ids {
        if let Some(v) = db.message_vector(Uuid::from_u128(id))? {
            let dot: f32 = v.iter().zip(&qv).map(|(a, b)| a * b).sum();
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt()
                * qv.iter().map(|x| x * x).sum::<f32>().sqrt();
            cos.insert(id.to_string(), serde_json::json!(dot / n.max(1e-12)));
        }
    }
    let mut bm25 = serde_json::Map::new();
    if let Some(k) = &kw_query {
        let terms: Vec<String> = ids
            .iter()
            .map(|&id| format!("id:\"{}\"", Uuid::from_u128(id)))
            .collect();
        let fill = format!("+({k}) +({})^0", terms.join(" "));
        let req = SearchRequest::new(fill)
            .mode(SearchMode::Keyword)
            .limit(ids.len());
        for h in db.sekha().search(&req)?.hits {
            bm25.insert(
                h.message.id.as_u128().to_string(),
                serde_json::json!(h.score),
            );
        }
    }
    let list = |r: &[(u128, f32)]| -> Vec<serde_json::Value> {
        r.iter()
            .map(|(id, s)| serde_json::json!([id.to_string(), s]))
            .collect()
    };
    Ok(serde_json::json!({
        "set": set,
        "query": q.text,
        "target": target.to_string(),
        "exclude": exclude.map(|e| e.to_string()),
        "kw": list(&kw),
        "sem": list(&sem),
        "bm25": bm25,
        "cos": cos,
    }))
}

fn plain_target(corpus: &Corpus, (ci, mi): Pos) -> String {
    quality::plain(&corpus.conversations[ci].messages[mi].text)
}

fn print_report(r: &Report) {
    println!(
        "retrieval quality: {} chitchat conversations, {} messages (seed {}), store {:.1} MB",
        r.conversations,
        r.messages,
        r.seed,
        r.store_bytes as f64 / 1e6
    );
    if let (Some(i), Some(e), Some(rate)) = (r.import_secs, r.embed_secs, r.embed_per_sec) {
        println!("import {i:.1}s, embedding {e:.1}s ({rate:.0} messages/s)");
    }
    for s in &r.sets {
        println!();
        println!("set {} ({} queries): recall@10 / MRR@10", s.set, s.queries);
        for res in &s.results {
            let errors = if res.errors > 0 {
                format!("  ({} errors)", res.errors)
            } else {
                String::new()
            };
            println!(
                "  {:<24} {:.3} / {:.3}{errors}",
                res.setting, res.recall_at_10, res.mrr_at_10
            );
        }
        let ok = s.hybrid_margin >= 0.0;
        println!(
            "  hybrid vs the better single mode: {:+.3} ({}); vs keyword lost {} gained {}; vs semantic lost {} gained {}",
            s.hybrid_margin,
            if ok { "ok" } else { "BELOW" },
            s.lost_vs_keyword,
            s.gained_vs_keyword,
            s.lost_vs_semantic,
            s.gained_vs_semantic
        );
        for (q, t) in &s.examples {
            println!("    lost by hybrid: {q:?} -> {t:?}");
        }
        println!("  replayed in the harness from keyword and semantic rankings (depth {DEPTH}):");
        for res in &s.replayed {
            println!(
                "  {:<40} {:.3} / {:.3}",
                res.setting, res.recall_at_10, res.mrr_at_10
            );
        }
    }
}

fn parse_model(s: &str) -> Result<memdb::LocalModel, String> {
    memdb::LocalModel::ALL
        .into_iter()
        .find(|m| m.as_str() == s)
        .ok_or_else(|| format!("unknown model {s} (minilm, e5-small-v2)"))
}
