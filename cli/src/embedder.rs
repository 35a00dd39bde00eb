//! Builds the embedding model a command runs with (`--embedder`,
//! `--models`, `--openai-*`) through the engine's `memdb::select_embedder`,
//! the same selection memdb-server makes, and drains the embedding queue
//! after writes, with a progress bar on a terminal. The engine does the
//! embedding; this module only passes the flags and reports.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use memdb::{Config, EmbedReport, Embedder, EmbedderSettings, Error, Memdb};

use crate::args::{EmbedderKind, OpenAiSettings};

/// The embedder a command runs with (`None`: keyword only) and, when `auto`
/// found no installed model, a note saying so.
pub type Loaded = (Option<Arc<dyn Embedder>>, Option<String>);

/// The embedder for `choice` and the store in `store` (a store embedded
/// with one local model keeps it unless `MEMDB_LOCAL_MODEL` names
/// another), or `None` with the engine's note when `auto` finds no
/// installed model.
pub fn load(
    choice: EmbedderKind,
    models: Option<PathBuf>,
    openai: &OpenAiSettings,
    store: &std::path::Path,
) -> Result<Loaded> {
    let selected = memdb::select_embedder(&EmbedderSettings {
        kind: choice,
        models_dir: models,
        openai: openai.clone(),
        stored: Memdb::stored_message_model(store),
    })?;
    Ok((selected.embedder, selected.note))
}

/// redb's page cache in MiB for `kb sync` and `kb watch` when neither
/// `--store-cache-mb` nor `MEMDB_STORE_CACHE_MB` sets one (SPEC §3): the
/// 10,000-file local-model sync reached 653 MB maximum resident with the
/// engine's 128 MiB and 504 MB with this, in the same time
/// (benches/README.md, "A smaller store cache for ingest").
pub const INGEST_STORE_CACHE_MB: u64 = 32;

/// Engine configuration carrying `embedder` and, when given, the passage
/// rule of new message spaces and the store cache in MiB.
pub fn config(
    embedder: Option<Arc<dyn Embedder>>,
    passage: Option<memdb::Passage>,
    store_cache_mb: Option<u64>,
) -> Result<Config> {
    let mut c = Config::default();
    c.embedder = embedder;
    if let Some(p) = passage {
        c.message_passage = p;
    }
    if let Some(mb) = store_cache_mb {
        c.set_store_cache_mb(mb)?;
    }
    Ok(c)
}

/// Embeds whatever the write left queued (a bulk import), with a progress
/// bar on a terminal. A no-op without an embedder.
pub fn drain(db: &Memdb) -> Result<Option<EmbedReport>> {
    if db.config().embedder.is_none() {
        return Ok(None);
    }
    let bar = bar("embedding {bar:40} {pos}/{len} ({eta})");
    let report = db.embed_pending(None, &mut |p| {
        if let Some(bar) = &bar {
            bar.set_length(p.total);
            bar.set_position(p.done);
        }
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    match report {
        Ok(r) => Ok(Some(r)),
        // The write itself succeeded and is durable; the queue keeps the
        // messages for `memdb embed` or `memdb rebuild-embeddings`.
        Err(e @ Error::ModelMismatch { .. }) => {
            eprintln!("note: messages stored but not embedded: {e}");
            Ok(None)
        }
        Err(e) => Err(e).context("embedding the new messages (they stay queued)"),
    }
}

/// A progress bar on stderr with `template`, only when stderr is a terminal.
pub fn bar(template: &str) -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(0);
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    Some(bar)
}
