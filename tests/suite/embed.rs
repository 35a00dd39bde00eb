//! Embedding providers (issue #4): the hashing embedder, and the local ONNX
//! model end to end.
//!
//! The local-model tests read the real model from the models directory
//! (`$MEMDB_MODELS`, else the platform default); `scripts/install-model.sh`
//! puts it there, and `.ci/run` runs that script before the tests. They never
//! download anything themselves.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use memdb::{
    Embedder, Error, Hashing, LocalModel, LocalOnnx, LocalOnnxOptions, LocalPrecision, Metric,
};

fn cos(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn models_dir() -> PathBuf {
    memdb::default_models_dir().expect("models directory")
}

/// all-MiniLM-L6-v2 with int8 products, one for the whole test binary
/// (loading costs a few hundred ms): the model these mechanics (batches,
/// sessions, int8 products, the Python reference) were first checked on.
/// e5-small-v2, the default, has its own test below.
fn model() -> &'static LocalOnnx {
    static MODEL: OnceLock<LocalOnnx> = OnceLock::new();
    MODEL.get_or_init(|| {
        LocalOnnx::open_with(
            &models_dir(),
            LocalOnnxOptions::default().model(LocalModel::MiniLm),
        )
        .unwrap_or_else(|e| {
            panic!("{e}\n(the local-model tests need scripts/install-model.sh to have run)")
        })
    })
}

/// Options of MiniLM, [`model`]'s model.
fn minilm() -> LocalOnnxOptions {
    LocalOnnxOptions::default().model(LocalModel::MiniLm)
}

/// MiniLM run as the export is, with float products.
fn float_model() -> &'static LocalOnnx {
    static MODEL: OnceLock<LocalOnnx> = OnceLock::new();
    MODEL.get_or_init(|| {
        LocalOnnx::open_with(
            &models_dir(),
            LocalOnnxOptions::default()
                .model(LocalModel::MiniLm)
                .precision(LocalPrecision::Float),
        )
        .expect("the local model")
    })
}

#[test]
fn hashing_is_deterministic_normalized_and_lexical() {
    let e = Hashing::default();
    let id = e.identity();
    assert_eq!(id.provider, "hashing");
    assert_eq!(id.name, "hashing-v1");
    assert_eq!(id.dimension, 384);
    assert_eq!(id.metric, Metric::Cosine);

    let texts = [
        "Rust lifetimes and the borrow checker",
        "the borrow checker rejects my lifetimes",
        "Baking sourdough bread at home",
        "",
    ];
    let a = e.embed(&texts).unwrap();
    assert_eq!(a, e.embed(&texts).unwrap());
    assert_eq!(a, Hashing::default().embed(&texts).unwrap());
    for v in &a {
        assert_eq!(v.len(), 384);
        assert!((cos(v, v) - 1.0).abs() < 1e-5);
    }
    assert!(cos(&a[0], &a[1]) > cos(&a[0], &a[2]) + 0.2);

    let small = Hashing::new(64).unwrap();
    assert_eq!(small.embed(&["x y z"]).unwrap()[0].len(), 64);
    assert!(matches!(Hashing::new(0), Err(Error::InvalidInput { .. })));
}

#[test]
fn local_model_identity_dimension_and_norm() {
    let m = model();
    let id = m.identity();
    assert_eq!(
        (
            id.provider.as_str(),
            id.name.as_str(),
            id.dimension,
            id.metric
        ),
        ("local-onnx", "all-MiniLM-L6-v2-int8", 384, Metric::Cosine)
    );
    // e5-small-v2 is the default (SPEC.md §23.4).
    assert_eq!(LocalModel::default(), LocalModel::E5SmallV2);
    assert_eq!(LocalOnnx::FILES, LocalModel::E5SmallV2.files());
    // Float products are another model to a store: their own name.
    assert_eq!(float_model().identity().name, "all-MiniLM-L6-v2");
    assert_eq!(LocalPrecision::Float.model_name(), LocalOnnx::NAME);
    let v = m
        .embed(&["How do I reset my password?", "", "日本語のテキスト"])
        .unwrap();
    assert_eq!(v.len(), 3);
    for x in &v {
        assert_eq!(x.len(), 384);
        assert!((cos(x, x).sqrt() - 1.0).abs() < 1e-4);
    }
    assert!(m.embed(&[]).unwrap().is_empty());
}

#[test]
fn local_model_is_semantic() {
    let m = model();
    let texts = [
        "How do I reset my password?",
        "I forgot my login credentials",
        "The weather is sunny in Paris today",
        "My cat likes to sleep on the sofa",
        "What is a good recipe for banana bread?",
    ];
    let v = m.embed(&texts).unwrap();
    let para = cos(&v[0], &v[1]);
    let unrelated = [
        cos(&v[0], &v[2]),
        cos(&v[0], &v[3]),
        cos(&v[0], &v[4]),
        cos(&v[1], &v[2]),
        cos(&v[2], &v[3]),
    ];
    eprintln!("paraphrase cosine {para:.3}, unrelated {unrelated:.3?}");
    assert!(para > 0.5, "paraphrase cosine {para}");
    for u in unrelated {
        assert!(u < 0.3, "unrelated cosine {u}");
    }
}

#[test]
fn local_model_batches_match_single_calls() {
    let m = model();
    let texts = [
        "short",
        "A somewhat longer sentence about databases and vector search.",
        "How do I reset my password?",
        "memdb stores conversations for LLM agents, with full-text and semantic search over every message it keeps.",
    ];
    let batched = m.embed(&texts).unwrap();
    let mut worst = 0.0f32;
    for (t, b) in texts.iter().zip(&batched) {
        let single = m.embed(&[t]).unwrap();
        for (x, y) in single[0].iter().zip(b) {
            worst = worst.max((x - y).abs());
        }
    }
    eprintln!("largest batched-vs-single difference {worst:e}");
    assert!(worst < 1e-5, "batched and single vectors differ by {worst}");

    // Small batches give the same vectors as one big one.
    let chunked = LocalOnnx::open_with(&models_dir(), minilm().batch_size(2))
        .unwrap()
        .embed(&texts)
        .unwrap();
    for (a, b) in chunked.iter().zip(&batched) {
        assert!(a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5));
    }
}

/// Several sessions embedding at once (threads racing for them) give the
/// vectors one session gives alone.
#[test]
fn concurrent_sessions_agree_with_one() {
    let texts: Vec<String> = (0..24)
        .map(|i| format!("message number {i} about topic {}", i % 5))
        .collect();
    let one = LocalOnnx::open_with(&models_dir(), minilm().sessions(1)).unwrap();
    let expected: Vec<Vec<f32>> = texts
        .iter()
        .map(|t| one.embed(&[t]).unwrap().remove(0))
        .collect();
    let pool = LocalOnnx::open_with(&models_dir(), minilm().sessions(3)).unwrap();
    assert_eq!(pool.options().sessions, 3);
    std::thread::scope(|s| {
        for worker in 0..4 {
            let (pool, texts, expected) = (&pool, &texts, &expected);
            s.spawn(move || {
                for (i, t) in texts.iter().enumerate().skip(worker) {
                    let v = pool.embed(&[t]).unwrap().remove(0);
                    let worst = v
                        .iter()
                        .zip(&expected[i])
                        .map(|(x, y)| (x - y).abs())
                        .fold(0.0f32, f32::max);
                    assert!(worst < 1e-5, "text {i}: differs by {worst}");
                }
            });
        }
    });
}

/// Sessions are made when needed: one to start, more only while calls
/// overlap, never more than asked for; a call mixing long and short texts
/// (batched by length internally) returns its vectors in input order.
#[test]
fn sessions_are_made_lazily_and_mixed_lengths_keep_their_order() {
    let pool = LocalOnnx::open_with(&models_dir(), minilm().sessions(3)).unwrap();
    assert_eq!(pool.sessions_created(), 1);
    for i in 0..5 {
        pool.embed(&[&format!("one query at a time {i}")]).unwrap();
    }
    assert_eq!(
        pool.sessions_created(),
        1,
        "sequential calls share one session"
    );

    let long = (0..80)
        .map(|i| format!("Paragraph sentence {i} talks about storage engines."))
        .collect::<Vec<_>>()
        .join(" ");
    let texts: Vec<String> = (0..20)
        .map(|i| match i % 4 {
            0 => long.clone(),
            1 => format!("short {i}"),
            2 => format!("a medium length sentence number {i} about vector search and ranking"),
            _ => format!("{i}: {}", &long[..400]),
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let all = pool.embed(&refs).unwrap();
    assert!(
        pool.sessions_created() >= 2,
        "a bulk call works on more than one session"
    );
    assert!(pool.sessions_created() <= 3);
    for (i, t) in refs.iter().enumerate() {
        let single = model().embed(&[t]).unwrap().remove(0);
        let worst = single
            .iter()
            .zip(&all[i])
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 1e-5, "text {i} differs by {worst}: out of order?");
    }

    // Letting the idle sessions go (before a vector build) unloads them;
    // the next calls make them again and embed exactly as before.
    assert!(pool.sessions_loaded() >= 2);
    pool.release_idle();
    assert_eq!(pool.sessions_loaded(), 0);
    let again = pool.embed(&refs).unwrap();
    assert!(pool.sessions_loaded() >= 1);
    for (i, (a, b)) in again.iter().zip(&all).enumerate() {
        let worst = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 1e-5, "text {i} differs by {worst} after a release");
    }
}

#[test]
fn local_model_reports_truncation() {
    let m = model();
    assert_eq!(m.max_tokens(), Some(256));
    let long = "memory ".repeat(400);
    let r = m.embed_report(&["a short text", &long]).unwrap();
    assert_eq!(r.truncated, vec![false, true]);
    assert_eq!(r.vectors.len(), 2);
    assert!((cos(&r.vectors[1], &r.vectors[1]) - 1.0).abs() < 1e-4);
}

#[test]
fn local_model_cuts_a_long_text_into_passages_it_reads_whole() {
    let m = model();
    // A short text is one passage: the whole of it.
    assert_eq!(m.passages("a short text").unwrap(), vec![0..12]);
    let text = (0..300)
        .map(|i| format!("Sentence number {i} is about memory."))
        .collect::<Vec<_>>()
        .join(" ");
    let ranges = m.passages(&text).unwrap();
    assert!(ranges.len() > 4, "{} passages", ranges.len());
    assert_eq!(ranges.first().unwrap().start, 0);
    assert_eq!(ranges.last().unwrap().end, text.len());
    for pair in ranges.windows(2) {
        // In order, overlapping, and leaving no gap.
        assert!(pair[0].start < pair[1].start && pair[1].start <= pair[0].end);
    }
    // Every passage is read whole: no truncation.
    let pieces: Vec<&str> = ranges.iter().map(|r| &text[r.clone()]).collect();
    let r = m.embed_report(&pieces).unwrap();
    assert!(r.truncated.iter().all(|t| !t), "{:?}", r.truncated);
    // The tail is in the last passage, not in the first.
    assert!(pieces.last().unwrap().contains("Sentence number 299"));
    assert!(!pieces[0].contains("Sentence number 299"));
    // Multi-byte text is cut on character boundaries.
    let cjk = "記憶は大切です。".repeat(200);
    for r in m.passages(&cjk).unwrap() {
        assert!(cjk.is_char_boundary(r.start) && cjk.is_char_boundary(r.end));
    }
}

/// Copies the installed files of the default model into a fresh directory.
fn copy_models(to: &Path) {
    copy_model_files(to, LocalModel::default());
}

fn copy_model_files(to: &Path, m: LocalModel) {
    for f in m.files() {
        std::fs::copy(models_dir().join(f), to.join(f)).expect("copy model file");
    }
}

#[test]
fn corrupted_model_file_is_a_clear_error() {
    model(); // the real files are installed
    for m in LocalModel::ALL {
        for victim in [m.model_file(), m.tokenizer_file()] {
            let dir = crate::tmp();
            copy_model_files(dir.path(), m);
            let path = dir.path().join(victim);
            let mut bytes = std::fs::read(&path).unwrap();
            let mid = bytes.len() / 2;
            bytes[mid] ^= 0xff;
            std::fs::write(&path, bytes).unwrap();
            let err =
                LocalOnnx::open_with(dir.path(), LocalOnnxOptions::default().model(m)).unwrap_err();
            let msg = err.to_string();
            assert!(matches!(err, Error::Corrupted { .. }), "{msg}");
            assert!(msg.contains(victim) && msg.contains("SHA-256"), "{msg}");
            assert!(msg.contains("install-model.sh"), "{msg}");
        }
    }
}

#[test]
fn missing_files_are_a_clear_error() {
    // An empty models directory: names the missing file and the fix.
    let empty = crate::tmp();
    let err = LocalOnnx::open(empty.path()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::ModelMissing { .. }), "{msg}");
    assert!(msg.contains("install-model.sh"), "{msg}");

    // Model and tokenizer present, runtime library path missing.
    let dir = crate::tmp();
    copy_models(dir.path());
    let opts =
        LocalOnnxOptions::default().runtime_library(dir.path().join("no-such-libonnxruntime.so"));
    let err = LocalOnnx::open_with(dir.path(), opts).unwrap_err();
    match &err {
        Error::ModelMissing { path, .. } => {
            assert!(path.ends_with("no-such-libonnxruntime.so"), "{err}")
        }
        other => panic!("expected ModelMissing, got {other}"),
    }
}

#[test]
fn bad_options_are_refused() {
    let dir = models_dir();
    for opts in [
        LocalOnnxOptions::default().intra_threads(0),
        LocalOnnxOptions::default().batch_size(0),
        LocalOnnxOptions::default().sessions(0),
        LocalOnnxOptions::default().max_tokens(257),
    ] {
        assert!(matches!(
            LocalOnnx::open_with(&dir, opts),
            Err(Error::InvalidInput { .. })
        ));
    }
}

/// The same model run by onnxruntime's Python API (same tokenizer, mean
/// pooling, normalisation) gave these first components: the Rust pipeline
/// must agree with the reference, not just be self-consistent.
#[test]
fn local_model_matches_the_python_reference() {
    let v = float_model()
        .embed(&["How do I reset my password?"])
        .unwrap();
    let reference = [
        0.005_373_35,
        -0.061_110_72,
        -0.071_281_25,
        -0.034_229_86,
        -0.042_787_16,
    ];
    for (x, r) in v[0].iter().zip(reference) {
        assert!((x - r).abs() < 1e-4, "{:?} vs {reference:?}", &v[0][..5]);
    }
}

/// Int8 products (the default) stay close to the float products of the
/// same weights, text by text, and keep each text's paraphrase nearest.
#[test]
fn int8_products_stay_close_to_float_products() {
    // Pairs of paraphrases: text 2k and 2k+1.
    let texts = [
        "How do I reset my password?",
        "I forgot my login credentials",
        "The weather is sunny in Paris today",
        "It is a bright warm day in the French capital",
        "My cat likes to sleep on the sofa",
        "The kitten naps on the couch all afternoon",
        "What is a good recipe for banana bread?",
        "How do you bake a loaf with ripe bananas?",
        "short",
        "日本語のテキスト",
        "memdb stores conversations for LLM agents, with full-text and semantic search over every message it keeps, and assembles a context window under a token budget.",
    ];
    let a = model().embed(&texts).unwrap();
    let f = float_model().embed(&texts).unwrap();
    let mut sum = 0.0;
    for (i, (x, y)) in a.iter().zip(&f).enumerate() {
        let c = cos(x, y);
        sum += c;
        assert!(c > 0.99, "text {i}: int8 vs float cosine {c}");
        assert!((cos(x, x).sqrt() - 1.0).abs() < 1e-4);
    }
    let mean = sum / texts.len() as f32;
    eprintln!("int8 vs float: mean cosine {mean:.5}");
    assert!(mean > 0.995, "mean cosine {mean}");
    let nearest = |v: &[Vec<f32>], i: usize| {
        (0..v.len())
            .filter(|&j| j != i)
            .max_by(|&p, &q| cos(&v[i], &v[p]).total_cmp(&cos(&v[i], &v[q])))
    };
    for i in 0..8 {
        assert_eq!(nearest(&f, i), Some(i ^ 1), "float, text {i}");
        assert_eq!(nearest(&a, i), Some(i ^ 1), "int8, text {i}");
    }
}

/// memdb-server without `--embedder` picks the local model when it is
/// installed (as the CLI does), and keyword-only search when it is not.
#[test]
fn the_server_uses_the_local_model_by_default() {
    let empty_store = crate::tmp();
    let installed = memdb_server::config::ServerConfig {
        models_dir: Some(models_dir()),
        ..Default::default()
    };
    assert_eq!(installed.embedder, memdb_server::config::EmbedderKind::Auto);
    let engine =
        memdb_server::config::engine_config(&installed, empty_store.path()).expect("engine config");
    let e = engine.embedder.expect("the local model");
    assert_eq!(e.identity().provider, "local-onnx");
    let empty = tempfile::tempdir().unwrap();
    let missing = memdb_server::config::ServerConfig {
        models_dir: Some(empty.path().to_path_buf()),
        ..Default::default()
    };
    let engine = memdb_server::config::engine_config(&missing, empty_store.path())
        .expect("no model is not an error");
    assert!(engine.embedder.is_none());
}

/// e5-small-v2 (`MEMDB_LOCAL_MODEL=e5-small-v2`, SPEC.md §23.4): its own
/// identity, queries read as `query: ...` and stored texts as `passage:
/// ...` (so a query and the same text as a passage differ, where MiniLM
/// reads both alike), and a question finds its answer among unrelated
/// turns by meaning alone.
#[test]
fn e5_reads_queries_and_passages_with_their_prefixes() {
    use memdb::LocalModel;
    let e5 = LocalOnnx::open_with(
        &models_dir(),
        LocalOnnxOptions::default().model(LocalModel::E5SmallV2),
    )
    .expect("e5-small-v2 (scripts/install-model.sh)");
    let id = e5.identity();
    assert_eq!(
        (id.provider.as_str(), id.name.as_str()),
        ("local-onnx", "e5-small-v2-int8-rows")
    );
    assert_eq!(id.dimension, 384);
    assert_eq!(model().identity().name, "all-MiniLM-L6-v2-int8");

    let text = "what do you eat every morning";
    let as_query = e5.embed_query(text).unwrap().vectors.remove(0);
    let as_passage = e5.embed(&[text]).unwrap().remove(0);
    assert!(
        cos(&as_query, &as_passage) < 0.99,
        "the prefixes are not applied"
    );
    let mini_q = model().embed_query(text).unwrap().vectors.remove(0);
    let mini_p = model().embed(&[text]).unwrap().remove(0);
    assert!(
        cos(&mini_q, &mini_p) > 0.9999,
        "MiniLM reads queries as passages"
    );

    let turns = [
        "Zara: honestly just oatmeal, I'm a broke college student",
        "Otto: I broke my pinky toe at the skate park last spring",
        "Zara: the new Zelda game is taking all my free time",
        "Otto: my sister is moving to Denver for a nursing job",
    ];
    let q = e5
        .embed_query("What has Zara been having for breakfast?")
        .unwrap()
        .vectors
        .remove(0);
    let p = e5.embed(&turns).unwrap();
    let best = (0..turns.len())
        .max_by(|&a, &b| cos(&q, &p[a]).total_cmp(&cos(&q, &p[b])))
        .unwrap();
    assert_eq!(
        best,
        0,
        "{:?}",
        p.iter().map(|v| cos(&q, v)).collect::<Vec<_>>()
    );
    // Activations are quantized per row (SPEC.md §23.4): a text's vector
    // does not depend on the other texts of its batch (the export's own
    // per-batch scale moved them by up to 0.007 in cosine).
    for (turn, batched) in turns.iter().zip(&p) {
        let alone = e5.embed(&[turn]).unwrap().remove(0);
        assert!(cos(&alone, batched) > 0.99999, "{turn}");
    }
}

/// A store embedded with one local model keeps it: with
/// `MEMDB_LOCAL_MODEL` unset, the embedder chosen for an existing store is
/// the one its messages were embedded with (SPEC.md §23.6), and a new
/// store gets the default.
#[test]
fn a_store_keeps_the_local_model_it_was_embedded_with() {
    use memdb::{Config, EmbedderKind, EmbedderSettings, Memdb, select_embedder};
    assert!(
        std::env::var(memdb::LOCAL_MODEL_ENV).is_err()
            && std::env::var("MEMDB_LOCAL_PRECISION").is_err(),
        "run this test without MEMDB_LOCAL_MODEL and MEMDB_LOCAL_PRECISION"
    );
    let chosen = |store: &Path| {
        let settings = EmbedderSettings {
            stored: Memdb::stored_message_model(store),
            models_dir: Some(models_dir()),
            ..EmbedderSettings::new(EmbedderKind::Auto)
        };
        select_embedder(&settings)
            .unwrap()
            .embedder
            .expect("the local model")
            .identity()
            .name
    };
    let old = crate::tmp();
    let minilm: std::sync::Arc<dyn Embedder> = std::sync::Arc::new(
        LocalOnnx::open_with(
            &models_dir(),
            LocalOnnxOptions::default().model(LocalModel::MiniLm),
        )
        .unwrap(),
    );
    drop(Memdb::open_with(old.path(), Config::with_embedder(minilm)).unwrap());
    assert_eq!(chosen(old.path()), "all-MiniLM-L6-v2-int8");
    // A new store, and a directory with no store yet: the default.
    let new = crate::tmp();
    drop(Memdb::open(new.path()).unwrap());
    assert_eq!(chosen(new.path()), "e5-small-v2-int8-rows");
    assert_eq!(chosen(&new.path().join("absent")), "e5-small-v2-int8-rows");
}
