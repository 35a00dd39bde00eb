//! The session pass of a hybrid search (SPEC.md §18.3), run after the turn
//! stages: the fused list read by conversation (a session, when a client
//! stores one session per conversation). Two steps:
//!
//! - **Session weight**: a candidate's fused score is multiplied by
//!   `1 + session_mass · m(c) / max m`, where `m(c)` is the mean of its
//!   conversation's [`SESSION_MASS_TURNS`] best scores among the first
//!   [`SPREAD_WINDOW`] candidates (each over the best candidate's score;
//!   a conversation with fewer such turns counts zeros for the rest). A
//!   session several of whose turns are near the question is more likely
//!   the one that holds the answer than one with a single stray match.
//! - **Session tail**: the last `session_tail` of the first
//!   [`SESSION_TAIL_END`] places go, one by one, to the best candidate of a
//!   conversation none of the places above holds, when its score is at
//!   least `session_tail_ratio` of the candidate that would take the
//!   place in score order (and that one's conversation is already there).
//!   The first places stay in score order; the tail reaches sessions the
//!   best turns crowd out, which is what a question whose evidence spans
//!   sessions needs.

use std::collections::HashMap;

use super::Query;
use super::fusion::sort_fused;
use super::{FusionWeights, SESSION_MASS_TURNS, SESSION_TAIL_END, SPREAD_WINDOW};
use crate::error::Result;
use crate::model::types::ScoreExplain;

type Fused = Vec<(u128, f32, ScoreExplain)>;

impl Query<'_> {
    /// The session pass (module docs); `w.session_mass` 0 skips the
    /// weight, `w.session_tail` 0 the tail.
    pub(super) fn session_pass(&self, fused: &mut Fused, w: FusionWeights) -> Result<()> {
        let window = fused.len().min(SPREAD_WINDOW);
        if window == 0 {
            return Ok(());
        }
        let rows = self.row_reader();
        let mut conversation: HashMap<u128, u128> = HashMap::with_capacity(window);
        for (id, _, _) in &fused[..window] {
            if let Some(m) = rows.message(*id)? {
                conversation.insert(*id, m.conversation_id.as_u128());
            }
        }
        if w.session_mass > 0.0 {
            session_weight(fused, window, &conversation, w.session_mass);
        }
        if w.session_tail > 0 {
            session_tail(
                fused,
                &conversation,
                w.session_tail as usize,
                w.session_tail_ratio,
            );
        }
        Ok(())
    }
}

/// The session weight over the first `window` candidates (module docs);
/// re-sorts the list.
fn session_weight(fused: &mut Fused, window: usize, conversation: &HashMap<u128, u128>, mass: f32) {
    let top = fused[0].1;
    if !(top.is_finite() && top > 0.0) {
        return;
    }
    let mut best: HashMap<u128, Vec<f32>> = HashMap::new();
    for (id, score, _) in &fused[..window] {
        if let Some(c) = conversation.get(id) {
            best.entry(*c).or_default().push(score / top);
        }
    }
    let m: HashMap<u128, f32> = best
        .into_iter()
        .map(|(c, mut scores)| {
            scores.sort_by(|a, b| b.total_cmp(a));
            let sum: f32 = scores.iter().take(SESSION_MASS_TURNS).sum();
            (c, sum / SESSION_MASS_TURNS as f32)
        })
        .collect();
    let most = m.values().copied().fold(0.0f32, f32::max);
    if most <= 0.0 {
        return;
    }
    for (id, score, e) in &mut fused[..window] {
        let Some(c) = conversation.get(id) else {
            continue;
        };
        let factor = 1.0 + mass * m.get(c).copied().unwrap_or(0.0) / most;
        *score *= factor;
        e.fused = Some(*score);
        e.session_factor = Some(factor);
    }
    sort_fused(fused);
}

/// The session tail (module docs): places `SESSION_TAIL_END − tail` to
/// `SESSION_TAIL_END` (0-based, exclusive end) of the list. Candidates
/// whose conversation is unknown (past the window, or gone) never move.
fn session_tail(fused: &mut Fused, conversation: &HashMap<u128, u128>, tail: usize, ratio: f32) {
    let end = SESSION_TAIL_END.min(fused.len());
    let start = SESSION_TAIL_END.saturating_sub(tail);
    if start >= end {
        return;
    }
    let conv = |x: &(u128, f32, ScoreExplain)| conversation.get(&x.0).copied();
    for place in start..end {
        let held: Vec<u128> = fused[..place].iter().filter_map(conv).collect();
        let next = &fused[place];
        if conv(next).is_none_or(|c| !held.contains(&c)) {
            continue;
        }
        let Some(offset) = fused[place + 1..]
            .iter()
            .position(|x| conv(x).is_some_and(|c| !held.contains(&c)))
        else {
            break;
        };
        let from = place + 1 + offset;
        if fused[from].1 < ratio * next.1 {
            continue;
        }
        let mut moved = fused.remove(from);
        moved.2.session_from = Some(from + 1);
        fused.insert(place, moved);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[(u128, f32, u128)]) -> (Fused, HashMap<u128, u128>) {
        let fused = items
            .iter()
            .map(|&(id, s, _)| (id, s, ScoreExplain::default()))
            .collect();
        let conv = items.iter().map(|&(id, _, c)| (id, c)).collect();
        (fused, conv)
    }

    fn ids(f: &Fused) -> Vec<u128> {
        f.iter().map(|x| x.0).collect()
    }

    #[test]
    fn a_session_with_several_near_turns_outweighs_one_stray_match() {
        // Conversation 1: one turn at 1.0; conversation 2: three at 0.9.
        let (mut f, conv) = list(&[(1, 1.0, 1), (2, 0.9, 2), (3, 0.9, 2), (4, 0.9, 2)]);
        session_weight(&mut f, 4, &conv, 0.5);
        assert_eq!(ids(&f), vec![2, 3, 4, 1]);
        // m(2) = 0.9 is the most: factor 1.5; m(1) = 1/3: factor 1 + 0.5/2.7.
        assert!((f[0].2.session_factor.unwrap() - 1.5).abs() < 1e-6);
        assert!((f[0].1 - 1.35).abs() < 1e-6);
        assert!((f[3].2.session_factor.unwrap() - (1.0 + 0.5 / 2.7)).abs() < 1e-5);
        assert_eq!(f[3].2.fused, Some(f[3].1));
    }

    #[test]
    fn the_tail_brings_in_new_sessions_only_above_the_ratio() {
        // Ten turns of conversation 1, then conversation 2 at 0.85 and
        // conversation 3 at 0.5.
        let mut items: Vec<(u128, f32, u128)> =
            (0..10).map(|i| (i, 1.0 - i as f32 * 0.01, 1)).collect();
        items.push((10, 0.85, 2));
        items.push((11, 0.5, 3));
        let (mut f, conv) = list(&items);
        session_tail(&mut f, &conv, 3, 0.8);
        // Place 8 (0-based 7): 0.85 ≥ 0.8 · 0.93, so turn 10 moves up; the
        // next new session (3) is under the ratio and stays where it was.
        assert_eq!(ids(&f)[..10], [0, 1, 2, 3, 4, 5, 6, 10, 7, 8]);
        assert_eq!(f[7].2.session_from, Some(11));
        assert_eq!(ids(&f)[10..], [9, 11]);
        assert!(
            f.iter()
                .filter(|x| x.0 != 10)
                .all(|x| x.2.session_from.is_none())
        );
    }

    #[test]
    fn the_tail_leaves_a_list_of_distinct_sessions_and_short_lists_alone() {
        let items: Vec<(u128, f32, u128)> = (0..12).map(|i| (i, 1.0, i)).collect();
        let (mut f, conv) = list(&items);
        session_tail(&mut f, &conv, 3, 0.0);
        assert_eq!(ids(&f), (0..12).collect::<Vec<_>>());
        let (mut f, conv) = list(&[(1, 1.0, 1), (2, 0.9, 1), (3, 0.8, 2)]);
        session_tail(&mut f, &conv, 3, 0.0);
        assert_eq!(ids(&f), vec![1, 2, 3], "the tail starts at place 8");
    }
}
