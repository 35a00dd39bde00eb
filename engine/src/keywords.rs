//! Word-level text helpers for the heuristics that need no model: content
//! words (lowercased, stopwords dropped), sentence splitting and code-fence
//! detection. Shared by the extractive summarizer and the label suggester.

/// English function words that carry no topic.
const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "done",
    "down",
    "during",
    "each",
    "else",
    "even",
    "ever",
    "every",
    "few",
    "for",
    "from",
    "further",
    "get",
    "gets",
    "got",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "let",
    "like",
    "make",
    "may",
    "me",
    "might",
    "more",
    "most",
    "much",
    "must",
    "my",
    "myself",
    "need",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "one",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "please",
    "really",
    "same",
    "say",
    "see",
    "she",
    "should",
    "so",
    "some",
    "still",
    "such",
    "sure",
    "than",
    "thank",
    "thanks",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "thing",
    "things",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "us",
    "use",
    "used",
    "using",
    "very",
    "want",
    "was",
    "way",
    "we",
    "well",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "yes",
    "yet",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "ok",
    "okay",
    "hi",
    "hello",
    "know",
    "think",
    "good",
    "great",
    "new",
    "two",
];

/// Whether `w` (lowercase) is a stopword.
pub(crate) fn is_stopword(w: &str) -> bool {
    STOPWORDS.contains(&w)
}

/// Lowercased words of `text`: runs of alphanumerics (plus inner `'`, `-`,
/// `_`, `+`, `#` so `c++`, `c#` and `snake_case` survive).
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() || (!cur.is_empty() && matches!(c, '\'' | '-' | '_' | '+' | '#')) {
            cur.extend(c.to_lowercase());
        } else if !cur.is_empty() {
            out.push(trim_word(std::mem::take(&mut cur)));
        }
    }
    if !cur.is_empty() {
        out.push(trim_word(cur));
    }
    out.retain(|w| !w.is_empty());
    out
}

fn trim_word(w: String) -> String {
    let t = w.trim_end_matches(['\'', '-', '_']);
    let t = t.strip_suffix("'s").unwrap_or(t);
    t.to_string()
}

/// Content words: [`words`] minus stopwords, numbers and 1–2 letter words.
pub(crate) fn content_words(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| w.chars().count() >= 3 && !is_stopword(w) && !w.chars().all(|c| c.is_numeric()))
        .collect()
}

/// Splits text into sentences at `.`, `!`, `?` followed by whitespace, and
/// at line breaks. Sentences are trimmed; empty ones dropped.
pub(crate) fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut cur = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            cur.push(c);
            if matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|n| n.is_whitespace()) {
                let s = cur.trim();
                if !s.is_empty() {
                    out.push(s.to_string());
                }
                cur.clear();
            }
        }
        let s = cur.trim();
        if !s.is_empty() {
            out.push(s.to_string());
        }
    }
    out
}

/// Languages named on the opening fences of fenced code blocks, and whether
/// any fence exists at all.
pub(crate) fn code_fences(text: &str) -> (bool, Vec<String>) {
    let mut has = false;
    let mut langs = Vec::new();
    let mut open = false;
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix("```") {
            has = true;
            if !open {
                let lang = rest.trim().to_lowercase();
                if !lang.is_empty()
                    && lang
                        .chars()
                        .all(|c| c.is_alphanumeric() || "+#-_".contains(c))
                    && !langs.contains(&lang)
                {
                    langs.push(lang);
                }
            }
            open = !open;
        }
    }
    (has, langs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopwords() {
        assert!(is_stopword("the"));
        assert!(!is_stopword("tantivy"));
    }

    #[test]
    fn words_keep_programming_names() {
        assert_eq!(
            words("I like C++ and C#, Rust's traits."),
            vec!["i", "like", "c++", "and", "c#", "rust", "traits"]
        );
        assert_eq!(
            content_words("The borrow checker is 42 times stricter"),
            vec!["borrow", "checker", "times", "stricter"]
        );
    }

    #[test]
    fn sentences_split_on_terminators_and_lines() {
        assert_eq!(
            sentences("One. Two? v1.2 is out!\nThree"),
            vec!["One.", "Two?", "v1.2 is out!", "Three"]
        );
    }

    #[test]
    fn code_fences_report_languages() {
        let (has, langs) = code_fences("see\n```python\nprint(1)\n```\n```\nx\n```\n");
        assert!(has);
        assert_eq!(langs, vec!["python"]);
        assert_eq!(code_fences("no code"), (false, vec![]));
    }
}
