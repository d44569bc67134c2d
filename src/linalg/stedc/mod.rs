//! Symmetric tridiagonal divide and conquer (Cuppen 1981, with the Gu–Eisenstat 1995
//! eigenvector computation), organised as LAPACK `dstedc`/`dlaed0`–`dlaed4` but cut into
//! pieces that a task graph can run as separate tasks (DESIGN.md §4.1 step 3).
//!
//! # Pieces and their dependencies
//!
//! For `T` with diagonal `d` (length `n`) and off-diagonal `e` (length `n - 1`):
//!
//! 1. [`split_blocks`]: independent unreduced blocks (tiny `e`, the `dstedc` criterion).
//!    Each block is a separate problem; blocks are independent of each other.
//! 2. Per block of order `m`: [`scale_block`] (divide by the max norm, like `dstedc`).
//!    If `m <= leaf_size` the block is solved by [`crate::linalg::steqr::steqr`] directly
//!    on the caller's `z` columns. Otherwise:
//! 3. [`DcTree::new`]`(m, leaf_size)`: the recursion tree as plain data, nodes in
//!    post-order (children before parents). Each node owns the rows/columns
//!    `begin..end` of the block's eigenvector matrix `Q` (`m x m`) and the entries
//!    `begin..end` of `d`; nodes with disjoint ranges never touch the same data.
//!    * Leaf task: [`solve_leaf`] on `d[begin..end]`, `e[begin..end-1]`, the tears
//!      [`DcTree::leaf_tears`] and `Q[begin..end, begin..end]`. Leaves are independent.
//!    * Merge task chain (after both children): [`MergeProblem::new`] (deflation) →
//!      [`solve_roots`] / [`secular::solve_roots_into`] on any partition of `0..k`
//!      (independent, any order) → [`MergeProblem::lowner`] → [`MergeProblem::apply_cols`]
//!      on the tiles [`col_tiles`]`(len, col_tile)` of the node's block (independent; each
//!      writes its own columns) and [`MergeProblem::eigenvalues_into`] on `d[begin..end]`.
//!      Sibling merges are independent.
//! 4. The block's `z[:, s..t] := z_old[:, s..t] * Q` with [`multiply_z_cols`] per tile of
//!    [`col_tiles`] (independent, given a copy `z_old` of the block's columns), then
//!    [`unscale_block`].
//! 5. If there was more than one block: [`sort_eigenpairs`].
//!
//! [`stedc`] runs exactly these pieces in a fixed order with the tiling of [`DcParams`];
//! a task graph that uses the same `DcParams` gets bitwise identical results whatever
//! its schedule (root ranges do not matter at all; GEMM tiles must match `col_tile`).

pub mod merge;
pub mod secular;

use std::ops::Range;

use faer::linalg::matmul::matmul;
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::{Accum, Mat, MatMut, MatRef, Par};

use crate::error::Error;
use crate::scalar::Scalar;

pub use merge::{solve_roots, MergeProblem, OutCol};
pub use secular::{solve_root, solve_roots_into, Secular};

/// Parameters of divide and conquer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DcParams {
    /// Largest subproblem solved directly by implicit QL/QR (LAPACK's `smlsiz`, 25 there).
    pub leaf_size: usize,
    /// Column tile width of the merge GEMMs and of the final `z * Q` product. Part of
    /// the numerical definition: a task graph must use the same value to be bitwise
    /// identical to [`stedc`].
    pub col_tile: usize,
}

impl Default for DcParams {
    fn default() -> Self {
        Self {
            leaf_size: 32,
            col_tile: 256,
        }
    }
}

/// One node of the divide-and-conquer tree. Indices are relative to the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DcNode {
    /// A subproblem `begin..end` solved by QL/QR.
    Leaf {
        /// First row/column.
        begin: usize,
        /// One past the last row/column.
        end: usize,
    },
    /// Merge of `left` (`begin..cut`) and `right` (`cut..end`) across the rank-one tear
    /// of `e[cut - 1]`.
    Merge {
        /// First row/column.
        begin: usize,
        /// First row/column of the right child.
        cut: usize,
        /// One past the last row/column.
        end: usize,
        /// Node index of the left child.
        left: usize,
        /// Node index of the right child.
        right: usize,
    },
}

impl DcNode {
    /// The rows/columns the node owns.
    pub fn range(&self) -> Range<usize> {
        match *self {
            DcNode::Leaf { begin, end } | DcNode::Merge { begin, end, .. } => begin..end,
        }
    }
}

/// The recursion tree of one unreduced block: recursive halving (rank-one tearing at
/// the middle, like `dlaed0`) until every piece has at most `leaf_size` rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DcTree {
    /// Order of the block.
    pub n: usize,
    /// Nodes in post-order: every child comes before its parent; the root is last.
    pub nodes: Vec<DcNode>,
}

impl DcTree {
    /// Builds the tree for a block of order `n` (`leaf_size` 0 is treated as 1).
    pub fn new(n: usize, leaf_size: usize) -> Self {
        fn build(b: usize, e: usize, leaf: usize, nodes: &mut Vec<DcNode>) -> usize {
            if e - b <= leaf {
                nodes.push(DcNode::Leaf { begin: b, end: e });
            } else {
                let cut = b + (e - b) / 2;
                let left = build(b, cut, leaf, nodes);
                let right = build(cut, e, leaf, nodes);
                nodes.push(DcNode::Merge {
                    begin: b,
                    cut,
                    end: e,
                    left,
                    right,
                });
            }
            nodes.len() - 1
        }
        let mut nodes = Vec::new();
        if n > 0 {
            build(0, n, leaf_size.max(1), &mut nodes);
        }
        Self { n, nodes }
    }

    /// Index of the root node (`None` for `n = 0`).
    pub fn root(&self) -> Option<usize> {
        self.nodes.len().checked_sub(1)
    }

    /// The tear amounts of a leaf: `(e[begin - 1], e[end - 1])`, zero at the block
    /// edges. [`solve_leaf`] subtracts their absolute values from the first and last
    /// diagonal entries of the leaf (rank-one tearing, `dlaed0`).
    pub fn leaf_tears<T: Scalar>(&self, node: usize, e: &[T]) -> (T, T) {
        let r = self.nodes[node].range();
        let before = if r.start > 0 {
            e[r.start - 1]
        } else {
            T::zero()
        };
        let after = if r.end < self.n {
            e[r.end - 1]
        } else {
            T::zero()
        };
        (before, after)
    }
}

/// Column tiles `0..tile, tile..2 tile, ...` of `n` columns (`tile` 0 means one tile).
pub fn col_tiles(n: usize, tile: usize) -> Vec<Range<usize>> {
    let t = if tile == 0 { n.max(1) } else { tile };
    (0..n).step_by(t).map(|s| s..(s + t).min(n)).collect()
}

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

/// Leaf task: eigen-decomposition of the torn leaf `d` (length `m`), `e` (`m - 1`).
/// Subtracts `|tear_before|` from `d[0]` and `|tear_after|` from `d[m - 1]` (rank-one
/// tearing), then sets `q` (`m x m`) to the eigenvectors (implicit QL/QR,
/// [`crate::linalg::steqr::steqr`] on the identity) and `d` to the eigenvalues ascending.
/// `e` is not modified.
pub fn solve_leaf<T: Scalar>(
    d: &mut [T],
    e: &[T],
    tear_before: T,
    tear_after: T,
    mut q: MatMut<'_, T>,
) -> Result<(), Error> {
    let m = d.len();
    if m == 0 || e.len() + 1 != m || q.nrows() != m || q.ncols() != m {
        return Err(Error::Shape(format!(
            "solve_leaf: d {m}, e {}, q {}x{}",
            e.len(),
            q.nrows(),
            q.ncols()
        )));
    }
    d[0] -= tear_before.abs();
    d[m - 1] -= tear_after.abs();
    q.fill(T::zero());
    for i in 0..m {
        q[(i, i)] = T::one();
    }
    let mut ework = e.to_vec();
    crate::linalg::steqr::steqr(d, &mut ework, q)
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
    let mut p = MergeProblem::new(d, q.rb_mut(), n1, beta)?;
    let k = p.k();
    solve_roots(&p, 0..k)?;
    p.lowner()?;
    for t in col_tiles(n, col_tile) {
        p.apply_cols(t.clone(), q.rb_mut().subcols_mut(t.start, t.len()));
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
    let blocks = split_blocks(d, e);
    for blk in &blocks {
        let (s, t) = (blk.start, blk.end);
        let m = t - s;
        if m == 1 {
            continue;
        }
        let nrm = scale_block(&mut d[s..t], &mut e[s..t - 1]);
        if nrm == T::zero() {
            continue;
        }
        if m <= params.leaf_size.max(1) {
            crate::linalg::steqr::steqr(
                &mut d[s..t],
                &mut e[s..t - 1],
                z.rb_mut().subcols_mut(s, m),
            )?;
        } else {
            let q = tridiag_eigvecs(&mut d[s..t], &e[s..t - 1], params)?;
            let zold = z.rb().subcols(s, m).to_owned();
            for tile in col_tiles(m, params.col_tile) {
                multiply_z_cols(
                    zold.as_ref(),
                    q.as_ref(),
                    tile.clone(),
                    z.rb_mut().subcols_mut(s + tile.start, tile.len()),
                );
            }
        }
        unscale_block(&mut d[s..t], nrm);
    }
    if blocks.len() > 1 {
        sort_eigenpairs(d, z);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
