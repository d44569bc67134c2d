//! Householder reflectors and their compact-WY blocks (LAPACK `dlarfg`, `dlarft`,
//! `dlarfb` conventions, re-derived; the WY form as in Wang et al., PPoPP 2025,
//! §2.1).
//!
//! A reflector is `H = I - tau v v^T` with `v[0] = 1` (implicit). A block of `k`
//! reflectors `H_0 H_1 ... H_{k-1}` is `I - V T V^T` (Schreiber–Van Loan compact WY)
//! with `V` unit lower trapezoidal and `T` upper triangular.
//!
//! # Storage convention for `V` (all kernels of this module)
//!
//! `V` is passed as an `m x k` view in the layout `dgeqrf` leaves behind: column `j`
//! holds `v_j[j+1..]` strictly below the diagonal; the unit diagonal is **implicit**
//! and the part on and above the diagonal is **never read** (it usually holds `R`).
//! Columns `j >= m` (only possible when `m < k`) are the zero vector, so only the
//! first `min(m, k)` reflectors take part. The triangle is handled with faer's
//! triangular matmul (`BlockStructure::UnitTriangularLower`), so no copy with
//! explicit zeros and ones is formed. `T` is read through its upper triangle only.
//!
//! Built from them: the QR of a tall panel with its compact-WY factor
//! ([`panel_qr`]) and `Z := Q Z` for reflectors stored in columns ([`ormqr`]).

use crate::linalg::blas::simd::reduce_lanes;
use crate::Scalar;
use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{matmul as tri_matmul, BlockStructure};
use faer::reborrow::*;
use faer::{Accum, ColMut, Mat, MatMut, MatRef, Par};

use BlockStructure::{Rectangular as Rect, TriangularLower, TriangularUpper, UnitTriangularLower};

mod block;
pub mod ormqr;
pub mod panel_qr;

pub use block::{apply_block_reflector_left, apply_block_reflector_right, larft};

/// Generates an elementary reflector (LAPACK `dlarfg`).
///
/// On entry `alpha` is `x[0]` and `x` is the tail `x[1..]`. On return `alpha` holds
/// `beta = -sign(alpha) ||(alpha, x)||`, `x` holds `v[1..]` (with `v[0] = 1`
/// implicit) and the returned value is `tau`, so that
/// `(I - tau v v^T) (alpha, x)^T = (beta, 0)^T`. When the tail is exactly zero,
/// `tau = 0` (`H = I`) and nothing is changed. Tiny vectors are rescaled by
/// `1 / (SAFE_MIN / EPS)` up to 20 times before `beta` is recomputed, as `dlarfg`
/// does, so `v` is accurate even when `||x||` underflows.
pub fn larfg<T: Scalar>(alpha: &mut T, mut x: ColMut<'_, T>) -> T {
    let zero = T::zero();
    let one = T::one();
    if x.nrows() == 0 {
        return zero;
    }
    let mut xnorm = nrm2(x.rb());
    if xnorm == zero {
        if x.rb().iter().all(|&e| e == zero) {
            return zero;
        }
        // faer's norm underflows to 0 for deep subnormals; a reflector must
        // still annihilate them (callers rely on exact zeros), so measure the
        // norm relative to the largest entry (LAPACK's `dnrm2` does not underflow).
        xnorm = tiny_norm(x.rb());
    }
    let signed = |h: T, a: T| if a >= zero { -h } else { h };
    let mut beta = signed(alpha.hypot(xnorm), *alpha);
    let safmin = T::SAFE_MIN / T::EPS;
    let mut knt = 0;
    if beta.abs() < safmin {
        // dlarfg: scale up until beta is representable with full accuracy.
        let rsafmn = one / safmin;
        loop {
            knt += 1;
            scale(x.rb_mut(), rsafmn);
            beta *= rsafmn;
            *alpha *= rsafmn;
            if beta.abs() >= safmin || knt >= 20 {
                break;
            }
        }
        xnorm = nrm2(x.rb());
        beta = signed(alpha.hypot(xnorm), *alpha);
    }
    let tau = (beta - *alpha) / beta;
    scale(x.rb_mut(), one / (*alpha - beta));
    for _ in 0..knt {
        beta *= safmin;
    }
    *alpha = beta;
    tau
}

/// [`larfg`] on a slice: `x` is the tail `x[1..]` of the vector whose head is
/// `alpha`. Same contract (on return `alpha = beta`, `x = v[1..]`, `tau`
/// returned, `tau = 0` and nothing changed for a zero tail).
#[inline]
pub fn larfg_slice<T: Scalar>(alpha: &mut T, x: &mut [T]) -> T {
    larfg(alpha, ColMut::from_slice_mut(x))
}

/// `a . b` over the common length with four partial sums in a fixed order, so
/// the result depends only on the values (not on alignment or on which task
/// runs it): the bitwise reproducibility the bulge-chasing kernels rely on.
#[inline(always)]
pub fn dot<T: Scalar>(a: &[T], b: &[T]) -> T {
    let n = a.len().min(b.len());
    let (ca, cb) = (a[..n].chunks_exact(4), b[..n].chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    let mut acc = [T::zero(); 4];
    for (x, y) in ca.zip(cb) {
        for (s, (&xk, &yk)) in acc.iter_mut().zip(x.iter().zip(y)) {
            *s += xk * yk;
        }
    }
    let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    for (&x, &y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// `y += a x` over the common length.
#[inline(always)]
pub fn axpy<T: Scalar>(y: &mut [T], a: T, x: &[T]) {
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

/// The contiguous storage of column `j` of `z` (which must have unit row stride).
#[inline]
fn col_slice<T>(z: MatMut<'_, T>, j: usize) -> &mut [T] {
    z.col_mut(j)
        .try_as_col_major_mut()
        .expect("the matrix must have unit row stride")
        .as_slice_mut()
}

/// `Z := H Z` for one reflector `H = I - tau v v^T`, `v = (1, v_tail)`, on the
/// `L = v_tail.len() + 1` rows of `z` (LAPACK `dlarf`, side L), column by
/// column with [`dot`] and [`axpy`] (fixed summation order). `z` needs unit row
/// stride; any column stride. `tau = 0` is a no-op.
#[inline(always)]
pub fn larf_left<T: Scalar>(tau: T, v_tail: &[T], mut z: MatMut<'_, T>) {
    assert_eq!(z.nrows(), v_tail.len() + 1, "larf_left: Z must have L rows");
    if tau == T::zero() {
        return;
    }
    for j in 0..z.ncols() {
        let (c0, rest) = col_slice(z.rb_mut(), j).split_first_mut().expect("L >= 1");
        let t = tau * (*c0 + dot(rest, v_tail));
        *c0 -= t;
        axpy(rest, -t, v_tail);
    }
}

/// `Z := H_0 H_1 Z` for two consecutive reflectors (LAPACK `dlarf` twice,
/// `H_1` first) in one pass over each column: `H_0 = I - tau0 v0 v0^T` with
/// `v0 = (1, tail0)` on the `L = tail0.len() + 1` rows of `z`, and
/// `H_1 = I - tau1 v1 v1^T` with `v1 = (0, 1, tail1)` (it leaves the first
/// row alone). With `a = v1^T z_j` and `b = v0^T z_j` from one pass,
/// `w1 = tau1 a` and `w0 = tau0 (b - w1 v0^T v1)`, then
/// `z_j -= w1 v1 + w0 v0` in a second pass: two passes over the column
/// instead of four (the small-SVD `org2r` is bound by them). `z` needs unit
/// row stride and `L >= 2` rows.
#[inline(always)]
pub fn larf2_left<T: Scalar>(tau0: T, tail0: &[T], tau1: T, tail1: &[T], mut z: MatMut<'_, T>) {
    let l = z.nrows();
    assert!(
        l >= 2 && tail0.len() + 1 == l && tail1.len() + 2 == l,
        "larf2_left: shapes"
    );
    let (t0_first, t0_rest) = (tail0[0], &tail0[1..]);
    // v0^T v1: row 1 of v1 is 1, rows 2.. are tail1.
    let beta = t0_first + dot(t0_rest, tail1);
    for j in 0..z.ncols() {
        let c = col_slice(z.rb_mut(), j);
        let (head, rest) = c.split_at_mut(2);
        let (a_dot, b_dot) = dot2(rest, tail1, t0_rest);
        let a = head[1] + a_dot;
        let b = head[0] + t0_first * head[1] + b_dot;
        let w1 = tau1 * a;
        let w0 = tau0 * (b - w1 * beta);
        head[0] -= w0;
        head[1] -= w1 + w0 * t0_first;
        for ((ci, &x), &y) in rest.iter_mut().zip(tail1).zip(t0_rest) {
            *ci -= w1 * x + w0 * y;
        }
    }
}

/// `(c . x, c . y)` in one pass, each with [`dot`]'s four partial sums.
#[inline(always)]
fn dot2<T: Scalar>(c: &[T], x: &[T], y: &[T]) -> (T, T) {
    let n = c.len().min(x.len()).min(y.len());
    let main = n - n % 4;
    let (mut sx, mut sy) = ([T::zero(); 4], [T::zero(); 4]);
    for ((cc, xc), yc) in c[..main]
        .chunks_exact(4)
        .zip(x[..main].chunks_exact(4))
        .zip(y[..main].chunks_exact(4))
    {
        for k in 0..4 {
            sx[k] += cc[k] * xc[k];
            sy[k] += cc[k] * yc[k];
        }
    }
    let mut a = (sx[0] + sx[1]) + (sx[2] + sx[3]);
    let mut b = (sy[0] + sy[1]) + (sy[2] + sy[3]);
    for i in main..n {
        a += c[i] * x[i];
        b += c[i] * y[i];
    }
    (a, b)
}

/// `Y := Y H` for one reflector `H = I - tau v v^T`, `v = (1, v_tail)`, on the
/// `L` columns of `y` (LAPACK `dlarf`, side R): `w = Y v`, then
/// `Y -= tau w v^T`, both as [`axpy`]s over the (contiguous) columns, in a fixed
/// order. `y` needs unit row stride; `w` is a workspace of at least
/// `y.nrows()` values. `tau = 0` is a no-op.
#[inline(always)]
pub fn larf_right<T: Scalar>(tau: T, v_tail: &[T], mut y: MatMut<'_, T>, w: &mut [T]) {
    assert_eq!(
        y.ncols(),
        v_tail.len() + 1,
        "larf_right: Y must have L columns"
    );
    let k = y.nrows();
    if tau == T::zero() || k == 0 {
        return;
    }
    let w = &mut w[..k];
    w.copy_from_slice(col_slice(y.rb_mut(), 0));
    for (j, &vj) in v_tail.iter().enumerate() {
        axpy(w, vj, col_slice(y.rb_mut(), j + 1));
    }
    axpy(col_slice(y.rb_mut(), 0), -tau, w);
    for (j, &vj) in v_tail.iter().enumerate() {
        axpy(col_slice(y.rb_mut(), j + 1), -(tau * vj), w);
    }
}

/// `||x||` for a nonzero vector whose squares underflow: scaled by the largest
/// magnitude.
fn tiny_norm<T: Scalar>(x: faer::ColRef<'_, T>) -> T {
    let m = x.iter().fold(T::zero(), |m, &e| m.max(e.abs()));
    let mut acc = T::zero();
    for &e in x.iter() {
        let r = e / m;
        acc += r * r;
    }
    acc.sqrt() * m
}

/// Lanes of [`sum_squares`]' partial sums: two AVX-512 registers in f64.
const NRM2_LANES: usize = 16;

simd_dispatch! {
    /// `sum x_i^2` in [`NRM2_LANES`] partial sums reduced in a fixed order
    /// (the result depends on the values only).
    fn sum_squares / sum_squares_simd / sum_squares_body (x: &[T]) -> T
}

#[inline(always)]
fn sum_squares_body<T: Scalar>(x: &[T]) -> T {
    let chunks = x.chunks_exact(NRM2_LANES);
    let tail = chunks.remainder();
    let mut acc = [T::zero(); NRM2_LANES];
    for c in chunks {
        for (a, &e) in acc.iter_mut().zip(c) {
            *a += e * e;
        }
    }
    let mut s = T::zero();
    for &e in tail {
        s += e * e;
    }
    reduce_lanes(acc) + s
}

/// `||x||_2` for [`larfg`]: the square root of the plain sum of squares when
/// no square can have lost accuracy, faer's scaled norm otherwise.
///
/// The plain sum is exact to rounding unless a square overflowed (the sum is
/// not finite) or squares underflowed. Each underflowed square is off by at
/// most half the smallest subnormal, so once the sum is at least
/// `SAFE_MIN / EPS` their total, `n` half-subnormals, is far below one
/// ulp of it. That covers every vector whose norm lies between about
/// `1e-146` and `1e154` in f64; the rest (and NaN) go through the scaled,
/// three-accumulator norm (Blue's algorithm, as LAPACK 3.10's `dnrm2`), which
/// is several times slower on the short vectors of a panel.
fn nrm2<T: Scalar>(x: faer::ColRef<'_, T>) -> T {
    if let Some(xs) = x.try_as_col_major() {
        let s = sum_squares(xs.as_slice());
        if s.is_finite() && s >= T::SAFE_MIN / T::EPS {
            return s.sqrt();
        }
    }
    x.norm_l2()
}

fn scale<T: Scalar>(mut x: ColMut<'_, T>, s: T) {
    if let Some(xs) = x.rb_mut().try_as_col_major_mut() {
        for e in xs.as_slice_mut() {
            *e *= s;
        }
        return;
    }
    for e in x.iter_mut() {
        *e *= s;
    }
}

/// Helpers shared by the tests of the `linalg` kernels.
#[cfg(test)]
pub(crate) mod testutil;

#[cfg(test)]
mod tests;
