//! A sequential driver over the D&C pieces, LAPACK `dstedc` style (splitting
//! into unreduced blocks, scaling each by its norm): the tests' oracle for the
//! pipeline's task tree, which runs the same pieces without the splitting. Its
//! merge step ([`merge_node`]) and helpers also serve [`super::forked`], the
//! tridiagonal solver of the one-stage path (`pipeline::evd`'s direct solve
//! below `EvdOptions::one_stage_below`).

use super::*;
use faer::linalg::matmul::matmul;
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::{Accum, Mat, MatRef, Par};

/// Splits `T` into unreduced blocks where `|e_i| <= eps sqrt|d_i| sqrt|d_{i+1}|`
/// (`dstedc`'s criterion). The blocks are independent eigenproblems.
pub fn split_blocks<T: Scalar>(d: &[T], e: &[T]) -> Vec<Range<usize>> {
    let n = d.len();
    let mut blocks = Vec::new();
    let mut start = 0;
    for i in 0..n.saturating_sub(1) {
        let tiny = T::EPS * d[i].abs().sqrt() * d[i + 1].abs().sqrt();
        if e[i].abs() <= tiny {
            blocks.push(start..i + 1);
            start = i + 1;
        }
    }
    if n > 0 {
        blocks.push(start..n);
    }
    blocks
}

/// Divides a block by its max-norm `max(|d|, |e|)` (as `dstedc` does with `dlanst('M')`)
/// and returns that norm (`0` for a zero block, which is left unchanged).
pub fn scale_block<T: Scalar>(d: &mut [T], e: &mut [T]) -> T {
    let mut nrm = T::zero();
    for x in d.iter().chain(e.iter()) {
        nrm = nrm.max(x.abs());
    }
    if nrm > T::zero() {
        for x in d.iter_mut().chain(e.iter_mut()) {
            *x /= nrm;
        }
    }
    nrm
}

/// Undoes [`scale_block`] on the eigenvalues.
pub fn unscale_block<T: Scalar>(d: &mut [T], nrm: T) {
    if nrm > T::zero() {
        for x in d.iter_mut() {
            *x *= nrm;
        }
    }
}

/// Runs `solve(start, d_block, e_block)` on every unreduced block of `(d, e)`
/// with more than one row, each scaled to max-norm one around the call and
/// unscaled after it (`dstedc`'s outer loop); zero blocks are skipped. The
/// caller sorts the eigenpairs afterwards when there was more than one block,
/// which this returns.
pub fn for_each_scaled_block<T: Scalar>(
    d: &mut [T],
    e: &mut [T],
    mut solve: impl FnMut(usize, &mut [T], &mut [T]) -> Result<(), Error>,
) -> Result<bool, Error> {
    let blocks = split_blocks(d, e);
    for blk in &blocks {
        let (s, t) = (blk.start, blk.end);
        if t - s == 1 {
            continue;
        }
        let nrm = scale_block(&mut d[s..t], &mut e[s..t - 1]);
        if nrm == T::zero() {
            continue;
        }
        solve(s, &mut d[s..t], &mut e[s..t - 1])?;
        unscale_block(&mut d[s..t], nrm);
    }
    Ok(blocks.len() > 1)
}

/// Runs one merge node sequentially (all four steps with the tiling `col_tile`), on the
/// node's entries `d` and block `q`. Same operations as a task graph would run.
pub fn merge_node<T: Scalar>(
    d: &mut [T],
    mut q: MatMut<'_, T>,
    n1: usize,
    beta: T,
    col_tile: usize,
) -> Result<(), Error> {
    let n = d.len();
    let mut work = vec![T::zero(); MergeProblem::<T>::workspace_len(n, n1)];
    let mut p = MergeProblem::new(d, q.rb_mut(), n1, beta, &mut work)?;
    let k = p.k();
    solve_roots(&p, 0..k)?;
    p.lowner(q.rb_mut())?;
    for t in col_tiles(n, col_tile) {
        p.apply_cols(t.clone(), &work, q.rb_mut().subcols_mut(t.start, t.len()))?;
    }
    p.eigenvalues_into(d);
    Ok(())
}

/// Eigenvectors of one scaled unreduced block by the whole tree, sequentially: on exit
/// `d` holds the eigenvalues ascending and the returned `m x m` matrix the eigenvectors.
/// `e` (length `m - 1`) is not modified.
pub fn tridiag_eigvecs<T: Scalar>(
    d: &mut [T],
    e: &[T],
    params: &DcParams,
) -> Result<Mat<T>, Error> {
    let m = d.len();
    if e.len() + 1 != m.max(1) {
        return Err(Error::Shape(format!(
            "tridiag_eigvecs: d {m}, e {}",
            e.len()
        )));
    }
    let mut q = Mat::<T>::zeros(m, m);
    let tree = DcTree::new(m, params.leaf_size);
    for (idx, node) in tree.nodes.iter().enumerate() {
        match *node {
            DcNode::Leaf { begin, end } => {
                let (a, b) = tree.leaf_tears(idx, e);
                let len = end - begin;
                solve_leaf(
                    &mut d[begin..end],
                    &e[begin..end - 1],
                    a,
                    b,
                    q.as_mut().submatrix_mut(begin, begin, len, len),
                )?;
            }
            DcNode::Merge {
                begin, cut, end, ..
            } => {
                let len = end - begin;
                merge_node(
                    &mut d[begin..end],
                    q.as_mut().submatrix_mut(begin, begin, len, len),
                    cut - begin,
                    e[cut - 1],
                    params.col_tile,
                )?;
            }
        }
    }
    Ok(q)
}

/// Final product tile: `out := z_old * q[:, cols]` (`out` is `z_old.nrows() x cols.len()`).
pub fn multiply_z_cols<T: Scalar>(
    z_old: MatRef<'_, T>,
    q: MatRef<'_, T>,
    cols: Range<usize>,
    out: MatMut<'_, T>,
) {
    let len = cols.len();
    matmul(
        out,
        Accum::Replace,
        z_old,
        q.subcols(cols.start, len),
        T::one(),
        Par::Seq,
    );
}

/// Sorts the eigenvalues ascending (stable) and permutes the columns of `z` to match.
pub fn sort_eigenpairs<T: Scalar>(d: &mut [T], mut z: MatMut<'_, T>) {
    let n = d.len();
    let mut perm: Vec<usize> = (0..n).collect();
    perm.sort_by(|&a, &b| d[a].partial_cmp(&d[b]).unwrap_or(std::cmp::Ordering::Equal));
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return;
    }
    let dold = d.to_vec();
    let zold = z.rb().to_owned();
    for (j, &p) in perm.iter().enumerate() {
        d[j] = dold[p];
        z.rb_mut().col_mut(j).copy_from(zold.col(p));
    }
}

fn check_finite<T: Scalar>(d: &[T], e: &[T]) -> Result<(), Error> {
    for (i, x) in d.iter().enumerate() {
        if !x.is_finite() {
            return Err(Error::NonFinite {
                row: i,
                col: i,
                value: format!("{x}"),
            });
        }
    }
    for (i, x) in e.iter().enumerate() {
        if !x.is_finite() {
            return Err(Error::NonFinite {
                row: i + 1,
                col: i,
                value: format!("{x}"),
            });
        }
    }
    Ok(())
}

/// All eigenvalues and eigenvectors of the symmetric tridiagonal matrix with diagonal
/// `d` (length `n`) and off-diagonal `e` (length `n - 1`) by divide and conquer
/// (LAPACK `dstedc` with `compz = 'V'`).
///
/// On entry `z` (`m x n`, any `m`) typically holds the orthogonal matrix that reduced a
/// dense matrix to `T` (or the identity); on exit it is `z * Q` with `T = Q diag(d) Q^T`,
/// `d` ascending and the columns of `z` permuted to match. `e` is overwritten
/// (scaled). Runs the pieces documented in the module in a fixed order.
///
/// # Errors
/// [`Error::Shape`] for inconsistent lengths, [`Error::NonFinite`] for NaN/infinite
/// input, [`Error::NoConvergence`] if a leaf QL/QR or a secular equation root fails;
/// no partial result is ever reported as a success.
pub fn stedc<T: Scalar>(
    d: &mut [T],
    e: &mut [T],
    mut z: MatMut<'_, T>,
    params: &DcParams,
) -> Result<(), Error> {
    let n = d.len();
    if e.len() != n.saturating_sub(1) || z.ncols() != n {
        return Err(Error::Shape(format!(
            "stedc: d has {n} entries, e {} (expected {}), z is {}x{}",
            e.len(),
            n.saturating_sub(1),
            z.nrows(),
            z.ncols()
        )));
    }
    check_finite(d, e)?;
    if n <= 1 {
        return Ok(());
    }
    let several = for_each_scaled_block(d, e, |s, d, e| {
        let m = d.len();
        if m <= params.leaf_size.max(1) {
            crate::linalg::tridiagonal::steqr::steqr(d, e, z.rb_mut().subcols_mut(s, m))
        } else {
            let q = tridiag_eigvecs(d, e, params)?;
            let zold = z.rb().subcols(s, m).to_owned();
            for tile in col_tiles(m, params.col_tile) {
                multiply_z_cols(
                    zold.as_ref(),
                    q.as_ref(),
                    tile.clone(),
                    z.rb_mut().subcols_mut(s + tile.start, tile.len()),
                );
            }
            Ok(())
        }
    })?;
    if several {
        sort_eigenpairs(d, z);
    }
    Ok(())
}
