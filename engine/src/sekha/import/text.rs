//! Plain-text transcripts (Sekha's rules, SPEC.md §11.1): a line starting
//! `User:`/`user:` or `Assistant:`/`assistant:` starts a message (the rest
//! of the line is its first line); the lines after it are appended. Unlike
//! Sekha, blank lines inside a message are kept. Text before the first
//! message is dropped (counted as skipped). The label is the file name's
//! stem.

use super::markdown::Builder;
use super::{ChatFormat, ParsedFile};

pub(super) fn parse(text: &str) -> Result<ParsedFile, String> {
    let mut b = Builder::default();
    for line in text.lines() {
        if let Some(rest) = line
            .strip_prefix("User:")
            .or_else(|| line.strip_prefix("user:"))
        {
            b.start("user", rest);
        } else if let Some(rest) = line
            .strip_prefix("Assistant:")
            .or_else(|| line.strip_prefix("assistant:"))
        {
            b.start("assistant", rest);
        } else {
            b.line(line);
        }
    }
    Ok(b.done(ChatFormat::Text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_lines_start_messages_and_the_rest_continues_them() {
        let f =
            parse("notes\nUser: hi\nthere\n\nAssistant: hello\n  indented\nuser:again").unwrap();
        let m = &f.conversations[0].messages;
        let got: Vec<_> = m
            .iter()
            .map(|m| (m.role.as_str(), m.content.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("user", "hi\nthere"),
                ("assistant", "hello\n  indented"),
                ("user", "again")
            ]
        );
        assert_eq!(f.skipped_messages, 1);
    }
}
