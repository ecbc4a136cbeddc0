//! The columns of a long Jacobian written past the caches.
//!
//! `jvps` on a long buffer result spreads each pass's result (one value and
//! 8 tangents per real, read once) into 8 columns nothing reads before the
//! caller does: tens of megabytes. Ordinary stores first read every line of
//! a column into the cache, to write it there; non-temporal stores write
//! whole lines to memory without reading them, a third less traffic: 300 000
//! elements of 8 lanes took 2.3–2.8 ms per pass with ordinary stores and
//! 1.0–1.1 ms with these on the development machine, and ht's Jacobian went
//! from 5.9–6.4 to 4.9–5.1 ms at hand10, from 14–15 to 10.9–11.9 ms at
//! hand11 and from 31–32 to 23–26 ms at hand12. Used on x86-64, whose
//! every processor has them (SSE2), for 8-byte reals; elsewhere the columns
//! are written as usual.

use crate::dual_vec::DualVec;
use crate::scalar::Primitive;

/// Results with fewer bytes of columns than this (a megabyte) are written as
/// usual: they may still be in the cache when the caller reads them.
const STREAMED_FROM_BYTES: usize = 1 << 20;

/// Writes lane `k` of every element into `columns[k]` (each empty, with room
/// for every element) and returns true, where stores past the caches pay;
/// else writes nothing and returns false.
pub(crate) fn write_lanes<P: Primitive, const N: usize>(
    elements: &[DualVec<P, N>],
    columns: &mut [Vec<P>],
) -> bool {
    let bytes = elements.len() * columns.len() * core::mem::size_of::<P>();
    if core::mem::size_of::<P>() != 8
        || bytes < STREAMED_FROM_BYTES
        || columns.len() > N
        || columns
            .iter()
            .any(|c| !c.is_empty() || c.capacity() < elements.len())
    {
        return false;
    }
    write_streamed(elements, columns)
}

#[cfg(target_arch = "x86_64")]
fn write_streamed<P: Primitive, const N: usize>(
    elements: &[DualVec<P, N>],
    columns: &mut [Vec<P>],
) -> bool {
    use core::arch::x86_64::{_mm_set_pd, _mm_sfence, _mm_stream_pd};
    // A store writes 16 aligned bytes: columns that start between two
    // (which the allocator does not do for long ones) are written as usual.
    if columns.iter().any(|c| (c.as_ptr() as usize) % 16 != 0) {
        return false;
    }
    // The bits of an 8-byte real, as the `f64` the stores take (moved, not
    // computed with).
    let bits = |x: &P| -> f64 {
        // SAFETY: `write_lanes` checked that `P` has 8 bytes, and every bit
        // pattern is an `f64`.
        unsafe { core::mem::transmute_copy::<P, f64>(x) }
    };
    let len = elements.len();
    let pairs_end = len / 2 * 2;
    // By blocks of elements that stay in the first-level cache while each
    // column takes its part.
    let mut start = 0;
    while start < pairs_end {
        let end = (start + BLOCK).min(pairs_end);
        for (k, column) in columns.iter_mut().enumerate() {
            let out = column.as_mut_ptr().cast::<f64>();
            let mut i = start;
            while i < end {
                let (low, high) = (
                    bits(&elements[i].tangents[k]),
                    bits(&elements[i + 1].tangents[k]),
                );
                // SAFETY: SSE2, which every x86-64 processor has; the column
                // has room for `len` elements (`write_lanes`), `i + 1 < len`,
                // and `out.add(i)` is 16-byte aligned (`out` is, `i` is even).
                unsafe { _mm_stream_pd(out.add(i), _mm_set_pd(high, low)) };
                i += 2;
            }
        }
        start = end;
    }
    for (k, column) in columns.iter_mut().enumerate() {
        if pairs_end < len {
            // SAFETY: room for `len` elements; the last one of an odd count.
            unsafe {
                column
                    .as_mut_ptr()
                    .add(pairs_end)
                    .write(elements[pairs_end].tangents[k])
            };
        }
    }
    // SAFETY: the fence orders the stores above before what follows, and
    // every column's `len` elements are written.
    unsafe {
        _mm_sfence();
        for column in columns.iter_mut() {
            column.set_len(len);
        }
    }
    true
}

/// Elements per block (an even number).
#[cfg(target_arch = "x86_64")]
const BLOCK: usize = 256;

#[cfg(not(target_arch = "x86_64"))]
fn write_streamed<P: Primitive, const N: usize>(_: &[DualVec<P, N>], _: &mut [Vec<P>]) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elements(len: usize) -> Vec<DualVec<f64, 8>> {
        (0..len)
            .map(|i| DualVec {
                value: i as f64,
                tangents: core::array::from_fn(|k| (i * 8 + k) as f64 * 0.5 - 3.0),
            })
            .collect()
    }

    /// Long results (an odd number of elements, fewer columns than lanes)
    /// get each lane in its column; short ones are left to the caller.
    #[test]
    fn columns_hold_the_lanes() {
        for (len, lanes) in [(200_001, 8), (300_000, 5)] {
            let elements = elements(len);
            let mut columns: Vec<Vec<f64>> = (0..lanes).map(|_| Vec::with_capacity(len)).collect();
            assert!(write_lanes(&elements, &mut columns) || !cfg!(target_arch = "x86_64"));
            if columns[0].is_empty() {
                continue;
            }
            for (k, column) in columns.iter().enumerate() {
                assert_eq!(column.len(), len);
                assert!(column
                    .iter()
                    .zip(&elements)
                    .all(|(c, e)| *c == e.tangents[k]));
            }
        }
        let short = elements(1000);
        let mut columns: Vec<Vec<f64>> = (0..8).map(|_| Vec::with_capacity(1000)).collect();
        assert!(!write_lanes(&short, &mut columns));
        assert!(columns.iter().all(Vec::is_empty));
    }
}
