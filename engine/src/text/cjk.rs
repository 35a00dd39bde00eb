//! The tokenizer of generic records' text (`rtext`, SPEC.md §5): words as
//! tantivy's simple tokenizer cuts them (runs of alphanumeric characters),
//! except that runs of CJK ideographs, kana and hangul become overlapping
//! character bigrams (a lone character stays a unigram), as Lucene's
//! CJKAnalyzer does. A query in Chinese or Japanese then matches any text
//! holding the same characters in order, without a dictionary (KuraDB
//! segments with gse's dictionary; bigrams need none and miss no word).

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// Name the tokenizer is registered under (before lowercasing, long-token
/// removal and stemming, which only touch the non-CJK words).
pub(crate) const CJK_TOKENIZER: &str = "memdb_cjk";

/// Whether `c` is written without spaces between words: CJK ideographs
/// (with extensions and compatibility forms), hiragana, katakana, hangul.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // hiragana, katakana
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF66..=0xFF9F    // half-width katakana
        | 0x20000..=0x2FFFF  // CJK extensions B..F, compatibility supplement
    )
}

/// Words and CJK bigrams (see the module docs).
#[derive(Clone, Default)]
pub(crate) struct CjkTokenizer;

impl Tokenizer for CjkTokenizer {
    type TokenStream<'a> = CjkStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CjkStream<'a> {
        CjkStream {
            text,
            chars: text.char_indices().collect(),
            at: 0,
            position: 0,
            token: Token::default(),
        }
    }
}

/// The stream of [`CjkTokenizer`].
pub(crate) struct CjkStream<'a> {
    text: &'a str,
    chars: Vec<(usize, char)>,
    at: usize,
    position: usize,
    token: Token,
}

impl CjkStream<'_> {
    fn end_of(&self, i: usize) -> usize {
        self.chars.get(i).map_or(self.text.len(), |(o, _)| *o)
    }

    fn emit(&mut self, from: usize, to: usize) {
        self.token.text.clear();
        self.token.text.push_str(&self.text[from..to]);
        self.token.offset_from = from;
        self.token.offset_to = to;
        self.token.position = self.position;
        self.token.position_length = 1;
        self.position += 1;
    }
}

impl TokenStream for CjkStream<'_> {
    fn advance(&mut self) -> bool {
        while self.at < self.chars.len() {
            let (start, c) = self.chars[self.at];
            if is_cjk(c) {
                let next_is_cjk = self.chars.get(self.at + 1).is_some_and(|(_, n)| is_cjk(*n));
                let prev_is_cjk = self.at > 0 && is_cjk(self.chars[self.at - 1].1);
                if next_is_cjk {
                    let to = self.end_of(self.at + 2);
                    self.at += 1;
                    self.emit(start, to);
                    return true;
                }
                self.at += 1;
                if !prev_is_cjk {
                    // A lone character is its own term.
                    let to = self.end_of(self.at);
                    self.emit(start, to);
                    return true;
                }
                continue;
            }
            if c.is_alphanumeric() {
                let mut end = self.at;
                while end < self.chars.len()
                    && self.chars[end].1.is_alphanumeric()
                    && !is_cjk(self.chars[end].1)
                {
                    end += 1;
                }
                let to = self.end_of(end);
                self.at = end;
                self.emit(start, to);
                return true;
            }
            self.at += 1;
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
    use super::*;

    fn tokens(text: &str) -> Vec<(String, usize)> {
        let mut t = CjkTokenizer;
        let mut s = t.token_stream(text);
        let mut out = Vec::new();
        while s.advance() {
            out.push((s.token().text.clone(), s.token().position));
        }
        out
    }

    #[test]
    fn words_and_bigrams() {
        let got: Vec<String> = tokens("redb 事务提交 is fast, 快")
            .into_iter()
            .map(|t| t.0)
            .collect();
        assert_eq!(got, ["redb", "事务", "务提", "提交", "is", "fast", "快"]);
        let positions: Vec<usize> = tokens("東京タワー").into_iter().map(|t| t.1).collect();
        assert_eq!(positions, [0, 1, 2, 3]);
        assert_eq!(tokens("한국어")[0].0, "한국");
        assert!(tokens("  ,;  ").is_empty());
        assert_eq!(tokens("C++ node:18")[1].0, "node");
    }
}
