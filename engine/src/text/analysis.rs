//! The analysis of message and record text: how words become terms
//! (SPEC.md §5).
//!
//! Words are split as tantivy's `en_stem` splits them (runs of letters and
//! digits, words over 40 bytes dropped), lowercased, and then, before the
//! English Porter2 (Snowball) stemmer, an irregular verb or noun form becomes its
//! base form: `went` → `go`, `bought` → `buy`, `broken` → `break`,
//! `children` → `child`. The stemmer strips regular endings only (`painted` and
//! `paint` share `paint`, `ran` and `run` do not), and a question about a
//! past event asks in the base form ("When did she run a charity race?")
//! what the turn says in the past ("I ran a charity race last Saturday").
//!
//! The table ([`BASE_FORMS`]) leaves out forms that are also common words
//! of another meaning (`bit`, `lay`, `rose`, `ground`, `bound`, `shot`,
//! `sat`, `fed`, `lit`, `stuck`, `bore`, `lent`) or a first name (`drew`:
//! in a history with a Drew, every turn of theirs would hold `draw`) and
//! the forms of `be`, `do` and `have`, which are function words.

use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer, Token,
    TokenFilter, TokenStream, Tokenizer,
};

use crate::text::cjk::CjkTokenizer;

/// Name the content analyzer is registered under (the `content` and
/// `content_before` fields; the pair field analyzes with it too).
pub(crate) const CONTENT_TOKENIZER: &str = "memdb_en";

/// Irregular forms and their base forms, sorted by form (binary search;
/// a unit test checks the order).
const BASE_FORMS: &[(&str, &str)] = &[
    ("arisen", "arise"),
    ("arose", "arise"),
    ("ate", "eat"),
    ("awoke", "awake"),
    ("awoken", "awake"),
    ("became", "become"),
    ("began", "begin"),
    ("begun", "begin"),
    ("bent", "bend"),
    ("bitten", "bite"),
    ("bled", "bleed"),
    ("blew", "blow"),
    ("blown", "blow"),
    ("bought", "buy"),
    ("broke", "break"),
    ("broken", "break"),
    ("brought", "bring"),
    ("built", "build"),
    ("came", "come"),
    ("caught", "catch"),
    ("children", "child"),
    ("chose", "choose"),
    ("chosen", "choose"),
    ("dealt", "deal"),
    ("drank", "drink"),
    ("drawn", "draw"),
    ("dreamt", "dream"),
    ("driven", "drive"),
    ("drove", "drive"),
    ("drunk", "drink"),
    ("dug", "dig"),
    ("eaten", "eat"),
    ("fallen", "fall"),
    ("feet", "foot"),
    ("fell", "fall"),
    ("felt", "feel"),
    ("fled", "flee"),
    ("flew", "fly"),
    ("flown", "fly"),
    ("forgave", "forgive"),
    ("forgiven", "forgive"),
    ("forgot", "forget"),
    ("forgotten", "forget"),
    ("fought", "fight"),
    ("found", "find"),
    ("froze", "freeze"),
    ("frozen", "freeze"),
    ("gave", "give"),
    ("geese", "goose"),
    ("given", "give"),
    ("gone", "go"),
    ("got", "get"),
    ("gotten", "get"),
    ("grew", "grow"),
    ("grown", "grow"),
    ("heard", "hear"),
    ("held", "hold"),
    ("hid", "hide"),
    ("hidden", "hide"),
    ("hung", "hang"),
    ("kept", "keep"),
    ("knew", "know"),
    ("knives", "knife"),
    ("known", "know"),
    ("learnt", "learn"),
    ("led", "lead"),
    ("left", "leave"),
    ("lost", "lose"),
    ("made", "make"),
    ("meant", "mean"),
    ("men", "man"),
    ("met", "meet"),
    ("mice", "mouse"),
    ("paid", "pay"),
    ("ran", "run"),
    ("rang", "ring"),
    ("ridden", "ride"),
    ("rode", "ride"),
    ("rung", "ring"),
    ("sang", "sing"),
    ("sank", "sink"),
    ("saw", "see"),
    ("seen", "see"),
    ("sent", "send"),
    ("shaken", "shake"),
    ("shelves", "shelf"),
    ("shook", "shake"),
    ("shown", "show"),
    ("shrank", "shrink"),
    ("slept", "sleep"),
    ("slid", "slide"),
    ("sold", "sell"),
    ("sought", "seek"),
    ("spent", "spend"),
    ("spoke", "speak"),
    ("spoken", "speak"),
    ("sprang", "spring"),
    ("spun", "spin"),
    ("stole", "steal"),
    ("stolen", "steal"),
    ("stood", "stand"),
    ("struck", "strike"),
    ("stung", "sting"),
    ("sung", "sing"),
    ("sunk", "sink"),
    ("swam", "swim"),
    ("swept", "sweep"),
    ("swore", "swear"),
    ("sworn", "swear"),
    ("swum", "swim"),
    ("swung", "swing"),
    ("taken", "take"),
    ("taught", "teach"),
    ("teeth", "tooth"),
    ("thought", "think"),
    ("threw", "throw"),
    ("thrown", "throw"),
    ("told", "tell"),
    ("took", "take"),
    ("tore", "tear"),
    ("torn", "tear"),
    ("understood", "understand"),
    ("went", "go"),
    ("wept", "weep"),
    ("wives", "wife"),
    ("woke", "wake"),
    ("woken", "wake"),
    ("women", "woman"),
    ("won", "win"),
    ("wore", "wear"),
    ("worn", "wear"),
    ("written", "write"),
    ("wrote", "write"),
];

/// The base form of the lowercased word `word`, when it is an irregular
/// form [`BASE_FORMS`] lists.
pub(crate) fn base_form(word: &str) -> Option<&'static str> {
    BASE_FORMS
        .binary_search_by(|(form, _)| (*form).cmp(word))
        .ok()
        .map(|i| BASE_FORMS[i].1)
}

/// Token filter: an irregular form (lowercased) becomes its base form.
#[derive(Clone, Copy)]
pub(crate) struct BaseForms;

impl TokenFilter for BaseForms {
    type Tokenizer<T: Tokenizer> = BaseFormsFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> BaseFormsFilter<T> {
        BaseFormsFilter { inner: tokenizer }
    }
}

/// The tokenizer [`BaseForms`] wraps around another.
#[derive(Clone)]
pub(crate) struct BaseFormsFilter<T> {
    inner: T,
}

impl<T: Tokenizer> Tokenizer for BaseFormsFilter<T> {
    type TokenStream<'a> = BaseFormsStream<T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        BaseFormsStream {
            tail: self.inner.token_stream(text),
        }
    }
}

/// The stream of [`BaseFormsFilter`].
pub(crate) struct BaseFormsStream<T> {
    tail: T,
}

impl<T: TokenStream> TokenStream for BaseFormsStream<T> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        let token = self.tail.token_mut();
        if let Some(base) = base_form(&token.text) {
            token.text.clear();
            token.text.push_str(base);
        }
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

/// The English chain over `words`: words over 40 bytes dropped,
/// lowercased, irregular forms to their base forms, Porter-stemmed.
fn english(words: impl Tokenizer) -> TextAnalyzer {
    TextAnalyzer::builder(words)
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(BaseForms)
        .filter(Stemmer::new(Language::English))
        .build()
}

/// The analyzer of message text: words (runs of letters and digits) in
/// the English chain.
pub(crate) fn content_analyzer() -> TextAnalyzer {
    english(SimpleTokenizer::default())
}

/// Registers [`content_analyzer`] under [`CONTENT_TOKENIZER`] on `index`
/// (tokenizers are per open index, not stored in it) and returns it.
pub(crate) fn register_content(index: &tantivy::Index) -> TextAnalyzer {
    let analyzer = content_analyzer();
    index
        .tokenizers()
        .register(CONTENT_TOKENIZER, analyzer.clone());
    analyzer
}

/// The analyzer of record text (`rtext`): CJK runs as bigrams
/// (`cjk.rs`), other words as [`content_analyzer`]'s.
pub(crate) fn records_analyzer() -> TextAnalyzer {
    english(CjkTokenizer)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each token of `text` as `analyzer` makes it: text, position and
    /// byte offsets.
    fn tokens(mut analyzer: TextAnalyzer, text: &str) -> Vec<(String, usize, usize, usize)> {
        let mut out = Vec::new();
        analyzer
            .token_stream(text)
            .process(&mut |t| out.push((t.text.clone(), t.position, t.offset_from, t.offset_to)));
        out
    }

    /// The terms `analyzer` makes of `text`.
    fn words(analyzer: TextAnalyzer, text: &str) -> Vec<String> {
        tokens(analyzer, text).into_iter().map(|t| t.0).collect()
    }

    fn terms(text: &str) -> Vec<String> {
        words(content_analyzer(), text)
    }

    #[test]
    fn the_table_is_sorted_lowercase_and_maps_each_form_once() {
        for pair in BASE_FORMS.windows(2) {
            assert!(pair[0].0 < pair[1].0, "{:?} before {:?}", pair[0], pair[1]);
        }
        for (form, base) in BASE_FORMS {
            assert_eq!(*form, form.to_lowercase());
            assert_ne!(form, base);
            // A base form is never itself rewritten: one step reaches it.
            assert_eq!(base_form(base), None, "{base}");
        }
    }

    #[test]
    fn a_past_form_and_its_base_form_share_a_term() {
        assert_eq!(terms("I RAN a race"), terms("i run a race"));
        assert_eq!(terms("we went camping"), terms("we go camping"));
        assert_eq!(terms("She bought it"), terms("she buy it"));
        assert_eq!(terms("broken, broke"), terms("break break"));
        assert_eq!(terms("the children"), terms("the child"));
        // Regular forms are the stemmer's, as before.
        assert_eq!(terms("painted"), terms("paint"));
        // Ambiguous words are left as they are.
        assert_eq!(terms("a bit"), ["a", "bit"]);
        assert_eq!(terms("shot"), ["shot"]);
    }

    #[test]
    fn offsets_and_positions_are_the_words() {
        assert_eq!(
            tokens(content_analyzer(), "Otto went home"),
            [
                ("otto".to_string(), 0, 0, 4),
                ("go".to_string(), 1, 5, 9),
                ("home".to_string(), 2, 10, 14),
            ]
        );
    }

    #[test]
    fn records_read_base_forms_too() {
        assert_eq!(
            words(records_analyzer(), "Kids grew up"),
            ["kid", "grow", "up"]
        );
    }
}
