//! Memory-item kinds, search scopes and tag edits (Memorg's
//! `memory/core.py` and `models.py`, SPEC.md §14.1).
//!
//! A memory item's type is one of Memorg's seven `MemoryType` values; any
//! other string becomes `custom` and keeps the original string as its
//! `custom_type` (Memorg's `create_memory_item`). Scopes parse strictly:
//! Memorg falls back to `ALL`/`global` on an unknown scope, which turns a
//! typo into a search of everything, so here an unknown scope is an error.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Longest `custom_type` string, in bytes.
pub const MAX_CUSTOM_TYPE_BYTES: usize = 128;
/// Longest tag, in bytes.
pub const MAX_TAG_BYTES: usize = 256;
/// Most tags one item carries.
pub const MAX_TAGS: usize = 256;
/// Deepest ancestor walk `get_item_context` may ask for.
pub const MAX_CONTEXT_DEPTH: usize = 64;
/// `get_item_context`'s default depth (Memorg's `depth=3`).
pub const DEFAULT_CONTEXT_DEPTH: usize = 3;

/// Memorg's `MemoryType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryType {
    /// A chat session.
    Session,
    /// A conversation in a session.
    Conversation,
    /// A topic in a conversation.
    Topic,
    /// One user/system exchange in a topic.
    Exchange,
    /// A document.
    Document,
    /// A named entity.
    Entity,
    /// Anything else; the item's [`ItemKind::custom_type`] says what.
    Custom,
}

impl MemoryType {
    /// Every type, in Memorg's declaration order.
    pub const ALL: [MemoryType; 7] = [
        MemoryType::Session,
        MemoryType::Conversation,
        MemoryType::Topic,
        MemoryType::Exchange,
        MemoryType::Document,
        MemoryType::Entity,
        MemoryType::Custom,
    ];

    /// The wire string (`"document"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryType::Session => "session",
            MemoryType::Conversation => "conversation",
            MemoryType::Topic => "topic",
            MemoryType::Exchange => "exchange",
            MemoryType::Document => "document",
            MemoryType::Entity => "entity",
            MemoryType::Custom => "custom",
        }
    }

    /// The type whose wire string is exactly `s` (Memorg's
    /// `MemoryType(s)`: case-sensitive).
    pub fn from_exact(s: &str) -> Option<MemoryType> {
        MemoryType::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

impl fmt::Display for MemoryType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A memory item's type as stored: the [`MemoryType`] and, for a string
/// Memorg does not know, that string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ItemKind {
    /// The type.
    #[serde(rename = "type")]
    pub memory_type: MemoryType,
    /// The caller's original type string when it was not one of the seven
    /// (`"note"` → `custom` with `custom_type: "note"`). `None` for the
    /// seven, including an explicit `"custom"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_type: Option<String>,
}

impl ItemKind {
    /// Parses a caller's type string the way Memorg's `create_memory_item`
    /// does: an exact match of one of the seven values, else `custom` with
    /// `custom_type` set to the string. Errors on an empty string (Memorg
    /// stores `custom_type: ""`) and on one over [`MAX_CUSTOM_TYPE_BYTES`].
    pub fn parse(s: &str) -> Result<ItemKind> {
        if s.trim().is_empty() {
            return Err(Error::invalid("item_type", "must not be empty"));
        }
        if let Some(t) = MemoryType::from_exact(s) {
            return Ok(ItemKind {
                memory_type: t,
                custom_type: None,
            });
        }
        if s.len() > MAX_CUSTOM_TYPE_BYTES {
            return Err(Error::invalid(
                "item_type",
                format!(
                    "{} bytes is over the {MAX_CUSTOM_TYPE_BYTES}-byte limit",
                    s.len()
                ),
            ));
        }
        if s.chars().any(char::is_control) {
            return Err(Error::invalid(
                "item_type",
                "must not contain control characters",
            ));
        }
        Ok(ItemKind {
            memory_type: MemoryType::Custom,
            custom_type: Some(s.to_string()),
        })
    }

    /// The string a caller would pass to get this kind back: the
    /// `custom_type` when set, else the type's wire string.
    pub fn name(&self) -> &str {
        self.custom_type
            .as_deref()
            .unwrap_or(self.memory_type.as_str())
    }

    /// Whether an item of kind `item` passes a type filter naming `self`:
    /// equal types, except that a plain `custom` filter matches every
    /// custom item and a `custom_type` filter matches only that custom
    /// type. (Memorg drops unknown filter types instead.)
    pub fn admits(&self, item: &ItemKind) -> bool {
        if self.memory_type != item.memory_type {
            return false;
        }
        match &self.custom_type {
            None => true,
            Some(c) => item.custom_type.as_deref() == Some(c.as_str()),
        }
    }
}

/// The scope kinds of `search_context` (Memorg's `SearchScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchScope {
    /// One session's exchanges.
    Session,
    /// One conversation's exchanges.
    Conversation,
    /// One topic's exchanges.
    Topic,
    /// Everything.
    All,
}

impl SearchScope {
    /// Parses a scope by its value (`"topic"`) or its Memorg enum name
    /// (`"TOPIC"`, what `memorg-mcp` takes), case-insensitively. An
    /// unknown scope is an error (Memorg silently searches `ALL`).
    pub fn parse(s: &str) -> Result<SearchScope> {
        match s.trim().to_ascii_lowercase().as_str() {
            "session" => Ok(SearchScope::Session),
            "conversation" => Ok(SearchScope::Conversation),
            "topic" => Ok(SearchScope::Topic),
            "all" => Ok(SearchScope::All),
            _ => Err(Error::invalid(
                "scope",
                format!("unknown scope {s:?}; expected one of session, conversation, topic, all"),
            )),
        }
    }

    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchScope::Session => "session",
            SearchScope::Conversation => "conversation",
            SearchScope::Topic => "topic",
            SearchScope::All => "all",
        }
    }

    /// Pairs the scope with its id: `all` takes none, the others need one
    /// (Memorg's non-`ALL` scopes have no id and return nothing).
    pub fn with_id(self, scope_id: Option<&str>) -> Result<ScopeTarget> {
        let id = scope_id.map(str::trim).filter(|s| !s.is_empty());
        match (self, id) {
            (SearchScope::All, None) => Ok(ScopeTarget::All),
            (SearchScope::All, Some(_)) => {
                Err(Error::invalid("scope_id", "scope `all` takes no scope_id"))
            }
            (_, None) => Err(Error::invalid(
                "scope_id",
                format!("scope `{}` needs a scope_id", self.as_str()),
            )),
            (SearchScope::Session, Some(id)) => Ok(ScopeTarget::Session(id.to_string())),
            (SearchScope::Conversation, Some(id)) => Ok(ScopeTarget::Conversation(id.to_string())),
            (SearchScope::Topic, Some(id)) => Ok(ScopeTarget::Topic(id.to_string())),
        }
    }
}

/// A resolved `search_context` scope: which subtree candidates must come
/// from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ScopeTarget {
    /// No restriction.
    All,
    /// Exchanges under this session.
    Session(String),
    /// Exchanges under this conversation.
    Conversation(String),
    /// Exchanges of this topic.
    Topic(String),
}

impl ScopeTarget {
    /// Whether an exchange with these ancestors is inside the scope. The
    /// storage side resolves an exchange's ancestors; this is the rule.
    pub fn contains(&self, session_id: &str, conversation_id: &str, topic_id: &str) -> bool {
        match self {
            ScopeTarget::All => true,
            ScopeTarget::Session(id) => id == session_id,
            ScopeTarget::Conversation(id) => id == conversation_id,
            ScopeTarget::Topic(id) => id == topic_id,
        }
    }
}

/// Memorg's `MemoryScope` for `search_memory`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryScope {
    /// Every item.
    Global,
    /// Items under a session.
    Session,
    /// Items under a conversation.
    Conversation,
    /// Items under a topic.
    Topic,
    /// Caller-defined.
    Custom,
}

impl MemoryScope {
    /// Parses a scope by value or name, case-insensitively; unknown is an
    /// error (Memorg falls back to `global`).
    pub fn parse(s: &str) -> Result<MemoryScope> {
        match s.trim().to_ascii_lowercase().as_str() {
            "global" => Ok(MemoryScope::Global),
            "session" => Ok(MemoryScope::Session),
            "conversation" => Ok(MemoryScope::Conversation),
            "topic" => Ok(MemoryScope::Topic),
            "custom" => Ok(MemoryScope::Custom),
            _ => Err(Error::invalid(
                "scope",
                format!(
                    "unknown memory scope {s:?}; expected one of global, session, conversation, topic, custom"
                ),
            )),
        }
    }
}

/// Checks one tag: non-empty after trimming, at most [`MAX_TAG_BYTES`], no
/// control characters. Returns it trimmed.
pub fn check_tag(tag: &str) -> Result<String> {
    let t = tag.trim();
    if t.is_empty() {
        return Err(Error::invalid("tags", "a tag must not be empty"));
    }
    if t.len() > MAX_TAG_BYTES {
        return Err(Error::invalid(
            "tags",
            format!(
                "a tag of {} bytes is over the {MAX_TAG_BYTES}-byte limit",
                t.len()
            ),
        ));
    }
    if t.chars().any(char::is_control) {
        return Err(Error::invalid(
            "tags",
            "a tag must not contain control characters",
        ));
    }
    Ok(t.to_string())
}

/// `existing` followed by the tags of `added` it lacks, first occurrence
/// kept, order preserved (Memorg takes a set union and loses the order).
/// Every added tag is checked; so is the total count.
pub fn add_tags(existing: &[String], added: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::with_capacity(existing.len() + added.len());
    for t in existing {
        if !out.contains(t) {
            out.push(t.clone());
        }
    }
    for t in added {
        let t = check_tag(t)?;
        if !out.contains(&t) {
            out.push(t);
        }
    }
    if out.len() > MAX_TAGS {
        return Err(Error::invalid(
            "tags",
            format!("{} tags is over the limit of {MAX_TAGS}", out.len()),
        ));
    }
    Ok(out)
}

/// `existing` without any tag in `removed` (exact match after trimming the
/// removed ones), order preserved.
pub fn remove_tags(existing: &[String], removed: &[String]) -> Vec<String> {
    let removed: Vec<&str> = removed.iter().map(|t| t.trim()).collect();
    existing
        .iter()
        .filter(|t| !removed.contains(&t.as_str()))
        .cloned()
        .collect()
}

/// Checks `get_item_context`'s depth: 0..=[`MAX_CONTEXT_DEPTH`].
pub fn check_context_depth(depth: usize) -> Result<usize> {
    if depth > MAX_CONTEXT_DEPTH {
        return Err(Error::invalid(
            "depth",
            format!("{depth} is over the limit of {MAX_CONTEXT_DEPTH}"),
        ));
    }
    Ok(depth)
}

/// Orders context items by importance, highest first; equal importances
/// keep their input order (Memorg's stable `sorted(..., reverse=True)`).
/// NaN importances sort last.
pub fn rank_by_importance<T>(items: &mut [T], importance: impl Fn(&T) -> f64) {
    items.sort_by(|a, b| {
        let (x, y) = (importance(a), importance(b));
        match (x.is_nan(), y.is_nan()) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Greater,
            (false, true) => std::cmp::Ordering::Less,
            (false, false) => y.total_cmp(&x),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_types_parse_exactly_and_unknown_become_custom() {
        for t in MemoryType::ALL {
            let k = ItemKind::parse(t.as_str()).unwrap();
            assert_eq!(k.memory_type, t);
            assert_eq!(k.custom_type, None);
            assert_eq!(k.name(), t.as_str());
        }
        let note = ItemKind::parse("note").unwrap();
        assert_eq!(note.memory_type, MemoryType::Custom);
        assert_eq!(note.custom_type.as_deref(), Some("note"));
        assert_eq!(note.name(), "note");
        // Case-sensitive, as Memorg's `MemoryType(s)`.
        let doc = ItemKind::parse("Document").unwrap();
        assert_eq!(doc.memory_type, MemoryType::Custom);
        assert_eq!(doc.custom_type.as_deref(), Some("Document"));
    }

    #[test]
    fn bad_type_strings_are_clear_errors() {
        for bad in ["", "   ", "a\u{0}b"] {
            let e = ItemKind::parse(bad).unwrap_err().to_string();
            assert!(e.contains("item_type"), "{e}");
        }
        let long = "x".repeat(MAX_CUSTOM_TYPE_BYTES + 1);
        let e = ItemKind::parse(&long).unwrap_err().to_string();
        assert!(e.contains("limit"), "{e}");
        assert!(ItemKind::parse(&"x".repeat(MAX_CUSTOM_TYPE_BYTES)).is_ok());
    }

    #[test]
    fn kind_serializes_with_type_and_optional_custom_type() {
        let k = ItemKind::parse("note").unwrap();
        let v = serde_json::to_value(&k).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"type": "custom", "custom_type": "note"})
        );
        let d = ItemKind::parse("document").unwrap();
        assert_eq!(
            serde_json::to_value(&d).unwrap(),
            serde_json::json!({"type": "document"})
        );
        let back: ItemKind = serde_json::from_value(v).unwrap();
        assert_eq!(back, k);
    }

    #[test]
    fn type_filters_admit_the_right_items() {
        let custom = ItemKind::parse("custom").unwrap();
        let note = ItemKind::parse("note").unwrap();
        let idea = ItemKind::parse("idea").unwrap();
        let doc = ItemKind::parse("document").unwrap();
        assert!(custom.admits(&note));
        assert!(custom.admits(&custom));
        assert!(note.admits(&note));
        assert!(!note.admits(&idea));
        assert!(!note.admits(&custom));
        assert!(!doc.admits(&note));
        assert!(doc.admits(&doc));
    }

    #[test]
    fn scopes_parse_by_value_or_name_and_need_ids() {
        assert_eq!(SearchScope::parse("ALL").unwrap(), SearchScope::All);
        assert_eq!(SearchScope::parse(" topic ").unwrap(), SearchScope::Topic);
        assert_eq!(SearchScope::parse("Session").unwrap(), SearchScope::Session);
        let e = SearchScope::parse("galaxy").unwrap_err().to_string();
        assert!(e.contains("galaxy") && e.contains("conversation"), "{e}");

        assert_eq!(SearchScope::All.with_id(None).unwrap(), ScopeTarget::All);
        assert_eq!(
            SearchScope::All.with_id(Some("  ")).unwrap(),
            ScopeTarget::All
        );
        assert!(SearchScope::All.with_id(Some("x")).is_err());
        assert!(SearchScope::Topic.with_id(None).is_err());
        assert!(SearchScope::Topic.with_id(Some("")).is_err());
        assert_eq!(
            SearchScope::Topic.with_id(Some("t1")).unwrap(),
            ScopeTarget::Topic("t1".into())
        );

        assert_eq!(MemoryScope::parse("GLOBAL").unwrap(), MemoryScope::Global);
        assert!(MemoryScope::parse("everywhere").is_err());
    }

    #[test]
    fn scope_targets_contain_only_their_subtree() {
        let t = ScopeTarget::Topic("t1".into());
        assert!(t.contains("s", "c", "t1"));
        assert!(!t.contains("s", "c", "t2"));
        let c = ScopeTarget::Conversation("c1".into());
        assert!(c.contains("s", "c1", "t9"));
        assert!(!c.contains("s", "c2", "t1"));
        let s = ScopeTarget::Session("s1".into());
        assert!(s.contains("s1", "c", "t"));
        assert!(!s.contains("s2", "c", "t"));
        assert!(ScopeTarget::All.contains("a", "b", "c"));
    }

    #[test]
    fn tags_add_in_order_without_duplicates_and_remove() {
        let have = vec!["b".to_string(), "a".to_string()];
        let out = add_tags(&have, &["c".into(), " a ".into(), "c".into(), "d".into()]).unwrap();
        assert_eq!(out, ["b", "a", "c", "d"]);
        assert!(add_tags(&have, &["".into()]).is_err());
        assert!(add_tags(&have, &["x\ny".into()]).is_err());
        let many: Vec<String> = (0..=MAX_TAGS).map(|i| format!("t{i}")).collect();
        assert!(
            add_tags(&[], &many)
                .unwrap_err()
                .to_string()
                .contains("limit")
        );
        assert_eq!(
            remove_tags(&out, &["a".into(), " d".into(), "zz".into()]),
            ["b", "c"]
        );
    }

    #[test]
    fn depth_is_bounded() {
        assert_eq!(check_context_depth(3).unwrap(), 3);
        assert_eq!(check_context_depth(0).unwrap(), 0);
        assert!(check_context_depth(MAX_CONTEXT_DEPTH + 1).is_err());
    }

    #[test]
    fn ranking_by_importance_is_stable_and_puts_nan_last() {
        let mut v = vec![
            ("a", 0.5),
            ("b", f64::NAN),
            ("c", 0.9),
            ("d", 0.5),
            ("e", 0.1),
        ];
        rank_by_importance(&mut v, |x| x.1);
        let ids: Vec<&str> = v.iter().map(|x| x.0).collect();
        assert_eq!(ids, ["c", "a", "d", "e", "b"]);
    }
}
