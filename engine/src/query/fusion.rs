//! Hybrid fusion (SPEC.md §18.2): two rankings into one, by relative
//! score (min-max normalised BM25 and every candidate's similarity) or by
//! reciprocal rank, with the keyword weight that keyword coverage leaves.

use std::collections::HashMap;

use super::{FusionMethod, FusionWeights, Ranking};
use crate::model::types::ScoreExplain;

/// The keyword weight [`FusionWeights::coverage`] leaves when the best
/// keyword match holds the share `covered` (0..=1) of the question's
/// content words.
pub(crate) fn covered_keyword_weight(w: FusionWeights, covered: f32) -> f32 {
    w.keyword * (1.0 - w.coverage * (1.0 - covered.clamp(0.0, 1.0)))
}

/// Min-max bounds of the values present, `None` when there are none.
pub(super) fn bounds(values: impl Iterator<Item = f32>) -> Option<(f32, f32)> {
    values.fold(None, |b, v| match b {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// `v` min-max normalised into [0, 1] by `bounds`; every value scores 1
/// when they are all equal.
pub(super) fn normalise(v: f32, (min, max): (f32, f32)) -> f32 {
    if max > min {
        ((v - min) / (max - min)).clamp(0.0, 1.0)
    } else {
        1.0
    }
}

/// Fuses two rankings (see [`FusionMethod`]); returns (id, fused score,
/// explanation), best first, ties broken by the better single rank and then
/// by id so the order is deterministic.
///
/// Relative score fusion: the keyword signal is BM25 min-max normalised
/// over the keyword ranking's own candidates; a candidate outside it scores
/// 0 (it does not match, or scores at most the ranking's lowest BM25). The
/// semantic signal is every candidate's cosine similarity, the keyword-only
/// ones' taken from `semantic_fill`, min-max normalised over all candidates
/// that have one; a candidate without a vector scores 0. RRF uses the ranks
/// only (the fills still show in the explanation).
pub(crate) fn fuse(
    keyword: &Ranking,
    semantic: &Ranking,
    semantic_fill: &HashMap<u128, f32>,
    w: FusionWeights,
) -> Vec<(u128, f32, ScoreExplain)> {
    let mut by_id: HashMap<u128, ScoreExplain> = HashMap::new();
    for (i, &(id, s)) in keyword.iter().enumerate() {
        let e = by_id.entry(id).or_default();
        e.keyword_rank = Some(i + 1);
        e.keyword_score = Some(s);
    }
    for (i, &(id, s)) in semantic.iter().enumerate() {
        let e = by_id.entry(id).or_default();
        e.semantic_rank = Some(i + 1);
        e.similarity = Some(s);
    }
    for (id, e) in by_id.iter_mut() {
        if e.similarity.is_none() {
            e.similarity = semantic_fill.get(id).copied();
        }
    }
    let kb = bounds(keyword.iter().map(|x| x.1));
    let sb = bounds(by_id.values().filter_map(|e| e.similarity));
    let rrf =
        |weight: f32, rank: Option<usize>| rank.map_or(0.0, |r| weight / (w.rrf_k + r as f32));
    let mut out: Vec<(u128, f32, ScoreExplain)> = by_id
        .into_iter()
        .map(|(id, mut e)| {
            let f = match w.method {
                FusionMethod::RelativeScore => {
                    let k = match (kb, e.keyword_rank, e.keyword_score) {
                        (Some(b), Some(_), Some(v)) => normalise(v, b),
                        _ => 0.0,
                    };
                    let s = match (sb, e.similarity) {
                        (Some(b), Some(v)) => normalise(v, b),
                        _ => 0.0,
                    };
                    w.keyword * k + w.semantic * s
                }
                FusionMethod::Rrf => {
                    rrf(w.keyword, e.keyword_rank) + rrf(w.semantic, e.semantic_rank)
                }
            };
            e.fused = Some(f);
            (id, f, e)
        })
        .collect();
    sort_fused(&mut out);
    out
}

/// Best fused score first, ties broken by the better single rank, then by
/// id, so the order is deterministic.
pub(super) fn sort_fused(out: &mut [(u128, f32, ScoreExplain)]) {
    let best_rank = |e: &ScoreExplain| {
        e.keyword_rank
            .unwrap_or(usize::MAX)
            .min(e.semantic_rank.unwrap_or(usize::MAX))
    };
    out.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then(best_rank(&a.2).cmp(&best_rank(&b.2)))
            .then(a.0.cmp(&b.0))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::DEFAULT_COVERAGE;

    /// Equal weights (the fusion arithmetic these tests check; the
    /// default gives meaning half the keyword ranking's weight).
    fn equal() -> FusionWeights {
        FusionWeights {
            semantic: 1.0,
            ..FusionWeights::default()
        }
    }

    #[test]
    fn coverage_discounts_the_keyword_weight_by_what_its_best_match_misses() {
        let off = FusionWeights {
            coverage: 0.0,
            ..FusionWeights::default()
        };
        assert_eq!(covered_keyword_weight(off, 0.0), off.keyword);
        assert_eq!(FusionWeights::default().coverage, DEFAULT_COVERAGE);
        let half = FusionWeights {
            coverage: 0.5,
            ..FusionWeights::default()
        };
        // Every content word matched: the weight stands.
        assert_eq!(covered_keyword_weight(half, 1.0), 1.0);
        // Half of them: a quarter off; none: half off.
        assert!((covered_keyword_weight(half, 0.5) - 0.75).abs() < 1e-6);
        assert!((covered_keyword_weight(half, 0.0) - 0.5).abs() < 1e-6);
        let full = FusionWeights {
            coverage: 1.0,
            keyword: 2.0,
            ..FusionWeights::default()
        };
        assert!((covered_keyword_weight(full, 0.25) - 0.5).abs() < 1e-6);
    }

    fn rrf() -> FusionWeights {
        FusionWeights {
            method: FusionMethod::Rrf,
            ..equal()
        }
    }

    fn none() -> HashMap<u128, f32> {
        HashMap::new()
    }

    fn scores(out: &[(u128, f32, ScoreExplain)]) -> Vec<(u128, f32)> {
        out.iter().map(|x| (x.0, x.1)).collect()
    }

    fn assert_scores(got: &[(u128, f32, ScoreExplain)], want: &[(u128, f32)]) {
        let got = scores(got);
        assert_eq!(got.len(), want.len(), "{got:?}");
        for ((id, f), (wid, wf)) in got.iter().zip(want) {
            assert_eq!(id, wid, "{got:?}");
            assert!((f - wf).abs() < 1e-5, "{got:?}");
        }
    }

    #[test]
    fn relative_score_normalises_similarity_over_all_candidates() {
        let kw = vec![(1, 9.0), (2, 5.0), (4, 1.0)];
        let sem = vec![(2, 0.9), (3, 0.8), (1, 0.5)];
        // Without fills (4 has no vector): keyword over its list [1, 9]:
        // 1 -> 1, 2 -> 0.5, 4 -> 0, 3 (not in it) -> 0; semantic over
        // [0.5, 0.9]: 2 -> 1, 3 -> 0.75, 1 -> 0, 4 -> 0.
        let out = fuse(&kw, &sem, &none(), equal());
        assert_scores(&out, &[(2, 1.5), (1, 1.0), (3, 0.75), (4, 0.0)]);
        // 4's real cosine, 0.3, widens the semantic range to [0.3, 0.9]:
        // 2 -> 1, 3 -> 5/6, 1 -> 1/3, 4 -> 0.
        let fill = HashMap::from([(4, 0.3)]);
        let out = fuse(&kw, &sem, &fill, equal());
        assert_scores(&out, &[(2, 1.5), (1, 4.0 / 3.0), (3, 5.0 / 6.0), (4, 0.0)]);
        // The explanation shows the filled-in similarity, with no rank.
        let four = out.iter().find(|x| x.0 == 4).map(|x| x.2);
        let four = four.unwrap_or_default();
        assert_eq!(
            (four.keyword_rank, four.keyword_score),
            (Some(3), Some(1.0))
        );
        assert_eq!((four.semantic_rank, four.similarity), (None, Some(0.3)));
        let three = out.iter().find(|x| x.0 == 3).map(|x| x.2);
        let three = three.unwrap_or_default();
        assert_eq!((three.keyword_rank, three.keyword_score), (None, None));
        // Weights scale each side.
        let w = FusionWeights {
            keyword: 0.5,
            semantic: 2.0,
            ..equal()
        };
        let out = fuse(&kw, &sem, &fill, w);
        assert_eq!(out[0].0, 2);
        assert!((out[0].1 - (0.25 + 2.0)).abs() < 1e-6);
    }

    #[test]
    fn a_keyword_hit_the_semantic_list_missed_keeps_its_similarity() {
        // What filling in fixes: keyword #1 (message 1) is just below the
        // semantic list's cut-off (0.55). Scored as the least similar
        // candidate it loses to 2, a weaker keyword match near the semantic
        // list's bottom; with its real cosine (0.54, next to 2's 0.6 and
        // far above 3's 0.1) it wins.
        let kw = vec![(1, 10.0), (2, 9.0), (3, 1.0)];
        let sem = vec![(4, 0.8), (2, 0.6), (5, 0.55)];
        let unfilled = fuse(&kw, &sem, &none(), equal());
        assert_eq!(unfilled[0].0, 2, "{:?}", scores(&unfilled));
        let fill = HashMap::from([(1, 0.54), (3, 0.1)]);
        let out = fuse(&kw, &sem, &fill, equal());
        assert_eq!(out[0].0, 1, "{:?}", scores(&out));
        // Semantic over [0.1, 0.8]: 1 scores 1 + 0.44 / 0.7.
        assert!((out[0].1 - (1.0 + 0.44 / 0.7)).abs() < 1e-5);
    }

    #[test]
    fn degenerate_signals() {
        // A list of one normalises to 1.
        let out = fuse(&vec![(7, 0.3)], &vec![], &none(), equal());
        assert_eq!(out[0].1, 1.0);
        // No keyword ranking (skipped): the keyword side adds nothing.
        let out = fuse(&vec![], &vec![(1, 0.9), (2, 0.5)], &none(), equal());
        assert_scores(&out, &[(1, 1.0), (2, 0.0)]);
        // Equal scores: all 1.
        let out = fuse(
            &vec![(1, 2.0), (2, 2.0)],
            &vec![(2, 0.5), (1, 0.5)],
            &none(),
            equal(),
        );
        assert_scores(&out, &[(1, 2.0), (2, 2.0)]);
        // No candidate has a vector: the semantic side adds nothing.
        let out = fuse(&vec![(1, 4.0), (2, 2.0)], &vec![], &none(), equal());
        assert_scores(&out, &[(1, 1.0), (2, 0.0)]);
    }

    #[test]
    fn rrf_sums_reciprocal_ranks() {
        let kw = vec![(1, 9.0), (2, 5.0)];
        let sem = vec![(2, 0.9), (3, 0.8)];
        // Fills show in the explanation but RRF reads ranks only.
        let fill = HashMap::from([(1, 0.99)]);
        let out = fuse(&kw, &sem, &fill, rrf());
        let ids: Vec<u128> = out.iter().map(|x| x.0).collect();
        // 2 is in both lists: 1/62 + 1/61 beats 1/61 (id 1) and 1/62 (id 3).
        assert_eq!(ids, vec![2, 1, 3]);
        let two = out[0].2;
        assert_eq!((two.keyword_rank, two.semantic_rank), (Some(2), Some(1)));
        assert!((out[0].1 - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-6);
        assert!((out[1].1 - 1.0 / 61.0).abs() < 1e-6);
        assert_eq!(out[1].2.similarity, Some(0.99));
    }

    #[test]
    fn weights_shift_the_order() {
        let kw = vec![(1, 9.0)];
        let sem = vec![(2, 0.9)];
        let w = FusionWeights {
            keyword: 0.5,
            semantic: 2.0,
            ..rrf()
        };
        let out = fuse(&kw, &sem, &none(), w);
        assert_eq!(out[0].0, 2);
        // Zero weight removes a ranking's influence but keeps its hits.
        let w0 = FusionWeights {
            keyword: 0.0,
            ..rrf()
        };
        let out = fuse(&kw, &sem, &none(), w0);
        assert_eq!(out[0].0, 2);
        assert_eq!(out[1].1, 0.0);
    }

    #[test]
    fn ties_break_by_best_rank_then_id() {
        // Same fused score (rank 1 in one list each): lower id first.
        let out = fuse(&vec![(7, 1.0)], &vec![(3, 0.5)], &none(), rrf());
        assert_eq!(out.iter().map(|x| x.0).collect::<Vec<_>>(), vec![3, 7]);
    }
}
