//! The passages a long text is embedded as (SPEC.md §10.5): a model reads
//! a fixed number of tokens and ignores the rest, so a text longer than
//! that is cut into windows of whole tokens, each embedded on its own,
//! neighbours overlapping by an eighth of a window so that a sentence cut
//! at one window's end is whole in the next.

use std::ops::Range;

/// Byte ranges of the text whose tokens have byte `offsets` (in order,
/// `(start, end)`), each at most `window` tokens, covering every token;
/// one range over the whole text (`len` bytes) when the tokens fit in one
/// window. An empty `offsets` (no tokens) is one range too.
pub fn token_windows(offsets: &[(usize, usize)], window: usize, len: usize) -> Vec<Range<usize>> {
    let window = window.max(1);
    if offsets.len() <= window {
        return std::iter::once(0..len).collect();
    }
    let overlap = window / 8;
    let step = window - overlap;
    let mut out = Vec::new();
    let mut first = 0;
    loop {
        let last = (first + window).min(offsets.len()) - 1;
        // The first window starts at the text's start, the last ends at its
        // end: leading and trailing whitespace is no token, but belongs
        // somewhere.
        let start = if first == 0 { 0 } else { offsets[first].0 };
        let end = if last + 1 == offsets.len() {
            len
        } else {
            offsets[last].1
        };
        out.push(start.min(len)..end.min(len).max(start.min(len)));
        if last + 1 == offsets.len() {
            break;
        }
        first += step;
    }
    out
}

/// At most `max` of `windows`, spread evenly over the text: all of them
/// when there are no more, else the first, the last and the ones nearest
/// to even steps between (`max` of at least 2; less is taken as 2). A
/// message's vector is the mean of its windows (SPEC.md §10.1), and a
/// message may hold a megabyte: this bounds what one message costs the
/// model while every part of the text still has a say.
pub fn spread_windows(windows: Vec<Range<usize>>, max: usize) -> Vec<Range<usize>> {
    let max = max.max(2);
    let n = windows.len();
    if n <= max {
        return windows;
    }
    // Index i * (n - 1) / (max - 1), rounded: strictly increasing because
    // the step (n - 1) / (max - 1) is above 1.
    let pick: Vec<usize> = (0..max)
        .map(|i| (i * (n - 1) + (max - 1) / 2) / (max - 1))
        .collect();
    windows
        .into_iter()
        .enumerate()
        .filter(|(k, _)| pick.binary_search(k).is_ok())
        .map(|(_, r)| r)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_windows_keeps_the_ends_and_steps_evenly_between() {
        let ws: Vec<Range<usize>> = (0..10).map(|i| i..i + 1).collect();
        assert_eq!(spread_windows(ws.clone(), 16), ws);
        assert_eq!(spread_windows(ws.clone(), 10), ws);
        let starts = |v: Vec<Range<usize>>| v.into_iter().map(|r| r.start).collect::<Vec<_>>();
        assert_eq!(starts(spread_windows(ws.clone(), 4)), vec![0, 3, 6, 9]);
        assert_eq!(starts(spread_windows(ws.clone(), 3)), vec![0, 5, 9]);
        assert_eq!(starts(spread_windows(ws.clone(), 0)), vec![0, 9]);
        let many: Vec<Range<usize>> = (0..1_000).map(|i| i..i + 1).collect();
        let picked = starts(spread_windows(many, 16));
        assert_eq!(picked.len(), 16);
        assert_eq!((picked[0], picked[15]), (0, 999));
        assert!(picked.windows(2).all(|p| p[1] > p[0]));
    }

    /// Offsets of one-byte-apart words "w0 w1 ...": word i at 3i..3i+2.
    fn words(n: usize) -> Vec<(usize, usize)> {
        (0..n).map(|i| (3 * i, 3 * i + 2)).collect()
    }

    #[test]
    fn a_text_that_fits_is_one_passage() {
        assert_eq!(token_windows(&words(8), 8, 23), vec![0..23]);
        assert_eq!(token_windows(&[], 8, 5), vec![0..5]);
    }

    #[test]
    fn a_long_text_is_cut_into_overlapping_windows_covering_every_token() {
        let offs = words(20);
        let w = token_windows(&offs, 8, 59);
        // window 8, overlap 1, step 7: tokens 0-7, 7-14, 14-19.
        assert_eq!(w, vec![0..23, 21..44, 42..59]);
        for (i, (s, e)) in offs.iter().enumerate() {
            assert!(
                w.iter().any(|r| r.start <= *s && *e <= r.end),
                "token {i} is in no window"
            );
        }
    }

    #[test]
    fn a_window_of_one_token_still_advances() {
        let w = token_windows(&words(3), 1, 8);
        assert_eq!(w, vec![0..2, 3..5, 6..8]);
    }
}
