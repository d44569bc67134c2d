//! One-stage reduction of a general matrix to upper bidiagonal form,
//! `Q^T A P = B` (LAPACK `dgebrd` with `dlabrd` panels, `m >= n`), and the
//! application of `P` to the bidiagonal's right singular vectors (the `P`
//! half of `dormbr`; the `Q` half is [`crate::linalg::householder::ormqr`]).
//!
//! Why a one-stage path next to the two-stage pipeline (ge2gb, gb2bd): with
//! vectors the two-stage reduction back-transforms through both bulge-chasing
//! passes (`Q2_U`, `Q2_V`: about `4 n^3` more flops at a fraction of the GEMM
//! rate), which only pays when the BLAS-3 rate is several times the BLAS-2
//! rate of `dgebrd`'s matrix-vector products; at small and mid sizes on a few
//! cores it is not (the same argument as `sytrd`, in its module
//! documentation).
//!
//! # Storage (as `dgebrd`, `m >= n`)
//!
//! On exit the diagonal of `a` holds `d` and its first superdiagonal `e`.
//! `Q = H_0 H_1 ... H_{n-1}`, `H_i = I - tauq_i u_i u_i^T` with `u_i[i] = 1`
//! (implicit) and its tail in `a[i+1.., i]`; `P = G_0 G_1 ... G_{n-2}`,
//! `G_i = I - taup_i v_i v_i^T` with `v_i[i+1] = 1` (implicit) and its tail in
//! row `i`, `a[i, i+2..]`; `taup[n-1] = 0`.
//!
//! # Blocked reduction (Dongarra, Sorensen, Hammarling 1989; `dlabrd`)
//!
//! A panel of `nb` rows and columns is reduced with the trailing matrix kept
//! implicit as `A - U Y^T - X V^T` (`U`: the panel's column reflectors, `V^T`:
//! its row reflectors): each column and row is brought up to date just before
//! its reflector is generated, and `Y`, `X` are extended so that the
//! identity holds for the next one. After the panel one GEMM of inner
//! dimension `2 nb` updates the trailing matrix. Half the flops stay in the two
//! matrix-vector products per column ([`crate::linalg::blas::gemv`]).

use crate::error::Error;
use crate::linalg::householder::larfg_slice;
use crate::linalg::householder::ormqr::ormqr_on;
use crate::linalg::par::{Fork, Splits};
use crate::Scalar;
use faer::linalg::matmul::matmul;
use faer::reborrow::*;
use faer::{Accum, Mat, MatMut, MatRef, Par};

#[cfg(test)]
mod tests;

use crate::linalg::blas::gemv::{col, gemv_n, gemv_n_sub, gemv_t};
pub use crate::linalg::blas::gemv::{gemv_n_on, gemv_t_on, GEMV_SPLIT_MIN};

/// Default panel width of [`gebrd_on`] (LAPACK's `ilaenv` gives 32 for `dgebrd`).
pub const GEBRD_BLOCK: usize = 32;
/// Smallest trailing width whose update [`gebrd_on`] splits in two halves.
pub const GEBRD_SPLIT_MIN: usize = 128;

#[inline(always)]
fn col_mut<T>(a: MatMut<'_, T>, j: usize) -> &mut [T] {
    a.col_mut(j)
        .try_as_col_major_mut()
        .expect("unit row stride")
        .as_slice_mut()
}

/// Reusable buffers of [`gebrd_on`] (the panel's `X`, `Y`, one row, and the
/// operands of the trailing GEMM).
#[derive(Debug)]
struct Workspace<T> {
    x: Mat<T>,
    y: Mat<T>,
    row: Vec<T>,
    tmp: Vec<T>,
    xrow: Vec<T>,
    left: Mat<T>,
    right: Mat<T>,
    /// The second half's product of a split [`gemv_n_on`].
    split: Vec<T>,
}

/// Reduces the `m x n` matrix `a` (`m >= n`, unit row stride) to upper
/// bidiagonal form in panels of `nb` (module docs for the outputs: `d` of `n`
/// entries, `e` of `n - 1`, `tauq` and `taup` of `n`). The matrix-vector
/// products of large panels and the trailing updates are cut in two halves,
/// run in parallel in a [`Fork::scope`] on `par` when it has several threads;
/// every cut depends on the shape only, so the bits do not depend on `par`
/// ([`Fork::Seq`] runs the halves in turn).
///
/// # Errors
/// Only the fork-join's own ([`Fork::join`]); the reduction itself cannot fail.
///
/// # Panics
/// If `m < n`, `a` has no unit row stride, or a length is wrong.
#[allow(clippy::too_many_arguments)]
pub fn gebrd_on<T: Scalar>(
    a: MatMut<'_, T>,
    nb: usize,
    d: &mut [T],
    e: &mut [T],
    tauq: &mut [T],
    taup: &mut [T],
    par: Fork<'_>,
) -> Result<(), Error> {
    let (m, n) = (a.nrows(), a.ncols());
    // A team only where a split happens: engaging the helper costs a wake-up.
    let splits = m * n >= GEMV_SPLIT_MIN.min(GEBRD_SPLIT_MIN * GEBRD_SPLIT_MIN) && n > nb.max(1);
    par.scope(splits, |team| gebrd_in(a, nb, d, e, tauq, taup, team))
}

/// [`gebrd_on`] with its splits run by `team`.
fn gebrd_in<T: Scalar>(
    mut a: MatMut<'_, T>,
    nb: usize,
    d: &mut [T],
    e: &mut [T],
    tauq: &mut [T],
    taup: &mut [T],
    team: Splits<'_>,
) -> Result<(), Error> {
    let (m, n) = (a.nrows(), a.ncols());
    assert!(m >= n, "gebrd: needs m >= n");
    assert!(
        n == 0 || a.row_stride() == 1,
        "gebrd: a needs unit row stride"
    );
    assert!(
        d.len() == n && tauq.len() == n && taup.len() == n && e.len() == n.saturating_sub(1),
        "gebrd: d, tauq, taup need n entries and e n - 1"
    );
    let nb = nb.max(1);
    let mut ws = Workspace::<T> {
        x: Mat::zeros(m, nb.min(n)),
        y: Mat::zeros(n, nb.min(n)),
        row: Vec::new(),
        tmp: Vec::new(),
        xrow: Vec::new(),
        left: Mat::new(),
        right: Mat::new(),
        split: Vec::new(),
    };
    let mut i = 0;
    while i < n {
        let k = nb.min(n - i);
        let (mi, ni) = (m - i, n - i);
        let mut ai = a.rb_mut().submatrix_mut(i, i, mi, ni);
        labrd(
            ai.rb_mut(),
            k,
            &mut d[i..i + k],
            &mut e[i..(i + k).min(n - 1)],
            &mut tauq[i..i + k],
            &mut taup[i..i + k],
            &mut ws,
            team,
        )?;
        if k < ni {
            update_trailing(ai.rb_mut(), k, &mut ws, team)?;
        }
        // Put the bidiagonal back where the units of the reflectors stood.
        for j in 0..k {
            ai[(j, j)] = d[i + j];
            if i + j + 1 < n {
                ai[(j, j + 1)] = e[i + j];
            }
        }
        i += k;
    }
    Ok(())
}

/// [`gebrd_on`] without a runtime.
pub fn gebrd<T: Scalar>(
    a: MatMut<'_, T>,
    nb: usize,
    d: &mut [T],
    e: &mut [T],
    tauq: &mut [T],
    taup: &mut [T],
) {
    gebrd_on(a, nb, d, e, tauq, taup, Fork::Seq).expect("no runtime, no run to fail");
}

/// `A22 := A22 - U2 Y2^T - X2 V2^T` after a panel of `k` (LAPACK `dgebrd`'s
/// two GEMMs as one of inner dimension `2k`: `[U2 X2] [Y2 V2^T^T]^T`), the
/// trailing columns cut in two fixed halves run by `team` from
/// [`GEBRD_SPLIT_MIN`] columns on.
fn update_trailing<T: Scalar>(
    a: MatMut<'_, T>,
    k: usize,
    ws: &mut Workspace<T>,
    team: Splits<'_>,
) -> Result<(), Error> {
    let (m2, n2) = (a.nrows() - k, a.ncols() - k);
    ws.left.resize_with(m2, 2 * k, |_, _| T::zero());
    ws.right.resize_with(n2, 2 * k, |_, _| T::zero());
    {
        let ar = a.rb();
        ws.left
            .as_mut()
            .subcols_mut(0, k)
            .copy_from(ar.submatrix(k, 0, m2, k));
        ws.left
            .as_mut()
            .subcols_mut(k, k)
            .copy_from(ws.x.as_ref().submatrix(k, 0, m2, k));
        ws.right
            .as_mut()
            .subcols_mut(0, k)
            .copy_from(ws.y.as_ref().submatrix(k, 0, n2, k));
        ws.right
            .as_mut()
            .subcols_mut(k, k)
            .copy_from(ar.submatrix(0, k, k, n2).transpose());
    }
    let (l, r) = (ws.left.as_ref(), ws.right.as_ref());
    let a22 = a.submatrix_mut(k, k, m2, n2);
    let gemm = |dst: MatMut<'_, T>, r: MatRef<'_, T>| {
        matmul(dst, Accum::Add, l, r.transpose(), -T::one(), Par::Seq);
    };
    if n2 < GEBRD_SPLIT_MIN {
        gemm(a22, r);
        return Ok(());
    }
    let h = n2 / 2;
    let (a_left, a_right) = a22.split_at_col_mut(h);
    let (r_top, r_bottom) = r.split_at_row(h);
    team.join(
        move || {
            gemm(a_left, r_top);
            Ok(())
        },
        move || {
            gemm(a_right, r_bottom);
            Ok(())
        },
    )
}

/// One panel (LAPACK `dlabrd`, `m >= n`) of `k` rows and columns of the
/// trailing matrix `a` (`mi x ni`): reduces them, leaves their reflectors in
/// `a` **with the units set to one** (the trailing update needs them; the
/// caller restores `d` and `e`), and `X` (`mi x k`), `Y` (`ni x k`) in `ws`
/// such that the trailing matrix after the panel is `A - U Y^T - X V^T`.
/// Rows of `Y` and `X` above the current index serve as scratch, as in LAPACK.
#[allow(clippy::too_many_arguments)]
fn labrd<T: Scalar>(
    mut a: MatMut<'_, T>,
    k: usize,
    d: &mut [T],
    e: &mut [T],
    tauq: &mut [T],
    taup: &mut [T],
    ws: &mut Workspace<T>,
    team: Splits<'_>,
) -> Result<(), Error> {
    let (mi, ni) = (a.nrows(), a.ncols());
    let mut x = ws.x.as_mut().submatrix_mut(0, 0, mi, k);
    let mut y = ws.y.as_mut().submatrix_mut(0, 0, ni, k);
    ws.row.resize(ni, T::zero());
    ws.tmp.resize(ni, T::zero());
    ws.xrow.resize(k, T::zero());
    // The small products with the panel's earlier columns go through the
    // laned `dgemv`s of `linalg::blas::gemv`, as `dlabrd` calls `dgemv`; rows of a
    // column-major matrix are gathered into `xrow` first.
    for i in 0..k {
        // Column i, rows i..: A(i:, i) -= A(i:, 0:i) Y(i, 0:i)^T + X(i:, 0:i) A(0:i, i).
        {
            let (done, mut rest) = a.rb_mut().split_at_col_mut(i);
            let (top, ci) = col_mut(rest.rb_mut(), 0).split_at_mut(i);
            let yrow = &mut ws.xrow[..i];
            for (p, yp) in yrow.iter_mut().enumerate() {
                *yp = y[(i, p)];
            }
            gemv_n_sub(done.rb().subrows(i, mi - i), yrow, ci);
            gemv_n_sub(x.rb().submatrix(i, 0, mi - i, i), top, ci);
            let (alpha, tail) = ci.split_first_mut().expect("i < mi");
            tauq[i] = larfg_slice(alpha, tail);
            d[i] = *alpha;
        }
        if i + 1 == ni {
            taup[i] = T::zero();
            break;
        }
        a[(i, i)] = T::one();
        let nr = ni - i - 1;
        // Y(i+1:, i) = tauq (A(i:, i+1:)^T u - Y(i+1:, 0:i) (A(i:, 0:i)^T u)
        //                    - A(0:i, i+1:)^T (X(i:, 0:i)^T u)).
        {
            let ar = a.rb();
            let u = &col(ar, i)[i..];
            let (ydone, mut yrest) = y.rb_mut().split_at_col_mut(i);
            let yi = col_mut(yrest.rb_mut(), 0);
            let (ytop, ybot) = yi.split_at_mut(i + 1);
            let ytop = &mut ytop[..i];
            gemv_t_on(ar.submatrix(i, i + 1, mi - i, nr), u, ybot, team)?;
            gemv_t(ar.submatrix(i, 0, mi - i, i), u, ytop);
            gemv_n_sub(ydone.rb().subrows(i + 1, nr), ytop, ybot);
            gemv_t(x.rb().submatrix(i, 0, mi - i, i), u, ytop);
            let tmp = &mut ws.tmp[..nr];
            gemv_t(ar.submatrix(0, i + 1, i, nr), ytop, tmp);
            let t = tauq[i];
            for (yj, &q) in ybot.iter_mut().zip(tmp.iter()) {
                *yj = (*yj - q) * t;
            }
        }
        // Row i, columns i+1..: A(i, i+1:) -= Y(i+1:, 0:i+1) A(i, 0:i+1)^T
        //                                    + A(0:i, i+1:)^T X(i, 0:i)^T,
        // in a contiguous copy (a row of a column-major matrix is strided).
        let r = &mut ws.row[..nr];
        for (jj, rj) in r.iter_mut().enumerate() {
            *rj = a[(i, i + 1 + jj)];
        }
        let arow = &mut ws.xrow[..=i];
        for (p, ap) in arow.iter_mut().enumerate() {
            *ap = a[(i, p)];
        }
        gemv_n_sub(y.rb().submatrix(i + 1, 0, nr, i + 1), arow, r);
        let xr = &mut ws.xrow[..i];
        for (p, xp) in xr.iter_mut().enumerate() {
            *xp = x[(i, p)];
        }
        let tmp = &mut ws.tmp[..nr];
        gemv_t(a.rb().submatrix(0, i + 1, i, nr), xr, tmp);
        for (rj, &q) in r.iter_mut().zip(tmp.iter()) {
            *rj -= q;
        }
        {
            let (alpha, tail) = r.split_first_mut().expect("nr >= 1");
            taup[i] = larfg_slice(alpha, tail);
            e[i] = *alpha;
            *alpha = T::one();
        }
        for (jj, &rj) in r.iter().enumerate() {
            a[(i, i + 1 + jj)] = rj;
        }
        // X(i+1:, i) = taup (A(i+1:, i+1:) v - A(i+1:, 0:i+1) (Y(i+1:, 0:i+1)^T v)
        //                    - X(i+1:, 0:i) (A(0:i, i+1:) v)).
        {
            let ar = a.rb();
            let r: &[T] = r;
            let (xdone, mut xrest) = x.rb_mut().split_at_col_mut(i);
            let xi = col_mut(xrest.rb_mut(), 0);
            let (xtop, xbot) = xi.split_at_mut(i + 1);
            gemv_n_on(
                ar.submatrix(i + 1, i + 1, mi - i - 1, nr),
                r,
                xbot,
                &mut ws.split,
                team,
            )?;
            gemv_t(y.rb().submatrix(i + 1, 0, nr, i + 1), r, xtop);
            gemv_n_sub(ar.submatrix(i + 1, 0, mi - i - 1, i + 1), xtop, xbot);
            gemv_n(ar.submatrix(0, i + 1, i, nr), r, &mut xtop[..i]);
            gemv_n_sub(xdone.rb().subrows(i + 1, mi - i - 1), &xtop[..i], xbot);
            let t = taup[i];
            for xj in xbot.iter_mut() {
                *xj *= t;
            }
        }
    }
    Ok(())
}

/// `Z := P Z` (LAPACK `dormbr`, `vect = 'P'`, side L, no transpose) with `P`
/// from [`gebrd_on`] on an `m x n` matrix: `a` and `taup` as it left them,
/// `z` `n x c` with unit row stride. `P`'s reflectors live in the rows of `a`;
/// they are copied once into a column-major `(n - 1) x (n - 1)` store and
/// applied by [`ormqr_on`] to rows `1..` of `z` (`P[0, 0] = 1`).
///
/// # Errors
/// Only the fork-join's own ([`Fork::join`]).
///
/// # Panics
/// On inconsistent shapes.
pub fn ormbr_p_on<T: Scalar>(
    a: MatRef<'_, T>,
    taup: &[T],
    z: MatMut<'_, T>,
    nb: usize,
    par: Fork<'_>,
) -> Result<(), Error> {
    let n = a.ncols();
    assert!(a.nrows() >= n && z.nrows() == n, "ormbr: shapes");
    assert!(taup.len() >= n.saturating_sub(1), "ormbr: taup too short");
    if n < 2 {
        return Ok(());
    }
    // Column i of the store: reflector G_i, unit at row i (column i + 1 of a).
    let mut v = Mat::<T>::zeros(n - 1, n - 1);
    for i in 0..n - 1 {
        let c = col_mut(v.as_mut(), i);
        for (jj, x) in c[i + 1..].iter_mut().enumerate() {
            *x = a[(i, i + 2 + jj)];
        }
    }
    ormqr_on(v.as_ref(), &taup[..n - 1], z.subrows_mut(1, n - 1), nb, par)
}

/// `Z := Q Z` (LAPACK `dormbr`, `vect = 'Q'`, side L, no transpose) with `Q`
/// from [`gebrd_on`] on an `m x n` matrix (`a`, `tauq` as it left them; `z`
/// `m x c` with unit row stride).
///
/// # Errors
/// Only the fork-join's own ([`Fork::join`]).
///
/// # Panics
/// On inconsistent shapes.
pub fn ormbr_q_on<T: Scalar>(
    a: MatRef<'_, T>,
    tauq: &[T],
    z: MatMut<'_, T>,
    nb: usize,
    par: Fork<'_>,
) -> Result<(), Error> {
    ormqr_on(a, &tauq[..a.ncols()], z, nb, par)
}

/// Flops of [`gebrd_on`] for `m x n`, `m >= n`: `4 n^2 (m - n / 3)`.
pub fn flops(m: usize, n: usize) -> f64 {
    let (m, n) = (m as f64, n as f64);
    4.0 * n * n * (m - n / 3.0)
}
