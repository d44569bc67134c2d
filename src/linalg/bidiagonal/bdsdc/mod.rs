//! Singular value decomposition of a real upper bidiagonal matrix with vectors by
//! divide and conquer (Gu & Eisenstat 1995, "A divide-and-conquer algorithm for the
//! bidiagonal SVD"), organised as LAPACK `dbdsdc`/`dlasd0`–`dlasd4` but cut into
//! pieces that a task graph can run as separate tasks, like the tridiagonal
//! eigensolver in [`crate::linalg::tridiagonal::stedc`].
//!
//! # Pieces and their dependencies
//!
//! For `B` with diagonal `d` (length `n`) and superdiagonal `e` (length `n - 1`),
//! scaled (a power of two, so exactly) to max-norm about one:
//!
//! 1. [`BdTree::new`]`(n, leaf_size)`: the recursion tree as plain data, nodes in
//!    post-order. A node owns rows `begin..end` of `B` and columns `begin..end +
//!    sqre` (`sqre = 1` for every node except the rightmost chain: a left child keeps
//!    the column its parent's removed row starts in). It owns `d[begin..end]`, the block
//!    `U[begin..end, begin..end]` and the block `V[begin..end+sqre, begin..end+sqre]`;
//!    a merge's children own disjoint parts of these, and the removed row `mid` is
//!    the parent's alone.
//!    * Leaf task: [`solve_leaf`] on `d[begin..end]`, `e[begin..end-1+sqre]` and its
//!      blocks of `U` and `V` (implicit QR, [`bdsqr::bdsqr`]). Leaves are independent.
//!    * Merge task chain (after both children): [`SvdMerge::new`] (with `alpha =
//!      d[mid]`, `beta = e[mid]` of the original matrix; the node's null vector,
//!      when `sqre = 1`, is left in the last column of its `V` block) →
//!      [`SvdMerge::solve_roots_range`] on any partition of `0..k` (independent, any
//!      order) → [`SvdMerge::order_output`] (deflated columns moved into place) →
//!      [`SvdMerge::lowner_range`] on any partition → [`SvdMerge::apply_cols`] on the
//!      tiles [`col_tiles`]`(end - begin, col_tile)` (independent; each writes its
//!      own columns of `U` and `V`), and [`SvdMerge::singular_values_into`] on
//!      `d[begin..end]`. Sibling merges are independent.
//! 2. The root leaves the singular values ascending in `d` with `U` and `V`; undo
//!    the scaling and reverse for the usual descending order.
//!
//! Small matrices (`n <= leaf_size`) are solved by [`bdsqr::bdsqr`] directly, which
//! also keeps every singular value to high relative accuracy; divide and conquer
//! gives singular values to `O(n eps ||B||)` and orthogonal vectors to `O(n eps)`.
//!
//! Shared with the eigensolver: the root finder ([`crate::linalg::tridiagonal::stedc::secular`],
//! here in the squared frame of [`secular`]), deflation, type grouping, the Löwner
//! product and the tiled products ([`crate::linalg::tridiagonal::stedc::merge`]).

pub mod bdsqr;
mod lowner;
pub mod merge;
pub mod secular;

use std::ops::Range;

use faer::reborrow::ReborrowMut;
use faer::MatMut;

use crate::error::Error;
use crate::linalg::blas::lasr::rotate_cols;
use crate::scalar::Scalar;

pub use crate::linalg::tridiagonal::stedc::col_tiles;
pub use merge::SvdMerge;

/// Parameters of the bidiagonal divide and conquer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BdsdcParams {
    /// Largest subproblem solved directly by implicit QR (LAPACK's `smlsiz`, 25
    /// there); at least 3.
    pub leaf_size: usize,
    /// Column tile width of the merge GEMMs; part of the numerical definition (a task
    /// graph must use the same value to be bitwise identical to the serial driver).
    pub col_tile: usize,
}

impl Default for BdsdcParams {
    fn default() -> Self {
        Self {
            leaf_size: 32,
            col_tile: 256,
        }
    }
}

/// One node of the bidiagonal divide-and-conquer tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BdNode {
    /// Rows `begin..end`, columns `begin..end + sqre`, solved by implicit QR.
    Leaf {
        /// First row.
        begin: usize,
        /// One past the last row.
        end: usize,
        /// Whether the node has the extra column `end`.
        sqre: bool,
    },
    /// Rows `begin..end` merged across the removed row `mid`: the left child has rows
    /// `begin..mid` (and the extra column `mid`), the right child rows `mid+1..end`.
    Merge {
        /// First row.
        begin: usize,
        /// The removed row.
        mid: usize,
        /// One past the last row.
        end: usize,
        /// Whether the node has the extra column `end`.
        sqre: bool,
        /// Node index of the left child.
        left: usize,
        /// Node index of the right child.
        right: usize,
    },
}

impl BdNode {
    /// The rows (and diagonal entries) the node owns.
    pub fn rows(&self) -> Range<usize> {
        match *self {
            BdNode::Leaf { begin, end, .. } | BdNode::Merge { begin, end, .. } => begin..end,
        }
    }

    /// The columns the node owns: its rows, plus `end` when `sqre`.
    pub fn cols(&self) -> Range<usize> {
        match *self {
            BdNode::Leaf { begin, end, sqre }
            | BdNode::Merge {
                begin, end, sqre, ..
            } => begin..end + usize::from(sqre),
        }
    }
}

/// The recursion tree: halving at the middle row (`dlasdt`) until every piece has at
/// most `leaf_size` rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BdTree {
    /// Order of the matrix.
    pub n: usize,
    /// Nodes in post-order: every child before its parent; the root is last.
    pub nodes: Vec<BdNode>,
}

impl BdTree {
    /// Builds the tree for an `n x n` bidiagonal (`leaf_size` below 3 is treated as
    /// 3, so that every merge has nonempty children).
    pub fn new(n: usize, leaf_size: usize) -> Self {
        fn build(b: usize, e: usize, sqre: bool, leaf: usize, nodes: &mut Vec<BdNode>) -> usize {
            if e - b <= leaf {
                nodes.push(BdNode::Leaf {
                    begin: b,
                    end: e,
                    sqre,
                });
            } else {
                let mid = b + (e - b) / 2;
                let left = build(b, mid, true, leaf, nodes);
                let right = build(mid + 1, e, sqre, leaf, nodes);
                nodes.push(BdNode::Merge {
                    begin: b,
                    mid,
                    end: e,
                    sqre,
                    left,
                    right,
                });
            }
            nodes.len() - 1
        }
        let mut nodes = Vec::new();
        if n > 0 {
            build(0, n, false, leaf_size.max(3), &mut nodes);
        }
        Self { n, nodes }
    }

    /// Index of the root node (`None` for `n = 0`).
    pub fn root(&self) -> Option<usize> {
        self.nodes.len().checked_sub(1)
    }

    /// Words per row of a merge workspace shared by the whole tree of order `n`
    /// ([`BdTree::new`]`(n, leaf_size)`; 0 without merges): node `begin..end`
    /// may use words `begin * w..(end + 1) * w` of an `(n + 1) * w` buffer, which
    /// holds its [`SvdMerge::workspace_len`]. Nodes with disjoint rows get
    /// disjoint words (a removed row separates them), and a node and its
    /// descendants, which overlap, never run at the same time. With `h = n / 2`,
    /// the largest child of any merge, a node needs at most
    /// `h (len - 1) + (h + 1)(len + 1) <= (2h + 1)(len + 1)` words.
    pub fn merge_words_per_row(n: usize, leaf_size: usize) -> usize {
        if n > leaf_size.max(3) {
            2 * (n / 2) + 1
        } else {
            0
        }
    }
}

/// Leaf task: SVD of the `nb x (nb + sqre)` upper bidiagonal with diagonal `d`
/// (length `nb`) and superdiagonal `e` (length `nb - 1 + sqre`; with `sqre` its last
/// entry is in the extra column). On exit `d` holds the singular values ascending,
/// `u` (`nb x nb`) the left singular vectors and `v` (`(nb + sqre)` square) the right
/// ones, the null vector last. `e` is not modified.
///
/// With `sqre`, rotations from the right first move the extra column's weight into the
/// square part (leaving a lower bidiagonal and a zero column), then rotations from the
/// left restore the upper bidiagonal form (`dlasdq`), and [`bdsqr::bdsqr`] finishes.
pub fn solve_leaf<T: Scalar>(
    d: &mut [T],
    e: &[T],
    mut u: MatMut<'_, T>,
    mut v: MatMut<'_, T>,
) -> Result<(), Error> {
    let nb = d.len();
    let mb = v.nrows();
    if nb == 0
        || (mb != nb && mb != nb + 1)
        || e.len() + 1 != mb
        || u.nrows() != nb
        || u.ncols() != nb
        || v.ncols() != mb
    {
        return Err(Error::Shape(format!(
            "solve_leaf: d {nb}, e {}, u {}x{}, v {}x{}",
            e.len(),
            u.nrows(),
            u.ncols(),
            mb,
            v.ncols()
        )));
    }
    let zero = T::zero();
    for (mut m, k) in [(u.rb_mut(), nb), (v.rb_mut(), mb)] {
        m.fill(zero);
        for i in 0..k {
            m[(i, i)] = T::one();
        }
    }
    let mut ee = e.to_vec();
    if mb > nb {
        // Right rotations (i, i+1) zero e_i against d_i; each leaves s d_{i+1} below
        // the diagonal.
        let mut f = vec![zero; nb.saturating_sub(1)];
        for i in 0..nb {
            let (c, s, r) = bdsqr::rotation(d[i], ee[i]);
            d[i] = r;
            if i + 1 < nb {
                f[i] = s * d[i + 1];
                d[i + 1] = c * d[i + 1];
            }
            rotate_cols(v.rb_mut(), i, i + 1, c, s);
        }
        // Left rotations (i, i+1) zero the subdiagonal again.
        for i in 0..nb.saturating_sub(1) {
            let (c, s, r) = bdsqr::rotation(d[i], f[i]);
            d[i] = r;
            ee[i] = s * d[i + 1];
            d[i + 1] = c * d[i + 1];
            rotate_cols(u.rb_mut(), i, i + 1, c, s);
        }
    }
    bdsqr::bdsqr(
        d,
        &mut ee[..nb - 1],
        u.rb_mut(),
        v.rb_mut().subcols_mut(0, nb),
    )?;
    // Descending to ascending.
    d.reverse();
    for i in 0..nb / 2 {
        swap_cols(u.rb_mut(), i, nb - 1 - i);
        swap_cols(v.rb_mut(), i, nb - 1 - i);
    }
    Ok(())
}

fn swap_cols<T: Scalar>(m: MatMut<'_, T>, i: usize, j: usize) {
    crate::linalg::blas::lasr::col_pair(m, i, j, |x, y| x.swap_with_slice(y));
}

/// Runs one merge node sequentially (all steps with the tiling `col_tile`) on the
/// node's entries `d` (children's values around the removed row `nl`) and blocks `u`,
/// `v`. Same operations as a task graph would run.
pub fn merge_node<T: Scalar>(
    d: &mut [T],
    alpha: T,
    beta: T,
    mut u: MatMut<'_, T>,
    mut v: MatMut<'_, T>,
    nl: usize,
    col_tile: usize,
) -> Result<(), Error> {
    let n = d.len();
    let mut work = vec![T::zero(); SvdMerge::<T>::workspace_len(n, v.nrows(), nl)];
    let mut p = SvdMerge::new(d, alpha, beta, u.rb_mut(), v.rb_mut(), nl, &mut work)?;
    let k = p.k();
    merge::solve_roots(&mut p, 0..k)?;
    p.lowner(u.rb_mut(), v.rb_mut())?;
    for t in col_tiles(n, col_tile) {
        p.apply_cols(
            t.clone(),
            &work,
            u.rb_mut().subcols_mut(t.start, t.len()),
            v.rb_mut().subcols_mut(t.start, t.len()),
        )?;
    }
    p.singular_values_into(d);
    Ok(())
}

/// Singular values (descending), `U` and `V^T`.
#[cfg(test)]
pub(crate) type Svd<T> = (Vec<T>, faer::Mat<T>, faer::Mat<T>);

/// Serial driver: the SVD `B = U diag(s) V^T` of the upper bidiagonal `(d, e)` with `s`
/// descending, returned as `(s, U, V^T)`, by walking the tree of [`BdTree`] with the
/// pieces above (the pipeline runs the same pieces as tasks).
#[cfg(test)]
pub(crate) fn bdsdc<T: Scalar>(d: &[T], e: &[T], params: &BdsdcParams) -> Result<Svd<T>, Error> {
    use faer::Mat;
    crate::linalg::bidiagonal::dqds::check_bidiagonal("bdsdc", d, e)?;
    let n = d.len();
    let anrm = d
        .iter()
        .chain(e.iter())
        .fold(T::zero(), |m, x| m.max(x.abs()));
    if anrm == T::zero() {
        return Ok((vec![T::zero(); n], Mat::identity(n, n), Mat::identity(n, n)));
    }
    // Power-of-two scaling: exact, and the merges see data of size about one.
    let scale = merge::pow2_at_least(anrm);
    let mut ds: Vec<T> = d.iter().map(|&x| x / scale).collect();
    let es: Vec<T> = e.iter().map(|&x| x / scale).collect();
    let mut u = Mat::<T>::zeros(n, n);
    let mut v = Mat::<T>::zeros(n, n);
    if n <= params.leaf_size.max(3) {
        let mut ew = es.clone();
        u = Mat::identity(n, n);
        v = Mat::identity(n, n);
        bdsqr::bdsqr(&mut ds, &mut ew, u.as_mut(), v.as_mut())?;
    } else {
        let tree = BdTree::new(n, params.leaf_size);
        for node in &tree.nodes {
            let (r, c) = (node.rows(), node.cols());
            let (ub, vb) = (
                u.as_mut().submatrix_mut(r.start, r.start, r.len(), r.len()),
                v.as_mut().submatrix_mut(c.start, c.start, c.len(), c.len()),
            );
            match *node {
                BdNode::Leaf { begin, .. } => {
                    solve_leaf(&mut ds[r.clone()], &es[begin..c.end - 1], ub, vb)?;
                }
                BdNode::Merge { begin, mid, .. } => {
                    let (alpha, beta) = (d[mid] / scale, es[mid]);
                    merge_node(
                        &mut ds[r.clone()],
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
        // Ascending to descending.
        ds.reverse();
        for j in 0..n / 2 {
            swap_cols(u.as_mut(), j, n - 1 - j);
            swap_cols(v.as_mut(), j, n - 1 - j);
        }
    }
    let s: Vec<T> = ds.iter().map(|&x| x * scale).collect();
    if let Some(i) = s.iter().position(|x| !x.is_finite()) {
        return Err(Error::NoConvergence {
            stage: "bdsdc",
            detail: format!("singular value {i} overflowed when the scaling was undone"),
        });
    }
    Ok((s, u, v.transpose().to_owned()))
}

#[cfg(test)]
mod tests;
