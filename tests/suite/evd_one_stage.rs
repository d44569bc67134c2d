//! The one-stage path of `eigh` (no task graph, below
//! `EvdOptions::one_stage_below`): LAPACK-style ratios against faer on every
//! gallery family, both triangles, extreme scalings, refused input, and the
//! automatic crossover reached from both sides through the public `eigh`.

use crate::common;

use common::{reference, symmetric_f64, to_f64};
use eigenflow::gallery::{self, Family};
use eigenflow::pipeline::{
    eigh, eigh_owned, one_stage_below_auto, EvdJob, EvdOptions, ONE_STAGE_BELOW_VALUES,
    ONE_STAGE_BELOW_VALUES_F32, ONE_STAGE_BELOW_VECTORS, ONE_STAGE_BELOW_VECTORS_IN_PLACE_Q2,
};
use eigenflow::runtime::Runtime;
use eigenflow::{Error, Scalar, Side};
use faer::Mat;

const SIZES: [usize; 9] = [0, 1, 2, 3, 8, 31, 64, 100, 257];

/// Options that force the one-stage path at every order.
fn one_stage(side: Side) -> EvdOptions {
    let mut o = EvdOptions::auto();
    o.one_stage_below = usize::MAX;
    o.side = side;
    o
}

use common::eig_ratios_full as ratios;

/// max |lambda - lambda_faer| / (n eps max |lambda_faer|) (the plain error
/// when the spectrum is zero).
fn value_ratio<T: Scalar>(got: &[T], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let n = want.len().max(1) as f64;
    let norm = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let err = got
        .iter()
        .zip(want)
        .fold(0.0f64, |m, (x, y)| m.max((x.f64() - y).abs()));
    if norm > 0.0 {
        err / (n * T::EPS.f64() * norm)
    } else {
        err
    }
}

/// `full` stored in its `side` triangle, the other one NaN (never read).
fn stored<T: Scalar>(full: &Mat<T>, side: Side) -> Mat<T> {
    Mat::from_fn(full.nrows(), full.ncols(), |i, j| {
        let keep = match side {
            Side::Lower => i >= j,
            Side::Upper => i <= j,
        };
        if keep {
            full[(i, j)]
        } else {
            T::nan()
        }
    })
}

fn check_families<T: Scalar>() {
    let rt = Runtime::builder().threads(2).build();
    let mut worst = (0.0f64, 0.0f64, 0.0f64);
    for family in Family::ALL {
        for n in SIZES {
            let gen: Mat<T> = family.generate(n, 9);
            // The generators fill the lower triangle; symmetrise so that both
            // triangles hold the same matrix.
            let full =
                Mat::<T>::from_fn(n, n, |i, j| if i >= j { gen[(i, j)] } else { gen[(j, i)] });
            let a64 = symmetric_f64(full.as_ref());
            let want = reference(full.as_ref());
            for side in [Side::Lower, Side::Upper] {
                let input = stored(&full, side);
                let eig = eigh(input.as_ref(), EvdJob::Vectors, &one_stage(side), &rt).unwrap();
                assert!(eig.report.tasks.is_empty(), "one-stage path runs no graph");
                let v = eig.vectors.as_ref().expect("vectors");
                assert_eq!((v.nrows(), v.ncols()), (n, n));
                assert!(eig.values.windows(2).all(|w| w[0] <= w[1]), "ascending");
                let (res, orth) = ratios(a64.as_ref(), &eig.values, v.as_ref());
                let val = value_ratio(&eig.values, &want);
                let what = format!("{} n={n} {} {side:?}", family.name(), T::NAME);
                assert!(
                    res < 30.0 && orth < 30.0,
                    "{what}: residual {res}, orthogonality {orth}"
                );
                assert!(val <= 5.0, "{what}: eigenvalue ratio {val}");
                let values = eigh(input.as_ref(), EvdJob::Values, &one_stage(side), &rt).unwrap();
                assert!(values.vectors.is_none());
                let mut valv = value_ratio(&values.values, &want);
                assert!(valv <= 5.0, "{what}: values-only ratio {valv}");
                // The values-only divide and conquer at every order (the
                // automatic choice takes it from VALUES_DC_FROM on).
                let mut dc = one_stage(side);
                dc.values_dc_from = 1;
                let by_dc = eigh(input.as_ref(), EvdJob::Values, &dc, &rt).unwrap();
                let r = value_ratio(&by_dc.values, &want);
                assert!(r <= 5.0, "{what}: values-only D&C ratio {r}");
                valv = valv.max(r);
                worst = (
                    worst.0.max(res),
                    worst.1.max(orth),
                    worst.2.max(val.max(valv)),
                );
            }
        }
    }
    eprintln!(
        "one-stage {}: worst residual {:.3}, orthogonality {:.3}, eigenvalues {:.3}",
        T::NAME,
        worst.0,
        worst.1,
        worst.2
    );
}

#[test]
fn one_stage_passes_lapack_ratios_on_all_families_f64() {
    check_families::<f64>();
}

#[test]
fn one_stage_passes_lapack_ratios_on_all_families_f32() {
    check_families::<f32>();
}

/// Entries near 1e+300 and 1e-300 (f64), 1e+30 and 1e-30 (f32): the input is
/// scaled into the safe range and the values scaled back; the ratios are
/// measured against faer on the same matrix scaled by an exact power of two.
fn check_scaling<T: Scalar>(exponents: &[i32]) {
    let rt = Runtime::builder().threads(1).build();
    for &k in exponents {
        for n in [3usize, 40, 100] {
            // A power of two: scaling by it is exact, so the reference is the
            // unit-scale matrix's eigenvalues times s.
            let s = 2f64.powi(k);
            let unit: Mat<T> = gallery::random_symmetric_gaussian(n, 4);
            let a = Mat::<T>::from_fn(n, n, |i, j| T::of(unit[(i, j)].f64() * s));
            let want: Vec<f64> = reference(unit.as_ref()).iter().map(|x| x * s).collect();
            for job in [EvdJob::Values, EvdJob::Vectors] {
                let eig = eigh(a.as_ref(), job, &one_stage(Side::Lower), &rt).unwrap();
                assert!(
                    eig.values.iter().all(|x| x.is_finite()),
                    "2^{k} n={n}: finite"
                );
                let val = value_ratio(&eig.values, &want);
                assert!(
                    val <= 5.0,
                    "2^{k} n={n} {job:?} {}: eigenvalue ratio {val}",
                    T::NAME
                );
                if let Some(v) = eig.vectors {
                    let unit64 = symmetric_f64(unit.as_ref());
                    let lam: Vec<f64> = eig.values.iter().map(|x| x.f64() / s).collect();
                    let (res, orth) = ratios(unit64.as_ref(), &lam, to_f64(v.as_ref()).as_ref());
                    // `lam` is in f64, the vectors came from T: measure with T's eps.
                    let scale = f64::EPSILON / 2.0 / T::EPS.f64();
                    let (res, orth) = (res * scale, orth * scale);
                    assert!(
                        res < 30.0 && orth < 30.0,
                        "2^{k} n={n} {}: residual {res}, orthogonality {orth}",
                        T::NAME
                    );
                }
            }
        }
    }
}

#[test]
fn extreme_scalings_f64() {
    // 2^996 ~ 6.7e299, 2^-997 ~ 7.5e-301.
    check_scaling::<f64>(&[996, -997, 500, -500]);
}

#[test]
fn extreme_scalings_f32() {
    // 2^100 ~ 1.3e30, 2^-100 ~ 7.9e-31.
    check_scaling::<f32>(&[100, -100, 60, -60]);
}

#[test]
fn non_finite_input_is_refused_with_its_position() {
    let rt = Runtime::builder().threads(1).build();
    for (side, (r, c)) in [(Side::Lower, (7usize, 3usize)), (Side::Upper, (3, 7))] {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let mut a: Mat<f64> = gallery::random_symmetric_uniform(20, 2);
            a[(r, c)] = bad;
            for job in [EvdJob::Values, EvdJob::Vectors] {
                match eigh(a.as_ref(), job, &one_stage(side), &rt) {
                    Err(Error::NonFinite { row, col, .. }) => assert_eq!((row, col), (r, c)),
                    other => panic!(
                        "{side:?} {bad}: expected NonFinite, got {:?}",
                        other.map(|_| ())
                    ),
                }
                match eigh_owned(a.clone(), job, &one_stage(side), &rt) {
                    Err(Error::NonFinite { row, col, .. }) => assert_eq!((row, col), (r, c)),
                    other => panic!(
                        "owned {side:?} {bad}: expected NonFinite, got {:?}",
                        other.map(|_| ())
                    ),
                }
            }
            // The other triangle is not read: garbage there is no error.
            let mut other_side = a.clone();
            other_side[(r, c)] = 0.0;
            other_side[(c, r)] = bad;
            assert!(eigh(other_side.as_ref(), EvdJob::Values, &one_stage(side), &rt).is_ok());
        }
    }
    let rect = Mat::<f64>::zeros(3, 4);
    assert!(matches!(
        eigh(rect.as_ref(), EvdJob::Values, &one_stage(Side::Lower), &rt),
        Err(Error::Shape(_))
    ));
}

#[test]
fn owned_form_matches_the_borrowed_one_bitwise() {
    let rt = Runtime::builder().threads(1).build();
    let a: Mat<f64> = gallery::random_symmetric_uniform(77, 6);
    for side in [Side::Lower, Side::Upper] {
        let full = Mat::<f64>::from_fn(77, 77, |i, j| if i >= j { a[(i, j)] } else { a[(j, i)] });
        let input = stored(&full, side);
        let before: Vec<u64> = input
            .col_iter()
            .flat_map(|c| c.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
            .collect();
        let x = eigh(input.as_ref(), EvdJob::Vectors, &one_stage(side), &rt).unwrap();
        let after: Vec<u64> = input
            .col_iter()
            .flat_map(|c| c.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
            .collect();
        assert_eq!(before, after, "the input is not modified");
        let y = eigh_owned(input, EvdJob::Vectors, &one_stage(side), &rt).unwrap();
        assert_eq!(x.values, y.values);
        assert!(x.vectors.unwrap() == y.vectors.unwrap());
    }
}

/// The automatic choice through the public entry points: just below the
/// values crossover no graph runs, at the crossover the graph does, and both
/// are accurate. `pipeline::eigh` with the automatic options on the default
/// runtime is what `eigenflow::eigvalsh` and `eigh` call. The vectors crossovers
/// (n = 4608, 3072) are checked as decisions only: two solves there would cost the
/// test a minute, and both paths are solved with vectors by the other tests
/// (`eigenflow::eigh` in `tests/quickstart.rs`).
#[test]
fn automatic_crossover_from_both_sides() {
    let rt = eigenflow::default_runtime();
    let x = ONE_STAGE_BELOW_VALUES;
    for n in [x - 1, x] {
        let a: Mat<f64> = gallery::random_symmetric_gaussian(n, 8);
        let eig = eigh(a.as_ref(), EvdJob::Values, &EvdOptions::auto(), rt).unwrap();
        assert_eq!(eig.report.tasks.is_empty(), n < x, "values n={n}: path");
        let want = reference(a.as_ref());
        let val = value_ratio(&eig.values, &want);
        assert!(val <= 5.0, "values n={n}: eigenvalue ratio {val}");
        let w = eigenflow::eigvalsh(&a).unwrap();
        assert!(value_ratio(&w, &want) <= 5.0, "eigvalsh n={n}");
    }
    let opts = EvdOptions::auto();
    // f64 takes the lower crossover where the CPU runs the in-place Q2
    // kernel with AVX-512 on an AMD CPU; f32 keeps the other one (measured,
    // see the constants).
    use eigenflow::linalg::back_transform::chain_strip::Isa;
    let x64 = one_stage_below_auto::<f64>(EvdJob::Vectors);
    if Isa::detect() == Some(Isa::Avx512) {
        assert!([ONE_STAGE_BELOW_VECTORS_IN_PLACE_Q2, ONE_STAGE_BELOW_VECTORS].contains(&x64));
    } else {
        assert_eq!(x64, ONE_STAGE_BELOW_VECTORS);
    }
    assert_eq!(
        one_stage_below_auto::<f32>(EvdJob::Vectors),
        ONE_STAGE_BELOW_VECTORS
    );
    assert_eq!(
        one_stage_below_auto::<f64>(EvdJob::Values),
        ONE_STAGE_BELOW_VALUES
    );
    let x = ONE_STAGE_BELOW_VECTORS;
    assert!(opts.one_stage_for::<f32>(x - 1, EvdJob::Vectors));
    assert!(!opts.one_stage_for::<f32>(x, EvdJob::Vectors));
    assert!(opts.one_stage_for::<f64>(x64 - 1, EvdJob::Vectors));
    assert!(!opts.one_stage_for::<f64>(x64, EvdJob::Vectors));
    let x = ONE_STAGE_BELOW_VALUES_F32;
    assert!(opts.one_stage_for::<f32>(x - 1, EvdJob::Values));
    assert!(!opts.one_stage_for::<f32>(x, EvdJob::Values));
}

/// The automatic path, and so the bits, do not depend on the runtime's
/// thread count: on both sides of the values-only crossover, and at an order
/// where one thread would be faster on the other path (1280 on the 2-core
/// Xeon of `ONE_STAGE_BELOW_VALUES`'s table), 1, 2 and 3 threads give the
/// same eigenvalues bit for bit and take the same path.
#[test]
fn automatic_values_path_is_the_same_on_any_thread_count() {
    let x = ONE_STAGE_BELOW_VALUES;
    for n in [1280, x - 1, x] {
        let a: Mat<f64> = gallery::random_symmetric_uniform(n, 21);
        let runs: Vec<_> = [1, 2, 3]
            .map(|t| {
                let rt = Runtime::builder().threads(t).build();
                eigh(a.as_ref(), EvdJob::Values, &EvdOptions::auto(), &rt).unwrap()
            })
            .into_iter()
            .collect();
        for (t, r) in runs.iter().enumerate().skip(1) {
            assert_eq!(
                r.report.tasks.is_empty(),
                runs[0].report.tasks.is_empty(),
                "n={n}: {} threads took another path than 1",
                t + 1
            );
            let same = r
                .values
                .iter()
                .zip(&runs[0].values)
                .all(|(p, q)| p.to_bits() == q.to_bits());
            assert!(same, "n={n}: {} threads differ from 1 in the bits", t + 1);
        }
    }
}

#[test]
fn explicit_crossover_forces_either_path() {
    let rt = Runtime::builder().threads(2).build();
    let a: Mat<f64> = gallery::random_symmetric_uniform(60, 3);
    let mut o = EvdOptions::auto();
    for (below, graph) in [(1usize, true), (60, true), (61, false), (usize::MAX, false)] {
        o.one_stage_below = below;
        let eig = eigh(a.as_ref(), EvdJob::Vectors, &o, &rt).unwrap();
        assert_eq!(
            !eig.report.tasks.is_empty(),
            graph,
            "one_stage_below = {below}"
        );
        let (res, orth) = ratios(
            symmetric_f64(a.as_ref()).as_ref(),
            &eig.values,
            eig.vectors.unwrap().as_ref(),
        );
        assert!(
            res < 30.0 && orth < 30.0,
            "one_stage_below = {below}: residual {res}, orthogonality {orth}"
        );
    }
}

/// The one-stage path splits its SYR2K updates, the top of its divide and
/// conquer and `ormtr` in halves fixed by the order, run as tasks when the
/// runtime has several threads: the same bits whatever the runtime's threads.
/// At n = 300 every split is taken (the first trailing SYR2K has 268 rows);
/// at n = 600 the panels' `symv` splits too (`SYMV_SPLIT_MIN` = 512).
#[test]
fn one_stage_is_bitwise_identical_across_thread_counts() {
    for n in [150usize, 300, 600] {
        let a: Mat<f64> = gallery::random_symmetric_uniform(n, 12);
        for job in [EvdJob::Values, EvdJob::Vectors] {
            let solve = |threads: usize| {
                let rt = Runtime::builder().threads(threads).build();
                let e = eigh(a.as_ref(), job, &one_stage(Side::Lower), &rt).unwrap();
                let mut bits: Vec<u64> = e.values.iter().map(|x| x.to_bits()).collect();
                if let Some(v) = e.vectors {
                    bits.extend(v.col_iter().flat_map(|c| c.iter().map(|x| x.to_bits())));
                }
                bits
            };
            let one = solve(1);
            for threads in [2, 4] {
                assert!(
                    solve(threads) == one,
                    "n={n} {job:?}: {threads} threads differ from 1"
                );
            }
        }
    }
}

/// The closed form of the 2 x 2 order (one Jacobi rotation) against faer on
/// the cases a rotation can get wrong: a diagonal input in either order, equal
/// diagonal entries, an off-diagonal far below or above the diagonal, signs,
/// extreme scales, and many random matrices; both precisions.
fn check_2x2<T: Scalar>() {
    let rt = Runtime::builder().threads(1).build();
    let mut cases: Vec<[f64; 3]> = vec![
        [1.0, 0.0, 2.0],
        [2.0, 0.0, 1.0],
        [-3.0, 0.0, -3.0],
        [1.0, 2.0, 1.0],
        [0.0, 1.0, 0.0],
        [1.0, 1e-30, 1.0 + 1e-15],
        [1e-20, 1.0, -1e-20],
        [1.0, 1e-200, -1.0],
        [0.0, 0.0, 0.0],
        [5.0, -7.0, 3.0],
    ];
    let mut rng = gallery::Rng::new(11);
    for _ in 0..500 {
        let e = (rng.uniform() * 40.0 - 20.0).round();
        let s = 2f64.powf(e);
        cases.push([
            rng.uniform() * 2.0 - 1.0,
            (rng.uniform() * 2.0 - 1.0) * s,
            (rng.uniform() * 2.0 - 1.0) * s * s,
        ]);
    }
    for scale in [1.0, 2f64.powi(-60), 2f64.powi(60)] {
        for &[p, q, r] in &cases {
            let a = Mat::<T>::from_fn(2, 2, |i, j| T::of(scale * [[p, q], [q, r]][i][j]));
            let a64 = symmetric_f64(a.as_ref());
            let want = reference(a.as_ref());
            let eig = eigh(a.as_ref(), EvdJob::Vectors, &EvdOptions::auto(), &rt).unwrap();
            let v = eig.vectors.as_ref().expect("vectors");
            let (res, orth) = ratios(a64.as_ref(), &eig.values, v.as_ref());
            let val = value_ratio(&eig.values, &want);
            let what = format!("{} [[{p:e}, {q:e}], [{q:e}, {r:e}]] x {scale:e}", T::NAME);
            assert!(eig.values[0] <= eig.values[1], "{what}: ascending");
            assert!(
                res < 30.0 && orth < 30.0,
                "{what}: residual {res}, orthogonality {orth}"
            );
            assert!(val <= 5.0, "{what}: eigenvalue ratio {val}");
            let w = eigh(a.as_ref(), EvdJob::Values, &EvdOptions::auto(), &rt).unwrap();
            assert!(w.values == eig.values, "{what}: values-only differs");
        }
    }
}

#[test]
fn two_by_two_closed_form_f64() {
    check_2x2::<f64>();
}

#[test]
fn two_by_two_closed_form_f32() {
    check_2x2::<f32>();
}

/// Issue 58: a one-stage solve run as a task of a submitted graph stops
/// between its phases when that run is cancelled, and returns the error the
/// graph path returns (`Cancelled`), instead of computing to the end (an
/// abandoned call kept burning a core). EVD with vectors and SVD with
/// vectors, cancelled while their reduction runs.
#[test]
fn one_stage_solve_stops_between_phases_when_its_run_is_cancelled() {
    use eigenflow::graph::TaskGraph;
    use eigenflow::pipeline::{svd, SvdJob, SvdOptions};
    use std::sync::{mpsc, Arc, Mutex};
    type Outcome = Arc<Mutex<Option<eigenflow::Result<()>>>>;
    let rt = Runtime::builder().threads(2).build();
    let n = 1200;
    assert!(EvdOptions::auto().one_stage_for::<f64>(n, EvdJob::Vectors));
    assert!(SvdOptions::auto().one_stage_for::<f64>(n, n, SvdJob::Vectors));
    for which in ["eigh", "svd"] {
        let a: Mat<f64> = gallery::random_symmetric_uniform(n, 11);
        let outcome: Outcome = Arc::default();
        let (started, wait) = mpsc::channel();
        let mut g = TaskGraph::new();
        let (out, inner) = (outcome.clone(), rt.clone());
        g.task("one-stage", move |_| {
            started.send(()).unwrap();
            let r = match which {
                "eigh" => eigh_owned(a, EvdJob::Vectors, &EvdOptions::auto(), &inner).map(drop),
                _ => svd(a.as_ref(), SvdJob::Vectors, &SvdOptions::auto(), &inner).map(drop),
            };
            *out.lock().unwrap() = Some(r);
            Ok(())
        });
        let handle = rt.submit(g);
        wait.recv().unwrap();
        // The reduction of order 1200 takes a good part of a second; the
        // request lands during it (or before it starts).
        handle.request_cancel();
        // The run itself may end `Ok`: its one task was running when the
        // cancel came, and no other was left to skip.
        let _ = handle.wait();
        let got = outcome.lock().unwrap().take().expect("the task ran");
        assert!(
            matches!(got, Err(Error::Cancelled)),
            "{which}: the solve went on to the end: {got:?}"
        );
    }
    // The runtime serves the next call, with the usual result.
    let b: Mat<f64> = gallery::random_symmetric_uniform(100, 3);
    let r = eigh(b.as_ref(), EvdJob::Values, &EvdOptions::auto(), &rt).unwrap();
    assert_eq!(r.values.len(), 100);
}

/// Issue 58: one rule and one message for the thread count on every path.
/// A runtime of 1025 threads used to start 1025 threads on the one-stage
/// path (refused only on the graph path), and one of 100000 threads was
/// refused on a 10 x 10 as "does not fit (195 GiB)".
#[test]
fn thread_count_out_of_range_is_refused_alike_on_every_path() {
    use eigenflow::pipeline::{svd, svd_graph, SvdJob, SvdOptions};
    use eigenflow::runtime::{check_threads, MAX_THREADS};
    let small: Mat<f64> = gallery::random_symmetric_uniform(10, 1);
    let mid: Mat<f64> = gallery::random_symmetric_uniform(300, 1);
    let want =
        |t: usize| format!("threads = {t}: the runtime runs 1 to {MAX_THREADS} CPU worker threads");
    for t in [MAX_THREADS + 1, 100_000] {
        let rt = Runtime::builder().threads(t).build();
        let mut graph_opts = EvdOptions::auto();
        graph_opts.one_stage_below = 1;
        let errors = [
            (
                "eigh one-stage 10",
                eigh(small.as_ref(), EvdJob::Vectors, &EvdOptions::auto(), &rt).map(drop),
            ),
            (
                "eigh one-stage 300",
                eigh(mid.as_ref(), EvdJob::Vectors, &EvdOptions::auto(), &rt).map(drop),
            ),
            (
                "eigh_owned",
                eigh_owned(mid.clone(), EvdJob::Values, &EvdOptions::auto(), &rt).map(drop),
            ),
            (
                "eigh graph",
                eigh(mid.as_ref(), EvdJob::Vectors, &graph_opts, &rt).map(drop),
            ),
            (
                "svd one-stage",
                svd(small.as_ref(), SvdJob::Vectors, &SvdOptions::auto(), &rt).map(drop),
            ),
            ("svd graph run", {
                let (g, _) = svd_graph(mid.as_ref(), SvdJob::Values, &SvdOptions::auto())
                    .unwrap()
                    .into_parts();
                rt.run(g).map(drop)
            }),
            ("join", rt.join(|| Ok(()), || Ok(()))),
            ("check_threads", check_threads(t).map(drop)),
        ];
        for (what, r) in errors {
            let err = r.unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument(m) if *m == want(t)),
                "{what}, {t} threads: {err}"
            );
        }
    }
    assert_eq!(check_threads(MAX_THREADS).unwrap(), MAX_THREADS);
    assert!(check_threads(0usize).is_err() && check_threads(-1i64).is_err());
}
