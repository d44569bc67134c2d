//! One merge of divide and conquer: two solved halves plus a rank-one tear.
//!
//! With `T = blockdiag(T1, T2) + beta v v^T` (`v = e_{n1-1} + sign(beta) e_{n1}` after the
//! tear) and `Ti = Qi Di Qi^T`, we have
//! `T = blockdiag(Q1, Q2) (D + rho z z^T) blockdiag(Q1, Q2)^T` with
//! `z = (last row of Q1, sign(beta) first row of Q2) / sqrt(2)` and `rho = 2 |beta|`
//! (Cuppen 1981; LAPACK `dlaed1`). The merge runs in five steps, each a separate call so a
//! task graph can schedule them:
//!
//! 1. [`MergeProblem::new`]: form `z`, deflate (LAPACK `dlaed2`: tiny `rho |z_i|` and
//!    close pairs removed by Givens rotations applied to the eigenvector columns), and copy
//!    the halves of the non-deflated eigenvector columns into the problem's own workspace,
//!    grouped by sparsity type (top-only, dense, bottom-only) as `dlaed2`/`dlaed3` do. The
//!    deflated columns stay where they are.
//! 2. [`MergeProblem::solve_roots_range`]: the secular equation, independently per root.
//!    A root is kept as its origin pole and offset ([`Root`]), not as the `k` differences
//!    `d_j - lambda` LAPACK stores: those are recomputed, bitwise the same, where needed,
//!    so the merge holds no `k x k` array.
//! 3. [`MergeProblem::order_output`]: the output order (ascending merge of roots and
//!    deflated values), and the deflated columns moved in place to their output columns.
//! 4. [`MergeProblem::lowner_range`]: Gu–Eisenstat (1994): recompute `z-hat` from all roots
//!    by the Löwner formula so that the eigenvectors `u_i = (D - lambda_i)^{-1} z-hat` of
//!    the computed rank-one problem are numerically orthogonal (LAPACK `dlaed3`), over any
//!    partition of its entries.
//! 5. [`MergeProblem::apply_cols`] per output column tile: the normalised `u_r` of the
//!    tile's roots, then `blockdiag(Q1, Q2) U` into the root columns (the deflated ones
//!    were placed by step 3); and [`MergeProblem::eigenvalues_into`].
//!
//! The largest workspace is the copy of the non-deflated halves, at most
//! `max(n1, n2) n` entries (a dense column comes from a rotation that deflates another
//! column, so top-or-dense plus dense-or-bottom columns number at most `n`), where
//! LAPACK's `dlaed2`/`dlaed3` take `n1^2 + n2^2` for it plus `k^2` for the differences.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use faer::linalg::matmul::matmul;
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::{Accum, Mat, MatMut, MatRef, Par};

pub(crate) use super::columns::{gather_cols_into, move_columns};
pub(crate) use super::deflation::{deflate, group_by_type, sorted_by_value, ColType};
use super::secular::{self, Root, Secular};
use crate::error::Error;
use crate::linalg::blas::lasr::rotate_cols;
use crate::matrix::SplitColumns;
use crate::scalar::Scalar;

mod decide;
mod order;
mod rows;
mod split;
mod vector;

use decide::{Decisions, Poles};
pub(crate) use order::{gather_roots, merge_order, root_range, values_in_order};
use vector::root_vector;
pub(crate) use vector::unit_scale;

pub use rows::EdgeRows;

/// Where output column `j` of a merge comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutCol {
    /// Root `r` of the secular equation (a column of `blockdiag(Q1, Q2) U`).
    Root(usize),
    /// Deflated column `s` (copied).
    Deflated(usize),
}

/// Largest number of roots [`MergeProblem::apply_cols`] turns into
/// eigenvectors at a time (the default column tile: the pipeline's tiles are
/// one chunk each).
pub const APPLY_CHUNK: usize = 256;

/// The roots of one [`MergeProblem::solve_roots_range`] call.
pub(crate) type SolvedRange<T> = (Range<usize>, Vec<Root<T>>);

/// Everything one merge needs between its steps; owns its workspace, so the node's
/// eigenvector block may be overwritten by [`MergeProblem::apply_cols`] after
/// [`MergeProblem::new`] returns.
pub struct MergeProblem<T> {
    n: usize,
    n1: usize,
    /// The non-deflated rank-one problem (poles ascending).
    secular: Secular<T>,
    /// Roots solved by step 2, one entry per [`MergeProblem::solve_roots_range`] call.
    solved: parking_lot::Mutex<Vec<SolvedRange<T>>>,
    /// All roots, ascending (`roots[r]` is root `r`), gathered by step 3.
    roots: Vec<Root<T>>,
    /// `1 x k`: `z-hat` (step 4 fills disjoint ranges concurrently).
    zhat: SplitColumns<T>,
    /// Number of `z-hat` entries formed by step 4.
    zhat_done: AtomicUsize,
    /// Number of non-deflated columns of each type (top, dense, bottom).
    ctot: [usize; 3],
    /// Row of non-deflated entry `j` (in pole order) in the type-ordered `U`.
    type_row: Vec<usize>,
    /// Column of the node's block holding each deflated eigenvector (rotated in
    /// place by step 1), in ascending order of their eigenvalues.
    defl_cols: Vec<usize>,
    /// Deflated eigenvalues, ascending.
    ddefl: Vec<T>,
    /// Output column sources, ascending eigenvalue order; filled by step 3.
    out: Vec<OutCol>,
}

impl<T: Scalar> MergeProblem<T> {
    /// Words of the workspace a merge of order `n` with a left half of `n1`
    /// needs ([`MergeProblem::new`]): `max(n1, n - n1) n`.
    pub fn workspace_len(n: usize, n1: usize) -> usize {
        n1.max(n.saturating_sub(n1)).saturating_mul(n)
    }

    /// Step 1: forms the rank-one problem of a merge and deflates it.
    ///
    /// * `d` (length `n`): eigenvalues of the left half (ascending, `n1` of them) followed by
    ///   those of the right half (ascending).
    /// * `q` (`n x n`): the node's eigenvector block; its top-left `n1 x n1` block holds
    ///   `Q1` and its bottom-right block `Q2`. The off-diagonal blocks are ignored (they
    ///   are overwritten). On return it holds the deflated eigenvectors (rotated) in
    ///   their columns; the other columns are scratch.
    /// * `beta`: the off-diagonal entry `e[cut - 1]` the tear removed.
    /// * `work`: at least [`MergeProblem::workspace_len`]`(n, n1)` words; receives the
    ///   halves of the non-deflated eigenvectors, which [`MergeProblem::apply_cols`]
    ///   reads from it: the caller keeps it unchanged until the last apply.
    pub fn new(
        d: &[T],
        mut q: MatMut<'_, T>,
        n1: usize,
        beta: T,
        work: &mut [T],
    ) -> Result<Self, Error> {
        let n = d.len();
        if q.nrows() != n
            || q.ncols() != n
            || n1 == 0
            || n1 >= n
            || work.len() < Self::workspace_len(n, n1)
        {
            return Err(Error::Shape(format!(
                "MergeProblem::new: d has {n} entries, q is {}x{}, n1 = {n1}, \
                 workspace {} of {} words",
                q.nrows(),
                q.ncols(),
                work.len(),
                Self::workspace_len(n, n1)
            )));
        }
        let n2 = n - n1;
        let zero = T::zero();
        // z = (last row of Q1, sign(beta) * first row of Q2) (dlaed1).
        let mut z = vec![zero; n];
        for j in 0..n1 {
            z[j] = q[(n1 - 1, j)];
        }
        for j in n1..n {
            z[j] = if beta < zero { -q[(n1, j)] } else { q[(n1, j)] };
        }
        q.rb_mut().submatrix_mut(n1, 0, n2, n1).fill(zero);
        q.rb_mut().submatrix_mut(0, n1, n1, n2).fill(zero);
        let dec =
            Poles::new(d, z, n1, beta).decide(|a, b, cs, sn| rotate_cols(q.rb_mut(), a, b, cs, sn));
        // `n1 x ntop` top halves of the top-only and dense columns, then the
        // `n2 x nbot` bottom halves of the dense and bottom-only columns: at most
        // `max(n1, n2) n` words, since a dense column comes from a rotation that
        // deflated another column (see the module docs).
        let qr = q.rb();
        let (top, bot) = work.split_at_mut(n1 * dec.top_cols.len());
        gather_cols_into(qr, 0..n1, &dec.top_cols, top);
        gather_cols_into(qr, n1..n, &dec.bot_cols, bot);
        Ok(Self::decided(n1, dec))
    }

    /// The problem of a merge with left half `n1` after step 1's decisions,
    /// before its roots are solved.
    fn decided(n1: usize, dec: Decisions<T>) -> Self {
        let Decisions {
            secular,
            ctot,
            type_row,
            defl_cols,
            ddefl,
            ..
        } = dec;
        let n = secular.len() + ddefl.len();
        Self {
            n,
            n1,
            zhat: SplitColumns::new(Mat::zeros(1, secular.len())),
            secular,
            solved: parking_lot::Mutex::new(Vec::new()),
            roots: Vec::new(),
            zhat_done: AtomicUsize::new(0),
            ctot,
            type_row,
            defl_cols,
            ddefl,
            out: Vec::new(),
        }
    }

    /// Order `n` of the merged block.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Size `n1` of the left half.
    pub fn n1(&self) -> usize {
        self.n1
    }

    /// Number `k` of non-deflated eigenvalues (roots of the secular equation).
    pub fn k(&self) -> usize {
        self.secular.len()
    }

    /// Number of non-deflated columns of each sparsity type of `blockdiag(Q1, Q2)`
    /// (top-only, dense, bottom-only; `dlaed2`'s `ctot`): the two GEMMs of
    /// [`MergeProblem::apply_cols`] are `n1 x (top + dense)` and
    /// `(n - n1) x (dense + bottom)` times the tile's roots.
    pub fn column_types(&self) -> [usize; 3] {
        self.ctot
    }

    /// The secular equation of the non-deflated part.
    pub fn secular(&self) -> &Secular<T> {
        &self.secular
    }

    /// Step 2 for roots `range` (`range.end <= k`): solves them and keeps them in
    /// the problem. Several disjoint ranges may be solved concurrently through
    /// `&self`; the results do not depend on how `0..k` is split.
    /// [`MergeProblem::order_output`] needs every root solved, once.
    pub fn solve_roots_range(&self, range: Range<usize>) -> Result<(), Error> {
        let k = self.k();
        if range.start > range.end || range.end > k {
            return Err(Error::Shape(format!(
                "solve_roots: range {range:?} of {k} roots"
            )));
        }
        let sec = &self.secular;
        let mut work = vec![T::zero(); k];
        let roots = range
            .clone()
            .map(|r| secular::locate_root(&sec.d, &sec.z, sec.rho, r, &mut work))
            .collect::<Result<Vec<_>, _>>()?;
        self.solved.lock().push((range, roots));
        Ok(())
    }

    /// Step 3: gathers the roots of step 2 (an error unless they cover `0..k`
    /// exactly once), fixes the output order (the ascending merge of roots and
    /// deflated values) and moves each deflated eigenvector from its column of the
    /// node's block `q` (`n x n`, as step 1 left it) to its output column. The
    /// columns of the roots are left to [`MergeProblem::apply_cols`].
    pub fn order_output(&mut self, q: MatMut<'_, T>) -> Result<(), Error> {
        if q.nrows() != self.n || q.ncols() != self.n {
            return Err(Error::Shape(format!(
                "MergeProblem::order_output: block {}x{} for a merge of order {}",
                q.nrows(),
                q.ncols(),
                self.n
            )));
        }
        self.fix_order("MergeProblem::order_output")?;
        let moves: Vec<(usize, usize)> = self
            .out
            .iter()
            .enumerate()
            .filter_map(|(c, src)| match *src {
                OutCol::Deflated(s) => Some((self.defl_cols[s], c)),
                OutCol::Root(_) => None,
            })
            .collect();
        move_columns(q, &moves);
        Ok(())
    }

    /// Gathers the roots of step 2 (an error naming `who` unless they cover
    /// `0..k` exactly once) and fixes the output order.
    fn fix_order(&mut self, who: &str) -> Result<(), Error> {
        let roots = gather_roots(&self.solved, self.k(), who)?;
        let lambda: Vec<T> = roots.iter().map(|r| r.lambda).collect();
        self.out = merge_order(&lambda, &self.ddefl);
        self.roots = roots;
        Ok(())
    }

    /// Step 4 on entries `rows` of `z-hat` (after step 3; disjoint ranges may run
    /// concurrently, with bitwise the same results however `0..k` is split):
    ///
    /// `z-hat_i^2 = prod_j (lambda_j - d_i) / prod_{j != i} (d_j - d_i)` (up to the
    /// factor `rho`, which the normalisation removes), formed as
    /// `-(d_i - lambda_i) prod_{j != i} (d_i - lambda_j)/(d_i - d_j)` from the accurate
    /// differences [`Root::delta`], with the sign of the original `z_i` (LAPACK `dlaed3`).
    pub fn lowner_range(&self, rows: Range<usize>) -> Result<(), Error> {
        let k = self.k();
        if self.roots.len() != k || rows.start > rows.end || rows.end > k {
            return Err(Error::InvalidArgument(format!(
                "MergeProblem::lowner_range: rows {rows:?} of {k}, {} roots ordered",
                self.roots.len()
            )));
        }
        let zhat = super::lowner::lowner_zhat(&self.secular, &self.roots, rows.clone());
        let mut cols = self.zhat.cols_mut(rows.clone());
        let mut dst = cols.mat();
        for (c, x) in zhat.into_iter().enumerate() {
            dst[(0, c)] = x;
        }
        self.zhat_done.fetch_add(rows.len(), Ordering::AcqRel);
        Ok(())
    }

    /// Steps 3 and 4 in one call (for sequential drivers).
    pub fn lowner(&mut self, q: MatMut<'_, T>) -> Result<(), Error> {
        self.order_output(q)?;
        self.lowner_range(0..self.k())
    }

    /// Source of each output column (valid after [`MergeProblem::order_output`]).
    pub fn out_cols(&self) -> &[OutCol] {
        &self.out
    }

    /// Writes the merged eigenvalues, ascending, into `d` (length `n`). Valid after
    /// [`MergeProblem::order_output`].
    pub fn eigenvalues_into(&self, d: &mut [T]) {
        assert!(self.out.len() == self.n && d.len() == self.n);
        let lambda: Vec<T> = self.roots.iter().map(|r| r.lambda).collect();
        values_in_order(&self.out, &lambda, &self.ddefl, d);
    }

    /// Step 5 on one tile: writes the root columns among output columns `cols` of
    /// the merged eigenvector block into `out` (`n x cols.len()`, the block's columns
    /// `cols`): the tile's eigenvectors `u_r = (D - lambda_r)^{-1} z-hat`, normalised,
    /// then `blockdiag(Q1, Q2) U` by two GEMMs over the top-only+dense and
    /// dense+bottom-only column groups (as `dlaed3`). The deflated columns of the tile
    /// are not touched (step 3 placed them). Reads only `self`; tiles are independent.
    /// For bitwise reproducibility use the same tiling every time (GEMM results may
    /// depend on the shape): see [`super::col_tiles`].
    ///
    /// Errors: [`Error::InvalidArgument`] before steps 3 and 4 are complete;
    /// [`Error::NoConvergence`] for a degenerate eigenvector.
    pub fn apply_cols(
        &self,
        cols: Range<usize>,
        work: &[T],
        mut out: MatMut<'_, T>,
    ) -> Result<(), Error> {
        let k = self.k();
        if self.out.len() != self.n || self.zhat_done.load(Ordering::Acquire) != k {
            return Err(Error::InvalidArgument(
                "MergeProblem::apply_cols before order_output and lowner_range".into(),
            ));
        }
        assert!(cols.end <= self.n && out.nrows() == self.n && out.ncols() == cols.len());
        let srcs = &self.out[cols.clone()];
        let Some(rr) = root_range(srcs) else {
            return Ok(());
        };
        let (n1, n) = (self.n1, self.n);
        let n2 = n - n1;
        let ntop = self.ctot[0] + self.ctot[1];
        let nbot = self.ctot[1] + self.ctot[2];
        if work.len() < n1 * ntop + n2 * nbot {
            return Err(Error::Shape(format!(
                "MergeProblem::apply_cols: workspace of {} words",
                work.len()
            )));
        }
        let (top, bot) = work.split_at(n1 * ntop);
        let (qtop, qbot) = (
            MatRef::from_column_major_slice(top, n1, ntop),
            MatRef::from_column_major_slice(&bot[..n2 * nbot], n2, nbot),
        );
        // Where each root's column goes in `out`.
        let mut dest = vec![0usize; rr.len()];
        for (c, s) in srcs.iter().enumerate() {
            if let OutCol::Root(r) = *s {
                dest[r - rr.start] = c;
            }
        }
        // The roots in chunks of at most APPLY_CHUNK columns, so a wide tile
        // (the one-stage path's column halves) holds two `n x APPLY_CHUNK`
        // temporaries, not two of its own width.
        let mut r0 = rr.start;
        while r0 < rr.end {
            let chunk = r0..(r0 + APPLY_CHUNK).min(rr.end);
            let nr = chunk.len();
            let u = self.eigenvector_block(chunk.clone())?;
            let dest = &dest[chunk.start - rr.start..chunk.end - rr.start];
            // Through a temporary, also when the chunk's columns are adjacent
            // in the tile (89-100% of the roots at the large merges of the
            // test spectra, `benches/dc_levels.rs`): writing the products
            // straight into them made no measurable difference, and the
            // memory accounting of the EVD (`memory_bytes`, which must stay
            // within 10% of the measured peak) counts this temporary.
            let mut tmp = Mat::<T>::zeros(n, nr);
            self.product(qtop, qbot, u.as_ref(), tmp.as_mut());
            for (i, &c) in dest.iter().enumerate() {
                out.rb_mut().col_mut(c).copy_from(tmp.col(i));
            }
            r0 = chunk.end;
        }
        Ok(())
    }

    /// `blockdiag(Q1, Q2) U` for the coefficients `u` (rows in type order) into
    /// `dst` (`n x u.ncols()`, every row written): the top rows from the
    /// top-only and dense columns' halves `qtop`, the bottom rows from the
    /// dense and bottom-only columns' halves `qbot` (`dlaed3`'s two GEMMs);
    /// zeros for a half without columns.
    fn product(
        &self,
        qtop: MatRef<'_, T>,
        qbot: MatRef<'_, T>,
        u: MatRef<'_, T>,
        dst: MatMut<'_, T>,
    ) {
        let (top, bot) = dst.split_at_row_mut(self.n1);
        let (ntop, nbot) = (qtop.ncols(), qbot.ncols());
        for (mut part, q, first, cols) in [(top, qtop, 0, ntop), (bot, qbot, self.ctot[0], nbot)] {
            if cols > 0 {
                gemm(part, q, u.subrows(first, cols));
            } else {
                part.fill(T::zero());
            }
        }
    }

    /// The normalised eigenvectors `u_r = (D - lambda_r)^{-1} z-hat` of roots `rr`
    /// of the rank-one problem, as the columns of a `k x rr.len()` matrix with rows
    /// in type order.
    fn eigenvector_block(&self, rr: Range<usize>) -> Result<Mat<T>, Error> {
        let k = self.k();
        let guard = self.zhat.read();
        let zhat = guard.mat();
        let d = &self.secular.d;
        let mut block = Mat::<T>::zeros(k, rr.len());
        let mut u = vec![T::zero(); k];
        // z-hat and the poles as slices: an elementwise loop the compiler
        // vectorises (indexed through the 1 x k matrix, every division was
        // scalar).
        let zh: Vec<T> = (0..k).map(|i| zhat[(0, i)]).collect();
        let d = &d[..k];
        for (c, r) in rr.enumerate() {
            let root = &self.roots[r];
            let Some(scale) = root_vector(&zh, d, d[root.origin], root.tau, &mut u) else {
                return Err(Error::NoConvergence {
                    stage: "dc merge",
                    detail: format!("eigenvector {r} of a {k}x{k} secular problem is degenerate"),
                });
            };
            for (i, &ui) in u.iter().enumerate() {
                block[(self.type_row[i], c)] = ui * scale;
            }
        }
        Ok(block)
    }
}

/// `dst := lhs * rhs` with faer's sequential GEMM.
pub(crate) fn gemm<T: Scalar>(dst: MatMut<'_, T>, lhs: MatRef<'_, T>, rhs: MatRef<'_, T>) {
    matmul(dst, Accum::Replace, lhs, rhs, T::one(), Par::Seq);
}

/// Step 2 for roots `range` of a merge, storing into the problem (see
/// [`MergeProblem::solve_roots_range`]).
pub fn solve_roots<T: Scalar>(problem: &MergeProblem<T>, range: Range<usize>) -> Result<(), Error> {
    problem.solve_roots_range(range)
}
