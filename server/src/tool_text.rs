//! Human-readable text for MCP tool results.
//!
//! Each tool answers text content a person (or model) can read plus the
//! same data as structured content. The text is rendered from the JSON data
//! (the `data` of the tool's `{success, data, error}` envelope), so a result
//! forwarded from a running memdb-server reads exactly like a local one.
//! One function per tool; the contract ([`crate::contract::TOOLS`]) names
//! which one renders which tool.

use std::fmt::Write as _;

use serde_json::Value;

/// Longest message excerpt shown in search results, in characters.
const EXCERPT_CHARS: usize = 300;

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn n(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::Number(x)) => x.to_string(),
        Some(Value::String(x)) => x.clone(),
        _ => "0".to_string(),
    }
}

fn excerpt(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= EXCERPT_CHARS {
        flat
    } else {
        let cut: String = flat.chars().take(EXCERPT_CHARS).collect();
        format!("{cut}…")
    }
}

/// `memory_store`: the new conversation, and how its label was chosen
/// when the client sent none.
pub fn store(data: &Value) -> String {
    let mut out = format!(
        "Stored conversation {} \"{}\" in {} ({} messages).",
        s(data, "conversation_id"),
        s(data, "label"),
        s(data, "folder"),
        n(data, "message_count")
    );
    if let Some(a) = data.get("auto_label") {
        if a.get("applied").and_then(Value::as_bool) == Some(true) {
            let _ = write!(out, " Label suggested by {}.", s(a, "model"));
        } else {
            out.push_str(" No label could be suggested; the first message names it.");
        }
    }
    out
}

/// `memory_update`: the fields that changed.
pub fn update(data: &Value) -> String {
    let fields: Vec<&str> = data
        .get("updated_fields")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if fields.is_empty() {
        format!(
            "Conversation {}: no field changed.",
            s(data, "conversation_id")
        )
    } else {
        format!(
            "Updated conversation {}: {}.",
            s(data, "conversation_id"),
            fields.join(", ")
        )
    }
}

/// `memory_export`: the rendered document alone, as sekha-mcp answers.
pub fn export(data: &Value) -> String {
    s(data, "content").to_string()
}

/// Any data as pretty-printed JSON, for a tool without a text of its own.
pub fn json(data: &Value) -> String {
    serde_json::to_string_pretty(data).unwrap_or_default()
}

/// `memory_search`: one numbered entry per hit, then the engine's notes.
pub fn search(data: &Value) -> String {
    let results = data
        .get("results")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = format!(
        "{} result(s) for \"{}\" ({} search):",
        results.len(),
        s(data, "query"),
        s(data, "mode")
    );
    if results.is_empty() {
        out.push_str("\nNothing matched.");
    }
    for (i, r) in results.iter().enumerate() {
        let score = r.get("score").and_then(Value::as_f64).unwrap_or(0.0);
        let _ = write!(
            out,
            "\n{}. [{score:.3}] \"{}\" ({}), {}\n   conversation {} message {}\n   {}",
            i + 1,
            s(r, "label"),
            s(r, "folder"),
            s(r, "timestamp"),
            s(r, "conversation_id"),
            s(r, "message_id"),
            excerpt(s(r, "content"))
        );
    }
    if let Some(notes) = data.get("notes").and_then(Value::as_array) {
        for note in notes.iter().filter_map(Value::as_str) {
            let _ = write!(out, "\nNote: {note}");
        }
    }
    out
}

/// `memory_get_context`: the conversation, then every message.
pub fn context(data: &Value) -> String {
    let mut out = format!(
        "Conversation {} \"{}\" in {} ({}, importance {}, {} messages, updated {})",
        s(data, "conversation_id"),
        s(data, "label"),
        s(data, "folder"),
        s(data, "status"),
        n(data, "importance_score"),
        n(data, "message_count"),
        s(data, "updated_at")
    );
    if let Some(msgs) = data.get("messages").and_then(Value::as_array) {
        for m in msgs {
            let _ = write!(
                out,
                "\n\n[{}] {}:\n{}",
                s(m, "timestamp"),
                s(m, "role"),
                s(m, "content")
            );
        }
    }
    out
}

/// `memory_prune`: the totals, then one line per suggestion.
pub fn prune(data: &Value) -> String {
    let suggestions = data
        .get("suggestions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = format!(
        "{} pruning suggestion(s) out of {} conversations reviewed (threshold {} days); \
         archiving or deleting the recommended ones saves about {} tokens.",
        suggestions.len(),
        n(data, "total_reviewed"),
        n(data, "threshold_days"),
        n(data, "estimated_token_savings")
    );
    for sug in &suggestions {
        let _ = write!(
            out,
            "\n- {}: \"{}\" ({}), idle {} days, importance {}, {} messages: {}",
            s(sug, "recommendation"),
            s(sug, "label"),
            s(sug, "conversation_id"),
            n(sug, "days_since_access"),
            n(sug, "importance_score"),
            n(sug, "message_count"),
            s(sug, "reason")
        );
        let preview = s(sug, "preview");
        if !preview.is_empty() {
            let _ = write!(out, "\n  {}", excerpt(preview));
        }
    }
    out
}

/// `memory_stats`: the counts, then folders and labels.
pub fn stats(data: &Value) -> String {
    let mut out = format!(
        "{} conversations ({} active, {} archived, {} pinned), {} messages, {} words, \
         average importance {:.1}.",
        n(data, "total_conversations"),
        n(data, "active"),
        n(data, "archived"),
        n(data, "pinned"),
        n(data, "total_messages"),
        n(data, "total_words"),
        data.get("average_importance")
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
    );
    for (key, title) in [("by_folder", "Folders"), ("by_label", "Labels")] {
        if let Some(map) = data.get(key).and_then(Value::as_object)
            && !map.is_empty()
        {
            let parts: Vec<String> = map.iter().map(|(k, v)| format!("{k} ({v})")).collect();
            let _ = write!(out, "\n{title}: {}", parts.join(", "));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn search_text_lists_hits_with_scores() {
        let t = search(&json!({"query": "rust", "mode": "keyword", "notes": ["n1"],
                "results": [{"score": 0.5, "label": "L", "folder": "/f",
                "conversation_id": "c", "message_id": "m", "timestamp": "t",
                "content": "hello   world"}]}));
        assert!(t.starts_with("1 result(s) for \"rust\""), "{t}");
        assert!(t.contains("[0.500] \"L\" (/f)"), "{t}");
        assert!(t.contains("hello world"), "{t}");
        assert!(t.contains("Note: n1"), "{t}");
    }

    #[test]
    fn long_excerpts_are_cut() {
        let long = "x".repeat(EXCERPT_CHARS + 10);
        let e = excerpt(&long);
        assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
        assert!(e.ends_with('…'));
    }

    #[test]
    fn stats_text_counts() {
        let t = stats(
            &json!({"total_conversations": 2, "active": 1, "archived": 1, "pinned": 0,
                "total_messages": 5, "total_words": 40, "average_importance": 5.5,
                "by_folder": {"/a": 2}, "by_label": {}}),
        );
        assert!(t.starts_with("2 conversations (1 active, 1 archived, 0 pinned), 5 messages"));
        assert!(t.contains("Folders: /a (2)"), "{t}");
        assert!(!t.contains("Labels"), "{t}");
    }
}
