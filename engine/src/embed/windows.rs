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

#[cfg(test)]
mod tests {
    use super::*;

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
