//! Word pairs: the index behind fast two-word phrase queries.
//!
//! The `content_pairs` field indexes every two adjacent stemmed words of a
//! message as one term (`"borrow checker"` → `borrow checker`), like
//! Elasticsearch's `index_phrases`. A two-word phrase query (no slop) then
//! reads one posting list instead of intersecting two and checking
//! positions in every document both words share: at 100K chat messages
//! that halved the phrase queries' time. It matches exactly the documents
//! the positional phrase query matches (both use the `memdb_en` analysis,
//! `analysis.rs`, and require consecutive positions; tested below), but
//! BM25 counts the pair as one rarer term over the pair field's lengths,
//! so its scores differ from the positional query's (SPEC.md §17.1).

use tantivy::tokenizer::{BoxTokenStream, TextAnalyzer, Token, TokenStream, Tokenizer};

/// Name the pair tokenizer is registered under.
pub(crate) const PAIRS_TOKENIZER: &str = "memdb_pairs";

/// The pair term of two adjacent analyzed words.
pub(crate) fn pair_text(first: &str, second: &str) -> String {
    let mut s = String::with_capacity(first.len() + 1 + second.len());
    s.push_str(first);
    s.push(' ');
    s.push_str(second);
    s
}

/// Emits a token for each two tokens of `inner` at consecutive positions.
#[derive(Clone)]
pub(crate) struct PairTokenizer {
    inner: TextAnalyzer,
}

impl PairTokenizer {
    /// Pairs of the tokens `inner` (the content field's analyzer) makes.
    pub(crate) fn new(inner: TextAnalyzer) -> PairTokenizer {
        PairTokenizer { inner }
    }
}

impl Tokenizer for PairTokenizer {
    type TokenStream<'a> = PairStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> PairStream<'a> {
        PairStream {
            inner: self.inner.token_stream(text),
            prev: None,
            prev_text: String::new(),
            token: Token::default(),
        }
    }
}

/// The stream of [`PairTokenizer`].
pub(crate) struct PairStream<'a> {
    inner: BoxTokenStream<'a>,
    /// The previous word's position and start offset.
    prev: Option<(usize, usize)>,
    /// The previous word's text (reused: no allocation per word).
    prev_text: String,
    token: Token,
}

impl TokenStream for PairStream<'_> {
    fn advance(&mut self) -> bool {
        while self.inner.advance() {
            let t = self.inner.token();
            let prev = self.prev.replace((t.position, t.offset_from));
            let paired = match prev {
                Some((position, from)) if position + 1 == t.position => {
                    self.token.text.clear();
                    self.token.text.push_str(&self.prev_text);
                    self.token.text.push(' ');
                    self.token.text.push_str(&t.text);
                    self.token.position = position;
                    self.token.offset_from = from;
                    self.token.offset_to = t.offset_to;
                    true
                }
                _ => false,
            };
            self.prev_text.clear();
            self.prev_text.push_str(&t.text);
            if paired {
                return true;
            }
        }
        false
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use tantivy::collector::DocSetCollector;
    use tantivy::query::{PhraseQuery, Query, TermQuery};
    use tantivy::schema::{IndexRecordOption, Schema};
    use tantivy::{Index, TantivyDocument, Term};

    use super::*;

    fn pairs_of(text: &str) -> Vec<String> {
        let en = crate::text::analysis::content_analyzer();
        let mut t = PairTokenizer::new(en);
        let mut out = Vec::new();
        t.token_stream(text)
            .process(&mut |tok| out.push(tok.text.clone()));
        out
    }

    #[test]
    fn adjacent_stemmed_words_pair_up() {
        assert_eq!(
            pairs_of("The borrow-checker is Running!"),
            ["the borrow", "borrow checker", "checker is", "is run"]
        );
        assert!(pairs_of("one").is_empty());
        assert!(pairs_of("").is_empty());
        // A word the analyzer drops (over 40 bytes) leaves a gap: no pair
        // spans it, as no phrase does.
        let long = "x".repeat(50);
        assert_eq!(pairs_of(&format!("a {long} b c")), ["b c"]);
    }

    const WORDS: [&str; 8] = ["red", "reds", "fox", "the", "run", "running", "a", "b"];

    proptest! {
        /// The pair term matches exactly the documents the positional
        /// phrase query matches.
        #[test]
        fn pair_terms_match_what_phrases_match(
            docs in prop::collection::vec(
                prop::collection::vec(prop::sample::select(WORDS.to_vec()), 0..8),
                1..30,
            ),
            first in prop::sample::select(WORDS.to_vec()),
            second in prop::sample::select(WORDS.to_vec()),
        ) {
            // The two fields as the engine's schema indexes them.
            let mut b = Schema::builder();
            let content = b.add_text_field("content", crate::text::content_options());
            let pairs = b.add_text_field("pairs", crate::text::pairs_options());
            let index = Index::create_in_ram(b.build());
            let en = crate::text::analysis::register_content(&index);
            index.tokenizers().register(PAIRS_TOKENIZER, PairTokenizer::new(en.clone()));
            let mut w = index.writer_with_num_threads(1, 15_000_000).unwrap();
            for d in &docs {
                let text = d.join(" ");
                let mut doc = TantivyDocument::default();
                doc.add_text(content, &text);
                doc.add_text(pairs, &text);
                w.add_document(doc).unwrap();
            }
            w.commit().unwrap();
            let searcher = index.reader().unwrap().searcher();
            let mut stem = en.clone();
            let mut stemmed = |w: &str| {
                let mut s = String::new();
                stem.token_stream(w).process(&mut |t| s = t.text.clone());
                s
            };
            let (a, z) = (stemmed(first), stemmed(second));
            let phrase = PhraseQuery::new(vec![
                Term::from_field_text(content, &a),
                Term::from_field_text(content, &z),
            ]);
            let pair = TermQuery::new(
                Term::from_field_text(pairs, &pair_text(&a, &z)),
                IndexRecordOption::WithFreqs,
            );
            let hits = |q: &dyn Query| searcher.search(q, &DocSetCollector).unwrap();
            prop_assert_eq!(hits(&pair), hits(&phrase));
        }
    }
}
