//! Tests of the QR pre-reduction of tall matrices (geqrf.rs): LAPACK-style
//! ratios with the path forced on and off (values and vectors, f64 and f32),
//! the race checker on the whole graph with a negative control, and bitwise
//! identical results across thread counts.

use super::super::*;
use crate::gallery;
use crate::runtime::Runtime;

fn rt(threads: usize) -> Runtime {
    Runtime::builder().threads(threads).build()
}

fn to_f64<T: Scalar>(a: MatRef<'_, T>) -> Mat<f64> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)].f64())
}

/// Options with bandwidth `b` (tile `2 b`) and the QR path forced on
/// (`qr_ratio` 1: every tall or square input) or off (infinite ratio).
fn opts(b: usize, qr: bool) -> SvdOptions {
    let mut o = SvdOptions::auto();
    o.bandwidth = b;
    o.tile = 2 * b;
    o.tile_width = 3;
    o.back_col_block = 16;
    o.qr_ratio = if qr { 1.0 } else { f64::INFINITY };
    o.one_stage_below = 1;
    o
}

/// Whether the graph has a task of the QR stage.
fn has_qr(g: &TaskGraph<'static>) -> bool {
    (0..g.len()).any(|i| g.stage_of(g.task_id(i).unwrap()) == GEQRF)
}

/// Builds, race-checks and runs the SVD graph of `a`; asserts whether the QR
/// stage is in it.
fn run<T: Scalar>(a: &Mat<T>, job: SvdJob, o: &SvdOptions, threads: usize) -> SvdFactors<T> {
    let (g, res) = svd_graph(a.as_ref(), job, o).unwrap().into_parts();
    let tall = a.nrows() as f64 >= o.qr_ratio_for(job) * a.ncols() as f64;
    assert_eq!(has_qr(&g), tall, "{} x {}", a.nrows(), a.ncols());
    g.check_races().unwrap();
    rt(threads).run(g).unwrap();
    res.into_results().unwrap()
}

/// `[values, residual, orth(U), orth(V)]` ratios (the last three 0 for
/// values only): `max |s - s_ref| / (m eps s_1)` against faer in f64,
/// `||A - U S V^T||_F / (m ||A||_F eps)`, `||U^T U - I||_F / (m eps)`,
/// `||V^T V - I||_F / (n eps)`.
fn ratios<T: Scalar>(a: &Mat<T>, job: SvdJob, o: &SvdOptions) -> [f64; 4] {
    let (m, n) = (a.nrows(), a.ncols());
    let (s, u, vt) = run(a, job, o, 2);
    let eps = T::EPS.f64();
    let af = to_f64(a.as_ref());
    let s: Vec<f64> = s.iter().map(|x| x.f64()).collect();
    let s_ref = af.singular_values().unwrap();
    let mm = m as f64;
    let values = s
        .iter()
        .zip(&s_ref)
        .fold(0.0f64, |x, (p, q)| x.max((p - q).abs()))
        / (mm * eps * s_ref[0]);
    let (Some(u), Some(vt)) = (u, vt) else {
        return [values, 0.0, 0.0, 0.0];
    };
    let (u, vt) = (to_f64(u.as_ref()), to_f64(vt.as_ref()));
    assert_eq!((u.nrows(), u.ncols(), vt.nrows(), vt.ncols()), (m, n, n, n));
    let us = Mat::from_fn(m, n, |i, j| u[(i, j)] * s[j]);
    let residual = (&us * &vt - &af).norm_l2() / (mm * af.norm_l2() * eps);
    let id = Mat::<f64>::identity(n, n);
    let orth_u = (u.transpose() * &u - &id).norm_l2() / (mm * eps);
    let orth_v = (&vt * vt.transpose() - &id).norm_l2() / (n as f64 * eps);
    [values, residual, orth_u, orth_v]
}

fn cases<T: Scalar>() -> [f64; 4] {
    let mut worst = [0.0f64; 4];
    let n = 45;
    for (i, m) in [5 * n, 3 * n, 2 * n, n + 97].into_iter().enumerate() {
        let a = gallery::random_gaussian::<T>(m, n, 70 + i as u64);
        for qr in [true, false] {
            for job in [SvdJob::Values, SvdJob::Vectors] {
                let r = ratios(&a, job, &opts(6, qr));
                assert!(
                    r.iter().all(|&x| x < 30.0),
                    "{m} x {n}, qr {qr}, {job:?}: ratios {r:?}"
                );
                for (w, x) in worst.iter_mut().zip(r) {
                    *w = w.max(x);
                }
            }
        }
    }
    worst
}

#[test]
fn tall_ratios_f64() {
    let w = cases::<f64>();
    eprintln!("qr pre-reduction f64: worst [values, residual, orth U, orth V] {w:?}");
}

#[test]
fn tall_ratios_f32() {
    let w = cases::<f32>();
    eprintln!("qr pre-reduction f32: worst [values, residual, orth U, orth V] {w:?}");
}

/// The default crossovers: 5/3 for values, 3 with vectors; a wide input goes
/// through its transpose (so a 60 x 200 matrix takes the QR path too).
#[test]
fn auto_ratio_picks_the_path() {
    let o = SvdOptions::auto();
    let (v, s) = (SvdJob::Vectors, SvdJob::Values);
    for ((m, n), job, qr) in [
        ((200, 60), v, true),
        ((60, 200), v, true),
        ((150, 60), v, false),
        ((150, 60), s, true),
        ((60, 150), s, true),
        ((99, 60), s, false),
    ] {
        let a = gallery::random_gaussian::<f64>(m, n, 5);
        let (g, _) = svd_graph(a.as_ref(), job, &o).unwrap().into_parts();
        assert_eq!(has_qr(&g), qr, "{m} x {n} {job:?}");
    }
}

fn bits(x: &Mat<f64>) -> Vec<u64> {
    (0..x.ncols())
        .flat_map(|j| (0..x.nrows()).map(move |i| x[(i, j)].to_bits()))
        .collect()
}

#[test]
fn bitwise_identical_across_threads() {
    let a = gallery::random_gaussian::<f64>(230, 50, 9);
    let o = opts(6, true);
    let go = |threads: usize| {
        let (s, u, vt) = run(&a, SvdJob::Vectors, &o, threads);
        let s: Vec<u64> = s.iter().map(|x| x.to_bits()).collect();
        (s, bits(&u.unwrap()), bits(&vt.unwrap()))
    };
    let base = go(1);
    for threads in [2, 4] {
        assert!(go(threads) == base, "{threads} threads differ");
    }
}

/// Negative control: ge2gb on `R` not ordered after the task that writes `R`
/// is a race the checker reports (so the footprints of the hand-off are
/// real).
#[test]
fn r_handoff_without_its_edge_is_a_race() {
    let build = |ordered: bool| {
        let a = gallery::random_gaussian::<f64>(120, 40, 3);
        let mut g = TaskGraph::new();
        let s0 = geqrf(&mut g, a, 6, 12).unwrap();
        let producer = ordered.then_some(s0.r.task);
        let s1 = ge2gb::ge2gb_produced(&mut g, s0.r.r, producer, s0.r.reduction, 6, 12, 3).unwrap();
        let s2 = gb2bd(&mut g, s1.band).unwrap();
        singular_values(&mut g, s2.bidiagonal).unwrap();
        g
    };
    build(true).check_races().unwrap();
    let r = build(false).check_races();
    assert!(matches!(r, Err(Error::Race { .. })), "not caught: {r:?}");
}

#[test]
fn bad_arguments_are_errors() {
    let mut g = TaskGraph::new();
    let a = gallery::random_gaussian::<f64>(10, 20, 1);
    assert!(matches!(geqrf(&mut g, a, 4, 8), Err(Error::Shape(_))));
    let a = gallery::random_gaussian::<f64>(20, 10, 1);
    assert!(matches!(
        geqrf(&mut g, a, 4, 6),
        Err(Error::InvalidArgument(_))
    ));
}
