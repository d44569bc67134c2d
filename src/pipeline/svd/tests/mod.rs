//! Tests of the SVD pipeline: singular values against faer (LAPACK-style
//! scaled ratios), the race checker on the whole graph with a negative
//! control, determinism across thread counts and schedules. The tests of one
//! stage or path sit in the submodules below.

mod bdsdc;
mod bt;
mod edges;
mod grain;
mod half;
mod qr;
mod select;

use super::*;
use crate::gallery;
use crate::linalg::band::gb2bd::tests::{singular_values as reference, sv_ratio};
use crate::linalg::band::gb2bd::UpperBand;
use crate::runtime::Runtime;
use std::sync::Arc;

fn to_f64<T: Scalar>(a: MatRef<'_, T>) -> Mat<f64> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)].f64())
}

fn rt(threads: usize) -> Runtime {
    Runtime::builder().threads(threads).build()
}

fn opts(b: usize, tw: usize) -> SvdOptions {
    let mut o = SvdOptions::auto();
    o.bandwidth = b;
    o.tile_width = tw;
    o.tile = 2 * b.max(1);
    // These options tune the graph: keep small inputs off the one-stage path.
    o.one_stage_below = 1;
    o
}

/// The defaults with the two-stage graph forced at every size.
fn two_stage() -> SvdOptions {
    let mut o = SvdOptions::auto();
    o.one_stage_below = 1;
    o
}

/// `max |s - s_ref| / (max(m, n) eps s_1)` of the pipeline on `a` against
/// `s_ref` (faer's SVD of `a` in f64 when `None`).
fn ratio<T: Scalar>(a: &Mat<T>, o: &SvdOptions, s_ref: Option<Vec<f64>>) -> f64 {
    let s = svd(a.as_ref(), SvdJob::Values, o, &rt(2)).unwrap().values;
    assert_eq!(s.len(), a.nrows().min(a.ncols()));
    assert!(s.windows(2).all(|w| w[0] >= w[1]), "not descending: {s:?}");
    assert!(s.iter().all(|&x| x >= T::zero()));
    let s_ref = s_ref.unwrap_or_else(|| reference(&to_f64(a.as_ref())));
    let s: Vec<f64> = s.iter().map(|x| x.f64()).collect();
    sv_ratio(&s, &s_ref, a.nrows().max(a.ncols()), T::EPS.f64())
}

/// Shapes `(m, n)`: square, tall (`m = n + 97`) and wide, for the sizes the
/// brief names around the bandwidth `b`.
fn shapes(b: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for n in [0, 1, 2, 3, b, b + 1, 2 * b + 1, 200] {
        out.extend([(n, n), (n + 97, n), (n, n + 97)]);
    }
    out
}

fn random_cases<T: Scalar>() -> f64 {
    let mut worst = 0.0f64;
    // A small band with several passes (8 -> 5 -> 2 -> 1) and the defaults.
    // The defaults take the one-stage path below its crossover.
    for o in [opts(8, 3), two_stage(), SvdOptions::auto()] {
        let b = o.bandwidth_for(usize::MAX);
        for (i, (m, n)) in shapes(b).into_iter().enumerate() {
            let a = gallery::random_gaussian::<T>(m, n, 10 + i as u64);
            let r = ratio(&a, &o, None);
            assert!(r < 30.0, "{m} x {n}, b {b}: ratio {r}");
            worst = worst.max(r);
        }
    }
    worst
}

#[test]
fn random_matrices_f64() {
    let worst = random_cases::<f64>();
    eprintln!("svd values, random f64: worst ratio {worst:.3}");
}

#[test]
fn random_matrices_f32() {
    let worst = random_cases::<f32>();
    eprintln!("svd values, random f32: worst ratio {worst:.3}");
}

/// Known spectra (`U diag(sigma) V^T` with random orthonormal factors):
/// geometric over ten decades, clustered, and one with zero singular values.
fn known_spectra<T: Scalar>() -> f64 {
    let mut worst = 0.0f64;
    for (m, n) in [(60, 60), (157, 60), (60, 157)] {
        let k = m.min(n);
        let mut zeros: Vec<T> = gallery::arithmetic(k, 1.0, 2.0);
        for x in zeros.iter_mut().take(k / 3) {
            *x = T::zero();
        }
        for (si, sigma) in [
            gallery::geometric::<T>(k, 1e10),
            gallery::clustered::<T>(k, 3, 1e-6),
            zeros,
        ]
        .into_iter()
        .enumerate()
        {
            let a = gallery::with_singular_values::<T>(m, n, &sigma, 3 + si as u64);
            let mut want: Vec<f64> = sigma.iter().map(|x| x.f64().abs()).collect();
            want.sort_by(|x, y| y.partial_cmp(x).unwrap());
            let r = ratio(&a, &opts(8, 3), Some(want));
            assert!(r < 30.0, "{m} x {n} spectrum {si}: ratio {r}");
            worst = worst.max(r);
        }
    }
    worst
}

#[test]
fn known_spectra_f64_and_f32() {
    let r64 = known_spectra::<f64>();
    let r32 = known_spectra::<f32>();
    eprintln!("svd values, known spectra: worst ratio f64 {r64:.3}, f32 {r32:.3}");
}

#[test]
fn graded_matrices() {
    let mut worst = 0.0f64;
    for n in [50, 120] {
        let a = gallery::graded::<f64>(n, 5);
        let r = ratio(&a, &opts(8, 3), None);
        assert!(r < 30.0, "graded {n}: ratio {r}");
        worst = worst.max(r);
        let a = gallery::graded::<f32>(n, 5);
        let r = ratio(&a, &opts(8, 3), None);
        assert!(r < 30.0, "graded f32 {n}: ratio {r}");
        worst = worst.max(r);
    }
    eprintln!("svd values, graded: worst ratio {worst:.3}");
}

#[test]
fn zero_matrix_gives_exact_zeros() {
    for (m, n) in [(40, 40), (77, 30), (30, 77)] {
        let a = Mat::<f64>::zeros(m, n);
        let s = svd(a.as_ref(), SvdJob::Values, &opts(8, 3), &rt(2))
            .unwrap()
            .values;
        assert_eq!(s, vec![0.0; m.min(n)]);
    }
}

/// Entries near overflow and underflow are scaled into the safe range first.
#[test]
fn huge_and_tiny_entries() {
    let mut worst = 0.0f64;
    for scale in [1e300, 1e-300, 1e-310] {
        let a = gallery::random_gaussian::<f64>(90, 70, 8);
        let a = Mat::from_fn(90, 70, |i, j| a[(i, j)] * scale);
        let r = ratio(&a, &opts(8, 3), None);
        assert!(r < 30.0, "scale {scale:e}: ratio {r}");
        worst = worst.max(r);
    }
    for scale in [1e30f32, 1e-30] {
        let a = gallery::random_gaussian::<f32>(70, 90, 8);
        let a = Mat::from_fn(70, 90, |i, j| a[(i, j)] * scale);
        let r = ratio(&a, &opts(8, 3), None);
        assert!(r < 30.0, "f32 scale {scale:e}: ratio {r}");
        worst = worst.max(r);
    }
    eprintln!("svd values, 1e+-300 (f64) / 1e+-30 (f32): worst ratio {worst:.3}");
}

#[test]
fn bad_input_is_refused() {
    let mut a = gallery::random_gaussian::<f64>(5, 9, 1);
    a[(2, 7)] = f64::NAN;
    let r = svd(a.as_ref(), SvdJob::Values, &SvdOptions::auto(), &rt(1));
    assert!(
        matches!(r, Err(Error::NonFinite { row: 2, col: 7, .. })),
        "{r:?}"
    );
    a[(2, 7)] = 0.0;
    a[(4, 1)] = f64::INFINITY;
    let r = svd_graph(a.as_ref(), SvdJob::Values, &SvdOptions::auto());
    assert!(matches!(r, Err(Error::NonFinite { row: 4, col: 1, .. })));
}

#[test]
fn results_before_the_run_are_not_run() {
    let a = gallery::random_gaussian::<f64>(30, 20, 1);
    let (graph, results) = svd_graph(a.as_ref(), SvdJob::Values, &opts(4, 2))
        .unwrap()
        .into_parts();
    assert!(matches!(results.collect(), Err(Error::NotRun)));
    rt(2).run(graph).unwrap();
    let s = results.collect().unwrap();
    let r = sv_ratio(&s, &reference(&a), 30, f64::EPSILON * 0.5);
    assert!(r < 30.0, "ratio {r}");
}

/// The stages by hand (bandwidth 6, tile width 2: passes 6 -> 4 -> 2 -> 1),
/// with a lag of `lag` between sweeps; returns the graph, the shared band and
/// the values slot.
fn staged(
    m: usize,
    n: usize,
    lag: usize,
) -> (
    TaskGraph<'static>,
    Arc<crate::linalg::band::gb2bd::SharedUpperBand<f64>>,
    Slot<f64>,
) {
    let a = gallery::random_gaussian::<f64>(m, n, 21);
    let mut g = TaskGraph::new();
    let s1 = ge2gb(&mut g, a, 6, 12, 2).unwrap();
    assert_eq!(s1.band.passes().len(), 3);
    let s2 = gb2bd::gb2bd_with_lag(&mut g, s1.band, lag, false).unwrap();
    let band = s2.bidiagonal.band.clone();
    let slot = singular_values(&mut g, s2.bidiagonal).unwrap();
    (g, band, slot)
}

#[test]
fn whole_graph_is_race_free_and_lag_two_is_caught() {
    for (m, n) in [(50, 50), (83, 41)] {
        let (g, _, _) = staged(m, n, 3);
        g.check_races().unwrap();
        let (g, _, _) = staged(m, n, 2);
        let r = g.check_races();
        assert!(
            matches!(r, Err(Error::Race { .. })),
            "{m} x {n}: lag 2 between sweeps was not caught: {r:?}"
        );
    }
}

fn band_bits(band: UpperBand<f64>) -> Vec<u64> {
    band.as_slice().iter().map(|x| x.to_bits()).collect()
}

/// Every schedule of a correct graph gives bitwise the same bidiagonal (the
/// whole band storage, fill included) and singular values.
#[test]
fn bitwise_identical_across_threads_and_orders() {
    let run = |rt: Runtime| {
        let (g, band, slot) = staged(97, 64, 3);
        rt.run(g).unwrap();
        let band = Arc::try_unwrap(band).ok().unwrap().into_inner();
        let s: Vec<u64> = slot.get().unwrap().iter().map(|x| x.to_bits()).collect();
        (band_bits(band), s)
    };
    let base = run(rt(1));
    for threads in [2, 4] {
        assert!(run(rt(threads)) == base, "{threads} threads differ");
    }
    for seed in [1, 2, 3] {
        let shuffled = Runtime::builder().threads(4).shuffle(Some(seed)).build();
        assert!(run(shuffled) == base, "shuffled order {seed} differs");
    }
}

#[test]
fn handles_from_another_graph_are_refused() {
    let a = gallery::random_gaussian::<f64>(30, 20, 1);
    let mut g1 = TaskGraph::new();
    let s1 = ge2gb(&mut g1, a, 4, 8, 2).unwrap();
    let mut g2 = TaskGraph::new();
    let r = gb2bd(&mut g2, s1.band);
    assert!(matches!(r, Err(Error::InvalidArgument(_))));

    let a = gallery::random_gaussian::<f64>(30, 20, 1);
    let s1 = ge2gb(&mut g1, a, 4, 8, 2).unwrap();
    let s2 = gb2bd(&mut g1, s1.band).unwrap();
    let r = singular_values(&mut g2, s2.bidiagonal);
    assert!(matches!(r, Err(Error::InvalidArgument(_))));
}

/// Stage 2 waits for the band copy of every column block its tasks touch:
/// forgetting the copies of all blocks but the first is a race the checker
/// sees.
#[test]
fn chase_waits_for_its_band_columns() {
    let a = gallery::random_gaussian::<f64>(70, 50, 4);
    let mut g = TaskGraph::new();
    let mut s1 = ge2gb(&mut g, a, 6, 12, 2).unwrap();
    assert!(s1.band.feed.len() > 2);
    s1.band.feed.truncate(1);
    let s2 = gb2bd(&mut g, s1.band).unwrap();
    singular_values(&mut g, s2.bidiagonal).unwrap();
    let r = g.check_races();
    assert!(
        matches!(r, Err(Error::Race { .. })),
        "dropping the band-copy edges was not caught: {r:?}"
    );
}

/// A task's band view is confined to its granted window: a stage task that
/// reaches outside it fails the run instead of touching the entry.
#[test]
fn band_views_are_confined_to_their_window() {
    use crate::graph::{Footprint, Region, Task};
    use crate::pipeline::task::with_access;
    let band = Arc::new(crate::linalg::band::gb2bd::SharedUpperBand::new(
        UpperBand::<f64>::zeros(10, 3, 1),
    ));
    let mut g = TaskGraph::new();
    let (bd, id) = (band.clone(), band.id());
    g.add(
        Task::new(
            "outside",
            with_access(move |acc| {
                let mut v = bd.write(acc, 2..5, 3..6);
                v.rect_mut(2..5, 3..6)[(0, 0)] = 1.0;
                // Inside the band storage, outside the window.
                v.rect_mut(5..6, 6..7)[(0, 0)] = 1.0;
                Ok(())
            }),
        )
        .footprint(Footprint::new().write(Region::new(id, 2..5, 3..6))),
    );
    let r = rt(1).run(g);
    assert!(matches!(r, Err(Error::TaskPanicked { .. })), "{r:?}");
    let band = Arc::try_unwrap(band).ok().unwrap().into_inner();
    assert_eq!(band.get(5, 6), 0.0);
}

/// A problem that does not fit is refused before anything is allocated or
/// scanned: the input is a 400000 x 300000 view of one number (strides 0).
#[test]
fn too_large_is_refused_before_allocating() {
    if crate::sysinfo::available_memory_bytes().is_none() {
        eprintln!("available memory unknown here: nothing to check against");
        return;
    }
    let one = [1.0f64];
    // SAFETY: every entry of the view is the one element of `one` (strides 0).
    let a = unsafe { faer::MatRef::from_raw_parts(one.as_ptr(), 400_000, 300_000, 0, 0) };
    let r = svd(a, SvdJob::Values, &SvdOptions::auto(), &rt(1));
    assert!(
        matches!(r, Err(Error::OutOfMemory { .. })),
        "{:?}",
        r.map(|_| ())
    );
}
