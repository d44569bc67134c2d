//! Dense to upper band reduction: stage 1 of the two-stage SVD (Ringoot,
//! Alomairy and Edelman, 2025, §I; LAPACK `dgebrd`'s blocked structure with
//! band-sized panels, as in PLASMA/MAGMA `ge2gb`).
//!
//! # Geometry
//!
//! `A` is `m x n` with `m >= n` (a wide matrix is reduced through its
//! transpose by the caller). With bandwidth `b`, step `k` is
//!
//! * **QR panel** `k` (`k < qr_panel_count(n, b)`): columns
//!   [`qr_panel_cols`] `= [k b, min(k b + b, n))`, rows `[k b, m)`, factored as
//!   `Q_k R_k` ([`qr_panel`]; `R_k` stays on and above the panel's diagonal,
//!   `V_k` strictly below, like `dgeqrf`), followed by `A[k b.., (k+1) b..] :=
//!   Q_k^T A[..]` from the left ([`left_w`] + [`left_tile`], or [`left_update`]
//!   per column block);
//! * **LQ panel** `k` (`k < lq_panel_count(n, b)`): rows `[k b, k b + b)`,
//!   columns [`lq_panel_cols`] `= [(k+1) b, n)`, factored as `L_k P_k^T`
//!   ([`lq_panel`]: the QR kernel on the transposed view, so `P_k = I - W_k S_k
//!   W_k^T` with `W_k` stored right of `L_k`'s diagonal, like `dgelqf`),
//!   followed by `A[(k+1) b.., (k+1) b..] := A[..] P_k` from the right
//!   ([`right_w`] + [`right_tile`], or [`right_update`] per row block).
//!
//! `R_k` is upper triangular and `L_k` lower trapezoidal, so after all steps
//! `B = Q1_U^T A Q1_V` is upper banded, `0 <= j - i <= b`, in the leading
//! `n x n` block, and zero below it:
//!
//! ```text
//! A = Q1_U [B; 0] Q1_V^T,   Q1_U = Q_0 Q_1 ... ,   Q1_V = P_0 P_1 ...
//! ```
//!
//! Band column block `[k b, k b + b)` is final once QR panel `k` is done (its
//! rows above come from LQ panel `k - 1`, which precedes it), so stage 2 can be
//! fed column block by column block ([`copy_band_cols`]).
//!
//! # Tiles
//!
//! Trailing updates are split on a grid of size `nb` ([`grid_blocks`]). The
//! left update of column block `J` needs `W_J = T^T V^T A[:, J]` over all rows
//! (one reduction task, [`left_w`]), after which every tile `A[I, J] -= V_I W_J`
//! is independent ([`left_tile`]); the right update mirrors it with
//! `W_I = A[I, :] V T` ([`right_w`]) and `A[I, J] -= W_I V_J^T`
//! ([`right_tile`]). The panels keep an explicit copy of `V` (zeros above, unit
//! diagonal) so the tile kernels are plain GEMMs.

use crate::linalg::band::gb2bd::GbBandMut;
use crate::linalg::householder::panel_qr::panel_kernel;
use crate::linalg::householder::{apply_block_reflector_left, apply_block_reflector_right};
use crate::Scalar;
use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{matmul as tri_matmul, BlockStructure};
use faer::reborrow::*;
use faer::{Accum, Mat, MatMut, MatRef, Par};
use std::ops::Range;

use BlockStructure::Rectangular as Rect;

/// Number of QR panels: `ceil(n / b)` (every column block, so the diagonal
/// blocks become upper triangular and everything below row `n` vanishes).
pub fn qr_panel_count(n: usize, b: usize) -> usize {
    assert!(b >= 1, "bandwidth must be at least 1");
    n.div_ceil(b)
}

/// Number of LQ panels: the `k` with `(k+1) b < n`.
pub fn lq_panel_count(n: usize, b: usize) -> usize {
    assert!(b >= 1, "bandwidth must be at least 1");
    n.saturating_sub(1) / b
}

/// Columns of QR panel `k`: `[k b, min(k b + b, n))` (its rows are `[k b, m)`).
pub fn qr_panel_cols(n: usize, b: usize, k: usize) -> Range<usize> {
    k * b..((k + 1) * b).min(n)
}

/// Columns of LQ panel `k`: `[(k+1) b, n)` (its rows are `[k b, k b + b)`).
pub fn lq_panel_cols(n: usize, b: usize, k: usize) -> Range<usize> {
    (k + 1) * b..n
}

/// The blocks `[i nb, (i+1) nb)` of the global grid clipped to `[start, end)`.
pub fn grid_blocks(start: usize, end: usize, nb: usize) -> Vec<Range<usize>> {
    assert!(nb >= 1, "tile size must be at least 1");
    let mut out = Vec::new();
    let mut s = start;
    while s < end {
        let e = ((s / nb + 1) * nb).min(end);
        out.push(s..e);
        s = e;
    }
    out
}

/// QR of a column panel (task "qr_panel"): `panel = A[k b.., cols]`
/// (`m_k x w`) gets `R` on and above its diagonal and `V` strictly below;
/// `t` (`w x w`) gets the upper triangular `T` with `Q = I - V T V^T`; `v`
/// (`m_k x w`) gets `V` explicitly (for [`left_w`] and [`left_tile`]).
pub fn qr_panel<T: Scalar>(panel: MatMut<'_, T>, t: MatMut<'_, T>, v: MatMut<'_, T>) {
    panel_kernel(panel, t, v);
}

/// LQ of a row panel (task "lq_panel"): `panel = A[k b..k b + h, (k+1) b..]`
/// (`h x w`) gets `L` on and below its diagonal and the reflectors right of it
/// (`dgelqf` layout); `t` (`h x h`) and `v` (`w x h`, explicit) describe
/// `P = I - V T V^T` with `A_panel P = [L 0]`. Computed as the QR of the
/// transposed panel, through [`panel_kernel`] (which factors a column-major
/// copy: `O(h w)` copying against `O(h^2 w)` flops).
pub fn lq_panel<T: Scalar>(panel: MatMut<'_, T>, t: MatMut<'_, T>, v: MatMut<'_, T>) {
    panel_kernel(panel.transpose_mut(), t, v);
}

/// `W_J = T^T V^T C_J` for the left update of one column block (task
/// "left_w"): `v` explicit (`m_k x w`), `t` (`w x w`, upper triangle read),
/// `c` = `A[k b.., J]` (`m_k x n_J`, read), `w` (`w x n_J`, written).
pub fn left_w<T: Scalar>(v: MatRef<'_, T>, t: MatRef<'_, T>, c: MatRef<'_, T>, w: MatMut<'_, T>) {
    let k = v.ncols();
    let mut tmp = Mat::<T>::zeros(k, c.ncols());
    matmul(
        tmp.as_mut(),
        Accum::Replace,
        v.transpose(),
        c,
        T::one(),
        Par::Seq,
    );
    tri_matmul(
        w,
        Rect,
        Accum::Replace,
        t.transpose(),
        BlockStructure::TriangularLower,
        tmp.as_ref(),
        Rect,
        T::one(),
        Par::Seq,
    );
}

/// `C_IJ -= V_I W_J` (task "left_tile"): `v_i` = rows `I` of the explicit `V`,
/// `w_j` from [`left_w`], `c` = `A[I, J]` (read and written).
pub fn left_tile<T: Scalar>(v_i: MatRef<'_, T>, w_j: MatRef<'_, T>, c: MatMut<'_, T>) {
    matmul(c, Accum::Add, v_i, w_j, -T::one(), Par::Seq);
}

/// `C := Q^T C` for a whole column block `c = A[k b.., J]` ([`left_w`] then
/// [`left_tile`] on all of it).
pub fn left_update<T: Scalar>(v: MatRef<'_, T>, t: MatRef<'_, T>, c: MatMut<'_, T>) {
    let mut w = Mat::<T>::zeros(v.ncols(), c.ncols());
    left_w(v, t, c.rb(), w.as_mut());
    left_tile(v, w.as_ref(), c);
}

/// `W_I = C_I V T` for the right update of one row block (task "right_w"):
/// `v` explicit (`w_k x h`), `t` (`h x h`, upper triangle read), `c` =
/// `A[I, (k+1) b..]` (`m_I x w_k`, read), `w` (`m_I x h`, written).
pub fn right_w<T: Scalar>(v: MatRef<'_, T>, t: MatRef<'_, T>, c: MatRef<'_, T>, w: MatMut<'_, T>) {
    let k = v.ncols();
    let mut tmp = Mat::<T>::zeros(c.nrows(), k);
    matmul(tmp.as_mut(), Accum::Replace, c, v, T::one(), Par::Seq);
    tri_matmul(
        w,
        Rect,
        Accum::Replace,
        tmp.as_ref(),
        Rect,
        t,
        BlockStructure::TriangularUpper,
        T::one(),
        Par::Seq,
    );
}

/// `C_IJ -= W_I V_J^T` (task "right_tile"): `w_i` from [`right_w`], `v_j` =
/// rows `J - (k+1) b` of the explicit `V`, `c` = `A[I, J]` (read and written).
pub fn right_tile<T: Scalar>(w_i: MatRef<'_, T>, v_j: MatRef<'_, T>, c: MatMut<'_, T>) {
    matmul(c, Accum::Add, w_i, v_j.transpose(), -T::one(), Par::Seq);
}

/// `C := C P` for a whole row block `c = A[I, (k+1) b..]` ([`right_w`] then
/// [`right_tile`] on all of it).
pub fn right_update<T: Scalar>(v: MatRef<'_, T>, t: MatRef<'_, T>, c: MatMut<'_, T>) {
    let mut w = Mat::<T>::zeros(c.nrows(), v.ncols());
    right_w(v, t, c.rb(), w.as_mut());
    right_tile(w.as_ref(), v, c);
}

/// The compact-WY factors of stage 1. The `T` factors are held here; the
/// reflectors stay in the reduced matrix (below the band for the QR panels,
/// right of it for the LQ panels), read through [`Ge2gbFactors::vq`] and
/// [`Ge2gbFactors::vl`].
#[derive(Clone, Debug)]
pub struct Ge2gbFactors<T> {
    m: usize,
    n: usize,
    b: usize,
    tq: Vec<Mat<T>>,
    tl: Vec<Mat<T>>,
}

impl<T: Scalar> Ge2gbFactors<T> {
    /// Assembles the factors of an `m x n` reduction to bandwidth `b` from the
    /// `T` factors of the QR panels and of the LQ panels, in panel order.
    pub fn new(m: usize, n: usize, b: usize, tq: Vec<Mat<T>>, tl: Vec<Mat<T>>) -> Self {
        assert!(m >= n, "ge2gb needs m >= n");
        assert_eq!(tq.len(), qr_panel_count(n, b), "one T per QR panel");
        assert_eq!(tl.len(), lq_panel_count(n, b), "one T per LQ panel");
        Ge2gbFactors { m, n, b, tq, tl }
    }

    /// Rows of `A`.
    pub fn m(&self) -> usize {
        self.m
    }

    /// Columns of `A` (order of the band).
    pub fn n(&self) -> usize {
        self.n
    }

    /// Bandwidth.
    pub fn b(&self) -> usize {
        self.b
    }

    /// `T` of QR panel `k`.
    pub fn tq(&self, k: usize) -> MatRef<'_, T> {
        self.tq[k].as_ref()
    }

    /// `T` of LQ panel `k`.
    pub fn tl(&self, k: usize) -> MatRef<'_, T> {
        self.tl[k].as_ref()
    }

    /// `V` of QR panel `k`: the view `a[k b.., qr_panel_cols]` (read strictly
    /// below its diagonal, see [`crate::linalg::householder`]).
    pub fn vq<'a>(&self, a: MatRef<'a, T>, k: usize) -> MatRef<'a, T> {
        let cols = qr_panel_cols(self.n, self.b, k);
        a.submatrix(k * self.b, cols.start, self.m - k * self.b, cols.len())
    }

    /// `V` of LQ panel `k`: the transposed view of `a[k b..k b + b,
    /// lq_panel_cols]` (read strictly right of the row panel's diagonal).
    pub fn vl<'a>(&self, a: MatRef<'a, T>, k: usize) -> MatRef<'a, T> {
        let cols = lq_panel_cols(self.n, self.b, k);
        a.submatrix(k * self.b, cols.start, self.b, cols.len())
            .transpose()
    }
}

/// Sequential reference driver (pub(crate): tests and the reference for the
/// pipeline): reduces `a` (`m x n`, `m >= n`) in place to upper bandwidth `b`,
/// running [`qr_panel`], [`left_w`], [`left_tile`], [`lq_panel`],
/// [`right_w`] and [`right_tile`] on the tiles of the grid of size `nb`.
/// On return the band of the leading `n x n` block holds `B` (read it with
/// [`crate::linalg::band::gb2bd::UpperBand::from_dense`]) and the reflectors are
/// outside it.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn ge2gb_serial<T: Scalar>(
    mut a: MatMut<'_, T>,
    b: usize,
    nb: usize,
) -> Ge2gbFactors<T> {
    let (m, n) = (a.nrows(), a.ncols());
    assert!(
        m >= n,
        "ge2gb needs m >= n (reduce the transpose of a wide matrix)"
    );
    let (nq, nl) = (qr_panel_count(n, b), lq_panel_count(n, b));
    let mut vq = Mat::<T>::zeros(m, b);
    let mut vl = Mat::<T>::zeros(n, b);
    let (mut tq, mut tl) = (Vec::with_capacity(nq), Vec::with_capacity(nl));
    for k in 0..nq {
        let kb = k * b;
        let cols = qr_panel_cols(n, b, k);
        let (mk, w) = (m - kb, cols.len());
        let mut t = Mat::<T>::zeros(w, w);
        let mut v = vq.as_mut().submatrix_mut(0, 0, mk, w);
        qr_panel(
            a.rb_mut().submatrix_mut(kb, cols.start, mk, w),
            t.as_mut(),
            v.rb_mut(),
        );
        let row_blocks = grid_blocks(kb, m, nb);
        for jb in grid_blocks(cols.end, n, nb) {
            let mut wj = Mat::<T>::zeros(w, jb.len());
            left_w(
                v.rb(),
                t.as_ref(),
                a.rb().submatrix(kb, jb.start, mk, jb.len()),
                wj.as_mut(),
            );
            for ib in &row_blocks {
                left_tile(
                    v.rb().subrows(ib.start - kb, ib.len()),
                    wj.as_ref(),
                    a.rb_mut()
                        .submatrix_mut(ib.start, jb.start, ib.len(), jb.len()),
                );
            }
        }
        tq.push(t);
        if k >= nl {
            continue;
        }
        let lcols = lq_panel_cols(n, b, k);
        let wl = lcols.len();
        let mut t = Mat::<T>::zeros(b, b);
        let mut v = vl.as_mut().submatrix_mut(0, 0, wl, b);
        lq_panel(
            a.rb_mut().submatrix_mut(kb, lcols.start, b, wl),
            t.as_mut(),
            v.rb_mut(),
        );
        let col_blocks = grid_blocks(lcols.start, n, nb);
        for ib in grid_blocks(lcols.start, m, nb) {
            let mut wi = Mat::<T>::zeros(ib.len(), b);
            right_w(
                v.rb(),
                t.as_ref(),
                a.rb().submatrix(ib.start, lcols.start, ib.len(), wl),
                wi.as_mut(),
            );
            for jb in &col_blocks {
                right_tile(
                    wi.as_ref(),
                    v.rb().subrows(jb.start - lcols.start, jb.len()),
                    a.rb_mut()
                        .submatrix_mut(ib.start, jb.start, ib.len(), jb.len()),
                );
            }
        }
        tl.push(t);
    }
    Ge2gbFactors::new(m, n, b, tq, tl)
}

/// Copies band columns `cols` (rows `max(j - b, 0) ..= j` of each column `j`)
/// of the reduced matrix `a` into `band` (the stage-1 -> stage-2 hand-off; the
/// column block `[k b, k b + b)` is final after QR panel `k`).
pub fn copy_band_cols<T: Scalar>(
    a: MatRef<'_, T>,
    b: usize,
    cols: Range<usize>,
    band: &mut GbBandMut<'_, T>,
) {
    for j in cols {
        let i0 = j.saturating_sub(b);
        band.rect_mut(i0..j + 1, j..j + 1)
            .col_mut(0)
            .copy_from(a.col(j).subrows(i0, j + 1 - i0));
    }
}

/// `C := Q1_U C` for a column block `c` (`m x k`) of `U` (LAPACK `dormbr`,
/// `Q`, left, no transpose): QR panels last first. For the thin `U` of the
/// SVD, `c` holds the band's left vectors in its first `n` rows and zeros below.
pub fn apply_q1u<T: Scalar>(a: MatRef<'_, T>, f: &Ge2gbFactors<T>, c: MatMut<'_, T>) {
    assert!(
        a.nrows() == f.m && a.ncols() == f.n,
        "apply_q1u: A is not the reduced matrix"
    );
    apply_q1u_with(a, f.b, |k| f.tq(k), c);
}

/// [`apply_q1u`] with the `T` factor of QR panel `k` given by `tq(k)` (the
/// task-graph back-transform reads them packed side by side).
pub(crate) fn apply_q1u_with<'t, T: Scalar + 't>(
    a: MatRef<'_, T>,
    b: usize,
    tq: impl Fn(usize) -> MatRef<'t, T>,
    mut c: MatMut<'_, T>,
) {
    let (m, n) = (a.nrows(), a.ncols());
    assert_eq!(c.nrows(), m, "apply_q1u: C must have m rows");
    for k in (0..qr_panel_count(n, b)).rev() {
        let kb = k * b;
        let cols = qr_panel_cols(n, b, k);
        apply_block_reflector_left(
            a.submatrix(kb, cols.start, m - kb, cols.len()),
            tq(k),
            c.rb_mut().subrows_mut(kb, m - kb),
            false,
        );
    }
}

/// `C := Q1_V C` for a column block `c` (`n x k`) of `V`: LQ panels last first.
pub fn apply_q1v<T: Scalar>(a: MatRef<'_, T>, f: &Ge2gbFactors<T>, c: MatMut<'_, T>) {
    assert!(
        a.nrows() == f.m && a.ncols() == f.n,
        "apply_q1v: A is not the reduced matrix"
    );
    apply_q1v_with(a, f.b, |k| f.tl(k), c);
}

/// [`apply_q1v`] with the `T` factor of LQ panel `k` given by `tl(k)`.
pub(crate) fn apply_q1v_with<'t, T: Scalar + 't>(
    a: MatRef<'_, T>,
    b: usize,
    tl: impl Fn(usize) -> MatRef<'t, T>,
    mut c: MatMut<'_, T>,
) {
    let n = a.ncols();
    assert_eq!(c.nrows(), n, "apply_q1v: C must have n rows");
    for k in (0..lq_panel_count(n, b)).rev() {
        let r0 = (k + 1) * b;
        let cols = lq_panel_cols(n, b, k);
        apply_block_reflector_left(
            a.submatrix(k * b, cols.start, b, cols.len()).transpose(),
            tl(k),
            c.rb_mut().subrows_mut(r0, n - r0),
            false,
        );
    }
}

/// `Y := Y Q1_V^T` for a row block `y` (`k x n`) of `V^T`: LQ panels last
/// first, each `Y[:, (k+1) b..] := Y[..] P_k^T`.
pub fn apply_q1vt<T: Scalar>(a: MatRef<'_, T>, f: &Ge2gbFactors<T>, mut y: MatMut<'_, T>) {
    assert_eq!(y.ncols(), f.n, "apply_q1vt: Y must have n columns");
    for k in (0..f.tl.len()).rev() {
        let c0 = (k + 1) * f.b;
        apply_block_reflector_right(
            f.vl(a, k),
            f.tl(k),
            y.rb_mut().subcols_mut(c0, f.n - c0),
            true,
        );
    }
}

#[cfg(test)]
mod tests;
