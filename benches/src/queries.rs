//! Seeded query sets drawn from corpus text.
//!
//! Three kinds, in equal shares and in a fixed interleaving:
//! - [`QueryKind::Word`]: one word;
//! - [`QueryKind::TwoWords`]: two words of one message, either may match
//!   (memdb's parser defaults to OR: `a b`; FTS5 needs `a OR b`);
//! - [`QueryKind::Phrase`]: two adjacent words of one message as a quoted
//!   phrase (`"a b"` in both).
//!
//! Words are sampled by picking a random message, then a random word of it,
//! so frequent words are picked more often, as in real use. A word qualifies
//! when it is ASCII letters only (both engines then tokenize it the same
//! way), at least 3 letters long and not an English stopword. Queries are
//! not filtered by how many hits they get.

use crate::Rng;
use crate::corpus::Corpus;

/// The shape of a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QueryKind {
    /// One word.
    Word,
    /// Two words, OR.
    TwoWords,
    /// A quoted two-word phrase.
    Phrase,
}

impl QueryKind {
    /// Every kind, in report order.
    pub const ALL: [QueryKind; 3] = [QueryKind::Word, QueryKind::TwoWords, QueryKind::Phrase];

    /// Short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            QueryKind::Word => "1-word",
            QueryKind::TwoWords => "2-word OR",
            QueryKind::Phrase => "phrase",
        }
    }
}

/// One query in both syntaxes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchQuery {
    /// Its shape.
    pub kind: QueryKind,
    /// memdb query syntax.
    pub memdb: String,
    /// SQLite FTS5 MATCH syntax.
    pub fts5: String,
}

/// Common English stopwords (the NLTK list, apostrophes dropped).
pub const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "ain",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren",
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
    "couldn",
    "d",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "hadn",
    "has",
    "hasn",
    "have",
    "haven",
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
    "isn",
    "it",
    "its",
    "itself",
    "just",
    "ll",
    "m",
    "ma",
    "me",
    "mightn",
    "more",
    "most",
    "mustn",
    "my",
    "myself",
    "needn",
    "no",
    "nor",
    "not",
    "now",
    "o",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "re",
    "s",
    "same",
    "shan",
    "she",
    "should",
    "shouldn",
    "so",
    "some",
    "such",
    "t",
    "than",
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
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "ve",
    "very",
    "was",
    "wasn",
    "we",
    "were",
    "weren",
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
    "won",
    "wouldn",
    "y",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Whether `w` (lowercase) may appear in a query.
pub fn qualifies(w: &str) -> bool {
    w.len() >= 3 && w.bytes().all(|b| b.is_ascii_lowercase()) && !STOPWORDS.contains(&w)
}

/// The lowercase tokens of `text`, split on anything not alphanumeric (as
/// both tantivy's and FTS5's default tokenizers split).
pub fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// `n` queries drawn from `corpus` with `seed`; kinds cycle Word, TwoWords,
/// Phrase. Returns fewer only if the corpus has no qualifying words at all.
pub fn generate(corpus: &Corpus, n: usize, seed: u64) -> Vec<BenchQuery> {
    let messages: Vec<&str> = corpus.messages().map(|m| m.text.as_str()).collect();
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(n);
    if messages.is_empty() {
        return out;
    }
    let mut i = 0;
    let mut misses = 0;
    while out.len() < n && misses < 1_000_000 {
        let kind = QueryKind::ALL[i % 3];
        let toks = tokens(messages[rng.below(messages.len())]);
        let q = match kind {
            QueryKind::Word => {
                let words: Vec<&String> = toks.iter().filter(|w| qualifies(w)).collect();
                (!words.is_empty()).then(|| {
                    let w = words[rng.below(words.len())];
                    (w.clone(), w.clone())
                })
            }
            QueryKind::TwoWords => {
                let mut words: Vec<&String> = toks.iter().filter(|w| qualifies(w)).collect();
                words.sort();
                words.dedup();
                (words.len() >= 2).then(|| {
                    let a = rng.below(words.len());
                    let b = (a + 1 + rng.below(words.len() - 1)) % words.len();
                    let (a, b) = (words[a], words[b]);
                    (format!("{a} {b}"), format!("{a} OR {b}"))
                })
            }
            QueryKind::Phrase => {
                let pairs: Vec<(&String, &String)> = toks
                    .windows(2)
                    .filter(|p| qualifies(&p[0]) && qualifies(&p[1]))
                    .map(|p| (&p[0], &p[1]))
                    .collect();
                (!pairs.is_empty()).then(|| {
                    let (a, b) = pairs[rng.below(pairs.len())];
                    let q = format!("\"{a} {b}\"");
                    (q.clone(), q)
                })
            }
        };
        match q {
            Some((memdb, fts5)) => {
                out.push(BenchQuery { kind, memdb, fts5 });
                i += 1;
            }
            None => misses += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::generate as generate_corpus;

    #[test]
    fn deterministic_mix_of_kinds() {
        let c = generate_corpus(2000, 3);
        let a = generate(&c, 30, 9);
        assert_eq!(a, generate(&c, 30, 9));
        assert_eq!(a.len(), 30);
        assert_eq!(a[0].kind, QueryKind::Word);
        assert_eq!(a[1].kind, QueryKind::TwoWords);
        assert!(a[1].fts5.contains(" OR "));
        assert_eq!(a[2].kind, QueryKind::Phrase);
        assert!(a[2].memdb.starts_with('"') && a[2].memdb == a[2].fts5);
    }

    #[test]
    fn word_filter() {
        assert!(qualifies("coffee"));
        assert!(!qualifies("the"));
        assert!(!qualifies("ok"));
        assert!(!qualifies("café"));
        assert!(!qualifies("mp3"));
        assert_eq!(tokens("Don't stop, OK?"), vec!["don", "t", "stop", "ok"]);
    }
}
