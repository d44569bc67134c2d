//! A merge that carries only two rows of the eigenvector matrices: the first
//! and the last. They are all a parent merge reads from its children (`z` is
//! the last row of `Q1` beside the first row of `Q2`), so an eigenvalues-only
//! divide and conquer ([`crate::linalg::tridiagonal::stedc::values`]) needs nothing else,
//! and a merge costs `O(k^2)` with no matrix at all: the device of LAPACK's
//! singular-value D&C (`dlasd6` keeps `VF` and `VL`), here for the symmetric
//! tridiagonal.
//!
//! The rows are those of `blockdiag(Q1, Q2) U` exactly as [`MergeProblem::new`]
//! and [`MergeProblem::apply_cols`] would form them (same deflation, same
//! rotations on the same values, same normalised `u_r`), restricted to two
//! rows; only the final dot products are summed in another order than the
//! GEMM's.

use super::{root_vector, MergeProblem, OutCol, Poles};
use crate::error::Error;
use crate::linalg::blas::lasr::rotate_pair;
use crate::scalar::Scalar;
use std::ops::Range;

/// The first and last rows of `blockdiag(Q1, Q2)` after a merge's deflation
/// rotations, split as [`MergeProblem::rows_into`] reads them.
#[derive(Clone, Debug)]
pub struct EdgeRows<T> {
    /// First-row entry of each kept pole's column, in pole order (zero for a
    /// column of the bottom half only).
    first_kept: Vec<T>,
    /// Last-row entry of each kept pole's column, in pole order.
    last_kept: Vec<T>,
    /// First-row entry of each deflated column, by rank of its value.
    first_defl: Vec<T>,
    /// Last-row entry of each deflated column, by rank of its value.
    last_defl: Vec<T>,
}

impl<T: Scalar> MergeProblem<T> {
    /// Step 1 (see [`MergeProblem::new`]) from the eigenvalues `d` of the
    /// halves (left `n1`, then right, each ascending), the first and last rows
    /// `first`, `last` (length `n` each: the left half's rows, then the right
    /// half's) of their eigenvector matrices, and the torn entry `beta`.
    /// Returns the problem and the two rows of `blockdiag(Q1, Q2)` after the
    /// deflation rotations. Steps 2 and 3 are [`MergeProblem::solve_roots_range`]
    /// and [`MergeProblem::order_only`]; step 4, [`MergeProblem::lowner_range`],
    /// is needed before [`MergeProblem::rows_into`].
    ///
    /// Errors: [`Error::Shape`] for inconsistent lengths or `n1` not in `1..n`.
    pub fn new_rows(
        d: &[T],
        first: &[T],
        last: &[T],
        n1: usize,
        beta: T,
    ) -> Result<(Self, EdgeRows<T>), Error> {
        let n = d.len();
        if first.len() != n || last.len() != n || n1 == 0 || n1 >= n {
            return Err(Error::Shape(format!(
                "MergeProblem::new_rows: d has {n} entries, rows {} and {}, n1 = {n1}",
                first.len(),
                last.len()
            )));
        }
        let zero = T::zero();
        // z = (last row of Q1, sign(beta) * first row of Q2), as `new`.
        let z: Vec<T> = (0..n)
            .map(|j| match j < n1 {
                true => last[j],
                false if beta < zero => -first[j],
                false => first[j],
            })
            .collect();
        // Row 0 and row n - 1 of blockdiag(Q1, Q2): the other half's entries
        // are the zeros `new` writes, so every rotation sees the same values.
        let mut f: Vec<T> = (0..n)
            .map(|j| if j < n1 { first[j] } else { zero })
            .collect();
        let mut l: Vec<T> = (0..n)
            .map(|j| if j < n1 { zero } else { last[j] })
            .collect();
        let dec = Poles::new(d, z, n1, beta).decide(|a, b, cs, sn| {
            for row in [&mut f, &mut l] {
                let (mut x, mut y) = ([row[a]], [row[b]]);
                rotate_pair(&mut x, &mut y, cs, sn);
                (row[a], row[b]) = (x[0], y[0]);
            }
        });
        // The column of kept pole j, through its row in the type order.
        let ntop = dec.ctot[0] + dec.ctot[1];
        let column = |j: usize| {
            let t = dec.type_row[j];
            if t < ntop {
                dec.top_cols[t]
            } else {
                dec.bot_cols[t - dec.ctot[0]]
            }
        };
        let kept: Vec<usize> = (0..dec.secular.len()).map(column).collect();
        let rows = EdgeRows {
            first_kept: kept.iter().map(|&c| f[c]).collect(),
            last_kept: kept.iter().map(|&c| l[c]).collect(),
            first_defl: dec.defl_cols.iter().map(|&c| f[c]).collect(),
            last_defl: dec.defl_cols.iter().map(|&c| l[c]).collect(),
        };
        Ok((Self::decided(n1, dec), rows))
    }

    /// The first and last rows of the merged eigenvector matrix at output
    /// columns `cols` (after steps 3 and 4), into `first` and `last` (length
    /// `cols.len()` each): a deflated column's entries as rotated, a root's
    /// as the two rows of `blockdiag(Q1, Q2)` times its normalised `u_r`.
    /// Reads only `self`, so disjoint ranges may run concurrently, with the
    /// same bits however `0..n` is split.
    ///
    /// Errors: [`Error::InvalidArgument`] before steps 3 and 4, or for a
    /// range or lengths that do not fit; [`Error::NoConvergence`] for a
    /// degenerate eigenvector.
    pub fn rows_into(
        &self,
        rows: &EdgeRows<T>,
        cols: Range<usize>,
        first: &mut [T],
        last: &mut [T],
    ) -> Result<(), Error> {
        let k = self.k();
        let ready = self.out.len() == self.n
            && self.zhat_done.load(std::sync::atomic::Ordering::Acquire) == k;
        if !ready
            || cols.start > cols.end
            || cols.end > self.n
            || first.len() != cols.len()
            || last.len() != cols.len()
            || rows.first_kept.len() != k
        {
            return Err(Error::InvalidArgument(format!(
                "MergeProblem::rows_into: columns {cols:?} of {} into rows of {} and {} \
                 (steps 3 and 4 done: {ready})",
                self.n,
                first.len(),
                last.len()
            )));
        }
        let guard = self.zhat.read();
        let zh: Vec<T> = (0..k).map(|i| guard.mat()[(0, i)]).collect();
        let d = &self.secular.d[..k];
        let mut u = vec![T::zero(); k];
        for ((c, f), l) in cols.zip(first.iter_mut()).zip(last.iter_mut()) {
            (*f, *l) = match self.out[c] {
                OutCol::Deflated(s) => (rows.first_defl[s], rows.last_defl[s]),
                OutCol::Root(r) => {
                    let root = &self.roots[r];
                    let Some(scale) = root_vector(&zh, d, d[root.origin], root.tau, &mut u) else {
                        return Err(Error::NoConvergence {
                            stage: "dc merge",
                            detail: format!(
                                "eigenvector {r} of a {k}x{k} secular problem is degenerate"
                            ),
                        });
                    };
                    let (sf, sl) = dot2(&rows.first_kept, &rows.last_kept, &u);
                    (sf * scale, sl * scale)
                }
            };
        }
        Ok(())
    }
}

/// `(a . u, b . u)` in [`DOT_LANES`] interleaved partial sums, reduced in a
/// fixed order (vectorised; the bits depend only on the length).
fn dot2<T: Scalar>(a: &[T], b: &[T], u: &[T]) -> (T, T) {
    const L: usize = DOT_LANES;
    let n = u.len();
    let (a, b) = (&a[..n], &b[..n]);
    let body = n - n % L;
    let (mut sa, mut sb) = ([T::zero(); L], [T::zero(); L]);
    for k in (0..body).step_by(L) {
        for j in 0..L {
            sa[j] += a[k + j] * u[k + j];
            sb[j] += b[k + j] * u[k + j];
        }
    }
    for (j, k) in (body..n).enumerate() {
        sa[j] += a[k] * u[k];
        sb[j] += b[k] * u[k];
    }
    (
        crate::linalg::blas::simd::reduce_lanes(sa),
        crate::linalg::blas::simd::reduce_lanes(sb),
    )
}

/// Lanes of [`dot2`]'s partial sums.
const DOT_LANES: usize = 8;
