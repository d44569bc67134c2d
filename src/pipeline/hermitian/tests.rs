//! Tests of the Hermitian EVD graph against faer's complex
//! `self_adjoint_eigen` (eigenvalues) and by LAPACK's scaled ratios:
//! residual `||A X - X Λ||_F / (n ||A||_F eps)` and orthogonality
//! `||X^H X - I||_F / (n eps)`, both below 30; c64 and c32; bitwise identical
//! across thread counts; `check_races` on the graph; the errors.

use super::*;
use crate::gallery::{
    clustered, hermitian_with_spectrum, phased_toeplitz_121, random_hermitian, repeated,
    toeplitz_121_eigenvalues,
};
use crate::{Scalar, Selection};
use faer::{c32, c64};

/// `z` as `c64`.
fn up<C: ComplexScalar>(z: C) -> c64 {
    c64::new(z.re().f64(), z.im().f64())
}

/// The Hermitian matrix the solver reads (lower triangle, diagonal's real
/// part) in `c64`, times `s` undone.
fn seen<C: ComplexScalar>(a: &Mat<C>, s: f64) -> Mat<c64> {
    let n = a.nrows();
    Mat::from_fn(n, n, |i, j| {
        let z = up(a[(i.max(j), i.min(j))]) * (1.0 / s);
        match i.cmp(&j) {
            std::cmp::Ordering::Equal => c64::new(z.re, 0.0),
            std::cmp::Ordering::Greater => z,
            std::cmp::Ordering::Less => z.conj(),
        }
    })
}

/// `[eigenvalue error against faer / (n ||A|| eps), residual, orthogonality]`
/// of the results `w`, `x` for `a` (which is `s` times a matrix of moderate
/// size: the ratios are computed on `a / s`, exact for a power of two).
fn ratios<C: ComplexScalar>(a: &Mat<C>, s: f64, w: &[Re<C>], x: Option<&Mat<C>>) -> [f64; 3] {
    let at = seen(a, s);
    let n = at.nrows();
    let eps = Re::<C>::EPS.f64();
    let norm = at.norm_l2();
    let nf = n as f64;
    let scaled = |x: f64, d: f64| if x == 0.0 { 0.0 } else { x / d };
    let mut want = at.self_adjoint_eigenvalues(Side::Lower).unwrap();
    want.sort_by(f64::total_cmp);
    let got: Vec<f64> = w.iter().map(|x| x.f64() / s).collect();
    assert_eq!(got.len(), n);
    assert!(got.windows(2).all(|p| p[0] <= p[1]), "not ascending");
    let err = got
        .iter()
        .zip(&want)
        .map(|(g, r)| (g - r).abs())
        .fold(0.0, f64::max);
    let values = scaled(err, nf * norm * eps);
    let Some(x) = x else {
        return [values, 0.0, 0.0];
    };
    let x = Mat::from_fn(n, n, |i, j| up(x[(i, j)]));
    let l = Mat::from_fn(n, n, |i, j| {
        c64::new(if i == j { got[j] } else { 0.0 }, 0.0)
    });
    let residual = scaled((&at * &x - &x * &l).norm_l2(), nf * norm * eps);
    let orth = (x.adjoint() * &x - Mat::<c64>::identity(n, n)).norm_l2() / (nf * eps);
    [values, residual, orth]
}

fn solve<C: ComplexScalar>(a: &Mat<C>, job: EvdJob, threads: usize) -> HermitianEigen<C> {
    let rt = Runtime::builder().threads(threads).build();
    eigh(a.as_ref(), job, &EvdOptions::default(), &rt).unwrap()
}

/// Every ratio of `a`'s EVD (values only and with vectors) below 30;
/// returns the largest.
fn check<C: ComplexScalar>(name: &str, a: &Mat<C>, s: f64) -> f64 {
    let vec = solve(a, EvdJob::Vectors, 2);
    let r = ratios(a, s, &vec.values, vec.vectors.as_ref());
    let vals = solve(a, EvdJob::Values, 2);
    let rv = ratios(a, s, &vals.values, None);
    let worst = r.iter().chain(&rv).fold(0.0f64, |m, &x| m.max(x));
    assert!(worst < 30.0, "{name} n {}: {r:?} values {rv:?}", a.nrows());
    worst
}

fn families<C: ComplexScalar>() {
    let mut report = Vec::new();
    for n in [1, 2, 3, 17, 64, 150, 301] {
        let seed = 100 + n as u64;
        let mut worst = [0.0f64; 4];
        worst[0] = check("random", &random_hermitian::<C>(n, seed), 1.0);
        let eigs: Vec<Re<C>> = repeated(n, 3);
        worst[1] = check("repeated", &hermitian_with_spectrum::<C>(&eigs, seed), 1.0);
        let eigs: Vec<Re<C>> = clustered(n, 4, 1e-6);
        worst[2] = check("clustered", &hermitian_with_spectrum::<C>(&eigs, seed), 1.0);
        // Equal-modulus complex off-diagonals: the spectrum in closed form.
        let t = phased_toeplitz_121::<C>(n, seed);
        worst[3] = check("phased toeplitz", &t, 1.0);
        let got = solve(&t, EvdJob::Values, 1).values;
        let want: Vec<f64> = toeplitz_121_eigenvalues::<f64>(n);
        let err = got
            .iter()
            .zip(&want)
            .map(|(g, w)| (g.f64() - w).abs())
            .fold(0.0, f64::max);
        assert!(
            err < 30.0 * n as f64 * 4.0 * Re::<C>::EPS.f64(),
            "toeplitz {n}: {err}"
        );
        report.push((n, worst));
    }
    eprintln!(
        "{} worst ratios (random, repeated, clustered, phased toeplitz): {report:?}",
        std::any::type_name::<C>()
    );
}

#[test]
fn families_c64() {
    families::<c64>();
}

#[test]
fn families_c32() {
    families::<c32>();
}

/// Scaled far from one: the safe-range scaling keeps the ratios.
fn scaling<C: ComplexScalar>(scales: &[f64]) {
    for &s in scales {
        let a = random_hermitian::<c64>(90, 7);
        let a = Mat::<C>::from_fn(90, 90, |i, j| {
            let z = a[(i, j)] * s;
            C::from_parts(Re::<C>::of(z.re), Re::<C>::of(z.im))
        });
        check(&format!("scaled {s:e}"), &a, s);
    }
}

#[test]
fn scaling_c64() {
    scaling::<c64>(&[2f64.powi(-500), 2f64.powi(500), 2f64.powi(-1000)]);
}

#[test]
fn scaling_c32() {
    scaling::<c32>(&[2f64.powi(-64), 2f64.powi(64), 2f64.powi(100)]);
}

#[test]
fn bitwise_across_thread_counts_and_race_free() {
    let n = 300;
    let a = random_hermitian::<c64>(n, 9);
    let opts = EvdOptions {
        back_col_block: 64,
        ..EvdOptions::default()
    };
    for job in [EvdJob::Values, EvdJob::Vectors] {
        let g = heevd_graph(a.as_ref(), job, &opts).unwrap();
        g.graph.check_races().unwrap();
        if job == EvdJob::Vectors {
            assert!(g.graph.len() > 4, "column-block tasks: {}", g.graph.len());
        }
        let runs: Vec<_> = [1, 2, 3]
            .iter()
            .map(|&t| {
                let rt = Runtime::builder().threads(t).build();
                let r = eigh(a.as_ref(), job, &opts, &rt).unwrap();
                (r.values, r.vectors)
            })
            .collect();
        assert!(runs.windows(2).all(|p| p[0] == p[1]), "{job:?}");
    }
}

#[test]
fn dropping_an_edge_is_a_race() {
    // The negative control of check_races: the unmtr tasks read what hetrd
    // wrote; a graph built without that order must be refused.
    let n = 40;
    let a = random_hermitian::<c64>(n, 2);
    let mut g = TaskGraph::new();
    let mut flow = Flow::new();
    let (h, _) = lower_copy(a.as_ref(), Side::Lower);
    let parts = Parts::new(h, EvdJob::Vectors, false);
    add_hetrd(&mut g, &mut flow, &parts);
    // A second flow does not see hetrd's writes: no edges to it.
    let mut other = Flow::new();
    add_back_transform(&mut g, &mut other, &parts, 16);
    assert!(g.check_races().is_err());
}

#[test]
fn the_imaginary_part_of_the_diagonal_is_ignored() {
    let n = 60;
    let a = random_hermitian::<c64>(n, 4);
    let mut b = a.clone();
    for i in 0..n {
        b[(i, i)].im = 1.0 + i as f64;
    }
    // The diagonal's imaginary part may even be NaN: it is not read.
    b[(3, 3)].im = f64::NAN;
    let (ra, rb) = (solve(&a, EvdJob::Vectors, 2), solve(&b, EvdJob::Vectors, 2));
    assert!(ra.values == rb.values && ra.vectors == rb.vectors);
}

#[test]
fn upper_side_reads_the_conjugate_mirror() {
    let n = 45;
    let a = random_hermitian::<c64>(n, 8);
    let mut upper_only = a.clone();
    for j in 0..n {
        for i in j + 1..n {
            upper_only[(i, j)] = c64::new(f64::NAN, f64::NAN);
        }
    }
    let rt = Runtime::builder().threads(2).build();
    let opts = EvdOptions {
        side: Side::Upper,
        ..EvdOptions::default()
    };
    let up_ = eigh(upper_only.as_ref(), EvdJob::Vectors, &opts, &rt).unwrap();
    let r = ratios(&a, 1.0, &up_.values, up_.vectors.as_ref());
    assert!(r.iter().all(|&x| x < 30.0), "{r:?}");
}

#[test]
fn nan_in_either_part_names_row_and_column() {
    let rt = Runtime::builder().threads(1).build();
    let a = random_hermitian::<c64>(8, 1);
    for (i, j, z) in [
        (5, 2, c64::new(f64::NAN, 0.0)),
        (6, 1, c64::new(0.5, f64::NAN)),
        (7, 7, c64::new(f64::INFINITY, 0.0)),
    ] {
        let mut b = a.clone();
        b[(i, j)] = z;
        let before = b.clone();
        match eigh(b.as_ref(), EvdJob::Vectors, &EvdOptions::default(), &rt) {
            Err(Error::NonFinite { row, col, .. }) => assert_eq!((row, col), (i, j)),
            other => panic!("({i}, {j}): {:?}", other.map(|e| e.values)),
        }
        assert!(b.as_ref() == before.as_ref() || b[(i, j)].re.is_nan() || b[(i, j)].im.is_nan());
    }
    // In the triangle not read: no error.
    let mut b = a.clone();
    b[(1, 6)] = c64::new(f64::NAN, f64::NAN);
    assert!(eigh(b.as_ref(), EvdJob::Values, &EvdOptions::default(), &rt).is_ok());
    let rect = Mat::<c64>::zeros(3, 4);
    assert!(matches!(
        eigh(rect.as_ref(), EvdJob::Values, &EvdOptions::default(), &rt),
        Err(Error::Shape(_))
    ));
}

#[test]
fn selection_matches_the_full_problem() {
    let n = 120;
    let a = random_hermitian::<c64>(n, 12);
    let full = solve(&a, EvdJob::Vectors, 2);
    let rt = Runtime::builder().threads(2).build();
    for sel in [
        Selection::Largest(5),
        Selection::Smallest(3),
        Selection::Index(40..47),
    ] {
        let opts = EvdOptions {
            selection: Some(sel.clone()),
            ..EvdOptions::default()
        };
        let part = eigh(a.as_ref(), EvdJob::Vectors, &opts, &rt).unwrap();
        let idx = sel.indices(n).unwrap().unwrap();
        let x = part.vectors.unwrap();
        assert_eq!((x.nrows(), x.ncols()), (n, idx.len()));
        let at = seen(&a, 1.0);
        let eps = f64::EPSILON * 0.5;
        let norm = at.norm_l2();
        for (k, i) in idx.enumerate() {
            let (w, want) = (part.values[k], full.values[i]);
            assert!(
                (w - want).abs() < 30.0 * n as f64 * norm * eps,
                "{sel:?} {k}"
            );
            let xk = Mat::from_fn(n, 1, |r, _| x[(r, k)]);
            let wx = Mat::from_fn(n, 1, |r, _| x[(r, k)] * w);
            let res = (&at * &xk - &wx).norm_l2() / (n as f64 * norm * eps);
            assert!(res < 30.0, "{sel:?} {k}: {res}");
        }
        let orth = (x.adjoint() * &x - Mat::<c64>::identity(x.ncols(), x.ncols())).norm_l2()
            / (n as f64 * eps);
        assert!(orth < 30.0, "{sel:?}: {orth}");
    }
}

#[test]
fn the_one_call_api_takes_complex() {
    let a = random_hermitian::<c64>(30, 21);
    let eig = crate::eigh(&a).unwrap();
    let w = crate::eigvalsh(a.as_ref()).unwrap();
    let r = ratios(&a, 1.0, &eig.values, Some(&eig.vectors));
    assert!(r.iter().all(|&x| x < 30.0), "{r:?}");
    assert_eq!(w.len(), 30);
    let top = crate::eigh_select(&a, Selection::Largest(2)).unwrap();
    assert!((top.values[1] - eig.values[29]).abs() < 1e-12);
    let a32 = random_hermitian::<c32>(30, 21);
    let w32: Vec<f32> = crate::eigvalsh(&a32).unwrap();
    assert!(w32.windows(2).all(|p| p[0] <= p[1]));
    // The empty matrix.
    let e = crate::eigh(&Mat::<c64>::zeros(0, 0)).unwrap();
    assert!(e.values.is_empty() && e.vectors.ncols() == 0);
}
