//! Query sets with known answers for the retrieval-quality harness
//! (`src/bin/retrieval_quality.rs`), and the metrics it reports.
//!
//! Every set is built from a [`Corpus`] (the stored chitchat subset) with a
//! seed, so a rerun asks the same questions. A query has exactly one right
//! answer, a *target* message, and targets are chosen so that the answer is
//! unambiguous: the target's text occurs once in the corpus and has at least
//! [`MIN_TARGET_WORDS`] content words (not stop words, at least 3 letters).
//! The sets (documented in benches/README.md):
//!
//! - [`reference()`]: the query is a *later message of the same conversation*
//!   (at most [`REFERENCE_WINDOW`] messages later) that shares at least one
//!   content word with the target, the way a reply picks up what was said.
//!   The query message is itself stored, so the harness drops it from the
//!   hits ([`Query::exclude`]).
//! - [`reworded`]: a subset of the target's content words (60%, at least 3),
//!   shuffled: a person recalling a message by some of its words, in another
//!   order, without the function words.
//! - [`synonyms`]: the target's sentence with its content words replaced by
//!   WordNet synonyms where WordNet has one (at least half of them replaced,
//!   at least 2): a thesaurus paraphrase that keeps the sentence shape but
//!   not the vocabulary.
//!
//! Queries go to every mode as the same string: lowercase words separated by
//! spaces ([`plain`]), so that no mode sees keyword operators (`AND`, `-`,
//! quotes) the others do not.

use std::collections::HashMap;

use crate::Rng;
use crate::corpus::Corpus;
use crate::queries::{STOPWORDS, qualifies, tokens};
use crate::wordnet::WordNet;

/// Content words a target must have.
pub const MIN_TARGET_WORDS: usize = 4;
/// How many messages after the target a reference query may come.
pub const REFERENCE_WINDOW: usize = 4;

/// A message position in the corpus: (conversation index, message index).
pub type Pos = (usize, usize);

/// One query with its one right answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The query text (see [`plain`]).
    pub text: String,
    /// The message that answers it.
    pub target: Pos,
    /// A stored message to drop from the hits (the query message itself).
    pub exclude: Option<Pos>,
}

/// `text` as a plain query: lowercase words (letters, digits, apostrophes
/// inside words) separated by single spaces.
pub fn plain(text: &str) -> String {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(|w| w.trim_matches('\''))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The distinct content words of `text`, in order of first appearance.
pub fn content_words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in tokens(text) {
        if qualifies(&t) && !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// Messages that may be targets: text unique in the corpus (compared as
/// [`plain`] text) and at least [`MIN_TARGET_WORDS`] content words.
fn target_candidates(corpus: &Corpus) -> Vec<Pos> {
    let mut count: HashMap<String, usize> = HashMap::new();
    for m in corpus.messages() {
        *count.entry(plain(&m.text)).or_default() += 1;
    }
    let mut out = Vec::new();
    for (ci, c) in corpus.conversations.iter().enumerate() {
        for (mi, m) in c.messages.iter().enumerate() {
            if count.get(&plain(&m.text)) == Some(&1)
                && content_words(&m.text).len() >= MIN_TARGET_WORDS
            {
                out.push((ci, mi));
            }
        }
    }
    out
}

fn shuffle<T>(v: &mut [T], rng: &mut Rng) {
    for i in (1..v.len()).rev() {
        let j = rng.below(i + 1);
        v.swap(i, j);
    }
}

fn text(corpus: &Corpus, (ci, mi): Pos) -> &str {
    &corpus.conversations[ci].messages[mi].text
}

/// Up to `n` reference queries (module docs): at most one per target
/// conversation, targets drawn at random with `seed`.
pub fn reference(corpus: &Corpus, n: usize, seed: u64) -> Vec<Query> {
    let mut candidates = target_candidates(corpus);
    let mut rng = Rng::new(seed);
    shuffle(&mut candidates, &mut rng);
    let mut used_conversations = std::collections::HashSet::new();
    let mut out = Vec::new();
    for target in candidates {
        if out.len() == n {
            break;
        }
        if used_conversations.contains(&target.0) {
            continue;
        }
        let words = content_words(text(corpus, target));
        let messages = &corpus.conversations[target.0].messages;
        let later = (target.1 + 1..messages.len().min(target.1 + 1 + REFERENCE_WINDOW))
            .filter(|&j| {
                let q = content_words(&messages[j].text);
                q.len() >= 3
                    && q.iter().any(|w| words.contains(w))
                    && plain(&messages[j].text) != plain(text(corpus, target))
            })
            .collect::<Vec<_>>();
        if later.is_empty() {
            continue;
        }
        let j = later[rng.below(later.len())];
        used_conversations.insert(target.0);
        out.push(Query {
            text: plain(&messages[j].text),
            target,
            exclude: Some((target.0, j)),
        });
    }
    out
}

/// Up to `n` reworded queries (module docs).
pub fn reworded(corpus: &Corpus, n: usize, seed: u64) -> Vec<Query> {
    let mut candidates = target_candidates(corpus);
    let mut rng = Rng::new(seed);
    shuffle(&mut candidates, &mut rng);
    candidates
        .into_iter()
        .take(n)
        .map(|target| {
            let mut words = content_words(text(corpus, target));
            shuffle(&mut words, &mut rng);
            let keep = (words.len() * 3).div_ceil(5).max(3).min(words.len());
            words.truncate(keep);
            Query {
                text: words.join(" "),
                target,
                exclude: None,
            }
        })
        .collect()
}

/// Up to `n` synonym-rewritten queries (module docs); targets where WordNet
/// offers too few synonyms are skipped.
pub fn synonyms(corpus: &Corpus, wordnet: &WordNet, n: usize, seed: u64) -> Vec<Query> {
    let mut candidates = target_candidates(corpus);
    let mut rng = Rng::new(seed);
    shuffle(&mut candidates, &mut rng);
    let mut out = Vec::new();
    for target in candidates {
        if out.len() == n {
            break;
        }
        let sentence = plain(text(corpus, target));
        let mut content = 0;
        let mut replaced = 0;
        let rewritten: Vec<String> = sentence
            .split(' ')
            .map(|w| {
                if !qualifies(w) {
                    return w.to_string();
                }
                content += 1;
                match wordnet.synonym(w) {
                    Some(s) => {
                        replaced += 1;
                        s
                    }
                    None => w.to_string(),
                }
            })
            .collect();
        if replaced >= 2 && replaced * 2 >= content {
            out.push(Query {
                text: rewritten.join(" "),
                target,
                exclude: None,
            });
        }
    }
    out
}

/// `query` without the stop words the engine's hybrid search drops from its
/// keyword side (NLTK's English list, as `memdb::search` has it: the
/// benches' list plus "could" and "would", without the clipped negations
/// like "didn"), for replaying hybrid's keyword ranking in keyword mode.
pub fn drop_stop_words(query: &str) -> String {
    const NOT_DROPPED: &[&str] = &[
        "ain", "aren", "couldn", "didn", "doesn", "hadn", "hasn", "haven", "isn", "ma", "mightn",
        "mustn", "needn", "shan", "shouldn", "wasn", "weren", "won", "wouldn",
    ];
    query
        .split_whitespace()
        .filter(|w| {
            let bare = w
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            let stop = matches!(bare.as_str(), "could" | "would")
                || (STOPWORDS.contains(&bare.as_str()) && !NOT_DROPPED.contains(&bare.as_str()));
            !bare.is_empty() && !stop
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A ranking: (id, score), best first.
pub type Ranking = [(u128, f32)];

/// Reciprocal rank fusion with constant `k` and equal weights (the engine's
/// default hybrid), best first; ties go to the smaller id.
pub fn rrf(a: &Ranking, b: &Ranking, k: f32) -> Vec<u128> {
    fuse(a, b, |i| 1.0 / (k + i as f32 + 1.0))
}

/// Relative score fusion: each ranking's scores min-max normalised to
/// [0, 1] over its own list (a list of one scores 1), summed with weights
/// `wa` and `wb`; a ranking that misses a hit adds 0.
pub fn relative_score(a: &Ranking, b: &Ranking, wa: f32, wb: f32) -> Vec<u128> {
    let norm = |list: &Ranking, i: usize| {
        let max = list.iter().map(|x| x.1).fold(f32::MIN, f32::max);
        let min = list.iter().map(|x| x.1).fold(f32::MAX, f32::min);
        if max > min {
            (list[i].1 - min) / (max - min)
        } else {
            1.0
        }
    };
    let mut scores: HashMap<u128, f32> = HashMap::new();
    for (list, w) in [(a, wa), (b, wb)] {
        for (i, &(id, _)) in list.iter().enumerate() {
            *scores.entry(id).or_default() += w * norm(list, i);
        }
    }
    sorted(scores)
}

fn fuse(a: &Ranking, b: &Ranking, part: impl Fn(usize) -> f32) -> Vec<u128> {
    let mut scores: HashMap<u128, f32> = HashMap::new();
    for list in [a, b] {
        for (i, &(id, _)) in list.iter().enumerate() {
            *scores.entry(id).or_default() += part(i);
        }
    }
    sorted(scores)
}

fn sorted(scores: HashMap<u128, f32>) -> Vec<u128> {
    let mut v: Vec<(u128, f32)> = scores.into_iter().collect();
    v.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    v.into_iter().map(|x| x.0).collect()
}

/// Recall@k and MRR@k over a set of queries.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Scores {
    /// Queries scored.
    pub queries: usize,
    /// Share of queries whose target is in the top k.
    pub recall: f64,
    /// Mean reciprocal rank of the target (0 when not in the top k).
    pub mrr: f64,
}

impl Scores {
    /// Scores from the target's 1-based rank per query (`None`: not in the
    /// top k).
    pub fn from_ranks(ranks: &[Option<usize>]) -> Scores {
        if ranks.is_empty() {
            return Scores::default();
        }
        let n = ranks.len() as f64;
        Scores {
            queries: ranks.len(),
            recall: ranks.iter().filter(|r| r.is_some()).count() as f64 / n,
            mrr: ranks.iter().flatten().map(|&r| 1.0 / r as f64).sum::<f64>() / n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::{Conversation, Message};

    fn corpus(convs: &[&[&str]]) -> Corpus {
        Corpus {
            conversations: convs
                .iter()
                .map(|ms| Conversation {
                    label: "t".into(),
                    folder: "/t".into(),
                    messages: ms
                        .iter()
                        .map(|t| Message {
                            role: "user",
                            text: t.to_string(),
                            timestamp: None,
                        })
                        .collect(),
                })
                .collect(),
            source: "test",
        }
    }

    #[test]
    fn plain_queries_have_no_operators() {
        assert_eq!(
            plain("Cats AND \"dogs\" -- aren't NOT fun!"),
            "cats and dogs aren't not fun"
        );
        assert_eq!(content_words("The cat, the CAT and a dog"), ["cat", "dog"]);
    }

    #[test]
    fn reference_queries_point_back_within_the_conversation() {
        let c = corpus(&[
            &[
                "I went hiking in the mountains last weekend",
                "nice",
                "which mountains did you climb there with friends",
            ],
            &["hello", "hello"],
            // Duplicate text: never a target.
            &[
                "we should book cheap flights to spain soon",
                "spain flights sound great fun",
            ],
            &["we should book cheap flights to spain soon"],
        ]);
        let q = reference(&c, 10, 1);
        assert_eq!(q.len(), 1);
        assert_eq!(q[0].target, (0, 0));
        assert_eq!(q[0].exclude, Some((0, 2)));
        assert_eq!(
            q[0].text,
            "which mountains did you climb there with friends"
        );
    }

    #[test]
    fn reworded_queries_are_subsets_of_the_target() {
        let c = corpus(&[&["my sister bought a small red bicycle yesterday morning"]]);
        let q = reworded(&c, 5, 3);
        assert_eq!(q.len(), 1);
        let target = content_words(&c.conversations[0].messages[0].text);
        let words: Vec<&str> = q[0].text.split(' ').collect();
        assert_eq!(words.len(), 5); // 60% of 7 (4.2), rounded up
        assert!(words.iter().all(|w| target.iter().any(|t| t == w)));
        assert_eq!(q, reworded(&c, 5, 3));
    }

    #[test]
    fn fusions() {
        assert_eq!(
            drop_stop_words("how could i fix my didn't bike"),
            "fix didn't bike"
        );
        let kw = [(1, 9.0), (2, 8.5), (3, 1.0)];
        let sem = [(3, 0.9), (4, 0.6), (2, 0.5)];
        // RRF rewards agreement: 3 and 2 are in both lists and pass 1, the
        // keyword top hit.
        assert_eq!(rrf(&kw, &sem, 60.0), vec![3, 2, 1, 4]);
        // Normalised scores: 1 = 1.0, 2 = 0.9375 + 0, 3 = 0 + 1.2, 4 = 0.3.
        assert_eq!(relative_score(&kw, &sem, 1.0, 1.2), vec![3, 1, 2, 4]);
        assert_eq!(relative_score(&kw, &sem, 1.0, 0.0)[0], 1);
        assert_eq!(relative_score(&kw, &sem, 0.0, 1.0)[0], 3);
    }

    #[test]
    fn scores() {
        let s = Scores::from_ranks(&[Some(1), Some(2), None, None]);
        assert_eq!(s.queries, 4);
        assert!((s.recall - 0.5).abs() < 1e-12);
        assert!((s.mrr - 0.375).abs() < 1e-12);
        assert_eq!(Scores::from_ranks(&[]), Scores::default());
    }
}
