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
//!    [`crate::linalg::stedc::merge::deflate`] pass), group the kept columns by sparsity
//!    type and copy them into the problem's workspace.
//! 2. [`SvdMerge::solve_roots_range`] per range of roots: several ranges may run
//!    concurrently through `&self`, each borrowing only its own columns of the
//!    root workspace (a run-time checked [`SplitColumns`]); [`solve_roots`] is the
//!    sequential form.
//! 3. [`SvdMerge::lowner`]: Gu–Eisenstat `z-hat` from all roots (so the computed
//!    vectors are orthogonal to working precision), then the normalised `x_r`, `y_r`.
//! 4. [`SvdMerge::apply_cols`] per column tile: `U = blockdiag(U1, 1, U2) X` and
//!    `V = blockdiag(V1, V2) Y` as GEMMs over the type groups (`dlasd3`), deflated
//!    columns copied, written in ascending order of the singular values; plus
//!    [`SvdMerge::null_vector_into`] (`sqre = 1`) and
//!    [`SvdMerge::singular_values_into`].

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use faer::reborrow::{Reborrow, ReborrowMut};
use faer::{Mat, MatMut, MatRef};

use super::lowner::svd_zhat;
use super::secular::solve_svd_roots_into;
use crate::error::Error;
use crate::linalg::dqds::exponent;
use crate::linalg::stedc::merge::{
    deflate, emit_cols, gather_cols, gemm, group_by_type, merge_order, root_range, rotate_cols,
    sorted_by_value, unit_scale, values_in_order, ColType, OutCol,
};
use crate::linalg::stedc::secular::Secular;
use crate::matrix::SplitColumns;
use crate::scalar::Scalar;

/// Products `[top; bottom] = [top_src * C[top_rows]; bot_src * C[bot_rows]]` of one side
/// (U or V) of a merge: the gathered column groups and which coefficient rows they
/// multiply.
#[derive(Clone, Debug)]
struct Side<T> {
    top: Mat<T>,
    bot: Mat<T>,
    top_rows: Range<usize>,
    bot_rows: Range<usize>,
}

impl<T: Scalar> Side<T> {
    /// `out[0..top.nrows()]` and the last `bot.nrows()` rows of `out` from `coef`.
    fn product(&self, coef: MatRef<'_, T>, mut out: MatMut<'_, T>) {
        let (nt, nb, nc) = (self.top.nrows(), self.bot.nrows(), coef.ncols());
        let rows = out.nrows();
        if !self.top_rows.is_empty() {
            let c = coef.subrows(self.top_rows.start, self.top_rows.len());
            gemm(
                out.rb_mut().submatrix_mut(0, 0, nt, nc),
                self.top.as_ref(),
                c,
            );
        }
        if !self.bot_rows.is_empty() {
            let c = coef.subrows(self.bot_rows.start, self.bot_rows.len());
            gemm(
                out.rb_mut().submatrix_mut(rows - nb, 0, nb, nc),
                self.bot.as_ref(),
                c,
            );
        }
    }
}

/// Everything one bidiagonal merge needs between its steps; owns its workspace, so
/// the node's `U` and `V` blocks may be overwritten by [`SvdMerge::apply_cols`] after
/// [`SvdMerge::new`] returns.
pub struct SvdMerge<T> {
    n: usize,
    nl: usize,
    sqre: bool,
    /// The power of two the data were divided by.
    scale: T,
    /// The kept rank-one problem: poles ascending with `d[0] = 0`, unit `z`.
    secular: Secular<T>,
    /// Roots, ascending; copied out of row `k` of `diff` by step 3.
    sigma: Vec<T>,
    /// `(k + 1) x k`: column `r` holds `d_j - sigma_r` in rows `0..k` and `sigma_r`
    /// in row `k` after step 2; the left coefficients `x_r` (rows in U order: the
    /// removed row first, then the U type groups) in rows `0..k` after step 3.
    /// Step 2 fills disjoint column ranges concurrently.
    diff: SplitColumns<T>,
    /// `k x k`: `d_j + sigma_r` after step 2; the right coefficients `y_r` (rows in V
    /// type order) after step 3.
    sum: SplitColumns<T>,
    /// Row of kept entry `j` in the U and in the V coefficient order.
    u_row: Vec<usize>,
    v_row: Vec<usize>,
    u_side: Side<T>,
    v_side: Side<T>,
    /// Deflated columns (`n x nd`, `m x nd`) and values (scaled), ascending.
    u_defl: Mat<T>,
    v_defl: Mat<T>,
    ddefl: Vec<T>,
    /// The null vector of `B` (`sqre = 1`), `m x 1`.
    v_null: Mat<T>,
    out: Vec<OutCol>,
    /// Number of roots solved by [`SvdMerge::solve_roots_range`].
    roots_solved: AtomicUsize,
    vectors_done: bool,
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
    /// Step 1: forms the merge problem of a node and deflates it.
    ///
    /// * `d` (length `n`): singular values of the left child (ascending, `nl` of them),
    ///   then one ignored entry (the removed row's place), then those of the right
    ///   child (ascending). `alpha`, `beta`: the removed row's entries `d_nl`, `e_nl`.
    /// * `u` (`n x n`): the node's `U` block, holding `U1` in rows and columns `0..nl`
    ///   and `U2` in `nl+1..n`; `v` (`m x m`, `m = n` or `n + 1`): the node's `V` block,
    ///   holding `V1` in `0..nl+1` (its null vector last) and `V2` in `nl+1..m`. On
    ///   return both blocks are scratch: the problem owns copies of what it needs.
    pub fn new(
        d: &[T],
        alpha: T,
        beta: T,
        mut u: MatMut<'_, T>,
        mut v: MatMut<'_, T>,
        nl: usize,
    ) -> Result<Self, Error> {
        let n = d.len();
        let m = v.nrows();
        if u.nrows() != n
            || u.ncols() != n
            || v.ncols() != m
            || (m != n && m != n + 1)
            || nl == 0
            || nl + 1 >= n
        {
            return Err(Error::Shape(format!(
                "SvdMerge::new: d has {n} entries, u is {}x{}, v is {}x{}, nl = {nl}",
                u.nrows(),
                u.ncols(),
                v.nrows(),
                v.ncols()
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
        let u_side = Side {
            top: gather_cols(ur, 0..nl, &ucols(0..ctu[0] + ctu[1])),
            bot: gather_cols(ur, nl + 1..n, &ucols(ctu[0]..ku)),
            top_rows: 1..1 + ctu[0] + ctu[1],
            bot_rows: 1 + ctu[0]..k.max(1),
        };
        let v_side = Side {
            top: gather_cols(vr, 0..nl + 1, &vcols(0..ctv[0] + ctv[1])),
            bot: gather_cols(vr, nl + 1..m, &vcols(ctv[0]..k)),
            top_rows: 0..ctv[0] + ctv[1],
            bot_rows: ctv[0]..k,
        };
        let defl = sorted_by_value(defl, &dl);
        let ddefl: Vec<T> = defl.iter().map(|&j| dl[j]).collect();
        let mut u_defl = Mat::<T>::zeros(n, defl.len());
        for (s, &j) in defl.iter().enumerate() {
            if perm[j] == 0 {
                u_defl[(nl, s)] = one; // only in a zero problem: the removed row
            } else {
                u_defl.col_mut(s).copy_from(ur.col(ucol(perm[j])));
            }
        }
        let v_defl = gather_cols(
            vr,
            0..m,
            &defl.iter().map(|&j| vcol(perm[j])).collect::<Vec<_>>(),
        );
        let v_null = if sqre {
            gather_cols(vr, 0..m, &[n])
        } else {
            Mat::zeros(m, 0)
        };

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
            sigma: vec![zero; k],
            diff: SplitColumns::new(Mat::zeros(k + 1, k)),
            sum: SplitColumns::new(Mat::zeros(k, k)),
            u_row,
            v_row,
            u_side,
            v_side,
            u_defl,
            v_defl,
            ddefl,
            v_null,
            out: Vec::new(),
            roots_solved: AtomicUsize::new(0),
            vectors_done: false,
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

    /// The secular equation of the kept part (scaled data).
    pub fn secular(&self) -> &Secular<T> {
        &self.secular
    }

    /// Step 2 for roots `range` (`range.end <= k`): solves them and stores them
    /// in the problem. Several disjoint ranges may be solved concurrently through
    /// `&self`: each borrows only its own columns of the root workspace (checked at
    /// run time, so overlapping ranges panic instead of racing). The results do not
    /// depend on how `0..k` is split; [`SvdMerge::lowner`] needs every root solved.
    pub fn solve_roots_range(&self, range: Range<usize>) -> Result<(), Error> {
        let k = self.k();
        if range.start > range.end || range.end > k {
            return Err(Error::Shape(format!(
                "solve_roots: range {range:?} of {k} roots"
            )));
        }
        let len = range.len();
        let mut dcols = self.diff.cols_mut(range.clone());
        let mut scols = self.sum.cols_mut(range.clone());
        let mut dblock = dcols.mat();
        let mut sigma = vec![T::zero(); len];
        solve_svd_roots_into(
            &self.secular,
            range,
            &mut sigma,
            dblock.rb_mut().subrows_mut(0, k),
            scols.mat(),
        )?;
        for (c, x) in sigma.into_iter().enumerate() {
            dblock[(k, c)] = x;
        }
        self.roots_solved.fetch_add(len, Ordering::AcqRel);
        Ok(())
    }

    /// Step 3: Löwner / Gu–Eisenstat `z-hat` (`dlasd3`):
    /// `z-hat_i^2 = -(d_i^2 - sigma_i^2) prod_{j != i} (d_i^2 - sigma_j^2) / (d_i^2 - d_j^2)`
    /// with every factor a product of accurate differences, signed like `z_i`; then
    /// `y_r = (D - sigma_r^2)^{-1} z-hat` and `x_r = (-1, d_j y_rj)`, each normalised.
    /// Also fixes the output order (ascending merge of roots and deflated values).
    pub fn lowner(&mut self) -> Result<(), Error> {
        let k = self.k();
        if self.roots_solved.load(Ordering::Acquire) != k {
            return Err(Error::InvalidArgument(
                "SvdMerge::lowner called before all roots were solved".into(),
            ));
        }
        let dl = &self.secular.d;
        // Exclusive through `&mut self`: no root task can hold a borrow.
        let diff = self.diff.as_mut();
        for (r, x) in self.sigma.iter_mut().enumerate() {
            *x = diff[(k, r)];
        }
        let mut diff = diff.subrows_mut(0, k);
        let mut sum = self.sum.as_mut();
        let zhat = svd_zhat(&self.secular.z, diff.rb(), sum.rb(), dl);
        let mut y = vec![T::zero(); k];
        let mut x = vec![T::zero(); k];
        for r in 0..k {
            // Over contiguous columns (vectorised divisions, the step's cost).
            let dc = col_slice_mut(diff.rb_mut().col_mut(r));
            let sc = col_slice_mut(sum.rb_mut().col_mut(r));
            for ((((yi, xi), &zi), (&a, &b)), &di) in y
                .iter_mut()
                .zip(x.iter_mut())
                .zip(&zhat)
                .zip(dc.iter().zip(sc.iter()))
                .zip(dl)
            {
                *yi = zi / (a * b);
                *xi = di * *yi;
            }
            x[0] = -T::one();
            let (Some(sy), Some(sx)) = (unit_scale(&y), unit_scale(&x)) else {
                return Err(Error::NoConvergence {
                    stage: "bdsdc merge",
                    detail: format!(
                        "singular vector {r} of a {k}x{k} secular problem is degenerate"
                    ),
                });
            };
            for i in 0..k {
                dc[self.u_row[i]] = x[i] * sx;
                sc[self.v_row[i]] = y[i] * sy;
            }
        }
        self.out = merge_order(&self.sigma, &self.ddefl);
        self.vectors_done = true;
        Ok(())
    }

    /// Source of each output column (valid after [`SvdMerge::lowner`]).
    pub fn out_cols(&self) -> &[OutCol] {
        &self.out
    }

    /// Writes the merged singular values, ascending, into `d` (length `n`). Valid
    /// after [`SvdMerge::lowner`].
    pub fn singular_values_into(&self, d: &mut [T]) {
        assert!(self.vectors_done && d.len() == self.n);
        values_in_order(&self.out, &self.sigma, &self.ddefl, d);
        for x in d.iter_mut() {
            *x *= self.scale;
        }
    }

    /// Step 4 on one tile: writes output columns `cols` (of `0..n`) of the merged `U`
    /// block into `u_out` (`n x cols.len()`) and of `V` into `v_out` (`m x
    /// cols.len()`). Reads only `self`; tiles are independent. For bitwise
    /// reproducibility use the same tiling every time (GEMM results may depend on the
    /// shape).
    pub fn apply_cols(&self, cols: Range<usize>, u_out: MatMut<'_, T>, v_out: MatMut<'_, T>) {
        assert!(self.vectors_done, "apply_cols before lowner");
        let (n, m) = (self.n, self.m());
        assert!(cols.end <= n && u_out.nrows() == n && v_out.nrows() == m);
        assert!(u_out.ncols() == cols.len() && v_out.ncols() == cols.len());
        let srcs = &self.out[cols];
        let rr = root_range(srcs);
        let (mut ut, mut vt) = (Mat::<T>::zeros(0, 0), Mat::<T>::zeros(0, 0));
        if let Some(rr) = rr.clone() {
            let nr = rr.len();
            let k = self.k();
            // Shared borrows: every root task's column borrow ended before `lowner`.
            let (dg, sg) = (self.diff.read(), self.sum.read());
            let x = dg.mat().subrows(0, k).subcols(rr.start, nr);
            ut = Mat::zeros(n, nr);
            self.u_side.product(x, ut.as_mut());
            ut.as_mut().row_mut(self.nl).copy_from(x.row(0));
            vt = Mat::zeros(m, nr);
            self.v_side
                .product(sg.mat().subcols(rr.start, nr), vt.as_mut());
        }
        let r0 = rr.map(|r| r.start).unwrap_or(0);
        emit_cols(srcs, ut.as_ref(), r0, self.u_defl.as_ref(), u_out);
        emit_cols(srcs, vt.as_ref(), r0, self.v_defl.as_ref(), v_out);
    }

    /// Writes the null vector of the node (`sqre = 1`; the last column of its `V`
    /// block) into `out` (`m x 1`). Does nothing for `sqre = 0`.
    pub fn null_vector_into(&self, mut out: MatMut<'_, T>) {
        if self.sqre {
            out.rb_mut().col_mut(0).copy_from(self.v_null.col(0));
        }
    }
}

/// The contiguous entries of a column of a column-major matrix.
fn col_slice_mut<T: Scalar>(c: faer::ColMut<'_, T>) -> &mut [T] {
    c.try_as_col_major_mut()
        .expect("workspace columns are contiguous")
        .as_slice_mut()
}

/// Step 2 for roots `range` of a merge, sequentially: [`SvdMerge::solve_roots_range`]
/// (kept as a free function for the serial driver).
pub fn solve_roots<T: Scalar>(problem: &mut SvdMerge<T>, range: Range<usize>) -> Result<(), Error> {
    problem.solve_roots_range(range)
}
