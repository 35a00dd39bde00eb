//! Chat-export import (SPEC.md §11.1): Sekha's import formats parsed into
//! conversations and stored through the conversation import path.
//!
//! One parser per format: ChatGPT's `conversations.json` (`chatgpt.rs`,
//! every branch of the message tree), Claude's JSON and XML (`claude.rs`),
//! Markdown transcripts (`markdown.rs`) and plain-text transcripts
//! (`text.rs`). This module detects the format ([`detect`], Sekha's order),
//! turns a parsed file into conversations (label = title, folder
//! `/imports/<format>`, importance 5, message metadata `{source,
//! imported_at}`) and writes them all in one transaction
//! ([`Sekha::import_chat_file`]): a file that fails to parse or validate
//! stores nothing. The watched import folder is `watch.rs`.

mod chatgpt;
mod claude;
mod markdown;
mod text;
pub mod watch;

use std::path::Path;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::types::{Content, Conversation, ConversationWithMessages, Message, Status};
use crate::model::validate::MAX_LABEL_BYTES;
use crate::sekha::Sekha;
use crate::util::time::now;

/// Largest export file read (bytes): a bigger one is an error, not an
/// allocation.
pub const MAX_FILE_BYTES: u64 = 1 << 30;
/// Importance of an imported conversation (Sekha's).
pub const IMPORT_IMPORTANCE: u8 = 5;

/// A chat-export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatFormat {
    /// ChatGPT's export: `{title, create_time, mapping}` or an array of them.
    ChatGpt,
    /// Claude's export: JSON (`{conversations: [...]}` or claude.ai's
    /// array with `chat_messages`) or XML (`<conversation>`).
    Claude,
    /// A Markdown transcript (`## User`, `**Assistant:**` lines).
    Markdown,
    /// A plain-text transcript (`User:` / `Assistant:` lines).
    Text,
}

impl ChatFormat {
    /// Every format, in detection order.
    pub const ALL: [ChatFormat; 4] = [
        ChatFormat::ChatGpt,
        ChatFormat::Claude,
        ChatFormat::Markdown,
        ChatFormat::Text,
    ];

    /// The name on every surface: `chatgpt`, `claude`, `markdown`, `text`;
    /// also the message metadata's `source` and the folder's last part.
    pub fn as_str(self) -> &'static str {
        match self {
            ChatFormat::ChatGpt => "chatgpt",
            ChatFormat::Claude => "claude",
            ChatFormat::Markdown => "markdown",
            ChatFormat::Text => "text",
        }
    }

    /// The folder its conversations are stored in: `/imports/<name>`.
    pub fn folder(self) -> String {
        format!("/imports/{}", self.as_str())
    }
}

impl std::fmt::Display for ChatFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ChatFormat {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "chatgpt" => Ok(ChatFormat::ChatGpt),
            "claude" => Ok(ChatFormat::Claude),
            "markdown" | "md" => Ok(ChatFormat::Markdown),
            "text" | "txt" => Ok(ChatFormat::Text),
            other => Err(Error::invalid(
                "from",
                format!(
                    "unknown chat-export format {other:?}: expected chatgpt, claude, markdown or text"
                ),
            )),
        }
    }
}

/// The file extensions the import folder picks up (lowercase): Sekha's
/// four, with `markdown` beside `md`.
pub const EXTENSIONS: [&str; 5] = ["json", "xml", "md", "markdown", "txt"];

/// One parsed message.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedMessage {
    /// Author role as the export names it (`user`, `assistant`, `system`, `tool`).
    pub role: String,
    /// The text, trimmed.
    pub content: String,
    /// When the export says it was written.
    pub timestamp: Option<DateTime<Utc>>,
    /// Format-specific metadata kept beside `source` and `imported_at`
    /// (ChatGPT: `chatgpt_node`, `chatgpt_parent`).
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl ParsedMessage {
    fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        ParsedMessage {
            role: role.into(),
            content: content.into(),
            timestamp: None,
            extra: serde_json::Map::new(),
        }
    }
}

/// One parsed conversation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedConversation {
    /// The export's title (`None`: the format's default label).
    pub title: Option<String>,
    /// The export's id of the conversation, kept in its metadata.
    pub export_id: Option<String>,
    /// Creation time from the export.
    pub created_at: Option<DateTime<Utc>>,
    /// Last update from the export.
    pub updated_at: Option<DateTime<Utc>>,
    /// Non-blank messages in order (ChatGPT: depth-first over every branch).
    pub messages: Vec<ParsedMessage>,
}

/// A parsed export file.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedFile {
    /// Its format.
    pub format: ChatFormat,
    /// Its conversations, in file order (some may have no messages).
    pub conversations: Vec<ParsedConversation>,
    /// Messages dropped because they had no text.
    pub skipped_messages: u64,
}

/// What importing one export file did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatImportReport {
    /// The file, as given.
    pub file: String,
    /// The format it was read as.
    pub format: ChatFormat,
    /// Conversations stored.
    pub conversations: u64,
    /// Messages stored.
    pub messages: u64,
    /// Conversations skipped because they had no message with text.
    pub skipped: u64,
    /// Messages skipped because they had no text.
    pub skipped_messages: u64,
    /// The new conversations' ids, in file order.
    pub ids: Vec<Uuid>,
}

fn bad(what: impl std::fmt::Display) -> String {
    what.to_string()
}

/// Whether a file name's extension is one the import folder picks up.
pub fn has_import_extension(path: &Path) -> bool {
    extension(path).is_some_and(|e| EXTENSIONS.contains(&e.as_str()))
}

fn extension(path: &Path) -> Option<String> {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
}

/// Detects the format of an export's text (Sekha's order): a JSON array of
/// ChatGPT exports or one ChatGPT export (objects with `mapping`), Claude
/// XML (text starting `<?xml` or `<conversation`, or a `.xml` file),
/// Claude JSON (`conversations`/`conversation`, or claude.ai's
/// `chat_messages`), then by extension `.md`/`.markdown` and `.txt`.
pub fn detect(text: &str, path: &Path) -> std::result::Result<ChatFormat, String> {
    let text = text.trim_start_matches('\u{feff}').trim_start();
    let ext = extension(path);
    let by_ext = match ext.as_deref() {
        Some("md" | "markdown") => Some(ChatFormat::Markdown),
        Some("txt") => Some(ChatFormat::Text),
        _ => None,
    };
    if text.starts_with('{') || text.starts_with('[') {
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v) => {
                if chatgpt::looks_like(&v) {
                    return Ok(ChatFormat::ChatGpt);
                }
                if claude::looks_like_json(&v) {
                    return Ok(ChatFormat::Claude);
                }
                if let Some(f) = by_ext {
                    return Ok(f);
                }
                return Err(
                    "JSON that is neither a ChatGPT export (objects with \"mapping\") nor a \
                     Claude export (\"conversations\" or \"chat_messages\")"
                        .into(),
                );
            }
            Err(e) => {
                if let Some(f) = by_ext {
                    return Ok(f);
                }
                return Err(format!("not valid JSON: {e}"));
            }
        }
    }
    if text.starts_with("<?xml")
        || text.starts_with("<conversation")
        || ext.as_deref() == Some("xml")
    {
        return Ok(ChatFormat::Claude);
    }
    by_ext.ok_or_else(|| {
        "unknown export format: not JSON or XML, and not a .md or .txt file (name the format)"
            .to_string()
    })
}

/// Parses an export's text as `format` (`None`: [`detect`] it). `path`
/// names the file: its extension helps detection and its stem is the label
/// of Markdown and text transcripts. The error says what is wrong, without
/// the file name (callers add it).
pub fn parse_str(
    text: &str,
    path: &Path,
    format: Option<ChatFormat>,
) -> std::result::Result<ParsedFile, String> {
    let text = text.trim_start_matches('\u{feff}');
    let format = match format {
        Some(f) => f,
        None => detect(text, path)?,
    };
    let mut file = match format {
        ChatFormat::ChatGpt => chatgpt::parse(text),
        ChatFormat::Claude => claude::parse(text),
        ChatFormat::Markdown => markdown::parse(text),
        ChatFormat::Text => text::parse(text),
    }
    .map_err(|e| format!("{format} export: {e}"))?;
    file.format = format;
    if file.conversations.iter().all(|c| c.messages.is_empty()) {
        return Err(format!(
            "{format} export: no messages found{}",
            match format {
                ChatFormat::Markdown =>
                    " (a message starts at a \"## \", \"**User:**\" or \"**Assistant:**\" line)",
                ChatFormat::Text => " (a message starts at a \"User:\" or \"Assistant:\" line)",
                _ => "",
            }
        ));
    }
    Ok(file)
}

/// Reads and parses an export file (see [`parse_str`]); errors name the file.
pub fn parse_file(path: &Path, format: Option<ChatFormat>) -> Result<ParsedFile> {
    let text = read(path)?;
    parse_str(&text, path, format).map_err(|reason| file_error(path, reason))
}

fn file_error(path: &Path, reason: impl Into<String>) -> Error {
    Error::invalid(path.display().to_string(), reason)
}

fn read(path: &Path) -> Result<String> {
    use std::io::Read;
    // Opened without blocking (a FIFO is refused below, not waited on) and
    // checked on the handle, so what is read is what was checked.
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(Error::io(path))?;
    let meta = file.metadata().map_err(Error::io(path))?;
    if !meta.is_file() {
        return Err(file_error(path, "not a file"));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(file_error(
            path,
            format!(
                "{} bytes; the largest export read is {MAX_FILE_BYTES}",
                meta.len()
            ),
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(Error::io(path))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(file_error(
            path,
            format!("grew past {MAX_FILE_BYTES} bytes while read"),
        ));
    }
    String::from_utf8(bytes).map_err(|e| file_error(path, format!("not UTF-8 text: {e}")))
}

/// A label from an export title: control characters become spaces, runs
/// of whitespace one space, cut to [`MAX_LABEL_BYTES`] at a character
/// boundary; blank gives `default`.
fn label_from(title: Option<&str>, default: &str) -> String {
    let cleaned = title
        .unwrap_or("")
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if cleaned.is_empty() {
        return default.to_string();
    }
    let mut end = cleaned.len().min(MAX_LABEL_BYTES);
    while !cleaned.is_char_boundary(end) {
        end -= 1;
    }
    cleaned[..end].trim_end().to_string()
}

/// The label of a conversation without a title (Sekha's defaults).
fn default_label(format: ChatFormat, path: &Path) -> String {
    match format {
        ChatFormat::ChatGpt => "Untitled ChatGPT Conversation".into(),
        ChatFormat::Claude => "Untitled Claude Conversation".into(),
        ChatFormat::Markdown | ChatFormat::Text => path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| "Imported conversation".into()),
    }
}

impl Sekha<'_> {
    /// Parses the export file at `path` (`format` `None`: detected) and
    /// stores its conversations in one transaction: label = title (or the
    /// format's default), folder `/imports/<format>`, importance 5,
    /// message metadata `{source, imported_at}`, timestamps from the
    /// export where it has them. A file that does not parse, or a
    /// conversation that fails validation, stores nothing; the error names
    /// the file and the problem.
    pub fn import_chat_file(
        &self,
        path: &Path,
        format: Option<ChatFormat>,
    ) -> Result<ChatImportReport> {
        let parsed = parse_file(path, format)?;
        self.import_chat(parsed, path)
    }

    /// Stores a parsed export (see [`Sekha::import_chat_file`]); `path`
    /// names it in the report, the metadata and errors.
    pub fn import_chat(&self, parsed: ParsedFile, path: &Path) -> Result<ChatImportReport> {
        let format = parsed.format;
        let imported_at = now();
        let stamp = imported_at.to_rfc3339_opts(SecondsFormat::Secs, true);
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut report = ChatImportReport {
            file: path.display().to_string(),
            format,
            conversations: 0,
            messages: 0,
            skipped: 0,
            skipped_messages: parsed.skipped_messages,
            ids: Vec::new(),
        };
        let mut prepared = Vec::new();
        for (i, conv) in parsed.conversations.into_iter().enumerate() {
            if conv.messages.is_empty() {
                report.skipped += 1;
                continue;
            }
            let id = crate::util::ids::new_id();
            let first = conv.messages.iter().filter_map(|m| m.timestamp).min();
            let last = conv.messages.iter().filter_map(|m| m.timestamp).max();
            let created_at = conv.created_at.or(first).unwrap_or(imported_at);
            let updated_at = conv
                .updated_at
                .or(last)
                .unwrap_or(created_at)
                .max(created_at);
            let mut meta = serde_json::Map::new();
            meta.insert("source".into(), format.as_str().into());
            meta.insert("imported_at".into(), stamp.clone().into());
            meta.insert("imported_from".into(), file_name.clone().into());
            if let Some(eid) = &conv.export_id {
                meta.insert("export_id".into(), eid.clone().into());
            }
            let messages: Vec<Message> = conv
                .messages
                .into_iter()
                .map(|m| {
                    let mut md = serde_json::Map::new();
                    md.insert("source".into(), format.as_str().into());
                    md.insert("imported_at".into(), stamp.clone().into());
                    md.extend(m.extra);
                    Message {
                        id: crate::util::ids::new_id(),
                        conversation_id: id,
                        role: m.role,
                        content: Content::Text(m.content),
                        timestamp: m.timestamp.unwrap_or(created_at),
                        embedding_id: None,
                        metadata: serde_json::Value::Object(md),
                    }
                })
                .collect();
            report.messages += messages.len() as u64;
            let item = ConversationWithMessages {
                conversation: Conversation {
                    id,
                    label: label_from(conv.title.as_deref(), &default_label(format, path)),
                    folder: format.folder(),
                    status: Status::Active,
                    importance_score: IMPORT_IMPORTANCE,
                    pinned: false,
                    word_count: 0,
                    session_count: 1,
                    message_count: 0,
                    created_at,
                    updated_at,
                    metadata: serde_json::Value::Object(meta),
                },
                messages,
            };
            prepared.push(self.db.prepare_import(item).map_err(|e| {
                file_error(
                    path,
                    format!("{format} export: conversation {}: {e}", i + 1),
                )
            })?);
            report.ids.push(id);
        }
        report.conversations = prepared.len() as u64;
        self.db.write_imports(prepared)?;
        // Searchable by keyword on return, the text writer's segment freed
        // before an embedding drain (as `Sekha::import` ends).
        self.db.fresh_text()?;
        Ok(report)
    }
}

/// Seconds since the epoch (ChatGPT's timestamps, fractions kept) as a time.
fn from_unix_seconds(field: &str, secs: f64) -> std::result::Result<DateTime<Utc>, String> {
    let micros = secs * 1e6;
    if !micros.is_finite() || micros.abs() > 9.0e15 {
        return Err(bad(format_args!("{field}: {secs} is not a time")));
    }
    DateTime::from_timestamp_micros(micros.round() as i64)
        .ok_or_else(|| bad(format_args!("{field}: {secs} is not a time")))
}

/// An RFC 3339 (or another [`crate::util::time::parse_timestamp`] form)
/// time string.
fn from_time_string(field: &str, s: &str) -> std::result::Result<DateTime<Utc>, String> {
    crate::util::time::parse_timestamp(s.trim())
        .ok_or_else(|| bad(format_args!("{field}: {s:?} is not a time")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_cleaned_and_cut() {
        assert_eq!(label_from(Some("  a\n\tb  "), "d"), "a b");
        assert_eq!(label_from(Some(" \n "), "d"), "d");
        assert_eq!(label_from(None, "d"), "d");
        let long = "é".repeat(400);
        let l = label_from(Some(&long), "d");
        assert!(l.len() <= MAX_LABEL_BYTES && l.chars().all(|c| c == 'é'));
    }

    #[test]
    fn detection_follows_sekhas_order() {
        let p = Path::new("x.json");
        assert_eq!(detect(r#"[{"mapping":{}}]"#, p), Ok(ChatFormat::ChatGpt));
        assert_eq!(detect(r#"{"mapping":{}}"#, p), Ok(ChatFormat::ChatGpt));
        assert_eq!(detect(r#"{"conversations":[]}"#, p), Ok(ChatFormat::Claude));
        assert_eq!(
            detect(r#"[{"name":"n","chat_messages":[]}]"#, p),
            Ok(ChatFormat::Claude)
        );
        assert_eq!(detect("<conversation/>", p), Ok(ChatFormat::Claude));
        assert_eq!(
            detect("\u{feff}<?xml version=\"1.0\"?>", p),
            Ok(ChatFormat::Claude)
        );
        assert_eq!(detect("# t", Path::new("a.MD")), Ok(ChatFormat::Markdown));
        assert_eq!(
            detect("[link](x)", Path::new("a.md")),
            Ok(ChatFormat::Markdown)
        );
        assert_eq!(detect("User: hi", Path::new("a.txt")), Ok(ChatFormat::Text));
        assert!(detect("{\"a\":1}", p).unwrap_err().contains("neither"));
        assert!(detect("{oops", p).unwrap_err().contains("not valid JSON"));
        assert!(detect("User: hi", Path::new("a.log")).is_err());
    }

    #[test]
    fn unix_seconds_keep_fractions_and_refuse_nonsense() {
        let t = from_unix_seconds("t", 1_703_073_600.25).unwrap();
        assert_eq!(t.timestamp_micros(), 1_703_073_600_250_000);
        assert!(from_unix_seconds("t", 1e300).is_err());
    }
}
