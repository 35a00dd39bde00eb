//! Who said a message, and which speakers a question names (SPEC.md §18.3,
//! "Speakers").
//!
//! Dialogue histories are commonly stored one turn per message as
//! `"Name: text"` under one role (two people's chat, a meeting transcript),
//! or with the speaker in the message's metadata. A question about a person
//! ("What did Zara say about her wrist?") is most often answered by what
//! that person said, so hybrid search can favour the named speaker's turns.

/// Longest speaker name read from a message's opening `Name:`, in bytes.
const MAX_NAME_BYTES: usize = 40;

/// Most words in a speaker name read from a message's opening.
const MAX_NAME_WORDS: usize = 3;

/// The speaker of a message, lowercased: its metadata's `speaker` string
/// when it has a non-empty one, else the `Name:` its text opens with (one
/// to three words, each starting with an uppercase letter, at most 40
/// bytes, then a colon and whitespace). `None` when neither is there.
pub(crate) fn speaker_of(metadata: &serde_json::Value, text: &str) -> Option<String> {
    if let Some(s) = metadata.get("speaker").and_then(|v| v.as_str()) {
        let s = s.trim();
        if !s.is_empty() && s.len() <= MAX_NAME_BYTES {
            return Some(s.to_lowercase());
        }
    }
    let t = text.trim_start();
    // The colon must come within the first MAX_NAME_BYTES + 1 bytes: only
    // the opening is read, however long the message.
    let colon = t
        .char_indices()
        .take_while(|(i, _)| *i <= MAX_NAME_BYTES)
        .find(|(_, c)| *c == ':')?
        .0;
    let name = &t[..colon];
    let after = &t[colon + 1..];
    if !after.starts_with(char::is_whitespace) {
        // "http://…", "10:30", "Note:text": not a speaker's turn.
        return None;
    }
    let words: Vec<&str> = name.split_whitespace().collect();
    let well_formed = !words.is_empty()
        && words.len() <= MAX_NAME_WORDS
        && words.iter().all(|w| {
            w.chars().next().is_some_and(char::is_uppercase)
                && w.chars().all(|c| c.is_alphanumeric() || "'.-".contains(c))
        });
    well_formed.then(|| words.join(" ").to_lowercase())
}

/// The question's words, lowercased, a possessive `'s` dropped: what
/// [`names`] matches speaker names against.
pub(crate) fn question_words(query: &str) -> Vec<String> {
    query
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’' || c == '.' || c == '-'))
        .map(|w| w.trim_matches(|c: char| "'’.-".contains(c)))
        .filter(|w| !w.is_empty())
        .map(|w| {
            let w = w.to_lowercase();
            w.strip_suffix("'s")
                .or_else(|| w.strip_suffix("’s"))
                .map(str::to_string)
                .unwrap_or(w)
        })
        .collect()
}

/// Whether the question (its [`question_words`]) names `speaker` (as
/// [`speaker_of`] returns it): the whole name as consecutive words, or its
/// first word (a first name).
pub(crate) fn names(words: &[String], speaker: &str) -> bool {
    let parts: Vec<&str> = speaker.split_whitespace().collect();
    let Some(first) = parts.first() else {
        return false;
    };
    words.iter().any(|w| w == first)
        || (parts.len() > 1
            && words
                .windows(parts.len())
                .any(|win| win.iter().zip(&parts).all(|(a, b)| a == b)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_speaker_comes_from_metadata_or_the_opening_name() {
        let none = json!({});
        assert_eq!(
            speaker_of(&none, "Zara: I broke my wrist").as_deref(),
            Some("zara")
        );
        assert_eq!(
            speaker_of(&none, "  Mary Ann Lee: hello").as_deref(),
            Some("mary ann lee")
        );
        assert_eq!(speaker_of(&none, "Zoë: ça va").as_deref(), Some("zoë"));
        // A long message without an opening name is read only at its start.
        let long = format!("{}: tail", "é".repeat(100_000));
        assert_eq!(speaker_of(&none, &long), None);
        assert_eq!(
            speaker_of(&json!({"speaker": "Otto"}), "Zara: hi").as_deref(),
            Some("otto")
        );
        // An empty metadata speaker falls back to the text.
        assert_eq!(
            speaker_of(&json!({"speaker": " "}), "Zara: hi").as_deref(),
            Some("zara")
        );
        for text in [
            "see http://example.com",
            "meet at 10:30 tomorrow",
            "Note:no space",
            "the plan: go home",
            "One Two Three Four: too many words",
            "Zara",
            "",
            ": nothing before",
            "Zara (laughing): a remark",
            "Averyveryveryverylongnamethatgoesonandonandon: hi",
        ] {
            assert_eq!(speaker_of(&none, text), None, "{text:?}");
        }
    }

    #[test]
    fn a_question_names_a_speaker_by_first_or_full_name() {
        let q = question_words("What did Zara's brother tell Mary Ann about it?");
        assert!(names(&q, "zara"));
        assert!(names(&q, "mary ann lee"), "first name");
        assert!(names(&q, "mary ann"));
        assert!(!names(&q, "otto"));
        assert!(!names(&q, ""));
        assert!(names(&question_words("And Zara’s?"), "zara"));
    }
}
