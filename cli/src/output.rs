//! What a command produced, rendered as human text or as one JSON document.
//!
//! JSON output serializes the engine's own types (`ConversationWithMessages`,
//! `ConversationPage`, `Stats`, ...) so scripts see the same field names as
//! the engine API; only results without an engine type (search hits, counts,
//! deletions) get a small object built here.

use std::fmt::Write as _;
use std::path::PathBuf;

use chrono::{DateTime, SecondsFormat, Utc};
use memdb::{
    CheckReport, Conversation, ConversationPage, ConversationWithMessages, ExportFormat,
    ImportReport, Message, SearchResults, Stats,
};
use serde_json::{Value, json};
use uuid::Uuid;

/// Longest search snippet, in characters.
const SNIPPET_CHARS: usize = 120;

/// The result of one command.
pub enum Output {
    Stored(ConversationWithMessages),
    Appended {
        conversation_id: Uuid,
        messages: Vec<Message>,
    },
    Hits {
        query: String,
        explain: bool,
        results: SearchResults,
        /// The notes to print: the engine's, rendered, with the CLI's own
        /// in place of any it replaced.
        notes: Vec<String>,
    },
    Conversation(ConversationWithMessages),
    Metadata(Conversation),
    Page(ConversationPage),
    Count(u64),
    /// `tool`: the tool's text rendering and its JSON data.
    Tool {
        text: String,
        data: Value,
    },
    Changed {
        action: &'static str,
        conversation: Conversation,
    },
    Deleted {
        id: Uuid,
        messages_removed: u64,
    },
    Stats(Stats),
    Storage(memdb::StorageReport),
    Exported {
        format: ExportFormat,
        /// Known for JSON exports (the engine renders Markdown opaquely).
        conversations: Option<usize>,
        destination: Destination,
    },
    Imported(ImportReport),
    /// `import --from chatgpt|claude|markdown|text|auto`.
    ChatImported(memdb::import::ChatImportReport),
    Reindexed(u64),
    Optimized(memdb::TextIndexStatus),
    Check(CheckReport),
    /// `verify`: text index consistency and vector generation checks.
    Verify {
        text: CheckReport,
        vectors: Vec<memdb::VerifyOutcome>,
        recovery: Vec<String>,
    },
    /// `spaces`, `compact`: per-space index statistics.
    Spaces(Vec<memdb::VectorStats>),
    /// `embed --status`.
    EmbeddingStatus(memdb::EmbeddingStatus),
    /// `embed`, `rebuild-embeddings`.
    Embedded {
        report: memdb::EmbedReport,
        status: memdb::EmbeddingStatus,
    },
    /// `model install`, `model status`.
    Model(crate::model::Report),
    /// `daemon start|stop|status|restart`.
    Daemon(crate::daemon::Report),
}

/// Where an export went.
pub enum Destination {
    /// Not written yet: the document is the command's stdout.
    Stdout(String),
    /// Written to a file of this many bytes.
    File { path: PathBuf, bytes: usize },
}

impl Output {
    /// The command's stdout.
    pub fn render(&self, json: bool) -> String {
        if json {
            let mut s = match self {
                // A JSON export on stdout is already the JSON document.
                Output::Exported {
                    format: ExportFormat::Json,
                    destination: Destination::Stdout(doc),
                    ..
                } => doc.clone(),
                other => serde_json::to_string_pretty(&other.to_json())
                    .unwrap_or_else(|e| json!({"error": e.to_string()}).to_string()),
            };
            if !s.ends_with('\n') {
                s.push('\n');
            }
            s
        } else {
            self.to_human()
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Output::Stored(c) | Output::Conversation(c) => to_value(c),
            Output::Appended {
                conversation_id,
                messages,
            } => json!({
                "conversation_id": conversation_id,
                "appended": messages.len(),
                "messages": messages,
            }),
            Output::Hits {
                query,
                results,
                notes,
                ..
            } => {
                let mut out = json!({
                    "query": query,
                    "mode": results.mode,
                    "notes": notes,
                    "results": results.hits.iter().map(|h| {
                        let mut v = json!({
                            "score": h.score,
                            "message_id": h.message.id,
                            "conversation_id": h.message.conversation_id,
                            "label": h.label,
                            "folder": h.folder,
                            "role": h.message.role,
                            "timestamp": h.message.timestamp,
                            "content": h.message.content,
                        });
                        if let (Some(e), Value::Object(m)) = (&h.explain, &mut v) {
                            m.insert("explain".into(), to_value(e));
                        }
                        v
                    }).collect::<Vec<_>>(),
                    "total": results.hits.len(),
                });
                if let (false, Value::Object(m)) = (results.plan.is_empty(), &mut out) {
                    m.insert("plan".into(), to_value(&results.plan));
                }
                out
            }
            Output::Metadata(c) => to_value(c),
            Output::Page(p) => to_value(p),
            Output::Count(n) => json!({ "count": n }),
            Output::Tool { data, .. } => data.clone(),
            Output::Daemon(r) => r.data.clone(),
            Output::Changed { conversation, .. } => to_value(conversation),
            Output::Deleted {
                id,
                messages_removed,
            } => json!({
                "id": id,
                "deleted": true,
                "messages_removed": messages_removed,
            }),
            Output::Stats(s) => to_value(s),
            Output::Storage(r) => to_value(r),
            Output::Exported {
                format,
                conversations,
                destination,
            } => match destination {
                Destination::Stdout(doc) => json!({
                    "format": format,
                    "conversations": conversations,
                    "content": doc,
                }),
                Destination::File { path, bytes } => json!({
                    "format": format,
                    "conversations": conversations,
                    "output": path,
                    "bytes": bytes,
                }),
            },
            Output::Imported(r) => to_value(r),
            Output::ChatImported(r) => to_value(r),
            Output::Reindexed(n) => json!({ "indexed": n }),
            Output::Optimized(s) => to_value(s),
            Output::Check(r) => {
                let mut v = to_value(r);
                if let Value::Object(m) = &mut v {
                    m.insert("consistent".into(), Value::Bool(r.is_consistent()));
                }
                v
            }
            Output::Verify {
                text,
                vectors,
                recovery,
            } => json!({
                "recovery": recovery,
                "text": {"consistent": text.is_consistent(), "messages": text.messages, "indexed": text.indexed},
                "vectors": to_value(vectors),
                "ok": text.is_consistent() && vectors.iter().all(|v| v.error.is_none()),
            }),
            Output::Spaces(stats) => json!({ "spaces": to_value(stats) }),
            Output::EmbeddingStatus(s) => to_value(s),
            Output::Embedded { report, status } => json!({
                "report": to_value(report),
                "status": to_value(status),
            }),
            Output::Model(report) => report.to_json(),
        }
    }

    fn to_human(&self) -> String {
        let mut out = String::new();
        let o = &mut out;
        match self {
            Output::Stored(c) => {
                let conv = &c.conversation;
                line(
                    o,
                    format_args!(
                        "stored conversation {} ({}) label={:?} folder={}",
                        conv.id,
                        plural(c.messages.len() as u64, "message"),
                        conv.label,
                        conv.folder
                    ),
                );
            }
            Output::Appended {
                conversation_id,
                messages,
            } => line(
                o,
                format_args!(
                    "appended {} to conversation {conversation_id}",
                    plural(messages.len() as u64, "message")
                ),
            ),
            Output::Hits {
                query,
                explain,
                results,
                notes,
            } => {
                let hits = &results.hits;
                for note in notes {
                    line(o, format_args!("note: {note}"));
                }
                if hits.is_empty() {
                    line(
                        o,
                        format_args!("no results for {query:?} ({})", results.mode.as_str()),
                    );
                }
                for (i, h) in hits.iter().enumerate() {
                    line(
                        o,
                        format_args!(
                            "{:>3}. {:.3}  {}  {}  {}  {}  conversation {} message {}",
                            i + 1,
                            h.score,
                            h.label,
                            h.folder,
                            time(&h.message.timestamp),
                            h.message.role,
                            h.message.conversation_id,
                            h.message.id
                        ),
                    );
                    line(
                        o,
                        format_args!("     {}", snippet(&h.message.content.text())),
                    );
                    if let (true, Some(e)) = (*explain, &h.explain) {
                        line(o, format_args!("     {}", explain_line(e)));
                    }
                }
                for p in &results.plan {
                    line(o, format_args!("plan: {}", plan_line(p)));
                }
            }
            Output::Conversation(c) => {
                conversation(o, &c.conversation);
                line(o, format_args!(""));
                for m in &c.messages {
                    line(
                        o,
                        format_args!("[{}] {} ({})", time(&m.timestamp), m.role, m.id),
                    );
                    for l in m.content.text().lines() {
                        line(o, format_args!("    {l}"));
                    }
                }
            }
            Output::Metadata(c) => conversation(o, c),
            Output::Page(p) => {
                if p.conversations.is_empty() {
                    line(o, format_args!("no conversations ({} total)", p.total));
                } else {
                    line(
                        o,
                        format_args!(
                            "{:<36}  {:<20}  {:<8}  {:>3}  {:>5}  {:<16}  LABEL",
                            "ID", "UPDATED", "STATUS", "IMP", "MSGS", "FOLDER"
                        ),
                    );
                    for c in &p.conversations {
                        line(
                            o,
                            format_args!(
                                "{:<36}  {:<20}  {:<8}  {:>3}  {:>5}  {:<16}  {}",
                                c.id,
                                time(&c.updated_at),
                                c.status,
                                c.importance_score,
                                c.message_count,
                                c.folder,
                                c.label
                            ),
                        );
                    }
                    line(
                        o,
                        format_args!(
                            "showing {}-{} of {}",
                            p.offset + 1,
                            p.offset + p.conversations.len(),
                            p.total
                        ),
                    );
                }
            }
            Output::Count(n) => line(o, format_args!("{n}")),
            Output::Tool { text, .. } => line(o, format_args!("{text}")),
            Output::Daemon(r) => line(o, format_args!("{}", r.text)),
            Output::Changed {
                action,
                conversation: c,
            } => line(
                o,
                format_args!(
                    "{action} conversation {}: label={:?} folder={} status={} importance={}{}",
                    c.id,
                    c.label,
                    c.folder,
                    c.status,
                    c.importance_score,
                    if c.pinned { " (pinned)" } else { "" }
                ),
            ),
            Output::Deleted {
                id,
                messages_removed,
            } => line(
                o,
                format_args!(
                    "deleted conversation {id} ({} removed)",
                    plural(*messages_removed, "message")
                ),
            ),
            Output::Stats(s) => stats(o, s),
            Output::Storage(r) => storage(o, r),
            Output::Exported {
                format,
                conversations,
                destination,
            } => match destination {
                Destination::Stdout(doc) => {
                    o.push_str(doc);
                    if !doc.ends_with('\n') {
                        o.push('\n');
                    }
                }
                Destination::File { path, bytes } => {
                    let what = conversations
                        .map_or_else(String::new, |n| plural(n as u64, "conversation") + " ");
                    line(
                        o,
                        format_args!(
                            "exported {what}as {} to {} ({bytes} bytes)",
                            format_name(*format),
                            path.display()
                        ),
                    );
                }
            },
            Output::Imported(r) => line(
                o,
                format_args!(
                    "imported {} ({}), skipped {} existing",
                    plural(r.imported, "conversation"),
                    plural(r.messages, "message"),
                    r.skipped
                ),
            ),
            Output::ChatImported(r) => line(
                o,
                format_args!(
                    "imported {} ({}) from {} as {}; skipped {} without messages and {}",
                    plural(r.conversations, "conversation"),
                    plural(r.messages, "message"),
                    r.file,
                    r.format,
                    plural(r.skipped, "conversation"),
                    plural(r.skipped_messages, "blank message"),
                ),
            ),
            Output::Reindexed(n) => line(o, format_args!("reindexed {n} documents")),
            Output::Optimized(s) => line(
                o,
                format_args!(
                    "text index: {} segment(s), durable to LSN {}",
                    s.segments, s.durable_lsn
                ),
            ),
            Output::Check(r) => check(o, r),
            Output::Verify {
                text,
                vectors,
                recovery,
            } => {
                for event in recovery {
                    line(o, format_args!("recovered on open: {event}"));
                }
                check(o, text);
                for v in vectors {
                    match &v.error {
                        None => line(o, format_args!("vector space {}: ok", v.space)),
                        Some(e) => line(
                            o,
                            format_args!(
                                "vector space {}: DAMAGED ({e}){}",
                                v.space,
                                if v.rebuilt {
                                    "; rebuilt from the store"
                                } else {
                                    ""
                                }
                            ),
                        ),
                    }
                }
            }
            Output::EmbeddingStatus(s) => embedding_status(o, s),
            Output::Embedded { report, status } => {
                line(
                    o,
                    format_args!(
                        "embedded {}, skipped {} without text, {} truncated, {} still queued{}",
                        plural(report.embedded, "message"),
                        report.skipped_empty,
                        report.truncated,
                        report.remaining,
                        if report.switched {
                            "; switched to the new vector space"
                        } else {
                            ""
                        }
                    ),
                );
                embedding_status(o, status);
            }
            Output::Spaces(stats) => {
                if stats.is_empty() {
                    line(o, format_args!("no vector spaces"));
                }
                for st in stats {
                    line(
                        o,
                        format_args!(
                            "{}  vectors {}  generation {} (lsn {}, {} nodes, {} bytes)  delta {}  tombstones {}",
                            st.space,
                            st.count,
                            st.generation,
                            st.generation_lsn,
                            st.generation_nodes,
                            st.file_bytes,
                            st.delta,
                            st.tombstones
                        ),
                    );
                    if let Some(b) = &st.last_build {
                        if b.merged {
                            line(
                                o,
                                format_args!(
                                    "  merged into the previous generation: {} nodes kept, {} dropped, {} inserted",
                                    b.kept, b.dropped, b.inserted
                                ),
                            );
                        } else {
                            line(
                                o,
                                format_args!("  rebuilt: {} vectors inserted", b.inserted),
                            );
                        }
                    }
                }
            }
            Output::Model(report) => o.push_str(&report.to_human()),
        }
        out
    }

    /// `daemon status` found no server (exit 3).
    pub fn not_running(&self) -> bool {
        matches!(
            self,
            Output::Daemon(crate::daemon::Report {
                exit: crate::daemon::Exit::NotRunning,
                ..
            })
        )
    }

    /// A one-line reason the command failed although it produced output
    /// (`check` finding an inconsistency).
    pub fn failure(&self) -> Option<String> {
        match self {
            Output::Daemon(crate::daemon::Report {
                exit: crate::daemon::Exit::Failed(why),
                ..
            }) => Some(why.clone()),
            Output::Check(r) if !r.is_consistent() => Some(format!(
                "text index is inconsistent with the store ({} missing, {} extra, {} messages vs {} indexed); run `memdb reindex`",
                r.missing_from_index.len(),
                r.extra_in_index.len(),
                r.messages,
                r.indexed
            )),
            Output::Verify { text, vectors, .. } => {
                let damaged: Vec<&str> = vectors
                    .iter()
                    .filter(|v| v.error.is_some())
                    .map(|v| v.space.as_str())
                    .collect();
                if !text.is_consistent() {
                    Some("text index is inconsistent with the store; run `memdb reindex`".into())
                } else if !damaged.is_empty() {
                    Some(format!(
                        "damaged vector generation(s) in {} (rebuilt from the store)",
                        damaged.join(", ")
                    ))
                } else {
                    None
                }
            }
            Output::Model(report) => report.failure(),
            _ => None,
        }
    }
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_else(|e| json!({ "error": e.to_string() }))
}

fn line(o: &mut String, args: std::fmt::Arguments<'_>) {
    let _ = o.write_fmt(args);
    o.push('\n');
}

/// `1 message`, `2 messages`.
pub(crate) fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn time(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn format_name(f: ExportFormat) -> &'static str {
    match f {
        ExportFormat::Json => "json",
        ExportFormat::Markdown => "markdown",
    }
}

/// `text` on one line: whitespace runs collapsed, cut at `SNIPPET_CHARS`
/// characters (never inside a character).
pub fn snippet(text: &str) -> String {
    let mut out = String::new();
    let mut chars = 0;
    for word in text.split_whitespace() {
        if chars > 0 {
            out.push(' ');
            chars += 1;
        }
        for c in word.chars() {
            if chars >= SNIPPET_CHARS {
                out.push('…');
                return out;
            }
            out.push(c);
            chars += 1;
        }
    }
    out
}

fn conversation(o: &mut String, c: &Conversation) {
    line(o, format_args!("conversation {}", c.id));
    line(o, format_args!("  label:      {}", c.label));
    line(o, format_args!("  folder:     {}", c.folder));
    line(o, format_args!("  status:     {}", c.status));
    line(
        o,
        format_args!(
            "  importance: {}{}",
            c.importance_score,
            if c.pinned { " (pinned)" } else { "" }
        ),
    );
    line(o, format_args!("  messages:   {}", c.message_count));
    line(o, format_args!("  words:      {}", c.word_count));
    line(o, format_args!("  created:    {}", time(&c.created_at)));
    line(o, format_args!("  updated:    {}", time(&c.updated_at)));
    if c.metadata.as_object().is_some_and(|m| !m.is_empty()) {
        line(o, format_args!("  metadata:   {}", c.metadata));
    }
}

fn stats(o: &mut String, s: &Stats) {
    line(o, format_args!("conversations   {}", s.total_conversations));
    line(o, format_args!("messages        {}", s.total_messages));
    line(o, format_args!("words           {}", s.total_words));
    line(o, format_args!("active          {}", s.active));
    line(o, format_args!("archived        {}", s.archived));
    line(o, format_args!("pinned          {}", s.pinned));
    line(
        o,
        format_args!("avg importance  {:.2}", s.average_importance),
    );
    for (title, map) in [("FOLDER", &s.by_folder), ("LABEL", &s.by_label)] {
        if map.is_empty() {
            continue;
        }
        let width = map
            .keys()
            .map(|k| k.chars().count())
            .max()
            .unwrap_or(0)
            .max(title.len());
        line(o, format_args!(""));
        line(o, format_args!("{title:<width$}  CONVERSATIONS"));
        for (k, n) in map {
            line(o, format_args!("{k:<width$}  {n}"));
        }
    }
}

fn storage(o: &mut String, r: &memdb::StorageReport) {
    let mb = |b: u64| b as f64 / 1e6;
    line(
        o,
        format_args!(
            "store file      {:.2} MB ({:.2} MB allocated)",
            mb(r.store_file_bytes),
            mb(r.store_allocated_bytes)
        ),
    );
    line(
        o,
        format_args!("text index      {:.2} MB", mb(r.text_index_bytes)),
    );
    line(
        o,
        format_args!("vector files    {:.2} MB", mb(r.vector_files_bytes)),
    );
    let width = r
        .tables
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(0)
        .max("TABLE".len());
    line(o, format_args!(""));
    line(
        o,
        format_args!(
            "{:<width$}  {:>10}  {:>10}  {:>10}  {:>10}",
            "TABLE", "ROWS", "DATA MB", "BTREE MB", "UNFILLED MB"
        ),
    );
    for t in &r.tables {
        line(
            o,
            format_args!(
                "{:<width$}  {:>10}  {:>10.2}  {:>10.2}  {:>10.2}",
                t.name,
                t.entries,
                mb(t.stored_bytes),
                mb(t.metadata_bytes),
                mb(t.fragmented_bytes)
            ),
        );
    }
}

fn check(o: &mut String, r: &CheckReport) {
    line(o, format_args!("conversations       {}", r.conversations));
    line(o, format_args!("messages            {}", r.messages));
    line(o, format_args!("indexed documents   {}", r.indexed));
    line(
        o,
        format_args!("missing from index  {}", r.missing_from_index.len()),
    );
    line(
        o,
        format_args!("extra in index      {}", r.extra_in_index.len()),
    );
    line(o, format_args!("store lsn           {}", r.store_lsn));
    line(o, format_args!("text index lsn      {}", r.text_index_lsn));
    line(
        o,
        format_args!("text durable lsn    {}", r.text_durable_lsn),
    );
    line(o, format_args!("text segments       {}", r.text_segments));
    for id in &r.missing_from_index {
        line(o, format_args!("  missing {id}"));
    }
    for id in &r.extra_in_index {
        line(o, format_args!("  extra   {id}"));
    }
    line(
        o,
        format_args!(
            "{}",
            if r.is_consistent() {
                "consistent"
            } else {
                "INCONSISTENT"
            }
        ),
    );
}

/// One graph's search plan: `generation: two_hop, 9,956 of 100,000 nodes
/// allowed (exact at <= 2,530)`.
fn plan_line(p: &memdb::VectorPlan) -> String {
    format!(
        "{}: {}, {}{} of {} nodes allowed (exact at <= {})",
        to_value(&p.part).as_str().unwrap_or("?"),
        to_value(&p.path).as_str().unwrap_or("?"),
        if p.estimated { "about " } else { "" },
        p.allowed,
        p.nodes,
        p.exact_threshold
    )
}

fn explain_line(e: &memdb::ScoreExplain) -> String {
    let mut parts = Vec::new();
    // Hybrid scores each candidate on both signals: a score without a rank
    // was filled in for a candidate the other ranking found.
    match (e.keyword_rank, e.keyword_score) {
        (Some(r), Some(s)) => parts.push(format!("keyword #{r} bm25 {s:.3}")),
        (None, Some(s)) => parts.push(format!("keyword unranked bm25 {s:.3}")),
        _ => {}
    }
    match (e.semantic_rank, e.similarity) {
        (Some(r), Some(s)) => parts.push(format!("semantic #{r} cosine {s:.3}")),
        (None, Some(s)) => parts.push(format!("semantic unranked cosine {s:.3}")),
        _ => {}
    }
    if let Some(r) = e.neighbour_of {
        parts.push(format!("neighbour of #{r}"));
    }
    if let Some(b) = e.period_boost {
        parts.push(if b > 0.0 {
            format!("inside the period +{b}")
        } else {
            "outside the period".to_string()
        });
    }
    if let Some(f) = e.short_factor {
        parts.push(format!("short turn x{f:.2}"));
    }
    if let Some(f) = e.speaker_factor.filter(|f| *f < 1.0) {
        parts.push(format!("other speaker x{f:.2}"));
    }
    if let Some(f) = e.session_factor.filter(|f| *f > 1.0) {
        parts.push(format!("session x{f:.2}"));
    }
    if let Some(r) = e.session_from {
        parts.push(format!("new session, up from #{r}"));
    }
    // The weights the fusion used, where the question moved them.
    if let Some(w) = e.keyword_weight {
        parts.push(format!("keyword weight {w:.2}"));
    }
    if let Some(w) = e.semantic_weight {
        parts.push(format!("semantic weight {w:.2} (a question)"));
    }
    if let Some(f) = e.fused {
        parts.push(format!("fused {f:.5}"));
    }
    parts.join(", ")
}

/// How a space treats a passage longer than the model reads, as the
/// status line's suffix.
fn long_passage(l: memdb::LongPassage) -> &'static str {
    match l {
        memdb::LongPassage::First => ", a long one by its beginning",
        memdb::LongPassage::Mean => ", a long one as the mean of its windows",
    }
}

fn embedding_status(o: &mut String, s: &memdb::EmbeddingStatus) {
    let model = |m: &memdb::ModelIdentity| {
        format!(
            "{}/{} ({} dims, {:?})",
            m.provider, m.name, m.dimension, m.metric
        )
    };
    match &s.configured {
        Some(m) => line(o, format_args!("model: {}", model(m))),
        None => line(o, format_args!("model: none")),
    }
    match &s.active {
        Some(a) => line(
            o,
            format_args!(
                "active space: {} holding {} ({} passages{}), {} queued",
                a.space,
                model(&a.model),
                a.passage.name(),
                long_passage(a.long_passage),
                a.pending
            ),
        ),
        None => line(o, format_args!("active space: none (no embeddings yet)")),
    }
    if let Some(r) = &s.rebuilding {
        line(
            o,
            format_args!(
                "rebuilding into: {} with {} ({} passages{}), {} queued",
                r.space,
                model(&r.model),
                r.passage.name(),
                long_passage(r.long_passage),
                r.pending
            ),
        );
    }
    if let Some(e) = &s.last_error {
        line(o, format_args!("last embedding error: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_are_one_line_and_cut_on_chars() {
        assert_eq!(snippet("a\n\n b\tc "), "a b c");
        let long = "é".repeat(500);
        let s = snippet(&long);
        assert_eq!(s.chars().count(), SNIPPET_CHARS + 1);
        assert!(s.ends_with('…'));
    }

    #[test]
    fn an_explanation_names_the_factors_that_moved_a_score() {
        let e = memdb::ScoreExplain {
            keyword_rank: Some(2),
            keyword_score: Some(3.5),
            short_factor: Some(0.73),
            speaker_factor: Some(0.8),
            session_factor: Some(1.25),
            session_from: Some(14),
            keyword_weight: Some(0.75),
            semantic_weight: Some(0.6),
            fused: Some(0.5),
            ..Default::default()
        };
        assert_eq!(
            explain_line(&e),
            "keyword #2 bm25 3.500, short turn x0.73, other speaker x0.80, \
             session x1.25, new session, up from #14, keyword weight 0.75, semantic weight 0.60 (a question), fused 0.50000"
        );
        let plain = memdb::ScoreExplain {
            speaker_factor: Some(1.0),
            ..Default::default()
        };
        assert_eq!(explain_line(&plain), "");
    }
}
