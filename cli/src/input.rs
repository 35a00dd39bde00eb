//! Reads JSON request bodies from a file or stdin and deserializes them into
//! engine types.
//!
//! Parse errors keep serde_json's message, which carries line and column
//! (`expected `,` or `}` at line 3 column 5`), prefixed with where the input
//! came from. Deserializing happens before the database is touched, so a bad
//! body writes nothing.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use memdb::{Export, NewConversation, NewMessage};
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// Where a body comes from.
pub enum Source {
    Stdin,
    File(PathBuf),
}

impl Source {
    /// `-` or absent means stdin.
    pub fn from_arg(file: Option<&Path>) -> Source {
        match file {
            Some(p) if p != Path::new("-") => Source::File(p.to_path_buf()),
            _ => Source::Stdin,
        }
    }

    fn name(&self) -> String {
        match self {
            Source::Stdin => "<stdin>".into(),
            Source::File(p) => p.display().to_string(),
        }
    }

    fn read(&self) -> Result<String> {
        match self {
            Source::Stdin => {
                let mut stdin = std::io::stdin();
                if stdin.is_terminal() {
                    bail!("no input: pass a FILE or pipe JSON on stdin");
                }
                let mut s = String::new();
                stdin
                    .read_to_string(&mut s)
                    .context("reading stdin (is it UTF-8?)")?;
                Ok(s)
            }
            Source::File(p) => {
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))
            }
        }
    }

    fn parse<T: DeserializeOwned>(&self, what: &str) -> Result<T> {
        let text = self.read()?;
        serde_json::from_str(&text).with_context(|| format!("invalid {what} in {}", self.name()))
    }
}

/// A conversation body for `store`: Sekha's `POST /api/v1/conversations`
/// body, parsed by the server's own wire type, so the CLI and REST accept
/// exactly the same bodies (e.g. `importance_score: 7.5`, rounded).
pub fn new_conversation(source: &Source) -> Result<NewConversation> {
    let body: memdb_server::wire::CreateConversation = source.parse("conversation JSON")?;
    body.into_new().map_err(|e| anyhow::anyhow!(e.message))
}

/// The `{"messages": [...]}` form of an append body.
#[derive(Deserialize)]
struct MessagesBody {
    messages: Vec<NewMessage>,
}

/// An append body: a JSON array of messages or `{"messages": [...]}`.
pub fn new_messages(source: &Source) -> Result<Vec<NewMessage>> {
    let text = source.read()?;
    let what = || format!("messages JSON in {}", source.name());
    if text.trim_start().starts_with('{') {
        let body: MessagesBody =
            serde_json::from_str(&text).with_context(|| format!("invalid {}", what()))?;
        Ok(body.messages)
    } else {
        serde_json::from_str(&text).with_context(|| {
            format!(
                "invalid {} (expected an array of messages or {{\"messages\": [...]}})",
                what()
            )
        })
    }
}

/// A JSON export for `import`.
pub fn export(source: &Source) -> Result<Export> {
    source.parse("export JSON")
}

/// The arguments of `memdb tool`: an inline JSON object, `@FILE`, `-` for
/// stdin, or `{}` when absent.
pub fn tool_args(arg: Option<&str>) -> Result<serde_json::Value> {
    let value: serde_json::Value = match arg {
        None => return Ok(serde_json::Value::Object(Default::default())),
        Some("-") => Source::Stdin.parse("tool arguments")?,
        Some(a) if a.starts_with('@') => {
            Source::File(PathBuf::from(&a[1..])).parse("tool arguments")?
        }
        Some(a) => serde_json::from_str(a).context("invalid tool arguments")?,
    };
    if !value.is_object() {
        bail!("tool arguments must be a JSON object");
    }
    Ok(value)
}

/// A text file (or stdin) as a string.
pub fn read_text(source: &Source) -> Result<String> {
    source.read()
}
