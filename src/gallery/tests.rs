//! Tests of the parent module.

use super::*;

fn is_symmetric<T: Scalar>(a: &Mat<T>) -> bool {
    let n = a.nrows();
    a.ncols() == n && (0..n).all(|j| (0..n).all(|i| a[(i, j)] == a[(j, i)]))
}

fn max_abs_diff(a: MatRef<'_, f64>, b: MatRef<'_, f64>) -> f64 {
    (a - b).norm_max()
}

/// Eigenvalues by faer (the test oracle), ascending.
fn faer_eigs(a: &Mat<f64>) -> Vec<f64> {
    let mut v = a
        .self_adjoint_eigenvalues(faer::Side::Lower)
        .expect("faer eigenvalues");
    v.sort_by(f64::total_cmp);
    v
}

#[test]
fn random_matrices_are_deterministic_and_symmetric() {
    for n in [0, 1, 2, 7, 33] {
        let a = random_symmetric_uniform::<f64>(n, 5);
        assert!(is_symmetric(&a));
        assert_eq!(a, random_symmetric_uniform::<f64>(n, 5));
        assert!(a.norm_max() <= 1.0);
        let g = random_symmetric_gaussian::<f32>(n, 5);
        assert!(is_symmetric(&g));
        // f32 is the rounded f64 matrix.
        let g64 = random_symmetric_gaussian::<f64>(n, 5);
        assert_eq!(g, Mat::from_fn(n, n, |i, j| g64[(i, j)] as f32));
    }
    assert_ne!(
        random_symmetric_uniform::<f64>(4, 1),
        random_symmetric_uniform::<f64>(4, 2)
    );
    let r = random_gaussian::<f64>(5, 3, 1);
    assert_eq!(r.shape(), (5, 3));
    assert_eq!(random_uniform::<f32>(2, 6, 1).shape(), (2, 6));
}

#[test]
fn orthogonal_is_orthogonal() {
    for n in [1, 2, 5, 40, 130] {
        let q = random_orthogonal::<f64>(n, 11);
        let err = max_abs_diff((q.transpose() * &q).as_ref(), Mat::identity(n, n).as_ref());
        assert!(err < 50.0 * n as f64 * f64::EPSILON, "n = {n}: {err}");
        assert_eq!(q, random_orthogonal::<f64>(n, 11));
    }
    let q = random_orthogonal::<f32>(20, 3);
    let err = (q.transpose() * &q - Mat::<f32>::identity(20, 20)).norm_max();
    assert!(err < 1e-5, "{err}");
}

#[test]
fn with_spectrum_has_the_spectrum() {
    for n in [1, 2, 3, 17, 64] {
        let eigs = arithmetic::<f64>(n, -3.0, 5.0);
        let a = with_spectrum(&eigs, 1);
        assert!(is_symmetric(&a));
        let got = faer_eigs(&a);
        for (x, y) in got.iter().zip(&eigs) {
            assert!(
                (x - y).abs() < 100.0 * n as f64 * f64::EPSILON * 5.0,
                "{x} {y}"
            );
        }
    }
}

#[test]
fn with_singular_values_has_them() {
    let s = [3.0, 2.0, 0.5];
    let a = with_singular_values::<f64>(7, 4, &s, 2);
    assert_eq!(a.shape(), (7, 4));
    let mut sv = a.singular_values().unwrap();
    sv.sort_by(|x, y| y.total_cmp(x));
    for (x, y) in sv.iter().zip(s.iter().chain([0.0].iter())) {
        assert!((x - y).abs() < 1e-13, "{sv:?}");
    }
}

#[test]
fn spectra_helpers() {
    assert_eq!(arithmetic::<f64>(1, 2.0, 5.0), vec![2.0]);
    assert_eq!(arithmetic::<f64>(0, 2.0, 5.0), Vec::<f64>::new());
    let g = geometric::<f64>(5, 1e8);
    assert_eq!(g[4], 1.0);
    assert!((g[0] - 1e-8).abs() < 1e-22);
    assert!(g.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(geometric::<f64>(1, 1e8), vec![1.0]);
    let c = clustered::<f64>(10, 3, 1e-6);
    assert_eq!(c.len(), 10);
    assert!(c.windows(2).all(|w| w[0] <= w[1]));
    assert!(c.iter().all(|x| (x - x.round()).abs() <= 2e-6 * x.round()));
    assert_eq!(clustered::<f64>(1, 3, 1e-6), vec![1.0]);
    let r = repeated::<f64>(10, 3);
    assert_eq!(r, vec![1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 3.0, 3.0, 3.0]);
    assert_eq!(repeated::<f64>(2, 5), vec![1.0, 3.0]);
    assert!(repeated::<f64>(0, 3).is_empty());
}

#[test]
fn graded_is_graded() {
    let n = 16;
    let a = graded::<f64>(n, 3);
    assert!(is_symmetric(&a));
    let g = random_symmetric_gaussian::<f64>(n, 3);
    // Bottom-right is scaled by 10^(-16 * 15/16).
    let ratio = a[(n - 1, n - 1)] / g[(n - 1, n - 1)];
    assert!((ratio / 10f64.powf(-15.0) - 1.0).abs() < 1e-12, "{ratio}");
    assert_eq!(a[(0, 0)], g[(0, 0)]);
}

#[test]
fn wilkinson_matrices() {
    let (d, e) = wilkinson_tridiagonal::<f64>(4);
    assert_eq!(d, vec![1.5, 0.5, 0.5, 1.5]);
    assert_eq!(e.len(), 3);
    let w = wilkinson::<f64>(21);
    let l = faer_eigs(&w);
    // The famous pair: the two largest eigenvalues of W21+ agree to ~1e-13.
    assert!((l[20] - 10.746194182903393).abs() < 1e-12, "{}", l[20]);
    assert!((l[20] - l[19]).abs() < 1e-12);
    let gw = glued_wilkinson::<f64>(3, 21, 1e-14);
    assert_eq!(gw.shape(), (63, 63));
    assert_eq!(gw[(21, 20)], 1e-14);
    assert!(is_symmetric(&gw));
    let (d, e) = wilkinson_tridiagonal::<f64>(0);
    assert!(d.is_empty() && e.is_empty());
    assert_eq!(wilkinson::<f64>(1)[(0, 0)], 0.0);
}

#[test]
fn toeplitz_eigenvalues_match_faer() {
    for n in [1, 2, 9, 50] {
        let a = toeplitz_121::<f64>(n);
        let got = faer_eigs(&a);
        let want = toeplitz_121_eigenvalues::<f64>(n);
        for (x, y) in got.iter().zip(&want) {
            assert!((x - y).abs() < 1e-13, "n = {n}: {x} vs {y}");
        }
    }
}

#[test]
fn band_random_has_the_band() {
    let a = band_random::<f64>(10, 3, 1);
    assert!(is_symmetric(&a));
    for j in 0..10usize {
        for i in 0..10usize {
            assert_eq!(a[(i, j)] != 0.0, i.abs_diff(j) <= 3, "({i}, {j})");
        }
    }
    let d = band_random::<f32>(5, 0, 1);
    assert_eq!(d[(1, 0)], 0.0);
}

#[test]
fn every_family_generates_and_matches_its_known_spectrum() {
    let mut names = std::collections::HashSet::new();
    for family in Family::ALL {
        assert!(names.insert(family.name()), "duplicate name {family}");
        assert_eq!(family.name().parse::<Family>().unwrap(), family);
        for n in [0, 1, 2, 3, 22, 45] {
            let a = family.generate::<f64>(n, 17);
            assert_eq!(a.shape(), (n, n), "{family}");
            assert!(is_symmetric(&a), "{family} n = {n}");
            assert!(a.norm_max().is_finite(), "{family}");
            assert_eq!(
                a,
                family.generate::<f64>(n, 17),
                "{family} not deterministic"
            );
            let a32 = family.generate::<f32>(n, 17);
            assert!(is_symmetric(&a32), "{family} f32");
            if let Some(want) = family.eigenvalues::<f64>(n, 17) {
                assert_eq!(want.len(), n);
                let got = faer_eigs(&a);
                let scale = want.iter().fold(1.0f64, |m, x| m.max(x.abs()));
                for (x, y) in got.iter().zip(&want) {
                    assert!(
                        (x - y).abs() < 100.0 * n as f64 * f64::EPSILON * scale,
                        "{family} n = {n}: {x} vs {y}"
                    );
                }
            }
        }
    }
    assert!("nonsense".parse::<Family>().is_err());
    assert_eq!(
        "Geometric-1e12".parse::<Family>().unwrap(),
        Family::Geometric { log10_cond: 12 }
    );
}

#[test]
fn glued_family_blocks() {
    let a = Family::GluedWilkinson.generate::<f64>(45, 0);
    // Blocks of 21, 21 and 3: glue at 21 and 42.
    assert_eq!(a[(21, 20)], GLUED_GLUE);
    assert_eq!(a[(42, 41)], GLUED_GLUE);
    assert_eq!(a[(43, 42)], 1.0);
    assert_eq!(a[(42, 42)], 1.0);
    assert_eq!(a[(43, 43)], 0.0);
}
