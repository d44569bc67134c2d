//! Tests of the batched symmetric EVD (the batched SVD's are integration
//! tests, `tests/suite/batched*.rs`): every matrix of a stack against faer's
//! `self_adjoint_eigen` in f64 and by the LAPACK-style scaled residual and
//! orthogonality ratios, over the families of issue 61; bits across thread
//! counts and chunkings; errors.

use super::*;
use crate::gallery::Family;
use crate::graph::TaskGraph;
use crate::pipeline::evd::EvdJob;
use crate::runtime::Runtime;
use crate::{Error, Scalar};
use faer::{Mat, MatRef, Side};

/// The ratios' bound (LAPACK's test threshold).
const BOUND: f64 = 30.0;

const ORDERS: [usize; 10] = [1, 2, 3, 4, 5, 8, 17, 32, 64, 128];

/// The families of issue 61 (geometric spectrum to 1e12, clusters,
/// multiplicities, zero, diagonal) and a few more of the gallery's.
const FAMILIES: [Family; 9] = [
    Family::Zero,
    Family::Identity,
    Family::Diagonal,
    Family::UniformSymmetric,
    Family::Geometric { log10_cond: 12 },
    Family::Clustered,
    Family::Repeated,
    Family::Graded,
    Family::Wilkinson,
];

/// 3 x 3 matrices with nearly equal eigenvalues (where Cardano's formula
/// and the closed-form 3 x 3 methods lose accuracy): `Q diag(l) Q^T`.
fn nearly_equal_3x3(seed: u64) -> Vec<Mat<f64>> {
    let mut out = Vec::new();
    for d in [1e-4, 1e-8, 1e-12, 1e-15, 1e-16, 0.0] {
        for l in [
            [1.0, 1.0 + d, 1.0 + 2.0 * d],
            [1.0, 1.0, 1.0 + d],
            [-1.0, 1.0, 1.0 + d],
            [-d, 0.0, d],
            [-1.0 - d, -1.0, 2.0],
        ] {
            out.push(crate::gallery::with_spectrum(&l, seed + out.len() as u64));
        }
    }
    // Exact structure: a rotation in one plane only, and a tiny coupling.
    out.push(Mat::from_fn(3, 3, |i, j| {
        [[1.0, 1e-20, 0.0], [1e-20, 1.0, 0.0], [0.0, 0.0, 1.0]][i][j]
    }));
    out.push(Mat::from_fn(3, 3, |i, j| {
        [[0.0, 1.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]][i][j]
    }));
    out
}

/// The test matrices of order `n`, in f64 (converted to `T` by the caller).
fn stack(n: usize) -> Vec<Mat<f64>> {
    let mut out: Vec<Mat<f64>> = Vec::new();
    for f in FAMILIES {
        for seed in 0..2 {
            out.push(f.generate::<f64>(n, 1000 * n as u64 + seed));
        }
    }
    if n == 3 {
        out.extend(nearly_equal_3x3(77));
    }
    out
}

/// Powers of two near `1e+-290` (`1e+-30` in f32): exact scalings, so the
/// ratios are computed on the unscaled matrix.
fn scales<T: Scalar>() -> [f64; 3] {
    let e = if T::NAME == "f32" { 100 } else { 960 };
    [1.0, 2f64.powi(e), 2f64.powi(-e)]
}

/// `mats` as one column-major or row-major buffer of `T`, each times `s`,
/// with junk in every strict upper triangle (only the lower one is read).
fn pack<T: Scalar>(mats: &[Mat<f64>], s: f64, layout: BatchLayout) -> Vec<T> {
    let mut out = Vec::new();
    for a in mats {
        let n = a.nrows();
        for outer in 0..n {
            for inner in 0..n {
                let (i, j) = match layout {
                    BatchLayout::ColMajor => (inner, outer),
                    BatchLayout::RowMajor => (outer, inner),
                };
                out.push(if i >= j {
                    T::of(a[(i, j)] * s)
                } else {
                    T::of(-7.5)
                });
            }
        }
    }
    out
}

/// The ratios of matrix `a` (the f64 original, unscaled; the solver saw
/// `T::of(a s)`) for the values `w` and vectors `v` computed on it:
/// eigenvalue error against faer, residual, orthogonality, each scaled by
/// `n ||A|| eps` or `n eps`.
fn ratios<T: Scalar>(a: &Mat<f64>, s: f64, w: &[T], v: Option<MatRef<'_, T>>) -> [f64; 3] {
    let n = a.nrows();
    let eps = T::EPS.f64();
    // What the solver saw, unscaled (exact: `s` is a power of two).
    let at = Mat::from_fn(n, n, |i, j| {
        let (r, c) = (i.max(j), i.min(j));
        T::of(a[(r, c)] * s).f64() / s
    });
    let norm = at.norm_l2();
    // 0 / 0 for the zero matrix's exact results.
    let scaled = |x: f64, d: f64| if x == 0.0 { 0.0 } else { x / d };
    let mut want: Vec<f64> = at.self_adjoint_eigenvalues(Side::Lower).unwrap();
    want.sort_by(f64::total_cmp);
    let got: Vec<f64> = w.iter().map(|x| x.f64() / s).collect();
    let err = got
        .iter()
        .zip(&want)
        .map(|(g, r)| (g - r).abs())
        .fold(0.0, f64::max);
    let values = scaled(err, n as f64 * norm * eps);
    let Some(v) = v else {
        return [values, 0.0, 0.0];
    };
    let v = Mat::from_fn(n, n, |i, j| v[(i, j)].f64());
    let l = Mat::from_fn(n, n, |i, j| if i == j { got[j] } else { 0.0 });
    let residual = scaled((&at * &v - &v * &l).norm_l2(), n as f64 * norm * eps);
    let orth = (v.transpose() * &v - Mat::<f64>::identity(n, n)).norm_l2() / (n as f64 * eps);
    [values, residual, orth]
}

/// Whether `||A s||` is so small in `T` (a 1e-12 matrix scaled by 1e-30 in
/// f32) that `eps ||A s||` is about the spacing of the subnormal numbers
/// (`2 eps SAFE_MIN`) or below: no result in `T` can then meet the bound,
/// whatever the solver.
fn subnormal<T: Scalar>(a: &Mat<f64>, s: f64) -> bool {
    let norm = a.norm_l2() * s;
    norm != 0.0 && norm < 4.0 * T::SAFE_MIN.f64()
}

fn check_accuracy<T: Scalar>() {
    let rt = Runtime::builder().threads(2).build();
    for n in ORDERS {
        let mats = stack(n);
        for (si, s) in scales::<T>().into_iter().enumerate() {
            let layout = [BatchLayout::ColMajor, BatchLayout::RowMajor][si % 2];
            let data = pack::<T>(&mats, s, layout);
            let b = BatchRef::new(&data, mats.len(), n, n, layout).unwrap();
            let opts = BatchedOptions::default();
            let evd = eigh_batched(b, &opts, &rt).unwrap().into_result().unwrap();
            let vals = eigvalsh_batched(b, &opts, &rt).unwrap();
            for (i, a) in mats.iter().enumerate() {
                if subnormal::<T>(a, s) {
                    continue;
                }
                let r = ratios(a, s, evd.values_of(i), evd.vectors_of(i));
                let what = format!("{} n={n} scale={s:e} matrix {i}: ratios {r:?}", T::NAME);
                assert!(r.iter().all(|&x| x < BOUND), "{what}");
                let [rv, _, _] = ratios::<T>(a, s, vals.values_of(i), None);
                assert!(rv < BOUND, "{what}: values only {rv}");
            }
        }
    }
}

#[test]
fn every_matrix_is_accurate_f64() {
    check_accuracy::<f64>();
}

#[test]
fn every_matrix_is_accurate_f32() {
    check_accuracy::<f32>();
}

/// Both routes on one order, forced through [`BatchedOptions::evd_jacobi_below`]:
/// each must hold the bound on its own (the default crossover hides one).
#[test]
fn both_routes_are_accurate_at_every_order() {
    let rt = Runtime::builder().threads(2).build();
    for n in [2usize, 3, 8, 17, 32] {
        let mats = stack(n);
        let data = pack::<f64>(&mats, 1.0, BatchLayout::ColMajor);
        let b = BatchRef::new(&data, mats.len(), n, n, BatchLayout::ColMajor).unwrap();
        for below in [0, usize::MAX] {
            let opts = BatchedOptions {
                evd_jacobi_below: below,
                ..BatchedOptions::default()
            };
            let evd = eigh_batched(b, &opts, &rt).unwrap().into_result().unwrap();
            for (i, a) in mats.iter().enumerate() {
                let r = ratios(a, 1.0, evd.values_of(i), evd.vectors_of(i));
                assert!(
                    r.iter().all(|&x| x < BOUND),
                    "n={n} below={below} {i}: {r:?}"
                );
            }
        }
    }
}

fn bits<T: Scalar>(e: &BatchedEvd<T>) -> Vec<u64> {
    let all = e.values.iter().chain(e.vectors.iter().flatten());
    all.map(|x| x.f64().to_bits()).collect()
}

#[test]
fn bits_do_not_depend_on_threads_or_chunks() {
    for n in [1usize, 3, 5, 17] {
        let mats: Vec<Mat<f64>> = (0..37)
            .map(|i| Family::UniformSymmetric.generate(n, i))
            .collect();
        let data = pack::<f64>(&mats, 1.0, BatchLayout::ColMajor);
        let b = BatchRef::new(&data, mats.len(), n, n, BatchLayout::ColMajor).unwrap();
        let mut seen: Option<Vec<u64>> = None;
        for threads in [1, 2, 3] {
            let rt = Runtime::builder().threads(threads).build();
            for chunk in [None, Some(1), Some(3), Some(8), Some(37)] {
                let opts = BatchedOptions {
                    chunk,
                    ..BatchedOptions::default()
                };
                let got = bits(&eigh_batched(b, &opts, &rt).unwrap());
                match &seen {
                    None => seen = Some(got),
                    Some(s) => assert!(*s == got, "n={n} threads={threads} chunk={chunk:?}"),
                }
            }
        }
        // The graph form and the `_into` form give the same bits.
        let rt = Runtime::builder().threads(2).build();
        let mut g = TaskGraph::new();
        let h = eigh_batched_graph(&mut g, b, EvdJob::Vectors, &BatchedOptions::default());
        let h = h.unwrap();
        g.check_races().unwrap();
        rt.run(g).unwrap();
        assert!(
            Some(bits(&h.collect().unwrap())) == seen,
            "n={n}: graph form"
        );
    }
}

#[test]
fn a_non_finite_matrix_is_named_and_nothing_passed_in_is_changed() {
    let rt = Runtime::builder().threads(2).build();
    for n in [3usize, 20] {
        let mats: Vec<Mat<f64>> = (0..9)
            .map(|i| Family::UniformSymmetric.generate(n, i))
            .collect();
        let mut data = pack::<f64>(&mats, 1.0, BatchLayout::ColMajor);
        // Matrix 4: NaN in its lower triangle; matrix 6: infinity in its
        // strict upper one (not read, so not an error).
        data[4 * n * n + 1] = f64::NAN;
        data[6 * n * n + n] = f64::INFINITY;
        let before = data.clone();
        let b = BatchRef::new(&data, 9, n, n, BatchLayout::ColMajor).unwrap();
        let named = |e: Error| match e {
            Error::BatchItem { index, source } => {
                assert!(matches!(*source, Error::NonFinite { row: 1, col: 0, .. }));
                index
            }
            other => panic!("n={n}: {other:?}"),
        };
        let opts = BatchedOptions {
            chunk: Some(2),
            ..BatchedOptions::default()
        };
        assert_eq!(named(eigh_batched(b, &opts, &rt).unwrap_err()), 4);
        assert_eq!(named(eigvalsh_batched(b, &opts, &rt).unwrap_err()), 4);
        let mut g = TaskGraph::new();
        let e = eigh_batched_graph(&mut g, b, EvdJob::Vectors, &opts)
            .err()
            .unwrap();
        assert_eq!(named(e), 4);
        assert_eq!(g.len(), 0, "nothing added");
        let (mut w, mut v) = (vec![0.0; 9 * n], vec![0.0; 9 * n * n]);
        let out = BatchedEvdOut {
            values: &mut w,
            vectors: Some(&mut v),
        };
        assert_eq!(named(eigh_batched_into(b, &opts, &rt, out).unwrap_err()), 4);
        assert!(data
            .iter()
            .zip(&before)
            .all(|(x, y)| x.to_bits() == y.to_bits()));
        // The neighbours alone solve as they would have.
        let good: Vec<f64> = data[..4 * n * n].to_vec();
        let gb = BatchRef::new(&good, 4, n, n, BatchLayout::ColMajor).unwrap();
        let alone = eigh_batched(gb, &opts, &rt).unwrap();
        assert_eq!(
            &w[..2 * n],
            &alone.values[..2 * n],
            "n={n}: matrices 0, 1 written"
        );
    }
}

#[test]
fn shapes_are_checked() {
    let rt = Runtime::builder().threads(1).build();
    let data = vec![1.0f64; 2 * 3 * 4];
    let b = BatchRef::new(&data, 2, 3, 4, BatchLayout::ColMajor).unwrap();
    let opts = BatchedOptions::default();
    assert!(matches!(eigh_batched(b, &opts, &rt), Err(Error::Shape(_))));
    let sq = vec![1.0f64; 2 * 9];
    let b = BatchRef::new(&sq, 2, 3, 3, BatchLayout::ColMajor).unwrap();
    // One buffer too short each time: refused before anything is written.
    for (nw, nv) in [(5, 18), (6, 17)] {
        let (mut w, mut v) = (vec![5.0; nw], vec![5.0; nv]);
        let out = BatchedEvdOut {
            values: &mut w,
            vectors: Some(&mut v),
        };
        let r = eigh_batched_into(b, &opts, &rt, out);
        assert!(matches!(r, Err(Error::Shape(_))), "{nw} {nv}");
        assert!(w.iter().chain(&v).all(|&x| x == 5.0), "nothing written");
    }
}
