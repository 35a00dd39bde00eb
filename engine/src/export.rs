//! Export (JSON and Markdown) and import of the JSON export.
//!
//! The JSON export is the interchange format: `{format: "memdb-export",
//! version: 1, exported_at, conversations: [{...conversation, messages}]}`.
//! Importing it restores ids, timestamps, status, importance and metadata, so
//! export → import round-trips. Markdown is for people and is not imported.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::db::Memdb;
use crate::error::{Error, Result};
use crate::types::{ConversationWithMessages, Filter, Page};

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

/// Output format of [`Memdb::export_to_string`].
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

impl Memdb {
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
                            limit: crate::db::MAX_LIMIT,
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
            exported_at: crate::time::now(),
            conversations,
        })
    }

    /// Exports the selection as a JSON document or as Markdown.
    pub fn export_to_string(&self, selection: &Selection, format: ExportFormat) -> Result<String> {
        let export = self.export(selection)?;
        match format {
            ExportFormat::Json => serde_json::to_string_pretty(&export)
                .map_err(|e| Error::Store(format!("serializing export: {e}"))),
            ExportFormat::Markdown => Ok(export.to_markdown()),
        }
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
                self.write_imports(std::mem::take(&mut batch))?;
                report.imported += n;
                report.messages += batch_messages as u64;
                batch_messages = 0;
                progress(report.imported, total);
            }
        }
        Ok(report)
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
        to_markdown(self)
    }
}

fn to_markdown(export: &Export) -> String {
    let mut out = String::new();
    for (ci, c) in export.conversations.iter().enumerate() {
        if ci > 0 {
            out.push_str("\n---\n\n");
        }
        let conv = &c.conversation;
        let _ = writeln!(out, "# {}\n", conv.label);
        let _ = writeln!(out, "**ID:** `{}`  ", conv.id);
        let _ = writeln!(out, "**Folder:** {}  ", conv.folder);
        let _ = writeln!(out, "**Status:** {}  ", conv.status);
        let _ = writeln!(out, "**Importance:** {}/10  ", conv.importance_score);
        let _ = writeln!(out, "**Created:** {}  ", conv.created_at.to_rfc3339());
        let _ = writeln!(out, "**Word Count:** {}  ", conv.word_count);
        let _ = writeln!(
            out,
            "**Exported:** {} UTC\n",
            export.exported_at.format("%Y-%m-%d %H:%M:%S")
        );
        let _ = writeln!(out, "## Messages\n");
        for (i, m) in c.messages.iter().enumerate() {
            let _ = writeln!(out, "### {}. {}\n", i + 1, capitalize(&m.role));
            let _ = writeln!(out, "*{}*\n", m.timestamp.to_rfc3339());
            let _ = writeln!(out, "{}\n", m.content.text());
        }
    }
    out
}
