//! Claude's exports, JSON and XML.
//!
//! JSON, two shapes: Sekha's `{conversations: [{title, created_at,
//! updated_at, messages: [{role, content, timestamp}]}]}` (Sekha's own
//! parser reads the key `conversation`; both are accepted), and claude.ai's
//! data export, an array (or one object) of `{uuid, name, created_at,
//! updated_at, chat_messages: [{sender, text, content, created_at}]}` with
//! `sender` `human` read as role `user`. Times are RFC 3339 strings.
//!
//! XML, read with `quick-xml` (well-formedness checked, entities and
//! CDATA resolved): a `<conversation>` root, or any root holding
//! `<conversation>` elements; each has `<title>` (or a `title` attribute),
//! optional `<created_at>`/`<updated_at>`, and `<message>` elements
//! (directly or inside `<messages>`), each with `<role>` (or a `role` or
//! `sender` attribute; `user` when absent, as Sekha), `<content>` (or
//! `<text>`, or the message's own text) and an optional `<timestamp>`
//! (or `created_at`). A message with no text is skipped.

use serde::Deserialize;

use quick_xml::Reader;
use quick_xml::events::Event;

use super::{ChatFormat, ParsedConversation, ParsedFile, ParsedMessage, from_time_string};

/// Deepest XML nesting read (a deeper document is an error).
const MAX_DEPTH: usize = 64;

/// Whether a JSON document is a Claude export.
pub(super) fn looks_like_json(v: &serde_json::Value) -> bool {
    let claude_ai = |v: &serde_json::Value| v.get("chat_messages").is_some_and(|m| m.is_array());
    match v {
        serde_json::Value::Array(a) => !a.is_empty() && a.iter().all(claude_ai),
        serde_json::Value::Object(o) => {
            o.get("conversations").is_some_and(|c| c.is_array())
                || o.get("conversation").is_some_and(|c| c.is_array())
                || claude_ai(v)
        }
        _ => false,
    }
}

pub(super) fn parse(text: &str) -> Result<ParsedFile, String> {
    if text.trim_start().starts_with('<') {
        parse_xml(text)
    } else {
        parse_json(text)
    }
}

// ----- JSON --------------------------------------------------------------

#[derive(Deserialize)]
struct SekhaExport {
    #[serde(alias = "conversation")]
    conversations: Vec<SekhaConversation>,
}

#[derive(Deserialize)]
struct SekhaConversation {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    created_at: Option<String>,
    #[serde(default)]
    updated_at: Option<String>,
    #[serde(default)]
    id: Option<String>,
    messages: Vec<SekhaMessage>,
}

#[derive(Deserialize)]
struct SekhaMessage {
    role: String,
    content: String,
    #[serde(default)]
    timestamp: Option<String>,
}

#[derive(Deserialize)]
struct AiConversation {
    #[serde(default)]
    uuid: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    created_at: Option<String>,
    #[serde(default)]
    updated_at: Option<String>,
    chat_messages: Vec<AiMessage>,
}

#[derive(Deserialize)]
struct AiMessage {
    sender: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    content: Option<Vec<serde_json::Value>>,
    #[serde(default)]
    created_at: Option<String>,
}

fn time(field: &str, s: Option<&str>) -> Result<Option<chrono::DateTime<chrono::Utc>>, String> {
    match s {
        Some(s) if !s.trim().is_empty() => from_time_string(field, s).map(Some),
        _ => Ok(None),
    }
}

fn role_of(sender: &str) -> String {
    match sender.trim() {
        "human" | "Human" => "user".into(),
        other => other.to_lowercase(),
    }
}

fn parse_json(text: &str) -> Result<ParsedFile, String> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let mut file = ParsedFile {
        format: ChatFormat::Claude,
        conversations: Vec::new(),
        skipped_messages: 0,
    };
    let is_ai = |v: &serde_json::Value| v.get("chat_messages").is_some();
    let ai: Option<Vec<serde_json::Value>> = match &v {
        serde_json::Value::Array(a) => Some(a.clone()),
        obj if is_ai(obj) => Some(vec![obj.clone()]),
        _ => None,
    };
    if let Some(items) = ai {
        for (i, item) in items.into_iter().enumerate() {
            let at = |e: String| format!("conversation [{i}]: {e}");
            let c: AiConversation = serde_json::from_value(item).map_err(|e| at(e.to_string()))?;
            let conv = ai_conversation(c, &mut file.skipped_messages).map_err(at)?;
            file.conversations.push(conv);
        }
        return Ok(file);
    }
    let export: SekhaExport = serde_json::from_value(v).map_err(|e| {
        // Re-parsed for the line and column.
        match serde_json::from_str::<SekhaExport>(text) {
            Err(p) => p.to_string(),
            Ok(_) => e.to_string(),
        }
    })?;
    for (i, c) in export.conversations.into_iter().enumerate() {
        let at = |e: String| format!("conversations[{i}]: {e}");
        let mut messages = Vec::new();
        for (j, m) in c.messages.into_iter().enumerate() {
            let content = m.content.trim();
            if content.is_empty() {
                file.skipped_messages += 1;
                continue;
            }
            let mut pm = ParsedMessage::new(m.role.trim(), content);
            pm.timestamp =
                time(&format!("messages[{j}].timestamp"), m.timestamp.as_deref()).map_err(at)?;
            messages.push(pm);
        }
        file.conversations.push(ParsedConversation {
            title: c.title,
            export_id: c.id,
            created_at: time("created_at", c.created_at.as_deref()).map_err(at)?,
            updated_at: time("updated_at", c.updated_at.as_deref()).map_err(at)?,
            messages,
        });
    }
    Ok(file)
}

fn ai_conversation(c: AiConversation, skipped: &mut u64) -> Result<ParsedConversation, String> {
    let mut messages = Vec::new();
    for (j, m) in c.chat_messages.into_iter().enumerate() {
        let text = match m.text.as_deref().map(str::trim) {
            Some(t) if !t.is_empty() => t.to_string(),
            _ => m
                .content
                .iter()
                .flatten()
                .filter(|p| p.get("type").and_then(|t| t.as_str()) == Some("text"))
                .filter_map(|p| p.get("text").and_then(|t| t.as_str()))
                .collect::<Vec<_>>()
                .join("\n")
                .trim()
                .to_string(),
        };
        if text.is_empty() {
            *skipped += 1;
            continue;
        }
        let mut pm = ParsedMessage::new(role_of(&m.sender), text);
        pm.timestamp = time(
            &format!("chat_messages[{j}].created_at"),
            m.created_at.as_deref(),
        )?;
        messages.push(pm);
    }
    Ok(ParsedConversation {
        title: c.name,
        export_id: c.uuid,
        created_at: time("created_at", c.created_at.as_deref())?,
        updated_at: time("updated_at", c.updated_at.as_deref())?,
        messages,
    })
}

// ----- XML ---------------------------------------------------------------

/// A parsed XML element: its local name, attributes, text (its own text
/// nodes, concatenated) and child elements.
#[derive(Debug, Default)]
struct Element {
    name: String,
    attrs: Vec<(String, String)>,
    text: String,
    children: Vec<Element>,
}

impl Element {
    fn child(&self, names: &[&str]) -> Option<&Element> {
        names
            .iter()
            .find_map(|n| self.children.iter().find(|c| c.name == *n))
    }

    fn attr(&self, names: &[&str]) -> Option<&str> {
        names.iter().find_map(|n| {
            self.attrs
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.as_str())
        })
    }

    /// All text under the element, in document order.
    fn deep_text(&self) -> String {
        let mut out = self.text.clone();
        for c in &self.children {
            let t = c.deep_text();
            if !t.is_empty() {
                if !out.is_empty() && !out.ends_with(char::is_whitespace) {
                    out.push('\n');
                }
                out.push_str(&t);
            }
        }
        out
    }

    /// A field given as a child element's text or as an attribute.
    fn field(&self, names: &[&str]) -> Option<String> {
        self.child(names)
            .map(|c| c.deep_text().trim().to_string())
            .or_else(|| self.attr(names).map(|v| v.trim().to_string()))
            .filter(|s| !s.is_empty())
    }

    /// Elements named `name` at or under this one, outermost first
    /// (nested ones inside a match are not searched).
    fn find_all<'a>(&'a self, name: &str, out: &mut Vec<&'a Element>) {
        if self.name == name {
            out.push(self);
            return;
        }
        for c in &self.children {
            c.find_all(name, out);
        }
    }
}

fn line_at(text: &str, pos: u64) -> usize {
    let pos = usize::try_from(pos).unwrap_or(usize::MAX).min(text.len());
    text.as_bytes()[..pos]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// The document's root element.
fn parse_tree(text: &str) -> Result<Element, String> {
    let mut reader = Reader::from_str(text);
    reader.config_mut().check_end_names = true;
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    let xml_err = |reader: &Reader<&[u8]>, e: &dyn std::fmt::Display| {
        format!(
            "not well-formed XML at line {}: {e}",
            line_at(text, reader.buffer_position())
        )
    };
    loop {
        let ev = reader.read_event().map_err(|e| xml_err(&reader, &e))?;
        match ev {
            Event::Start(e) | Event::Empty(e) if root.is_some() => {
                let _ = e;
                return Err(format!(
                    "more than one root element (line {})",
                    line_at(text, reader.buffer_position())
                ));
            }
            Event::Start(e) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(format!("elements nested deeper than {MAX_DEPTH}"));
                }
                stack.push(element(&e).map_err(|m| xml_err(&reader, &m))?);
            }
            Event::Empty(e) => {
                let el = element(&e).map_err(|m| xml_err(&reader, &m))?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => root = Some(el),
                }
            }
            Event::End(_) => {
                let Some(el) = stack.pop() else {
                    return Err(xml_err(&reader, &"an end tag without a start"));
                };
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => root = Some(el),
                }
            }
            Event::Text(t) => {
                if let Some(cur) = stack.last_mut() {
                    cur.text.push_str(&t.into_inner());
                } else if !t.into_inner().trim().is_empty() {
                    return Err(xml_err(&reader, &"text outside the root element"));
                }
            }
            Event::CData(t) => {
                if let Some(cur) = stack.last_mut() {
                    cur.text.push_str(&t.into_inner());
                }
            }
            Event::GeneralRef(r) => {
                let c = match r.resolve_char_ref().map_err(|e| xml_err(&reader, &e))? {
                    Some(c) => c,
                    None => match r.clone().into_inner().as_ref() {
                        "lt" => '<',
                        "gt" => '>',
                        "amp" => '&',
                        "apos" => '\'',
                        "quot" => '"',
                        other => {
                            return Err(xml_err(&reader, &format!("unknown entity &{other};")));
                        }
                    },
                };
                if let Some(cur) = stack.last_mut() {
                    cur.text.push(c);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if let Some(open) = stack.last() {
        return Err(format!(
            "not well-formed XML: <{}> is not closed at the end of the file",
            open.name
        ));
    }
    root.ok_or_else(|| "no XML element".to_string())
}

fn element(e: &quick_xml::events::BytesStart<'_>) -> Result<Element, String> {
    let mut attrs = Vec::new();
    for a in e.attributes() {
        let a = a.map_err(|e| e.to_string())?;
        let value = a
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map_err(|e| e.to_string())?;
        attrs.push((a.key.local_name().as_ref().to_string(), value.into_owned()));
    }
    Ok(Element {
        name: e.local_name().as_ref().to_string(),
        attrs,
        ..Element::default()
    })
}

fn parse_xml(text: &str) -> Result<ParsedFile, String> {
    let root = parse_tree(text)?;
    let mut convs = Vec::new();
    root.find_all("conversation", &mut convs);
    if convs.is_empty() {
        return Err(format!(
            "no <conversation> element (the root is <{}>)",
            root.name
        ));
    }
    let mut file = ParsedFile {
        format: ChatFormat::Claude,
        conversations: Vec::new(),
        skipped_messages: 0,
    };
    for (i, c) in convs.into_iter().enumerate() {
        let at = |e: String| format!("<conversation> {}: {e}", i + 1);
        let holder = c.child(&["messages"]).unwrap_or(c);
        let mut messages = Vec::new();
        for (j, m) in holder
            .children
            .iter()
            .filter(|e| e.name == "message")
            .enumerate()
        {
            let content = match m.child(&["content", "text"]) {
                Some(el) => el.deep_text(),
                None if m.children.is_empty() => m.text.clone(),
                None => String::new(),
            };
            let content = content.trim();
            if content.is_empty() {
                file.skipped_messages += 1;
                continue;
            }
            let role = m
                .field(&["role", "sender"])
                .map(|r| role_of(&r))
                .unwrap_or_else(|| "user".into());
            let mut pm = ParsedMessage::new(role, content);
            pm.timestamp = time(
                &format!("<message> {}: timestamp", j + 1),
                m.field(&["timestamp", "created_at"]).as_deref(),
            )
            .map_err(at)?;
            messages.push(pm);
        }
        file.conversations.push(ParsedConversation {
            title: c.field(&["title", "name"]),
            export_id: c.field(&["id", "uuid"]),
            created_at: time("created_at", c.field(&["created_at"]).as_deref()).map_err(at)?,
            updated_at: time("updated_at", c.field(&["updated_at"]).as_deref()).map_err(at)?,
            messages,
        });
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_entities_cdata_and_attributes_are_read() {
        let xml = r#"<?xml version="1.0"?>
<conversations>
  <conversation id="x1">
    <title>Rust &amp; XML</title>
    <messages>
      <message><role>user</role><content>Is 1 &lt; 2?</content><timestamp>2024-01-02T03:04:05Z</timestamp></message>
      <message role="assistant"><content><![CDATA[Yes: <b>1 < 2</b>]]></content></message>
      <message sender="human">plain &#x41;</message>
      <message><role>assistant</role><content>   </content></message>
    </messages>
  </conversation>
</conversations>"#;
        let f = parse(xml).unwrap();
        let c = &f.conversations[0];
        assert_eq!(c.title.as_deref(), Some("Rust & XML"));
        assert_eq!(c.export_id.as_deref(), Some("x1"));
        let got: Vec<_> = c
            .messages
            .iter()
            .map(|m| (m.role.as_str(), m.content.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("user", "Is 1 < 2?"),
                ("assistant", "Yes: <b>1 < 2</b>"),
                ("user", "plain A")
            ]
        );
        assert_eq!(f.skipped_messages, 1);
        assert!(c.messages[0].timestamp.is_some());
    }

    #[test]
    fn broken_xml_is_an_error_with_a_line() {
        let e = parse("<conversation>\n<title>t</title>\n<message><role>user</content></message></conversation>")
            .unwrap_err();
        assert!(e.contains("line 3"), "{e}");
        let e = parse("<conversation><message>").unwrap_err();
        assert!(e.contains("not closed"), "{e}");
        let e = parse("<chat><message>hi</message></chat>").unwrap_err();
        assert!(e.contains("no <conversation>"), "{e}");
    }

    #[test]
    fn both_json_shapes_are_read() {
        let sekha = r#"{"conversations": [{"title": "T", "created_at": "2024-05-01T10:00:00Z",
            "messages": [{"role": "user", "content": "hi", "timestamp": "2024-05-01T10:00:01Z"},
                         {"role": "assistant", "content": "hello"}]}]}"#;
        let f = parse(sekha).unwrap();
        assert_eq!(f.conversations[0].messages.len(), 2);
        let ai = r#"[{"uuid": "u", "name": "N", "chat_messages": [
            {"sender": "human", "text": "q", "created_at": "2024-05-01T10:00:00.123Z"},
            {"sender": "assistant", "text": "", "content": [{"type": "text", "text": "a"}]}]}]"#;
        let f = parse(ai).unwrap();
        let m = &f.conversations[0].messages;
        assert_eq!((m[0].role.as_str(), m[1].content.as_str()), ("user", "a"));
        let bad = r#"{"conversations": [{"messages": [{"role": "user", "content": "x", "timestamp": "soon"}]}]}"#;
        assert!(parse(bad).unwrap_err().contains("\"soon\" is not a time"));
    }
}
