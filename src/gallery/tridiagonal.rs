//! Tridiagonal families (Wilkinson, glued Wilkinson, Toeplitz 1-2-1) and the
//! dense matrices of a tridiagonal or bidiagonal.

use super::*;

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
pub(super) fn glued_sizes<T: Scalar>(sizes: &[usize], glue: f64) -> (Vec<T>, Vec<T>) {
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
