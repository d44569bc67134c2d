//! The SVD with vectors through the public API: LAPACK-style scaled ratios
//! (residual, orthogonality of U and V, singular values against faer) on the
//! matrix families of issue 9, square, tall and wide, f64 and f32; bitwise
//! identical results across thread counts; the input never modified.

use crate::common;

use common::{svd_family, to_f64, SVD_FAMILIES};
use eigenflow::gallery;
use eigenflow::pipeline::{svd, SvdJob, SvdOptions};
use eigenflow::runtime::Runtime;
use eigenflow::{Error, Scalar};
use faer::Mat;

fn rt(threads: usize) -> Runtime {
    Runtime::builder().threads(threads).build()
}

/// Frobenius norm.
fn fro(a: &Mat<f64>) -> f64 {
    a.norm_l2()
}

/// `[residual, orth(U), orth(V), values]` ratios of the SVD of `a`:
/// `||A - U S V^T||_F / (max(m,n) ||A||_F eps)`, `||U^T U - I||_F / (m eps)`,
/// `||V V^T - I||_F / (n eps)` and `max |s - s_ref| / (max(m,n) eps s_1)`
/// against faer's singular values of `a` in f64.
fn ratios<T: Scalar>(a: &Mat<T>, opts: &SvdOptions, threads: usize) -> [f64; 4] {
    let before = to_f64(a.as_ref());
    let r = svd(a.as_ref(), SvdJob::Vectors, opts, &rt(threads)).expect("svd");
    assert!(
        to_f64(a.as_ref()) == before,
        "the input was modified ({} x {})",
        a.nrows(),
        a.ncols()
    );
    ratios_of(a, r)
}

/// [`ratios`] of a computed SVD `r` of `a` (shapes and order checked too).
pub(crate) fn ratios_of<T: Scalar>(
    a: &Mat<T>,
    r: eigenflow::pipeline::svd::SvdOutput<T>,
) -> [f64; 4] {
    let (m, n) = (a.nrows(), a.ncols());
    let k = m.min(n);
    let before = to_f64(a.as_ref());
    let (u, vt) = (r.u.expect("U"), r.vt.expect("V^T"));
    assert_eq!((u.nrows(), u.ncols()), (m, k), "U shape");
    assert_eq!((vt.nrows(), vt.ncols()), (k, n), "V^T shape");
    assert_eq!(r.values.len(), k);
    assert!(r.values.windows(2).all(|w| w[0] >= w[1]), "not descending");
    assert!(r.values.iter().all(|&x| x >= T::zero()), "negative value");
    let eps = T::EPS.f64();
    let (u, vt) = (to_f64(u.as_ref()), to_f64(vt.as_ref()));
    // Every ratio is scale invariant: bring A and S to max-norm about one by a
    // power of two (exact), so the checks themselves neither overflow nor
    // underflow at 1e+-300.
    let amax = before.norm_max();
    let p2 = if amax > 0.0 {
        (-amax.log2().floor()).exp2()
    } else {
        1.0
    };
    let before = Mat::from_fn(m, n, |i, j| before[(i, j)] * p2);
    let s: Vec<f64> = r.values.iter().map(|x| x.f64() * p2).collect();
    let us = Mat::from_fn(m, k, |i, j| u[(i, j)] * s[j]);
    let anorm = fro(&before);
    let mm = m.max(n).max(1) as f64;
    let residual = if anorm == 0.0 {
        fro(&(&us * &vt))
    } else {
        fro(&(&us * &vt - &before)) / (mm * anorm * eps)
    };
    let orth_u = fro(&(u.transpose() * &u - Mat::<f64>::identity(k, k))) / (m.max(1) as f64 * eps);
    let orth_v =
        fro(&(&vt * vt.transpose() - Mat::<f64>::identity(k, k))) / (n.max(1) as f64 * eps);
    let s_ref: Vec<f64> = if k == 0 {
        Vec::new()
    } else {
        before.singular_values().expect("faer")
    };
    let s1 = s_ref.first().copied().unwrap_or(0.0);
    let values = if s1 == 0.0 {
        s.iter().fold(0.0f64, |x, y| x.max(y.abs()))
    } else {
        s.iter()
            .zip(&s_ref)
            .fold(0.0f64, |x, (a, b)| x.max((a - b).abs()))
            / (mm * eps * s1)
    };
    [residual, orth_u, orth_v, values]
}

fn check<T: Scalar>(what: &str, a: &Mat<T>, opts: &SvdOptions, worst: &mut [f64; 4]) {
    let r = ratios(a, opts, 2);
    for (w, x) in worst.iter_mut().zip(r) {
        *w = w.max(x);
    }
    assert!(
        r.iter().all(|&x| x < 30.0),
        "{what} ({} x {}, {}): ratios [residual, U, V, values] = {r:?}",
        a.nrows(),
        a.ncols(),
        T::NAME
    );
}

/// Shapes around the bandwidth `b`: square, tall (`n + 97`, `5 n`) and wide.
fn shapes(b: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for n in [0, 1, 2, 3, b, b + 1, 2 * b + 1, 130] {
        out.extend([(n, n), (n + 97, n), (n, n + 97)]);
        if n > 0 && n <= 40 {
            out.push((5 * n, n));
        }
    }
    out
}

fn families_at<T: Scalar>() -> [f64; 4] {
    let mut worst = [0.0; 4];
    let mut small = SvdOptions::auto();
    small.bandwidth = 8;
    small.tile_width = 3;
    small.tile = 16;
    small.leaf_size = 8;
    small.dc_tile = 16;
    small.back_col_block = 16;
    small.one_stage_below = 1;
    // The defaults with the two-stage graph forced, and with the one-stage
    // path forced (below its small-size threshold that is the serial
    // GEBD2-based solver; taller than `qr_ratio_for` it is the graph).
    let mut two = SvdOptions::auto();
    two.one_stage_below = 1;
    let mut one = SvdOptions::auto();
    one.one_stage_below = usize::MAX;
    for opts in [small, two, one] {
        let b = opts.bandwidth_for(usize::MAX);
        for (i, (m, n)) in shapes(b).into_iter().enumerate() {
            for (f, name) in SVD_FAMILIES.iter().enumerate() {
                // Every family on the small shapes, a rotation of them on the rest.
                if m.min(n) > 40 && (i + f) % 3 != 0 {
                    continue;
                }
                let a = svd_family::<T>(name, m, n, (100 * i + f) as u64);
                check(name, &a, &opts, &mut worst);
            }
        }
    }
    worst
}

#[test]
fn families_f64() {
    let w = families_at::<f64>();
    println!("f64 worst [residual, U, V, values] = {w:?}");
}

#[test]
fn families_f32() {
    let w = families_at::<f32>();
    println!("f32 worst [residual, U, V, values] = {w:?}");
}

/// A larger size once, square, tall and wide, on the defaults (one-stage
/// below its crossover) and on the two-stage graph.
#[test]
fn size_517() {
    let mut worst = [0.0; 4];
    let mut two = SvdOptions::auto();
    two.one_stage_below = 1;
    for opts in [SvdOptions::auto(), two] {
        for (m, n) in [(517, 517), (614, 517), (517, 600)] {
            let a = svd_family::<f64>("random", m, n, 7);
            check("random", &a, &opts, &mut worst);
        }
        let a = svd_family::<f64>("geometric", 517, 517, 8);
        check("geometric", &a, &opts, &mut worst);
    }
    println!("517: worst [residual, U, V, values] = {worst:?}");
}

/// Scaling by 1e+-300 (f64) and 1e+-30 (f32): the safe-range scaling keeps
/// the ratios.
#[test]
fn extreme_scaling() {
    let mut worst = [0.0; 4];
    let mut two = SvdOptions::auto();
    two.one_stage_below = 1;
    for opts in [SvdOptions::auto(), two] {
        for scale in [1e300, 1e-300] {
            let a = svd_family::<f64>("random", 90, 70, 3);
            let a = Mat::from_fn(90, 70, |i, j| a[(i, j)] * scale);
            check("scaled", &a, &opts, &mut worst);
        }
        for scale in [1e30f32, 1e-30] {
            let a = svd_family::<f32>("random", 70, 90, 4);
            let a = Mat::from_fn(70, 90, |i, j| a[(i, j)] * scale);
            check("scaled", &a, &opts, &mut worst);
        }
    }
}

/// The same bits on 1, 2 and 4 threads, on the two-stage graph and on the
/// one-stage path (sizes at which its products and updates are cut in two
/// tasks).
#[test]
fn bitwise_across_threads() {
    for (m, n, below) in [
        (260, 200, 1),
        (150, 240, 1),
        (620, 520, usize::MAX),
        (300, 540, usize::MAX),
    ] {
        let a = gallery::random_gaussian::<f64>(m, n, 11);
        let mut opts = SvdOptions::auto();
        opts.back_col_block = 48;
        opts.one_stage_below = below;
        let run = |t: usize| {
            let r = svd(a.as_ref(), SvdJob::Vectors, &opts, &rt(t)).unwrap();
            let mut bits: Vec<u64> = r.values.iter().map(|x| x.to_bits()).collect();
            for x in [r.u.unwrap(), r.vt.unwrap()] {
                for j in 0..x.ncols() {
                    bits.extend((0..x.nrows()).map(|i| x[(i, j)].to_bits()));
                }
            }
            bits
        };
        let one = run(1);
        assert!(one == run(2), "{m} x {n}: 1 and 2 threads differ");
        assert!(one == run(4), "{m} x {n}: 1 and 4 threads differ");
    }
}

/// The values of the vectors job agree with the values-only job to the
/// accuracy of divide and conquer, and the graph is free of races.
#[test]
fn vectors_graph_is_race_free() {
    let a = gallery::random_gaussian::<f64>(120, 90, 5);
    let (g, _) = eigenflow::pipeline::svd_graph(a.as_ref(), SvdJob::Vectors, &SvdOptions::auto())
        .unwrap()
        .into_parts();
    g.check_races().unwrap();
}

#[test]
fn non_finite_input_is_named() {
    for (m, n) in [(30, 20), (130, 100)] {
        for below in [1, usize::MAX] {
            let mut a = gallery::random_gaussian::<f64>(m, n, 5);
            a[(7, 3)] = f64::NAN;
            let mut opts = SvdOptions::auto();
            opts.one_stage_below = below;
            match svd(a.as_ref(), SvdJob::Vectors, &opts, &rt(2)) {
                Err(Error::NonFinite { row: 7, col: 3, .. }) => {}
                other => panic!("{m} x {n}: expected NonFinite at (7, 3), got {other:?}"),
            }
        }
    }
}

/// Issue 58: a NaN in the matrix given to a hand-built SVD pipeline (ge2gb,
/// gb2bd, dqds; geqrf first for a tall one) is reported where it is, when
/// the graph is built, not at the bidiagonal's position by its solver.
#[test]
fn nan_fed_to_a_hand_built_svd_pipeline_is_reported_where_it_is() {
    use eigenflow::graph::TaskGraph;
    use eigenflow::pipeline::svd::{gb2bd, ge2gb, geqrf, singular_values};
    for (m, n, i, j) in [(300, 250, 200, 100), (600, 100, 550, 40)] {
        let mut a: Mat<f64> = gallery::random_uniform(m, n, 5);
        a[(i, j)] = f64::NAN;
        let run = || -> eigenflow::Result<Vec<f64>> {
            let mut g = TaskGraph::new();
            let s1 = if m > 2 * n {
                geqrf(&mut g, a.clone(), 16, 32)?
                    .r
                    .ge2gb(&mut g, 16, 32, 16)?
            } else {
                ge2gb(&mut g, a.clone(), 16, 32, 16)?
            };
            let s2 = gb2bd(&mut g, s1.band)?;
            let values = singular_values(&mut g, s2.bidiagonal)?;
            Runtime::builder().threads(2).build().run(g)?;
            values.get()
        };
        let err = run().unwrap_err();
        assert!(
            matches!(&err, Error::NonFinite { row, col, .. } if (*row, *col) == (i, j)),
            "{m} x {n}, ({i}, {j}): {err}"
        );
    }
}

/// Issue 58: every task of the SVD graph belongs to a stage of the
/// pipeline; the closing `svd.complete` task was in `Task::new`'s
/// "default", a stray stage of one task in the report and the trace.
#[test]
fn svd_graph_has_no_default_stage() {
    use eigenflow::pipeline::svd_graph;
    let rt = Runtime::builder().threads(2).build();
    let a: Mat<f64> = gallery::random_uniform(300, 200, 3);
    for job in [SvdJob::Values, SvdJob::Vectors] {
        let (graph, results) = svd_graph(a.as_ref(), job, &SvdOptions::auto())
            .unwrap()
            .into_parts();
        let report = rt.run(graph).unwrap();
        results.into_results().unwrap();
        let stages: std::collections::BTreeSet<_> =
            report.tasks.iter().map(|t| t.stage.to_string()).collect();
        assert!(!stages.contains("default"), "{job:?}: {stages:?}");
        assert!(
            report.tasks.iter().any(|t| t.name == "svd.complete"),
            "{job:?}: the completion task is still there"
        );
    }
}
