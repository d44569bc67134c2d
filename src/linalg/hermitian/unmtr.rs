//! `X := Q X` with `Q = H_0 H_1 ... H_{n-2}` from [`super::hetrd()`] (LAPACK
//! `zunmtr`, side L, `uplo = 'L'`, no transpose): the reflectors in blocks of
//! `nb`, each block as the compact-WY product `I - V T V^H` (Schreiber and
//! Van Loan 1989; LAPACK `zlarft` forward columnwise, then `zlarfb`'s three
//! GEMMs through faer's complex matmul), last block first.

use super::{col, col_mut, one, zero};
use crate::ComplexScalar;
use faer::linalg::matmul::matmul;
use faer::reborrow::*;
use faer::{Accum, Mat, MatMut, MatRef, Par};

/// Default number of reflectors per compact-WY block of [`unmtr`].
pub const UNMTR_BLOCK: usize = 32;

/// The triangular factor `T` (`k x k`, upper; zeros written below) of the
/// block `H_0 ... H_{k-1} = I - V T V^H` (LAPACK `zlarft`, forward,
/// columnwise): `v` is `rows x k` with reflector `i` in column `i`, its unit
/// at row `i` (entries on and above the diagonal not read).
pub fn larft<C: ComplexScalar>(v: MatRef<'_, C>, tau: &[C], mut t: MatMut<'_, C>) {
    let k = v.ncols();
    assert!(t.nrows() == k && t.ncols() == k && tau.len() == k && v.nrows() >= k);
    // G = V^H V through faer's product, V explicit (unit diagonal, zeros
    // above): G[p, i] = V[:, p]^H v_i for p < i.
    let mut ve = Mat::<C>::zeros(v.nrows(), k);
    explicit_v(v, ve.as_mut());
    let mut g = Mat::<C>::zeros(k, k);
    matmul(
        g.as_mut(),
        Accum::Replace,
        ve.adjoint(),
        ve.as_ref(),
        one(),
        Par::Seq,
    );
    for i in 0..k {
        for r in i..k {
            t[(r, i)] = zero();
        }
        if tau[i] == zero() {
            for r in 0..i {
                t[(r, i)] = zero();
            }
            continue;
        }
        // T[..i, i] = -tau_i T[..i, ..i] G[..i, i] (upper triangular).
        for r in 0..i {
            let mut s = zero::<C>();
            for c in r..i {
                s += t[(r, c)] * g[(c, i)];
            }
            t[(r, i)] = -tau[i] * s;
        }
        t[(i, i)] = tau[i];
    }
}

/// `dst` (`rows x k`) := the reflectors of `v` with their unit diagonal and
/// zeros above it (the entries of `v` on and above the diagonal not read).
fn explicit_v<C: ComplexScalar>(v: MatRef<'_, C>, mut dst: MatMut<'_, C>) {
    for c in 0..v.ncols() {
        for r in 0..c {
            dst[(r, c)] = zero();
        }
        dst[(c, c)] = one();
        let (src, out) = (col(v, c, c + 1), col_mut(dst.rb_mut(), c, c + 1));
        out.copy_from_slice(src);
    }
}

/// The `T` factors of every block of `nb` reflectors of an order-`n`
/// reduction by [`super::hetrd()`] (`a` and `tau` as it left them), side by
/// side: block `b` (reflectors `b nb ..`) in columns `b nb ..` of the
/// `nb x (n - 1)` result, rows `0..kb`.
pub fn block_factors<C: ComplexScalar>(a: MatRef<'_, C>, tau: &[C], nb: usize) -> Mat<C> {
    let n = a.nrows();
    let k = n.saturating_sub(1);
    let nb = nb.max(1);
    let mut t = Mat::<C>::zeros(nb, k);
    for b0 in (0..k).step_by(nb) {
        let kb = nb.min(k - b0);
        let v = a.submatrix(b0 + 1, b0, n - 1 - b0, kb);
        larft(
            v,
            &tau[b0..b0 + kb],
            t.as_mut().submatrix_mut(0, b0, kb, kb),
        );
    }
    t
}

/// `X := Q X` (LAPACK `zunmtr`, side L, lower, no transpose) with the block
/// factors `t` of [`block_factors`] for blocks of `nb`; `x` is `n x m` with
/// unit row stride. Each column of `x` is computed the same way whatever the
/// other columns (the products are column-wise), so column blocks of `X` can
/// be transformed by separate tasks with the same bits.
///
/// # Panics
/// On inconsistent shapes.
pub fn unmtr_blocked<C: ComplexScalar>(
    a: MatRef<'_, C>,
    t: MatRef<'_, C>,
    nb: usize,
    x: MatMut<'_, C>,
) {
    let n = a.nrows();
    let k = n.saturating_sub(1);
    let nb = nb.max(1);
    assert!(a.ncols() == n && x.nrows() == n, "unmtr: shapes");
    assert!(t.nrows() >= nb.min(k), "unmtr: T rows");
    assert_eq!(t.ncols(), k, "unmtr: T columns");
    if k == 0 || x.ncols() == 0 {
        return;
    }
    let mut x = x.subrows_mut(1, k);
    let mut vb = Mat::<C>::zeros(k, nb);
    let mut w = Mat::<C>::zeros(nb, x.ncols());
    let mut w2 = Mat::<C>::zeros(nb, x.ncols());
    let last = (k - 1) / nb * nb;
    for b0 in (0..=last).rev().step_by(nb) {
        let kb = nb.min(k - b0);
        let rows = k - b0;
        // V of the block, explicit: unit diagonal, zeros above.
        let mut v = vb.as_mut().submatrix_mut(0, 0, rows, kb);
        explicit_v(a.submatrix(b0 + 1, b0, rows, kb), v.rb_mut());
        let v = v.rb();
        let tb = t.submatrix(0, b0, kb, kb);
        let mut xb = x.rb_mut().subrows_mut(b0, rows);
        let mut wb = w.as_mut().subrows_mut(0, kb);
        let mut w2b = w2.as_mut().subrows_mut(0, kb);
        // X := X - V (T (V^H X)).
        matmul(
            wb.rb_mut(),
            Accum::Replace,
            v.adjoint(),
            xb.rb(),
            one(),
            Par::Seq,
        );
        matmul(w2b.rb_mut(), Accum::Replace, tb, wb.rb(), one(), Par::Seq);
        matmul(xb.rb_mut(), Accum::Add, v, w2b.rb(), -one::<C>(), Par::Seq);
    }
}

/// `X := Q X` with `Q` from [`super::hetrd()`] (`a`, `tau` as it left them) in
/// compact-WY blocks of `nb` ([`block_factors`], then [`unmtr_blocked`]).
///
/// # Panics
/// On inconsistent shapes.
pub fn unmtr<C: ComplexScalar>(a: MatRef<'_, C>, tau: &[C], x: MatMut<'_, C>, nb: usize) {
    let n = a.nrows();
    assert_eq!(tau.len(), n.saturating_sub(1), "unmtr: tau length");
    let t = block_factors(a, tau, nb);
    unmtr_blocked(a, t.as_ref(), nb, x);
}
