//! Tests of the parent module.

use super::*;
use crate::linalg::back_transform::q1::{apply_q1_left_cols, form_q1, Q1Blocks};
use crate::linalg::householder::testutil::*;

/// Worst ratios of one reduction: [backward error, orthogonality, eigenvalues].
fn case<T: Scalar>(n: usize, b: usize, nb: usize, rng: &mut Rng) -> [f64; 3] {
    let full = {
        let r = random::<T>(n, n, rng);
        Mat::<T>::from_fn(n, n, |i, j| if i >= j { r[(i, j)] } else { r[(j, i)] })
    };
    // Lower triangle only; NaN above so any read of the upper part shows.
    let mut a = Mat::<T>::from_fn(n, n, |i, j| if i >= j { full[(i, j)] } else { T::nan() });
    let f = sy2sb_reference(a.as_mut(), b, nb);
    assert_eq!(f.panels(), panel_count(n, b));
    for j in 0..n {
        for i in 0..j {
            assert!(
                a[(i, j)].is_nan(),
                "upper triangle was written at ({i}, {j})"
            );
        }
    }
    let band = extract_band(a.as_ref(), b);
    // Exact zeros outside the band, including the stored bulge rows.
    for j in 0..n {
        for i in j..n {
            let x = band.get(i, j);
            assert!(x.is_finite(), "non-finite band entry ({i}, {j})");
            if i - j > b {
                assert_eq!(x, T::zero(), "off-band entry ({i}, {j}) = {x}");
            }
        }
    }
    let bf = Mat::<f64>::from_fn(n, n, |i, j| band.get(i, j).f64());
    let q = form_q1(a.as_ref(), &f);
    let qf = to_f64(q.as_ref());
    // Q1 by form_q1 and by apply_q1_left (split over two column blocks) agree.
    let mut q2 = Mat::<T>::identity(n, n);
    let h = n / 2;
    apply_q1_left_cols(a.as_ref(), &f, q2.as_mut(), 0..h);
    apply_q1_left_cols(a.as_ref(), &f, q2.as_mut(), h..n);
    let d = fro((to_f64(q2.as_ref()) - &qf).as_ref());
    let eps = T::EPS.f64();
    let nn = n.max(1) as f64;
    assert!(
        d <= 30.0 * nn * eps * nn.sqrt(),
        "apply_q1_left vs form_q1: {d}"
    );
    for group in [2, 3] {
        let blocks = Q1Blocks::new(a.as_ref(), &f, group);
        let mut q3 = Mat::<T>::identity(n, n);
        blocks.apply_left(a.as_ref(), q3.as_mut());
        let d = fro((to_f64(q3.as_ref()) - &qf).as_ref());
        assert!(
            d <= 30.0 * nn * eps * nn.sqrt(),
            "Q1Blocks({group}) vs form_q1: {d}"
        );
    }
    let af = to_f64(full.as_ref());
    let anorm = fro(af.as_ref()).max(1e-300);
    let back = fro((qf.transpose() * &af * &qf - &bf).as_ref()) / (nn * anorm * eps);
    let orth = orth_err(qf.as_ref()) / (nn * eps);
    let mut eig = 0.0f64;
    if n > 0 {
        let la = af.self_adjoint_eigenvalues(faer::Side::Lower).unwrap();
        let lb = bf.self_adjoint_eigenvalues(faer::Side::Lower).unwrap();
        for (x, y) in la.iter().zip(&lb) {
            eig = eig.max((x - y).abs() / (nn * anorm * eps));
        }
    }
    [back, orth, eig]
}

/// Runs all `b` in {4, 8, 32} and `nb` in {b, 2b, 4b} on the `sizes`, plus
/// (if `band_sizes`) the sizes b, b+1, b+2, 2b+1 that depend on `b`.
fn sweep<T: Scalar>(seed: u64, sizes: &[usize], band_sizes: bool) -> [f64; 3] {
    let mut rng = Rng::new(seed);
    let mut worst = [0.0f64; 3];
    for b in [4, 8, 32] {
        let mut ns = sizes.to_vec();
        if band_sizes {
            ns.extend([b, b + 1, b + 2, 2 * b + 1]);
        }
        {
            for n in ns {
                for nb in [b, 2 * b, 4 * b] {
                    let r = case::<T>(n, b, nb, &mut rng);
                    for (w, x) in worst.iter_mut().zip(r) {
                        *w = w.max(x);
                    }
                    assert!(
                        r.iter().all(|&x| x < 30.0),
                        "{} n={n} b={b} nb={nb}: ratios {r:?}",
                        T::NAME
                    );
                }
            }
        }
    }
    eprintln!(
        "sy2sb {} sizes {sizes:?}: worst [backward, orth, eig] {worst:?}",
        T::NAME
    );
    worst
}

#[test]
fn sy2sb_small_f64() {
    sweep::<f64>(10, &[0, 1, 2, 3, 100], true);
}

#[test]
fn sy2sb_small_f32() {
    sweep::<f32>(11, &[0, 1, 2, 3, 100], true);
}

#[test]
fn sy2sb_257_f64() {
    sweep::<f64>(12, &[257], false);
}

#[test]
fn sy2sb_257_f32() {
    sweep::<f32>(13, &[257], false);
}

#[test]
fn sy2sb_517_f64() {
    sweep::<f64>(14, &[517], false);
}

#[test]
fn sy2sb_517_f32() {
    sweep::<f32>(15, &[517], false);
}

#[test]
fn tiny_sizes_are_untouched() {
    let mut rng = Rng::new(16);
    for (n, b) in [(0, 1), (1, 1), (2, 1), (5, 4), (9, 8), (33, 32)] {
        let a0 = random::<f64>(n, n, &mut rng);
        let mut a = a0.clone();
        let f = sy2sb_reference(a.as_mut(), b, b);
        assert_eq!(f.panels(), 0);
        assert!(a == a0);
        assert!(form_q1(a.as_ref(), &f) == Mat::<f64>::identity(n, n));
    }
}

#[test]
fn trailing_blocks_follow_the_grid() {
    assert_eq!(
        trailing_blocks(100, 8, 0, 32),
        vec![8..32, 32..64, 64..96, 96..100]
    );
    assert_eq!(
        trailing_blocks(100, 8, 3, 32),
        vec![32..64, 64..96, 96..100]
    );
    assert_eq!(trailing_blocks(10, 4, 1, 4), vec![8..10]);
    assert_eq!(panel_count(10, 4), 2);
    assert_eq!(panel_count(9, 8), 0);
    assert_eq!(panel_count(10, 8), 1);
}

#[test]
fn broken_update_is_detected() {
    // Tests must be able to fail: dropping the V M correction of form_w (using
    // W = X) must push the backward error far past the threshold.
    let n = 40;
    let b = 4;
    let mut rng = Rng::new(17);
    let r = random::<f64>(n, n, &mut rng);
    let full = Mat::<f64>::from_fn(n, n, |i, j| if i >= j { r[(i, j)] } else { r[(j, i)] });
    let mut a = full.clone();
    let np = panel_count(n, b);
    let mut ts = Vec::new();
    for p in 0..np {
        let r0 = (p + 1) * b;
        let m = n - r0;
        let mut t = Mat::<f64>::zeros(b, b);
        let mut v = Mat::<f64>::zeros(m, b);
        panel_kernel(
            a.as_mut().submatrix_mut(r0, p * b, m, b),
            t.as_mut(),
            v.as_mut(),
        );
        // [V X V], as form_w lays out [V W V].
        let mut x = Mat::<f64>::zeros(m, 3 * b);
        symm_tile_row(
            a.as_ref().submatrix(r0, r0, m, m),
            a.as_ref().submatrix(n, r0, 0, m),
            v.as_ref(),
            t.as_ref(),
            x.as_mut().subcols_mut(b, b),
        );
        x.as_mut().subcols_mut(0, b).copy_from(&v);
        x.as_mut().subcols_mut(2 * b, b).copy_from(&v);
        // (form_w skipped on purpose)
        syr2k_tile(
            a.as_mut().submatrix_mut(r0, r0, m, m),
            x.as_ref().subcols(0, 2 * b),
            x.as_ref().subcols(b, 2 * b),
            true,
        );
        ts.push(t);
    }
    let f = Sy2sbFactors::new(n, b, ts);
    let band = extract_band(a.as_ref(), b);
    let bf = Mat::<f64>::from_fn(n, n, |i, j| band.get(i, j));
    let q = form_q1(a.as_ref(), &f);
    let back = fro((q.transpose() * &full * &q - &bf).as_ref())
        / (n as f64 * fro(full.as_ref()) * f64::EPSILON / 2.0);
    assert!(back > 1e6, "the check missed a wrong update: {back}");
}
