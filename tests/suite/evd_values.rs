//! Two-stage symmetric eigenvalues: accuracy against faer, the stages' own
//! invariants, bitwise reproducibility across schedules, races, bad input.

use crate::common;

use common::{bits, reference};
use eigenflow::gallery::{self, Family};
use eigenflow::graph::TaskGraph;
use eigenflow::linalg::back_transform::q1::form_q1;
use eigenflow::linalg::band::sb2st::sb2st_reference;
use eigenflow::linalg::band::sy2sb::{sy2sb_reference, Sy2sbFactors};
use eigenflow::linalg::tridiagonal::sterf::sterf;
use eigenflow::matrix::SymBand;
use eigenflow::pipeline::evd::evd_graph;
use eigenflow::pipeline::evd::{sb2st, sy2sb, Band, Sb2stGrain};
use eigenflow::pipeline::{eigh, EvdJob, EvdOptions};
use eigenflow::runtime::Runtime;
use eigenflow::{Error, Scalar};
use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par};

/// max |lambda - lambda_ref| / (n eps ||A||_2), with ||A||_2 = max |lambda_ref|.
fn error_ratio<T: Scalar>(got: &[T], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let n = want.len().max(1) as f64;
    let norm = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let err = got
        .iter()
        .zip(want)
        .fold(0.0f64, |m, (g, w)| m.max((g.f64() - w).abs()));
    if norm == 0.0 {
        return if err == 0.0 { 0.0 } else { f64::INFINITY };
    }
    err / (n * T::EPS.f64() * norm)
}

/// The constant c in max|lambda - lambda_ref| <= c n eps ||A||_2.
const C: f64 = 5.0;

fn opts(b: usize) -> EvdOptions {
    let mut o = EvdOptions::auto();
    o.one_stage_below = 1; // the two-stage graph (tests/evd_one_stage.rs covers the other path)
    o.bandwidth = b;
    o.tile = 2 * b;
    o.sweep_group = 3;
    o.step_chunk = 4;
    o
}

fn check_families<T: Scalar>() {
    let rt = Runtime::builder().threads(2).build();
    let mut worst = (0.0, String::new());
    for family in Family::ALL {
        for &(n, b) in &[
            (0, 8),
            (1, 8),
            (2, 8),
            (3, 8),
            (8, 8),
            (9, 8),
            (17, 8),
            (200, 8),
            (517, 16),
        ] {
            let a: Mat<T> = family.generate(n, 11);
            let want = reference(a.as_ref());
            // The automatic tridiagonal solver, then each one forced: dsterf's
            // QL/QR and the values-only divide and conquer.
            for dc_from in [0, usize::MAX, 1] {
                let mut o = opts(b);
                o.values_dc_from = dc_from;
                let eig = eigh(a.as_ref(), EvdJob::Values, &o, &rt).unwrap();
                let r = error_ratio(&eig.values, &want);
                assert!(
                    eig.values.windows(2).all(|w| w[0] <= w[1]),
                    "{} n={n}: not ascending",
                    family.name()
                );
                assert!(
                    r <= C,
                    "{} n={n} b={b} {} values_dc_from={dc_from}: ratio {r}",
                    family.name(),
                    T::NAME
                );
                if r > worst.0 {
                    worst = (r, format!("{} n={n}", family.name()));
                }
            }
        }
    }
    eprintln!(
        "{}: worst eigenvalue ratio {:.3} ({})",
        T::NAME,
        worst.0,
        worst.1
    );
}

#[test]
fn eigenvalues_match_faer_on_all_families_f64() {
    check_families::<f64>();
}

#[test]
fn eigenvalues_match_faer_on_all_families_f32() {
    check_families::<f32>();
}

#[test]
fn eigenvalues_match_faer_across_bandwidths_and_at_1024() {
    let rt = Runtime::builder().threads(2).build();
    let a: Mat<f64> = gallery::random_symmetric_gaussian(517, 3);
    let want = reference(a.as_ref());
    for b in [8, 16, 32, 64, 128] {
        for tile in [b, 4 * b] {
            let mut o = EvdOptions::auto();
            o.one_stage_below = 1;
            o.bandwidth = b;
            o.tile = tile;
            let eig = eigh(a.as_ref(), EvdJob::Values, &o, &rt).unwrap();
            let r = error_ratio(&eig.values, &want);
            assert!(r <= C, "b={b} tile={tile}: ratio {r}");
        }
    }
    for family in [
        Family::UniformSymmetric,
        Family::Geometric { log10_cond: 15 },
        Family::GluedWilkinson,
    ] {
        let a: Mat<f64> = family.generate(1024, 5);
        let eig = eigh(a.as_ref(), EvdJob::Values, &EvdOptions::default(), &rt).unwrap();
        let r = error_ratio(&eig.values, &reference(a.as_ref()));
        assert!(r <= C, "{} n=1024: ratio {r}", family.name());
        let a32: Mat<f32> = family.generate(1024, 5);
        let eig = eigh(a32.as_ref(), EvdJob::Values, &EvdOptions::default(), &rt).unwrap();
        let r = error_ratio(&eig.values, &reference(a32.as_ref()));
        assert!(r <= C, "{} n=1024 f32: ratio {r}", family.name());
    }
}

/// Runs stage 1 alone as a graph and returns the reduced matrix and its factors.
fn run_stage1(a: &Mat<f64>, b: usize, nb: usize, threads: usize) -> (Mat<f64>, Sy2sbFactors<f64>) {
    let mut g = TaskGraph::new();
    let s1 = sy2sb(&mut g, a.clone(), b, nb).unwrap();
    g.check_races().unwrap();
    Runtime::builder().threads(threads).build().run(g).unwrap();
    drop(s1.band);
    s1.reflectors.into_parts().unwrap()
}

#[test]
fn stage1_graph_gives_a_band_similar_to_a() {
    for &(n, b, nb) in &[
        (1, 4, 8),
        (5, 4, 4),
        (9, 4, 8),
        (100, 8, 16),
        (257, 8, 32),
        (300, 32, 64),
    ] {
        let a: Mat<f64> = gallery::random_symmetric_uniform(n, 7);
        let (reduced, factors) = run_stage1(&a, b, nb, 2);
        // The DAG computes exactly what the sequential reference computes.
        let mut seq = a.clone();
        sy2sb_reference(seq.as_mut(), b, nb);
        for j in 0..n {
            for i in j..n {
                assert_eq!(
                    reduced[(i, j)].to_bits(),
                    seq[(i, j)].to_bits(),
                    "n={n} ({i},{j})"
                );
            }
        }
        // B = band of the result, exactly zero outside; Q1^T A Q1 = B.
        let band = SymBand::from_dense_lower(reduced.as_ref(), b).to_dense();
        for j in 0..n {
            for i in 0..n {
                if i.abs_diff(j) > b {
                    assert_eq!(band[(i, j)], 0.0);
                }
            }
        }
        let q1 = form_q1(reduced.as_ref(), &factors);
        let full = Mat::from_fn(n, n, |i, j| if i >= j { a[(i, j)] } else { a[(j, i)] });
        let mut aq = Mat::<f64>::zeros(n, n);
        matmul(
            aq.as_mut(),
            Accum::Replace,
            full.as_ref(),
            q1.as_ref(),
            1.0,
            Par::Seq,
        );
        let mut r = band.clone();
        matmul(
            r.as_mut(),
            Accum::Add,
            q1.transpose(),
            aq.as_ref(),
            -1.0,
            Par::Seq,
        );
        let ratio = r.norm_l2() / (n as f64 * full.norm_l2().max(f64::MIN_POSITIVE) * f64::EPSILON);
        assert!(ratio < 30.0, "n={n} b={b}: ||Q1^T A Q1 - B|| ratio {ratio}");
        let mut o = Mat::<f64>::identity(n, n);
        matmul(
            o.as_mut(),
            Accum::Add,
            q1.transpose(),
            q1.as_ref(),
            -1.0,
            Par::Seq,
        );
        let orth = o.norm_l2() / (n as f64 * f64::EPSILON);
        assert!(orth < 30.0, "n={n}: orthogonality ratio {orth}");
    }
}

#[test]
fn stage2_graph_leaves_an_exact_tridiagonal_with_the_bands_eigenvalues() {
    for &(n, b, fine) in &[
        (3, 2, true),
        (40, 3, true),
        (100, 8, false),
        (257, 8, true),
        (300, 16, false),
    ] {
        let dense: Mat<f64> = gallery::band_random(n, b, 9);
        let band = SymBand::from_dense_lower(dense.as_ref(), b);
        let mut g = TaskGraph::new();
        let grain = if fine {
            Sb2stGrain::Fine
        } else {
            Sb2stGrain::Grouped {
                sweeps: 4,
                steps: 5,
            }
        };
        let input = Band::from_sym_band(band.clone(), b).unwrap();
        let s2 = sb2st(&mut g, input, grain, false).unwrap();
        g.check_races().unwrap();
        Runtime::builder().threads(2).build().run(g).unwrap();
        let out = s2.tridiagonal.into_band().unwrap();
        assert!(out.bandwidth_used() <= 1, "n={n}: not tridiagonal");
        let mut seq = band.clone();
        sb2st_reference(&mut seq, b, None);
        assert!(
            out.as_slice()
                .iter()
                .zip(seq.as_slice())
                .all(|(x, y)| x.to_bits() == y.to_bits()),
            "n={n}: graph differs from the sequential sweep order"
        );
        let (mut d, mut e) = out.tridiagonal();
        sterf(&mut d, &mut e).unwrap();
        let r = error_ratio(&d, &reference(dense.as_ref()));
        assert!(r <= C, "n={n}: ratio {r}");
    }
}

#[test]
fn eigenvalues_are_bitwise_identical_across_schedules_and_grains() {
    let a: Mat<f64> = gallery::random_symmetric_uniform(300, 21);
    let base = opts(8);
    let first = eigh(
        a.as_ref(),
        EvdJob::Values,
        &base,
        &Runtime::builder().threads(1).build(),
    )
    .unwrap();
    let want = bits(&first.values);
    for threads in [1, 2, 4] {
        for shuffle in [None, Some(1), Some(2), Some(3)] {
            let rt = Runtime::builder().threads(threads).shuffle(shuffle).build();
            let got = eigh(a.as_ref(), EvdJob::Values, &base, &rt).unwrap();
            assert_eq!(
                bits(&got.values),
                want,
                "{threads} threads, shuffle {shuffle:?}"
            );
        }
    }
    let rt = Runtime::builder().threads(2).shuffle(Some(9)).build();
    for (fine, g, c) in [
        (true, 1, 1),
        (false, 1, 1),
        (false, 2, 3),
        (false, 7, 2),
        (false, 16, 16),
    ] {
        let mut o = base.clone();
        o.fine_stage2 = fine;
        o.sweep_group = g;
        o.step_chunk = c;
        let got = eigh(a.as_ref(), EvdJob::Values, &o, &rt).unwrap();
        assert_eq!(bits(&got.values), want, "fine={fine} G={g} C={c}");
    }
}

/// The whole values graph is race free at both grains (the lag-2 negative
/// control lives with the stage builders, in the crate's unit tests).
#[test]
fn whole_graph_is_race_free() {
    let a: Mat<f64> = gallery::random_symmetric_uniform(90, 4);
    for fine in [true, false] {
        let mut o = opts(4);
        o.fine_stage2 = fine;
        evd_graph(a.as_ref(), EvdJob::Values, &o)
            .unwrap()
            .graph
            .check_races()
            .unwrap();
    }
}

/// A problem that does not fit is refused before anything is allocated: the
/// input is a 400000 x 400000 view of one number (strides 0), so the copy
/// `eigh` would make alone needs 1.2 TiB.
#[test]
fn too_large_is_refused_before_allocating() {
    if eigenflow::sysinfo::available_memory_bytes().is_none() {
        eprintln!("available memory unknown here: nothing to check against");
        return;
    }
    let one = [1.0f64];
    let n = 400_000;
    // SAFETY: every entry of the view is the one element of `one` (strides 0).
    let a = unsafe { faer::MatRef::from_raw_parts(one.as_ptr(), n, n, 0, 0) };
    let rt = Runtime::builder().threads(2).build();
    for job in [EvdJob::Values, EvdJob::Vectors] {
        match eigh(a, job, &EvdOptions::auto(), &rt) {
            Err(Error::OutOfMemory { .. }) => {}
            other => panic!("expected OutOfMemory, got {:?}", other.map(|_| ())),
        }
    }
}

#[test]
fn bad_input_gets_a_clear_error() {
    let rt = Runtime::builder().threads(2).build();
    let o = EvdOptions::default();
    let rect = Mat::<f64>::zeros(3, 4);
    assert!(matches!(
        eigh(rect.as_ref(), EvdJob::Values, &o, &rt),
        Err(Error::Shape(_))
    ));

    let mut a: Mat<f64> = gallery::random_symmetric_uniform(50, 1);
    a[(7, 3)] = f64::NAN;
    match eigh(a.as_ref(), EvdJob::Values, &o, &rt) {
        Err(Error::NonFinite { row: 7, col: 3, .. }) => {}
        other => panic!("expected NonFinite at (7, 3), got {other:?}"),
    }
    let mut a: Mat<f64> = gallery::random_symmetric_uniform(50, 1);
    a[(20, 10)] = f64::INFINITY;
    assert!(matches!(
        eigh(a.as_ref(), EvdJob::Values, &o, &rt),
        Err(Error::NonFinite {
            row: 20,
            col: 10,
            ..
        })
    ));
    // The strict upper triangle is never read.
    let mut a: Mat<f64> = gallery::random_symmetric_uniform(50, 1);
    let want = reference(a.as_ref());
    a[(3, 7)] = f64::NAN;
    let eig = eigh(a.as_ref(), EvdJob::Values, &o, &rt).unwrap();
    assert!(error_ratio(&eig.values, &want) <= C);

    let empty = Mat::<f64>::zeros(0, 0);
    assert!(eigh(empty.as_ref(), EvdJob::Values, &o, &rt)
        .unwrap()
        .values
        .is_empty());
}

#[test]
fn tiny_and_huge_matrices_are_scaled_safely() {
    let rt = Runtime::builder().threads(2).build();
    let a: Mat<f64> = gallery::random_symmetric_uniform(120, 8);
    let want = reference(a.as_ref());
    for s in [1e-300, 1e-160, 1e160, 1e300] {
        let scaled = Mat::from_fn(120, 120, |i, j| a[(i, j)] * s);
        let eig = eigh(scaled.as_ref(), EvdJob::Values, &opts(8), &rt).unwrap();
        let unscaled: Vec<f64> = eig.values.iter().map(|x| x / s).collect();
        assert!(unscaled.iter().all(|x| x.is_finite()), "scale {s}");
        let r = error_ratio(&unscaled, &want);
        assert!(r <= C, "scale {s}: ratio {r}");
    }
}

/// Issue 58: a NaN in the matrix given to a hand-built pipeline (sy2sb,
/// sb2st, sterf) was reported by the tridiagonal solver at (1, 1), the
/// tridiagonal's position; the stage that takes the matrix reports it where
/// it is, when the graph is built.
#[test]
fn nan_fed_to_a_hand_built_pipeline_is_reported_where_it_is() {
    use eigenflow::pipeline::evd::sterf as sterf_stage;
    let n = 300;
    for (i, j, bad) in [
        (200, 100, f64::NAN),
        (299, 0, f64::INFINITY),
        (7, 7, f64::NAN),
    ] {
        let mut a: Mat<f64> = gallery::random_symmetric_uniform(n, 5);
        a[(i, j)] = bad;
        let run = || -> eigenflow::Result<Vec<f64>> {
            let mut g = TaskGraph::new();
            let s1 = sy2sb(&mut g, a.clone(), 16, 32)?;
            let s2 = sb2st(&mut g, s1.band, Sb2stGrain::Fine, false)?;
            let values = sterf_stage(&mut g, s2.tridiagonal)?;
            Runtime::builder().threads(2).build().run(g)?;
            values.get()
        };
        let err = run().unwrap_err();
        assert!(
            matches!(&err, Error::NonFinite { row, col, .. } if (*row, *col) == (i, j)),
            "({i}, {j}): {err}"
        );
    }
    // Only the lower triangle is read: a NaN above it changes nothing.
    let mut a: Mat<f64> = gallery::random_symmetric_uniform(n, 5);
    a[(100, 200)] = f64::NAN;
    let mut g = TaskGraph::new();
    let s1 = sy2sb(&mut g, a, 16, 32).unwrap();
    drop(s1);
}
