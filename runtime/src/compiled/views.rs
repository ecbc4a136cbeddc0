//! The windows of buffers a compiled loop takes before it runs: a loop over
//! `i` that indexes a buffer only at `i + c`, for literals `c` from `low` to
//! `high`, reads elements `lo + low ..= lo + n - 1 + high` of it (`lo` the
//! range's lowest value, `n` its length). The generated code takes that
//! window as a slice and runs a counter `j` over `0..n`, indexing it at
//! `j + c - low`: every index is then below the window's length by
//! construction, and the optimiser drops the bounds checks and can vectorise
//! the loop (which it does not for `b[i - 1]` in a loop over `1..n`).

use core::ops::Range;

/// The lowest value of a loop's range and its length: `(lo, n)`, `(0, 0)`
/// for an empty range.
///
/// # Panics
///
/// If the range is too long to count (`0..=usize::MAX`), which no loop that
/// indexes a buffer at its variable runs through.
#[inline(always)]
pub fn loop_span<W: DoubleEndedIterator<Item = usize> + Clone>(walk: &W) -> (usize, usize) {
    let (n, upper) = walk.size_hint();
    assert!(
        upper == Some(n),
        "deltad: a loop's range is too long to index with"
    );
    match (walk.clone().next(), walk.clone().next_back()) {
        (Some(first), Some(last)) => (first.min(last), n),
        _ => (0, 0),
    }
}

/// The elements a loop of span `(lo, n)`, `n` at least 1, indexes at
/// `i + low ..= i + high`. (The loop ran, or runs, over them all, so the
/// window is in bounds wherever the loop's own indexing is; elsewhere the
/// slicing panics, as the loop would. An empty loop takes no window: its
/// `lo` may be too low for a negative `low`.)
#[inline(always)]
pub fn loop_window(lo: usize, n: usize, low: isize, high: isize) -> Range<usize> {
    // (Its length as the sum of `n` and a constant, so that the optimiser
    // sees `j + c - low < n + high - low` from `j < n`; no branch for an
    // empty loop, which would hide that.)
    let start = lo.wrapping_add_signed(low);
    start..start.wrapping_add(n + high.abs_diff(low))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_of_ranges_in_either_direction() {
        assert_eq!(loop_span(&(3..7)), (3, 4));
        assert_eq!(loop_span(&(3..7).rev()), (3, 4));
        assert_eq!(loop_span(&(3..=7)), (3, 5));
        assert_eq!(loop_span(&(3..=7).rev()), (3, 5));
        let (high, low) = (core::hint::black_box(7), core::hint::black_box(3));
        assert_eq!(loop_span(&(high..low)), (0, 0));
        assert_eq!(loop_span(&(low..=low - 1)), (0, 0));
    }

    #[test]
    fn windows_cover_the_offsets_of_every_iteration() {
        // `for i in 1..5 { .. b[i - 1] .. b[i + 2] .. }` reads b[0..7].
        assert_eq!(loop_window(1, 4, -1, 2), 0..7);
        assert_eq!(loop_window(1, 4, 0, 0), 1..5);
        let b = [0.0; 7];
        assert_eq!(b[loop_window(1, 4, -1, 2)].len(), 4 + 3);
    }
}
