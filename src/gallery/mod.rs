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

pub use crate::rng::Rng;
use crate::Scalar;
use faer::{Mat, MatRef, Par};
use std::fmt;
use std::str::FromStr;

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

// ---------------------------------------------------------------------------
// Spectra (all returned in ascending order).
// ---------------------------------------------------------------------------

/// `n` equally spaced values from `lo` to `hi` (ascending if `lo <= hi`);
/// `[lo]` for `n = 1`.
///
/// ```
/// assert_eq!(eigenflow::gallery::arithmetic::<f64>(3, -1.0, 1.0), vec![-1.0, 0.0, 1.0]);
/// ```
pub fn arithmetic<T: Scalar>(n: usize, lo: f64, hi: f64) -> Vec<T> {
    (0..n)
        .map(|i| {
            if n == 1 {
                T::of(lo)
            } else if i == n - 1 {
                T::of(hi)
            } else {
                T::of(lo + (hi - lo) * i as f64 / (n - 1) as f64)
            }
        })
        .collect()
}

/// `n` geometrically spaced values from `1 / cond` to `1`, ascending (LAPACK
/// `dlatms` mode 3): a positive definite spectrum with condition number `cond`.
///
/// ```
/// let s = eigenflow::gallery::geometric::<f64>(3, 100.0);
/// assert_eq!(s, vec![0.01, 0.1, 1.0]);
/// ```
pub fn geometric<T: Scalar>(n: usize, cond: f64) -> Vec<T> {
    (0..n)
        .map(|i| {
            if i + 1 == n {
                T::one()
            } else {
                let t = (n - 1 - i) as f64 / (n - 1) as f64;
                T::of(cond.powf(-t))
            }
        })
        .collect()
}

/// `n` values in `clusters` tight groups: group `k` (`k = 0..clusters`) is
/// centred at `k + 1` and spans the relative width `width` around it, i.e.
/// `(k + 1) (1 + width (t - 1/2))` for `t` equally spaced in `[0, 1]`. Groups
/// have sizes as equal as possible; the result is sorted ascending.
///
/// ```
/// let s = eigenflow::gallery::clustered::<f64>(4, 2, 1e-6);
/// assert!((s[1] - s[0]) < 2e-6 && (s[2] - 2.0).abs() < 2e-6);
/// ```
pub fn clustered<T: Scalar>(n: usize, clusters: usize, width: f64) -> Vec<T> {
    let clusters = clusters.clamp(1, n.max(1));
    let mut out = Vec::with_capacity(n);
    for k in 0..clusters {
        let start = k * n / clusters;
        let end = (k + 1) * n / clusters;
        let size = end - start;
        let centre = (k + 1) as f64;
        for t in 0..size {
            let frac = if size == 1 {
                0.5
            } else {
                t as f64 / (size - 1) as f64
            };
            out.push(centre * (1.0 + width * (frac - 0.5)));
        }
    }
    out.sort_by(f64::total_cmp);
    out.into_iter().map(T::of).collect()
}

/// `n` values taking only the values `1, 2, ..., distinct`, value `k + 1` for
/// the indices `i` with `floor(i distinct / n) = k` (so each is repeated about
/// `n / distinct` times), ascending. Fewer values appear when `distinct > n`.
///
/// ```
/// assert_eq!(eigenflow::gallery::repeated::<f64>(5, 2), vec![1.0, 1.0, 1.0, 2.0, 2.0]);
/// ```
pub fn repeated<T: Scalar>(n: usize, distinct: usize) -> Vec<T> {
    let distinct = distinct.max(1);
    (0..n)
        .map(|i| T::of((1 + i * distinct / n) as f64))
        .collect()
}

// ---------------------------------------------------------------------------
// Tridiagonal families.
// ---------------------------------------------------------------------------

/// The dense symmetric tridiagonal matrix with diagonal `d` and off-diagonal `e`
/// (`e.len() == d.len() - 1`, or both empty).
///
/// # Panics
/// If the lengths do not match.
pub fn tridiagonal_to_dense<T: Scalar>(d: &[T], e: &[T]) -> Mat<T> {
    let n = d.len();
    assert_eq!(
        e.len(),
        n.saturating_sub(1),
        "tridiagonal_to_dense: {} diagonal and {} off-diagonal entries",
        n,
        e.len()
    );
    let mut a = Mat::<T>::zeros(n, n);
    for i in 0..n {
        a[(i, i)] = d[i];
    }
    for (i, &x) in e.iter().enumerate() {
        a[(i + 1, i)] = x;
        a[(i, i + 1)] = x;
    }
    a
}

/// The dense `n x n` upper bidiagonal matrix with diagonal `d` and
/// superdiagonal `e` (`e.len() == d.len() - 1`, or both empty), in f64: the
/// `B` of the reconstruction checks `A = Q B P^T`.
///
/// # Panics
/// If the lengths do not match.
pub fn bidiagonal_to_dense<T: Scalar>(d: &[T], e: &[T]) -> Mat<f64> {
    let n = d.len();
    assert_eq!(e.len(), n.saturating_sub(1), "bidiagonal_to_dense: lengths");
    let mut b = Mat::<f64>::zeros(n, n);
    for (i, &x) in d.iter().enumerate() {
        b[(i, i)] = x.f64();
    }
    for (i, &x) in e.iter().enumerate() {
        b[(i, i + 1)] = x.f64();
    }
    b
}

/// Diagonal of Wilkinson's `W_n^+`: `|(n - 1)/2 - i|`.
fn wilkinson_diag(n: usize) -> impl Iterator<Item = f64> {
    (0..n).map(move |i| ((n as f64 - 1.0) / 2.0 - i as f64).abs())
}

/// Wilkinson's matrix `W_n^+` as `(d, e)`: diagonal `|(n - 1)/2 - i|`
/// (`m, m-1, ..., 1, 0, 1, ..., m` for `n = 2m + 1`), off-diagonal all ones. Its
/// largest eigenvalues come in pairs that agree to many digits.
///
/// ```
/// let (d, e) = eigenflow::gallery::wilkinson_tridiagonal::<f64>(5);
/// assert_eq!(d, vec![2.0, 1.0, 0.0, 1.0, 2.0]);
/// assert_eq!(e, vec![1.0; 4]);
/// ```
pub fn wilkinson_tridiagonal<T: Scalar>(n: usize) -> (Vec<T>, Vec<T>) {
    let d = wilkinson_diag(n).map(T::of).collect();
    let e = vec![T::one(); n.saturating_sub(1)];
    (d, e)
}

/// Wilkinson's matrix `W_n^+` as a dense matrix; see [`wilkinson_tridiagonal`].
pub fn wilkinson<T: Scalar>(n: usize) -> Mat<T> {
    let (d, e) = wilkinson_tridiagonal::<T>(n);
    tridiagonal_to_dense(&d, &e)
}

/// Glued Wilkinson matrix as `(d, e)`: `blocks` copies of `W_m^+` along the
/// diagonal, consecutive blocks joined by the off-diagonal value `glue` (classically
/// `m = 21`, `glue = 1e-14`); order `blocks * m`. Its eigenvalues come in tight
/// clusters, which stresses eigenvector orthogonality.
///
/// ```
/// let (d, e) = eigenflow::gallery::glued_wilkinson_tridiagonal::<f64>(2, 3, 1e-3);
/// assert_eq!(d, vec![1.0, 0.0, 1.0, 1.0, 0.0, 1.0]);
/// assert_eq!(e, vec![1.0, 1.0, 1e-3, 1.0, 1.0]);
/// ```
pub fn glued_wilkinson_tridiagonal<T: Scalar>(
    blocks: usize,
    m: usize,
    glue: f64,
) -> (Vec<T>, Vec<T>) {
    glued_sizes(&vec![m; blocks], glue)
}

/// Glued Wilkinson blocks of the given sizes, as `(d, e)`.
fn glued_sizes<T: Scalar>(sizes: &[usize], glue: f64) -> (Vec<T>, Vec<T>) {
    let mut d = Vec::new();
    let mut e = Vec::new();
    for &m in sizes.iter().filter(|&&m| m > 0) {
        if !d.is_empty() {
            e.push(T::of(glue));
        }
        d.extend(wilkinson_diag(m).map(T::of));
        e.extend(std::iter::repeat_n(T::one(), m - 1));
    }
    (d, e)
}

/// Glued Wilkinson matrix as a dense matrix; see [`glued_wilkinson_tridiagonal`].
pub fn glued_wilkinson<T: Scalar>(blocks: usize, m: usize, glue: f64) -> Mat<T> {
    let (d, e) = glued_wilkinson_tridiagonal::<T>(blocks, m, glue);
    tridiagonal_to_dense(&d, &e)
}

/// The `(1, 2, 1)` Toeplitz tridiagonal matrix as `(d, e)`: diagonal 2,
/// off-diagonal 1. Its eigenvalues are known in closed form, see
/// [`toeplitz_121_eigenvalues`].
pub fn toeplitz_121_tridiagonal<T: Scalar>(n: usize) -> (Vec<T>, Vec<T>) {
    (vec![T::of(2.0); n], vec![T::one(); n.saturating_sub(1)])
}

/// The `(1, 2, 1)` Toeplitz tridiagonal matrix, dense.
pub fn toeplitz_121<T: Scalar>(n: usize) -> Mat<T> {
    let (d, e) = toeplitz_121_tridiagonal::<T>(n);
    tridiagonal_to_dense(&d, &e)
}

/// Eigenvalues of the `(1, 2, 1)` Toeplitz matrix of order `n`, ascending:
/// `2 - 2 cos(k pi / (n + 1))` for `k = 1..=n`.
///
/// ```
/// let l = eigenflow::gallery::toeplitz_121_eigenvalues::<f64>(2);
/// assert!((l[0] - 1.0).abs() < 1e-15 && (l[1] - 3.0).abs() < 1e-15);
/// ```
pub fn toeplitz_121_eigenvalues<T: Scalar>(n: usize) -> Vec<T> {
    (1..=n)
        .map(|k| {
            let theta = k as f64 * std::f64::consts::PI / (n as f64 + 1.0);
            // 2 - 2cos t = 4 sin^2(t/2), which is accurate for small t.
            let s = (theta / 2.0).sin();
            T::of(4.0 * s * s)
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Families.
// ---------------------------------------------------------------------------

/// Block size of [`Family::GluedWilkinson`].
pub const GLUED_BLOCK: usize = 21;
/// Glue of [`Family::GluedWilkinson`].
pub const GLUED_GLUE: f64 = 1e-14;
/// Number of clusters of [`Family::Clustered`].
pub const CLUSTERS: usize = 4;
/// Relative cluster width of [`Family::Clustered`].
pub const CLUSTER_WIDTH: f64 = 1e-8;
/// Number of distinct eigenvalues of [`Family::Repeated`].
pub const REPEATED_DISTINCT: usize = 3;

/// The symmetric test-matrix families, so tests can loop over all of them with
/// [`Family::ALL`]. Each generates an `n x n` matrix for any `n >= 0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// The zero matrix.
    Zero,
    /// The identity.
    Identity,
    /// A diagonal matrix with entries uniform in `[-1, 1)`.
    Diagonal,
    /// [`random_symmetric_uniform`].
    UniformSymmetric,
    /// [`random_symmetric_gaussian`].
    GaussianSymmetric,
    /// [`with_spectrum`] of [`arithmetic`]`(n, -1, 1)`.
    Arithmetic,
    /// [`with_spectrum`] of [`geometric`]`(n, 10^log10_cond)`.
    Geometric {
        /// Base-10 logarithm of the condition number.
        log10_cond: u8,
    },
    /// [`with_spectrum`] of [`clustered`]`(n, CLUSTERS, CLUSTER_WIDTH)`.
    Clustered,
    /// [`with_spectrum`] of [`repeated`]`(n, REPEATED_DISTINCT)`.
    Repeated,
    /// [`graded`].
    Graded,
    /// [`wilkinson`] `W_n^+`.
    Wilkinson,
    /// Glued Wilkinson: blocks of `W_21^+` (the last one shorter when 21 does not
    /// divide `n`) glued with [`GLUED_GLUE`].
    GluedWilkinson,
    /// [`band_random`] with this half-bandwidth (1 is tridiagonal).
    Banded {
        /// Half-bandwidth.
        half_bandwidth: usize,
    },
    /// [`toeplitz_121`].
    Toeplitz121,
}

impl Family {
    /// Every family, with the parameters the test suite uses.
    pub const ALL: [Family; 17] = [
        Family::Zero,
        Family::Identity,
        Family::Diagonal,
        Family::UniformSymmetric,
        Family::GaussianSymmetric,
        Family::Arithmetic,
        Family::Geometric { log10_cond: 2 },
        Family::Geometric { log10_cond: 8 },
        Family::Geometric { log10_cond: 15 },
        Family::Clustered,
        Family::Repeated,
        Family::Graded,
        Family::Wilkinson,
        Family::GluedWilkinson,
        Family::Banded { half_bandwidth: 1 },
        Family::Banded { half_bandwidth: 4 },
        Family::Toeplitz121,
    ];

    /// A short stable name, e.g. `"gaussian"`, `"geometric-1e8"`, `"banded-4"`;
    /// [`Family::from_str`](std::str::FromStr) parses it back.
    pub fn name(&self) -> String {
        match self {
            Family::Zero => "zero".into(),
            Family::Identity => "identity".into(),
            Family::Diagonal => "diagonal".into(),
            Family::UniformSymmetric => "uniform".into(),
            Family::GaussianSymmetric => "gaussian".into(),
            Family::Arithmetic => "arithmetic".into(),
            Family::Geometric { log10_cond } => format!("geometric-1e{log10_cond}"),
            Family::Clustered => "clustered".into(),
            Family::Repeated => "repeated".into(),
            Family::Graded => "graded".into(),
            Family::Wilkinson => "wilkinson".into(),
            Family::GluedWilkinson => "glued-wilkinson".into(),
            Family::Banded { half_bandwidth } => format!("banded-{half_bandwidth}"),
            Family::Toeplitz121 => "toeplitz-121".into(),
        }
    }

    /// The family's `n x n` matrix for this seed (families without randomness
    /// ignore the seed).
    pub fn generate<T: Scalar>(&self, n: usize, seed: u64) -> Mat<T> {
        match *self {
            Family::Zero => Mat::zeros(n, n),
            Family::Identity => Mat::identity(n, n),
            Family::Diagonal => random_diagonal(n, seed),
            Family::UniformSymmetric => random_symmetric_uniform(n, seed),
            Family::GaussianSymmetric => random_symmetric_gaussian(n, seed),
            Family::Arithmetic
            | Family::Geometric { .. }
            | Family::Clustered
            | Family::Repeated => {
                let eigs = self.eigenvalues::<f64>(n, seed).unwrap();
                to_t(with_spectrum(&eigs, seed).as_ref())
            }
            Family::Graded => graded(n, seed),
            Family::Wilkinson => wilkinson(n),
            Family::GluedWilkinson => {
                let mut sizes = vec![GLUED_BLOCK; n / GLUED_BLOCK];
                sizes.push(n % GLUED_BLOCK);
                let (d, e) = glued_sizes::<T>(&sizes, GLUED_GLUE);
                tridiagonal_to_dense(&d, &e)
            }
            Family::Banded { half_bandwidth } => band_random(n, half_bandwidth, seed),
            Family::Toeplitz121 => toeplitz_121(n),
        }
    }

    /// The exact eigenvalues, ascending, for families where they are known by
    /// construction (the generated matrix has them up to its rounding); `None`
    /// for the others.
    pub fn eigenvalues<T: Scalar>(&self, n: usize, seed: u64) -> Option<Vec<T>> {
        Some(match *self {
            Family::Zero => vec![T::zero(); n],
            Family::Identity => vec![T::one(); n],
            Family::Diagonal => {
                let mut d = random_diagonal_entries(n, seed);
                d.sort_by(f64::total_cmp);
                d.into_iter().map(T::of).collect()
            }
            Family::Arithmetic => arithmetic(n, -1.0, 1.0),
            Family::Geometric { log10_cond } => geometric(n, 10f64.powi(log10_cond as i32)),
            Family::Clustered => clustered(n, CLUSTERS, CLUSTER_WIDTH),
            Family::Repeated => repeated(n, REPEATED_DISTINCT),
            Family::Toeplitz121 => toeplitz_121_eigenvalues(n),
            Family::UniformSymmetric
            | Family::GaussianSymmetric
            | Family::Graded
            | Family::Wilkinson
            | Family::GluedWilkinson
            | Family::Banded { .. } => return None,
        })
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for Family {
    type Err = crate::Error;

    /// Parses a [`Family::name`]; `geometric-1eK` and `banded-B` take any `K`
    /// and `B`.
    fn from_str(s: &str) -> crate::Result<Family> {
        let s = s.trim().to_ascii_lowercase();
        if let Some(k) = s.strip_prefix("geometric-1e") {
            if let Ok(log10_cond) = k.parse() {
                return Ok(Family::Geometric { log10_cond });
            }
        }
        if let Some(b) = s.strip_prefix("banded-") {
            if let Ok(half_bandwidth) = b.parse() {
                return Ok(Family::Banded { half_bandwidth });
            }
        }
        Family::ALL
            .iter()
            .find(|f| f.name() == s)
            .copied()
            .ok_or_else(|| {
                let names: Vec<String> = Family::ALL.iter().map(Family::name).collect();
                crate::Error::InvalidArgument(format!(
                    "unknown matrix family '{s}'; known: {}",
                    names.join(", ")
                ))
            })
    }
}

#[cfg(test)]
mod tests;
