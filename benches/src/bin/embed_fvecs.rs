//! `embed_fvecs`: real sentence embeddings for the vector harness. Embeds
//! `--base` distinct chitchat messages and `--queries` other (held-out)
//! messages with the local MiniLM model and writes them as `base.fvecs` and
//! `query.fvecs` (the TEXMEX layout: per vector a little-endian u32
//! dimension, then the floats) to `--out`, for
//! `MEMDB_VEC_DATA=DIR vector_harness`. `benches/quality/run.sh` runs both.
//!
//! ```text
//! cargo run --release -p memdb-benches --bin embed_fvecs -- --base 20000 --queries 1000
//! ```
//!
//! Messages are deduplicated by exact text (chitchat repeats "lol" and "hi"
//! thousands of times; duplicates would make the exact top 10 a tie), drawn
//! at random with `--seed`. The files are written once: when both exist
//! with the requested counts, the run does nothing. Work is split over
//! `--threads` model instances (one ONNX Runtime session each).

use std::collections::HashSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use clap::Parser;
use memdb::{Embedder as _, LocalOnnx, LocalOnnxOptions};
use memdb_benches::Rng;
use memdb_benches::corpus;

/// Writes MiniLM embeddings of chitchat messages as .fvecs files.
#[derive(Debug, Parser)]
struct Args {
    /// Base vectors (indexed).
    #[arg(long, default_value_t = 20_000)]
    base: usize,
    /// Query vectors (other messages, not in the base).
    #[arg(long, default_value_t = 1000)]
    queries: usize,
    /// Seed of the message draw.
    #[arg(long, default_value_t = 11)]
    seed: u64,
    /// Embedding threads (one model instance each).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// chitchat dataset.json (default: benches/data/dataset.json).
    #[arg(long)]
    data: Option<PathBuf>,
    /// Models directory (default: memdb's).
    #[arg(long)]
    models: Option<PathBuf>,
    /// Output directory (default: benches/data/minilm).
    #[arg(long)]
    out: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("data/minilm"));
    let base_path = out.join("base.fvecs");
    let query_path = out.join("query.fvecs");
    if fvecs_count(&base_path) == Some(args.base) && fvecs_count(&query_path) == Some(args.queries)
    {
        eprintln!(
            "already present: {} and {}",
            base_path.display(),
            query_path.display()
        );
        return Ok(());
    }

    let data = args.data.clone().unwrap_or_else(corpus::default_data_path);
    let corpus = corpus::load_chitchat(&data)?;
    let mut seen = HashSet::new();
    let mut texts: Vec<&str> = corpus
        .messages()
        .map(|m| m.text.trim())
        .filter(|t| seen.insert(*t))
        .collect();
    let need = args.base + args.queries;
    anyhow::ensure!(
        texts.len() >= need,
        "the corpus has {} distinct messages, {need} requested",
        texts.len()
    );
    let mut rng = Rng::new(args.seed);
    for i in (1..texts.len()).rev() {
        let j = rng.below(i + 1);
        texts.swap(i, j);
    }
    texts.truncate(need);

    let models = match &args.models {
        Some(m) => m.clone(),
        None => memdb::default_models_dir()?,
    };
    let threads = args.threads.max(1);
    let t = Instant::now();
    let chunk = need.div_ceil(threads);
    let vectors: Vec<Vec<f32>> = std::thread::scope(|s| {
        let handles: Vec<_> = texts
            .chunks(chunk)
            .enumerate()
            .map(|(i, part)| {
                let models = &models;
                s.spawn(move || -> anyhow::Result<Vec<Vec<f32>>> {
                    let model = LocalOnnx::open_with(models, LocalOnnxOptions::default())
                        .with_context(|| format!("loading the model from {}", models.display()))?;
                    let mut out = Vec::with_capacity(part.len());
                    for (b, batch) in part.chunks(256).enumerate() {
                        out.extend(model.embed(batch)?);
                        if i == 0 && b % 10 == 9 {
                            eprintln!(
                                "  thread 0: {} of {} ({:.0}/s)",
                                out.len(),
                                part.len(),
                                out.len() as f64 / t.elapsed().as_secs_f64()
                            );
                        }
                    }
                    Ok(out)
                })
            })
            .collect();
        let mut all = Vec::with_capacity(need);
        for h in handles {
            match h.join() {
                Ok(part) => all.extend(part?),
                Err(_) => anyhow::bail!("an embedding thread panicked"),
            }
        }
        Ok(all)
    })?;
    let secs = t.elapsed().as_secs_f64();
    eprintln!(
        "embedded {need} messages in {secs:.1}s ({:.0}/s, {threads} threads)",
        need as f64 / secs
    );
    std::fs::create_dir_all(&out)?;
    write_fvecs(&base_path, &vectors[..args.base])?;
    write_fvecs(&query_path, &vectors[args.base..])?;
    println!(
        "wrote {} ({}) and {} ({})",
        base_path.display(),
        args.base,
        query_path.display(),
        args.queries
    );
    Ok(())
}

/// Writes `vectors` in the .fvecs layout, through a temp file and a rename.
fn write_fvecs(path: &Path, vectors: &[Vec<f32>]) -> anyhow::Result<()> {
    let tmp = path.with_extension("fvecs.tmp");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
    for v in vectors {
        f.write_all(&u32::try_from(v.len())?.to_le_bytes())?;
        for x in v {
            f.write_all(&x.to_le_bytes())?;
        }
    }
    f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// The number of vectors in an .fvecs file, if it exists and is well formed.
fn fvecs_count(path: &Path) -> Option<usize> {
    let bytes = std::fs::read(path).ok()?;
    let dim = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
    let record = 4 + 4 * dim;
    (dim > 0 && bytes.len() % record == 0).then_some(bytes.len() / record)
}
