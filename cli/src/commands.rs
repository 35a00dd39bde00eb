//! One function per subcommand: validated options in, one engine call, an
//! [`Output`] back. No search, ranking or validation rules live here; the
//! engine owns them.
//!
//! Inputs (ids, filters, JSON bodies) are parsed before the data directory is
//! opened, so a bad argument fails fast and touches nothing.

use memdb::Systems;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use memdb::{
    ConversationUpdate, ExportFormat, FusionMethod, FusionWeights, ImportOptions, Memdb, Page,
    QueryLanguage, SearchMode, SearchNote, SearchRequest, Selection,
};

use crate::args::{
    Cli, Command, EmbedderKind, Fusion, ImportFrom, KbAction, MemorgAction, Mode, OpenAiSettings,
    QueryArgs,
};
use crate::embedder;
use crate::input::{self, Source};
use crate::options;
use crate::output::{Destination, Output};

/// How a command opens its store: the data directory, the namespace, the
/// store cache and the embedder settings of the command line.
struct Stores {
    /// `--json`: what a long-running command prints as it goes.
    json: bool,
    dir: PathBuf,
    namespace: String,
    cache: Option<u64>,
    choice: EmbedderKind,
    models: Option<PathBuf>,
    openai: OpenAiSettings,
    passage: Option<memdb::Passage>,
}

impl Stores {
    /// `db`'s handle on the command's namespace.
    fn scoped(&self, db: Memdb) -> Result<Memdb> {
        if self.namespace == "default" {
            Ok(db)
        } else {
            Ok(db.namespace(&self.namespace)?)
        }
    }

    /// An existing store, without loading a model. Only commands that add
    /// data create a data directory; the others refuse a directory that
    /// holds no store (a mistyped --data must not pass silently).
    fn open(&self) -> Result<Memdb> {
        self.scoped(Memdb::open_existing_with(
            &self.dir,
            embedder::config(None, None, self.cache)?,
        )?)
    }

    /// The embedder as configured (loaded only by the commands that embed:
    /// a few hundred ms).
    fn embedding(&self) -> Result<embedder::Loaded> {
        embedder::load(self.choice, self.models.clone(), &self.openai, &self.dir)
    }

    /// The store, created when missing, with the embedder and store cache
    /// `cache`; the embedder's note goes to stderr.
    fn create_cached(&self, cache: Option<u64>) -> Result<Memdb> {
        let (e, note) = self.embedding()?;
        if let Some(note) = note {
            eprintln!("note: {note}");
        }
        self.scoped(Memdb::open_with(
            &self.dir,
            embedder::config(e, self.passage, cache)?,
        )?)
    }

    /// The store, created when missing, with the embedder.
    fn create(&self) -> Result<Memdb> {
        self.create_cached(self.cache)
    }

    /// A knowledge-base ingest writes each page once and reads the vectors
    /// back only to build the index: redb's cache buys it nothing and costs
    /// its peak memory (SPEC §3), so it runs with a small one unless told.
    fn create_ingesting(&self) -> Result<Memdb> {
        self.create_cached(self.cache.or(Some(embedder::INGEST_STORE_CACHE_MB)))
    }

    /// An existing store with the embedder, and the embedder's note.
    fn open_embedding(&self) -> Result<(Memdb, Option<String>)> {
        if !self.dir.join("memdb.redb").is_file() {
            self.open()?; // the engine's "no store here" error
        }
        let (e, note) = self.embedding()?;
        Ok((
            self.scoped(Memdb::open_with(
                &self.dir,
                embedder::config(e, self.passage, self.cache)?,
            )?)?,
            note,
        ))
    }

    /// [`Stores::open_embedding`], the note on stderr.
    fn open_embedding_noted(&self) -> Result<Memdb> {
        let (db, note) = self.open_embedding()?;
        if let Some(note) = note {
            eprintln!("note: {note}");
        }
        Ok(db)
    }

    /// One tool call (`memdb tool`, `memdb memorg`): a writing tool may
    /// create the store, a reading one needs it; either embeds as
    /// configured.
    fn call_tool(
        &self,
        tool: &'static dyn memdb_server::contract::ToolEntry,
        args: serde_json::Value,
    ) -> Result<Output> {
        let db = if tool.access() == memdb_server::auth::Access::Write {
            self.create()?
        } else {
            self.open_embedding_noted()?
        };
        with_db(db, |db| {
            let data = tool
                .call_json(db, args)
                .map_err(|e| anyhow::anyhow!("{}", e.message))?;
            Ok(Output::Tool {
                text: tool.render(&data),
                data,
            })
        })
    }
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<Output> {
    let json = cli.json;
    memdb::validate_namespace(&cli.namespace)?;
    let stores = Stores {
        json,
        dir: options::data_dir(cli.data)?,
        namespace: cli.namespace,
        cache: cli.store_cache_mb,
        choice: cli.embedder,
        models: cli.models,
        openai: cli.openai,
        passage: cli.passage,
    };
    let s = &stores;
    let open = || s.open();
    let output = match cli.command {
        Command::Store { file } => {
            let new = input::new_conversation(&Source::from_arg(file.as_deref()))?;
            with_db(s.create()?, |db| {
                let stored = db.sekha().create_conversation(new)?;
                embedder::drain(db)?;
                Ok(Output::Stored(stored))
            })?
        }
        Command::Append { id, file } => {
            let id = options::conversation_id(&id)?;
            let messages = input::new_messages(&Source::from_arg(file.as_deref()))?;
            with_db(s.open_embedding_noted()?, |db| {
                let messages = db.sekha().append_messages(id, messages)?;
                embedder::drain(db)?;
                Ok(Output::Appended {
                    conversation_id: id,
                    messages,
                })
            })?
        }
        Command::Query(args) => query(s, args)?,
        Command::Get { id, no_messages } => {
            let id = options::conversation_id(&id)?;
            with_db(open()?, |db| {
                Ok(if no_messages {
                    Output::Metadata(db.sekha().get_conversation(id)?)
                } else {
                    Output::Conversation(db.sekha().get_conversation_with_messages(id)?)
                })
            })?
        }
        Command::List {
            filter,
            offset,
            limit,
        } => {
            let filter = filter.to_filter()?;
            with_db(open()?, |db| {
                Ok(Output::Page(
                    db.sekha()
                        .list_conversations(&filter, Page { offset, limit })?,
                ))
            })?
        }
        Command::Count { filter } => {
            let filter = filter.to_filter()?;
            with_db(open()?, |db| {
                Ok(Output::Count(db.sekha().count_conversations(&filter)?))
            })?
        }
        Command::Update {
            id,
            label,
            folder,
            status,
            importance,
            metadata,
        } => {
            let id = options::conversation_id(&id)?;
            let update = ConversationUpdate {
                label,
                folder,
                status: status.as_deref().map(options::status).transpose()?,
                importance_score: importance,
                metadata: metadata.as_deref().map(options::metadata).transpose()?,
            };
            with_db(open()?, |db| {
                Ok(Output::Changed {
                    action: "updated",
                    conversation: db.sekha().update_conversation(id, update)?,
                })
            })?
        }
        Command::Pin { id } => {
            let id = options::conversation_id(&id)?;
            with_db(open()?, |db| {
                Ok(Output::Changed {
                    action: "pinned",
                    conversation: db.sekha().pin(id)?,
                })
            })?
        }
        Command::Archive { id } => {
            let id = options::conversation_id(&id)?;
            with_db(open()?, |db| {
                Ok(Output::Changed {
                    action: "archived",
                    conversation: db.sekha().archive(id)?,
                })
            })?
        }
        Command::Delete { id } => {
            let id = options::conversation_id(&id)?;
            with_db(open()?, |db| {
                Ok(Output::Deleted {
                    id,
                    messages_removed: db.sekha().delete_conversation(id)?,
                })
            })?
        }
        Command::Stats { filter, storage } => {
            if storage {
                with_db(open()?, |db| Ok(Output::Storage(db.storage()?)))?
            } else {
                let filter = filter.to_filter()?;
                with_db(open()?, |db| Ok(Output::Stats(db.sekha().stats(&filter)?)))?
            }
        }
        Command::Export {
            id,
            filter,
            format,
            output,
        } => {
            let selection = match id {
                Some(id) => Selection::One(options::conversation_id(&id)?),
                None => Selection::Matching(filter.to_filter()?),
            };
            let format = options::export_format(&format)?;
            let (document, conversations) = with_db(open()?, |db| export(db, &selection, format))?;
            let destination = match output {
                None => Destination::Stdout(document),
                Some(path) => {
                    std::fs::write(&path, &document)
                        .with_context(|| format!("writing export to {}", path.display()))?;
                    Destination::File {
                        path,
                        bytes: document.len(),
                    }
                }
            };
            Output::Exported {
                format,
                conversations,
                destination,
            }
        }
        Command::Import {
            file,
            from,
            skip_existing,
            watch,
            imported_dir,
            interval,
        } => import(s, file, from, skip_existing, watch, imported_dir, interval)?,
        Command::Memorg { action } => {
            let (name, args) = memorg_tool_call(action)?;
            let tool = memdb_server::contract::tool(name)
                .ok_or_else(|| anyhow::anyhow!("no tool {name}"))?;
            s.call_tool(tool, args)?
        }
        Command::Tool { name, args, list } => tool(s, name, args, list)?,
        Command::Kb { action } => kb(s, action)?,
        Command::Reindex => with_db(open()?, |db| Ok(Output::Reindexed(db.reindex()?)))?,
        Command::Optimize => with_db(open()?, |db| Ok(Output::Optimized(db.optimize()?)))?,
        Command::Check => with_db(open()?, |db| Ok(Output::Check(db.check()?)))?,
        Command::Verify => with_db(open()?, |db| {
            Ok(Output::Verify {
                recovery: db.recovery_report().to_vec(),
                text: db.check()?,
                vectors: db.verify_vectors()?,
            })
        })?,
        Command::Compact { space } => with_db(open()?, |db| {
            let names = match space {
                Some(name) => vec![name],
                None => db.vector_spaces()?.into_iter().map(|s| s.name).collect(),
            };
            let mut stats = Vec::new();
            for name in names {
                stats.push(db.compact_vectors(&name)?);
            }
            Ok(Output::Spaces(stats))
        })?,
        // main.rs runs the server before dispatching here.
        Command::Serve(_) => anyhow::bail!("`memdb serve` is not a one-shot command"),
        Command::Mcp { .. } => anyhow::bail!("`memdb mcp` is not a one-shot command"),
        Command::Daemon { .. } => anyhow::bail!("`memdb daemon` is run by `daemon::run`"),
        Command::Embed { status } => embed(s, status)?,
        Command::RebuildEmbeddings => rebuild_embeddings(s)?,
        Command::Model { command } => Output::Model(crate::model::run(command)?),
        Command::Spaces => with_db(open()?, |db| {
            let mut stats = Vec::new();
            for s in db.vector_spaces()? {
                stats.push(db.vector_stats(&s.name)?);
            }
            Ok(Output::Spaces(stats))
        })?,
    };
    Ok(output)
}

/// `memdb query`: one search, the embedder's note folded into its notes.
fn query(s: &Stores, args: QueryArgs) -> Result<Output> {
    let request = search_request(args)?;
    let (db, note) = s.open_embedding()?;
    with_db(db, |db| {
        let results = db.sekha().search(&request)?;
        // A hybrid query without a model runs as keyword search; the
        // engine's note says so, the CLI's (from the embedder
        // selection) says how to fix it, and replaces it.
        let replace = note.is_some() && request.mode != SearchMode::Keyword;
        let mut notes: Vec<String> = results
            .notes
            .iter()
            .filter(|n| !(replace && matches!(n, SearchNote::NoEmbedder)))
            .map(ToString::to_string)
            .collect();
        if let Some(note) = note.filter(|_| replace) {
            notes.push(note);
        }
        Ok(Output::Hits {
            query: request.query.clone(),
            explain: request.explain,
            results,
            notes,
        })
    })
}

/// `memdb import`: a memdb export, a chat export, or a watched folder of them.
fn import(
    s: &Stores,
    file: Option<PathBuf>,
    from: Option<ImportFrom>,
    skip_existing: bool,
    watch: Option<PathBuf>,
    imported_dir: Option<PathBuf>,
    interval: u64,
) -> Result<Output> {
    let chat = from.filter(|f| *f != ImportFrom::Memdb);
    if let Some(dir) = watch {
        if from == Some(ImportFrom::Memdb) {
            bail!("--watch imports chat exports: --from chatgpt, claude, markdown, text or auto");
        }
        return watch_imports(
            s.create()?,
            memdb::import::watch::ImportFolder {
                dir,
                imported_dir,
                format: chat.and_then(ImportFrom::chat_format),
            },
            interval,
            s.json,
        );
    }
    let file = file.unwrap_or_else(|| PathBuf::from("-"));
    if let Some(chat) = chat {
        if skip_existing {
            bail!("--skip-existing applies to memdb exports only (chat exports get new ids)");
        }
        let format = chat.chat_format();
        let source = Source::from_arg(Some(&file));
        // Parsed before the store is opened: a bad file writes nothing.
        let (parsed, name) = match &source {
            Source::File(p) => (memdb::import::parse_file(p, format)?, p.clone()),
            Source::Stdin => {
                let text = input::read_text(&source)?;
                let parsed = memdb::import::parse_str(&text, Path::new("-"), format)
                    .map_err(|e| anyhow::anyhow!("invalid <stdin>: {e}"))?;
                (parsed, PathBuf::from("<stdin>"))
            }
        };
        return with_db(s.create()?, |db| {
            let report = db.sekha().import_chat(parsed, &name)?;
            embedder::drain(db)?;
            Ok(Output::ChatImported(report))
        });
    }
    let export = input::export(&Source::from_arg(Some(&file)))?;
    with_db(s.create()?, |db| {
        let bar = embedder::bar("importing {bar:40} {pos}/{len} conversations ({eta})");
        let report = db.sekha().import(
            export,
            ImportOptions { skip_existing },
            &mut |done, total| {
                if let Some(bar) = &bar {
                    bar.set_length(total);
                    bar.set_position(done);
                }
            },
        );
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        let report = report?;
        embedder::drain(db)?;
        Ok(Output::Imported(report))
    })
}

/// `memdb tool`: one MCP tool call, or the list of tools.
fn tool(s: &Stores, name: Option<String>, args: Option<String>, list: bool) -> Result<Output> {
    if list {
        let text = memdb_server::contract::TOOLS
            .iter()
            .map(|t| {
                format!(
                    "{:<20} {:<7} {:<6} {}",
                    t.name(),
                    t.set().as_str(),
                    if t.access() == memdb_server::auth::Access::Write {
                        "write"
                    } else {
                        "read"
                    },
                    t.summary()
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        let data = serde_json::Value::Array(
            memdb_server::contract::TOOLS
                .iter()
                .map(|t| {
                    serde_json::json!({
                        "name": t.name(),
                        "set": t.set().as_str(),
                        "write": t.access() == memdb_server::auth::Access::Write,
                        "summary": t.summary(),
                    })
                })
                .collect(),
        );
        return Ok(Output::Tool { text, data });
    }
    let name = name.unwrap_or_default();
    let tool = memdb_server::contract::tool(&name)
        .ok_or_else(|| anyhow::anyhow!("unknown tool {name:?}; `memdb tool --list` lists them"))?;
    let args = input::tool_args(args.as_deref())?;
    s.call_tool(tool, args)
}

/// `memdb kb`: KuraDB's knowledge bases, through the KuraDB handle.
fn kb(s: &Stores, action: KbAction) -> Result<Output> {
    let json_out = |v: serde_json::Value| Output::Tool {
        text: serde_json::to_string_pretty(&v).unwrap_or_default(),
        data: v,
    };
    Ok(match action {
        KbAction::Add { name, inbox } => with_db(s.create()?, |db| {
            Ok(json_out(serde_json::to_value(
                db.kuradb().add(&name, &inbox)?,
            )?))
        })?,
        KbAction::List => with_db(s.open()?, |db| {
            Ok(json_out(serde_json::to_value(db.kuradb().list()?)?))
        })?,
        KbAction::Rename { old, new } => with_db(s.open()?, |db| {
            Ok(json_out(serde_json::to_value(
                db.kuradb().rename(&old, &new)?,
            )?))
        })?,
        KbAction::Remove { name, yes } => {
            let db = s.open()?;
            let kb = db.kuradb().get(&name)?;
            if !yes {
                confirm_removal(&kb.name)?;
            }
            with_db(db, |db| {
                let removed = db.kuradb().remove(&kb.name)?;
                Ok(json_out(
                    serde_json::json!({"removed": kb.name, "records": removed}),
                ))
            })?
        }
        KbAction::Watch { interval } => {
            let db = std::sync::Arc::new(s.create_ingesting()?);
            let _watcher = memdb::kuradb::watch::KbWatcher::spawn(
                (*db).clone(),
                std::time::Duration::from_secs(interval.max(1)),
            )?;
            // New chunks are embedded in the background.
            let _worker = match db.config().embedder {
                Some(_) => Some(memdb::EmbedWorker::spawn(db.clone())?),
                None => None,
            };
            eprintln!(
                "watching every knowledge base: on change, and every {}s (Ctrl-C stops)",
                interval.max(1)
            );
            // Each file is one transaction: stopping at any point
            // loses nothing a pass committed.
            loop {
                std::thread::sleep(std::time::Duration::from_secs(3600));
            }
        }
        KbAction::Sync { name } => with_db(s.create_ingesting()?, |db| {
            let bar = embedder::bar("parsing {bar:40} {pos}/{len} files ({eta})");
            let report = db.kuradb().sync_with_progress(&name, &mut |p| {
                if let Some(bar) = &bar {
                    bar.set_length(p.total);
                    bar.set_position(p.done);
                }
            })?;
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            let embedded = embedder::drain(db)?.map_or(0, |r| r.embedded);
            let mut v = serde_json::to_value(report)?;
            v["embedded"] = embedded.into();
            Ok(json_out(v))
        })?,
        KbAction::Status { name } => with_db(s.open_embedding()?.0, |db| {
            Ok(json_out(serde_json::to_value(db.kuradb().status(&name)?)?))
        })?,
        KbAction::Search {
            name,
            query,
            mode,
            limit,
        } => {
            let target = memdb::kuradb::RagTarget::parse(mode.as_deref().unwrap_or(""))?;
            with_db(s.open_embedding_noted()?, |db| {
                Ok(json_out(serde_json::to_value(
                    db.kuradb().search(&name, &query, target, limit)?,
                )?))
            })?
        }
    })
}

/// `memdb embed`: drain the embedding queue, or report it.
fn embed(s: &Stores, status: bool) -> Result<Output> {
    let (db, note) = s.open_embedding()?;
    with_db(db, |db| {
        if status {
            return Ok(Output::EmbeddingStatus(db.embedding_status()?));
        }
        if db.config().embedder.is_none() {
            anyhow::bail!(
                "{}",
                note.unwrap_or_else(|| {
                    "no embedding model: pass --embedder local, openai or hashing".into()
                })
            );
        }
        let report = embedder::drain(db)?.unwrap_or_default();
        Ok(Output::Embedded {
            report,
            status: db.embedding_status()?,
        })
    })
}

/// `memdb rebuild-embeddings`: every message re-embedded with the model.
fn rebuild_embeddings(s: &Stores) -> Result<Output> {
    let (db, note) = s.open_embedding()?;
    with_db(db, |db| {
        if db.config().embedder.is_none() {
            anyhow::bail!(
                "{}",
                note.unwrap_or_else(|| {
                    "no embedding model: pass --embedder local, openai or hashing".into()
                })
            );
        }
        let bar = embedder::bar("re-embedding {bar:40} {pos}/{len} messages ({eta})");
        let report = db.rebuild_embeddings(&mut |p| {
            if let Some(bar) = &bar {
                bar.set_length(p.total);
                bar.set_position(p.done);
            }
        });
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
        Ok(Output::Embedded {
            report: report?,
            status: db.embedding_status()?,
        })
    })
}

/// Runs `f` on an open database, then closes it so index commit errors are
/// reported rather than dropped.
fn with_db<T>(db: Memdb, f: impl FnOnce(&Memdb) -> Result<T>) -> Result<T> {
    let value = f(&db)?;
    db.close()?;
    Ok(value)
}

fn search_request(args: QueryArgs) -> Result<SearchRequest> {
    let mode = match args.mode {
        Mode::Keyword => SearchMode::Keyword,
        Mode::Semantic => SearchMode::Semantic,
        Mode::Hybrid => SearchMode::Hybrid,
    };
    Ok(SearchRequest {
        filter: args.filter.to_filter()?,
        conversation_id: args
            .conversation
            .as_deref()
            .map(options::conversation_id)
            .transpose()?,
        role: args.role,
        limit: args.limit,
        offset: args.offset,
        query: args.text,
        mode,
        // `--mode keyword` takes the query syntax; otherwise the query is
        // natural language (SPEC.md §16.2).
        language: if mode == SearchMode::Keyword {
            QueryLanguage::Syntax
        } else {
            QueryLanguage::Natural
        },
        explain: args.explain,
        min_similarity: args.min_similarity,
        weights: FusionWeights {
            keyword: args.keyword_weight,
            semantic: args.semantic_weight,
            method: match args.fusion {
                Fusion::Relative => FusionMethod::RelativeScore,
                Fusion::Rrf => FusionMethod::Rrf,
            },
            ..FusionWeights::default()
        },
    })
}

/// The export document and, for JSON, how many conversations it holds.
fn export(
    db: &Memdb,
    selection: &Selection,
    format: ExportFormat,
) -> Result<(String, Option<usize>)> {
    // The engine's one renderer, from one snapshot.
    let mut doc = Vec::new();
    let n = db
        .sekha()
        .export_stream(selection)?
        .write(format, &mut doc)?;
    let doc = String::from_utf8(doc).context("the export is not UTF-8")?;
    Ok((doc, Some(n)))
}

/// A progress bar on stderr, only when stderr is a terminal.
/// `memdb import --watch`: the import folder watched until stopped; each
/// file's outcome printed (stderr, or one JSON line on stdout with --json).
fn watch_imports(
    db: Memdb,
    folder: memdb::import::watch::ImportFolder,
    interval: u64,
    json: bool,
) -> Result<Output> {
    use memdb::import::watch::{FileOutcome, ImportWatcher};
    let db = std::sync::Arc::new(db);
    let imported = folder.imported();
    let dir = folder.dir.clone();
    let on_file = move |o: &FileOutcome| {
        if json {
            if let Ok(line) = serde_json::to_string(o) {
                println!("{line}");
            }
            return;
        }
        match o {
            FileOutcome::Imported {
                report,
                moved_to,
                move_error,
            } => {
                eprintln!(
                    "imported {}: {} ({}) as {}{}",
                    report.file,
                    crate::output::plural(report.conversations, "conversation"),
                    crate::output::plural(report.messages, "message"),
                    report.format,
                    match (moved_to, move_error) {
                        (Some(to), _) => format!(", moved to {}", to.display()),
                        (None, Some(e)) => format!(", NOT moved: {e}"),
                        (None, None) => String::new(),
                    }
                );
            }
            FileOutcome::Failed { error, .. } => {
                eprintln!("error: {error} (left in place)");
            }
        }
    };
    let _watcher = ImportWatcher::spawn(
        (*db).clone(),
        folder,
        std::time::Duration::from_secs(interval.max(1)),
        Some(Box::new(on_file)),
    )?;
    // Imported messages are embedded in the background.
    let _worker = match db.config().embedder {
        Some(_) => Some(memdb::EmbedWorker::spawn(db.clone())?),
        None => None,
    };
    eprintln!(
        "watching {} for chat exports (imported files go to {}): on change, and every {}s (Ctrl-C stops)",
        dir.display(),
        imported.display(),
        interval.max(1)
    );
    // Each file is one transaction: stopping at any point loses nothing
    // an import committed.
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

/// `kb remove` without `--yes`: the name typed back on stdin (a terminal or
/// a pipe); anything else aborts with nothing removed.
fn confirm_removal(name: &str) -> Result<()> {
    eprintln!("type the name of the knowledge base to remove it ({name}):");
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .context("reading the confirmation")?;
    if line.trim() != name {
        anyhow::bail!("not removed: the confirmation did not match {name:?} (or pass --yes)");
    }
    Ok(())
}

/// The Memorg tool a `memdb memorg` action calls, with its arguments.
fn memorg_tool_call(action: MemorgAction) -> Result<(&'static str, serde_json::Value)> {
    use serde_json::json;
    let object = |field: &str, text: Option<String>| -> Result<serde_json::Value> {
        match text {
            None => Ok(json!({})),
            Some(t) => {
                let v: serde_json::Value =
                    serde_json::from_str(&t).with_context(|| format!("--{field} is not JSON"))?;
                anyhow::ensure!(v.is_object(), "--{field} must be a JSON object");
                Ok(v)
            }
        }
    };
    Ok(match action {
        MemorgAction::Session { user_id } => ("create_session", json!({"user_id": user_id})),
        MemorgAction::Show { session_id } => ("get_session", json!({"session_id": session_id})),
        MemorgAction::Conversation { session_id, title } => (
            "start_conversation",
            json!({"session_id": session_id, "title": title}),
        ),
        MemorgAction::Topic {
            conversation_id,
            title,
            summary,
        } => (
            "create_topic",
            json!({"conversation_id": conversation_id, "title": title, "summary": summary}),
        ),
        MemorgAction::Exchange {
            topic_id,
            user_message,
            system_message,
        } => (
            "add_exchange",
            json!({"topic_id": topic_id, "user_message": user_message, "system_message": system_message}),
        ),
        MemorgAction::SearchContext {
            query,
            scope,
            scope_id,
            max_results,
            page,
        } => (
            "search_context",
            json!({"query": query, "scope": scope, "scope_id": scope_id,
                   "max_results": max_results, "page": page}),
        ),
        MemorgAction::Optimize {
            file,
            max_tokens,
            template,
        } => {
            let content = input::read_text(&Source::from_arg(Some(&file)))?;
            (
                "optimize_context",
                json!({"content": content, "max_tokens": max_tokens, "template": template}),
            )
        }
        MemorgAction::Usage => ("get_memory_usage", json!({})),
        MemorgAction::Item {
            content,
            item_type,
            parent,
            tags,
            metadata,
        } => (
            "create_memory_item",
            json!({"content": content, "item_type": item_type, "parent_id": parent,
                   "tags": tags, "metadata": object("metadata", metadata)?}),
        ),
        MemorgAction::SearchMemory {
            query,
            tags,
            types,
            filter,
            limit,
        } => (
            "search_memory",
            json!({"query": query, "tags": tags, "item_types": types, "limit": limit,
                   "filters": filter.map(|f| object("filter", Some(f))).transpose()?}),
        ),
        MemorgAction::Context {
            item_id,
            depth,
            siblings,
        } => (
            "get_item_context",
            json!({"item_id": item_id, "depth": depth, "include_siblings": siblings}),
        ),
        MemorgAction::Delete { id } => ("delete_memory_item", json!({"item_id": id})),
    })
}
