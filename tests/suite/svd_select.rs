//! The largest singular triplets (`SvdOptions::selection`, `svd_top`, issue
//! 11 part 2) through the public API: the selected values against faer's
//! full SVD, residual `||A V - U S||` and orthogonality of the `k` columns of
//! `U` and `V` as LAPACK-style ratios, on the SVD test families, square, tall
//! and wide, f64 and f32; cuts through clusters and multiplicities, zeros
//! inside the selection, `k = 1` and `k = min(m, n)`; bitwise identical
//! results across thread counts, `check_races()`, and clear errors for bad
//! selections.

use crate::common;

use common::{svd_family, to_f64, SVD_FAMILIES};
use eigenflow::gallery;
use eigenflow::pipeline::svd::{svd_graph, SvdSelection};
use eigenflow::pipeline::{svd, SvdJob, SvdOptions};
use eigenflow::runtime::Runtime;
use eigenflow::{Error, Scalar};
use faer::Mat;

fn rt(threads: usize) -> Runtime {
    Runtime::builder().threads(threads).build()
}

fn top(k: usize) -> SvdOptions {
    let mut o = SvdOptions::auto();
    o.selection = Some(SvdSelection::Largest(k));
    o
}

/// `[residual, orth(U), orth(V), values]` of the top `k` triplets of `a`:
/// `||A V - U S||_F / (max(m,n) ||A||_F eps)`, `||U^T U - I_k||_F / (m eps)`,
/// `||V^T V - I_k||_F / (n eps)`, `max_j |s_j - s_ref_j| / (max(m,n) eps
/// s_1)` against faer's singular values of `a` in f64.
fn ratios<T: Scalar>(a: &Mat<T>, k: usize, opts: &SvdOptions, threads: usize) -> [f64; 4] {
    let (m, n) = (a.nrows(), a.ncols());
    let mut opts = opts.clone();
    opts.selection = Some(SvdSelection::Largest(k));
    let r = svd(a.as_ref(), SvdJob::Vectors, &opts, &rt(threads))
        .unwrap_or_else(|e| panic!("{m} x {n}, k = {k}, {}: {e:?}", T::NAME));
    let (u, vt) = (r.u.expect("U"), r.vt.expect("V^T"));
    assert_eq!((u.nrows(), u.ncols()), (m, k), "U shape");
    assert_eq!((vt.nrows(), vt.ncols()), (k, n), "V^T shape");
    assert_eq!(r.values.len(), k);
    assert!(r.values.windows(2).all(|w| w[0] >= w[1]), "not descending");
    assert!(r.values.iter().all(|&x| x >= T::zero()), "negative value");
    let eps = T::EPS.f64();
    let a64 = to_f64(a.as_ref());
    let amax = a64.norm_max();
    // Scale invariant ratios: bring A to max-norm about one (exact).
    let p2 = if amax > 0.0 {
        (-amax.log2().floor()).exp2()
    } else {
        1.0
    };
    let a64 = Mat::from_fn(m, n, |i, j| a64[(i, j)] * p2);
    let s: Vec<f64> = r.values.iter().map(|x| x.f64() * p2).collect();
    let (u, v) = (
        to_f64(u.as_ref()),
        to_f64(vt.as_ref()).transpose().to_owned(),
    );
    let us = Mat::from_fn(m, k, |i, j| u[(i, j)] * s[j]);
    let anorm = a64.norm_l2();
    let mm = m.max(n).max(1) as f64;
    let av = &a64 * &v;
    let residual = if anorm == 0.0 {
        us.norm_l2()
    } else {
        (&av - &us).norm_l2() / (mm * anorm * eps)
    };
    let orth_u = (u.transpose() * &u - Mat::<f64>::identity(k, k)).norm_l2() / (m as f64 * eps);
    let orth_v = (v.transpose() * &v - Mat::<f64>::identity(k, k)).norm_l2() / (n as f64 * eps);
    let s_ref = a64.singular_values().expect("faer");
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

fn check<T: Scalar>(what: &str, a: &Mat<T>, k: usize, opts: &SvdOptions, worst: &mut [f64; 4]) {
    let r = ratios(a, k, opts, 2);
    for (w, x) in worst.iter_mut().zip(r) {
        *w = w.max(x);
    }
    assert!(
        r.iter().all(|&x| x < 30.0),
        "{what} ({} x {}, k = {k}, {}): ratios [residual, U, V, values] = {r:?}",
        a.nrows(),
        a.ncols(),
        T::NAME
    );
}

/// Every family on square, tall (with and without the QR pre-reduction) and
/// wide shapes, with k = 1, a third, a cut through the middle (the clusters'
/// boundary, the multiplicity-50 block at min(m, n) = 100), and min(m, n).
fn families_at<T: Scalar>() -> [f64; 4] {
    let mut worst = [0.0; 4];
    let mut small = SvdOptions::auto();
    small.bandwidth = 8;
    small.tile_width = 3;
    small.tile = 16;
    small.back_col_block = 16;
    for (o, opts) in [small, SvdOptions::auto()].into_iter().enumerate() {
        for (i, (m, n)) in [
            (1, 1),
            (2, 2),
            (9, 9),
            (40, 40),
            (100, 100),
            (137, 40),
            (200, 40),
            (40, 137),
            (100, 197),
        ]
        .into_iter()
        .enumerate()
        {
            let kmin = m.min(n);
            for (f, name) in SVD_FAMILIES.iter().enumerate() {
                if kmin > 40 && (i + f + o) % 2 != 0 {
                    continue;
                }
                let a = svd_family::<T>(name, m, n, (100 * i + f) as u64);
                let mut ks = vec![1, kmin / 3, kmin / 2 + 1, 25.min(kmin), kmin];
                ks.retain(|&k| k > 0);
                ks.sort_unstable();
                ks.dedup();
                for k in ks {
                    check(name, &a, k, &opts, &mut worst);
                }
            }
        }
    }
    worst
}

#[test]
fn families_f64() {
    let w = families_at::<f64>();
    eprintln!("svd top-k f64 worst [residual, U, V, values] = {w:?}");
}

#[test]
fn families_f32() {
    let w = families_at::<f32>();
    eprintln!("svd top-k f32 worst [residual, U, V, values] = {w:?}");
}

/// Repeated singular values cut by the selection: multiplicity 30 at the top,
/// k = 10 and 40, and a glued pair of multiplicity-20 blocks cut at 30.
#[test]
fn cut_through_multiplicity() {
    let (m, n) = (150, 120);
    let s: Vec<f64> = (0..n)
        .map(|i| {
            if i < 30 {
                2.0
            } else if i < 70 {
                1.0
            } else {
                1.0 / i as f64
            }
        })
        .collect();
    let a = gallery::with_singular_values::<f64>(m, n, &s, 7);
    let mut worst = [0.0; 4];
    for k in [10, 30, 31, 40, 50, 70, 120] {
        check("multiplicity cut", &a, k, &SvdOptions::auto(), &mut worst);
    }
    let a32 = gallery::with_singular_values::<f32>(
        m,
        n,
        &s.iter().map(|&x| x as f32).collect::<Vec<_>>(),
        8,
    );
    for k in [10, 50] {
        check("multiplicity cut", &a32, k, &SvdOptions::auto(), &mut worst);
    }
}

/// A rank-deficient matrix whose top k include many zeros (rank 5 of 60,
/// k = 8, 30, 60), square, tall and wide: the near-null path of select.rs.
#[test]
fn rank_deficient_top_k_includes_zeros() {
    let mut worst = [0.0; 4];
    for (m, n) in [(60, 60), (90, 60), (60, 90), (300, 60)] {
        let k = m.min(n);
        let s: Vec<f64> = (0..k)
            .map(|i| if i < 5 { (5 - i) as f64 } else { 0.0 })
            .collect();
        let a = gallery::with_singular_values::<f64>(m, n, &s, 3);
        for kk in [5, 8, 30, k] {
            check("rank 5", &a, kk, &SvdOptions::auto(), &mut worst);
        }
        // Exact zero columns: the bidiagonal has exact zeros.
        let z = Mat::<f64>::from_fn(m, n, |i, j| if j % 3 == 0 { a[(i, j)] } else { 0.0 });
        check("zero columns", &z, k, &SvdOptions::auto(), &mut worst);
    }
}

/// The top k of `svd_top` and of the full SVD are bitwise the same across
/// 1 and 2 threads; `svd_top` matches the pipeline call.
#[test]
fn bitwise_across_threads() {
    for (m, n, k) in [(300, 200, 20), (200, 300, 120), (257, 257, 257)] {
        let a = gallery::random_gaussian::<f64>(m, n, 11);
        let run = |t| svd(a.as_ref(), SvdJob::Vectors, &top(k), &rt(t)).unwrap();
        let (r1, r2) = (run(1), run(2));
        assert_eq!(r1.values, r2.values);
        assert!(r1.u == r2.u && r1.vt == r2.vt, "{m} x {n}, k = {k}");
        let q = eigenflow::svd_top(&a, k).unwrap();
        assert_eq!(q.values, r1.values);
        assert!(Some(q.u) == r1.u && Some(q.vt) == r1.vt);
    }
    let a = gallery::random_gaussian::<f32>(180, 150, 5);
    let run = |t| svd(a.as_ref(), SvdJob::Values, &top(40), &rt(t)).unwrap();
    assert_eq!(run(1).values, run(2).values);
}

/// Values only: the selection equals the top of the full values.
#[test]
fn values_only_matches_full() {
    let a = gallery::random_gaussian::<f64>(220, 180, 2);
    let full = svd(a.as_ref(), SvdJob::Values, &SvdOptions::auto(), &rt(2)).unwrap();
    let sel = svd(a.as_ref(), SvdJob::Values, &top(50), &rt(2)).unwrap();
    assert!(sel.u.is_none() && sel.vt.is_none());
    let eps = f64::EPSILON;
    for (x, y) in sel.values.iter().zip(&full.values) {
        assert!((x - y).abs() < 30.0 * 220.0 * eps * full.values[0]);
    }
    let mut idx = SvdOptions::auto();
    idx.selection = Some(SvdSelection::Index(10..20));
    let mid = svd(a.as_ref(), SvdJob::Vectors, &idx, &rt(2)).unwrap();
    assert_eq!(mid.values.len(), 10);
    for (x, y) in mid.values.iter().zip(&full.values[10..20]) {
        assert!((x - y).abs() < 30.0 * 220.0 * eps * full.values[0]);
    }
    let (u, vt) = (mid.u.unwrap(), mid.vt.unwrap());
    assert_eq!((u.ncols(), vt.nrows()), (10, 10));
    let res = (&a * vt.transpose()
        - &u * Mat::from_fn(10, 10, |i, j| if i == j { mid.values[i] } else { 0.0 }))
    .norm_l2();
    assert!(
        res < 30.0 * 220.0 * eps * a.norm_l2(),
        "index range residual {res}"
    );
}

/// The whole selection graph (square, tall with QR, wide) passes the race
/// checker.
#[test]
fn graph_has_no_races() {
    for (m, n, k) in [(120, 120, 30), (400, 100, 100), (60, 150, 1), (60, 50, 0)] {
        let a = gallery::random_gaussian::<f64>(m, n, 1);
        let (g, _) = svd_graph(a.as_ref(), SvdJob::Vectors, &top(k))
            .unwrap()
            .into_parts();
        g.check_races().unwrap();
        let (g, _) = svd_graph(a.as_ref(), SvdJob::Values, &top(k))
            .unwrap()
            .into_parts();
        g.check_races().unwrap();
    }
}

/// k = 0 gives empty results (as LAPACK's `ns = 0`); k > min(m, n) and a
/// reversed or too long index range are clear errors.
#[test]
fn bad_and_empty_selections() {
    let a = gallery::random_gaussian::<f64>(30, 20, 1);
    let r = svd(a.as_ref(), SvdJob::Vectors, &top(0), &rt(2)).unwrap();
    assert!(r.values.is_empty());
    let (u, vt) = (r.u.unwrap(), r.vt.unwrap());
    assert_eq!(
        (u.nrows(), u.ncols(), vt.nrows(), vt.ncols()),
        (30, 0, 0, 20)
    );
    for sel in [
        SvdSelection::Largest(21),
        SvdSelection::Index(5..21),
        SvdSelection::Index(std::ops::Range { start: 6, end: 5 }),
    ] {
        let mut o = SvdOptions::auto();
        o.selection = Some(sel.clone());
        match svd(a.as_ref(), SvdJob::Vectors, &o, &rt(1)) {
            Err(Error::InvalidArgument(msg)) => assert!(msg.contains("singular"), "{msg}"),
            other => panic!("{sel:?}: expected InvalidArgument, got {other:?}"),
        }
    }
    assert!(matches!(
        eigenflow::svd_top(&a, 21),
        Err(Error::InvalidArgument(_))
    ));
}

/// Top-k through the zero singular values in f32: 100 x 100 with 50 zero
/// singular values, k = 100. The near-null vectors (tiny singular values)
/// used to be orthogonalised only against the selected vectors of their own
/// cluster; against the others they kept inverse iteration's error amplified
/// by the pivoting, and these seeds (found by scanning 300) gave ratios of
/// 31 to 2445 with no error reported. They are now projected against every
/// other selected vector (the scan's worst ratio became 1.6).
#[test]
fn near_null_vectors_are_orthogonal_to_the_rest() {
    let mut worst = [0.0; 4];
    for seed in [15, 28, 34, 43, 62, 63, 68] {
        let a = svd_family::<f32>("half-zero", 100, 100, seed);
        check(
            &format!("half-zero seed {seed}"),
            &a,
            100,
            &SvdOptions::auto(),
            &mut worst,
        );
    }
    eprintln!("half-zero top-100 f32 worst [residual, U, V, values] = {worst:?}");
}

/// Every singular triplet through the zero singular values, over many
/// matrices: 100 seeds of half-zero 100 x 100 (50 zero singular values) and
/// rank-1 90 x 60, k = min(m, n), f64 and f32. With the earlier floor of the
/// pivoted near-null basis, 9 of the first 100 f64 half-zero seeds were
/// refused ("the near-null vectors span fewer than 50 directions").
#[test]
fn near_null_selection_over_many_seeds() {
    fn run<T: Scalar>() {
        let mut worst = [0.0; 4];
        for seed in 0..100u64 {
            for (fam, m, n) in [("half-zero", 100, 100), ("rank-1", 90, 60)] {
                let a = svd_family::<T>(fam, m, n, seed);
                check(
                    &format!("{fam} seed {seed}"),
                    &a,
                    m.min(n),
                    &SvdOptions::auto(),
                    &mut worst,
                );
            }
        }
        eprintln!(
            "near-null top-k {} worst [residual, U, V, values] = {worst:?}",
            T::NAME
        );
    }
    run::<f64>();
    run::<f32>();
}
