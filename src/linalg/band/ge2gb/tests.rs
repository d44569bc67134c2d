//! Tests of the parent module.

use super::*;
use crate::linalg::band::gb2bd::{self, UpperBand};
use crate::linalg::householder::testutil::*;

/// Worst ratios of one reduction: `[reconstruction, orth Q1_U, orth Q1_V,
/// singular values]`, each scaled as LAPACK does (`max(m, n) eps`).
fn case<T: Scalar>(m: usize, n: usize, b: usize, nb: usize, rng: &mut Rng) -> [f64; 4] {
    let a0 = random::<T>(m, n, rng);
    let mut a = a0.clone();
    let f = ge2gb_serial(a.as_mut(), b, nb);
    let band = UpperBand::from_dense(a.as_ref(), b, b, 0);
    // Exactly zero outside the band (storage rows and padding included).
    for j in 0..n {
        for i in 0..n {
            let x = band.get(i, j);
            assert!(x.is_finite());
            if i > j || j - i > b {
                assert!(x == T::zero(), "({i}, {j}) outside the band is {x}");
            }
        }
    }
    // Also through the hand-off kernel, in two column blocks.
    let mut fed = UpperBand::<T>::zeros(n, b, 0);
    copy_band_cols(a.as_ref(), b, 0..n / 2, &mut fed.view());
    copy_band_cols(a.as_ref(), b, n / 2..n, &mut fed.view());
    assert_eq!(
        fed.as_slice(),
        band.as_slice(),
        "copy_band_cols differs from from_dense"
    );

    // A = Q1_U [B; 0] Q1_V^T, with U applied by column blocks and V^T by row blocks.
    let mut x = Mat::<T>::zeros(m, n);
    x.as_mut()
        .submatrix_mut(0, 0, n, n)
        .copy_from(band.to_dense());
    let h = n / 2;
    apply_q1u(a.as_ref(), &f, x.as_mut().subcols_mut(0, h));
    apply_q1u(a.as_ref(), &f, x.as_mut().subcols_mut(h, n - h));
    let h = m / 3;
    apply_q1vt(a.as_ref(), &f, x.as_mut().subrows_mut(0, h));
    apply_q1vt(a.as_ref(), &f, x.as_mut().subrows_mut(h, m - h));
    let eps = T::EPS.f64();
    let mm = m.max(n).max(1) as f64;
    let a0f = to_f64(a0.as_ref());
    let anorm = fro(a0f.as_ref()).max(1e-300);
    let rec = fro((to_f64(x.as_ref()) - &a0f).as_ref()) / (mm * anorm * eps);

    let mut qu = Mat::<T>::identity(m, m);
    apply_q1u(a.as_ref(), &f, qu.as_mut());
    let mut qv = Mat::<T>::identity(n, n);
    apply_q1v(a.as_ref(), &f, qv.as_mut());
    // apply_q1vt on the identity is Q1_V^T.
    let mut qvt = Mat::<T>::identity(n, n);
    apply_q1vt(a.as_ref(), &f, qvt.as_mut());
    let d = fro((to_f64(qvt.as_ref()) - to_f64(qv.as_ref()).transpose()).as_ref());
    assert!(
        d <= 30.0 * mm * eps * (n.max(1) as f64).sqrt(),
        "apply_q1v vs apply_q1vt: {d}"
    );
    let ou = orth_err(to_f64(qu.as_ref()).as_ref()) / (mm * eps);
    let ov = orth_err(to_f64(qv.as_ref()).as_ref()) / (mm * eps);

    let s_ref = gb2bd::tests::singular_values(&a0f);
    let s = gb2bd::tests::singular_values(&to_f64(band.to_dense().as_ref()));
    let sv = gb2bd::tests::sv_ratio(&s, &s_ref, m.max(n), eps);
    [rec, ou, ov, sv]
}

fn sweep<T: Scalar>(seed: u64) -> [f64; 4] {
    let mut rng = Rng::new(seed);
    let mut worst = [0.0f64; 4];
    for b in [1usize, 3, 8, 16] {
        for n in [0, 1, 2, 3, b, b + 1, 2 * b + 1, 200] {
            for (m, nb) in [(n, b), (n + 97, 2 * b + 1)] {
                let r = case::<T>(m, n, b, nb, &mut rng);
                assert!(
                    r.iter().all(|&x| x < 30.0),
                    "{} m {m} n {n} b {b} nb {nb}: {r:?}",
                    T::NAME
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
fn ge2gb_reconstructs_and_is_orthogonal() {
    let w64 = sweep::<f64>(1);
    let w32 = sweep::<f32>(2);
    eprintln!("ge2gb worst [||A - Q1_U B Q1_V^T||, orth Q1_U, orth Q1_V, sv] / (max(m,n) eps ...): f64 {w64:.3?}, f32 {w32:.3?}");
}

/// The full-block updates equal the compact-WY application of the shared
/// module (with the implicit V) to rounding.
#[test]
fn block_updates_match_householder_module() {
    let mut rng = Rng::new(5);
    let (m, w, nc) = (37, 8, 11);
    let mut panel = random::<f64>(m, w, &mut rng);
    let mut t = Mat::<f64>::zeros(w, w);
    let mut v = Mat::<f64>::zeros(m, w);
    qr_panel(panel.as_mut(), t.as_mut(), v.as_mut());
    let c0 = random::<f64>(m, nc, &mut rng);
    let mut c1 = c0.clone();
    left_update(v.as_ref(), t.as_ref(), c1.as_mut());
    let mut c2 = c0.clone();
    apply_block_reflector_left(panel.as_ref(), t.as_ref(), c2.as_mut(), true);
    assert!((&c1 - &c2).norm_l2() < 1e-13 * c0.norm_l2());
    let d0 = random::<f64>(nc, m, &mut rng);
    let mut d1 = d0.clone();
    right_update(v.as_ref(), t.as_ref(), d1.as_mut());
    let mut d2 = d0.clone();
    apply_block_reflector_right(panel.as_ref(), t.as_ref(), d2.as_mut(), false);
    assert!((&d1 - &d2).norm_l2() < 1e-13 * d0.norm_l2());
}

/// Stages 1 and 2 together: A (tall) -> band -> bidiagonal keeps the singular
/// values, and `Q1_U Q2_U B Q2_V^T Q1_V^T` reconstructs A.
#[test]
fn ge2gb_then_gb2bd() {
    let mut worst = [0.0f64; 2];
    for (m, n, b) in [(120usize, 100usize, 16usize), (70, 70, 8), (53, 40, 5)] {
        let mut rng = Rng::new(m as u64);
        let a0 = random::<f64>(m, n, &mut rng);
        let mut a = a0.clone();
        let f = ge2gb_serial(a.as_mut(), b, 2 * b);
        let passes = gb2bd::schedule(b, gb2bd::tile_width::<f64>() / 2);
        let (ku, kl) = gb2bd::storage_offsets(b, &passes);
        let mut band = UpperBand::from_dense(a.as_ref(), b, ku, kl);
        let mut refl = gb2bd::Gb2bdReflectors::new(n, &passes);
        gb2bd::gb2bd_serial(&mut band, &passes, Some(&mut refl));
        assert_eq!(band.bandwidths_used().1, 0);
        assert!(band.bandwidths_used().0 <= 1);
        let mut x = Mat::<f64>::zeros(m, n);
        let bd = band.to_dense();
        x.as_mut().submatrix_mut(0, 0, n, n).copy_from(&bd);
        gb2bd::apply_q2u(&refl, x.as_mut().submatrix_mut(0, 0, n, n));
        apply_q1u(a.as_ref(), &f, x.as_mut());
        gb2bd::apply_q2vt(&refl, x.as_mut());
        apply_q1vt(a.as_ref(), &f, x.as_mut());
        let eps = f64::EPSILON / 2.0;
        let rec = (&x - &a0).norm_l2() / (m as f64 * a0.norm_l2() * eps);
        let sv = gb2bd::tests::sv_ratio(
            &gb2bd::tests::singular_values(&bd),
            &gb2bd::tests::singular_values(&a0),
            m,
            eps,
        );
        worst = [worst[0].max(rec), worst[1].max(sv)];
        assert!(rec < 30.0 && sv < 30.0, "m {m} n {n} b {b}: {rec} {sv}");
    }
    eprintln!("ge2gb + gb2bd worst [reconstruction, sv] ratio: {worst:.3?}");
}

/// A wide matrix is reduced through its transpose as a view (no copy): the
/// kernels accept the row-major view, and the factors read through it give
/// `A^T = Q1_U [B; 0] Q1_V^T`.
#[test]
fn wide_through_transposed_view() {
    let mut rng = Rng::new(8);
    let (rows, cols, b) = (40usize, 77usize, 6usize);
    let a0 = random::<f64>(rows, cols, &mut rng);
    let mut a = a0.clone();
    let f = ge2gb_serial(a.as_mut().transpose_mut(), b, 2 * b);
    let at = a.as_ref().transpose();
    let band = UpperBand::from_dense(at, b, b, 0);
    let mut x = Mat::<f64>::zeros(cols, rows);
    x.as_mut()
        .submatrix_mut(0, 0, rows, rows)
        .copy_from(band.to_dense());
    apply_q1u(at, &f, x.as_mut());
    apply_q1vt(at, &f, x.as_mut());
    let eps = f64::EPSILON / 2.0;
    let rec = (&x - a0.transpose()).norm_l2() / (cols as f64 * a0.norm_l2() * eps);
    eprintln!("ge2gb wide (transposed view) reconstruction ratio {rec:.3}");
    assert!(rec < 30.0, "{rec}");
}
