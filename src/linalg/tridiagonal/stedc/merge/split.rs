//! Step 1 of a merge whose two halves are stored apart and whose output does
//! not stay in their storage: the root of an out-of-core divide and conquer
//! (`pipeline::evd::out_of_core`), where the `n x n` block of [`MergeProblem::new`]
//! is never allocated.
//!
//! The deflation decisions depend only on the poles and on `z`, not on the
//! eigenvectors, so they are taken first with the rotations recorded
//! ([`deflate`](crate::linalg::tridiagonal::stedc::deflation::deflate) with a recording callback); then the rotations are replayed on
//! materialised full columns (the missing half as the explicit zeros
//! [`MergeProblem::new`] fills in, so every rotation does the same operations
//! on the same values: the same bits). In `dlaed2`'s scan a rotation pairs the
//! previous kept column with the current one and deflates the former, so at
//! most one rotated column is live at a time: each column, once final, goes
//! straight to its place, the kept ones' halves into the type-ordered
//! workspace (as [`MergeProblem::new`] gathers them) and the deflated ones, as
//! full columns, to the caller's sink, slot `s` for the `s`-th smallest
//! deflated value ([`OutCol::Deflated`]`(s)` of the output order).

use super::{MergeProblem, OutCol, Poles};
use crate::error::Error;
use crate::linalg::blas::lasr::rotate_pair;
use crate::scalar::Scalar;
use faer::MatRef;

impl<T: Scalar> MergeProblem<T> {
    /// Step 1 (see [`MergeProblem::new`]) for halves stored apart: `q1`
    /// (`n1 x n1`) and `q2` (`n2 x n2`) hold the eigenvectors of the left and
    /// right halves, `d` their eigenvalues (left then right, each ascending),
    /// `beta` the torn off-diagonal entry. Neither half is modified.
    ///
    /// Each deflated eigenvector is handed to `sink(s, column)` (length
    /// `n`, `s` its rank among the deflated values, ascending); the halves of
    /// the kept ones are returned as the workspace that
    /// [`MergeProblem::apply_cols`] reads (`n1 ntop + n2 nbot` words). The
    /// eigenvalues, roots, vectors and their bits are those of
    /// [`MergeProblem::new`] on `blockdiag(q1, q2)`. Use
    /// [`MergeProblem::order_only`] for step 3.
    ///
    /// Errors: [`Error::Shape`] for inconsistent sizes; what `sink` returns.
    pub fn new_split(
        d: &[T],
        q1: MatRef<'_, T>,
        q2: MatRef<'_, T>,
        beta: T,
        mut sink: impl FnMut(usize, &[T]) -> Result<(), Error>,
    ) -> Result<(Self, Vec<T>), Error> {
        let (n1, n2) = (q1.nrows(), q2.nrows());
        let n = n1 + n2;
        if d.len() != n || q1.ncols() != n1 || q2.ncols() != n2 || n1 == 0 || n2 == 0 {
            return Err(Error::Shape(format!(
                "MergeProblem::new_split: d has {} entries, halves {}x{} and {}x{}",
                d.len(),
                q1.nrows(),
                q1.ncols(),
                q2.nrows(),
                q2.ncols()
            )));
        }
        let zero = T::zero();
        // z = (last row of Q1, sign(beta) * first row of Q2), as `new`.
        let mut z = vec![zero; n];
        for j in 0..n1 {
            z[j] = q1[(n1 - 1, j)];
        }
        for j in n1..n {
            z[j] = if beta < zero {
                -q2[(0, j - n1)]
            } else {
                q2[(0, j - n1)]
            };
        }
        // The decisions, with the rotations (on columns of blockdiag(q1, q2))
        // recorded in order.
        let mut rotations: Vec<(usize, usize, T, T)> = Vec::new();
        let mut dec =
            Poles::new(d, z, n1, beta).decide(|a, b, cs, sn| rotations.push((a, b, cs, sn)));
        let (top_cols, bot_cols) = (&dec.top_cols, &dec.bot_cols);

        // Where each column of blockdiag(q1, q2) ends up.
        const NONE: usize = usize::MAX;
        let mut defl_slot = vec![NONE; n];
        for (s, &c) in dec.defl_cols.iter().enumerate() {
            defl_slot[c] = s;
        }
        let (mut top_at, mut bot_at) = (vec![NONE; n], vec![NONE; n]);
        for (i, &c) in top_cols.iter().enumerate() {
            top_at[c] = i;
        }
        for (i, &c) in bot_cols.iter().enumerate() {
            bot_at[c] = i;
        }
        let mut work = vec![zero; n1 * top_cols.len() + n2 * bot_cols.len()];
        let bot_base = n1 * top_cols.len();
        let full = |c: usize, out: &mut Vec<T>| {
            out.clear();
            out.resize(n, zero);
            if c < n1 {
                out[..n1].copy_from_slice(col(q1, c));
            } else {
                out[n1..].copy_from_slice(col(q2, c - n1));
            }
        };
        // A final column to its place: the sink (deflated) or its halves
        // into the workspace (kept).
        let mut place = |c: usize, v: &[T], work: &mut [T]| -> Result<(), Error> {
            if defl_slot[c] != NONE {
                return sink(defl_slot[c], v);
            }
            if top_at[c] != NONE {
                let at = top_at[c] * n1;
                work[at..at + n1].copy_from_slice(&v[..n1]);
            }
            if bot_at[c] != NONE {
                let at = bot_base + bot_at[c] * n2;
                work[at..at + n2].copy_from_slice(&v[n1..]);
            }
            Ok(())
        };

        // Replay the rotations; a column is final after its last one.
        let mut last_use = vec![NONE; n];
        for (i, &(a, b, _, _)) in rotations.iter().enumerate() {
            last_use[a] = i;
            last_use[b] = i;
        }
        let mut live: Vec<(usize, Vec<T>)> = Vec::new();
        let take = |c: usize, live: &mut Vec<(usize, Vec<T>)>| -> Vec<T> {
            match live.iter().position(|(lc, _)| *lc == c) {
                Some(i) => live.swap_remove(i).1,
                None => {
                    let mut v = Vec::with_capacity(n);
                    full(c, &mut v);
                    v
                }
            }
        };
        for (i, &(a, b, cs, sn)) in rotations.iter().enumerate() {
            let mut x = take(a, &mut live);
            let mut y = take(b, &mut live);
            rotate_pair(&mut x, &mut y, cs, sn);
            for (c, v) in [(a, x), (b, y)] {
                if last_use[c] == i {
                    place(c, &v, &mut work)?;
                } else {
                    live.push((c, v));
                }
            }
        }
        debug_assert!(live.is_empty(), "every rotated column is placed");
        // The columns no rotation touched: kept halves copied straight from
        // their half, deflated ones materialised.
        let mut v = Vec::with_capacity(n);
        for c in 0..n {
            if last_use[c] != NONE {
                continue;
            }
            if defl_slot[c] != NONE {
                full(c, &mut v);
                place(c, &v, &mut work)?;
            } else if c < n1 {
                if top_at[c] != NONE {
                    let at = top_at[c] * n1;
                    work[at..at + n1].copy_from_slice(col(q1, c));
                }
            } else if bot_at[c] != NONE {
                let at = bot_base + bot_at[c] * n2;
                work[at..at + n2].copy_from_slice(col(q2, c - n1));
            }
        }

        // Deflated vector s went to the sink's slot s.
        dec.defl_cols = (0..dec.ddefl.len()).collect();
        Ok((Self::decided(n1, dec), work))
    }

    /// Step 3 of a merge built by [`MergeProblem::new_split`]: gathers the
    /// roots of step 2 (an error unless they cover `0..k` exactly once) and
    /// fixes the output order ([`MergeProblem::out_cols`]: output column `c`
    /// is root `r`, formed by [`MergeProblem::apply_cols`], or the deflated
    /// vector the sink received as slot `s`). Nothing is moved.
    pub fn order_only(&mut self) -> Result<(), Error> {
        self.fix_order("MergeProblem::order_only")
    }

    /// Number of deflated eigenvectors (the slots `0..` handed to the sink of
    /// [`MergeProblem::new_split`]).
    pub fn deflated(&self) -> usize {
        self.ddefl.len()
    }

    /// The output columns among `cols` that are deflated, with their slots
    /// (valid after step 3).
    pub fn deflated_in(&self, cols: std::ops::Range<usize>) -> Vec<(usize, usize)> {
        self.out[cols.clone()]
            .iter()
            .zip(cols)
            .filter_map(|(src, c)| match *src {
                OutCol::Deflated(s) => Some((c, s)),
                OutCol::Root(_) => None,
            })
            .collect()
    }
}

/// Column `j` of `q` as a slice (the halves are column-major matrices).
fn col<'a, T>(q: MatRef<'a, T>, j: usize) -> &'a [T] {
    q.col(j)
        .try_as_col_major()
        .expect("a half has unit row stride")
        .as_slice()
}

#[cfg(test)]
mod tests {
    use crate::linalg::tridiagonal::stedc::{solve_leaf, MergeProblem};
    use faer::Mat;

    /// Eigenvectors of two random torn halves and their eigenvalues; with
    /// `clustered`, the right half's eigenvalues are set equal to those of the
    /// left half (the merge takes any orthogonal halves and values), so
    /// `dlaed2` rotates top and bottom columns together.
    fn halves(n1: usize, n2: usize, seed: u64, clustered: bool) -> (Vec<T64>, Mat<f64>, T64) {
        let mut rng = crate::gallery::Rng::new(seed);
        let n = n1 + n2;
        let mut d: Vec<f64> = (0..n).map(|_| rng.uniform_in(-1.0, 1.0)).collect();
        let e: Vec<f64> = (0..n - 1)
            .map(|_| rng.uniform_in(-1.0, 1.0) * 0.5)
            .collect();
        let beta = e[n1 - 1];
        let mut q = Mat::<f64>::zeros(n, n);
        let (dl, dr) = d.split_at_mut(n1);
        solve_leaf(
            dl,
            &e[..n1 - 1],
            0.0,
            beta,
            q.as_mut().submatrix_mut(0, 0, n1, n1),
        )
        .unwrap();
        solve_leaf(
            dr,
            &e[n1..],
            beta,
            0.0,
            q.as_mut().submatrix_mut(n1, n1, n2, n2),
        )
        .unwrap();
        if clustered {
            for i in 0..n2 {
                // Ascending: the left values, then copies of the largest one.
                d[n1 + i] = d[i.min(n1 - 1)];
            }
        }
        (d, q, beta)
    }
    type T64 = f64;

    #[test]
    fn split_merge_is_bitwise_the_in_place_merge() {
        for &(n1, n2, clustered) in &[
            (5, 6, false),
            (17, 16, false),
            (40, 41, true),
            (64, 64, true),
            (3, 90, true),
        ] {
            let n = n1 + n2;
            let (d, q, beta) = halves(n1, n2, (n1 * 131 + n2) as u64, clustered);
            // In place, as the in-memory tree does it.
            let mut qa = q.clone();
            let mut work = vec![0.0; MergeProblem::<f64>::workspace_len(n, n1)];
            let mut a = MergeProblem::new(&d, qa.as_mut(), n1, beta, &mut work).unwrap();
            a.solve_roots_range(0..a.k()).unwrap();
            a.order_output(qa.as_mut()).unwrap();
            a.lowner_range(0..a.k()).unwrap();
            a.apply_cols(0..n, &work, qa.as_mut()).unwrap();
            // Apart, deflated vectors to a sink.
            let (q1, q2) = (
                q.as_ref().submatrix(0, 0, n1, n1),
                q.as_ref().submatrix(n1, n1, n2, n2),
            );
            let mut defl = vec![Vec::new(); n];
            let (mut b, wb) = MergeProblem::new_split(
                &d,
                q1.to_owned().as_ref(),
                q2.to_owned().as_ref(),
                beta,
                |s, v| {
                    defl[s] = v.to_vec();
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!((a.k(), a.deflated()), (b.k(), b.deflated()));
            if clustered {
                // Rotations across the halves leave deflated vectors nonzero
                // in both halves: the replay is exercised.
                let dense = (0..b.deflated()).any(|s| {
                    defl[s][..n1].iter().any(|&x| x != 0.0)
                        && defl[s][n1..].iter().any(|&x| x != 0.0)
                });
                assert!(dense, "the clustered case must rotate across the halves");
            }
            b.solve_roots_range(0..b.k()).unwrap();
            b.order_only().unwrap();
            b.lowner_range(0..b.k()).unwrap();
            let mut qb = Mat::<f64>::zeros(n, n);
            for (c, s) in b.deflated_in(0..n) {
                qb.as_mut()
                    .col_mut(c)
                    .iter_mut()
                    .zip(&defl[s])
                    .for_each(|(o, &x)| *o = x);
            }
            b.apply_cols(0..n, &wb, qb.as_mut()).unwrap();
            for j in 0..n {
                for i in 0..n {
                    assert_eq!(
                        qa[(i, j)].to_bits(),
                        qb[(i, j)].to_bits(),
                        "({i}, {j}) of {n1}+{n2}"
                    );
                }
            }
            let (mut va, mut vb) = (vec![0.0; n], vec![0.0; n]);
            a.eigenvalues_into(&mut va);
            b.eigenvalues_into(&mut vb);
            assert_eq!(va, vb);
        }
    }
}
