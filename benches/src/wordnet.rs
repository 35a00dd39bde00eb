//! A minimal reader of the WordNet 3.0 database files (Debian package
//! `wordnet-base`: `/usr/share/wordnet/index.*`, `data.*`, `*.exc`), used by
//! the retrieval-quality harness to rewrite messages with synonyms.
//!
//! It answers one question: "a common single-word synonym of this word, if
//! WordNet has one". For a word it finds the base form (the exception lists,
//! then the standard suffix rules of WordNet's morphy), picks the part of
//! speech whose first sense is the most frequent in WordNet's tagged corpus
//! (`tagsense_cnt`), and returns the first other single-word lemma of that
//! first sense (the most common meaning) that is not the same word with
//! another ending. No word-sense disambiguation beyond that: a rewrite can
//! pick the wrong sense, as a thesaurus-driven rewrite by a person can.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Context as _;

/// The four parts of speech, with their file suffixes.
const POS: [&str; 4] = ["noun", "verb", "adj", "adv"];

/// Suffix rules of WordNet's morphy, per part of speech: (ending, replacement).
const RULES: [&[(&str, &str)]; 4] = [
    &[
        ("s", ""),
        ("ses", "s"),
        ("xes", "x"),
        ("zes", "z"),
        ("ches", "ch"),
        ("shes", "sh"),
        ("men", "man"),
        ("ies", "y"),
    ],
    &[
        ("s", ""),
        ("ies", "y"),
        ("es", "e"),
        ("es", ""),
        ("ed", "e"),
        ("ed", ""),
        ("ing", "e"),
        ("ing", ""),
    ],
    &[("er", ""), ("est", ""), ("er", "e"), ("est", "e")],
    &[],
];

/// One part of speech: lemma -> (first synset offset, tagged sense count),
/// the synsets' lemmas by offset, and the exception list.
#[derive(Default)]
struct PosData {
    index: HashMap<String, (u64, u32)>,
    synsets: HashMap<u64, Vec<String>>,
    exceptions: HashMap<String, String>,
}

/// The loaded database.
pub struct WordNet {
    pos: Vec<PosData>,
}

impl WordNet {
    /// Loads the database from `dir` (e.g. `/usr/share/wordnet`).
    pub fn load(dir: &Path) -> anyhow::Result<WordNet> {
        let mut pos = Vec::new();
        for name in POS {
            let mut data = PosData::default();
            let index = read(&dir.join(format!("index.{name}")))?;
            for line in index.lines().filter(|l| !l.starts_with(' ')) {
                if let Some((lemma, first, tagged)) = parse_index_line(line) {
                    data.index.insert(lemma, (first, tagged));
                }
            }
            let synsets = read(&dir.join(format!("data.{name}")))?;
            for line in synsets.lines().filter(|l| !l.starts_with(' ')) {
                if let Some((offset, lemmas)) = parse_data_line(line) {
                    data.synsets.insert(offset, lemmas);
                }
            }
            // The exception lists are optional (adverbs have few).
            if let Ok(exc) = std::fs::read_to_string(dir.join(format!("{name}.exc"))) {
                for line in exc.lines() {
                    let mut parts = line.split_whitespace();
                    if let (Some(form), Some(base)) = (parts.next(), parts.next()) {
                        data.exceptions.insert(form.to_string(), base.to_string());
                    }
                }
            }
            pos.push(data);
        }
        Ok(WordNet { pos })
    }

    /// A common single-word synonym of `word` (lowercase), if any.
    pub fn synonym(&self, word: &str) -> Option<String> {
        let mut best: Option<(u32, &Vec<String>, String)> = None;
        for (data, rules) in self.pos.iter().zip(RULES) {
            for base in base_forms(data, rules, word) {
                let Some(&(offset, tagged)) = data.index.get(&base) else {
                    continue;
                };
                let Some(lemmas) = data.synsets.get(&offset) else {
                    continue;
                };
                if best.as_ref().is_none_or(|(t, _, _)| tagged > *t) {
                    best = Some((tagged, lemmas, base));
                }
                break;
            }
        }
        let (_, lemmas, base) = best?;
        lemmas
            .iter()
            .find(|l| {
                l.bytes().all(|b| b.is_ascii_lowercase())
                    && **l != base
                    && !same_stem(l, word)
                    && !same_stem(l, &base)
            })
            .cloned()
    }
}

/// Candidate base forms of `word` in one part of speech, most likely first:
/// the word itself, its exception-list base, then the suffix `rules`.
fn base_forms(data: &PosData, rules: &[(&str, &str)], word: &str) -> Vec<String> {
    let mut out = vec![word.to_string()];
    if let Some(b) = data.exceptions.get(word) {
        out.push(b.clone());
    }
    for (end, repl) in rules {
        if let Some(stem) = word.strip_suffix(end)
            && stem.len() >= 2
        {
            out.push(format!("{stem}{repl}"));
        }
    }
    out
}

/// Whether two words share their first five letters (or one is a prefix of
/// the other): such a "synonym" is the same word with another ending, which
/// the text index's stemmer would match anyway.
fn same_stem(a: &str, b: &str) -> bool {
    let n = 5.min(a.len()).min(b.len());
    a.as_bytes()[..n] == b.as_bytes()[..n]
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| {
        format!(
            "reading {} (install WordNet: apt-get install wordnet-base)",
            path.display()
        )
    })
}

/// `lemma pos synset_cnt p_cnt [ptr...] sense_cnt tagsense_cnt offset...`:
/// (lemma, first offset, tagsense_cnt).
fn parse_index_line(line: &str) -> Option<(String, u64, u32)> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let lemma = f.first()?;
    let p_cnt: usize = f.get(3)?.parse().ok()?;
    let tagged: u32 = f.get(5 + p_cnt)?.parse().ok()?;
    let first: u64 = f.get(6 + p_cnt)?.parse().ok()?;
    Some((lemma.to_string(), first, tagged))
}

/// `offset lex_filenum ss_type w_cnt (word lex_id)...`, `w_cnt` in hex:
/// (offset, lemmas lowercased, adjective markers like `(a)` removed).
fn parse_data_line(line: &str) -> Option<(u64, Vec<String>)> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let offset: u64 = f.first()?.parse().ok()?;
    let count = usize::from_str_radix(f.get(3)?, 16).ok()?;
    let lemmas = (0..count)
        .filter_map(|i| f.get(4 + 2 * i))
        .map(|w| {
            let w = w.split('(').next().unwrap_or(w);
            w.to_lowercase()
        })
        .collect();
    Some((offset, lemmas))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> (tempfile::TempDir, WordNet) {
        let dir = tempfile::tempdir().expect("tempdir");
        let w =
            |name: &str, text: &str| std::fs::write(dir.path().join(name), text).expect("write");
        w(
            "index.noun",
            "  1 license header line\nmovie n 1 1 @ 1 1 00000100  \nfilm n 2 1 @ 2 1 00000100 00000200  \n",
        );
        w(
            "data.noun",
            "  1 license header line\n00000100 06 n 03 movie 0 film 0 picture 0 000 | a film\n00000200 06 n 01 film 0 000 | a layer\n",
        );
        w("index.verb", "begin v 1 1 @ 1 9 00000300  \n");
        w(
            "data.verb",
            "00000300 30 v 03 begin 0 beginning 0 start 0 000 | begin\n",
        );
        w("verb.exc", "began begin\n");
        w("index.adj", "");
        w("data.adj", "");
        w("index.adv", "");
        w("data.adv", "");
        let wn = WordNet::load(dir.path()).expect("load");
        (dir, wn)
    }

    #[test]
    fn synonyms_from_the_first_sense() {
        let (_dir, wn) = tiny();
        assert_eq!(wn.synonym("movie").as_deref(), Some("film"));
        assert_eq!(wn.synonym("movies").as_deref(), Some("film"));
        // Exception list, and "beginning" is skipped as the same stem.
        assert_eq!(wn.synonym("began").as_deref(), Some("start"));
        assert_eq!(wn.synonym("zebra"), None);
    }

    #[test]
    fn index_and_data_lines() {
        assert_eq!(
            parse_index_line("dog n 7 5 @ ~ #m #p %p 7 1 02084071 10114209"),
            Some(("dog".into(), 2084071, 1))
        );
        let (off, lemmas) =
            parse_data_line("01148283 00 a 02 happy 0 glad(p) 0 001 | feeling").expect("line");
        assert_eq!(off, 1148283);
        assert_eq!(lemmas, vec!["happy".to_string(), "glad".to_string()]);
    }
}
