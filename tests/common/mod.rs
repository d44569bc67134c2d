//! Helpers shared by the EVD integration tests.
#![allow(dead_code)] // each test binary uses a subset

use eigenflow::Scalar;
use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatRef, Par, Side};

/// `a` converted to f64 (exact for f32 and f64 inputs).
pub fn to_f64<T: Scalar>(a: MatRef<'_, T>) -> Mat<f64> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)].f64())
}

/// `a` symmetrized from its lower triangle (the only part eigenflow reads), in f64.
pub fn symmetric_f64<T: Scalar>(a: MatRef<'_, T>) -> Mat<f64> {
    let a = to_f64(a);
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| {
        if i >= j {
            a[(i, j)]
        } else {
            a[(j, i)]
        }
    })
}

/// Eigenvalues of the (exactly representable) input, by faer in f64, ascending.
pub fn reference<T: Scalar>(a: MatRef<'_, T>) -> Vec<f64> {
    if a.nrows() == 0 {
        return Vec::new();
    }
    let mut v = symmetric_f64(a)
        .self_adjoint_eigenvalues(Side::Lower)
        .expect("faer converges");
    v.sort_by(f64::total_cmp);
    v
}

/// Bit patterns, for bitwise comparisons.
pub fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// (||A V - V L||_F / (n ||A||_F eps), ||V^T V - I_k||_F / (n eps)) in f64, for
/// the symmetric `a` given in full (f64) and `k` eigenpairs `(values, v)`
/// (`k = n` for a full decomposition). A zero matrix must give an exactly zero
/// residual, so the residual is not scaled then.
pub fn eig_ratios_full<T: Scalar>(
    a: MatRef<'_, f64>,
    values: &[T],
    v: MatRef<'_, T>,
) -> (f64, f64) {
    let (n, k) = (a.nrows(), v.ncols());
    if n == 0 || k == 0 {
        return (0.0, 0.0);
    }
    let v = to_f64(v);
    let eps = T::EPS.f64();
    let mut r = Mat::from_fn(n, k, |i, j| v[(i, j)] * values[j].f64());
    matmul(r.as_mut(), Accum::Add, a, v.as_ref(), -1.0, Par::Seq);
    let anorm = a.norm_l2();
    let res = if anorm > 0.0 {
        r.norm_l2() / (n as f64 * anorm * eps)
    } else {
        r.norm_l2()
    };
    let mut o = Mat::<f64>::identity(k, k);
    matmul(
        o.as_mut(),
        Accum::Add,
        v.transpose(),
        v.as_ref(),
        -1.0,
        Par::Seq,
    );
    (res, o.norm_l2() / (n as f64 * eps))
}

/// [`eig_ratios_full`] for `a` given by its lower triangle (what eigenflow reads).
pub fn eig_ratios<T: Scalar>(a: MatRef<'_, T>, values: &[T], v: MatRef<'_, T>) -> (f64, f64) {
    eig_ratios_full(symmetric_f64(a).as_ref(), values, v)
}

/// The SVD test families of issue 9 (an `m x n` matrix with `k = min(m, n)`
/// singular values), shared by the full and the selective SVD tests.
pub fn svd_family<T: Scalar>(name: &str, m: usize, n: usize, seed: u64) -> Mat<T> {
    let k = m.min(n);
    let sv = |s: Vec<f64>| {
        let s: Vec<T> = s.into_iter().map(T::of).collect();
        eigenflow::gallery::with_singular_values::<T>(m, n, &s, seed)
    };
    match name {
        "random" => eigenflow::gallery::random_gaussian(m, n, seed),
        "arithmetic" => sv((0..k).map(|i| 1.0 - i as f64 / k.max(1) as f64).collect()),
        "geometric" => sv((0..k)
            .map(|i| 10f64.powf(-15.0 * i as f64 / (k.max(2) - 1) as f64))
            .collect()),
        "clusters" => sv((0..k)
            .map(|i| {
                if i < k / 2 {
                    1.0 + 1e-12 * i as f64
                } else {
                    1e-6 * (1.0 + 1e-12 * i as f64)
                }
            })
            .collect()),
        "multiplicity" => sv((0..k)
            .map(|i| {
                if i < 50.min(k) {
                    1.0
                } else {
                    0.5 / (1 + i) as f64
                }
            })
            .collect()),
        "half-zero" => sv((0..k)
            .map(|i| if i < k / 2 { 1.0 / (1 + i) as f64 } else { 0.0 })
            .collect()),
        "rank-1" => sv((0..k).map(|i| if i == 0 { 3.0 } else { 0.0 }).collect()),
        "graded-rows" => {
            let a: Mat<T> = eigenflow::gallery::random_gaussian(m, n, seed);
            Mat::from_fn(m, n, |i, j| {
                a[(i, j)] * T::of(10f64.powf(-12.0 * i as f64 / m.max(1) as f64))
            })
        }
        "graded-cols" => {
            let a: Mat<T> = eigenflow::gallery::random_gaussian(m, n, seed);
            Mat::from_fn(m, n, |i, j| {
                a[(i, j)] * T::of(10f64.powf(-12.0 * j as f64 / n.max(1) as f64))
            })
        }
        "zero" => Mat::zeros(m, n),
        _ => unreachable!("family {name}"),
    }
}

pub const SVD_FAMILIES: [&str; 10] = [
    "random",
    "arithmetic",
    "geometric",
    "clusters",
    "multiplicity",
    "half-zero",
    "rank-1",
    "graded-rows",
    "graded-cols",
    "zero",
];
