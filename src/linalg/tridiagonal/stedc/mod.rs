//! Symmetric tridiagonal divide and conquer (Cuppen 1981, with the Gu–Eisenstat 1995
//! eigenvector computation), organised as LAPACK `dstedc`/`dlaed0`–`dlaed4` but cut into
//! pieces that a task graph can run as separate tasks (the eigensolver after
//! the two-stage reduction, as in Wang et al., PPoPP 2025, §3.1).
//!
//! # Pieces and their dependencies
//!
//! For `T` with diagonal `d` (length `n`) and off-diagonal `e` (length `n - 1`),
//! scaled to norm about one:
//!
//! 1. [`DcTree::new`]`(n, leaf_size)`: the recursion tree as plain data, nodes in
//!    post-order (children before parents). Each node owns the rows/columns
//!    `begin..end` of the eigenvector matrix `Q` (`n x n`) and the entries
//!    `begin..end` of `d`; nodes with disjoint ranges never touch the same data.
//!    * Leaf: [`solve_leaf`] on `d[begin..end]`, `e[begin..end-1]`, the tears
//!      [`DcTree::leaf_tears`] and `Q[begin..end, begin..end]`. Leaves are independent.
//!    * Merge (after both children): [`MergeProblem::new`] (deflation) →
//!      [`MergeProblem::solve_roots_range`] on any partition of `0..k` (independent,
//!      any order, concurrently) → [`MergeProblem::order_output`] (moves the
//!      deflated columns of the node's block) → [`MergeProblem::lowner_range`] on
//!      any partition of `0..k` → [`MergeProblem::apply_cols`] on the tiles
//!      [`col_tiles`]`(len, col_tile)` of
//!      the node's block (independent; each writes its own columns) and
//!      [`MergeProblem::eigenvalues_into`] on `d[begin..end]`. Sibling merges are
//!      independent.
//!
//! The pipeline's task tree (`pipeline::evd::stedc`) runs exactly these pieces,
//! so results are bitwise identical whatever its schedule (root ranges do not
//! matter at all; GEMM tiles must match `col_tile`). A sequential driver over the
//! same pieces, with LAPACK's splitting into unreduced blocks ([`serial`]), serves
//! the tests as an independent oracle; [`forked`] runs them with the root's halves
//! and merge split in two tasks for the one-stage small-n path
//! (`pipeline::evd::eigh` below `EvdOptions::one_stage_below`).

mod columns;
mod deflation;
mod lowner;
pub mod merge;
pub mod secular;

use std::ops::Range;

use faer::MatMut;

use crate::error::Error;
use crate::scalar::Scalar;

pub use merge::{solve_roots, MergeProblem, OutCol};
pub use secular::{locate_root, solve_root, solve_roots_into, Root, Secular};

/// Parameters of divide and conquer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DcParams {
    /// Largest subproblem solved directly by implicit QL/QR (LAPACK's `smlsiz`, 25 there).
    pub leaf_size: usize,
    /// Column tile width of the merge GEMMs and of the final `z * Q` product. Part of
    /// the numerical definition: a task graph must use the same value to be bitwise
    /// identical to [`serial::stedc`].
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
    /// Words per row of a merge workspace shared by the whole tree of order `n`
    /// ([`DcTree::new`]`(n, leaf_size)`): the largest half of any merge, the
    /// root's `ceil(n / 2)` (0 without merges). Node `begin..end` may use words
    /// `begin * w..end * w` of an `n * w` buffer ([`MergeProblem::workspace_len`]
    /// of the node fits): nodes with disjoint ranges get disjoint words, and a
    /// node and its descendants, which overlap, never run at the same time.
    pub fn merge_words_per_row(n: usize, leaf_size: usize) -> usize {
        if n > leaf_size.max(1) {
            n.div_ceil(2)
        } else {
            0
        }
    }

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

/// Leaf task: eigen-decomposition of the torn leaf `d` (length `m`), `e` (`m - 1`).
/// Subtracts `|tear_before|` from `d[0]` and `|tear_after|` from `d[m - 1]` (rank-one
/// tearing), then sets `q` (`m x m`) to the eigenvectors (implicit QL/QR,
/// [`crate::linalg::tridiagonal::steqr::steqr`] on the identity) and `d` to the eigenvalues ascending.
/// `e` is not modified.
pub fn solve_leaf<T: Scalar>(
    d: &mut [T],
    e: &[T],
    tear_before: T,
    tear_after: T,
    q: MatMut<'_, T>,
) -> Result<(), Error> {
    let (q, mut ework) = tear_leaf(d, e, tear_before, tear_after, q)?;
    crate::linalg::tridiagonal::steqr::steqr(d, &mut ework, q)
}

/// Two sibling leaves, each as by [`solve_leaf`] (bitwise), with their QL/QR
/// sweeps chased side by side ([`crate::linalg::tridiagonal::steqr::steqr_pair`]): for a
/// caller that would otherwise solve them one after the other on one thread.
///
/// # Errors
/// As [`solve_leaf`], for either leaf.
pub fn solve_leaf_pair<T: Scalar>(
    (d1, e1, before1, after1, q1): (&mut [T], &[T], T, T, MatMut<'_, T>),
    (d2, e2, before2, after2, q2): (&mut [T], &[T], T, T, MatMut<'_, T>),
) -> Result<(), Error> {
    let (q1, mut w1) = tear_leaf(d1, e1, before1, after1, q1)?;
    let (q2, mut w2) = tear_leaf(d2, e2, before2, after2, q2)?;
    crate::linalg::tridiagonal::steqr::steqr_pair((d1, &mut w1, q1), (d2, &mut w2, q2))
}

/// [`solve_leaf`]'s set-up: checks the shapes, tears the ends of `d`, sets
/// `q` to the identity and returns it with a copy of `e` to work in.
fn tear_leaf<'q, T: Scalar>(
    d: &mut [T],
    e: &[T],
    tear_before: T,
    tear_after: T,
    mut q: MatMut<'q, T>,
) -> Result<(MatMut<'q, T>, Vec<T>), Error> {
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
    Ok((q, e.to_vec()))
}

pub mod forked;
pub mod serial;
#[cfg(test)]
mod tests;
pub mod values;
