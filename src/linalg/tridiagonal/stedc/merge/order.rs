//! The output order of a merge: the roots gathered from their range tasks,
//! merged with the deflated values into ascending order. Shared with the
//! bidiagonal SVD's merge.

use std::ops::Range;

use super::{OutCol, SolvedRange};
use crate::error::Error;
use crate::linalg::tridiagonal::stedc::secular::Root;
use crate::scalar::Scalar;

/// The roots of the `solved` ranges in order, or an error naming `who` unless they
/// cover `0..k` exactly once. Shared with the bidiagonal SVD's merge.
pub(crate) fn gather_roots<T: Scalar>(
    solved: &parking_lot::Mutex<Vec<SolvedRange<T>>>,
    k: usize,
    who: &str,
) -> Result<Vec<Root<T>>, Error> {
    let mut parts = std::mem::take(&mut *solved.lock());
    parts.sort_by_key(|(r, _)| (r.start, r.end));
    let mut roots = Vec::with_capacity(k);
    for (range, part) in parts {
        if range.start != roots.len() {
            return Err(Error::InvalidArgument(format!(
                "{who}: roots {range:?} solved, {} expected next",
                roots.len()
            )));
        }
        roots.extend(part);
    }
    if roots.len() != k {
        return Err(Error::InvalidArgument(format!(
            "{who}: {} of {k} roots solved",
            roots.len()
        )));
    }
    Ok(roots)
}

/// Output order of a merge: the ascending merge of the roots and the deflated
/// values (ties: roots first).
pub(crate) fn merge_order<T: Scalar>(roots: &[T], defl: &[T]) -> Vec<OutCol> {
    let (k, nd) = (roots.len(), defl.len());
    let mut out = Vec::with_capacity(k + nd);
    let (mut r, mut s) = (0, 0);
    while r < k || s < nd {
        if s == nd || (r < k && roots[r] <= defl[s]) {
            out.push(OutCol::Root(r));
            r += 1;
        } else {
            out.push(OutCol::Deflated(s));
            s += 1;
        }
    }
    out
}

/// The merged values in output order: `d[c]` is the root or deflated value that
/// output column `c` comes from.
pub(crate) fn values_in_order<T: Scalar>(out: &[OutCol], roots: &[T], defl: &[T], d: &mut [T]) {
    for (dst, src) in d.iter_mut().zip(out) {
        *dst = match *src {
            OutCol::Root(r) => roots[r],
            OutCol::Deflated(s) => defl[s],
        };
    }
}

/// The roots among the output columns `srcs` of a tile, consecutive because the
/// output order is a merge.
pub(crate) fn root_range(srcs: &[OutCol]) -> Option<Range<usize>> {
    let mut rr: Option<Range<usize>> = None;
    for s in srcs {
        if let OutCol::Root(r) = *s {
            rr = Some(match rr {
                None => r..r + 1,
                Some(x) => x.start..r + 1,
            });
        }
    }
    rr
}
