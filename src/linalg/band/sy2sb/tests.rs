//! Tests of the parent module.

use super::*;
use crate::linalg::back_transform::q1::{apply_q1_left_cols, form_q1, Q1Blocks};
use crate::linalg::householder::testutil::*;

/// Worst ratios of one reduction: [backward error, orthogonality, eigenvalues].
fn case<T: Scalar>(n: usize, b: usize, nb: usize, group: usize, rng: &mut Rng) -> [f64; 3] {
    let full = {
        let r = random::<T>(n, n, rng);
        Mat::<T>::from_fn(n, n, |i, j| if i >= j { r[(i, j)] } else { r[(j, i)] })
    };
    // Lower triangle only; NaN above so any read of the upper part shows.
    let mut a = Mat::<T>::from_fn(n, n, |i, j| if i >= j { full[(i, j)] } else { T::nan() });
    let f = sy2sb_reference_grouped(a.as_mut(), b, nb, group);
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

/// Runs all `b` in {4, 8, 32}, `nb` in {b, 2b, 4b} and groups of 1, 2 and 3
/// panels on the `sizes`, plus
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
                for (nb, group) in [b, 2 * b, 4 * b]
                    .into_iter()
                    .flat_map(|nb| [(nb, 1), (nb, 2), (nb, 3)])
                {
                    let r = case::<T>(n, b, nb, group, &mut rng);
                    for (w, x) in worst.iter_mut().zip(r) {
                        *w = w.max(x);
                    }
                    assert!(
                        r.iter().all(|&x| x < 30.0),
                        "{} n={n} b={b} nb={nb} group={group}: ratios {r:?}",
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

/// Groups of two panels driven by hand, with the corrections for the
/// group's first panel optionally dropped: `(skip_correction,
/// skip_lookahead)`. Returns the reduced matrix and its factors.
fn grouped_by_hand(full: &Mat<f64>, b: usize, skip: (bool, bool)) -> (Mat<f64>, Sy2sbFactors<f64>) {
    let n = full.nrows();
    let mut a = full.clone();
    let np = panel_count(n, b);
    let mut ts = Vec::new();
    for panels in panel_groups(np, 2) {
        let (g, r0) = (panels.len(), (panels.start + 1) * b);
        let mut ws = Mat::<f64>::zeros(n - r0, 3 * g * b);
        for (k, p) in panels.clone().enumerate() {
            let (rp, kb) = ((p + 1) * b, k * b);
            let m = n - rp;
            if k > 0 && !skip.1 {
                let rows = n - p * b;
                update_next_panel(
                    a.as_mut().submatrix_mut(p * b, p * b, rows, b),
                    ws.as_ref().submatrix(kb - b, 0, rows, kb),
                    ws.as_ref().submatrix(kb - b, g * b, rows, kb),
                );
            }
            let mut t = Mat::<f64>::zeros(b, b);
            let mut v = Mat::<f64>::zeros(m, b);
            panel_kernel(
                a.as_mut().submatrix_mut(rp, p * b, m, b),
                t.as_mut(),
                v.as_mut(),
            );
            symm_tile_row(
                a.as_ref().submatrix(rp, rp, m, m),
                a.as_ref().submatrix(n, rp, 0, m),
                v.as_ref(),
                t.as_ref(),
                ws.as_mut().submatrix_mut(kb, g * b + kb, m, b),
            );
            if skip.0 && k > 0 {
                // form_w as for a group's first panel: no correction of X.
                let mut own = Mat::<f64>::zeros(m, 3 * b);
                own.as_mut()
                    .subcols_mut(b, b)
                    .copy_from(ws.as_ref().submatrix(kb, g * b + kb, m, b));
                form_w(own.as_mut(), v.as_ref(), t.as_ref());
                for part in 0..3 {
                    ws.as_mut()
                        .submatrix_mut(kb, (part * g + k) * b, m, b)
                        .copy_from(own.as_ref().subcols(part * b, b));
                }
            } else {
                form_w_in_group(ws.as_mut().subrows_mut(kb, m), v.as_ref(), t.as_ref(), g, k);
            }
            ts.push(t);
        }
        let rows = panels.end * b;
        let mt = n - rows;
        let off = rows - r0;
        syr2k_tile(
            a.as_mut().submatrix_mut(rows, rows, mt, mt),
            ws.as_ref().submatrix(off, 0, mt, 2 * g * b),
            ws.as_ref().submatrix(off, g * b, mt, 2 * g * b),
            true,
        );
    }
    (a, Sy2sbFactors::new(n, b, ts))
}

#[test]
fn grouped_update_needs_its_corrections() {
    // Tests must be able to fail: the driver above reproduces the reference
    // bit for bit with nothing skipped (one tile: the same operations), and
    // dropping the correction of X or the lookahead update of the group's
    // second panel pushes the backward error far past the threshold.
    let (n, b) = (40, 4);
    let mut rng = Rng::new(18);
    let r = random::<f64>(n, n, &mut rng);
    let full = Mat::<f64>::from_fn(n, n, |i, j| if i >= j { r[(i, j)] } else { r[(j, i)] });
    let mut reference = full.clone();
    sy2sb_reference_grouped(reference.as_mut(), b, n.next_multiple_of(b), 2);
    let (same, _) = grouped_by_hand(&full, b, (false, false));
    for j in 0..n {
        for i in j..n {
            assert_eq!(
                same[(i, j)].to_bits(),
                reference[(i, j)].to_bits(),
                "({i}, {j})"
            );
        }
    }
    for skip in [(true, false), (false, true)] {
        let (a, f) = grouped_by_hand(&full, b, skip);
        let band = extract_band(a.as_ref(), b);
        let bf = Mat::<f64>::from_fn(n, n, |i, j| band.get(i, j));
        let q = form_q1(a.as_ref(), &f);
        let back = fro((q.transpose() * &full * &q - &bf).as_ref())
            / (n as f64 * fro(full.as_ref()) * f64::EPSILON / 2.0);
        assert!(back > 1e6, "the check missed {skip:?}: {back}");
    }
}
