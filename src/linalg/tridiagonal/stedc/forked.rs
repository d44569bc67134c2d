//! The divide and conquer of the one-stage path with its top level forked
//! over the runtime's threads: the two halves of the root run as two tasks,
//! and the root merge splits its secular roots and its eigenvector product
//! (the `dlaed3` GEMMs, most of the flops: the root merge alone does about
//! three quarters of them) in two column halves. Only the top level forks: a
//! run nested in a task body would start another set of threads.
//!
//! The split points depend only on the order and the tree, never on the
//! number of threads, and every piece writes its own rows/columns with the
//! same sequential kernels, so results are bitwise identical whatever the
//! runtime (a one-thread runtime, or none, runs the same pieces in turn).
//! The tree is [`super::DcTree`]'s halving (cut at `begin + len / 2`).

use super::serial::{for_each_scaled_block, merge_node, sort_eigenpairs};
use super::{solve_leaf, solve_leaf_pair, DcParams, MergeProblem};
use crate::error::Error;
use crate::linalg::par::Fork;
use crate::scalar::Scalar;
use faer::reborrow::ReborrowMut;
use faer::{Mat, MatMut};

/// Levels of the tree whose children run concurrently and whose merges are
/// split in two (the root only; see the module docs).
pub const FORK_DEPTH: usize = 1;

/// Eigenvectors of one scaled unreduced block (as
/// [`super::serial::tridiag_eigvecs`]): on exit `d` holds the eigenvalues
/// ascending and the returned `m x m` matrix the eigenvectors. The top
/// [`FORK_DEPTH`] level runs on `par` (see the module docs); below it the sequential pieces with `params.col_tile`.
///
/// # Errors
/// As [`super::serial::tridiag_eigvecs`].
pub fn tridiag_eigvecs_forked<T: Scalar>(
    d: &mut [T],
    e: &[T],
    params: &DcParams,
    par: Fork<'_>,
) -> Result<Mat<T>, Error> {
    let m = d.len();
    if m == 0 || e.len() + 1 != m {
        return Err(Error::Shape(format!(
            "tridiag_eigvecs_forked: d {m}, e {}",
            e.len()
        )));
    }
    let mut q = Mat::<T>::zeros(m, m);
    tridiag_eigvecs_forked_into(d, e, params, par, q.as_mut())?;
    Ok(q)
}

/// [`tridiag_eigvecs_forked`] into `q` (`m x m`, any contents: every entry is
/// written), without a matrix of its own.
fn tridiag_eigvecs_forked_into<T: Scalar>(
    d: &mut [T],
    e: &[T],
    params: &DcParams,
    par: Fork<'_>,
    q: MatMut<'_, T>,
) -> Result<(), Error> {
    let p = Params {
        leaf: params.leaf_size.max(1),
        col_tile: params.col_tile,
    };
    node(d, e, T::zero(), T::zero(), q, &p, 0, par)
}

struct Params {
    leaf: usize,
    col_tile: usize,
}

/// The subtree on `d` (its entries), `e` (its `len - 1` inner off-diagonals),
/// the tears at its edges and its diagonal block `q`.
#[allow(clippy::too_many_arguments)]
fn node<T: Scalar>(
    d: &mut [T],
    e: &[T],
    before: T,
    after: T,
    mut q: MatMut<'_, T>,
    p: &Params,
    depth: usize,
    par: Fork<'_>,
) -> Result<(), Error> {
    let len = d.len();
    if len <= p.leaf {
        return solve_leaf(d, &e[..len - 1], before, after, q);
    }
    let cut = len / 2;
    let beta = e[cut - 1];
    let forked = depth < FORK_DEPTH;
    {
        let (dl, dr) = d.split_at_mut(cut);
        let (el, er) = (&e[..cut - 1], &e[cut..]);
        let (ql, _, _, qr) = q.rb_mut().split_at_mut(cut, cut);
        let leaves = cut <= p.leaf && len - cut <= p.leaf;
        let one_thread = par.threads() <= 1;
        if leaves && (!forked || one_thread) {
            // Two leaves solved in turn on this thread: their QL chases side
            // by side instead (bitwise the same results).
            solve_leaf_pair((dl, el, before, beta, ql), (dr, er, beta, after, qr))?;
        } else {
            let left = move || node(dl, el, before, beta, ql, p, depth + 1, par);
            let right = move || node(dr, er, beta, after, qr, p, depth + 1, par);
            if forked {
                par.join(left, right)?;
            } else {
                left()?;
                right()?;
            }
        }
    }
    if forked {
        merge_split(d, q, cut, beta, par)
    } else {
        merge_node(d, q, cut, beta, p.col_tile)
    }
}

/// One merge with its roots and its eigenvector product each split in two
/// halves (fixed: `k / 2` roots, `n / 2` columns) run by [`Fork::join`].
fn merge_split<T: Scalar>(
    d: &mut [T],
    mut q: MatMut<'_, T>,
    n1: usize,
    beta: T,
    par: Fork<'_>,
) -> Result<(), Error> {
    let n = d.len();
    let mut work = vec![T::zero(); MergeProblem::<T>::workspace_len(n, n1)];
    let mut prob = MergeProblem::new(d, q.rb_mut(), n1, beta, &mut work)?;
    let k = prob.k();
    in_halves(k, par, |r| prob.solve_roots_range(r))?;
    prob.order_output(q.rb_mut())?;
    in_halves(k, par, |r| prob.lowner_range(r))?;
    let half = n / 2;
    {
        let (pr, work) = (&prob, &work[..]);
        let (qa, qb) = q.split_at_col_mut(half);
        par.join(
            move || pr.apply_cols(0..half, work, qa),
            move || pr.apply_cols(half..n, work, qb),
        )?;
    }
    prob.eigenvalues_into(d);
    Ok(())
}

/// `step` on the fixed halves `0..k / 2` and `k / 2..k` run by [`Fork::join`]: a
/// merge's roots (step 2) or its `z-hat` (step 4), whose results do not
/// depend on how `0..k` is split or run.
pub(super) fn in_halves(
    k: usize,
    par: Fork<'_>,
    step: impl Fn(std::ops::Range<usize>) -> Result<(), Error> + Sync,
) -> Result<(), Error> {
    let step = &step;
    par.join(move || step(0..k / 2), move || step(k / 2..k))
}

/// Eigenvalues (ascending, in `d`) and eigenvectors of the symmetric
/// tridiagonal `(d, e)`, LAPACK `dstedc` with `compz = 'I'`: split into
/// unreduced blocks, each scaled by its max-norm and solved by implicit QL/QR
/// when it has at most `leaf_size` rows, by divide and conquer otherwise
/// ([`tridiag_eigvecs_forked`] on `par`); its vectors go straight into the
/// block's diagonal block of the identity (no product with the identity).
/// `e` is overwritten.
///
/// # Errors
/// [`Error::NoConvergence`] if a QL/QR leaf or a secular root fails.
pub fn stedc_identity<T: Scalar>(
    d: &mut [T],
    e: &mut [T],
    leaf_size: usize,
    par: Fork<'_>,
) -> Result<Mat<T>, Error> {
    let n = d.len();
    if e.len() != n.saturating_sub(1) {
        return Err(Error::Shape(format!(
            "stedc_identity: d {n}, e {}",
            e.len()
        )));
    }
    let mut z = Mat::<T>::identity(n, n);
    let params = DcParams {
        leaf_size: leaf_size.max(1),
        ..DcParams::default()
    };
    let several = for_each_scaled_block(d, e, |s, d, e| {
        let m = d.len();
        let zb = z.as_mut().submatrix_mut(s, s, m, m);
        if m <= params.leaf_size {
            crate::linalg::tridiagonal::steqr::steqr(d, e, zb)
        } else {
            // Straight into the block (its off-diagonal zeros of the identity
            // are overwritten by the merges): no second n x n matrix.
            tridiag_eigvecs_forked_into(d, e, &params, par, zb)
        }
    })?;
    if several {
        sort_eigenpairs(d, z.as_mut());
    }
    Ok(z)
}

#[cfg(test)]
mod tests;
