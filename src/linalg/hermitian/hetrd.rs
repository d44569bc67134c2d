//! The reduction `Q^H A Q = T` of a complex Hermitian matrix (lower triangle)
//! to real symmetric tridiagonal form: LAPACK `zhetd2` (unblocked), `zhetrd`
//! with `zlatrd` panels (blocked; Dongarra, Hammarling and Sorensen 1989), the
//! trailing update one `zher2k` through faer's complex triangular GEMM.
//! Storage and conventions: the parent module's docs.

use super::{axpy, col_mut, dotc, larfg, one, zero, Re};
use crate::ComplexScalar;
use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{matmul as tri_matmul, BlockStructure};
use faer::reborrow::*;
use faer::{Accum, Mat, MatMut, MatRef, Par};
use num_traits::Zero;

/// Tuning of [`hetrd`]: the panel width and the order below which the rest
/// is reduced unblocked (LAPACK's `ilaenv` gives `NB = 32`, `NX = 32` for
/// `zhetrd`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HetrdParams {
    /// Columns per `zlatrd` panel (1 or less: unblocked throughout).
    pub block: usize,
    /// Trailing order from which the reduction goes unblocked.
    pub crossover: usize,
}

impl Default for HetrdParams {
    fn default() -> Self {
        HetrdParams {
            block: 32,
            crossover: 32,
        }
    }
}

/// Checks the arguments shared by the reductions.
fn check_args<C: ComplexScalar>(a: &MatMut<'_, C>, d: &[Re<C>], e: &[Re<C>], tau: &[C]) {
    let n = a.nrows();
    assert_eq!(a.ncols(), n, "hetrd: a must be square");
    assert!(
        n == 0 || a.row_stride() == 1,
        "hetrd: a needs unit row stride"
    );
    assert_eq!(d.len(), n, "hetrd: d must have n entries");
    let m = n.saturating_sub(1);
    assert!(
        e.len() == m && tau.len() == m,
        "hetrd: e and tau must have n - 1 entries"
    );
}

/// `y := A v` for the Hermitian `m x m` `a` of which the lower triangle is
/// read, the diagonal's real part only (`zhemv`, `uplo = 'L'`): the strict
/// lower triangle `L` as `L v + L^H v` through faer's triangular matrix
/// products (its SIMD complex kernels; sequential, so a fixed order), plus
/// `re(diag) v`.
pub(super) fn hemv_lower<C: ComplexScalar>(a: MatRef<'_, C>, v: &[C], y: &mut [C]) {
    let m = a.nrows();
    let (v, y) = (&v[..m], &mut y[..m]);
    for (i, (yi, &vi)) in y.iter_mut().zip(v).enumerate() {
        *yi = C::from_parts(a[(i, i)].re(), Re::<C>::zero()) * vi;
    }
    let vm = MatRef::from_column_major_slice(v, m, 1);
    let ym = MatMut::from_column_major_slice_mut(y, m, 1);
    tri_matmul(
        ym,
        BlockStructure::Rectangular,
        Accum::Add,
        a,
        BlockStructure::StrictTriangularLower,
        vm,
        BlockStructure::Rectangular,
        one::<C>(),
        Par::Seq,
    );
    let ym = MatMut::from_column_major_slice_mut(y, m, 1);
    tri_matmul(
        ym,
        BlockStructure::Rectangular,
        Accum::Add,
        a.adjoint(),
        BlockStructure::StrictTriangularUpper,
        vm,
        BlockStructure::Rectangular,
        one::<C>(),
        Par::Seq,
    );
}

/// `A := A - v w^H - w v^H` on the lower triangle of the `m x m` `a`
/// (`zher2`); the diagonal's imaginary part is set to zero, as `zher2` does.
fn her2_lower<C: ComplexScalar>(mut a: MatMut<'_, C>, v: &[C], w: &[C]) {
    let m = a.nrows();
    for c in 0..m {
        let (cv, cw) = (v[c].conjugate(), w[c].conjugate());
        let colc = col_mut(a.rb_mut(), c, c);
        for (k, x) in colc.iter_mut().enumerate() {
            *x -= v[c + k] * cw + w[c + k] * cv;
        }
        colc[0] = C::from_parts(colc[0].re(), Re::<C>::zero());
    }
}

/// `w := tau A v - (tau/2)(w^H v) v` from `y = A v` in `w`: the vector whose
/// rank-2 update `A - v w^H - w v^H` equals `H^H A H` (`zhetd2`).
fn finish_w<C: ComplexScalar>(w: &mut [C], v: &[C], tau: C) {
    for x in w.iter_mut() {
        *x = tau * *x;
    }
    let half = -(tau.scaled(<Re<C> as crate::Scalar>::of(0.5))) * dotc(w, v);
    axpy(w, half, v);
}

/// Unblocked reduction of the Hermitian matrix whose lower triangle `a` holds
/// to real tridiagonal form (LAPACK `zhetd2`, `uplo = 'L'`): per column a
/// reflector ([`larfg`]), `w = tau A22 v - (tau/2)(w^H v) v`, then
/// `A22 -= v w^H + w v^H`. Outputs as in the module docs.
///
/// # Panics
/// If `a` is not square with unit row stride or a length is wrong.
pub fn hetd2<C: ComplexScalar>(
    mut a: MatMut<'_, C>,
    d: &mut [Re<C>],
    e: &mut [Re<C>],
    tau: &mut [C],
) {
    check_args(&a, d, e, tau);
    let n = a.nrows();
    let mut w = vec![zero::<C>(); n];
    for i in 0..n.saturating_sub(1) {
        let (left, right) = a.rb_mut().split_at_col_mut(i + 1);
        let ci = col_mut(left, i, i + 1);
        let (alpha, x) = ci.split_first_mut().expect("i + 1 < n");
        let t = larfg(alpha, x);
        e[i] = alpha.re();
        tau[i] = t;
        if t != zero() {
            *alpha = one();
            let v: &[C] = ci;
            let m = n - i - 1;
            let mut a22 = right.submatrix_mut(i + 1, 0, m, m);
            let w = &mut w[..m];
            hemv_lower(a22.rb(), v, w);
            finish_w(w, v, t);
            her2_lower(a22.rb_mut(), v, w);
            ci[0] = C::from_parts(e[i], Re::<C>::zero());
        }
        d[i] = a[(i, i)].re();
    }
    if n > 0 {
        d[n - 1] = a[(n - 1, n - 1)].re();
    }
}

/// Blocked reduction to real tridiagonal form (LAPACK `zhetrd`, `uplo = 'L'`):
/// panels of `params.block` columns reduced with `zlatrd`'s lazy updates, each
/// followed by one `zher2k` of the trailing matrix through faer's triangular
/// GEMM (sequential, so the bits do not depend on any thread count); the last
/// `max(crossover, block)` columns by [`hetd2`]. Same outputs as [`hetd2`]
/// (equal up to rounding).
///
/// # Panics
/// As [`hetd2`].
pub fn hetrd<C: ComplexScalar>(
    mut a: MatMut<'_, C>,
    params: HetrdParams,
    d: &mut [Re<C>],
    e: &mut [Re<C>],
    tau: &mut [C],
) {
    check_args(&a, d, e, tau);
    let n = a.nrows();
    let nb = params.block.max(1);
    let nx = params.crossover.max(nb);
    let mut i = 0;
    if nb > 1 && n > nx {
        let mut w = Mat::<C>::zeros(n, nb);
        // The zher2k's operands [V W] and [W V], allocated once.
        let (mut l, mut r) = (Mat::<C>::zeros(n, 2 * nb), Mat::<C>::zeros(n, 2 * nb));
        while n - i > nx {
            let m = n - i;
            let mut ai = a.rb_mut().submatrix_mut(i, i, m, m);
            let mut wi = w.as_mut().submatrix_mut(0, 0, m, nb);
            latrd(
                ai.rb_mut(),
                wi.rb_mut(),
                &mut e[i..i + nb],
                &mut tau[i..i + nb],
            );
            let m2 = m - nb;
            let (panel, trailing) = ai.rb_mut().split_at_col_mut(nb);
            let v2 = panel.rb().submatrix(nb, 0, m2, nb);
            let w2 = wi.rb().submatrix(nb, 0, m2, nb);
            let a22 = trailing.submatrix_mut(nb, 0, m2, m2);
            her2k_lower(
                a22,
                v2,
                w2,
                l.as_mut().submatrix_mut(0, 0, m2, 2 * nb),
                r.as_mut().submatrix_mut(0, 0, m2, 2 * nb),
            );
            for j in 0..nb {
                a[(i + j + 1, i + j)] = C::from_parts(e[i + j], Re::<C>::zero());
                d[i + j] = a[(i + j, i + j)].re();
            }
            i += nb;
        }
    }
    let m = n - i;
    let tail = m.saturating_sub(1);
    hetd2(
        a.submatrix_mut(i, i, m, m),
        &mut d[i..],
        &mut e[i..i + tail],
        &mut tau[i..i + tail],
    );
}

/// `A := A - V W^H - W V^H` on the lower triangle of the square `a`
/// (`zher2k`) as one product `[V W] [W V]^H` of inner dimension `2k` through
/// faer's triangular GEMM (reads and writes the triangle once); `l` and `r`
/// (`m x 2k`) are workspace. The diagonal's imaginary part, zero in exact
/// arithmetic, is not cleaned here: every reader takes the real part.
fn her2k_lower<C: ComplexScalar>(
    a: MatMut<'_, C>,
    v: MatRef<'_, C>,
    w: MatRef<'_, C>,
    mut l: MatMut<'_, C>,
    mut r: MatMut<'_, C>,
) {
    let k = v.ncols();
    l.rb_mut().subcols_mut(0, k).copy_from(v);
    l.rb_mut().subcols_mut(k, k).copy_from(w);
    r.rb_mut().subcols_mut(0, k).copy_from(w);
    r.rb_mut().subcols_mut(k, k).copy_from(v);
    tri_matmul(
        a,
        BlockStructure::TriangularLower,
        Accum::Add,
        l.rb(),
        BlockStructure::Rectangular,
        r.rb().adjoint(),
        BlockStructure::Rectangular,
        -one::<C>(),
        Par::Seq,
    );
}

/// One panel of [`hetrd`] (LAPACK `zlatrd`, `uplo = 'L'`) on the `m x m`
/// trailing matrix `a` (`m > nb = w.ncols()`): reduces its first `nb` columns,
/// writing their `e` and `tau`, the reflectors below the subdiagonal with their
/// unit entries **set to one** (the caller's `zher2k` uses them, then restores
/// `e`), and `W` (`m x nb`) such that the trailing matrix after the panel is
/// `A - V W^H - W V^H`.
fn latrd<C: ComplexScalar>(
    mut a: MatMut<'_, C>,
    mut w: MatMut<'_, C>,
    e: &mut [Re<C>],
    tau: &mut [C],
) {
    let (m, nb) = (a.nrows(), w.ncols());
    debug_assert!(m > nb && w.nrows() == m);
    let mut t1 = vec![zero::<C>(); nb];
    let mut t2 = vec![zero::<C>(); nb];
    for j in 0..nb {
        let (left, right) = a.rb_mut().split_at_col_mut(j + 1);
        let (vdone, mut cjm) = left.split_at_col_mut(j);
        let (wdone, mut wrest) = w.rb_mut().split_at_col_mut(j);
        let (vdone, wdone) = (vdone.rb(), wdone.rb());
        let cj = col_mut(cjm.rb_mut(), 0, j);
        // a[j.., j] -= V[j.., ..j] conj(W[j, ..j])^T + W[j.., ..j] conj(V[j, ..j])^T
        // (zlatrd's two zgemv with the rows conjugated by zlacgv).
        for p in 0..j {
            t1[p] = wdone[(j, p)].conjugate();
            t2[p] = vdone[(j, p)].conjugate();
        }
        gemv_sub(vdone.subrows(j, m - j), &t1[..j], cj);
        gemv_sub(wdone.subrows(j, m - j), &t2[..j], cj);
        cj[0] = C::from_parts(cj[0].re(), Re::<C>::zero());
        let cj = &mut cj[1..];
        let (alpha, x) = cj.split_first_mut().expect("j + 1 < m");
        let t = larfg(alpha, x);
        e[j] = alpha.re();
        tau[j] = t;
        *alpha = one();
        let v: &[C] = cj;
        let len = m - j - 1;
        let wj = &mut col_mut(wrest.rb_mut(), 0, j + 1)[..len];
        if t == zero() {
            wj.fill(zero());
            continue;
        }
        // w_j = tau (A22 - V W^H - W V^H) v - (tau/2)(w_j^H v) v, A22 not yet
        // updated by this panel.
        hemv_lower(right.rb().submatrix(j + 1, 0, len, len), v, wj);
        let (vlow, wlow) = (vdone.subrows(j + 1, len), wdone.subrows(j + 1, len));
        gemv_adjoint(wlow, v, &mut t1[..j]);
        gemv_adjoint(vlow, v, &mut t2[..j]);
        gemv_sub(vlow, &t1[..j], wj);
        gemv_sub(wlow, &t2[..j], wj);
        finish_w(wj, v, t);
    }
}

/// `y -= A x` (`A` `m x k`) through faer's matrix product.
fn gemv_sub<C: ComplexScalar>(a: MatRef<'_, C>, x: &[C], y: &mut [C]) {
    if x.is_empty() {
        return;
    }
    let (m, k) = (a.nrows(), a.ncols());
    let xm = MatRef::from_column_major_slice(x, k, 1);
    let ym = MatMut::from_column_major_slice_mut(&mut y[..m], m, 1);
    matmul(ym, Accum::Add, a, xm, -one::<C>(), Par::Seq);
}

/// `y := A^H x` (`A` `m x k`) through faer's matrix product.
fn gemv_adjoint<C: ComplexScalar>(a: MatRef<'_, C>, x: &[C], y: &mut [C]) {
    if y.is_empty() {
        return;
    }
    let (m, k) = (a.nrows(), a.ncols());
    let xm = MatRef::from_column_major_slice(&x[..m], m, 1);
    let ym = MatMut::from_column_major_slice_mut(y, k, 1);
    matmul(ym, Accum::Replace, a.adjoint(), xm, one::<C>(), Par::Seq);
}
