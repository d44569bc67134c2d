//! LAPACK's symmetric eigensolver test matrices (the types of `ddrvst`) and
//! its SVD test shapes through every path (issue 66, point 4): the full
//! `eigh`, the one-stage and the two-stage selection with and without
//! vectors, the top-k SVD, and `evd --top` / `svd --top` on the command line.
//!
//! The types: the zero matrix, the identity, diagonal and dense matrices
//! with evenly spaced, geometric and clustered spectra (`dlatms` modes 4, 3
//! and 1 with condition `1 / ulp` and random signs), each also scaled near
//! overflow and near underflow as `ddrvst` scales them (`sqrt(overflow) ulp /
//! n` and `sqrt(underflow) n / ulp`), a random dense matrix (scaled the same
//! three ways, and by `1e152` / `1e16` as an f32 Gram matrix of data around
//! `1e8` is), and a tridiagonal that splits. What must hold: no error where
//! LAPACK succeeds, LAPACK's scaled ratios below 30, and on diagonal input
//! whose norm needs no scaling the selected eigenvalues are the diagonal's
//! entries exactly, as `dstebz` gives them.

use crate::common::{eig_ratios, to_f64};
use eigenflow::faer::Mat;
use eigenflow::gallery::{self, Rng};
use eigenflow::pipeline::evd::Selection;
use eigenflow::pipeline::{eigh, EvdJob};
use eigenflow::{EvdOptions, Scalar};

#[derive(Clone, Copy, Debug)]
enum Mode {
    /// `dlatms` mode 4: `1 - (i / (n - 1)) (1 - 1 / cond)`.
    Even,
    /// Mode 3: `cond^(-i / (n - 1))`.
    Geometric,
    /// Mode 1: one eigenvalue 1, the rest `1 / cond`.
    Clustered,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Zero,
    Identity,
    Diagonal(Mode),
    Dense(Mode),
    Random,
    SplitTridiagonal,
}

/// The spectrum of `mode` at order `n`, condition `1 / ulp`, with random
/// signs (`dlatm1`), largest magnitude 1.
fn spectrum<T: Scalar>(mode: Mode, n: usize, seed: u64) -> Vec<f64> {
    let cond = 1.0 / T::EPS.f64();
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|i| {
            let t = if n > 1 {
                i as f64 / (n - 1) as f64
            } else {
                0.0
            };
            let x = match mode {
                Mode::Even => 1.0 - t * (1.0 - 1.0 / cond),
                Mode::Geometric => cond.powf(-t),
                Mode::Clustered if i == 0 => 1.0,
                Mode::Clustered => 1.0 / cond,
            };
            if rng.uniform_in(-1.0, 1.0) < 0.0 {
                -x
            } else {
                x
            }
        })
        .collect()
}

/// The matrix of `kind` at order `n` with largest magnitude about `anorm`
/// (f64, converted by the caller).
fn matrix<T: Scalar>(kind: Kind, n: usize, anorm: f64, seed: u64) -> Mat<f64> {
    let diag = |v: &[f64]| Mat::from_fn(n, n, |i, j| if i == j { v[i] * anorm } else { 0.0 });
    match kind {
        Kind::Zero => Mat::zeros(n, n),
        Kind::Identity => diag(&vec![1.0; n]),
        Kind::Diagonal(mode) => diag(&spectrum::<T>(mode, n, seed)),
        Kind::Dense(mode) => {
            let w: Vec<f64> = spectrum::<T>(mode, n, seed)
                .iter()
                .map(|x| x * anorm)
                .collect();
            gallery::with_spectrum(&w, seed + 1)
        }
        Kind::Random => {
            let a = gallery::random_symmetric_uniform::<f64>(n, seed);
            Mat::from_fn(n, n, |i, j| a[(i, j)] * anorm)
        }
        Kind::SplitTridiagonal => {
            // Three blocks glued by off-diagonals far below the splitting
            // threshold, and one that stays coupled.
            let mut rng = Rng::new(seed);
            Mat::from_fn(n, n, |i, j| {
                let (i, j) = (i.max(j), i.min(j));
                if i == j {
                    anorm * rng.uniform_in(-1.0, 1.0)
                } else if i == j + 1 {
                    let glue = j + 1 == n / 3 || j + 1 == 2 * n / 3;
                    anorm * if glue { 1e-300 } else { 0.5 }
                } else {
                    0.0
                }
            })
        }
    }
}

fn convert<T: Scalar>(a: &Mat<f64>) -> Mat<T> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| T::of(a[(i, j)]))
}

/// The kinds and the norms `ddrvst` gives them (1, near overflow, near
/// underflow), plus the two large norms of issue 66.
fn cases<T: Scalar>(n: usize) -> Vec<(Kind, f64)> {
    let ulp = T::EPS.f64();
    let (unfl, ovfl) = (T::SAFE_MIN.f64(), 1.0 / T::SAFE_MIN.f64());
    let big = ovfl.sqrt() * ulp / n as f64;
    let small = unfl.sqrt() * n as f64 / ulp;
    let mut out = vec![(Kind::Zero, 1.0), (Kind::Identity, 1.0)];
    for mode in [Mode::Even, Mode::Geometric, Mode::Clustered] {
        out.push((Kind::Diagonal(mode), 1.0));
        out.push((Kind::Dense(mode), 1.0));
    }
    out.push((Kind::Diagonal(Mode::Geometric), big));
    out.push((Kind::Diagonal(Mode::Geometric), small));
    out.push((Kind::Dense(Mode::Geometric), big));
    out.push((Kind::Dense(Mode::Geometric), small));
    for s in [1.0, big, small] {
        out.push((Kind::Random, s));
    }
    // Issue 66: dense at 1e152 failed in f64, a random f32 matrix at 1e16.
    out.push((Kind::Random, if ulp > 1e-10 { 1e16 } else { 1e152 }));
    out.push((
        Kind::Dense(Mode::Clustered),
        if ulp > 1e-10 { 1e16 } else { 1e152 },
    ));
    out.push((Kind::SplitTridiagonal, 1.0));
    out
}

/// Whether the selective solvers scale a matrix of this norm (then the
/// eigenvalues are unscaled by a division and need not be exact).
fn needs_scaling<T: Scalar>(anorm: f64) -> bool {
    let smlnum = T::SAFE_MIN.f64() / T::EPS.f64();
    let rmax = (1.0 / smlnum)
        .sqrt()
        .min(1.0 / T::SAFE_MIN.f64().sqrt().sqrt());
    anorm > 0.0 && (anorm < smlnum.sqrt() || anorm > rmax)
}

fn is_diagonal(kind: Kind) -> bool {
    matches!(kind, Kind::Zero | Kind::Identity | Kind::Diagonal(_))
}

/// One case through the one-stage and the two-stage selection, with and
/// without vectors, on a middle index range and the top three.
fn check_selection<T: Scalar>(kind: Kind, n: usize, anorm: f64, seed: u64) {
    let full = matrix::<T>(kind, n, anorm, seed);
    let a: Mat<T> = convert(&full);
    let exact: Vec<T> = {
        let mut d: Vec<T> = (0..n).map(|i| a[(i, i)]).collect();
        d.sort_by(|x, y| x.partial_cmp(y).unwrap());
        d
    };
    let reference = eigenflow::eigvalsh(&a)
        .unwrap_or_else(|e| panic!("{kind:?} n={n} anorm={anorm:e}: eigvalsh failed: {e}"));
    // The full path, with vectors, as the reference's companion.
    let whole = eigenflow::eigh(&a)
        .unwrap_or_else(|e| panic!("{kind:?} n={n} anorm={anorm:e}: eigh failed: {e}"));
    let (res, orth) = eig_ratios(a.as_ref(), &whole.values, whole.vectors.as_ref());
    assert!(
        res < 30.0 && orth < 30.0,
        "{kind:?} n={n} anorm={anorm:e}: full eigh ratios {res} {orth}"
    );
    let ranges = [
        n / 3..(2 * n).div_ceil(3).max(n / 3 + 1).min(n),
        n.saturating_sub(3)..n,
    ];
    for two_stage in [false, true] {
        for range in &ranges {
            let mut opts = EvdOptions::auto();
            opts.selection = Some(Selection::Index(range.clone()));
            if two_stage {
                // 0 means automatic: 1 sends every order to the graph.
                opts.one_stage_below = 1;
            }
            let what = format!(
                "{kind:?} n={n} anorm={anorm:e} {} {:?} {}",
                if two_stage { "two-stage" } else { "one-stage" },
                range,
                std::any::type_name::<T>()
            );
            let rt = eigenflow::default_runtime();
            let got = eigh(a.as_ref(), EvdJob::Vectors, &opts, rt)
                .unwrap_or_else(|e| panic!("{what}: eigh with a subset failed: {e}"));
            let vals = eigh(a.as_ref(), EvdJob::Values, &opts, rt)
                .unwrap_or_else(|e| panic!("{what}: eigvalsh with a subset failed: {e}"))
                .values;
            assert_eq!(got.values.len(), range.len(), "{what}");
            let v = got.vectors.as_ref().expect("vectors");
            let (res, orth) = eig_ratios(a.as_ref(), &got.values, v.as_ref());
            assert!(res < 30.0 && orth < 30.0, "{what}: ratios {res} {orth}");
            let scale = reference
                .iter()
                .fold(0.0f64, |m, x| m.max(x.f64().abs()))
                .max(f64::MIN_POSITIVE);
            for (k, j) in range.clone().enumerate() {
                let d = (got.values[k].f64() - reference[j].f64()).abs()
                    / (n as f64 * T::EPS.f64() * scale).max(f64::MIN_POSITIVE);
                assert!(
                    d < 30.0,
                    "{what}: eigenvalue {j} differs by {d} ulps of the norm"
                );
                if !two_stage {
                    // One reduction for both jobs (the graph reduces to a
                    // narrower band for values only, so its bits differ).
                    assert_eq!(
                        got.values[k].f64().to_bits(),
                        vals[k].f64().to_bits(),
                        "{what}: values-only and vectors runs differ at {j}"
                    );
                }
            }
            if is_diagonal(kind) && !needs_scaling::<T>(anorm) {
                for (k, j) in range.clone().enumerate() {
                    assert_eq!(
                        got.values[k].f64().to_bits(),
                        exact[j].f64().to_bits(),
                        "{what}: eigenvalue {j} of a diagonal matrix is {:e}, not its entry {:e}",
                        got.values[k].f64(),
                        exact[j].f64()
                    );
                }
            }
        }
    }
}

fn sweep<T: Scalar>(sizes: &[usize]) {
    for &n in sizes {
        for (c, (kind, anorm)) in cases::<T>(n).into_iter().enumerate() {
            check_selection::<T>(kind, n, anorm, 1000 + (n * 40 + c) as u64);
        }
    }
}

#[test]
fn ddrvst_types_through_the_selection_f64() {
    sweep::<f64>(&[1, 2, 5, 17, 60]);
}

#[test]
fn ddrvst_types_through_the_selection_f32() {
    sweep::<f32>(&[1, 3, 5, 17, 60]);
}

#[test]
fn clustered_diagonal_and_dense_at_larger_orders() {
    // Issue 66: the clustered diagonal failed at n = 700 (inverse iteration).
    check_selection::<f64>(Kind::Diagonal(Mode::Clustered), 700, 1.0, 7);
    check_selection::<f64>(Kind::Dense(Mode::Clustered), 200, 1e152, 8);
    check_selection::<f32>(Kind::Random, 200, 1e16, 9);
}

#[test]
fn psd_zero_eigenvalues_are_never_negative() {
    // scikit-learn's KernelPCA on an exactly zero kernel matrix: every
    // selected eigenvalue must be 0, not a negative denormal.
    let k = Mat::<f64>::zeros(40, 40);
    let top = eigenflow::eigh_select(&k, Selection::Largest(5)).unwrap();
    assert!(
        top.values.iter().all(|&x| x.to_bits() == 0),
        "{:?}",
        top.values
    );
    let d = Mat::from_fn(5, 5, |i, j| {
        if i == j {
            [3.0, -2.0, 0.0, 1e-300, 5.0][i]
        } else {
            0.0
        }
    });
    let mut opts = EvdOptions::auto();
    opts.selection = Some(Selection::Index(0..5));
    let w = eigh(
        d.as_ref(),
        EvdJob::Values,
        &opts,
        eigenflow::default_runtime(),
    )
    .unwrap()
    .values;
    assert_eq!(w, vec![-2.0, 0.0, 1e-300, 3.0, 5.0]);
}

#[test]
fn svd_top_k_on_scaled_matrices() {
    // `svd --top 3` failed on every near-overflow case of issue 66.
    for (m, n, seed) in [(17, 9, 1u64), (60, 40, 2), (40, 60, 3)] {
        let k = n.min(m);
        for anorm in [
            1.0,
            1e152,
            f64::MIN_POSITIVE.sqrt() * k as f64 / f64::EPSILON,
        ] {
            let sigma: Vec<f64> = spectrum::<f64>(Mode::Geometric, k, seed)
                .iter()
                .map(|x| x.abs() * anorm)
                .collect();
            let a = gallery::with_singular_values::<f64>(m, n, &sigma, seed);
            let all = eigenflow::svdvals(&a).unwrap();
            let top = eigenflow::svd_top(&a, 3)
                .unwrap_or_else(|e| panic!("{m}x{n} anorm {anorm:e}: svd_top failed: {e}"));
            for j in 0..3 {
                let d = (top.values[j] - all[j]).abs() / (k as f64 * f64::EPSILON * all[0]);
                assert!(d < 30.0, "{m}x{n} anorm {anorm:e}: sigma_{j} off by {d}");
            }
            let u = to_f64(top.u.as_ref());
            let o = (u.transpose() * &u - Mat::<f64>::identity(3, 3)).norm_l2();
            assert!(
                o / (m as f64 * f64::EPSILON) < 30.0,
                "{m}x{n} anorm {anorm:e}: U^T U {o}"
            );
        }
    }
}

/// `evd --top 5` and `svd --top 3` on inputs near overflow: issue 66 saw
/// "did not converge" from both command lines (9 of 96 and 26 of 26 cases).
#[test]
fn command_line_top_k_near_overflow() {
    use crate::example_bin::{self, json_field, TempDir};
    use eigenflow::matrix::npy;
    let tmp = TempDir::new("lapack-types-cli");
    for (kind, n, seed) in [
        (Kind::Dense(Mode::Geometric), 40, 11u64),
        (Kind::Random, 60, 12),
        (Kind::Diagonal(Mode::Clustered), 30, 13),
    ] {
        let a = matrix::<f64>(kind, n, 1e152, seed);
        let input = tmp.0.join(format!("a{n}.npy"));
        npy::write_matrix(&input, a.as_ref()).unwrap();
        let out = tmp.0.join(format!("evd{n}"));
        let (i, o) = (input.to_str().unwrap(), out.to_str().unwrap());
        let args = [
            "--input", i, "--top", "5", "--json", "--quiet", "--check", "--output", o,
        ];
        let Some(run) = example_bin::run("evd", &args) else {
            return;
        };
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "evd {kind:?} n={n}: {err}");
        let line = String::from_utf8_lossy(&run.stdout).to_string();
        let res: f64 = json_field(&line, "residual").parse().unwrap();
        let orth: f64 = json_field(&line, "orthogonality").parse().unwrap();
        assert!(res < 30.0 && orth < 30.0, "evd {kind:?} n={n}: {line}");
        // The SVD of the same matrix, and of a wide cut of it.
        for (rows, label) in [(n, "square"), (n / 2, "wide")] {
            let w = Mat::from_fn(rows, n, |i, j| a[(i, j)]);
            let input = tmp.0.join(format!("w{n}-{label}.npy"));
            npy::write_matrix(&input, w.as_ref()).unwrap();
            let out = tmp.0.join(format!("svd{n}-{label}"));
            let (i, o) = (input.to_str().unwrap(), out.to_str().unwrap());
            let args = [
                "--input", i, "--top", "3", "--json", "--quiet", "--check", "--output", o,
            ];
            let Some(run) = example_bin::run("svd", &args) else {
                return;
            };
            let err = String::from_utf8_lossy(&run.stderr);
            assert!(run.status.success(), "svd {kind:?} {rows}x{n}: {err}");
        }
    }
}
