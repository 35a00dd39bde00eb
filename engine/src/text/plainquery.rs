//! The query-parser bypass for plain queries: words (`borrow checker`) or
//! one quoted phrase of words (`"borrow checker"`), ASCII letters and digits
//! separated by spaces, are most of what people and agents type. For those,
//! [`PlainQueries::build`] makes the same tantivy query that
//! `QueryParser::parse_query` makes (a term query, a should-union of term
//! queries, or a phrase query, over the stemmed content field), without
//! running the grammar: that parse was ~8% of a top-10 search. Anything
//! else (operators, fields, prefixes, quotes of another shape, non-ASCII
//! text) returns `None` and goes through the parser. The equivalence is
//! tested against the parser itself (see the tests below). The one
//! deliberate difference: a phrase of two words becomes a term query over
//! the word-pair field (`pairs.rs`), which matches the same documents.

use tantivy::Term;
use tantivy::query::{BooleanQuery, Occur, PhraseQuery, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::tokenizer::TextAnalyzer;

/// Words the query grammar reads as operators, never as terms.
const GRAMMAR_WORDS: [&str; 5] = ["AND", "OR", "NOT", "IN", "TO"];

/// Builds queries for plain input over one text field.
pub(crate) struct PlainQueries {
    field: Field,
    /// The field's word pairs (`pairs.rs`), when indexed.
    pairs: Option<Field>,
    analyzer: TextAnalyzer,
}

impl PlainQueries {
    /// `analyzer` must be the one `field` is indexed with (the one the
    /// parser would use for it); `pairs`, the field indexing its word pairs.
    pub(crate) fn new(field: Field, pairs: Option<Field>, analyzer: TextAnalyzer) -> PlainQueries {
        PlainQueries {
            field,
            pairs,
            analyzer,
        }
    }

    /// The query for `input` if it is plain, else `None`.
    pub(crate) fn build(&self, input: &str) -> Option<Box<dyn Query>> {
        let input = input.trim_matches(' ');
        if let Some(phrase) = input.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
            if !is_plain(phrase) {
                return None;
            }
            let terms = self.terms(phrase);
            // One term (or none) is what the parser turns into a term query
            // (or nothing); leave those to it.
            if terms.len() < 2 {
                return None;
            }
            // Two adjacent words: one term of the pair field instead of a
            // positional phrase query (same documents, pairs.rs).
            if let (Some(pairs), [(p0, t0), (p1, t1)]) = (self.pairs, terms.as_slice())
                && p0 + 1 == *p1
                && let (Some(a), Some(b)) = (t0.value().as_str(), t1.value().as_str())
            {
                let pair = Term::from_field_text(pairs, &crate::text::pairs::pair_text(a, b));
                return Some(Box::new(TermQuery::new(pair, IndexRecordOption::WithFreqs)));
            }
            return Some(Box::new(PhraseQuery::new_with_offset_and_slop(terms, 0)));
        }
        if input.is_empty() || !is_plain(input) {
            return None;
        }
        let words: Vec<&str> = input.split(' ').filter(|w| !w.is_empty()).collect();
        if words.iter().any(|w| GRAMMAR_WORDS.contains(w)) {
            return None;
        }
        // A word of ASCII letters and digits is one token, unless the
        // analyzer drops it (too long): then the counts differ and the parser
        // decides. One pass over the whole input, then word i is term i.
        let terms = self.terms(input);
        if terms.len() != words.len() {
            return None;
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for (i, (&word, (_, term))) in words.iter().zip(terms).enumerate() {
            // The grammar drops a word repeated verbatim (`a a`), keeping
            // the first, but leaves a boolean query around what remains.
            if words[..i].contains(&word) {
                continue;
            }
            clauses.push((
                Occur::Should,
                Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs)),
            ));
        }
        if words.len() == 1 {
            return clauses.pop().map(|(_, q)| q);
        }
        Some(Box::new(BooleanQuery::new(clauses)))
    }

    /// `text`'s terms with their positions, as the parser collects them.
    fn terms(&self, text: &str) -> Vec<(usize, Term)> {
        let mut analyzer = self.analyzer.clone();
        let mut stream = analyzer.token_stream(text);
        let mut terms = Vec::new();
        stream.process(&mut |token| {
            terms.push((
                token.position,
                Term::from_field_text(self.field, &token.text),
            ));
        });
        terms
    }
}

/// ASCII letters, digits and spaces only.
fn is_plain(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b' ')
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use tantivy::Index;
    use tantivy::query::QueryParser;
    use tantivy::schema::{Schema, TEXT};

    use super::*;

    fn setup() -> (QueryParser, PlainQueries) {
        let mut b = Schema::builder();
        let content = b.add_text_field("content", crate::text::content_options());
        b.add_text_field("other", TEXT);
        let index = Index::create_in_ram(b.build());
        let parser = QueryParser::for_index(&index, vec![content]);
        let analyzer = crate::text::analysis::register_content(&index);
        (parser, PlainQueries::new(content, None, analyzer))
    }

    #[test]
    fn two_word_phrases_use_the_pair_field() {
        let mut b = Schema::builder();
        let content = b.add_text_field("content", TEXT);
        let pairs = b.add_text_field("pairs", TEXT);
        let index = Index::create_in_ram(b.build());
        let analyzer = crate::text::analysis::register_content(&index);
        let plain = PlainQueries::new(content, Some(pairs), analyzer);
        let q = plain.build("\"Borrow  Checkers\"").expect("plain");
        let want = TermQuery::new(
            Term::from_field_text(pairs, "borrow checker"),
            IndexRecordOption::WithFreqs,
        );
        assert_eq!(format!("{q:?}"), format!("{want:?}"));
        // Longer phrases stay positional; words are unaffected.
        let three = plain.build("\"a b c\"").expect("plain");
        assert!(format!("{three:?}").starts_with("PhraseQuery"), "{three:?}");
        let words = plain.build("borrow checker").expect("plain");
        assert!(
            format!("{words:?}").starts_with("BooleanQuery"),
            "{words:?}"
        );
    }

    /// The bypass builds exactly the parser's query, or declines.
    fn agrees(parser: &QueryParser, plain: &PlainQueries, input: &str) -> bool {
        match plain.build(input) {
            Some(fast) => {
                let parsed = parser.parse_query(input).expect("plain input parses");
                assert_eq!(format!("{fast:?}"), format!("{parsed:?}"), "{input:?}");
                true
            }
            None => false,
        }
    }

    #[test]
    fn plain_inputs_build_the_parsers_query() {
        let (parser, plain) = setup();
        for input in [
            "rust",
            "Running",
            "borrow checker",
            "  borrow   checker ",
            "three little words",
            "2024 plans",
            "\"borrow checker\"",
            "\"the running dogs\"",
            "\"a b c d\"",
            "and or not",
            "rust rust",
            "Rust rust go rust",
        ] {
            assert!(agrees(&parser, &plain, input), "{input:?} declined");
        }
    }

    #[test]
    fn anything_else_is_left_to_the_parser() {
        let (parser, plain) = setup();
        for input in [
            "",
            "   ",
            "rust AND go",
            "rust OR go",
            "NOT rust",
            "rust -go",
            "+rust",
            "other:rust",
            "rus*",
            "rust^2",
            "(rust go)",
            "\"rust\"",
            "\"\"",
            "\"rust go",
            "'rust go'",
            "\"rust\" go",
            "what's up",
            "café",
            "tab\tseparated",
            &"x".repeat(80),
            &format!("rust {} go", "x".repeat(80)),
        ] {
            assert!(!agrees(&parser, &plain, input), "{input:?} taken");
        }
    }

    proptest! {
        #[test]
        fn random_plain_inputs_agree_with_the_parser(
            words in prop::collection::vec(
                prop::sample::select(vec![
                    "rust", "Rust", "running", "runs", "the", "a", "cats", "cat",
                    "2024", "x1", "AND", "OR", "NOT", "IN", "TO", "and", "to",
                    "generously", "abc123",
                ]),
                1..5,
            ),
            phrase in any::<bool>(),
            pad in 0usize..3,
        ) {
            let sep = " ".repeat(pad + 1);
            let body = words.join(&sep);
            let input = if phrase { format!("\"{body}\"") } else { body };
            let (parser, plain) = setup();
            let taken = agrees(&parser, &plain, &input);
            // Declines only for grammar words or (phrases) fewer than two terms.
            let grammar = words.iter().any(|w| GRAMMAR_WORDS.contains(w));
            if !phrase && !grammar {
                prop_assert!(taken, "{input:?} declined");
            }
            if phrase && words.len() >= 2 {
                prop_assert!(taken, "{input:?} declined");
            }
        }
    }
}
