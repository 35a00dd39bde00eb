//! The stages after fusion that read the turns of a dialogue (SPEC.md
//! §18.3): neighbour expansion (the turns around the best candidates, the
//! answer after a question), the short-turn discount, the speaker and
//! question weights, and the session spread.

use std::collections::HashMap;

use super::Query;
use super::fusion::sort_fused;
use super::{FusionWeights, Ranking, SHORT_TURN_WORDS, SPREAD_WINDOW, speaker};
use crate::error::Result;
use crate::model::types::ScoreExplain;

/// Fused candidates whose neighbouring turns neighbour expansion adds.
const NEIGHBOUR_PARENTS: usize = 10;

impl Query<'_> {
    /// Neighbour expansion (SPEC.md §18.3): the turns just before and after
    /// each of the first [`NEIGHBOUR_PARENTS`] fused candidates enter with
    /// `w.neighbours` of that candidate's score (or keep their own when
    /// higher), so the reply to a matching question ("Yes, last Tuesday!")
    /// can come back with it; the turn after a candidate that asks
    /// something (holds a `?`) enters with `w.answers`, and the turns two
    /// away (the same speaker's, in a dialogue) with
    /// `w.second_neighbours`. Run only without a role or time filter,
    /// which a neighbour might not pass (it always shares the hit's
    /// conversation, so every conversation-scope filter holds for it).
    pub(super) fn expand_neighbours(
        &self,
        fused: &mut Vec<(u128, f32, ScoreExplain)>,
        w: FusionWeights,
    ) -> Result<()> {
        let parents: Ranking = fused
            .iter()
            .take(NEIGHBOUR_PARENTS)
            .map(|(id, s, _)| (*id, *s))
            .collect();
        let ids: Vec<u128> = parents.iter().map(|(id, _)| *id).collect();
        // The turns two away are read only when they get a share.
        let reach = if w.second_neighbours > 0.0 { 2 } else { 1 };
        let around = self.neighbour_turns(&ids, reach)?;
        let mut index: HashMap<u128, usize> =
            fused.iter().enumerate().map(|(i, x)| (x.0, i)).collect();
        let mut moved = false;
        let rows = self.row_reader();
        for (rank, (id, score)) in parents.into_iter().enumerate() {
            let Some((before, after)) = around.get(&id) else {
                continue;
            };
            let next_share = if w.answers > 0.0
                && rows
                    .message(id)?
                    .is_some_and(|m| m.content.text().contains('?'))
            {
                w.answers
            } else {
                w.neighbours
            };
            for (nb, share) in [
                (before.first(), w.neighbours),
                (after.first(), next_share),
                (before.get(1), w.second_neighbours),
                (after.get(1), w.second_neighbours),
            ] {
                let Some(nb) = nb.filter(|_| share > 0.0) else {
                    continue;
                };
                let s = share * score;
                match index.get(nb) {
                    Some(&i) => {
                        if fused[i].1 < s {
                            fused[i].1 = s;
                            fused[i].2.fused = Some(s);
                            fused[i].2.neighbour_of = Some(rank + 1);
                            moved = true;
                        }
                    }
                    None => {
                        index.insert(*nb, fused.len());
                        fused.push((
                            *nb,
                            s,
                            ScoreExplain {
                                fused: Some(s),
                                neighbour_of: Some(rank + 1),
                                ..ScoreExplain::default()
                            },
                        ));
                        moved = true;
                    }
                }
            }
        }
        if moved {
            sort_fused(fused);
        }
        Ok(())
    }

    /// Short turns (SPEC.md §18.3, [`FusionWeights::short_turns`]): a
    /// candidate with `n` < [`SHORT_TURN_WORDS`] content words in what it
    /// says has its fused score multiplied by `1 − share · (SHORT_TURN_WORDS
    /// − n) / SHORT_TURN_WORDS`, unless the turn before it in its
    /// conversation asks something (holds a `?`): a short reply ("Yes,
    /// last Tuesday!") carries its question's meaning. Short chat turns
    /// ("Hahaha this spring", "So what type of job?") otherwise crowd the
    /// top on a single shared word, by BM25's length normalisation and by
    /// the embedding model's pull towards short texts.
    pub(super) fn discount_short_turns(
        &self,
        fused: &mut [(u128, f32, ScoreExplain)],
        share: f32,
    ) -> Result<()> {
        let rows = self.row_reader();
        let mut short = Vec::new();
        for (i, (id, _, _)) in fused.iter().enumerate() {
            if let Some(m) = rows.message(*id)? {
                let n = speaker::content_words_said(&m.content.text());
                if n < SHORT_TURN_WORDS {
                    let lacking = (SHORT_TURN_WORDS - n) as f32 / SHORT_TURN_WORDS as f32;
                    short.push((i, 1.0 - share * lacking));
                }
            }
        }
        if short.is_empty() {
            return Ok(());
        }
        let ids: Vec<u128> = short.iter().map(|&(i, _)| fused[i].0).collect();
        let around = self.neighbour_turns(&ids, 1)?;
        for (i, factor) in short {
            let before = around
                .get(&fused[i].0)
                .and_then(|(before, _)| before.first().copied());
            let reply = match before {
                Some(b) => rows
                    .message(b)?
                    .is_some_and(|m| m.content.text().contains('?')),
                None => false,
            };
            if !reply {
                let (_, f, e) = &mut fused[i];
                *f *= factor;
                e.fused = Some(*f);
                e.short_factor = Some(factor);
            }
        }
        sort_fused(fused);
        Ok(())
    }

    /// Speakers and questions (SPEC.md §18.3), from one read of each fused
    /// candidate. Speakers ([`FusionWeights::speaker`], with `speakers`:
    /// the question and the share): when the question names the speaker
    /// of some candidates and others have another speaker, those others
    /// lose the share of their fused score; a candidate without a known
    /// speaker keeps its score. Questions ([`FusionWeights::questions`],
    /// `questions` > 0): a candidate that only asks loses that share.
    pub(super) fn weigh_turns(
        &self,
        fused: &mut [(u128, f32, ScoreExplain)],
        speakers: Option<(&str, f32)>,
        questions: f32,
    ) -> Result<()> {
        let words = speakers.map(|(query, _)| speaker::question_words(query));
        let rows = self.row_reader();
        let mut named = Vec::with_capacity(fused.len());
        let mut asks = Vec::with_capacity(fused.len());
        for (id, _, _) in fused.iter() {
            let (n, a) = match rows.message(*id)? {
                Some(m) => {
                    let text = m.content.text();
                    (
                        words.as_ref().and_then(|words| {
                            speaker::speaker_of(&m.metadata, &text)
                                .map(|s| speaker::names(words, &s))
                        }),
                        questions > 0.0 && speaker::asks_only(&text),
                    )
                }
                None => (None, false),
            };
            named.push(n);
            asks.push(a);
        }
        let speaker_share = speakers
            .filter(|_| named.contains(&Some(true)) && named.contains(&Some(false)))
            .map(|(_, share)| share);
        if speaker_share.is_none() && !asks.contains(&true) {
            return Ok(());
        }
        for ((_, f, e), (named, asks)) in fused.iter_mut().zip(named.into_iter().zip(asks)) {
            if let Some(share) = speaker_share {
                let factor = if named == Some(false) {
                    1.0 - share
                } else {
                    1.0
                };
                *f *= factor;
                e.fused = Some(*f);
                e.speaker_factor = Some(factor);
            }
            if asks {
                *f *= 1.0 - questions;
                e.fused = Some(*f);
            }
        }
        sort_fused(fused);
        Ok(())
    }

    /// Session spread ([`FusionWeights::per_conversation`]): within the
    /// first [`SPREAD_WINDOW`] candidates, a conversation's hits after its
    /// first `cap` move behind the others (kept in order), so the top of
    /// the list reaches more sessions. Scores are unchanged.
    pub(super) fn spread_conversations(
        &self,
        fused: &mut Vec<(u128, f32, ScoreExplain)>,
        cap: usize,
    ) -> Result<()> {
        let window = fused.len().min(SPREAD_WINDOW);
        let rows = self.row_reader();
        let mut seen: HashMap<u128, usize> = HashMap::new();
        let mut kept = Vec::with_capacity(fused.len());
        let mut later = Vec::new();
        for x in fused.drain(..window) {
            let conv = rows.message(x.0)?.map(|m| m.conversation_id.as_u128());
            let n = conv.map_or(0, |c| {
                let n = seen.entry(c).or_default();
                *n += 1;
                *n
            });
            if n <= cap {
                kept.push(x);
            } else {
                later.push(x);
            }
        }
        kept.append(&mut later);
        kept.append(fused);
        *fused = kept;
        Ok(())
    }
}
