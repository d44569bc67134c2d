//! Test matrices: symmetric families that stress an eigensolver (random, known
//! spectra, graded, Wilkinson and glued Wilkinson for the deflation of divide
//! and conquer, banded, tridiagonal), a few rectangular
//! ones for the SVD, and spectra helpers.
//!
//! Every generator is generic over [`Scalar`] and deterministic given its `u64`
//! seed: random numbers come from this module's own [`Rng`] (xoshiro256\*\*
//! seeded through SplitMix64, Box–Muller for gaussians), not from the `rand`
//! crate, so results do not change with that crate's version. Matrices are built
//! in `f64` and rounded to `T` at the end, so the `f32` matrix of a family is the
//! rounded `f64` one. Orthogonal factors use faer's Householder QR run
//! sequentially (`Par::Seq`), so they do not depend on faer's thread settings.
//!
//! ```
//! use eigenflow::gallery::{self, Family};
//! let a = gallery::random_symmetric_gaussian::<f64>(5, 42);
//! assert_eq!(a, a.transpose().to_owned());
//! assert_eq!(a, gallery::random_symmetric_gaussian::<f64>(5, 42));
//! for family in Family::ALL {
//!     let b = family.generate::<f32>(4, 7);
//!     assert_eq!(b.shape(), (4, 4), "{}", family.name());
//! }
//! ```

mod family;
mod hermitian;
mod spectra;
mod tridiagonal;

pub use crate::rng::Rng;
use crate::Scalar;
use faer::{Mat, MatRef, Par};
pub use family::{Family, CLUSTERS, CLUSTER_WIDTH, GLUED_BLOCK, GLUED_GLUE, REPEATED_DISTINCT};
pub use hermitian::{hermitian_with_spectrum, phased_toeplitz_121, random_hermitian};
pub use spectra::{arithmetic, clustered, geometric, repeated};
pub use tridiagonal::{
    bidiagonal_to_dense, glued_wilkinson, glued_wilkinson_tridiagonal, toeplitz_121,
    toeplitz_121_eigenvalues, toeplitz_121_tridiagonal, tridiagonal_to_dense, wilkinson,
    wilkinson_tridiagonal,
};

// ---------------------------------------------------------------------------
// Helpers.
// ---------------------------------------------------------------------------

/// Rounds an `f64` matrix to `T`.
fn to_t<T: Scalar>(a: MatRef<'_, f64>) -> Mat<T> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| T::of(a[(i, j)]))
}

/// A symmetric matrix whose lower triangle (column by column) is drawn by `draw`.
fn symmetric_f64(n: usize, mut draw: impl FnMut() -> f64) -> Mat<f64> {
    let mut a = Mat::<f64>::zeros(n, n);
    for j in 0..n {
        for i in j..n {
            let x = draw();
            a[(i, j)] = x;
            a[(j, i)] = x;
        }
    }
    a
}

/// An `m x k` matrix (`k <= m`) with orthonormal columns: the Q factor of the QR
/// of a gaussian `m x k` matrix, with signs fixed so that R has a positive
/// diagonal (this makes the distribution uniform, i.e. Haar for `k == m`).
fn orthonormal_columns(m: usize, k: usize, rng: &mut Rng) -> Mat<f64> {
    use faer::dyn_stack::{MemBuffer, MemStack};
    use faer::linalg::{householder, qr::no_pivoting::factor};
    assert!(k <= m, "orthonormal_columns: k = {k} > m = {m}");
    if k == 0 {
        return Mat::zeros(m, 0);
    }
    let mut qr = Mat::<f64>::from_fn(m, k, |_, _| 0.0);
    for j in 0..k {
        for i in 0..m {
            qr[(i, j)] = rng.gaussian();
        }
    }
    let block = factor::recommended_block_size::<f64>(m, k);
    let mut coeff = Mat::<f64>::zeros(block, k);
    let par = Par::Seq;
    factor::qr_in_place(
        qr.as_mut(),
        coeff.as_mut(),
        par,
        MemStack::new(&mut MemBuffer::new(factor::qr_in_place_scratch::<f64>(
            m,
            k,
            block,
            par,
            Default::default(),
        ))),
        Default::default(),
    );
    // Split: R's diagonal for the sign fix; the Householder basis is unit lower
    // trapezoidal.
    let signs: Vec<f64> = (0..k)
        .map(|j| if qr[(j, j)] < 0.0 { -1.0 } else { 1.0 })
        .collect();
    let mut basis = qr;
    for j in 0..k {
        for i in 0..j {
            basis[(i, j)] = 0.0;
        }
        basis[(j, j)] = 1.0;
    }
    let mut q = Mat::<f64>::identity(m, k);
    householder::apply_block_householder_sequence_on_the_left_in_place_with_conj(
        basis.as_ref(),
        coeff.as_ref(),
        faer::Conj::No,
        q.as_mut(),
        par,
        MemStack::new(&mut MemBuffer::new(
            householder::apply_block_householder_sequence_on_the_left_in_place_scratch::<f64>(
                m, block, k,
            ),
        )),
    );
    for (j, &s) in signs.iter().enumerate() {
        if s < 0.0 {
            for i in 0..m {
                q[(i, j)] = -q[(i, j)];
            }
        }
    }
    q
}

/// `U diag(s) V^T` for `U: m x k`, `V: n x k`, computed sequentially.
fn u_diag_vt(u: MatRef<'_, f64>, s: &[f64], v: MatRef<'_, f64>) -> Mat<f64> {
    let k = s.len();
    let us = Mat::<f64>::from_fn(u.nrows(), k, |i, j| u[(i, j)] * s[j]);
    let mut a = Mat::<f64>::zeros(u.nrows(), v.nrows());
    faer::linalg::matmul::matmul(
        a.as_mut(),
        faer::Accum::Replace,
        us.as_ref(),
        v.transpose(),
        1.0,
        Par::Seq,
    );
    a
}

/// Makes a square matrix exactly symmetric: `(A + A^T) / 2`.
fn symmetrize(a: &mut Mat<f64>) {
    let n = a.nrows();
    for j in 0..n {
        for i in j + 1..n {
            let x = 0.5 * (a[(i, j)] + a[(j, i)]);
            a[(i, j)] = x;
            a[(j, i)] = x;
        }
    }
}

// ---------------------------------------------------------------------------
// Random matrices.
// ---------------------------------------------------------------------------

/// A random symmetric `n x n` matrix with entries uniform in `[-1, 1)`.
///
/// ```
/// let a = eigenflow::gallery::random_symmetric_uniform::<f64>(3, 1);
/// assert!(a[(2, 0)] == a[(0, 2)] && a[(2, 0)].abs() <= 1.0);
/// ```
pub fn random_symmetric_uniform<T: Scalar>(n: usize, seed: u64) -> Mat<T> {
    let mut rng = Rng::new(seed);
    to_t(symmetric_f64(n, || rng.uniform_in(-1.0, 1.0)).as_ref())
}

/// A random symmetric `n x n` matrix with standard normal entries (the lower
/// triangle is drawn, the upper mirrored).
pub fn random_symmetric_gaussian<T: Scalar>(n: usize, seed: u64) -> Mat<T> {
    let mut rng = Rng::new(seed);
    to_t(symmetric_f64(n, || rng.gaussian()).as_ref())
}

/// A random `m x n` matrix with entries uniform in `[-1, 1)` (for the SVD).
pub fn random_uniform<T: Scalar>(m: usize, n: usize, seed: u64) -> Mat<T> {
    let mut rng = Rng::new(seed);
    let mut a = Mat::<T>::zeros(m, n);
    for j in 0..n {
        for i in 0..m {
            a[(i, j)] = T::of(rng.uniform_in(-1.0, 1.0));
        }
    }
    a
}

/// A random `m x n` matrix with standard normal entries (for the SVD).
pub fn random_gaussian<T: Scalar>(m: usize, n: usize, seed: u64) -> Mat<T> {
    let mut rng = Rng::new(seed);
    let mut a = Mat::<T>::zeros(m, n);
    for j in 0..n {
        for i in 0..m {
            a[(i, j)] = T::of(rng.gaussian());
        }
    }
    a
}

/// A random orthogonal `n x n` matrix, uniformly (Haar) distributed: the Q of
/// the QR of a gaussian matrix, with the sign of each column fixed so that R has
/// a positive diagonal. Costs about `8/3 n^3` flops, sequentially.
///
/// ```
/// let q = eigenflow::gallery::random_orthogonal::<f64>(4, 3);
/// let qtq = q.transpose() * &q;
/// assert!((qtq - faer::Mat::<f64>::identity(4, 4)).norm_max() < 1e-14);
/// ```
pub fn random_orthogonal<T: Scalar>(n: usize, seed: u64) -> Mat<T> {
    to_t(orthonormal_columns(n, n, &mut Rng::new(seed)).as_ref())
}

/// The symmetric matrix `Q diag(eigs) Q^T` with `Q = random_orthogonal(n, seed)`
/// and `n = eigs.len()`, symmetrized exactly; its eigenvalues are `eigs` up to
/// rounding (`O(n eps max|eigs|)`). Costs about `5 n^3` flops, sequentially.
///
/// ```
/// use eigenflow::gallery;
/// let a = gallery::with_spectrum(&gallery::arithmetic::<f64>(4, 1.0, 4.0), 9);
/// let trace: f64 = (0..4).map(|i| a[(i, i)]).sum();
/// assert!((trace - 10.0).abs() < 1e-13);
/// ```
pub fn with_spectrum<T: Scalar>(eigs: &[T], seed: u64) -> Mat<T> {
    let n = eigs.len();
    let q = orthonormal_columns(n, n, &mut Rng::new(seed));
    let lambda: Vec<f64> = eigs.iter().map(|x| x.f64()).collect();
    let mut a = u_diag_vt(q.as_ref(), &lambda, q.as_ref());
    symmetrize(&mut a);
    to_t(a.as_ref())
}

/// An `m x n` matrix `U diag(sigma) V^T` with random orthonormal `U` (`m x k`)
/// and `V` (`n x k`), `k = sigma.len() <= min(m, n)`; its singular values are
/// `|sigma|` padded with zeros (for the SVD).
///
/// # Panics
/// If `sigma.len() > min(m, n)`.
pub fn with_singular_values<T: Scalar>(m: usize, n: usize, sigma: &[T], seed: u64) -> Mat<T> {
    let k = sigma.len();
    assert!(
        k <= m.min(n),
        "with_singular_values: {k} singular values for a {m} x {n} matrix"
    );
    let mut rng = Rng::new(seed);
    let u = orthonormal_columns(m, k, &mut rng);
    let v = orthonormal_columns(n, k, &mut rng);
    let s: Vec<f64> = sigma.iter().map(|x| x.f64()).collect();
    to_t(u_diag_vt(u.as_ref(), &s, v.as_ref()).as_ref())
}

/// `D A D` with `A = random_symmetric_gaussian(n, seed)` and
/// `D_i = 10^(-8 i / n)`: a symmetric matrix graded over 16 orders of magnitude
/// from the top-left to the bottom-right corner. See [`graded_with`].
pub fn graded<T: Scalar>(n: usize, seed: u64) -> Mat<T> {
    graded_with(n, 8.0, seed)
}

/// `D A D` with `A = random_symmetric_gaussian(n, seed)` and
/// `D_i = 10^(-decades i / n)`.
pub fn graded_with<T: Scalar>(n: usize, decades: f64, seed: u64) -> Mat<T> {
    let mut rng = Rng::new(seed);
    let a = symmetric_f64(n, || rng.gaussian());
    let d: Vec<f64> = (0..n)
        .map(|i| 10f64.powf(-decades * i as f64 / n as f64))
        .collect();
    // d_i a_ij d_j is symmetric exactly (multiplication is commutative, and the
    // same two roundings happen in both orders).
    Mat::from_fn(n, n, |i, j| {
        let (p, q) = if i >= j { (i, j) } else { (j, i) };
        T::of(d[p] * a[(p, q)] * d[q])
    })
}

/// A random symmetric `n x n` matrix with half-bandwidth `b`: entries uniform in
/// `[-1, 1)` where `|i - j| <= b`, zero elsewhere. `b = 0` is diagonal, `b = 1`
/// tridiagonal.
///
/// ```
/// let a = eigenflow::gallery::band_random::<f64>(6, 2, 5);
/// assert_eq!(a[(5, 2)], 0.0);
/// assert_ne!(a[(4, 2)], 0.0);
/// ```
pub fn band_random<T: Scalar>(n: usize, b: usize, seed: u64) -> Mat<T> {
    let mut rng = Rng::new(seed);
    let mut a = Mat::<T>::zeros(n, n);
    for j in 0..n {
        for i in j..n.min(j + b + 1) {
            let x = T::of(rng.uniform_in(-1.0, 1.0));
            a[(i, j)] = x;
            a[(j, i)] = x;
        }
    }
    a
}

/// A diagonal `n x n` matrix with entries uniform in `[-1, 1)`.
pub fn random_diagonal<T: Scalar>(n: usize, seed: u64) -> Mat<T> {
    let d = random_diagonal_entries(n, seed);
    Mat::from_fn(n, n, |i, j| if i == j { T::of(d[i]) } else { T::zero() })
}

fn random_diagonal_entries(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.uniform_in(-1.0, 1.0)).collect()
}

#[cfg(test)]
mod tests;
