//! ChatGPT's export (`conversations.json`): one conversation object
//! `{title, create_time, update_time, conversation_id, mapping}` or an
//! array of them. `mapping` is a tree of nodes `{id, message, parent,
//! children}`; every branch is kept (Sekha): from each root (a node
//! without a parent, or whose parent is missing) the tree is walked depth
//! first, children in their listed order, so a regenerated answer follows
//! the first one's subtree. A message is `{author.role, create_time,
//! content.parts}`; its string parts are joined by newlines (other parts,
//! such as image pointers, are dropped), or `content.text` is used when
//! there are no parts; a message with no text is skipped. Timestamps are
//! Unix seconds (fractions kept). Each message's metadata records its node
//! and parent ids, so the branches can be told apart.

use std::collections::{BTreeMap, HashSet};

use serde::Deserialize;

use super::{ChatFormat, ParsedConversation, ParsedFile, ParsedMessage, from_unix_seconds};

#[derive(Deserialize)]
struct Export {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    create_time: Option<f64>,
    #[serde(default)]
    update_time: Option<f64>,
    #[serde(default)]
    conversation_id: Option<String>,
    #[serde(default)]
    id: Option<String>,
    mapping: BTreeMap<String, Node>,
}

#[derive(Deserialize)]
struct Node {
    #[serde(default)]
    message: Option<Msg>,
    #[serde(default)]
    parent: Option<String>,
    #[serde(default)]
    children: Vec<String>,
}

#[derive(Deserialize)]
struct Msg {
    author: Author,
    #[serde(default)]
    create_time: Option<f64>,
    #[serde(default)]
    content: Option<MsgContent>,
}

#[derive(Deserialize)]
struct Author {
    role: String,
}

#[derive(Deserialize)]
struct MsgContent {
    #[serde(default)]
    parts: Option<Vec<serde_json::Value>>,
    #[serde(default)]
    text: Option<String>,
}

/// Whether a JSON document is a ChatGPT export: an object with `mapping`,
/// or a non-empty array of such objects.
pub(super) fn looks_like(v: &serde_json::Value) -> bool {
    let is_conv = |v: &serde_json::Value| v.get("mapping").is_some_and(|m| m.is_object());
    match v {
        serde_json::Value::Array(a) => !a.is_empty() && a.iter().all(is_conv),
        other => is_conv(other),
    }
}

/// A serde error with where it is: re-parsing the text gives the line and
/// column that `from_value` cannot.
fn typed<T: serde::de::DeserializeOwned>(text: &str, v: serde_json::Value) -> Result<T, String> {
    match serde_json::from_value(v) {
        Ok(t) => Ok(t),
        Err(e) => Err(match serde_json::from_str::<T>(text) {
            Err(positioned) => positioned.to_string(),
            Ok(_) => e.to_string(),
        }),
    }
}

pub(super) fn parse(text: &str) -> Result<ParsedFile, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let exports: Vec<(Option<usize>, serde_json::Value)> = match v {
        serde_json::Value::Array(a) => a
            .into_iter()
            .enumerate()
            .map(|(i, v)| (Some(i), v))
            .collect(),
        obj @ serde_json::Value::Object(_) => vec![(None, obj)],
        _ => return Err("expected a conversation object or an array of them".into()),
    };
    let mut file = ParsedFile {
        format: ChatFormat::ChatGpt,
        conversations: Vec::new(),
        skipped_messages: 0,
    };
    for (i, v) in exports {
        let at = |e: String| match i {
            Some(i) => format!("conversation [{i}]: {e}"),
            None => e,
        };
        if v.get("mapping").is_none_or(|m| !m.is_object()) {
            return Err(at(
                "no \"mapping\" object (not a ChatGPT conversation)".into()
            ));
        }
        // Typed from the one element, so its errors are positioned in the
        // whole text only for a single export.
        let export: Export = match i {
            None => typed(text, v).map_err(at)?,
            Some(_) => serde_json::from_value(v).map_err(|e| at(e.to_string()))?,
        };
        let conv = conversation(export, &mut file.skipped_messages).map_err(at)?;
        file.conversations.push(conv);
    }
    Ok(file)
}

fn conversation(export: Export, skipped: &mut u64) -> Result<ParsedConversation, String> {
    let mapping = export.mapping;
    let mut roots: Vec<&String> = mapping
        .iter()
        .filter(|(_, n)| n.parent.as_ref().is_none_or(|p| !mapping.contains_key(p)))
        .map(|(id, _)| id)
        .collect();
    if roots.is_empty() && !mapping.is_empty() {
        return Err("mapping has no root node (every node has a parent: a cycle)".into());
    }
    // Deterministic: roots by the time of their first message, then id.
    roots.sort_by(|a, b| {
        let t = |id: &String| {
            mapping
                .get(id)
                .and_then(|n| n.message.as_ref())
                .and_then(|m| m.create_time)
                .unwrap_or(f64::MIN)
        };
        t(a).total_cmp(&t(b)).then_with(|| a.cmp(b))
    });
    let mut out = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut stack: Vec<&String> = roots.into_iter().rev().collect();
    while let Some(id) = stack.pop() {
        if !seen.insert(id.as_str()) {
            continue;
        }
        let Some(node) = mapping.get(id) else {
            continue;
        };
        if let Some(msg) = &node.message {
            match message(id, node, msg)? {
                Some(m) => out.push(m),
                None => *skipped += 1,
            }
        }
        stack.extend(node.children.iter().rev());
    }
    Ok(ParsedConversation {
        title: export.title,
        export_id: export.conversation_id.or(export.id),
        created_at: export
            .create_time
            .map(|t| from_unix_seconds("create_time", t))
            .transpose()?,
        updated_at: export
            .update_time
            .map(|t| from_unix_seconds("update_time", t))
            .transpose()?,
        messages: out,
    })
}

fn message(id: &str, node: &Node, msg: &Msg) -> Result<Option<ParsedMessage>, String> {
    let text = match &msg.content {
        Some(MsgContent {
            parts: Some(parts), ..
        }) if !parts.is_empty() => parts
            .iter()
            .filter_map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        Some(MsgContent {
            text: Some(text), ..
        }) => text.clone(),
        _ => String::new(),
    };
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let mut m = ParsedMessage::new(msg.author.role.trim(), text);
    m.timestamp = msg
        .create_time
        .map(|t| from_unix_seconds(&format!("mapping.{id}.message.create_time"), t))
        .transpose()?;
    m.extra.insert("chatgpt_node".into(), id.into());
    if let Some(p) = &node.parent {
        m.extra.insert("chatgpt_parent".into(), p.clone().into());
    }
    Ok(Some(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BRANCHED: &str = r#"{
      "title": "Branches", "create_time": 1703073600.0, "update_time": 1703073700.5,
      "conversation_id": "c-1",
      "mapping": {
        "root": {"id": "root", "message": null, "parent": null, "children": ["u1"]},
        "u1": {"id": "u1", "parent": "root", "children": ["a1", "a2"],
               "message": {"author": {"role": "user"}, "create_time": 1703073601.0,
                           "content": {"content_type": "text", "parts": ["Hello", "there"]}}},
        "a1": {"id": "a1", "parent": "u1", "children": [],
               "message": {"author": {"role": "assistant"}, "create_time": 1703073602.0,
                           "content": {"content_type": "text", "parts": ["First answer"]}}},
        "a2": {"id": "a2", "parent": "u1", "children": ["s"],
               "message": {"author": {"role": "assistant"}, "create_time": 1703073603.0,
                           "content": {"content_type": "text", "parts": ["Second answer"]}}},
        "s": {"id": "s", "parent": "a2", "children": [],
               "message": {"author": {"role": "system"}, "content": {"content_type": "text", "parts": [""]}}}
      }
    }"#;

    #[test]
    fn every_branch_is_walked_depth_first() {
        let f = parse(BRANCHED).unwrap();
        assert_eq!(f.conversations.len(), 1);
        let c = &f.conversations[0];
        let texts: Vec<_> = c.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["Hello\nthere", "First answer", "Second answer"]);
        assert_eq!(f.skipped_messages, 1);
        assert_eq!(c.export_id.as_deref(), Some("c-1"));
        assert_eq!(c.messages[2].extra["chatgpt_parent"], "u1");
        assert_eq!(c.messages[0].timestamp.unwrap().timestamp(), 1_703_073_601);
    }

    #[test]
    fn a_cycle_and_a_wrong_type_are_errors() {
        let cyc = r#"{"mapping": {"a": {"parent": "b", "children": ["b"]}, "b": {"parent": "a", "children": ["a"]}}}"#;
        assert!(parse(cyc).unwrap_err().contains("no root"));
        let wrong = r#"[{"mapping": {"a": {"children": "x"}}}]"#;
        let e = parse(wrong).unwrap_err();
        assert!(
            e.contains("conversation [0]") && e.contains("invalid type"),
            "{e}"
        );
        let single = "{\n\"mapping\": {\"a\": {\"message\": {\"author\": {}}}}}";
        assert!(parse(single).unwrap_err().contains("line"), "positioned");
    }
}
