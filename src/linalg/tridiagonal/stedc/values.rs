//! All eigenvalues of a symmetric tridiagonal matrix, no vectors, by divide
//! and conquer: each subproblem returns its eigenvalues and only the first and
//! last rows of its eigenvector matrix, the two rows its parent's merge reads
//! ([`MergeProblem::new_rows`]; LAPACK's singular-value D&C keeps the same
//! two rows, `VF` and `VL` of `dlasd6`). A merge of order `m` then costs
//! `O(m^2)` vectorised work (the secular equation, the Löwner step, two dot
//! products per root) instead of the `O(m^3)` of the eigenvector product, and
//! the root needs neither the Löwner step nor the rows: the whole solve is
//! `O(n^2)`, as `dsterf`'s QL iteration, but without its chain of dependent
//! divisions, and the root's halves and roots split over two threads.
//!
//! The leaves (at most `leaf_size` rows) are implicit QL/QR with the
//! rotations applied to the two rows only ([`crate::linalg::tridiagonal::steqr::steqr`] on
//! a `2 x m` matrix); an unreduced block of at most `leaf_size` rows, and so
//! every small matrix, is solved by [`crate::linalg::tridiagonal::sterf::sterf`]. Splitting
//! into unreduced blocks and their scaling are `dstedc`'s
//! ([`super::serial::for_each_scaled_block`]). Every value is computed by the
//! same operations whatever the runtime: the results do not depend on the
//! thread count.

use super::forked::{in_halves, FORK_DEPTH};
use super::serial::for_each_scaled_block;
use super::MergeProblem;
use crate::error::Error;
use crate::linalg::par::Fork;
use crate::linalg::tridiagonal::sterf::{check_tridiag, sterf_with_max_iter};
use crate::scalar::Scalar;
use faer::Mat;

/// Computes all eigenvalues of the symmetric tridiagonal matrix with diagonal
/// `d` (length `n`) and off-diagonal `e` (length `n - 1`), in place, sorted
/// ascending in `d`, by divide and conquer with leaves of at most `leaf_size`
/// rows (module docs); the top of the tree runs on `par` when given. `e` is
/// overwritten (workspace).
///
/// # Errors
/// As [`crate::linalg::tridiagonal::sterf::sterf`]: [`Error::Shape`], [`Error::NonFinite`]
/// (positions of the dense matrix), [`Error::NoConvergence`] when a leaf's
/// QL/QR or a secular root does not converge; the runtime's own errors.
pub fn stedc_values<T: Scalar>(
    d: &mut [T],
    e: &mut [T],
    leaf_size: usize,
    par: Fork<'_>,
) -> Result<(), Error> {
    check_tridiag("stedc_values", d, e)?;
    let leaf = leaf_size.max(2);
    for_each_scaled_block(d, e, |_, d, e| {
        let m = d.len();
        if m <= leaf {
            return sterf_with_max_iter(d, e, 30 * m);
        }
        node(d, e, T::zero(), T::zero(), None, leaf, 0, par)
    })?;
    // Blocks, skipped zero blocks and single rows are each in place.
    sort_ascending(d);
    Ok(())
}

/// Sorts eigenvalues ascending (finite values: the order is total).
fn sort_ascending<T: Scalar>(d: &mut [T]) {
    d.sort_unstable_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
}

/// [`stedc_values`] cut at its root for a task graph: the two halves of the
/// tree ([`Half::solve`], independent) and the root merge
/// ([`RootMerge::merge`]), with bitwise the results of [`stedc_values`]
/// (the same operations in the same order on each value).
pub enum RootSplit<T> {
    /// Solved whole at once: several unreduced blocks, a zero matrix, or one
    /// block of at most `leaf_size` rows (no tree to cut). The eigenvalues,
    /// ascending.
    Solved(Vec<T>),
    /// One unreduced block with a tree: its halves (rows `0..cut` and
    /// `cut..n`) and their merge.
    Halves([Half<T>; 2], RootMerge<T>),
}

/// One half of the tree below the root of [`RootSplit::Halves`]: its part of
/// the scaled tridiagonal and, once [`Half::solve`] ran, its eigenvalues and
/// the first and last rows of its eigenvectors.
pub struct Half<T> {
    d: Vec<T>,
    e: Vec<T>,
    before: T,
    after: T,
    first: Vec<T>,
    last: Vec<T>,
    leaf: usize,
}

/// The root merge of [`RootSplit::Halves`]: the torn entry and the block's
/// scale.
pub struct RootMerge<T> {
    beta: T,
    norm: T,
}

impl<T: Scalar> Half<T> {
    /// Solves the half (on this thread).
    ///
    /// # Errors
    /// As [`stedc_values`].
    pub fn solve(&mut self) -> Result<(), Error> {
        let rows = Some((&mut self.first[..], &mut self.last[..]));
        node(
            &mut self.d,
            &self.e,
            self.before,
            self.after,
            rows,
            self.leaf,
            1,
            Fork::Seq,
        )
    }
}

impl<T: Scalar> RootSplit<T> {
    /// Checks `(d, e)` as [`stedc_values`] and cuts its tree at the root, or
    /// solves it whole when there is no single tree to cut.
    ///
    /// # Errors
    /// As [`stedc_values`].
    pub fn new(mut d: Vec<T>, mut e: Vec<T>, leaf_size: usize) -> Result<Self, Error> {
        check_tridiag("stedc_values", &d, &e)?;
        let leaf = leaf_size.max(2);
        let n = d.len();
        if n <= leaf || super::serial::split_blocks(&d, &e).len() != 1 {
            stedc_values(&mut d, &mut e, leaf, Fork::Seq)?;
            return Ok(RootSplit::Solved(d));
        }
        let norm = super::serial::scale_block(&mut d, &mut e);
        if norm == T::zero() {
            return Ok(RootSplit::Solved(d));
        }
        let cut = n / 2;
        let beta = e[cut - 1];
        let half = |d: &[T], e: &[T], before: T, after: T| Half {
            d: d.to_vec(),
            e: e.to_vec(),
            before,
            after,
            first: vec![T::zero(); d.len()],
            last: vec![T::zero(); d.len()],
            leaf,
        };
        let zero = T::zero();
        Ok(RootSplit::Halves(
            [
                half(&d[..cut], &e[..cut - 1], zero, beta),
                half(&d[cut..], &e[cut..], beta, zero),
            ],
            RootMerge { beta, norm },
        ))
    }
}

impl<T: Scalar> RootMerge<T> {
    /// The eigenvalues, ascending, from the solved halves.
    ///
    /// # Errors
    /// As [`stedc_values`]; [`Error::Shape`] for halves of another split.
    pub fn merge(self, [left, right]: [Half<T>; 2]) -> Result<Vec<T>, Error> {
        let cut = left.d.len();
        let mut d = [left.d, right.d].concat();
        let first = [left.first, right.first].concat();
        let last = [left.last, right.last].concat();
        merge_halves(&mut d, &first, &last, cut, self.beta, None, Fork::Seq)?;
        super::serial::unscale_block(&mut d, self.norm);
        sort_ascending(&mut d);
        Ok(d)
    }
}

/// The first and last rows of a subproblem's eigenvector matrix.
type Rows<'a, T> = (&'a mut [T], &'a mut [T]);

/// The subtree on `d`, `e` (its `len - 1` inner off-diagonals) with the tears
/// at its edges: its eigenvalues ascending into `d` and, unless it is the
/// root (`rows` is `None`), the two rows of its eigenvectors into `rows`.
#[allow(clippy::too_many_arguments)]
fn node<T: Scalar>(
    d: &mut [T],
    e: &[T],
    before: T,
    after: T,
    rows: Option<Rows<'_, T>>,
    leaf: usize,
    depth: usize,
    par: Fork<'_>,
) -> Result<(), Error> {
    let len = d.len();
    if len <= leaf {
        return leaf_rows(d, &e[..len - 1], before, after, rows);
    }
    let cut = len / 2;
    let beta = e[cut - 1];
    let par = if depth < FORK_DEPTH { par } else { Fork::Seq };
    let (mut first, mut last) = (vec![T::zero(); len], vec![T::zero(); len]);
    {
        let (dl, dr) = d.split_at_mut(cut);
        let (el, er) = (&e[..cut - 1], &e[cut..]);
        let (fl, fr) = first.split_at_mut(cut);
        let (ll, lr) = last.split_at_mut(cut);
        par.join(
            move || node(dl, el, before, beta, Some((fl, ll)), leaf, depth + 1, par),
            move || node(dr, er, beta, after, Some((fr, lr)), leaf, depth + 1, par),
        )?;
    }
    merge_halves(d, &first, &last, cut, beta, rows, par)
}

/// The merge of two solved halves (`d`, `first`, `last`: the left half's
/// `cut` entries, then the right half's): the merged eigenvalues ascending
/// into `d` and, unless it is the root (`rows` is `None`: no Löwner step,
/// no rows), the two rows of the merged eigenvectors into `rows`. Its steps
/// on two fixed halves run on `par`.
fn merge_halves<T: Scalar>(
    d: &mut [T],
    first: &[T],
    last: &[T],
    cut: usize,
    beta: T,
    rows: Option<Rows<'_, T>>,
    par: Fork<'_>,
) -> Result<(), Error> {
    let len = d.len();
    let (mut prob, edges) = MergeProblem::new_rows(d, first, last, cut, beta)?;
    let k = prob.k();
    in_halves(k, par, |r| prob.solve_roots_range(r))?;
    prob.order_only()?;
    if let Some((f, l)) = rows {
        let p = &prob;
        in_halves(k, par, |r| p.lowner_range(r))?;
        let half = len / 2;
        let (fa, fb) = f.split_at_mut(half);
        let (la, lb) = l.split_at_mut(half);
        let edges = &edges;
        par.join(
            move || p.rows_into(edges, 0..half, fa, la),
            move || p.rows_into(edges, half..len, fb, lb),
        )?;
    }
    prob.eigenvalues_into(d);
    Ok(())
}

/// A leaf: subtracts the tears' magnitudes from its first and last diagonal
/// entries (`dlaed0`'s rank-one tearing), then implicit QL/QR with the
/// rotations applied to the first and last rows of the identity.
fn leaf_rows<T: Scalar>(
    d: &mut [T],
    e: &[T],
    before: T,
    after: T,
    rows: Option<Rows<'_, T>>,
) -> Result<(), Error> {
    let m = d.len();
    d[0] -= before.abs();
    d[m - 1] -= after.abs();
    let mut e = e.to_vec();
    let Some((f, l)) = rows else {
        return sterf_with_max_iter(d, &mut e, 30 * m);
    };
    let mut z = Mat::<T>::zeros(2, m);
    z[(0, 0)] = T::one();
    z[(1, m - 1)] = T::one();
    crate::linalg::tridiagonal::steqr::steqr(d, &mut e, z.as_mut())?;
    for j in 0..m {
        f[j] = z[(0, j)];
        l[j] = z[(1, j)];
    }
    Ok(())
}

#[cfg(test)]
mod tests;
