//! Helpers shared by the EVD integration tests.
#![allow(dead_code)] // each test binary uses a subset

use eigenflow::Scalar;
use faer::{Mat, MatRef, Side};

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
