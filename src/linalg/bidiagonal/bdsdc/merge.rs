//! One merge of the bidiagonal divide and conquer: two solved halves and the row
//! between them (Gu & Eisenstat 1995, "A divide-and-conquer algorithm for the
//! bidiagonal SVD"; LAPACK `dlasd1`–`dlasd3` in purpose).
//!
//! # The problem
//!
//! A node is an `n x m` upper bidiagonal `B` (`m = n + sqre`, `sqre` 0 or 1: with
//! `sqre = 1` the last row has its superdiagonal entry in an extra column). Removing
//! row `nl` leaves `B1` (rows `0..nl`, `nl x (nl + 1)`) and `B2` (rows `nl+1..n`,
//! `nr x (nr + sqre)`); the row holds `alpha = d_nl` in column `nl` and `beta = e_nl`
//! in column `nl + 1`. With the children's SVDs `B1 = U1 [S1 0] V1^T`,
//! `B2 = U2 [S2 (0)] V2^T`,
//!
//! ```text
//! B = blockdiag(U1, 1, U2) M blockdiag(V1, V2)^T,   M = [z^T; 0 diag(S1, S2)] (permuted)
//! ```
//!
//! where `z = (alpha * last row of V1, beta * first row of V2)` and the null column of
//! `V1` gives the pole `d_0 = 0`. With `sqre = 1` the null column of `V2` is rotated
//! into that of `V1` (`z_0 = hypot(z_0, z_last)`), the complementary combination being
//! the null vector of `B`. `M^T M = diag(d)^2 + z z^T`, so the singular values solve the
//! secular equation of [`super::secular`]; the right singular vectors of `M` are
//! `y_r = (D - sigma_r^2)^{-1} z`, the left ones `x_r = (-1, d_j y_rj)` (the first
//! entry belongs to the removed row).
//!
//! # Steps (each a separate call, so a task graph can schedule them)
//!
//! 1. [`SvdMerge::new`]: scale by a power of two, form `z`, deflate (tiny `z_j`, close
//!    poles merged by a rotation of both the `U` and the `V` columns; the shared
//!    `stedc::merge::deflate` pass), group the kept columns by sparsity
//!    type and copy their halves into the caller's workspace. Deflated columns and the
//!    null vector (`sqre = 1`, the last column of the `V` block) stay in the blocks.
//! 2. [`SvdMerge::solve_roots_range`] per range of roots (concurrently through
//!    `&self`); a root is kept as its origin pole and offset ([`Root`]), its
//!    differences recomputed bitwise the same where needed: no `k x k` arrays.
//! 3. [`SvdMerge::order_output`]: the output order, and the deflated columns of `U`
//!    and `V` moved in place to their output columns.
//! 4. [`SvdMerge::lowner_range`] over any partition of `0..k`: Gu–Eisenstat `z-hat`
//!    (so the computed vectors are orthogonal to working precision).
//! 5. [`SvdMerge::apply_cols`] per column tile: the normalised `x_r`, `y_r` of the
//!    tile's roots, then `U = blockdiag(U1, 1, U2) X` and `V = blockdiag(V1, V2) Y` as
//!    GEMMs over the type groups (`dlasd3`) into the roots' columns; plus
//!    [`SvdMerge::singular_values_into`].

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use faer::reborrow::{Reborrow, ReborrowMut};
use faer::{Mat, MatMut};

use super::lowner::svd_zhat;
use super::secular::locate_svd_root;
use crate::error::Error;
use crate::linalg::blas::lasr::rotate_cols;
use crate::linalg::blas::pow2::exponent;
use crate::linalg::tridiagonal::stedc::merge::{
    deflate, gather_roots, group_by_type, merge_order, move_columns, root_range, sorted_by_value,
    values_in_order, ColType, OutCol, SolvedRange,
};
use crate::linalg::tridiagonal::stedc::secular::{Root, Secular};
use crate::matrix::SplitColumns;
use crate::scalar::Scalar;

mod side;
mod vector;

use side::Side;
use vector::svd_root_vectors;

/// Everything one bidiagonal merge needs between its steps, but the copies of the
/// children's vectors, which live in the caller's workspace.
pub struct SvdMerge<T> {
    n: usize,
    nl: usize,
    sqre: bool,
    /// The power of two the data were divided by.
    scale: T,
    /// The kept rank-one problem: poles ascending with `d[0] = 0`, unit `z`.
    secular: Secular<T>,
    /// Roots solved by step 2, one entry per call.
    solved: parking_lot::Mutex<Vec<SolvedRange<T>>>,
    /// All roots, ascending, gathered by step 3.
    roots: Vec<Root<T>>,
    /// `1 x k`: `z-hat` (step 4 fills disjoint ranges concurrently).
    zhat: SplitColumns<T>,
    /// Number of `z-hat` entries formed by step 4.
    zhat_done: AtomicUsize,
    /// Row of kept entry `j` in the U and in the V coefficient order.
    u_row: Vec<usize>,
    v_row: Vec<usize>,
    u_side: Side,
    v_side: Side,
    /// The deflated columns, ascending: the `U` column (`None`: the unit vector of
    /// the removed row, only in a zero problem) and the `V` column of the blocks.
    defl_cols: Vec<(Option<usize>, usize)>,
    /// Deflated values (scaled), ascending.
    ddefl: Vec<T>,
    out: Vec<OutCol>,
}

/// The smallest power of two `>= x` (1 for zero or non-finite `x`; the largest
/// finite power of two if that would overflow): dividing by it is exact.
pub(crate) fn pow2_at_least<T: Scalar>(x: T) -> T {
    if x <= T::zero() || !x.is_finite() {
        return T::one();
    }
    let pow2 = |e: i32| T::of(2f64.powi(e / 2)) * T::of(2f64.powi(e - e / 2));
    // Exponents from the binary representation (log2 rounds near powers of two).
    let top = exponent(T::max_value().f64());
    let e = exponent(x.f64());
    // Two factors, each a normal number even when 2^e is subnormal.
    let p = pow2(e);
    if p < x && e < top {
        pow2(e + 1)
    } else {
        p
    }
}

impl<T: Scalar> SvdMerge<T> {
    /// Words of the workspace [`SvdMerge::new`] needs for a node of `n` rows and `m`
    /// columns with the removed row `nl`: `max(nl, nr) (n - 1)` for the halves of
    /// `U` and `max(nl + 1, m - nl - 1) (n + 1)` for those of `V` (a dense column
    /// comes from a rotation that deflated another one, see
    /// [`crate::linalg::tridiagonal::stedc::merge`]).
    pub fn workspace_len(n: usize, m: usize, nl: usize) -> usize {
        let nr = n.saturating_sub(nl + 1);
        let u = nl.max(nr).saturating_mul(n.saturating_sub(1));
        let v = (nl + 1).max(m.saturating_sub(nl + 1)).saturating_mul(n + 1);
        u.saturating_add(v)
    }

    /// Step 1: forms the merge problem of a node and deflates it.
    ///
    /// * `d` (length `n`): singular values of the left child (ascending, `nl` of them),
    ///   then one ignored entry (the removed row's place), then those of the right
    ///   child (ascending). `alpha`, `beta`: the removed row's entries `d_nl`, `e_nl`.
    /// * `u` (`n x n`): the node's `U` block, holding `U1` in rows and columns `0..nl`
    ///   and `U2` in `nl+1..n`; `v` (`m x m`, `m = n` or `n + 1`): the node's `V` block,
    ///   holding `V1` in `0..nl+1` (its null vector last) and `V2` in `nl+1..m`. On
    ///   return they hold the deflated vectors (rotated) and, with `sqre = 1`, the
    ///   node's null vector in the last column of `V`; the rest is scratch.
    /// * `work`: at least [`SvdMerge::workspace_len`]`(n, m, nl)` words; receives the
    ///   halves of the kept vectors, which [`SvdMerge::apply_cols`] reads: the caller
    ///   keeps it unchanged until the last apply.
    pub fn new(
        d: &[T],
        alpha: T,
        beta: T,
        mut u: MatMut<'_, T>,
        mut v: MatMut<'_, T>,
        nl: usize,
        work: &mut [T],
    ) -> Result<Self, Error> {
        let n = d.len();
        let m = v.nrows();
        if u.nrows() != n
            || u.ncols() != n
            || v.ncols() != m
            || (m != n && m != n + 1)
            || nl == 0
            || nl + 1 >= n
            || work.len() < Self::workspace_len(n, m, nl)
        {
            return Err(Error::Shape(format!(
                "SvdMerge::new: d has {n} entries, u is {}x{}, v is {}x{}, nl = {nl}, \
                 workspace {} words",
                u.nrows(),
                u.ncols(),
                v.nrows(),
                v.ncols(),
                work.len()
            )));
        }
        let sqre = m == n + 1;
        let nr = n - nl - 1;
        let zero = T::zero();
        let one = T::one();
        // Everything else of the blocks is zero (only the children's blocks are data).
        u.rb_mut().submatrix_mut(0, nl, nl, n - nl).fill(zero);
        u.rb_mut().submatrix_mut(nl, 0, 1, n).fill(zero);
        u.rb_mut().submatrix_mut(nl + 1, 0, nr, nl + 1).fill(zero);
        v.rb_mut()
            .submatrix_mut(0, nl + 1, nl + 1, m - nl - 1)
            .fill(zero);
        v.rb_mut()
            .submatrix_mut(nl + 1, 0, m - nl - 1, nl + 1)
            .fill(zero);

        // Scale by a power of two so the largest entry is in (1/2, 1] (dlasd1).
        let mut orgnrm = alpha.abs().max(beta.abs());
        for (i, x) in d.iter().enumerate() {
            if i != nl {
                orgnrm = orgnrm.max(x.abs());
            }
        }
        let scale = pow2_at_least(orgnrm);
        let (a, b) = (alpha / scale, beta / scale);

        // M's columns c: 0 = V1's null vector (pole 0), 1..=nl = V1's singular
        // vectors, nl+1..n = V2's. Their U columns and V columns in the blocks:
        let ucol = |c: usize| if c <= nl { c - 1 } else { c };
        let vcol = |c: usize| match c {
            0 => nl,
            c if c <= nl => c - 1,
            c => c,
        };
        let mut zc = vec![zero; n];
        let mut pc = vec![zero; n];
        zc[0] = a * v[(nl, nl)];
        for c in 1..=nl {
            zc[c] = a * v[(nl, c - 1)];
            pc[c] = d[c - 1] / scale;
        }
        for c in nl + 1..n {
            zc[c] = b * v[(nl + 1, c)];
            pc[c] = d[c] / scale;
        }
        let dmax = pc.iter().fold(zero, |acc, x| acc.max(x.abs()));
        // dlasd2's tolerance: 8 eps times the largest entry of M.
        let tol = T::of(8.0) * T::EPS * dmax.max(a.abs()).max(b.abs());
        let mut null_dense = false;
        if sqre {
            // Rotate V2's null vector into V1's: z_0 takes both weights, the other
            // combination is B's null vector.
            let zlast = b * v[(nl + 1, n)];
            let tau = zc[0].hypot(zlast);
            if tau > tol {
                rotate_cols(v.rb_mut(), nl, n, zc[0] / tau, zlast / tau);
                null_dense = zlast != zero;
                zc[0] = tau;
            }
        }
        // Pole 0 never deflates: its weight is at least tol (a perturbation of M by
        // at most tol, as in dlasd2). A zero problem deflates completely.
        let all_zero = tol == zero;
        if zc[0].abs() <= tol && !all_zero {
            zc[0] = tol;
        }

        // Pole order: pole 0, then the children's values merged ascending (stable).
        let mut perm: Vec<usize> = (1..n).collect();
        perm.sort_by(|&x, &y| {
            pc[x]
                .partial_cmp(&pc[y])
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        perm.insert(0, 0);
        let mut dl: Vec<T> = perm.iter().map(|&c| pc[c]).collect();
        let mut zs: Vec<T> = perm.iter().map(|&c| zc[c]).collect();
        let mut typ: Vec<ColType> = perm
            .iter()
            .map(|&c| {
                if c <= nl {
                    ColType::Top
                } else {
                    ColType::Bottom
                }
            })
            .collect();
        let (mut keep, defl) = if all_zero {
            (Vec::new(), (0..n).collect())
        } else {
            deflate(
                &mut dl,
                &mut zs,
                &mut typ,
                1..n,
                one,
                tol,
                |p, j, cs, sn| {
                    rotate_cols(u.rb_mut(), ucol(perm[p]), ucol(perm[j]), cs, sn);
                    rotate_cols(v.rb_mut(), vcol(perm[p]), vcol(perm[j]), cs, sn);
                },
            )
        };
        if !all_zero {
            keep.insert(0, 0);
        }
        let k = keep.len();
        // Keep the first pole off pole 0 (dlasd2's half tolerance).
        if k >= 2 && dl[keep[1]] < T::of(0.5) * tol {
            dl[keep[1]] = T::of(0.5) * tol;
        }

        // Type groups: U without pole 0 (its U column is the removed row), V with it.
        let (ctu, trow_u, byrow_u) = group_by_type(&keep[k.min(1)..], &typ);
        typ[0] = if null_dense {
            ColType::Dense
        } else {
            ColType::Top
        };
        let (ctv, v_row, byrow_v) = group_by_type(&keep, &typ);
        let mut u_row = vec![0usize; k];
        for (i, r) in trow_u.iter().enumerate() {
            u_row[i + 1] = 1 + r;
        }
        let (ur, vr) = (u.rb(), v.rb());
        let ucols = |rows: Range<usize>| -> Vec<usize> {
            byrow_u[rows].iter().map(|&j| ucol(perm[j])).collect()
        };
        let vcols = |rows: Range<usize>| -> Vec<usize> {
            byrow_v[rows].iter().map(|&j| vcol(perm[j])).collect()
        };
        let ku = k.saturating_sub(1);
        let (u_side, at) = Side::gather(
            ur,
            work,
            0,
            0..nl,
            &ucols(0..ctu[0] + ctu[1]),
            nl + 1..n,
            &ucols(ctu[0]..ku),
            (1..1 + ctu[0] + ctu[1], 1 + ctu[0]..k.max(1)),
        );
        let (v_side, _) = Side::gather(
            vr,
            work,
            at,
            0..nl + 1,
            &vcols(0..ctv[0] + ctv[1]),
            nl + 1..m,
            &vcols(ctv[0]..k),
            (0..ctv[0] + ctv[1], ctv[0]..k),
        );
        let defl = sorted_by_value(defl, &dl);
        let ddefl: Vec<T> = defl.iter().map(|&j| dl[j]).collect();
        // Pole 0's U column is the removed row (it deflates only in a zero problem).
        let defl_cols = defl
            .iter()
            .map(|&j| ((perm[j] != 0).then(|| ucol(perm[j])), vcol(perm[j])))
            .collect();

        let zk: Vec<T> = keep.iter().map(|&j| zs[j]).collect();
        let znorm = zk.iter().fold(zero, |acc, &x| acc.hypot(x));
        let secular = Secular {
            d: keep.iter().map(|&j| dl[j]).collect(),
            z: zk.iter().map(|&x| x / znorm).collect(),
            rho: znorm * znorm,
        };
        Ok(Self {
            n,
            nl,
            sqre,
            scale,
            secular,
            solved: parking_lot::Mutex::new(Vec::new()),
            roots: Vec::new(),
            zhat: SplitColumns::new(Mat::zeros(1, k)),
            zhat_done: AtomicUsize::new(0),
            u_row,
            v_row,
            u_side,
            v_side,
            defl_cols,
            ddefl,
            out: Vec::new(),
        })
    }

    /// Number `n` of rows of the node.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Number of columns `n + sqre` of the node.
    pub fn m(&self) -> usize {
        self.n + usize::from(self.sqre)
    }

    /// Number `k` of kept singular values (roots of the secular equation).
    pub fn k(&self) -> usize {
        self.secular.len()
    }

    /// The shapes (rows x kept columns) of the four gathered blocks that
    /// [`SvdMerge::apply_cols`] multiplies by the roots' coefficients: the top
    /// and bottom groups of `U`, then of `V` (`dlasd3`'s column groups). A tile
    /// of `r` roots costs `2 r sum(rows cols)` flops.
    pub fn gemm_shapes(&self) -> [(usize, usize); 4] {
        [
            self.u_side.top_shape,
            self.u_side.bot_shape,
            self.v_side.top_shape,
            self.v_side.bot_shape,
        ]
    }

    /// The secular equation of the kept part (scaled data).
    pub fn secular(&self) -> &Secular<T> {
        &self.secular
    }

    /// Step 2 for roots `range` (`range.end <= k`): solves them and keeps them in
    /// the problem. Several disjoint ranges may be solved concurrently through
    /// `&self`; the results do not depend on how `0..k` is split.
    /// [`SvdMerge::order_output`] needs every root solved, once.
    pub fn solve_roots_range(&self, range: Range<usize>) -> Result<(), Error> {
        let k = self.k();
        if range.start > range.end || range.end > k {
            return Err(Error::Shape(format!(
                "solve_roots: range {range:?} of {k} roots"
            )));
        }
        let sec = &self.secular;
        let (mut diff, mut sum) = (vec![T::zero(); k], vec![T::zero(); k]);
        let roots = range
            .clone()
            .map(|r| locate_svd_root(&sec.d, &sec.z, sec.rho, r, &mut diff, &mut sum))
            .collect::<Result<Vec<_>, _>>()?;
        self.solved.lock().push((range, roots));
        Ok(())
    }

    /// Step 3: gathers the roots of step 2 (an error unless they cover `0..k`
    /// exactly once), fixes the output order (ascending merge of roots and deflated
    /// values) and moves each deflated column of the node's blocks `u` (`n x n`)
    /// and `v` (`m x m`) to its output column: output column `j` is column `j` of
    /// the blocks, or `n - 1 - j` with `reversed` (a descending layout). The
    /// columns of the roots are left to [`SvdMerge::apply_cols`].
    pub fn order_output(
        &mut self,
        mut u: MatMut<'_, T>,
        v: MatMut<'_, T>,
        reversed: bool,
    ) -> Result<(), Error> {
        let (n, m, k) = (self.n, self.m(), self.k());
        if u.nrows() != n || u.ncols() != n || v.nrows() != m || v.ncols() != m {
            return Err(Error::Shape(format!(
                "SvdMerge::order_output: blocks {}x{} and {}x{} for a node of {n} x {m}",
                u.nrows(),
                u.ncols(),
                v.nrows(),
                v.ncols()
            )));
        }
        self.roots = gather_roots(&self.solved, k, "SvdMerge::order_output")?;
        let sigma: Vec<T> = self.roots.iter().map(|r| r.lambda).collect();
        self.out = merge_order(&sigma, &self.ddefl);
        let dest = |j: usize| if reversed { n - 1 - j } else { j };
        let (mut umoves, mut vmoves, mut units) = (Vec::new(), Vec::new(), Vec::new());
        for (j, src) in self.out.iter().enumerate() {
            if let OutCol::Deflated(s) = *src {
                let (uc, vc) = self.defl_cols[s];
                match uc {
                    Some(uc) => umoves.push((uc, dest(j))),
                    None => units.push(dest(j)),
                }
                vmoves.push((vc, dest(j)));
            }
        }
        move_columns(u.rb_mut(), &umoves);
        move_columns(v, &vmoves);
        // After the moves: no column still to be moved is overwritten.
        for c in units {
            let mut col = u.rb_mut().col_mut(c);
            col.fill(T::zero());
            col[self.nl] = T::one();
        }
        Ok(())
    }

    /// Step 4 on entries `rows` of `z-hat` (after step 3; disjoint ranges may run
    /// concurrently, with bitwise the same results however `0..k` is split):
    /// `z-hat_i^2 = -(d_i^2 - sigma_i^2) prod_{j != i} (d_i^2 - sigma_j^2) / (d_i^2 - d_j^2)`
    /// with every factor a product of accurate differences, signed like `z_i`
    /// (`dlasd3`).
    pub fn lowner_range(&self, rows: Range<usize>) -> Result<(), Error> {
        let k = self.k();
        if self.roots.len() != k || rows.start > rows.end || rows.end > k {
            return Err(Error::InvalidArgument(format!(
                "SvdMerge::lowner_range: rows {rows:?} of {k}, {} roots ordered",
                self.roots.len()
            )));
        }
        let zhat = svd_zhat(&self.secular, &self.roots, rows.clone());
        let mut cols = self.zhat.cols_mut(rows.clone());
        let mut dst = cols.mat();
        for (c, x) in zhat.into_iter().enumerate() {
            dst[(0, c)] = x;
        }
        self.zhat_done.fetch_add(rows.len(), Ordering::AcqRel);
        Ok(())
    }

    /// Steps 3 and 4 in one call (for sequential drivers).
    pub fn lowner(&mut self, u: MatMut<'_, T>, v: MatMut<'_, T>) -> Result<(), Error> {
        self.order_output(u, v, false)?;
        self.lowner_range(0..self.k())
    }

    /// Source of each output column (valid after [`SvdMerge::order_output`]).
    pub fn out_cols(&self) -> &[OutCol] {
        &self.out
    }

    /// Writes the merged singular values, ascending, into `d` (length `n`). Valid
    /// after [`SvdMerge::order_output`].
    pub fn singular_values_into(&self, d: &mut [T]) {
        assert!(self.out.len() == self.n && d.len() == self.n);
        let sigma: Vec<T> = self.roots.iter().map(|r| r.lambda).collect();
        values_in_order(&self.out, &sigma, &self.ddefl, d);
        for x in d.iter_mut() {
            *x *= self.scale;
        }
    }

    /// Step 5 on one tile: writes the root columns among output columns `cols` (of
    /// `0..n`) of the merged `U` block into `u_out` (`n x cols.len()`) and of `V`
    /// into `v_out` (`m x cols.len()`); the deflated ones were placed by step 3.
    /// `work` is the workspace given to [`SvdMerge::new`]. Reads only `self`; tiles
    /// are independent. For bitwise reproducibility use the same tiling every time
    /// (GEMM results may depend on the shape).
    ///
    /// Errors: [`Error::InvalidArgument`] before steps 3 and 4 are complete;
    /// [`Error::NoConvergence`] for a degenerate singular vector.
    pub fn apply_cols(
        &self,
        cols: Range<usize>,
        work: &[T],
        mut u_out: MatMut<'_, T>,
        mut v_out: MatMut<'_, T>,
    ) -> Result<(), Error> {
        let (n, m, k) = (self.n, self.m(), self.k());
        if self.out.len() != n || self.zhat_done.load(Ordering::Acquire) != k {
            return Err(Error::InvalidArgument(
                "SvdMerge::apply_cols before order_output and lowner_range".into(),
            ));
        }
        if work.len() < self.v_side.end() {
            return Err(Error::Shape(format!(
                "SvdMerge::apply_cols: workspace of {} words",
                work.len()
            )));
        }
        assert!(cols.end <= n && u_out.nrows() == n && v_out.nrows() == m);
        assert!(u_out.ncols() == cols.len() && v_out.ncols() == cols.len());
        let srcs = &self.out[cols];
        let Some(rr) = root_range(srcs) else {
            return Ok(());
        };
        let nr = rr.len();
        let (x, y) = self.coefficients(rr.clone())?;
        let mut ut = Mat::<T>::zeros(n, nr);
        self.u_side.product(work, x.as_ref(), ut.as_mut());
        ut.as_mut().row_mut(self.nl).copy_from(x.row(0));
        let mut vt = Mat::<T>::zeros(m, nr);
        self.v_side.product(work, y.as_ref(), vt.as_mut());
        for (c, s) in srcs.iter().enumerate() {
            if let OutCol::Root(r) = *s {
                u_out.rb_mut().col_mut(c).copy_from(ut.col(r - rr.start));
                v_out.rb_mut().col_mut(c).copy_from(vt.col(r - rr.start));
            }
        }
        Ok(())
    }

    /// The normalised coefficient vectors of roots `rr`: `x_r = (-1, d_j y_rj)`
    /// (rows in U order: the removed row first, then the U type groups) and
    /// `y_r = (D - sigma_r^2)^{-1} z-hat` (rows in V type order), as the columns of
    /// two `k x rr.len()` matrices.
    fn coefficients(&self, rr: Range<usize>) -> Result<(Mat<T>, Mat<T>), Error> {
        let k = self.k();
        let dl = &self.secular.d;
        let guard = self.zhat.read();
        let zhat = guard.mat();
        let (mut xm, mut ym) = (Mat::<T>::zeros(k, rr.len()), Mat::<T>::zeros(k, rr.len()));
        let (mut x, mut y) = (vec![T::zero(); k], vec![T::zero(); k]);
        let zrow: Vec<T> = (0..k).map(|i| zhat[(0, i)]).collect();
        for (c, r) in rr.enumerate() {
            let root = &self.roots[r];
            let (origin, tau) = (dl[root.origin], root.tau);
            let (Some(sy), Some(sx)) = svd_root_vectors(&zrow, dl, origin, tau, &mut y, &mut x)
            else {
                return Err(Error::NoConvergence {
                    stage: "bdsdc merge",
                    detail: format!(
                        "singular vector {r} of a {k}x{k} secular problem is degenerate"
                    ),
                });
            };
            for i in 0..k {
                xm[(self.u_row[i], c)] = x[i] * sx;
                ym[(self.v_row[i], c)] = y[i] * sy;
            }
        }
        Ok((xm, ym))
    }
}

/// Step 2 for roots `range` of a merge, sequentially: [`SvdMerge::solve_roots_range`]
/// (kept as a free function for the serial driver).
pub fn solve_roots<T: Scalar>(problem: &mut SvdMerge<T>, range: Range<usize>) -> Result<(), Error> {
    problem.solve_roots_range(range)
}
