//! Export (JSON and Markdown) and import of the JSON export.
//!
//! The JSON export is the interchange format: `{format: "memdb-export",
//! version: 1, exported_at, conversations: [{...conversation, messages}]}`.
//! Importing it restores ids, timestamps, status, importance and metadata, so
//! export → import round-trips. Markdown is for people and is not imported.

use std::collections::VecDeque;
use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::types::{ConversationWithMessages, Filter, Page};
use crate::sekha::Sekha;
use crate::store::conversations::{self, ConversationsView};

/// The `format` tag of a JSON export.
pub const EXPORT_FORMAT: &str = "memdb-export";
/// The export layout version this build writes and reads.
pub const EXPORT_VERSION: u32 = 1;
/// Import writes conversations in transactions of about this many messages.
const IMPORT_BATCH_MESSAGES: usize = 20_000;

/// A JSON export document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Export {
    /// Always [`EXPORT_FORMAT`].
    pub format: String,
    /// [`EXPORT_VERSION`].
    pub version: u32,
    /// When the export was made.
    pub exported_at: DateTime<Utc>,
    /// The conversations with their messages.
    pub conversations: Vec<ConversationWithMessages>,
}

/// Output format of [`Sekha::export_to_string`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// The JSON export document (importable).
    Json,
    /// Human-readable Markdown.
    Markdown,
}

impl ExportFormat {
    /// The name used on every surface: `json` or `markdown`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExportFormat::Json => "json",
            ExportFormat::Markdown => "markdown",
        }
    }
}

impl std::str::FromStr for ExportFormat {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "json" => Ok(ExportFormat::Json),
            "markdown" | "md" => Ok(ExportFormat::Markdown),
            other => Err(Error::invalid(
                "format",
                format!("unknown export format {other:?}: expected json or markdown"),
            )),
        }
    }
}

/// What to export.
#[derive(Debug, Clone, PartialEq)]
pub enum Selection {
    /// One conversation.
    One(Uuid),
    /// Every conversation matching a filter, newest updated first.
    Matching(Filter),
}

/// How import treats conversations whose id already exists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// Skip existing ids instead of failing before anything is written.
    pub skip_existing: bool,
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportReport {
    /// Conversations written.
    pub imported: u64,
    /// Messages written.
    pub messages: u64,
    /// Conversations skipped because their id existed.
    pub skipped: u64,
}

impl Sekha<'_> {
    /// Collects the selected conversations with their messages.
    pub fn export(&self, selection: &Selection) -> Result<Export> {
        let conversations = match selection {
            Selection::One(id) => vec![self.get_conversation_with_messages(*id)?],
            Selection::Matching(filter) => {
                let mut out = Vec::new();
                let mut offset = 0;
                loop {
                    let page = self.list_conversations(
                        filter,
                        Page {
                            offset,
                            limit: crate::model::filter::MAX_LIMIT,
                        },
                    )?;
                    let n = page.conversations.len();
                    for c in page.conversations {
                        out.push(self.get_conversation_with_messages(c.id)?);
                    }
                    offset += n;
                    if n == 0 || offset as u64 >= page.total {
                        break;
                    }
                }
                out
            }
        };
        Ok(Export {
            format: EXPORT_FORMAT.into(),
            version: EXPORT_VERSION,
            exported_at: crate::util::time::now(),
            conversations,
        })
    }

    /// Exports the selection as a JSON document or as Markdown.
    pub fn export_to_string(&self, selection: &Selection, format: ExportFormat) -> Result<String> {
        let mut out = Vec::new();
        self.export_stream(selection)?.write(format, &mut out)?;
        String::from_utf8(out).map_err(|e| Error::Store(format!("export is not UTF-8: {e}")))
    }

    /// The selection as of now, from one read snapshot, to be written one
    /// conversation at a time ([`ExportStream::write`]): writes and deletes
    /// that commit meanwhile are not seen, and memory holds one batch of
    /// ids ([`EXPORT_BATCH`]) plus one conversation, whatever the store's
    /// size. Order: newest `updated_at` first (the update-time index, read
    /// in batches from a cursor; filters are applied row by row).
    pub fn export_stream(&self, selection: &Selection) -> Result<ExportStream> {
        let txn = self.db.snapshot()?;
        let ns = self.db.ns_read()?;
        let (filter, pending) = match selection {
            Selection::One(id) => {
                // Fails now, with NotFound, rather than mid-stream.
                let (_, in_ns) = crate::store::vectors::conversation_with_messages_in(&txn, *id)?;
                self.db.ns_check("conversation", *id, in_ns)?;
                (None, VecDeque::from([id.as_u128()]))
            }
            Selection::Matching(filter) => (
                Some(crate::model::filter::normalize_filter(filter)?),
                VecDeque::new(),
            ),
        };
        Ok(ExportStream {
            txn,
            ns,
            filter,
            pending,
            cursor: None,
            exhausted: false,
            exported_at: crate::util::time::now(),
        })
    }

    /// Imports a JSON export. Every conversation is validated and checked for
    /// id conflicts before anything is written; then each conversation is
    /// written in transactions of about 20,000 messages. `progress(done,
    /// total)` (conversations) is called after each transaction.
    pub fn import(
        &self,
        export: Export,
        options: ImportOptions,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<ImportReport> {
        if export.format != EXPORT_FORMAT {
            return Err(Error::invalid(
                "format",
                format!("expected {EXPORT_FORMAT:?}, found {:?}", export.format),
            ));
        }
        if export.version != EXPORT_VERSION {
            return Err(Error::invalid(
                "version",
                format!(
                    "export version {} is not supported (this build reads {EXPORT_VERSION})",
                    export.version
                ),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        let mut todo = Vec::with_capacity(export.conversations.len());
        let mut report = ImportReport::default();
        for (i, c) in export.conversations.into_iter().enumerate() {
            let id = c.conversation.id;
            if !seen.insert(id) {
                return Err(Error::invalid(
                    format!("conversations[{i}].id"),
                    format!("duplicate id {id}"),
                ));
            }
            let prepared = self
                .db
                .prepare_import(c)
                .map_err(|e| e.in_item("conversations", i))?;
            if self.conversation_exists(id)? {
                if options.skip_existing {
                    report.skipped += 1;
                    continue;
                }
                return Err(Error::Conflict(format!(
                    "conversation {id} already exists (use skip-existing to import the rest)"
                )));
            }
            todo.push(prepared);
        }
        let total = todo.len() as u64;
        let mut batch = Vec::new();
        let mut batch_messages = 0;
        let mut todo = todo.into_iter().peekable();
        while let Some(p) = todo.next() {
            batch_messages += p.message_count();
            batch.push(p);
            if batch_messages >= IMPORT_BATCH_MESSAGES || todo.peek().is_none() {
                let n = batch.len() as u64;
                self.db.write_imports(std::mem::take(&mut batch))?;
                report.imported += n;
                report.messages += batch_messages as u64;
                batch_messages = 0;
                progress(report.imported, total);
            }
        }
        // Searchable by keyword on return, and the text writer's in-memory
        // segment freed before any embedding drain that follows (as a
        // knowledge-base sync ends, §15.2).
        self.db.fresh_text()?;
        Ok(report)
    }
}

/// Conversation ids an export reads from its snapshot at a time.
pub const EXPORT_BATCH: usize = 256;

/// An export read from one snapshot (see [`Sekha::export_stream`]).
pub struct ExportStream {
    txn: crate::store::Snapshot,
    /// The namespace exported.
    ns: u32,
    /// `None` for a single conversation (already in `pending`).
    filter: Option<Filter>,
    /// Ids read and not yet exported.
    pending: VecDeque<u128>,
    /// The last update-index key read: the next batch starts below it.
    cursor: Option<(i64, u128)>,
    exhausted: bool,
    exported_at: DateTime<Utc>,
}

impl std::fmt::Debug for ExportStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportStream")
            .field("filter", &self.filter)
            .field("pending", &self.pending.len())
            .field("exported_at", &self.exported_at)
            .finish_non_exhaustive()
    }
}

fn io_error(e: std::io::Error) -> Error {
    Error::Io {
        path: "<export output>".into(),
        source: e,
    }
}

impl ExportStream {
    /// Reads the next batch of matching ids below the cursor, newest
    /// updated first.
    fn refill(&mut self) -> Result<()> {
        let Some(filter) = &self.filter else {
            self.exhausted = true;
            return Ok(());
        };
        let keys = conversations::updated_before(&self.txn, self.ns, self.cursor, EXPORT_BATCH)?;
        let view = ConversationsView::open(&self.txn)?;
        for &key in &keys {
            self.cursor = Some(key);
            if let Some(rec) = view.conversation(key.1)?
                && crate::model::filter::matches_filter(filter, &rec)
            {
                self.pending.push_back(key.1);
            }
        }
        if keys.len() < EXPORT_BATCH {
            self.exhausted = true;
        }
        Ok(())
    }

    /// When the snapshot was taken.
    pub fn exported_at(&self) -> DateTime<Utc> {
        self.exported_at
    }

    /// Writes the whole export in `format` to `out`, one conversation at a
    /// time; returns how many conversations it wrote. The JSON is the
    /// [`Export`] document, as [`Sekha::import`] reads it.
    pub fn write(self, format: ExportFormat, out: &mut dyn std::io::Write) -> Result<usize> {
        match format {
            ExportFormat::Json => self.write_json(out),
            ExportFormat::Markdown => self.write_markdown(out),
        }
    }

    fn write_json(self, out: &mut dyn std::io::Write) -> Result<usize> {
        let head = serde_json::json!({
            "format": EXPORT_FORMAT,
            "version": EXPORT_VERSION,
            "exported_at": self.exported_at,
        });
        let head = serde_json::to_string_pretty(&head)
            .map_err(|e| Error::Store(format!("serializing export: {e}")))?;
        // `{ ...fields` without its closing brace, then the conversations.
        let head = head.trim_end().trim_end_matches('}').trim_end();
        write!(out, "{head},\n  \"conversations\": [").map_err(io_error)?;
        let mut n = 0;
        for c in self {
            let c = c?;
            let body = serde_json::to_string_pretty(&c)
                .map_err(|e| Error::Store(format!("serializing export: {e}")))?;
            out.write_all(if n == 0 { b"\n" } else { b",\n" })
                .map_err(io_error)?;
            // Indented two levels; strings hold no raw newline (escaped).
            for (i, line) in body.lines().enumerate() {
                if i > 0 {
                    out.write_all(b"\n").map_err(io_error)?;
                }
                write!(out, "    {line}").map_err(io_error)?;
            }
            n += 1;
        }
        out.write_all(if n == 0 { b"]\n}" } else { b"\n  ]\n}" })
            .map_err(io_error)?;
        Ok(n)
    }

    fn write_markdown(self, out: &mut dyn std::io::Write) -> Result<usize> {
        let exported_at = self.exported_at;
        let mut n = 0;
        let mut text = String::new();
        for c in self {
            text.clear();
            if n > 0 {
                text.push_str("\n---\n\n");
            }
            markdown_conversation(&mut text, &c?, exported_at, true);
            out.write_all(text.as_bytes()).map_err(io_error)?;
            n += 1;
        }
        Ok(n)
    }
}

impl Iterator for ExportStream {
    type Item = Result<ConversationWithMessages>;

    /// The next conversation, from the snapshot.
    fn next(&mut self) -> Option<Self::Item> {
        while self.pending.is_empty() && !self.exhausted {
            if let Err(e) = self.refill() {
                self.exhausted = true;
                return Some(Err(e));
            }
        }
        let id = self.pending.pop_front()?;
        Some(
            crate::store::vectors::conversation_with_messages_in(&self.txn, Uuid::from_u128(id))
                .map(|(c, _)| c),
        )
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

impl Export {
    /// Renders the export as Markdown (the layout sekha-mcp uses).
    pub fn to_markdown(&self) -> String {
        self.to_markdown_with(true)
    }

    /// Renders the export as Markdown; without `include_metadata` the
    /// `Word Count` and `Sessions` lines are left out (sekha-mcp's
    /// `memory_export` flag).
    pub fn to_markdown_with(&self, include_metadata: bool) -> String {
        let mut out = String::new();
        for (ci, c) in self.conversations.iter().enumerate() {
            if ci > 0 {
                out.push_str("\n---\n\n");
            }
            markdown_conversation(&mut out, c, self.exported_at, include_metadata);
        }
        out
    }
}

/// One conversation in the Markdown layout sekha-mcp uses.
fn markdown_conversation(
    out: &mut String,
    c: &ConversationWithMessages,
    exported_at: DateTime<Utc>,
    include_metadata: bool,
) {
    let conv = &c.conversation;
    let _ = writeln!(out, "# {}\n", conv.label);
    let _ = writeln!(out, "**ID:** `{}`  ", conv.id);
    let _ = writeln!(out, "**Folder:** {}  ", conv.folder);
    let _ = writeln!(out, "**Status:** {}  ", conv.status);
    let _ = writeln!(out, "**Importance:** {}/10  ", conv.importance_score);
    let _ = writeln!(out, "**Created:** {}  ", conv.created_at.to_rfc3339());
    let _ = writeln!(
        out,
        "**Exported:** {} UTC  ",
        exported_at.format("%Y-%m-%d %H:%M:%S")
    );
    if include_metadata {
        let _ = writeln!(out, "**Word Count:** {}  ", conv.word_count);
        let _ = writeln!(out, "**Sessions:** {}  ", conv.session_count);
    }
    out.push('\n');
    let _ = writeln!(out, "## Messages\n");
    for (i, m) in c.messages.iter().enumerate() {
        let _ = writeln!(out, "### {}. {}\n", i + 1, capitalize(&m.role));
        let _ = writeln!(out, "*{}*\n", m.timestamp.to_rfc3339());
        let _ = writeln!(out, "{}\n", m.content.text());
    }
}
