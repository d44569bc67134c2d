//! One merge of divide and conquer: two solved halves plus a rank-one tear.
//!
//! With `T = blockdiag(T1, T2) + beta v v^T` (`v = e_{n1-1} + sign(beta) e_{n1}` after the
//! tear) and `Ti = Qi Di Qi^T`, we have
//! `T = blockdiag(Q1, Q2) (D + rho z z^T) blockdiag(Q1, Q2)^T` with
//! `z = (last row of Q1, sign(beta) first row of Q2) / sqrt(2)` and `rho = 2 |beta|`
//! (Cuppen 1981; LAPACK `dlaed1`). The merge runs in four steps, each a separate call so a
//! task graph can schedule them:
//!
//! 1. [`MergeProblem::new`]: form `z`, deflate (LAPACK `dlaed2`: tiny `rho |z_i|` and
//!    close pairs removed by Givens rotations applied to the eigenvector columns), and copy
//!    the eigenvector columns into the problem's own workspace, grouped by sparsity type
//!    (top-only, dense, bottom-only, deflated) as `dlaed2`/`dlaed3` do.
//! 2. [`solve_roots`] (or [`secular::solve_roots_into`] on split output buffers):
//!    the secular equation, independently per root.
//! 3. [`MergeProblem::lowner`]: Gu–Eisenstat (1994): recompute `z-hat` from all roots by
//!    the Löwner formula so that the eigenvectors `u_i = (D - lambda_i)^{-1} z-hat` of the
//!    computed rank-one problem are numerically orthogonal (LAPACK `dlaed3`), and normalise
//!    them into the `k x k` block `U`.
//! 4. [`MergeProblem::apply_cols`] per output column tile: `Q = blockdiag(Q1, Q2) U` with
//!    the deflated columns copied, written in ascending eigenvalue order; and
//!    [`MergeProblem::eigenvalues_into`].

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use faer::linalg::matmul::matmul;
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::{Accum, Mat, MatMut, MatRef, Par};

use super::secular::{self, Secular};
use crate::error::Error;
use crate::matrix::SplitColumns;
use crate::scalar::Scalar;

/// Sparsity type of a (possibly rotated) eigenvector column of `blockdiag(Q1, Q2)`
/// (or of the singular vector blocks of a bidiagonal merge).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ColType {
    /// Nonzero only in the first `n1` rows.
    Top,
    /// Nonzero in both halves (after a rotation mixing a top and a bottom column).
    Dense,
    /// Nonzero only in the last `n2` rows.
    Bottom,
}

/// Where output column `j` of a merge comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutCol {
    /// Root `r` of the secular equation (a column of `blockdiag(Q1, Q2) U`).
    Root(usize),
    /// Deflated column `s` (copied).
    Deflated(usize),
}

/// Everything one merge needs between its steps; owns its workspace, so the node's
/// eigenvector block may be overwritten by [`MergeProblem::apply_cols`] after
/// [`MergeProblem::new`] returns.
pub struct MergeProblem<T> {
    n: usize,
    n1: usize,
    /// The non-deflated rank-one problem (poles ascending).
    secular: Secular<T>,
    /// Roots, ascending (`lambda[r]` is root `r`), copied out of `delta` by step 3.
    lambda: Vec<T>,
    /// `(k + 1) x k`: column `r` holds `d_j - lambda_r` in its first `k` rows
    /// and `lambda_r` in row `k` after step 2, and the normalised eigenvector
    /// `u_r` (rows in type order) after step 3. Step 2 fills disjoint column
    /// ranges concurrently ([`MergeProblem::solve_roots_range`]).
    delta: SplitColumns<T>,
    /// Number of non-deflated columns of each type (top, dense, bottom).
    ctot: [usize; 3],
    /// Row of non-deflated entry `j` (in pole order) in the type-ordered `U`.
    type_row: Vec<usize>,
    /// `n1 x (ctot[0] + ctot[1])`: top halves of the top-only and dense columns.
    qtop: Mat<T>,
    /// `n2 x (ctot[1] + ctot[2])`: bottom halves of the dense and bottom-only columns.
    qbot: Mat<T>,
    /// `n x (n - k)`: deflated columns, in ascending order of their eigenvalues.
    qdefl: Mat<T>,
    /// Deflated eigenvalues, ascending.
    ddefl: Vec<T>,
    /// Output column sources, ascending eigenvalue order; filled by `lowner`.
    out: Vec<OutCol>,
    /// Number of roots solved through [`MergeProblem::solve_roots_range`].
    roots_solved: AtomicUsize,
    vectors_done: bool,
}

impl<T: Scalar> MergeProblem<T> {
    /// Step 1: forms the rank-one problem of a merge and deflates it.
    ///
    /// * `d` (length `n`): eigenvalues of the left half (ascending, `n1` of them) followed by
    ///   those of the right half (ascending).
    /// * `q` (`n x n`): the node's eigenvector block; its top-left `n1 x n1` block holds
    ///   `Q1` and its bottom-right block `Q2`. The off-diagonal blocks are ignored (they
    ///   are overwritten). On return the whole block is scratch: the problem owns copies
    ///   of everything it needs.
    /// * `beta`: the off-diagonal entry `e[cut - 1]` the tear removed.
    pub fn new(d: &[T], mut q: MatMut<'_, T>, n1: usize, beta: T) -> Result<Self, Error> {
        let n = d.len();
        if q.nrows() != n || q.ncols() != n || n1 == 0 || n1 >= n {
            return Err(Error::Shape(format!(
                "MergeProblem::new: d has {n} entries, q is {}x{}, n1 = {n1}",
                q.nrows(),
                q.ncols()
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
        // Normalise: |z| = sqrt(2) exactly in exact arithmetic (dlaed2).
        let inv_sqrt2 = T::one() / T::of(2.0).sqrt();
        for zj in z.iter_mut() {
            *zj *= inv_sqrt2;
        }
        let rho = T::of(2.0) * beta.abs();

        // Pole order: stable sort of all n eigenvalues (the halves are each ascending,
        // so this is the merge of dlamrg; ties keep the left half first).
        let mut perm: Vec<usize> = (0..n).collect();
        perm.sort_by(|&a, &b| d[a].partial_cmp(&d[b]).unwrap_or(std::cmp::Ordering::Equal));
        let mut dl: Vec<T> = perm.iter().map(|&p| d[p]).collect();
        let mut zs: Vec<T> = perm.iter().map(|&p| z[p]).collect();
        let mut typ: Vec<ColType> = perm
            .iter()
            .map(|&p| {
                if p < n1 {
                    ColType::Top
                } else {
                    ColType::Bottom
                }
            })
            .collect();

        // Deflation tolerance as in dlaed2: 8 eps max(|d|_max, |z|_max).
        let mut dmax = zero;
        let mut zmax = zero;
        for j in 0..n {
            dmax = dmax.max(dl[j].abs());
            zmax = zmax.max(zs[j].abs());
        }
        let tol = T::of(8.0) * T::EPS * dmax.max(zmax);

        let (nondefl, defl) = if rho * zmax <= tol {
            // The rank-one term is negligible: everything deflates.
            (Vec::new(), (0..n).collect())
        } else {
            deflate(
                &mut dl,
                &mut zs,
                &mut typ,
                0..n,
                rho,
                tol,
                |p, j, cs, sn| rotate_cols(q.rb_mut(), perm[p], perm[j], cs, sn),
            )
        };
        let k = nondefl.len();

        let (ctot, type_row, by_row) = group_by_type(&nondefl, &typ);
        let ntop = ctot[0] + ctot[1];
        let qr = q.rb();
        let top_cols: Vec<usize> = by_row[..ntop].iter().map(|&j| perm[j]).collect();
        let bot_cols: Vec<usize> = by_row[ctot[0]..].iter().map(|&j| perm[j]).collect();
        let qtop = gather_cols(qr, 0..n1, &top_cols);
        let qbot = gather_cols(qr, n1..n, &bot_cols);

        // Deflated pairs, ascending (stable: ties keep pole order).
        let defl = sorted_by_value(defl, &dl);
        let ddefl: Vec<T> = defl.iter().map(|&j| dl[j]).collect();
        let defl_cols: Vec<usize> = defl.iter().map(|&j| perm[j]).collect();
        let qdefl = gather_cols(qr, 0..n, &defl_cols);

        let secular = Secular {
            d: nondefl.iter().map(|&j| dl[j]).collect(),
            z: nondefl.iter().map(|&j| zs[j]).collect(),
            rho,
        };
        Ok(Self {
            n,
            n1,
            secular,
            lambda: vec![zero; k],
            delta: SplitColumns::new(Mat::zeros(k + 1, k)),
            ctot,
            type_row,
            qtop,
            qbot,
            qdefl,
            ddefl,
            out: Vec::new(),
            roots_solved: AtomicUsize::new(0),
            vectors_done: false,
        })
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

    /// The secular equation of the non-deflated part.
    pub fn secular(&self) -> &Secular<T> {
        &self.secular
    }

    /// Step 2 for roots `range` (`range.end <= k`): solves them and stores
    /// them in the problem. Several ranges may be solved concurrently through
    /// `&self` (each borrows only its own columns); the results do not depend on
    /// how `0..k` is split. [`MergeProblem::lowner`] needs every root solved.
    pub fn solve_roots_range(&self, range: Range<usize>) -> Result<(), Error> {
        let k = self.k();
        if range.start > range.end || range.end > k {
            return Err(Error::Shape(format!(
                "solve_roots: range {range:?} of {k} roots"
            )));
        }
        let mut cols = self.delta.cols_mut(range.clone());
        let mut block = cols.mat();
        let mut lambda = vec![T::zero(); range.len()];
        secular::solve_roots_into(
            &self.secular,
            range.clone(),
            &mut lambda,
            block.rb_mut().subrows_mut(0, k),
        )?;
        for (c, x) in lambda.into_iter().enumerate() {
            block[(k, c)] = x;
        }
        self.roots_solved.fetch_add(range.len(), Ordering::AcqRel);
        Ok(())
    }

    /// Step 3: Löwner / Gu–Eisenstat. Recomputes `z-hat` from all roots (LAPACK
    /// `dlaed3`):
    ///
    /// `z-hat_i^2 = prod_j (lambda_j - d_i) / prod_{j != i} (d_j - d_i)` (up to the factor
    /// `rho`, which the normalisation removes), formed as
    /// `-(d_i - lambda_i) prod_{j != i} (d_i - lambda_j)/(d_i - d_j)` from the accurate
    /// differences of step 2, with the sign of the original `z_i`; then
    /// `u_r = (D - lambda_r)^{-1} z-hat / norm`, stored with rows in type order.
    /// Also fixes the output order (ascending merge of roots and deflated values).
    pub fn lowner(&mut self) -> Result<(), Error> {
        let k = self.k();
        if self.roots_solved.load(Ordering::Acquire) != k {
            return Err(Error::InvalidArgument(
                "MergeProblem::lowner called before all roots were solved".into(),
            ));
        }
        let zero = T::zero();
        let dl = &self.secular.d;
        let mut all = self.delta.as_mut();
        for (r, x) in self.lambda.iter_mut().enumerate() {
            *x = all[(k, r)];
        }
        let mut delta = all.rb_mut().subrows_mut(0, k);
        let zhat = super::lowner::lowner_zhat_cols(&self.secular.z, delta.rb(), dl);
        let mut u = vec![zero; k];
        for r in 0..k {
            let mut col = delta.rb_mut().col_mut(r);
            for i in 0..k {
                u[i] = zhat[i] / col[i];
            }
            let Some(scale) = unit_scale(&u) else {
                return Err(Error::NoConvergence {
                    stage: "dc merge",
                    detail: format!("eigenvector {r} of a {k}x{k} secular problem is degenerate"),
                });
            };
            for i in 0..k {
                col[self.type_row[i]] = u[i] * scale;
            }
        }
        // Output order: merge of ascending roots and ascending deflated values.
        let out = merge_order(&self.lambda, &self.ddefl);
        self.out = out;
        self.vectors_done = true;
        Ok(())
    }

    /// Source of each output column (valid after [`MergeProblem::lowner`]).
    pub fn out_cols(&self) -> &[OutCol] {
        &self.out
    }

    /// Writes the merged eigenvalues, ascending, into `d` (length `n`). Valid after
    /// [`MergeProblem::lowner`].
    pub fn eigenvalues_into(&self, d: &mut [T]) {
        assert!(self.vectors_done && d.len() == self.n);
        values_in_order(&self.out, &self.lambda, &self.ddefl, d);
    }

    /// Step 4 on one tile: writes output columns `cols` of the merged eigenvector block
    /// into `out` (`n x cols.len()`), i.e. `blockdiag(Q1, Q2) U` for the root columns
    /// (two GEMMs over the top-only+dense and dense+bottom-only column groups, as
    /// `dlaed3`) and copies of the deflated columns. Reads only `self`; tiles are
    /// independent. For bitwise reproducibility use the same tiling every time (GEMM
    /// results may depend on the shape): see [`super::col_tiles`].
    pub fn apply_cols(&self, cols: Range<usize>, out: MatMut<'_, T>) {
        assert!(self.vectors_done, "apply_cols before lowner");
        assert!(cols.end <= self.n && out.nrows() == self.n && out.ncols() == cols.len());
        let srcs = &self.out[cols.clone()];
        let rr = root_range(srcs);
        let (n1, n) = (self.n1, self.n);
        let n2 = n - n1;
        let mut tmp = Mat::<T>::zeros(0, 0);
        if let Some(rr) = rr.clone() {
            let nr = rr.len();
            tmp = Mat::zeros(n, nr);
            let ntop = self.ctot[0] + self.ctot[1];
            let nbot = self.ctot[1] + self.ctot[2];
            let guard = self.delta.read();
            let u = guard.mat().subrows(0, self.k()).subcols(rr.start, nr);
            if ntop > 0 {
                gemm(
                    tmp.as_mut().submatrix_mut(0, 0, n1, nr),
                    self.qtop.as_ref(),
                    u.subrows(0, ntop),
                );
            }
            if nbot > 0 {
                gemm(
                    tmp.as_mut().submatrix_mut(n1, 0, n2, nr),
                    self.qbot.as_ref(),
                    u.subrows(self.ctot[0], nbot),
                );
            }
        }
        let r0 = rr.map(|r| r.start).unwrap_or(0);
        emit_cols(srcs, tmp.as_ref(), r0, self.qdefl.as_ref(), out);
    }
}

/// The deflation pass of a merge (LAPACK `dlaed2`, `dlasd2`) over the poles `range`
/// of `dl` (ascending) with weights `zs` and column types `typ`:
/// * a tiny `rho |z_j| <= tol` leaves `(dl_j, column j)` as it is: deflated;
/// * a pole close to the previous kept one `p` is merged into it by the Givens
///   rotation `c = z_j / tau`, `s = -z_p / tau` that zeroes `z_p`, when the coupling
///   it leaves, `(d_j - d_p) c s`, is at most `tol`; `rotate(p, j, c, s)` applies it
///   to the caller's vector columns (`p' = c p + s j`, `j' = c j - s p`), the two
///   diagonal entries are mixed accordingly and `p` deflates.
///
/// Returns the kept positions (ascending) and the deflated ones (in the order found).
pub(crate) fn deflate<T: Scalar>(
    dl: &mut [T],
    zs: &mut [T],
    typ: &mut [ColType],
    range: Range<usize>,
    rho: T,
    tol: T,
    mut rotate: impl FnMut(usize, usize, T, T),
) -> (Vec<usize>, Vec<usize>) {
    let zero = T::zero();
    let mut nondefl: Vec<usize> = Vec::with_capacity(range.len());
    let mut defl: Vec<usize> = Vec::new();
    let mut prev: Option<usize> = None;
    for j in range {
        if rho * zs[j].abs() <= tol {
            // Tiny z component: (d_j, column) is already an eigenpair.
            defl.push(j);
            continue;
        }
        let Some(p) = prev else {
            prev = Some(j);
            continue;
        };
        // Close poles d_p <= d_j: the Givens rotation G with c = z_j/tau,
        // s = -z_p/tau zeroes z_p; the coupling it leaves is (d_j - d_p) c s
        // (dlaed2's second deflation test).
        let tau = zs[p].hypot(zs[j]);
        let cs = zs[j] / tau;
        let sn = -zs[p] / tau;
        let t = dl[j] - dl[p];
        if (t * cs * sn).abs() <= tol {
            zs[j] = tau;
            zs[p] = zero;
            rotate(p, j, cs, sn);
            if typ[p] != typ[j] {
                typ[j] = ColType::Dense;
            }
            let (c2, s2) = (cs * cs, sn * sn);
            let dp = dl[p] * c2 + dl[j] * s2;
            dl[j] = dl[p] * s2 + dl[j] * c2;
            dl[p] = dp;
            defl.push(p);
        } else {
            nondefl.push(p);
        }
        prev = Some(j);
    }
    if let Some(p) = prev {
        nondefl.push(p);
    }
    (nondefl, defl)
}

/// Type grouping of the kept columns (`dlaed2`'s `coltyp`/`ctot`): the counts per
/// type (top, dense, bottom), the row of each kept entry in the type-ordered
/// coefficient matrix, and the kept entry of each such row.
pub(crate) fn group_by_type(
    nondefl: &[usize],
    typ: &[ColType],
) -> ([usize; 3], Vec<usize>, Vec<usize>) {
    let k = nondefl.len();
    let mut ctot = [0usize; 3];
    for &j in nondefl {
        ctot[type_index(typ[j])] += 1;
    }
    let mut next = [0, ctot[0], ctot[0] + ctot[1]];
    let mut type_row = vec![0usize; k];
    let mut by_row = vec![0usize; k];
    for (r, &j) in nondefl.iter().enumerate() {
        let t = type_index(typ[j]);
        type_row[r] = next[t];
        by_row[next[t]] = j;
        next[t] += 1;
    }
    (ctot, type_row, by_row)
}

/// `idx` sorted by `val[i]`, ascending and stable.
pub(crate) fn sorted_by_value<T: Scalar>(mut idx: Vec<usize>, val: &[T]) -> Vec<usize> {
    idx.sort_by(|&a, &b| {
        val[a]
            .partial_cmp(&val[b])
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    idx
}

/// The factor that scales `u` to unit 2-norm, from the scaled sum of squares (no
/// overflow for huge entries); `None` if `u` is zero or not finite.
pub(crate) fn unit_scale<T: Scalar>(u: &[T]) -> Option<T> {
    let zero = T::zero();
    let mut amax = zero;
    let mut finite = true;
    for &x in u {
        finite &= x.is_finite();
        amax = amax.max(x.abs());
    }
    if amax <= zero || !finite {
        return None;
    }
    let mut ss = zero;
    for &x in u {
        let y = x / amax;
        ss += y * y;
    }
    Some(T::one() / (amax * ss.sqrt()))
}

/// Output order of a merge: the ascending merge of the roots and the deflated
/// values (ties: roots first).
pub(crate) fn merge_order<T: Scalar>(roots: &[T], defl: &[T]) -> Vec<OutCol> {
    let (k, nd) = (roots.len(), defl.len());
    let mut out = Vec::with_capacity(k + nd);
    let (mut r, mut s) = (0, 0);
    while r < k || s < nd {
        if s == nd || (r < k && roots[r] <= defl[s]) {
            out.push(OutCol::Root(r));
            r += 1;
        } else {
            out.push(OutCol::Deflated(s));
            s += 1;
        }
    }
    out
}

/// The merged values in output order: `d[c]` is the root or deflated value that
/// output column `c` comes from.
pub(crate) fn values_in_order<T: Scalar>(out: &[OutCol], roots: &[T], defl: &[T], d: &mut [T]) {
    for (dst, src) in d.iter_mut().zip(out) {
        *dst = match *src {
            OutCol::Root(r) => roots[r],
            OutCol::Deflated(s) => defl[s],
        };
    }
}

/// The roots among the output columns `srcs` of a tile, consecutive because the
/// output order is a merge.
pub(crate) fn root_range(srcs: &[OutCol]) -> Option<Range<usize>> {
    let mut rr: Option<Range<usize>> = None;
    for s in srcs {
        if let OutCol::Root(r) = *s {
            rr = Some(match rr {
                None => r..r + 1,
                Some(x) => x.start..r + 1,
            });
        }
    }
    rr
}

/// Copies the output columns `srcs` of a tile into `out`: roots from `roots` (whose
/// column 0 is root `r0`), deflated columns from `defl`.
pub(crate) fn emit_cols<T: Scalar>(
    srcs: &[OutCol],
    roots: MatRef<'_, T>,
    r0: usize,
    defl: MatRef<'_, T>,
    mut out: MatMut<'_, T>,
) {
    for (c, s) in srcs.iter().enumerate() {
        let src = match *s {
            OutCol::Root(r) => roots.col(r - r0),
            OutCol::Deflated(s) => defl.col(s),
        };
        out.rb_mut().col_mut(c).copy_from(src);
    }
}

/// Rows `rows` of the columns `cols` of `q`, as a new matrix. Whole-column
/// copies: gathering element by element would be several times slower at the
/// top merge, where these are `n^2` values.
pub(crate) fn gather_cols<T: Scalar>(
    q: MatRef<'_, T>,
    rows: Range<usize>,
    cols: &[usize],
) -> Mat<T> {
    let mut m = Mat::<T>::zeros(rows.len(), cols.len());
    for (c, &src) in cols.iter().enumerate() {
        m.col_mut(c)
            .copy_from(q.col(src).subrows(rows.start, rows.len()));
    }
    m
}

/// `dst := lhs * rhs` with faer's sequential GEMM.
pub(crate) fn gemm<T: Scalar>(dst: MatMut<'_, T>, lhs: MatRef<'_, T>, rhs: MatRef<'_, T>) {
    matmul(dst, Accum::Replace, lhs, rhs, T::one(), Par::Seq);
}

pub(crate) fn type_index(t: ColType) -> usize {
    match t {
        ColType::Top => 0,
        ColType::Dense => 1,
        ColType::Bottom => 2,
    }
}

/// Plane rotation of columns `a != b` (BLAS `drot`): `a' = c a + s b`,
/// `b' = c b - s a`. Shared with the bidiagonal SVD (deflation and QR sweeps).
pub(crate) fn rotate_cols<T: Scalar>(q: MatMut<'_, T>, a: usize, b: usize, cs: T, sn: T) {
    crate::linalg::steqr::col_pair(q, a, b, |x, y| {
        for (u, v) in x.iter_mut().zip(y.iter_mut()) {
            let (p, r) = (*u, *v);
            *u = cs * p + sn * r;
            *v = cs * r - sn * p;
        }
    });
}

/// Step 2 for roots `range` of a merge, storing into the problem (see
/// [`MergeProblem::solve_roots_range`]).
pub fn solve_roots<T: Scalar>(problem: &MergeProblem<T>, range: Range<usize>) -> Result<(), Error> {
    problem.solve_roots_range(range)
}
