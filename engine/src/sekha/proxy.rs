//! What a chat proxy in front of an LLM needs from the engine besides
//! context assembly (SPEC.md §21.6, memdb-server's `/v1/chat/completions`):
//! the query taken from the last user turn ([`proxy_query`]), the system
//! message that carries the assembled context to the model
//! ([`context_system_message`], sekha-proxy's wording and item layout),
//! and the label of a captured exchange ([`capture_label`], sekha-proxy's
//! rule).
//!
//! Pure functions over text and [`AssembledContext`]: no store access, no
//! HTTP, no knowledge of the OpenAI wire format (the server takes the text
//! out of the request and puts the message into it).

use chrono::SecondsFormat;

use crate::sekha::context::{AssembledContext, MAX_CONTEXT_QUERY_BYTES};

/// Characters of the first user message kept in a captured exchange's
/// label before `...` is appended (sekha-proxy: 50).
pub const CAPTURE_LABEL_CHARS: usize = 50;
/// The label of a captured exchange without any user text (sekha-proxy's).
pub const UNTITLED_CAPTURE: &str = "Untitled Conversation";
/// Where captured exchanges go unless configured otherwise (sekha-proxy's
/// `DEFAULT_FOLDER`).
pub const DEFAULT_CAPTURE_FOLDER: &str = "/auto-captured";
/// Token budget of the context a proxy injects unless configured otherwise
/// (sekha-proxy's `CONTEXT_TOKEN_BUDGET`).
pub const DEFAULT_PROXY_BUDGET: usize = 2000;

/// The context-assembly query for a user turn: the text trimmed, cut to
/// the query limit (SPEC §16.1) at a character boundary; `None` when blank.
pub fn proxy_query(user_text: &str) -> Option<String> {
    let text = user_text.trim();
    if text.is_empty() {
        return None;
    }
    let mut end = text.len().min(MAX_CONTEXT_QUERY_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Some(text[..end].trim_end().to_string())
}

/// Sekha's label for a captured exchange: the first user message, its
/// whitespace runs (newlines included) collapsed to one space and other
/// control characters dropped (a memdb label holds none), kept whole up to
/// [`CAPTURE_LABEL_CHARS`] characters, else its first 50 characters and
/// `...`. [`UNTITLED_CAPTURE`] when there is no text.
pub fn capture_label(first_user_message: &str) -> String {
    let flat: String = first_user_message
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    let flat = flat.trim();
    if flat.is_empty() {
        return UNTITLED_CAPTURE.to_string();
    }
    if flat.chars().count() <= CAPTURE_LABEL_CHARS {
        return flat.to_string();
    }
    let head: String = flat.chars().take(CAPTURE_LABEL_CHARS).collect();
    format!("{}...", head.trim_end())
}

/// The system message that hands `ctx` to the model, or `None` when it
/// kept no message. sekha-proxy's text: a preamble, then per kept message
/// (rank order) `[Past Conversation n]`, `From: folder/label`, `Date:`
/// (the message's time, RFC 3339 UTC), a blank line, the content and
/// `---`, then the instruction to use it and answer naturally.
pub fn context_system_message(ctx: &AssembledContext) -> Option<String> {
    if ctx.messages.is_empty() {
        return None;
    }
    let items: Vec<String> = ctx
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let folder = m.citation.folder.trim_end_matches('/');
            format!(
                "[Past Conversation {}]\nFrom: {folder}/{}\nDate: {}\n\n{}\n\n---",
                i + 1,
                m.citation.label,
                m.citation
                    .timestamp
                    .to_rfc3339_opts(SecondsFormat::Secs, true),
                m.content.text()
            )
        })
        .collect();
    Some(format!(
        "You have access to the user's past conversations stored in memdb, their long-term memory.\n\n\
         Here is relevant context retrieved from previous discussions:\n\n{}\n\n\
         Use this context to provide more accurate, informed responses. Reference specific past \
         conversations when relevant. The user is not aware you're seeing this context - respond \
         naturally.",
        items.join("\n")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Systems;

    #[test]
    fn labels_follow_sekhas_rule_on_one_line() {
        assert_eq!(
            capture_label("  How do lifetimes work?  "),
            "How do lifetimes work?"
        );
        let fifty = "a".repeat(50);
        assert_eq!(capture_label(&fifty), fifty);
        let long = format!("{fifty}b and more");
        assert_eq!(capture_label(&long), format!("{fifty}..."));
        // Characters, not bytes: 51 e-acutes are cut after 50.
        let accents = "é".repeat(51);
        assert_eq!(capture_label(&accents), format!("{}...", "é".repeat(50)));
        assert_eq!(capture_label("line one\n\tline two"), "line one line two");
        assert_eq!(capture_label("bell\u{7}"), "bell");
        assert_eq!(capture_label(" \n "), UNTITLED_CAPTURE);
        assert!(crate::model::validate::label("label", &capture_label(&long)).is_ok());
    }

    #[test]
    fn queries_are_trimmed_and_cut_at_a_character_boundary() {
        assert_eq!(
            proxy_query("  what did we decide? "),
            Some("what did we decide?".into())
        );
        assert_eq!(proxy_query(" \n"), None);
        let long = "日".repeat(MAX_CONTEXT_QUERY_BYTES);
        let q = proxy_query(&long).unwrap();
        assert!(q.len() <= MAX_CONTEXT_QUERY_BYTES && q.len() > MAX_CONTEXT_QUERY_BYTES - 3);
        assert!(q.chars().all(|c| c == '日'));
    }

    #[test]
    fn the_system_message_lists_each_kept_message_with_its_citation() {
        use crate::{ContextRequest, Memdb, NewConversation, NewMessage};
        let dir = tempfile::tempdir().unwrap();
        let db = Memdb::open(dir.path()).unwrap();
        db.sekha()
            .create_conversation(
                NewConversation::new(
                    "Deploy plan",
                    vec![NewMessage::new("user", "we deploy the cluster on fridays")],
                )
                .in_folder("/work"),
            )
            .unwrap();
        let empty = db
            .sekha()
            .assemble_context(&ContextRequest::new("zebra xylophone"))
            .unwrap();
        assert_eq!(context_system_message(&empty), None);
        let ctx = db
            .sekha()
            .assemble_context(&ContextRequest::new("when do we deploy the cluster"))
            .unwrap();
        let text = context_system_message(&ctx).unwrap();
        let m = &ctx.messages[0];
        let item = format!(
            "[Past Conversation 1]\nFrom: /work/Deploy plan\nDate: {}\n\nwe deploy the cluster on fridays\n\n---",
            m.citation
                .timestamp
                .to_rfc3339_opts(SecondsFormat::Secs, true)
        );
        assert!(text.contains(&item), "{text}");
        assert!(text.starts_with("You have access to the user's past conversations"));
        assert!(text.ends_with("respond naturally."));
    }
}
