//! Input validation: every rule that decides whether a write of a
//! conversation or message is accepted. Nothing is written unless the whole
//! request passes. The rules of a search request live with its type
//! (`SearchRequest::validate`, `query/request.rs`), and those of a generic
//! record with the record store (`db/records.rs`).

use crate::error::{Error, Result};
use crate::model::types::{Content, NewMessage};

/// Longest label, in bytes (Sekha's limit).
pub const MAX_LABEL_BYTES: usize = 500;
/// Longest folder path, in bytes.
pub const MAX_FOLDER_BYTES: usize = 1024;
/// Most components in a folder path (`/a/b/c` has 3).
pub const MAX_FOLDER_DEPTH: usize = 32;
/// Longest role name, in bytes.
pub const MAX_ROLE_BYTES: usize = 32;
/// Largest metadata object, in bytes of JSON.
pub const MAX_METADATA_BYTES: usize = 64 * 1024;

pub(crate) fn label(field: &str, label: &str) -> Result<String> {
    let trimmed = label.trim();
    if trimmed.is_empty() {
        return Err(Error::invalid(field, "label is empty"));
    }
    if trimmed.len() > MAX_LABEL_BYTES {
        return Err(Error::invalid(
            field,
            format!(
                "label is {} bytes; the limit is {MAX_LABEL_BYTES}",
                trimmed.len()
            ),
        ));
    }
    if trimmed.chars().any(char::is_control) {
        return Err(Error::invalid(field, "label contains control characters"));
    }
    Ok(trimmed.to_string())
}

/// Validates and normalizes a folder path: must start with `/`; a trailing
/// `/` is dropped (except for the root); empty, `.` and `..` components are
/// refused.
pub(crate) fn folder(field: &str, folder: &str) -> Result<String> {
    if !folder.starts_with('/') {
        return Err(Error::invalid(
            field,
            format!("folder {folder:?} must start with '/'"),
        ));
    }
    if folder.len() > MAX_FOLDER_BYTES {
        return Err(Error::invalid(
            field,
            format!(
                "folder is {} bytes; the limit is {MAX_FOLDER_BYTES}",
                folder.len()
            ),
        ));
    }
    if folder.chars().any(char::is_control) {
        return Err(Error::invalid(field, "folder contains control characters"));
    }
    let trimmed = folder.trim_end_matches('/');
    if trimmed.is_empty() {
        return Ok("/".into());
    }
    let depth = trimmed[1..].split('/').count();
    if depth > MAX_FOLDER_DEPTH {
        // Every ancestor of a folder is indexed (a search under `/a` finds
        // `/a/b/c`): the depth bounds that work per message.
        return Err(Error::invalid(
            field,
            format!("folder has {depth} components; the limit is {MAX_FOLDER_DEPTH}"),
        ));
    }
    for part in trimmed[1..].split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return Err(Error::invalid(
                field,
                format!("folder {folder:?} has an empty, '.' or '..' component"),
            ));
        }
    }
    Ok(trimmed.to_string())
}

pub(crate) fn importance(field: &str, v: u8) -> Result<u8> {
    if v > 10 {
        return Err(Error::invalid(
            field,
            format!("importance {v} is outside 0..=10"),
        ));
    }
    Ok(v)
}

pub(crate) fn metadata(field: &str, m: Option<&serde_json::Value>) -> Result<String> {
    match m {
        None | Some(serde_json::Value::Null) => Ok("{}".into()),
        Some(v @ serde_json::Value::Object(_)) => {
            let s = v.to_string();
            if s.len() > MAX_METADATA_BYTES {
                return Err(Error::invalid(
                    field,
                    format!(
                        "metadata is {} bytes; the limit is {MAX_METADATA_BYTES}",
                        s.len()
                    ),
                ));
            }
            Ok(s)
        }
        Some(_) => Err(Error::invalid(field, "metadata must be a JSON object")),
    }
}

/// The per-write size limits (from [`crate::Config`]).
pub(crate) struct WriteLimits {
    pub(crate) max_messages_per_write: usize,
    pub(crate) max_message_bytes: usize,
}

pub(crate) fn messages(config: &WriteLimits, msgs: &[NewMessage], allow_empty: bool) -> Result<()> {
    if msgs.is_empty() && !allow_empty {
        return Err(Error::invalid(
            "messages",
            "at least one message is required",
        ));
    }
    if msgs.len() > config.max_messages_per_write {
        return Err(Error::invalid(
            "messages",
            format!(
                "{} messages in one write; the limit is {}",
                msgs.len(),
                config.max_messages_per_write
            ),
        ));
    }
    for (i, m) in msgs.iter().enumerate() {
        role(&format!("messages[{i}].role"), &m.role)?;
        content(config, &format!("messages[{i}].content"), &m.content)?;
        metadata(&format!("messages[{i}].metadata"), m.metadata.as_ref())?;
    }
    Ok(())
}

pub(crate) fn role(field: &str, role: &str) -> Result<()> {
    if role.is_empty() || role.len() > MAX_ROLE_BYTES {
        return Err(Error::invalid(
            field,
            format!("role must be 1..={MAX_ROLE_BYTES} bytes"),
        ));
    }
    if !role
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(Error::invalid(
            field,
            format!("role {role:?} may only contain ASCII letters, digits, '_' and '-'"),
        ));
    }
    Ok(())
}

pub(crate) fn content(config: &WriteLimits, field: &str, c: &Content) -> Result<()> {
    let size = match c {
        Content::Text(s) => s.len(),
        Content::Parts(parts) => {
            for (j, p) in parts.iter().enumerate() {
                let ok = p.get("type").and_then(|t| t.as_str()).is_some();
                if !ok {
                    return Err(Error::invalid(
                        format!("{field}[{j}]"),
                        "a content part must be an object with a string \"type\"",
                    ));
                }
                if p.get("type").and_then(|t| t.as_str()) == Some("text")
                    && p.get("text").and_then(|t| t.as_str()).is_none()
                {
                    return Err(Error::invalid(
                        format!("{field}[{j}]"),
                        "a text part needs a string \"text\"",
                    ));
                }
            }
            serde_json::to_string(parts).map_or(usize::MAX, |s| s.len())
        }
    };
    if size > config.max_message_bytes {
        return Err(Error::invalid(
            field,
            format!(
                "content is {size} bytes; the limit is {} bytes",
                config.max_message_bytes
            ),
        ));
    }
    if c.text().trim().is_empty() && matches!(c, Content::Text(_)) {
        return Err(Error::invalid(field, "content is empty"));
    }
    if matches!(c, Content::Parts(p) if p.is_empty()) {
        return Err(Error::invalid(field, "content has no parts"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders() {
        assert_eq!(folder("f", "/").unwrap(), "/");
        assert_eq!(folder("f", "/a/b/").unwrap(), "/a/b");
        assert!(folder("f", "a").is_err());
        assert!(folder("f", "/a//b").is_err());
        assert!(folder("f", "/a/../b").is_err());
    }

    #[test]
    fn labels_and_roles() {
        assert!(label("l", "  ").is_err());
        assert_eq!(label("l", " x ").unwrap(), "x");
        assert!(label("l", &"x".repeat(501)).is_err());
        assert!(role("r", "user").is_ok());
        assert!(role("r", "us er").is_err());
        assert!(role("r", "").is_err());
    }
}
