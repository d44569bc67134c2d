//! What a run prints: the paths it wrote and the accuracy ratios of `--check`.

use super::Args;
use eigenflow::Scalar;
use faer::Mat;
use std::path::PathBuf;

/// The paths written, last (on stderr with --json, whose stdout is one line).
pub fn print_paths(args: &Args, written: &[PathBuf]) {
    let mut paths: Vec<String> = written
        .iter()
        .map(|p| format!("wrote {}", p.display()))
        .collect();
    if let Some(p) = &args.trace {
        paths.push(format!(
            "wrote {} (trace; open in ui.perfetto.dev)",
            p.display()
        ));
    }
    for line in paths {
        if args.json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
}

/// LAPACK-style ratios (for the `k` columns of a selection, `V` is `n x k`
/// and the identity `k x k`): `||A V - V L||_F / (n ||A||_F eps)` (for values only,
/// `|sum(L) - trace(A)| / (n ||A||_F eps)`) and, with vectors,
/// `||V^T V - I||_F / (n eps)`.
pub fn check_ratios<T: Scalar>(
    a: faer::MatRef<'_, T>,
    values: &[T],
    v: Option<faer::MatRef<'_, T>>,
) -> (f64, Option<f64>) {
    use faer::linalg::matmul::matmul;
    use faer::{Accum, Par};
    let n = a.nrows();
    if n == 0 {
        return (0.0, v.map(|_| 0.0));
    }
    let par = Par::rayon(0);
    let full = Mat::from_fn(n, n, |i, j| if i >= j { a[(i, j)] } else { a[(j, i)] });
    let (nf, eps) = (n as f64, T::EPS.f64());
    let anorm = full.norm_l2().f64().max(f64::MIN_POSITIVE);
    let Some(v) = v else {
        let trace: f64 = (0..n).map(|i| full[(i, i)].f64()).sum();
        let sum: f64 = values.iter().map(|x| x.f64()).sum();
        return ((trace - sum).abs() / (nf * anorm * eps), None);
    };
    let k = v.ncols();
    let mut r = Mat::from_fn(n, k, |i, j| v[(i, j)] * values[j]);
    matmul(r.as_mut(), Accum::Add, full.as_ref(), v, -T::one(), par);
    let mut o = Mat::<T>::identity(k, k);
    matmul(o.as_mut(), Accum::Add, v.transpose(), v, -T::one(), par);
    (
        r.norm_l2().f64() / (nf * anorm * eps),
        Some(o.norm_l2().f64() / (nf * eps)),
    )
}
