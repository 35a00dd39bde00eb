//! Natural-language keyword queries: what a person or an agent types, read
//! as words, never as query syntax (SPEC.md §16.2).
//!
//! `Which tournaments besides CS:GO?` is a question, not a field filter;
//! `C++`, `node:18`, `user@host`, `3:30pm`, `(maybe)`, `*`, `AND` and a
//! stray `"` are characters in it. [`NaturalQueries::build`] never runs
//! tantivy's `QueryParser`: the text is split into whitespace-separated
//! words and, when the double quotes balance, quoted phrases; each is
//! analyzed with the `content` field's own analyzer and becomes
//!
//! - one word, one term: a term query;
//! - one word, several terms (`CS:GO` → `cs`, `go`; `3:30pm` → `3`,
//!   `30pm`): each term, plus the terms as a phrase (so the exact spelling
//!   ranks first and `John's` still matches `John`);
//! - a quoted phrase of several terms: the phrase (a term of the word-pair
//!   field for two adjacent terms, `pairs.rs`, as in `plainquery.rs`).
//!
//! The query is a should-union of those (BM25), deduplicated, and, when some
//! word is a content word (not one of NLTK's English function words,
//! `util/keywords.rs`), a match on at least one content word or phrase is
//! required: `+(content words) all words`, the shape the hybrid keyword
//! side has had since it was measured (SPEC.md §18.2). So `AND`, `OR` and
//! `NOT` are ordinary (stop) words. Nothing here can fail, recurse or build
//! a regex or prefix term: the only limit a natural-language query has is
//! its length (`budget.rs`).

use std::collections::HashSet;

use tantivy::Term;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, PhraseQuery, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::tokenizer::TextAnalyzer;

use crate::util::keywords::is_function_word;

/// One unit of a natural-language query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Chunk<'a> {
    /// The text: a whitespace-separated word, or the inside of a quoted
    /// phrase.
    pub(crate) text: &'a str,
    /// Inside balanced double quotes.
    pub(crate) phrase: bool,
}

/// Splits `text` into words and, when the double quotes balance (an even
/// number of `"`), the quoted phrases between consecutive pairs. With an
/// odd number no quote opens a phrase: they are characters like any other.
pub(crate) fn chunks(text: &str) -> Vec<Chunk<'_>> {
    fn words<'a>(s: &'a str, out: &mut Vec<Chunk<'a>>) {
        for w in s.split_whitespace() {
            out.push(Chunk {
                text: w,
                phrase: false,
            });
        }
    }
    let mut out = Vec::new();
    if text.bytes().filter(|&b| b == b'"').count() % 2 == 1 {
        words(text, &mut out);
        return out;
    }
    let mut inside = false;
    // `split` yields outside, inside, outside, ... and, with an even count
    // of quotes, ends outside.
    for part in text.split('"') {
        if inside {
            out.push(Chunk {
                text: part,
                phrase: true,
            });
        } else {
            words(part, &mut out);
        }
        inside = !inside;
    }
    out
}

/// `word` as typed, lowercased, with surrounding punctuation trimmed.
fn bare(word: &str) -> String {
    word.trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
}

/// Whether `word` (as typed) is a content word: letters or digits left once
/// surrounding punctuation is trimmed, and not an English function word.
pub(crate) fn is_content_word(word: &str) -> bool {
    let bare = bare(word);
    !bare.is_empty() && !is_function_word(&bare)
}

/// Whether `chunk` counts as content: a word that is a content word, or a
/// quoted phrase holding one or of several words (a phrase match is
/// specific even when its words are common: `"the who"`).
fn chunk_is_content(chunk: &Chunk<'_>) -> bool {
    if chunk.phrase {
        let mut words = chunk.text.split_whitespace();
        let first = words.next();
        let more = words.next().is_some();
        more || first.is_some_and(is_content_word)
    } else {
        is_content_word(chunk.text)
    }
}

/// Verbs a question about a conversation uses to point at a turn ("what
/// did she say about…", "when did he mention…"), which the turn itself
/// rarely holds: left out of the keyword query (outside quotes) and of the
/// words a keyword match should cover.
const REPORTING_VERBS: &[&str] = &[
    "say",
    "says",
    "said",
    "saying",
    "mention",
    "mentions",
    "mentioned",
    "talk",
    "talks",
    "talked",
    "talking",
    "tell",
    "tells",
    "told",
    "answer",
    "answers",
    "answered",
    "reply",
    "replies",
    "replied",
    "ask",
    "asks",
    "asked",
    "discuss",
    "discussed",
    "share",
    "shared",
];

/// Whether `word` (as typed) is one of [`REPORTING_VERBS`].
fn is_reporting_verb(word: &str) -> bool {
    REPORTING_VERBS.contains(&bare(word).as_str())
}

/// Whether `text` has a letter or digit: without one it has no term, and
/// its natural-language query matches nothing.
pub(crate) fn has_words(text: &str) -> bool {
    text.chars().any(char::is_alphanumeric)
}

/// Whether the natural-language query `text` has a content word or phrase:
/// without one, its keyword side would match messages only through stop
/// words (hybrid search then skips it, SPEC.md §18.2).
pub(crate) fn has_content(text: &str) -> bool {
    chunks(text).iter().any(chunk_is_content)
}

/// One clause of the union, identified by its terms so repeats count once.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Atom {
    /// A term of the content field.
    Term(Term),
    /// A term of the word-pair field (two adjacent terms).
    Pair(Term),
    /// Terms at positions relative to the first.
    Phrase(Vec<(usize, Term)>),
    /// A content word's term in the turn-before field, scored with the
    /// query's `previous_turn` weight.
    Before(Term),
}

impl Atom {
    /// The atom's query; a [`Atom::Before`] term is boosted by `before`.
    fn query(&self, before: f32) -> Box<dyn Query> {
        match self {
            Atom::Term(t) | Atom::Pair(t) => {
                Box::new(TermQuery::new(t.clone(), IndexRecordOption::WithFreqs))
            }
            Atom::Phrase(terms) => {
                Box::new(PhraseQuery::new_with_offset_and_slop(terms.clone(), 0))
            }
            Atom::Before(t) => Box::new(BoostQuery::new(
                Box::new(TermQuery::new(t.clone(), IndexRecordOption::WithFreqs)),
                before,
            )),
        }
    }
}

/// Builds natural-language queries over one text field.
pub(crate) struct NaturalQueries {
    field: Field,
    /// The field's word pairs (`pairs.rs`), when indexed.
    pairs: Option<Field>,
    /// The text of the turn before each document, indexed with the same
    /// analyzer, when indexed.
    before: Option<Field>,
    analyzer: TextAnalyzer,
}

impl NaturalQueries {
    /// `analyzer` must be the one `field` (and `before`) is indexed with;
    /// `pairs`, the field indexing its word pairs; `before`, the field
    /// indexing the turn before each document.
    pub(crate) fn new(
        field: Field,
        pairs: Option<Field>,
        before: Option<Field>,
        analyzer: TextAnalyzer,
    ) -> NaturalQueries {
        NaturalQueries {
            field,
            pairs,
            before,
            analyzer,
        }
    }

    /// The query for `text`, or `None` when it has no term at all (only
    /// punctuation, say): nothing can match it. With `previous_turn` > 0
    /// (and a turn-before field), each content word also matches in the
    /// turn before a document, its score weighted by `previous_turn`, and
    /// such a match alone makes a document a candidate (SPEC.md §18.2).
    pub(crate) fn build(&self, text: &str, previous_turn: f32) -> Option<Box<dyn Query>> {
        let before = self.before.filter(|_| previous_turn > 0.0);
        let mut all = Atoms::default();
        let mut content = Atoms::default();
        let mut analyzer = self.analyzer.clone();
        for chunk in chunks(text) {
            if !chunk.phrase && is_reporting_verb(chunk.text) {
                continue;
            }
            let mut atoms = self.atoms(&mut analyzer, &chunk);
            if chunk_is_content(&chunk) {
                if let Some(field) = before {
                    let words: Vec<Atom> = atoms
                        .iter()
                        .filter_map(|a| match a {
                            Atom::Term(t) => t
                                .value()
                                .as_str()
                                .map(|w| Atom::Before(Term::from_field_text(field, w))),
                            _ => None,
                        })
                        .collect();
                    atoms.extend(words);
                }
                for a in &atoms {
                    content.push(a.clone());
                }
            }
            for a in atoms {
                all.push(a);
            }
        }
        if all.list.is_empty() {
            return None;
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        // A content word's atoms all come from analyzing it: no content
        // atom means the required group would match nothing, so none is
        // added (a long word the analyzer drops, say).
        match content.list.len() {
            0 => {}
            1 => clauses.push((Occur::Must, content.list[0].query(previous_turn))),
            _ => clauses.push((Occur::Must, union(&content.list, previous_turn))),
        }
        if clauses.is_empty() && all.list.len() == 1 {
            return Some(all.list[0].query(previous_turn));
        }
        for a in &all.list {
            clauses.push((Occur::Should, a.query(previous_turn)));
        }
        Some(Box::new(BooleanQuery::new(clauses)))
    }

    /// The distinct terms of `text`'s content words (function words and
    /// phrases' inner words aside), as the content field indexes them
    /// (lowercased, stemmed): what a keyword match can cover of a question.
    pub(crate) fn content_terms(&self, text: &str) -> Vec<String> {
        let mut analyzer = self.analyzer.clone();
        let mut out: Vec<String> = Vec::new();
        for chunk in chunks(text) {
            if chunk.phrase || !chunk_is_content(&chunk) || is_reporting_verb(chunk.text) {
                continue;
            }
            analyzer.token_stream(chunk.text).process(&mut |t| {
                if !out.contains(&t.text) {
                    out.push(t.text.clone());
                }
            });
        }
        out
    }

    /// Every term of `text`, as the content field indexes them.
    pub(crate) fn terms_of(&self, text: &str) -> std::collections::HashSet<String> {
        let mut analyzer = self.analyzer.clone();
        let mut out = std::collections::HashSet::new();
        analyzer.token_stream(text).process(&mut |t| {
            out.insert(t.text.clone());
        });
        out
    }

    /// The atoms of one chunk (see the module docs).
    fn atoms(&self, analyzer: &mut TextAnalyzer, chunk: &Chunk<'_>) -> Vec<Atom> {
        let terms = self.terms(analyzer, chunk.text);
        let mut out = Vec::new();
        if !chunk.phrase || terms.len() < 2 {
            out.extend(terms.iter().map(|(_, t)| Atom::Term(t.clone())));
        }
        if terms.len() >= 2 {
            out.push(self.phrase(terms));
        }
        out
    }

    /// The phrase of two or more terms: a word-pair term for two adjacent
    /// ones, else a positional phrase.
    fn phrase(&self, terms: Vec<(usize, Term)>) -> Atom {
        if let (Some(pairs), [(p0, t0), (p1, t1)]) = (self.pairs, terms.as_slice())
            && p0 + 1 == *p1
            && let (Some(a), Some(b)) = (t0.value().as_str(), t1.value().as_str())
        {
            return Atom::Pair(Term::from_field_text(
                pairs,
                &crate::text::pairs::pair_text(a, b),
            ));
        }
        let first = terms.first().map_or(0, |(p, _)| *p);
        Atom::Phrase(terms.into_iter().map(|(p, t)| (p - first, t)).collect())
    }

    /// `text`'s terms with their positions.
    fn terms(&self, analyzer: &mut TextAnalyzer, text: &str) -> Vec<(usize, Term)> {
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

/// A list of atoms without repeats, in first-seen order.
#[derive(Default)]
struct Atoms {
    list: Vec<Atom>,
    seen: HashSet<Atom>,
}

impl Atoms {
    fn push(&mut self, atom: Atom) {
        if self.seen.insert(atom.clone()) {
            self.list.push(atom);
        }
    }
}

/// A should-union of `atoms` (turn-before terms boosted by `before`).
fn union(atoms: &[Atom], before: f32) -> Box<dyn Query> {
    Box::new(BooleanQuery::new(
        atoms
            .iter()
            .map(|a| (Occur::Should, a.query(before)))
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use tantivy::collector::DocSetCollector;
    use tantivy::query::QueryParser;
    use tantivy::schema::{Schema, TEXT};
    use tantivy::{Index, TantivyDocument};

    use super::*;

    fn setup() -> (Index, QueryParser, NaturalQueries, Field) {
        let mut b = Schema::builder();
        let content = b.add_text_field("content", crate::text::content_options());
        b.add_text_field("other", TEXT);
        let index = Index::create_in_ram(b.build());
        let parser = QueryParser::for_index(&index, vec![content]);
        let analyzer = crate::text::analysis::register_content(&index);
        let natural = NaturalQueries::new(content, None, None, analyzer);
        (index, parser, natural, content)
    }

    #[test]
    fn content_terms_are_the_questions_stemmed_content_words_once() {
        let (_, _, natural, _) = setup();
        // Function words, reporting verbs and quoted phrases are left out;
        // the rest is stemmed as the content field indexes it, once each.
        assert_eq!(
            natural.content_terms(
                "When did Zara mention fracturing her wrist? Wrists, \"broken arm\""
            ),
            ["zara", "fractur", "wrist"]
        );
        assert!(natural.content_terms("what did she say to them").is_empty());
        let held = natural.terms_of("Zara: I broke my wrist disco skating");
        assert!(held.contains("wrist") && held.contains("zara") && !held.contains("fractur"));
    }

    fn chunk(text: &str, phrase: bool) -> Chunk<'_> {
        Chunk { text, phrase }
    }

    #[test]
    fn quotes_make_phrases_only_when_they_balance() {
        assert_eq!(
            chunks("watch \"Eternal Sunshine\" again"),
            vec![
                chunk("watch", false),
                chunk("Eternal Sunshine", true),
                chunk("again", false)
            ]
        );
        // A lone quote is a character: no phrase, the words stay words.
        assert_eq!(
            chunks("watch \"Eternal Sunshine?"),
            vec![
                chunk("watch", false),
                chunk("\"Eternal", false),
                chunk("Sunshine?", false)
            ]
        );
        assert_eq!(chunks("\""), vec![chunk("\"", false)]);
        assert_eq!(chunks("\"\""), vec![chunk("", true)]);
        assert_eq!(chunks("  "), vec![]);
    }

    #[test]
    fn content_words_and_phrases() {
        assert!(has_content("Which tournaments besides CS:GO?"));
        assert!(!has_content("what is it AND OR NOT"));
        assert!(!has_content("* \" ( ) ?"));
        assert!(has_content("\"the who\""));
        assert!(!has_content("\"the\""));
        assert!(has_content("C++"));
    }

    /// The same query the parser makes for the hybrid keyword side's old
    /// syntax, `+(content words) all words`, for plain questions (words of
    /// letters and digits with trailing punctuation, distinct stems): the
    /// natural path ranks what used to work exactly as before, reporting
    /// verbs left out.
    #[test]
    fn plain_questions_build_the_old_keyword_side() {
        let (_, parser, natural, _) = setup();
        for q in [
            "How long should a dessert stay in a hot stove?",
            "what did Alice say about lifetimes",
            "borrow checker",
            "rust",
            "the rust",
            "is it",
        ] {
            let words: Vec<&str> = q
                .split_whitespace()
                .filter(|w| !is_reporting_verb(w))
                .collect();
            let content: Vec<&str> = words
                .iter()
                .copied()
                .filter(|w| is_content_word(w))
                .collect();
            let syntax = if content.is_empty() {
                words.join(" ")
            } else {
                format!("+({}) {}", content.join(" "), words.join(" "))
            };
            let old = parser.parse_query(&syntax).expect("parses");
            let new = natural.build(q, 0.0).expect("terms");
            assert_eq!(format!("{new:?}"), format!("{old:?}"), "{q:?}");
        }
    }

    /// Doc ids matching `q` over one document per text.
    fn matching(texts: &[&str], q: &str) -> Vec<u32> {
        let (index, _, natural, content) = setup();
        let mut w = index
            .writer_with_num_threads(1, 15_000_000)
            .expect("writer");
        for t in texts {
            let mut d = TantivyDocument::default();
            d.add_text(content, t);
            w.add_document(d).expect("add");
        }
        w.commit().expect("commit");
        let searcher = index.reader().expect("reader").searcher();
        let Some(query) = natural.build(q, 0.0) else {
            return Vec::new();
        };
        let mut ids: Vec<u32> = searcher
            .search(query.as_ref(), &DocSetCollector)
            .expect("search")
            .into_iter()
            .map(|a| a.doc_id)
            .collect();
        ids.sort_unstable();
        ids
    }

    /// A reporting verb points at a turn ("what did she say about…"): a
    /// turn holding only it does not match, and a quoted one still does.
    #[test]
    fn reporting_verbs_are_framing_not_terms() {
        let texts = [
            "I say hello to everyone",
            "lifetimes are hard",
            "they said no",
        ];
        assert_eq!(
            matching(&texts, "what did she say about lifetimes?"),
            vec![1]
        );
        assert_eq!(matching(&texts, "what was said"), Vec::<u32>::new());
        assert_eq!(matching(&texts, "\"said no\""), vec![2]);
    }

    #[test]
    fn syntax_characters_are_text() {
        let texts = [
            "John is organizing a CS:GO tournament",
            "I write C++ at work",
            "the image is node:18 alpine",
            "ssh user@host then reboot",
            "meet at 3:30pm tomorrow",
            "nothing relevant here",
            "\"Eternal Sunshine of the Spotless Mind\" is on tonight",
        ];
        assert_eq!(
            matching(
                &texts,
                "Which tournaments does John organize besides CS:GO?"
            ),
            vec![0]
        );
        assert_eq!(matching(&texts, "who uses C++?"), vec![1]);
        assert_eq!(matching(&texts, "which image: node:18"), vec![2]);
        assert_eq!(matching(&texts, "log in as user@host"), vec![3]);
        assert_eq!(matching(&texts, "is it at 3:30pm"), vec![4]);
        assert_eq!(
            matching(&texts, "(reboot) AND NOT tomorrow OR *"),
            vec![3, 4]
        );
        // Unbalanced: words; balanced: the phrase.
        assert_eq!(matching(&texts, "did we watch \"Spotless Mind?"), vec![6]);
        assert_eq!(matching(&texts, "when is \"spotless mind\" on"), vec![6]);
        assert_eq!(matching(&texts, "\"mind spotless\""), Vec::<u32>::new());
        // Only stop words: any of them matches; no words: nothing.
        assert_eq!(matching(&texts, "is"), vec![0, 2, 6]);
        assert!(matching(&texts, "* \" ( ) ?").is_empty());
    }

    #[test]
    fn phrases_use_the_pair_field_for_two_adjacent_terms() {
        let mut b = Schema::builder();
        let content = b.add_text_field("content", TEXT);
        let pairs = b.add_text_field("pairs", TEXT);
        let index = Index::create_in_ram(b.build());
        let analyzer = crate::text::analysis::register_content(&index);
        let natural = NaturalQueries::new(content, Some(pairs), None, analyzer);
        let q = format!(
            "{:?}",
            natural.build("\"Borrow Checkers\"", 0.0).expect("terms")
        );
        assert!(q.contains("borrow checker"), "{q}");
        assert!(!q.contains("PhraseQuery"), "{q}");
        let q = format!("{:?}", natural.build("10.0.0.1", 0.0).expect("terms"));
        assert!(q.contains("PhraseQuery"), "{q}");
    }

    /// Scored hits of `q` over documents of (text, turn before), with the
    /// turn-before field weighted `previous_turn`.
    fn scored_with_before(docs: &[(&str, &str)], q: &str, previous_turn: f32) -> Vec<(u32, f32)> {
        let mut b = Schema::builder();
        let content = b.add_text_field("content", crate::text::content_options());
        let before = b.add_text_field(
            "content_before",
            crate::text::text_options(
                crate::text::analysis::CONTENT_TOKENIZER,
                IndexRecordOption::WithFreqs,
            ),
        );
        let index = Index::create_in_ram(b.build());
        let analyzer = crate::text::analysis::register_content(&index);
        let natural = NaturalQueries::new(content, None, Some(before), analyzer);
        let mut w = index
            .writer_with_num_threads(1, 15_000_000)
            .expect("writer");
        for (text, turn_before) in docs {
            let mut d = TantivyDocument::default();
            d.add_text(content, text);
            d.add_text(before, turn_before);
            w.add_document(d).expect("add");
        }
        w.commit().expect("commit");
        let searcher = index.reader().expect("reader").searcher();
        let Some(query) = natural.build(q, previous_turn) else {
            return Vec::new();
        };
        let mut hits: Vec<(u32, f32)> = searcher
            .search(
                query.as_ref(),
                &tantivy::collector::TopDocs::with_limit(10).order_by_score(),
            )
            .expect("search")
            .into_iter()
            .map(|(score, a)| (a.doc_id, score))
            .collect();
        hits.sort_by_key(|h| h.0);
        hits
    }

    /// The turn-before field counts only with a weight, scores below the
    /// same words in a message's own text, and is not read by phrases.
    #[test]
    fn the_turn_before_matches_only_with_a_weight() {
        let docs = [
            ("did you see the giraffes at the zoo", ""),
            ("yes, last tuesday!", "did you see the giraffes at the zoo"),
            ("bread again", "yes, last tuesday!"),
        ];
        let ids = |hits: Vec<(u32, f32)>| hits.iter().map(|h| h.0).collect::<Vec<_>>();
        assert_eq!(ids(scored_with_before(&docs, "giraffes", 0.0)), vec![0]);
        let on = scored_with_before(&docs, "giraffes", 0.3);
        assert_eq!(ids(on.clone()), vec![0, 1]);
        assert!(on[1].1 > 0.0 && on[1].1 < on[0].1, "{on:?}");
        let more = scored_with_before(&docs, "giraffes", 1.0);
        assert!(more[1].1 > on[1].1, "{more:?}");
        // A quoted phrase matches the message's own words only.
        assert_eq!(
            ids(scored_with_before(&docs, "\"the giraffes\"", 0.3)),
            vec![0]
        );
    }

    proptest! {
        /// Any text builds a query (or none, without terms) without
        /// panicking: phrases need two terms, unions one clause; with the
        /// turn-before field too, and the query runs.
        #[test]
        fn any_text_builds(s in "[ -~\u{a0}-\u{17f}\u{4e00}-\u{4e10}\"]{0,200}") {
            let (_, _, natural, _) = setup();
            let _ = natural.build(&s, 0.0);
            let _ = scored_with_before(&[("a giraffe", "the zoo")], &s, 0.3);
        }
    }
}
