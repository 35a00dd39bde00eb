//! The `Name:` a dialogue turn opens with (SPEC.md §18.3, "Speakers").
//!
//! Dialogue histories are commonly stored one turn per message as
//! `"Name: text"`. Search reads the name as who spoke (`query/speaker.rs`)
//! and the text after it as what was said (the short-turn count, and the
//! turn before a message in the text index, `text/mod.rs`).

/// Longest speaker name read from a message's opening `Name:`, in bytes.
pub(crate) const MAX_NAME_BYTES: usize = 40;

/// Most words in a speaker name read from a message's opening.
const MAX_NAME_WORDS: usize = 3;

/// One-word openings that label a note rather than name who spoke
/// (`TODO: call the bank`, `Update: shipped`), compared lowercased. A
/// message's metadata `speaker` is still read as given.
const LABELS: &[&str] = &[
    "answer",
    "bug",
    "cc",
    "date",
    "done",
    "edit",
    "error",
    "example",
    "fixme",
    "fyi",
    "goal",
    "hack",
    "idea",
    "important",
    "info",
    "input",
    "issue",
    "nb",
    "note",
    "notes",
    "output",
    "ps",
    "question",
    "re",
    "reminder",
    "result",
    "source",
    "status",
    "step",
    "subject",
    "summary",
    "task",
    "tip",
    "title",
    "tldr",
    "todo",
    "update",
    "warning",
    "xxx",
];

/// What a turn says: its text after the `Name:` it opens with, if any.
pub(crate) fn said(text: &str) -> &str {
    opening_name(text).map_or(text, |(_, after)| after)
}

/// The words of the `Name:` a text opens with, and the text after its
/// colon: one to three words, each starting with an uppercase letter
/// (letters, digits, `'`, `.`, `-`), at most [`MAX_NAME_BYTES`], then a
/// colon and whitespace; a single word from [`LABELS`] is not a name. Only
/// the opening is read, however long the text.
pub(crate) fn opening_name(text: &str) -> Option<(Vec<&str>, &str)> {
    let t = text.trim_start();
    // The colon must come within the first MAX_NAME_BYTES + 1 bytes.
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
    if let [one] = words.as_slice()
        && LABELS.contains(&one.to_lowercase().as_str())
    {
        return None;
    }
    let well_formed = !words.is_empty()
        && words.len() <= MAX_NAME_WORDS
        && words.iter().all(|w| {
            w.chars().next().is_some_and(char::is_uppercase)
                && w.chars().all(|c| c.is_alphanumeric() || "'.-".contains(c))
        });
    well_formed.then_some((words, after))
}
