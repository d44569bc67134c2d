//! Tests of the generalized problem against its definition: per-eigenpair
//! backward errors and the `B`-orthogonality of the eigenvectors, as LAPACK's
//! `dsgt01` scales them (ratios to `n eps`, below 30), computed in f64 from
//! the inputs and the returned pairs; plus errors, races and bits.

use super::*;
use crate::gallery;
use faer::linalg::solvers::DenseSolveCore;
use faer::Side;

/// The tests' runtime of `threads` threads.
fn rt(threads: usize) -> Runtime {
    Runtime::builder().threads(threads).build()
}

/// The symmetric matrix whose lower triangle `a` holds, in f64.
fn sym64<T: Scalar>(a: MatRef<'_, T>) -> Mat<f64> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| {
        let (r, c) = if i >= j { (i, j) } else { (j, i) };
        a[(r, c)].f64()
    })
}

/// Largest column sum of magnitudes (the 1-norm).
fn norm1(a: MatRef<'_, f64>) -> f64 {
    (0..a.ncols())
        .map(|j| (0..a.nrows()).map(|i| a[(i, j)].abs()).sum::<f64>())
        .fold(0.0, f64::max)
}

/// The worst backward error ratio over the eigenpairs and the orthogonality
/// ratio, both divided by `n eps` of `T`.
fn ratios<T: Scalar>(
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    problem: Problem,
    values: &[T],
    x: MatRef<'_, T>,
) -> (f64, f64) {
    let (a, b) = (sym64(a), sym64(b));
    let n = a.nrows();
    let x = Mat::from_fn(n, x.ncols(), |i, j| x[(i, j)].f64());
    let ne = n as f64 * T::epsilon().f64();
    let (an, bn) = (norm1(a.as_ref()), norm1(b.as_ref()));
    let mut worst = 0.0f64;
    for (j, &lambda) in values.iter().enumerate() {
        let (l, xj) = (lambda.f64(), x.col(j));
        let (r, scale) = match problem {
            Problem::AxLambdaBx => (&a * xj - (&b * xj) * l, an + l.abs() * bn),
            Problem::ABxLambdaX => (&a * (&b * xj) - xj * l, an * bn + l.abs()),
            Problem::BAxLambdaX => (&b * (&a * xj) - xj * l, an * bn + l.abs()),
        };
        let rn: f64 = r.iter().map(|v| v.abs()).sum();
        let xn: f64 = xj.iter().map(|v| v.abs()).sum();
        worst = worst.max(rn / (scale * xn) / ne);
    }
    let k = values.len();
    // Types 1 and 2: X^T B X = I; type 3: X^T B^{-1} X = I.
    let (m, mn) = match problem {
        Problem::AxLambdaBx | Problem::ABxLambdaX => (b.clone(), bn),
        Problem::BAxLambdaX => {
            let binv = b.as_ref().llt(Side::Lower).expect("SPD").inverse();
            let n1 = norm1(binv.as_ref());
            (binv, n1)
        }
    };
    let g = x.transpose() * &m * &x - Mat::<f64>::identity(k, k);
    (worst, norm1(g.as_ref()) / (mn * ne))
}

/// The `B` families: identity, diagonal and dense with condition `1e3`.
fn b_family<T: Scalar>(which: usize, n: usize, seed: u64) -> Mat<T> {
    let spectrum = gallery::geometric::<T>(n, 1e3);
    match which {
        0 => Mat::identity(n, n),
        1 => Mat::from_fn(n, n, |i, j| {
            if i == j {
                spectrum[(i * 7) % n]
            } else {
                T::zero()
            }
        }),
        _ => gallery::with_spectrum(&spectrum, seed),
    }
}

/// The `A` families: random, clustered eigenvalues, graded.
fn a_family<T: Scalar>(which: usize, n: usize, seed: u64) -> Mat<T> {
    match which {
        0 => gallery::random_symmetric_uniform(n, seed),
        1 => gallery::with_spectrum(&gallery::clustered::<T>(n, 3, 1e-6), seed),
        _ => gallery::graded(n, seed),
    }
}

const PROBLEMS: [Problem; 3] = [
    Problem::AxLambdaBx,
    Problem::ABxLambdaX,
    Problem::BAxLambdaX,
];

/// The bound on the orthogonality ratio at order `n` for `B` family `bf`:
/// `30 + 20 sqrt(cond(B)) / n`. The back-substitution `X = L^{-T} Z` (types 1
/// and 2) is a triangular solve: `(L^T + E) X = Z` with `|E| <= γ_n |L^T|`
/// (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed.,
/// Theorem 8.5), so `X^T B X - I = -(Z^T E X + X^T E^T Z) + O(eps^2)`, of
/// size about `c eps ||L|| ||L^{-1}|| = c eps sqrt(cond(B))`, which does not
/// shrink with `n` while the ratio divides by `n eps`. LAPACK `dsygvd`
/// shares it: through scipy, the worst ratio over 200 random pencils
/// (dense `B`, `cond(B) = 1e3`, types 1 / 2) was 171 / 196 at `n = 2`, 50 / 54
/// at `n = 5`, 37 / 35 at `n = 8` and 5.2 / 5.0 at `n = 32`, about
/// `11 sqrt(cond(B)) / n`; ours on the same pencils 185 / 214, 55 / 45,
/// 32 / 32 and 6.1 / 5.6 (`docs/generalized.md`). Type 3 (`X = L Z`) has no
/// solve and stays far below 30.
fn orthogonality_bound(n: usize, bf: usize) -> f64 {
    let cond_b: f64 = if bf == 0 { 1.0 } else { 1e3 };
    30.0 + 20.0 * cond_b.sqrt() / n as f64
}

/// Every family pair and problem at order `n`: the backward error ratio
/// below 30, the orthogonality ratio below [`orthogonality_bound`].
fn accuracy<T: Scalar>(n: usize, a_families: &[usize], problems: &[Problem]) {
    let rt = rt(2);
    for &af in a_families {
        for bf in 0..3 {
            let (a, b) = (a_family::<T>(af, n, 11), b_family::<T>(bf, n, 5));
            for &problem in problems {
                // Tiles of 13: several tiles from n = 33 on, the last one
                // shorter (the default tile of 256 is one tile here).
                let mut opts = GeneralizedOptions::new(problem);
                opts.tile = 13;
                let eig =
                    eigh_generalized(a.as_ref(), b.as_ref(), EvdJob::Vectors, &opts, &rt).unwrap();
                let x = eig.vectors.unwrap();
                assert!(eig.values.windows(2).all(|w| w[0] <= w[1]));
                let (res, orth) = ratios(a.as_ref(), b.as_ref(), problem, &eig.values, x.as_ref());
                let what = format!("n {n}, A family {af}, B family {bf}, {problem:?}");
                assert!(res < 30.0, "{what}: backward error ratio {res}");
                let bound = orthogonality_bound(n, bf);
                assert!(
                    orth < bound,
                    "{what}: orthogonality ratio {orth} (bound {bound})"
                );
            }
        }
    }
}

#[test]
fn accuracy_small_orders_f64() {
    for n in [1, 2, 5, 33] {
        accuracy::<f64>(n, &[0, 1, 2], &PROBLEMS);
    }
}

#[test]
fn accuracy_small_orders_f32() {
    for n in [1, 2, 5, 33] {
        accuracy::<f32>(n, &[0, 1, 2], &PROBLEMS);
    }
}

#[test]
fn accuracy_order_200() {
    accuracy::<f64>(200, &[0, 2], &PROBLEMS);
    accuracy::<f32>(200, &[1], &[Problem::AxLambdaBx]);
}

#[test]
fn identity_b_gives_the_standard_eigenvalues() {
    for n in [5, 33, 120] {
        let a: Mat<f64> = gallery::random_symmetric_uniform(n, 3);
        let b = Mat::<f64>::identity(n, n);
        for problem in PROBLEMS {
            let opts = GeneralizedOptions::new(problem);
            let gen =
                eigh_generalized(a.as_ref(), b.as_ref(), EvdJob::Values, &opts, &rt(2)).unwrap();
            let plain = crate::eigvalsh(&a).unwrap();
            let tol = 30.0 * n as f64 * f64::EPSILON * norm1(a.as_ref());
            for (x, y) in gen.values.iter().zip(&plain) {
                assert!((x - y).abs() < tol, "n {n}, {problem:?}: {x} against {y}");
            }
        }
    }
}

#[test]
fn values_only_match_the_vectors_run() {
    let (a, b) = (a_family::<f64>(0, 60, 2), b_family::<f64>(2, 60, 9));
    let opts = GeneralizedOptions::default();
    let v = eigh_generalized(a.as_ref(), b.as_ref(), EvdJob::Values, &opts, &rt(2)).unwrap();
    let w = eigh_generalized(a.as_ref(), b.as_ref(), EvdJob::Vectors, &opts, &rt(2)).unwrap();
    assert!(v.vectors.is_none());
    let scale = w.values.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    for (x, y) in v.values.iter().zip(&w.values) {
        assert!(
            (x - y).abs() <= 1e3 * f64::EPSILON * scale,
            "{x} against {y}"
        );
    }
}

#[test]
fn selections_are_the_pencils_eigenpairs() {
    let n = 70;
    let (a, b) = (a_family::<f64>(0, n, 4), b_family::<f64>(2, n, 8));
    let rt = rt(2);
    for problem in PROBLEMS {
        let full = eigh_generalized(
            a.as_ref(),
            b.as_ref(),
            EvdJob::Values,
            &GeneralizedOptions::new(problem),
            &rt,
        )
        .unwrap()
        .values;
        let scale = full.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        for (sel, want) in [
            (Selection::Largest(4), n - 4..n),
            (Selection::Smallest(3), 0..3),
            (Selection::Index(10..15), 10..15),
        ] {
            let opts = GeneralizedOptions::new(problem).with_selection(sel.clone());
            let eig =
                eigh_generalized(a.as_ref(), b.as_ref(), EvdJob::Vectors, &opts, &rt).unwrap();
            let x = eig.vectors.unwrap();
            assert_eq!(x.ncols(), want.len());
            for (got, exp) in eig.values.iter().zip(&full[want]) {
                assert!((got - exp).abs() < 1e3 * f64::EPSILON * scale, "{sel:?}");
            }
            let (res, orth) = ratios(a.as_ref(), b.as_ref(), problem, &eig.values, x.as_ref());
            assert!(
                res < 30.0 && orth < 30.0,
                "{problem:?} {sel:?}: {res} {orth}"
            );
        }
    }
}

#[test]
fn graphs_are_race_free_and_bits_do_not_depend_on_threads() {
    let n = 90;
    let (a, b) = (a_family::<f64>(2, n, 1), b_family::<f64>(2, n, 3));
    for (problem, tile) in PROBLEMS.into_iter().flat_map(|p| [(p, 7), (p, 256)]) {
        for sel in [None, Some(Selection::Largest(5))] {
            let mut opts = GeneralizedOptions::new(problem);
            opts.evd.selection = sel;
            opts.tile = tile;
            let built = sygv_graph(a.as_ref(), b.as_ref(), EvdJob::Vectors, &opts).unwrap();
            built.graph.check_races().unwrap();
            let runs: Vec<_> = [1, 2, 3]
                .into_iter()
                .map(|t| {
                    let e =
                        eigh_generalized(a.as_ref(), b.as_ref(), EvdJob::Vectors, &opts, &rt(t))
                            .unwrap();
                    let bits: Vec<u64> = e
                        .values
                        .iter()
                        .chain(
                            e.vectors
                                .as_ref()
                                .unwrap()
                                .col_iter()
                                .flat_map(|c| c.iter()),
                        )
                        .map(|x| x.to_bits())
                        .collect();
                    bits
                })
                .collect();
            assert!(
                runs.windows(2).all(|w| w[0] == w[1]),
                "{problem:?}, tile {tile}"
            );
        }
    }
}

#[test]
fn b_not_positive_definite_names_the_minor() {
    let n = 6;
    let a: Mat<f64> = gallery::random_symmetric_uniform(n, 1);
    // Diagonal with a negative entry at row 3: the minor of order 4 fails.
    let b = Mat::<f64>::from_fn(n, n, |i, j| match (i == j, i) {
        (true, 3) => -1.0,
        (true, _) => 2.0,
        _ => 0.0,
    });
    let (a0, b0) = (a.clone(), b.clone());
    let e = crate::eigh_generalized(&a, &b).unwrap_err();
    assert!(matches!(e, Error::NotPositiveDefinite { minor: 4 }), "{e}");
    assert!(a == a0 && b == b0);
    // Dense: [[1, 2], [2, 1]] has a negative determinant, minor 2.
    let b2 = Mat::<f64>::from_fn(2, 2, |i, j| if i == j { 1.0 } else { 2.0 });
    let a2 = Mat::<f64>::identity(2, 2);
    let e = crate::eigvalsh_generalized(&a2, &b2).unwrap_err();
    assert!(matches!(e, Error::NotPositiveDefinite { minor: 2 }), "{e}");
    // In tiles of 2 the failing minor is in the second diagonal tile.
    let opts = GeneralizedOptions {
        tile: 2,
        ..GeneralizedOptions::default()
    };
    let e = eigh_generalized(a.as_ref(), b.as_ref(), EvdJob::Vectors, &opts, &rt(2)).unwrap_err();
    assert!(matches!(e, Error::NotPositiveDefinite { minor: 4 }), "{e}");
}

#[test]
fn shapes_and_non_finite_entries_are_errors() {
    let a: Mat<f64> = gallery::random_symmetric_uniform(5, 1);
    let b = Mat::<f64>::identity(4, 4);
    assert!(matches!(
        crate::eigh_generalized(&a, &b),
        Err(Error::Shape(_))
    ));
    let rect = Mat::<f64>::zeros(5, 4);
    assert!(matches!(
        crate::eigh_generalized(&rect, &rect),
        Err(Error::Shape(_))
    ));
    let mut an = a.clone();
    an[(3, 1)] = f64::NAN;
    let b5 = Mat::<f64>::identity(5, 5);
    assert!(matches!(
        crate::eigh_generalized(&an, &b5),
        Err(Error::NonFinite { row: 3, col: 1, .. })
    ));
    let mut bn = b5.clone();
    bn[(4, 2)] = f64::INFINITY;
    let e = crate::eigh_generalized(&a, &bn).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.starts_with("B:")),
        "{e}"
    );
    // The strict upper triangles are never read.
    let (mut au, mut bu) = (a.clone(), b5.clone());
    au[(0, 4)] = f64::NAN;
    bu[(1, 3)] = f64::NAN;
    let eig = crate::eigh_generalized(&au, &bu).unwrap();
    let plain = crate::eigvalsh(&a).unwrap();
    assert!(eig
        .values
        .iter()
        .zip(&plain)
        .all(|(x, y)| (x - y).abs() < 1e-13));
}

#[test]
fn order_zero_is_empty() {
    let z = Mat::<f64>::zeros(0, 0);
    let eig = crate::eigh_generalized(&z, &z).unwrap();
    assert!(eig.values.is_empty() && eig.vectors.ncols() == 0);
}

/// Negative controls: without the edges that order sy2sb after sygst, the
/// back-substitution after the EVD, or the tile tasks of potrf and sygst
/// after the tiles they read (a diagonal factor, a panel, a trailing update,
/// for each kind of reduction), `check_races` reports a race.
#[test]
fn dropping_the_stage_edges_is_a_race() {
    let (a, b) = (a_family::<f64>(0, 40, 1), b_family::<f64>(2, 40, 2));
    for (from, what, problem) in [
        ("sygst.done", "sygst -> sy2sb", Problem::AxLambdaBx),
        ("evd.complete", "evd -> back", Problem::AxLambdaBx),
        ("potrf[0]", "potrf diagonal -> trsm", Problem::AxLambdaBx),
        (
            "potrf.trsm[2,0]",
            "potrf trsm -> update",
            Problem::AxLambdaBx,
        ),
        ("sygst.sygs2[0]", "sygs2 -> panel", Problem::AxLambdaBx),
        (
            "sygst.trsm[1,0]",
            "panel solve -> next row",
            Problem::AxLambdaBx,
        ),
        ("sygst.syr2k[1,1,0]", "syr2k -> sygs2", Problem::AxLambdaBx),
        ("sygst.trmm[2,0]", "trmm -> gemm", Problem::BAxLambdaX),
        ("sygst.syr2k[1,0,2]", "syr2k -> syr2k", Problem::ABxLambdaX),
    ] {
        let mut opts = GeneralizedOptions::new(problem);
        opts.tile = 10;
        let built = sygv_graph(a.as_ref(), b.as_ref(), EvdJob::Vectors, &opts).unwrap();
        let mut g = built.graph;
        let doomed: Vec<_> = g
            .edges()
            .map(|(u, v)| (g.task_id(u).unwrap(), g.task_id(v).unwrap()))
            .filter(|&(u, _)| g.name(u) == from)
            .collect();
        assert!(!doomed.is_empty(), "{what}");
        for (u, v) in doomed {
            assert!(g.remove_edge(u, v));
        }
        assert!(
            matches!(g.check_races(), Err(Error::Race { .. })),
            "dropping {what} was not caught"
        );
    }
}
