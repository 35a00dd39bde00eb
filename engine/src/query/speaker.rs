//! Who said a message, which speakers a question names, and whether a turn
//! only asks (SPEC.md §18.3, "Speakers" and "Questions").
//!
//! Dialogue histories are commonly stored one turn per message as
//! `"Name: text"` under one role (two people's chat, a meeting transcript),
//! or with the speaker in the message's metadata. A question about a person
//! ("What did Zara say about her wrist?") is most often answered by what
//! that person said, so hybrid search can favour the named speaker's turns.

use crate::util::turn_name::{MAX_NAME_BYTES, opening_name, said};

/// The speaker of a message, lowercased: its metadata's `speaker` string
/// when it has a non-empty one, else the `Name:` its text opens with (one
/// to three words, each starting with an uppercase letter, at most 40
/// bytes, then a colon and whitespace; not a one-word label such as
/// `TODO` or `Note`). `None` when neither is there.
pub(crate) fn speaker_of(metadata: &serde_json::Value, text: &str) -> Option<String> {
    if let Some(s) = metadata.get("speaker").and_then(|v| v.as_str()) {
        let s = s.trim();
        if !s.is_empty() && s.len() <= MAX_NAME_BYTES {
            return Some(s.to_lowercase());
        }
    }
    let (words, _) = opening_name(text)?;
    Some(words.join(" ").to_lowercase())
}

/// How many content words ([`crate::util::keywords::content_words`]) a
/// turn [`said`].
pub(crate) fn content_words_said(text: &str) -> usize {
    crate::util::keywords::content_words(said(text)).len()
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

/// Most words outside question sentences in a turn that [`asks_only`].
const MAX_ASIDE_WORDS: usize = 3;

/// Words that open a question: capitalised after a lowercase word, one
/// starts a new sentence in chat typed without stops ("I fell disco
/// skating Have you ever broken a bone?").
const QUESTION_OPENERS: [&str; 21] = [
    "What", "How", "Have", "Has", "Do", "Does", "Did", "Are", "Is", "Was", "Were", "Where", "When",
    "Why", "Who", "Which", "Can", "Could", "Would", "Will", "Should",
];

/// Whether a turn only asks: its text (after an opening `Name:`) holds a
/// question, and its sentences that are not questions hold at most
/// [`MAX_ASIDE_WORDS`] words between them ("Haha. What is your dream
/// job?"). Sentences end at `.`, `!` or `?`, and before a capitalised
/// [`QUESTION_OPENERS`] word that follows a lowercase one; a run of text
/// with no closing mark counts as a statement.
pub(crate) fn asks_only(text: &str) -> bool {
    let body = said(text);
    let mut asked = false;
    let mut aside = 0;
    let mut words = 0;
    let mut last_lower = false;
    for token in body.split_whitespace() {
        let word = token.trim_matches(|c: char| !c.is_alphanumeric());
        if !word.is_empty() {
            if last_lower && QUESTION_OPENERS.contains(&word) {
                aside += words;
                words = 0;
            }
            words += 1;
            last_lower = word.chars().next().is_some_and(char::is_lowercase);
        }
        // A mark inside a token ("3.5") ends no sentence; one among its
        // closing marks does ("really?!" asks).
        let marks = &token[token.trim_end_matches(|c: char| !c.is_alphanumeric()).len()..];
        if marks.contains('?') {
            asked |= words > 0;
            words = 0;
        } else if marks.contains(['.', '!']) {
            aside += words;
            words = 0;
        }
    }
    asked && aside + words <= MAX_ASIDE_WORDS
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
        // A label word is a speaker only when the metadata says so.
        assert_eq!(
            speaker_of(&json!({"speaker": "Note"}), "TODO: x").as_deref(),
            Some("note")
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
            "TODO: call the bank",
            "Note: the key is under the mat",
            "Update: shipped",
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

    #[test]
    fn a_turn_asks_only_when_its_statements_are_a_few_words_at_most() {
        for text in [
            "Zara: What would be your dream job?",
            "Haha. What is your dream vacation spot then?",
            "Oh nice! Where? When did you go?",
            "what kind of music did she like? lol",
            "what kind of music did Sarah like?",
            "Oh really?! Tell me more?",
            "e.g. which one?",
        ] {
            assert!(asks_only(text), "{text:?}");
        }
        for text in [
            "Zara: I fell disco skating. Have you ever broken a bone?",
            "I fell disco skating Have you ever broken a bone?",
            "Otto: I broke my wrist.",
            "",
            "?",
            "Zara: was it 3.5 degrees? No, it was 35 degrees outside today",
        ] {
            assert!(!asks_only(text), "{text:?}");
        }
    }
}
