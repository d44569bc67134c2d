//! The accuracy check of a run whose eigenvectors are on disk: LAPACK-style
//! ratios on a sample of eigenpairs read back from the eigenvector file, with
//! the matrix streamed column by column (never held whole), so the check
//! stays within the run's memory.

use crate::matrix::npy::ColumnFile;
use crate::{Error, Result, Scalar};
use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par};

/// Ratios on the sampled eigenpairs `V_s`, `L_s` (the columns `columns`):
/// `||A V_s - V_s L_s||_F / (n ||A||_F eps)` and `||V_s^T V_s - I||_F / (n eps)`.
/// With every column sampled these are the ratios of the in-memory check; on a
/// sample they are those ratios restricted to it (each term of the full sums
/// is a column's or a pair's, so a sampled column or pair that is off shows
/// as it would in the full figure).
#[derive(Clone, Debug, PartialEq)]
pub struct SampledCheck {
    /// The columns read back (ascending).
    pub columns: Vec<usize>,
    /// Residual ratio.
    pub residual: f64,
    /// Orthogonality ratio.
    pub orthogonality: f64,
}

/// `count` columns of `0..n` spread evenly, the first and the last included
/// (all of them when `count >= n`).
pub fn sample_columns(n: usize, count: usize) -> Vec<usize> {
    if count >= n {
        return (0..n).collect();
    }
    if count <= 1 {
        return (0..count.min(n)).collect();
    }
    let mut v: Vec<usize> = (0..count).map(|i| i * (n - 1) / (count - 1)).collect();
    v.dedup();
    v
}

/// A part of the lower triangle of the symmetric `A`, as
/// [`sampled_check`] is fed it.
#[derive(Clone, Copy, Debug)]
pub enum LowerPart<'a, T> {
    /// `(j, A[j.., j])`: column `j` from the diagonal down.
    Column(usize, &'a [T]),
    /// `(i, A[i, ..=i])`: row `i` up to the diagonal.
    Row(usize, &'a [T]),
}

/// The [`SampledCheck`] of eigenvalues `values` and the eigenvector file
/// `vectors` on `columns`; `lower(f)` must call `f` once for each column, or
/// once for each row, of the lower triangle of the symmetric `A`, in any
/// order (from the input file, or the generator run again).
pub fn sampled_check<T: Scalar>(
    values: &[T],
    vectors: &ColumnFile<T>,
    columns: &[usize],
    lower: impl FnOnce(&mut dyn FnMut(LowerPart<'_, T>)) -> Result<()>,
) -> Result<SampledCheck> {
    let n = vectors.nrows();
    let s = columns.len();
    if values.len() != vectors.ncols() || columns.iter().any(|&c| c >= values.len()) {
        return Err(Error::Shape(format!(
            "sampled check: {} values, a {} x {} file, columns up to {:?}",
            values.len(),
            n,
            vectors.ncols(),
            columns.iter().max()
        )));
    }
    let mut v = Mat::<T>::zeros(n, s);
    for (k, &c) in columns.iter().enumerate() {
        vectors.read_columns(c, v.as_mut().subcols_mut(k, 1))?;
    }
    // A V_s from the lower triangle, and ||A||_F^2.
    let mut av = Mat::<T>::zeros(n, s);
    let mut seen = vec![false; n];
    let mut norm2 = 0.0f64;
    let mut bad: Option<String> = None;
    lower(&mut |part: LowerPart<'_, T>| {
        let (idx, lane, is_col) = match part {
            LowerPart::Column(j, c) => (j, c, true),
            LowerPart::Row(i, r) => (i, r, false),
        };
        let len_ok = if is_col {
            lane.len() + idx == n
        } else {
            lane.len() == idx + 1
        };
        if idx >= n || !len_ok || std::mem::replace(&mut seen[idx], true) {
            bad.get_or_insert_with(|| format!("lane {idx} of length {} given", lane.len()));
            return;
        }
        // The diagonal entry, then the off-diagonal ones (each counts twice).
        let diag = if is_col { lane[0] } else { lane[idx] };
        let off = if is_col { &lane[1..] } else { &lane[..idx] };
        norm2 += diag.f64() * diag.f64();
        norm2 += 2.0 * off.iter().map(|x| x.f64() * x.f64()).sum::<f64>();
        // Rows of V and A V the off-diagonal entries couple to `idx`: below
        // it for a column, above it for a row.
        let first = if is_col { idx + 1 } else { 0 };
        for k in 0..s {
            let vcol = v.col(k).try_as_col_major().expect("owned").as_slice();
            let vi = vcol[idx];
            let mut dot = diag * vi;
            for (t, &a) in off.iter().enumerate() {
                dot += a * vcol[first + t];
            }
            let out = av
                .as_mut()
                .col_mut(k)
                .try_as_col_major_mut()
                .expect("owned")
                .as_slice_mut();
            for (t, &a) in off.iter().enumerate() {
                out[first + t] += a * vi;
            }
            out[idx] += dot;
        }
    })?;
    if let Some(b) = bad.or_else(|| {
        seen.iter()
            .position(|&x| !x)
            .map(|j| format!("column {j} missing"))
    }) {
        return Err(Error::InvalidArgument(format!(
            "sampled check: the matrix was not streamed as its {n} lower columns: {b}"
        )));
    }
    for (k, &c) in columns.iter().enumerate() {
        for i in 0..n {
            av[(i, k)] -= v[(i, k)] * values[c];
        }
    }
    let mut o = Mat::<T>::identity(s, s);
    matmul(
        o.as_mut(),
        Accum::Add,
        v.transpose(),
        v.as_ref(),
        -T::one(),
        Par::Seq,
    );
    let (nf, eps) = (n.max(1) as f64, T::EPS.f64());
    let anorm = norm2.sqrt().max(f64::MIN_POSITIVE);
    Ok(SampledCheck {
        columns: columns.to_vec(),
        residual: av.norm_l2().f64() / (nf * anorm * eps),
        orthogonality: o.norm_l2().f64() / (nf * eps),
    })
}
