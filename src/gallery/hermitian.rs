//! Complex Hermitian test matrices (for the complex EVD): random ones whose
//! off-diagonal entries have random phases, ones with a known spectrum
//! (`U diag(λ) U^H` with a Haar-distributed unitary `U`), and a tridiagonal
//! whose off-diagonals all have modulus one with random phases, whose
//! eigenvalues are known in closed form.

use crate::rng::Rng;
use crate::{ComplexScalar, Scalar};
use faer::{c64, Mat};

/// `c64` to `C`, rounding each part.
fn to_c<C: ComplexScalar>(z: c64) -> C {
    C::from_parts(<C::Real as Scalar>::of(z.re), <C::Real as Scalar>::of(z.im))
}

/// A Hermitian matrix whose lower triangle (column by column) is drawn by
/// `draw` (the diagonal's imaginary part dropped), the upper one mirrored
/// conjugated.
fn hermitian_c64(n: usize, mut draw: impl FnMut() -> c64) -> Mat<c64> {
    let mut a = Mat::<c64>::zeros(n, n);
    for j in 0..n {
        for i in j..n {
            let z = draw();
            if i == j {
                a[(i, i)] = c64::new(z.re, 0.0);
            } else {
                a[(i, j)] = z;
                a[(j, i)] = z.conj();
            }
        }
    }
    a
}

/// A random Hermitian `n x n` matrix: the strict lower triangle's real and
/// imaginary parts standard normal (so each entry has a uniformly random
/// phase), the diagonal real standard normal, the upper triangle the
/// conjugate mirror.
///
/// ```
/// let a = eigenflow::gallery::random_hermitian::<eigenflow::faer::c64>(3, 1);
/// assert!(a[(2, 0)] == a[(0, 2)].conj() && a[(1, 1)].im == 0.0);
/// ```
pub fn random_hermitian<C: ComplexScalar>(n: usize, seed: u64) -> Mat<C> {
    let mut rng = Rng::new(seed);
    let a = hermitian_c64(n, || c64::new(rng.gaussian(), rng.gaussian()));
    Mat::from_fn(n, n, |i, j| to_c(a[(i, j)]))
}

/// A Haar-distributed random unitary `n x n` matrix (in `c64`): the Q of the
/// QR of a complex gaussian matrix, each column's phase fixed so that R has
/// a positive real diagonal (Mezzadri 2007, "How to generate random matrices
/// from the classical compact groups", §4).
fn random_unitary(n: usize, rng: &mut Rng) -> Mat<c64> {
    let g = Mat::<c64>::from_fn(n, n, |_, _| c64::new(rng.gaussian(), rng.gaussian()));
    let qr = g.qr();
    let mut q = qr.compute_Q();
    let r = qr.R();
    for j in 0..n {
        let d = r[(j, j)];
        let m = d.norm();
        if m > 0.0 {
            let phase = d / m;
            for i in 0..n {
                q[(i, j)] *= phase;
            }
        }
    }
    q
}

/// The Hermitian matrix `U diag(eigs) U^H` with a Haar-distributed random
/// unitary `U` (computed in `c64`, then rounded), its diagonal real and its
/// upper triangle the exact conjugate mirror of the lower; its eigenvalues are
/// `eigs` up to rounding (`O(n eps max|eigs|)`).
pub fn hermitian_with_spectrum<C: ComplexScalar>(eigs: &[C::Real], seed: u64) -> Mat<C> {
    let n = eigs.len();
    let u = random_unitary(n, &mut Rng::new(seed));
    let ul = Mat::<c64>::from_fn(n, n, |i, j| u[(i, j)] * eigs[j].f64());
    let a = &ul * u.adjoint();
    let mut k = 0usize;
    let h = hermitian_c64(n, || {
        // Column by column, rows j.. (the draw order of hermitian_c64).
        let (j, i) = lower_position(n, k);
        k += 1;
        a[(i, j)]
    });
    Mat::from_fn(n, n, |i, j| to_c(h[(i, j)]))
}

/// Column and row of the `k`-th entry of the lower triangle of an `n x n`
/// matrix, column by column.
fn lower_position(n: usize, mut k: usize) -> (usize, usize) {
    let mut j = 0;
    while k >= n - j {
        k -= n - j;
        j += 1;
    }
    (j, j + k)
}

/// The Hermitian tridiagonal matrix with diagonal 2 and off-diagonals of
/// modulus one with uniformly random phases, dense. A diagonal unitary
/// similarity makes it the real `(1, 2, 1)` Toeplitz matrix, so its
/// eigenvalues are [`super::toeplitz_121_eigenvalues`] (`2 - 2 cos(k pi / (n +
/// 1))`), known in closed form.
///
/// ```
/// use eigenflow::faer::c64;
/// let a = eigenflow::gallery::phased_toeplitz_121::<c64>(4, 2);
/// assert!((a[(1, 0)].norm() - 1.0).abs() < 1e-15 && a[(2, 0)] == c64::new(0.0, 0.0));
/// ```
pub fn phased_toeplitz_121<C: ComplexScalar>(n: usize, seed: u64) -> Mat<C> {
    let mut rng = Rng::new(seed);
    let mut a = Mat::<c64>::zeros(n, n);
    for i in 0..n {
        a[(i, i)] = c64::new(2.0, 0.0);
        if i + 1 < n {
            let t = rng.uniform_in(0.0, 2.0 * std::f64::consts::PI);
            let z = c64::new(t.cos(), t.sin());
            a[(i + 1, i)] = z;
            a[(i, i + 1)] = z.conj();
        }
    }
    Mat::from_fn(n, n, |i, j| to_c(a[(i, j)]))
}
