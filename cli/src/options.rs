//! Turns raw clap values into validated engine types: ids, filters, status,
//! timestamps, export formats and the data directory.
//!
//! Each error names the flag or argument and the bad value. Parsing of
//! engine-defined values (status, export format, timestamps) is delegated to
//! the engine so every surface accepts the same spellings.

use std::path::PathBuf;

use anyhow::{Context, Result, anyhow, bail};
use chrono::{DateTime, Utc};
use memdb::{ExportFormat, Filter, Status};
use uuid::Uuid;

use crate::args::FilterArgs;

/// The data directory: `--data`, else `$MEMDB_DATA` (clap reads both), else
/// the platform data directory joined with `memdb`.
pub fn data_dir(flag: Option<PathBuf>) -> Result<PathBuf> {
    match flag {
        Some(dir) => Ok(dir),
        None => dirs::data_dir().map(|d| d.join("memdb")).ok_or_else(|| {
            anyhow!("cannot determine a data directory: pass --data DIR or set MEMDB_DATA")
        }),
    }
}

/// A conversation id argument.
pub fn conversation_id(raw: &str) -> Result<Uuid> {
    Uuid::parse_str(raw.trim())
        .map_err(|e| anyhow!("invalid conversation id {raw:?}: not a UUID ({e})"))
}

/// A `--status` value.
pub fn status(raw: &str) -> Result<Status> {
    Ok(raw.parse::<Status>()?)
}

/// A `--format` value of `export`.
pub fn export_format(raw: &str) -> Result<ExportFormat> {
    Ok(raw.parse::<ExportFormat>()?)
}

/// A `--since`/`--until` value.
fn timestamp(flag: &str, raw: &str) -> Result<DateTime<Utc>> {
    memdb::parse_timestamp(raw.trim()).ok_or_else(|| {
        anyhow!(
            "invalid {flag} {raw:?}: expected RFC 3339 (2026-01-25T12:00:00Z), \
             2026-01-25T12:00:00 or 2026-01-25"
        )
    })
}

/// A `--metadata` value: a JSON object.
pub fn metadata(raw: &str) -> Result<serde_json::Value> {
    let value: serde_json::Value =
        serde_json::from_str(raw).context("invalid --metadata: not valid JSON")?;
    if !value.is_object() {
        bail!("invalid --metadata: must be a JSON object");
    }
    Ok(value)
}

impl FilterArgs {
    /// The engine filter these flags describe.
    pub fn to_filter(&self) -> Result<Filter> {
        Ok(Filter {
            folder: self.folder.clone(),
            label: self.label.clone(),
            status: self.status.as_deref().map(status).transpose()?,
            min_importance: self.min_importance,
            max_importance: self.max_importance,
            pinned: match (self.pinned, self.unpinned) {
                (true, _) => Some(true),
                (_, true) => Some(false),
                _ => None,
            },
            since: self
                .since
                .as_deref()
                .map(|s| timestamp("--since", s))
                .transpose()?,
            until: self
                .until
                .as_deref()
                .map(|s| timestamp("--until", s))
                .transpose()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_values() {
        let id = Uuid::new_v4();
        assert_eq!(conversation_id(&id.to_string()).ok(), Some(id));
        let err = conversation_id("nope").err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("\"nope\"")));
        assert_eq!(status("archived").ok(), Some(Status::Archived));
        assert!(status("bogus").is_err());
        assert!(export_format("md").is_ok());
        assert!(metadata("[1]").is_err());
        assert!(timestamp("--since", "2026-01-25").is_ok());
        assert!(timestamp("--since", "yesterday").is_err());
    }
}
