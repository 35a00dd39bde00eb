//! Word-level text helpers for the heuristics that need no model: content
//! words (lowercased, stopwords dropped), sentence splitting and code-fence
//! detection. Shared by the extractive summarizer and the label suggester.

/// English function words: NLTK's English stop word list, the one list of
/// the engine. Hybrid search's keyword side requires a word outside it
/// (SPEC.md §18.2 measured with exactly this list; rerun the quality harness
/// before changing it).
const FUNCTION_WORDS: &[&str] = &[
    "i",
    "me",
    "my",
    "myself",
    "we",
    "our",
    "ours",
    "ourselves",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "he",
    "him",
    "his",
    "himself",
    "she",
    "her",
    "hers",
    "herself",
    "it",
    "its",
    "itself",
    "they",
    "them",
    "their",
    "theirs",
    "themselves",
    "what",
    "which",
    "who",
    "whom",
    "this",
    "that",
    "these",
    "those",
    "am",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "have",
    "has",
    "had",
    "having",
    "do",
    "does",
    "did",
    "doing",
    "a",
    "an",
    "the",
    "and",
    "but",
    "if",
    "or",
    "because",
    "as",
    "until",
    "while",
    "of",
    "at",
    "by",
    "for",
    "with",
    "about",
    "against",
    "between",
    "into",
    "through",
    "during",
    "before",
    "after",
    "above",
    "below",
    "to",
    "from",
    "up",
    "down",
    "in",
    "out",
    "on",
    "off",
    "over",
    "under",
    "again",
    "further",
    "then",
    "once",
    "here",
    "there",
    "when",
    "where",
    "why",
    "how",
    "all",
    "any",
    "both",
    "each",
    "few",
    "more",
    "most",
    "other",
    "some",
    "such",
    "no",
    "nor",
    "not",
    "only",
    "own",
    "same",
    "so",
    "than",
    "too",
    "very",
    "s",
    "t",
    "can",
    "will",
    "just",
    "don",
    "should",
    "now",
    "d",
    "ll",
    "m",
    "o",
    "re",
    "ve",
    "y",
    "could",
    "would",
];

/// Words frequent in chat that carry no topic either; the heuristics
/// (summaries, label suggestions) drop them on top of [`FUNCTION_WORDS`].
const CHAT_FILLER: &[&str] = &[
    "also", "done", "else", "even", "ever", "every", "get", "gets", "got", "let", "like", "make",
    "may", "might", "much", "must", "need", "one", "please", "really", "say", "see", "still",
    "sure", "thank", "thanks", "thing", "things", "us", "use", "used", "using", "want", "way",
    "well", "yes", "yet", "ok", "okay", "hi", "hello", "know", "think", "good", "great", "new",
    "two",
];

/// Whether `w` (lowercase) is an English function word (NLTK's list).
pub(crate) fn is_function_word(w: &str) -> bool {
    FUNCTION_WORDS.contains(&w)
}

/// Whether `w` (lowercase) is a stopword for the heuristics: a function
/// word or chat filler.
pub(crate) fn is_stopword(w: &str) -> bool {
    is_function_word(w) || CHAT_FILLER.contains(&w)
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
        // Chat filler is a stopword for the heuristics, not for search.
        assert!(is_stopword("thanks") && !is_function_word("thanks"));
        assert!(is_function_word("how") && is_function_word("don"));
        // One list: every function word is a stopword, none is filler.
        assert!(FUNCTION_WORDS.iter().all(|w| is_stopword(w)));
        assert!(CHAT_FILLER.iter().all(|w| !FUNCTION_WORDS.contains(w)));
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
