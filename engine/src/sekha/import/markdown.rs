//! Markdown transcripts (Sekha's rules, SPEC.md §11.1): a line starting
//! `## `, `**User:**` or `**Assistant:**` starts a message, of role `user`
//! when the line contains `User` or `user` and `assistant` otherwise; the
//! text after a `**User:**`/`**Assistant:**` marker is the message's first
//! line. `# ` lines before the first message (the title) are ignored.
//! Unlike Sekha, blank lines and `# ` lines inside a message are kept,
//! and nothing inside a fenced code block (```` ``` ````/`~~~`) starts a
//! message. Text before the first message is dropped (counted as skipped).
//! The label is the file name's stem.

use super::{ChatFormat, ParsedConversation, ParsedFile, ParsedMessage};

/// Collects messages line by line: shared with the text transcripts.
#[derive(Default)]
pub(super) struct Builder {
    messages: Vec<ParsedMessage>,
    current: Option<(String, String)>,
    preamble: bool,
    skipped: u64,
}

impl Builder {
    pub(super) fn start(&mut self, role: &str, first: &str) {
        self.finish();
        self.current = Some((role.to_string(), first.trim().to_string()));
    }

    pub(super) fn line(&mut self, line: &str) {
        match &mut self.current {
            Some((_, text)) => {
                text.push('\n');
                text.push_str(line);
            }
            None => self.preamble |= !line.trim().is_empty(),
        }
    }

    fn finish(&mut self) {
        if let Some((role, text)) = self.current.take() {
            let text = text.trim();
            if text.is_empty() {
                self.skipped += 1;
            } else {
                self.messages.push(ParsedMessage::new(role, text));
            }
        }
    }

    pub(super) fn done(mut self, format: ChatFormat) -> ParsedFile {
        self.finish();
        ParsedFile {
            format,
            conversations: vec![ParsedConversation {
                messages: self.messages,
                ..ParsedConversation::default()
            }],
            skipped_messages: self.skipped + u64::from(self.preamble),
        }
    }

    pub(super) fn started(&self) -> bool {
        self.current.is_some() || !self.messages.is_empty()
    }
}

pub(super) fn parse(text: &str) -> Result<ParsedFile, String> {
    let mut b = Builder::default();
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(f) = fence {
            if trimmed.starts_with(f) {
                fence = None;
            }
            b.line(line);
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
            b.line(line);
            continue;
        }
        if line.starts_with("# ") && !b.started() {
            continue;
        }
        let role = |l: &str| {
            if l.contains("User") || l.contains("user") {
                "user"
            } else {
                "assistant"
            }
        };
        if let Some(rest) = line.strip_prefix("**User:**") {
            b.start("user", rest);
        } else if let Some(rest) = line.strip_prefix("**Assistant:**") {
            b.start("assistant", rest);
        } else if line.starts_with("## ") {
            b.start(role(line), "");
        } else {
            b.line(line);
        }
    }
    Ok(b.done(ChatFormat::Markdown))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_and_bold_markers_start_messages() {
        let md = "# Title\nintro\n\n## User\nHow do I list files?\n\n## Assistant\nUse ls:\n\n```sh\n## not a heading\nls -la\n```\n# kept\n**User:** thanks\nmore\n**Assistant:**\n";
        let f = parse(md).unwrap();
        let m = &f.conversations[0].messages;
        let got: Vec<_> = m
            .iter()
            .map(|m| (m.role.as_str(), m.content.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("user", "How do I list files?"),
                (
                    "assistant",
                    "Use ls:\n\n```sh\n## not a heading\nls -la\n```\n# kept"
                ),
                ("user", "thanks\nmore"),
            ]
        );
        // The preamble and the empty last message.
        assert_eq!(f.skipped_messages, 2);
    }
}
