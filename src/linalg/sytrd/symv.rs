//! The symmetric matrix-vector product of the reduction (`dsymv`, lower), the
//! memory-bound half of `dsytrd`'s flops (Dongarra, Hammarling, Sorensen
//! 1989: each panel column needs `A22 v` against the not yet updated trailing
//! matrix).
//!
//! One pass over the lower triangle, **two columns at a time**: columns `c`
//! and `c + 1` give two dots (their parts below row `c + 1` times `v`) and one
//! fused two-column axpy into the rows below, so each entry of `A` is read
//! once and `v` and `w` once per column pair rather than once per column
//! (`research/small-mid-evd.md` §1: at small and mid n the BLAS-2 rate of
//! this product is what decides against LAPACK).
//!
//! From [`SYMV_SPLIT_MIN`] rows on the product is computed as two partial
//! products over fixed column blocks of about equal area (columns `0..c` and
//! `c..`), summed in that order: the split depends only on the order, so the
//! result is bitwise the same whether the blocks run in turn or as two tasks
//! on a runtime ([`join`]).

use super::col;
use crate::error::Error;
use crate::linalg::stedc::forked::join;
use crate::runtime::Runtime;
use crate::Scalar;
use faer::MatRef;

/// Lanes of the independent partial sums of the fused loop: wide enough for
/// two AVX-512 registers per dot in f64 (one in f32), and fixed so that the
/// summation order depends only on the length.
const LANES: usize = 16;

/// Smallest order whose product [`symv_lower_on`] computes as two column
/// blocks (run as two tasks when the runtime has several threads). Below it
/// the product (a few hundred KiB read from cache) takes about as long as
/// handing half of it to a parked helper.
pub const SYMV_SPLIT_MIN: usize = 512;

/// `(t0 . v, t1 . v)` and `w += s0 t0 + s1 t1`, over the common length of the
/// slices, in one pass: the inner loop of the column-pair product.
#[inline(always)]
fn dot2_axpy2<T: Scalar>(t0: &[T], t1: &[T], v: &[T], w: &mut [T], s0: T, s1: T) -> (T, T) {
    let n = t0.len();
    let (t1, v, w) = (&t1[..n], &v[..n], &mut w[..n]);
    let mut acc0 = [T::zero(); LANES];
    let mut acc1 = [T::zero(); LANES];
    let body = n - n % LANES;
    let mut k = 0;
    while k < body {
        let x0: &[T; LANES] = t0[k..k + LANES].try_into().expect("LANES");
        let x1: &[T; LANES] = t1[k..k + LANES].try_into().expect("LANES");
        let vv: &[T; LANES] = v[k..k + LANES].try_into().expect("LANES");
        let ww: &mut [T; LANES] = (&mut w[k..k + LANES]).try_into().expect("LANES");
        for l in 0..LANES {
            acc0[l] += x0[l] * vv[l];
            acc1[l] += x1[l] * vv[l];
            ww[l] += x0[l] * s0 + x1[l] * s1;
        }
        k += LANES;
    }
    let (mut r0, mut r1) = (T::zero(), T::zero());
    for k in body..n {
        r0 += t0[k] * v[k];
        r1 += t1[k] * v[k];
        w[k] += t0[k] * s0 + t1[k] * s1;
    }
    // Pairwise reduction of the lanes, in a fixed order.
    let mut half = LANES / 2;
    while half > 0 {
        for l in 0..half {
            acc0[l] += acc0[l + half];
            acc1[l] += acc1[l + half];
        }
        half /= 2;
    }
    (acc0[0] + r0, acc1[0] + r1)
}

simd_dispatch! {
    /// `w[..m] := (the columns c0..c1 of A) v` for the `m x m` symmetric `A`
    /// whose lower triangle `a` holds (unit row stride), i.e. the entries
    /// `A[r, c]` and `A[c, r]` with `c` in `c0..c1` and `r >= c`; `c1 - c0`
    /// even or `c1 = m`.
    fn symv_cols / symv_cols_simd / symv_cols_body (a: MatRef<'_, T>, c0: usize, c1: usize, v: &[T], w: &mut [T])
}

#[inline(always)]
fn symv_cols_body<T: Scalar>(a: MatRef<'_, T>, c0: usize, c1: usize, v: &[T], w: &mut [T]) {
    let m = a.nrows();
    let (v, w) = (&v[..m], &mut w[..m]);
    w.fill(T::zero());
    let mut c = c0;
    while c + 2 <= c1 {
        // Column c from row c, column c + 1 from row c + 1.
        let (k0, k1) = (col(a, c, c), col(a, c + 1, c + 1));
        let (a00, a10, a11) = (k0[0], k0[1], k1[0]);
        let (v0, v1) = (v[c], v[c + 1]);
        let (s0, s1) = dot2_axpy2(&k0[2..], &k1[1..], &v[c + 2..], &mut w[c + 2..], v0, v1);
        w[c] += a00 * v0 + a10 * v1 + s0;
        w[c + 1] += a10 * v0 + a11 * v1 + s1;
        c += 2;
    }
    if c < c1 {
        // The last column of an odd order: its diagonal entry only.
        w[c] += col(a, c, c)[0] * v[c];
    }
}

/// `w := A v` for the `m x m` symmetric `A` whose lower triangle `a` holds
/// (unit row stride, `v` and `w` of `m` entries at least), on `rt` from
/// [`SYMV_SPLIT_MIN`] rows on (module docs); `scratch` holds the second
/// block's partial product (resized as needed).
///
/// # Errors
/// Only the runtime's own ([`Runtime::run`]).
pub fn symv_lower_on<T: Scalar>(
    a: MatRef<'_, T>,
    v: &[T],
    w: &mut [T],
    scratch: &mut Vec<T>,
    rt: Option<&Runtime>,
) -> Result<(), Error> {
    let m = a.nrows();
    debug_assert!(a.ncols() == m && v.len() >= m && w.len() >= m);
    if m < SYMV_SPLIT_MIN {
        symv_cols(a, 0, m, v, w);
        return Ok(());
    }
    // Columns 0..c hold c m - c^2 / 2 entries, the rest (m - c)^2 / 2: equal
    // for c = m (1 - 1/sqrt 2); even so that the pairs of both blocks align.
    let c = (((m as f64) * (1.0 - std::f64::consts::FRAC_1_SQRT_2)).round() as usize) & !1;
    if scratch.len() < m {
        scratch.resize(m, T::zero());
    }
    let (w, p) = (&mut w[..m], &mut scratch[..m]);
    {
        let (w, p) = (&mut *w, &mut *p);
        join(
            rt,
            move || {
                symv_cols(a, 0, c, v, w);
                Ok(())
            },
            move || {
                symv_cols(a, c, m, v, p);
                Ok(())
            },
        )?;
    }
    // The second block adds nothing above row c.
    for (x, &y) in w[c..].iter_mut().zip(&p[c..]) {
        *x += y;
    }
    Ok(())
}

/// [`symv_lower_on`] with no runtime and a scratch of its own.
pub fn symv_lower<T: Scalar>(a: MatRef<'_, T>, v: &[T], w: &mut [T]) {
    let mut scratch = Vec::new();
    symv_lower_on(a, v, w, &mut scratch, None).expect("no runtime, no run to fail");
}
