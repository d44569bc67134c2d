//! The bidiagonal SVD with vectors by divide and conquer for the larger
//! matrices of the GEBRD route: a serial walk of the pieces of
//! [`crate::linalg::bidiagonal::bdsdc`] (Gu & Eisenstat 1995; LAPACK `dbdsdc`), whose
//! merges are GEMMs, instead of bidiagonal QR, whose `~ 12 n^3` rotation
//! flops run at a fraction of GEMM speed. The caller then multiplies the
//! bidiagonal's vectors into `Q` and `P` (two more GEMMs, LAPACK `dgesdd`'s
//! order).

use crate::linalg::bidiagonal::bdsdc::{
    merge::pow2_at_least, merge_node, solve_leaf, BdNode, BdTree, BdsdcParams,
};
use crate::{Error, Result, Scalar};
use faer::reborrow::*;
use faer::MatMut;

/// `B = U diag(s) V^T` for the upper bidiagonal `(d, e)` (`n`, `n - 1`): on
/// exit `d` holds `s` descending, `u` and `v` (`n x n`, overwritten) the
/// vectors. `work` is scratch of `n` entries.
///
/// # Errors
/// [`Error::NoConvergence`] from a leaf's QR or a merge's root finder, or when
/// undoing the scaling overflows.
pub(super) fn bd_dc<T: Scalar>(
    d: &mut [T],
    e: &[T],
    mut u: MatMut<'_, T>,
    mut v: MatMut<'_, T>,
    work: &mut [T],
    params: &BdsdcParams,
) -> Result<()> {
    let n = d.len();
    let anrm = d.iter().chain(e).fold(T::zero(), |m, x| m.max(x.abs()));
    if anrm == T::zero() {
        set_identity(u.rb_mut());
        set_identity(v.rb_mut());
        return Ok(());
    }
    // A power of two, so exact; the merges expect entries of size about one.
    let scale = pow2_at_least(anrm);
    let es = &mut work[..n.saturating_sub(1)];
    for (x, &y) in es.iter_mut().zip(e) {
        *x = y / scale;
    }
    let alphas: Vec<T> = d.iter().map(|&x| x / scale).collect();
    d.copy_from_slice(&alphas);
    u.fill(T::zero());
    v.fill(T::zero());
    let tree = BdTree::new(n, params.leaf_size);
    for node in &tree.nodes {
        let (r, c) = (node.rows(), node.cols());
        let ub = u.rb_mut().submatrix_mut(r.start, r.start, r.len(), r.len());
        let vb = v.rb_mut().submatrix_mut(c.start, c.start, c.len(), c.len());
        match *node {
            BdNode::Leaf { begin, .. } => {
                solve_leaf(&mut d[r.clone()], &es[begin..c.end - 1], ub, vb)?;
            }
            BdNode::Merge { begin, mid, .. } => {
                let (alpha, beta) = (alphas[mid], es[mid]);
                merge_node(
                    &mut d[r.clone()],
                    alpha,
                    beta,
                    ub,
                    vb,
                    mid - begin,
                    params.col_tile,
                )?;
            }
        }
    }
    // The root leaves the values ascending: reverse, and undo the scaling.
    d.reverse();
    for j in 0..n / 2 {
        swap_cols(u.rb_mut(), j, n - 1 - j);
        swap_cols(v.rb_mut(), j, n - 1 - j);
    }
    for (i, x) in d.iter_mut().enumerate() {
        *x *= scale;
        if !x.is_finite() {
            return Err(Error::NoConvergence {
                stage: "bdsdc",
                detail: format!("singular value {i} overflowed when the scaling was undone"),
            });
        }
    }
    Ok(())
}

fn set_identity<T: Scalar>(mut m: MatMut<'_, T>) {
    m.fill(T::zero());
    for i in 0..m.nrows().min(m.ncols()) {
        m[(i, i)] = T::one();
    }
}

fn swap_cols<T: Scalar>(m: MatMut<'_, T>, i: usize, j: usize) {
    let (mut x, mut y) = m.two_cols_mut(i, j);
    for k in 0..x.nrows() {
        std::mem::swap(&mut x[k], &mut y[k]);
    }
}
