//! Complex Hermitian kernels of the one-stage EVD: the reduction to real
//! symmetric tridiagonal form `Q^H A Q = T` (LAPACK `zhetrd`, [`hetrd()`]) and
//! the product `X := Q X` ([`unmtr()`], LAPACK `zunmtr`), generic over
//! [`ComplexScalar`] (faer's `c64`, `c32`), the GEMMs through faer's complex
//! matmul.
//!
//! # Reflectors (LAPACK `zlarfg`)
//!
//! `H = I - tau v v^H` with `v[0] = 1` and a **complex** `tau`, chosen so that
//! `H^H (alpha, x) = (beta, 0)` with `beta` **real** ([`larfg`]). `H` is not
//! Hermitian (`tau` is not real), so the order of application matters:
//! `hetrd` applies `H_i^H A H_i`, and `Q = H_0 H_1 ... H_{n-2}`.
//!
//! # Why the tridiagonal is real
//!
//! A complex Hermitian tridiagonal `T` is made real symmetric by a diagonal
//! unitary scaling `D = diag(d_k)`, `|d_k| = 1`, `d_{k+1} = d_k e_k / |e_k|`:
//! `D^H T D` has the off-diagonals `|e_k|` (Golub and Van Loan, "Matrix
//! Computations", 4th ed., §8.3.1 remark; LAPACK `zhetrd_hb2st` does it
//! explicitly after its bulge chase, whose reflectors leave complex
//! off-diagonals). With `zlarfg`'s convention the scaling is folded into the
//! reflectors: each `beta` is real by construction, the phase of `alpha`
//! going into the complex `tau`. So the subdiagonal that [`hetrd()`] leaves is
//! real, `D = I`, and `A = Q T Q^H` with `T` real symmetric: its eigenvectors
//! `Z` (real, from the real solvers) give `A`'s as `X = Q Z` (LAPACK `zheevd`:
//! `zhetrd`, `dstedc` on `T`, `zunmtr`). A nonzero-phase column with nothing
//! below the subdiagonal (`x = 0`, `alpha` not real) still gets a reflector:
//! `tau = 1 - conj(alpha)/|alpha|` up to sign, a pure phase, which is the
//! `d_k` of the scaling above.
//!
//! # Storage (as `zhetrd` with `uplo = 'L'`)
//!
//! Lower triangle of a column-major matrix, strict upper part never read or
//! written. On exit `d` (real) and `e` (real) hold `T`, `tau` the reflectors'
//! factors, and `a[(i+2.., i)]` the tails of the reflectors (`v_i` has its
//! unit at row `i + 1`). The imaginary part of the diagonal is never read
//! (LAPACK's `zhetrd` likewise uses only `real(A(i,i))`): a Hermitian matrix
//! has a real diagonal, and whatever a caller leaves there is ignored.

use crate::{ComplexScalar, Scalar};
use faer::{MatMut, MatRef};
use num_traits::{Float, One, Zero};

mod hetrd;
mod unmtr;

#[cfg(test)]
mod tests;

pub use hetrd::{hetd2, hetrd, HetrdParams};
pub use unmtr::{block_factors, larft, unmtr, unmtr_blocked, UNMTR_BLOCK};

/// The real type of the complex scalar `C`.
pub type Re<C> = <C as faer::traits::ComplexField>::Real;

/// `sum_k conj(a_k) b_k` over the common length (BLAS `zdotc`), in order.
#[inline(always)]
pub fn dotc<C: ComplexScalar>(a: &[C], b: &[C]) -> C {
    let mut s = C::zero_impl();
    for (&x, &y) in a.iter().zip(b) {
        s += x.conjugate() * y;
    }
    s
}

/// `y += alpha x` over the common length (BLAS `zaxpy`).
#[inline(always)]
pub fn axpy<C: ComplexScalar>(y: &mut [C], alpha: C, x: &[C]) {
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi += alpha * xi;
    }
}

/// `sqrt(x^2 + y^2 + z^2)` without spurious overflow (LAPACK `dlapy3`).
fn lapy3<R: crate::Scalar>(x: R, y: R, z: R) -> R {
    let (x, y, z) = (x.abs(), y.abs(), z.abs());
    let w = x.max(y).max(z);
    if w == R::zero() {
        // All zero (or the sum of three zeros): LAPACK returns x + y + z.
        return x + y + z;
    }
    w * ((x / w).powi(2) + (y / w).powi(2) + (z / w).powi(2)).sqrt()
}

/// The 2-norm of `x` with LAPACK's scaling (no overflow or harmful underflow
/// of the squares): the largest magnitude among the real and imaginary parts
/// divides every part before squaring, unless the plain sum is safe.
fn nrm2<C: ComplexScalar>(x: &[C]) -> Re<C> {
    let mut s = Re::<C>::zero();
    for &z in x {
        s += z.modulus_squared();
    }
    let safe = Re::<C>::SAFE_MIN / Re::<C>::EPS;
    if s.is_finite() && s >= safe {
        return s.sqrt();
    }
    let big = x.iter().fold(Re::<C>::zero(), |m, z| {
        m.max(z.re().abs()).max(z.im().abs())
    });
    if big == Re::<C>::zero() || !big.is_finite() {
        return big;
    }
    let mut t = Re::<C>::zero();
    for &z in x {
        let (r, i) = (z.re() / big, z.im() / big);
        t += r * r + i * i;
    }
    big * t.sqrt()
}

/// `1 / z` without spurious overflow (Smith's algorithm, as LAPACK `zladiv`
/// divides robustly).
fn recip<C: ComplexScalar>(z: C) -> C {
    let (a, b) = (z.re(), z.im());
    let one = Re::<C>::one();
    if a.abs() >= b.abs() {
        let r = b / a;
        let den = a + b * r;
        C::from_parts(one / den, -r / den)
    } else {
        let r = a / b;
        let den = a * r + b;
        C::from_parts(r / den, -one / den)
    }
}

/// Generates the elementary reflector `H = I - tau v v^H` with
/// `H^H (alpha, x) = (beta, 0)`, `beta` real, `v = (1, x_new)` (LAPACK
/// `zlarfg`): on return `alpha = beta`, `x` holds `v[1..]`, and `tau` is
/// returned (`tau = 0`, nothing changed, when `x = 0` and `alpha` is real).
/// `beta = -sign(re alpha) ||(alpha, x)||`, `tau = (beta - alpha) / beta`;
/// `x` is scaled by `1 / (alpha - beta)`. As `zlarfg`, `x` and `alpha` are
/// rescaled (up to 20 times) when `|beta|` is below `safmin / eps`.
pub fn larfg<C: ComplexScalar>(alpha: &mut C, x: &mut [C]) -> C {
    type R<C> = Re<C>;
    let zero = R::<C>::zero();
    let mut xnorm = nrm2(x);
    let (mut ar, mut ai) = (alpha.re(), alpha.im());
    if xnorm == zero && ai == zero {
        return C::zero_impl();
    }
    let signed = |mag: R<C>, ar: R<C>| if ar >= zero { -mag } else { mag };
    let mut beta = signed(lapy3(ar, ai, xnorm), ar);
    let safmin = R::<C>::SAFE_MIN / R::<C>::EPS;
    let rsafmn = R::<C>::one() / safmin;
    let mut knt = 0;
    if beta.abs() < safmin {
        // beta may be inaccurate: scale x and recompute (zlarfg's loop).
        while beta.abs() < safmin && knt < 20 {
            knt += 1;
            for z in x.iter_mut() {
                *z = z.scaled(rsafmn);
            }
            beta *= rsafmn;
            ar *= rsafmn;
            ai *= rsafmn;
        }
        xnorm = nrm2(x);
        beta = signed(lapy3(ar, ai, xnorm), ar);
    }
    let tau = C::from_parts((beta - ar) / beta, -ai / beta);
    let s = recip(C::from_parts(ar - beta, ai));
    for z in x.iter_mut() {
        *z *= s;
    }
    for _ in 0..knt {
        beta *= safmin;
    }
    *alpha = C::from_parts(beta, zero);
    tau
}

/// The contiguous storage of column `j` of `a`, rows `r0..`.
#[inline]
fn col<C>(a: MatRef<'_, C>, j: usize, r0: usize) -> &[C] {
    &a.col(j)
        .try_as_col_major()
        .expect("unit row stride")
        .as_slice()[r0..]
}

/// The contiguous storage of column `j` of `a`, rows `r0..`, mutable.
#[inline]
fn col_mut<C>(a: MatMut<'_, C>, j: usize, r0: usize) -> &mut [C] {
    &mut a
        .col_mut(j)
        .try_as_col_major_mut()
        .expect("unit row stride")
        .as_slice_mut()[r0..]
}

/// `C::one()` (faer's trait method, named so that generic code reads well).
#[inline(always)]
fn one<C: ComplexScalar>() -> C {
    C::one_impl()
}

/// `C::zero()`.
#[inline(always)]
fn zero<C: ComplexScalar>() -> C {
    C::zero_impl()
}
