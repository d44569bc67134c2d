//! Tests of the parent module.

use super::testutil::*;
use super::*;

fn check_larfg<T: Scalar>(x0: &[f64]) -> f64 {
    let n = x0.len();
    let mut x = Mat::<T>::from_fn(n, 1, |i, _| T::of(x0[i]));
    let orig = to_f64(x.as_ref());
    let mut alpha = x[(0, 0)];
    let tau = larfg(&mut alpha, x.as_mut().col_mut(0).subrows_mut(1, n - 1));
    // v = (1, x[1..]); H x0 = x0 - tau v (v^T x0) must be (beta, 0, ...).
    let mut v: Vec<f64> = (0..n).map(|i| x[(i, 0)].f64()).collect();
    v[0] = 1.0;
    let dot: f64 = (0..n).map(|i| v[i] * orig[(i, 0)]).sum();
    // ||x|| in f64 with the data scaled by 2^600 so that subnormal inputs keep
    // their accuracy (the scalings are exact).
    let up = 2f64.powi(600);
    let nrm = (0..n)
        .map(|i| (orig[(i, 0)] * up).powi(2))
        .sum::<f64>()
        .sqrt()
        / up;
    // Subnormal results carry only absolute accuracy: measure relative to at
    // least the smallest normal number of T.
    let scale = nrm.max(T::SAFE_MIN.f64());
    let mut err: f64 = 0.0;
    for i in 0..n {
        let hx = orig[(i, 0)] - tau.f64() * v[i] * dot;
        let target = if i == 0 { alpha.f64() } else { 0.0 };
        err = err.max((hx - target).abs() / scale);
    }
    // beta = -sign(alpha) ||x||
    assert!(
        (alpha.f64().abs() - nrm).abs() <= 4.0 * T::EPS.f64() * scale,
        "{} n={n} beta={:e} ||x||={nrm:e}",
        T::NAME,
        alpha.f64()
    );
    if orig[(1, 0)] != 0.0 || n > 2 {
        assert!(alpha.f64() * orig[(0, 0)] <= 0.0 || orig[(0, 0)] == 0.0);
    }
    err / T::EPS.f64()
}

#[test]
fn larfg_reflects_onto_e1() {
    let mut rng = Rng::new(1);
    let mut worst: f64 = 0.0;
    for n in [2, 3, 10, 100] {
        for scale in [1.0, 1e-300, 1e300, 1e-310] {
            let x: Vec<f64> = (0..n).map(|_| rng.uniform() * scale).collect();
            worst = worst.max(check_larfg::<f64>(&x));
        }
        for scale in [1.0f64, 1e-30, 1e30, 1e-40] {
            let x: Vec<f64> = (0..n)
                .map(|_| (rng.uniform() * scale) as f32 as f64)
                .collect();
            worst = worst.max(check_larfg::<f32>(&x));
        }
    }
    eprintln!("larfg worst ratio {worst:.3}");
    assert!(worst < 10.0, "larfg error ratio {worst}");
    // Zero tail: tau = 0 and alpha unchanged.
    let mut x = Mat::<f64>::zeros(3, 1);
    let mut alpha = -2.0;
    assert_eq!(larfg(&mut alpha, x.as_mut().col_mut(0)), 0.0);
    assert_eq!(alpha, -2.0);
    // Deep subnormal tails (faer's norm gives 0 for them) are still
    // annihilated.
    for (a0, t) in [(1.0f64, 1e-320f64), (0.0, 1e-320), (1e-320, 3e-320)] {
        let mut x = Mat::<f64>::from_fn(2, 1, |_, _| t);
        let mut alpha = a0;
        let tau = larfg(&mut alpha, x.as_mut().col_mut(0));
        assert!(
            tau != 0.0 && tau.is_finite() && alpha.is_finite(),
            "{a0} {t}: {tau} {alpha}"
        );
    }
    let r = check_larfg::<f32>(&[1.0, -4.4e-44]);
    assert!(r < 10.0, "f32 subnormal tail ratio {r}");
    // Empty tail.
    let mut x = Mat::<f64>::zeros(0, 1);
    assert_eq!(larfg(&mut alpha, x.as_mut().col_mut(0)), 0.0);
}

/// Builds k reflectors of length m with larfg from a random matrix (garbage
/// above the diagonal), the T factor by larft, and the explicit product of the
/// H_j (in f64) to compare with.
fn reflectors<T: Scalar>(m: usize, k: usize, rng: &mut Rng) -> (Mat<T>, Vec<T>, Mat<T>, Mat<f64>) {
    let mut v = random::<T>(m, k, rng);
    let mut tau = vec![T::zero(); k];
    for j in 0..k.min(m) {
        let mut alpha = v[(j, j)];
        tau[j] = larfg(
            &mut alpha,
            v.as_mut().col_mut(j).subrows_mut(j + 1, m - j - 1),
        );
        // Garbage on and above the diagonal must not be read.
        v[(j, j)] = T::of(7.0);
    }
    for j in 0..k {
        for i in 0..j.min(m) {
            v[(i, j)] = T::nan();
        }
    }
    let mut t = Mat::<T>::from_fn(k, k, |_, _| T::nan());
    larft(v.as_ref(), &tau, t.as_mut());
    let mut q = Mat::<f64>::identity(m, m);
    for j in 0..k.min(m) {
        let mut vj = vec![0.0; m];
        vj[j] = 1.0;
        for i in j + 1..m {
            vj[i] = v[(i, j)].f64();
        }
        // q = q (I - tau v v^T)
        for r in 0..m {
            let d: f64 = (0..m).map(|i| q[(r, i)] * vj[i]).sum();
            for i in 0..m {
                q[(r, i)] -= tau[j].f64() * d * vj[i];
            }
        }
    }
    (v, tau, t, q)
}

fn block_reflector_case<T: Scalar>(m: usize, k: usize, n: usize, rng: &mut Rng) -> f64 {
    let (v, _tau, mut t, q) = reflectors::<T>(m, k, rng);
    let eps = T::EPS.f64();
    let mut worst: f64 = 0.0;
    // T is upper triangular with zeros elsewhere; the kernels must not read the
    // strictly lower part, so fill it with NaN.
    for j in 0..k {
        for i in j + 1..k {
            assert_eq!(t[(i, j)], T::zero());
            t[(i, j)] = T::nan();
        }
    }
    let c0 = random::<T>(m, n, rng);
    let c0f = to_f64(c0.as_ref());
    let cn = fro(c0f.as_ref()).max(1e-300);
    for transpose in [false, true] {
        let mut c = c0.clone();
        apply_block_reflector_left(v.as_ref(), t.as_ref(), c.as_mut(), transpose);
        let expect = if transpose {
            q.transpose() * &c0f
        } else {
            &q * &c0f
        };
        let r = fro((to_f64(c.as_ref()) - &expect).as_ref()) / (cn * eps * m.max(1) as f64);
        worst = worst.max(r);
        // Round trip with the other orientation.
        apply_block_reflector_left(v.as_ref(), t.as_ref(), c.as_mut(), !transpose);
        let r = fro((to_f64(c.as_ref()) - &c0f).as_ref()) / (cn * eps * m.max(1) as f64);
        worst = worst.max(r);
        // Right side: C^T op(Q) on an n x m matrix.
        let mut d = c0.transpose().to_owned();
        apply_block_reflector_right(v.as_ref(), t.as_ref(), d.as_mut(), transpose);
        let expect = if transpose {
            c0f.transpose() * q.transpose()
        } else {
            c0f.transpose() * &q
        };
        let r = fro((to_f64(d.as_ref()) - &expect).as_ref()) / (cn * eps * m.max(1) as f64);
        worst = worst.max(r);
        apply_block_reflector_right(v.as_ref(), t.as_ref(), d.as_mut(), !transpose);
        let r = fro((to_f64(d.as_ref()) - c0f.transpose()).as_ref()) / (cn * eps * m.max(1) as f64);
        worst = worst.max(r);
    }
    worst
}

/// `larf_left` / `larf_right` against the explicit `H = I - tau v v^T`;
/// `tau = 0` leaves the data bitwise unchanged.
#[test]
fn single_reflector_applications() {
    let mut rng = Rng::new(9);
    for (l, k) in [(1usize, 3usize), (2, 1), (5, 4), (17, 9), (33, 0)] {
        let mut alpha = rng.uniform();
        let mut tail: Vec<f64> = (1..l).map(|_| rng.uniform()).collect();
        let tau = larfg_slice(&mut alpha, &mut tail);
        let mut v = vec![1.0];
        v.extend_from_slice(&tail);
        let h = Mat::<f64>::from_fn(l, l, |i, j| (i == j) as u8 as f64 - tau * v[i] * v[j]);
        let z0 = random::<f64>(l, k, &mut rng);
        let mut z = z0.clone();
        larf_left(tau, &tail, z.as_mut());
        assert!((&z - &h * &z0).norm_l2() <= 1e-14 * (1.0 + z0.norm_l2()));
        let y0 = random::<f64>(k, l, &mut rng);
        let mut y = y0.clone();
        let mut w = vec![0.0; k];
        larf_right(tau, &tail, y.as_mut(), &mut w);
        assert!((&y - &y0 * &h).norm_l2() <= 1e-14 * (1.0 + y0.norm_l2()));
        let (z1, y1) = (z.clone(), y.clone());
        larf_left(0.0, &tail, z.as_mut());
        larf_right(0.0, &tail, y.as_mut(), &mut w);
        assert!(z1 == z && y1 == y, "tau = 0 must leave the data unchanged");
    }
    assert_eq!(
        dot(&[1.0, 2.0, 3.0, 4.0, 5.0], &[1.0, 1.0, 1.0, 1.0, 2.0, 9.0]),
        20.0
    );
}

/// `larf2_left` against the explicit product `H_0 H_1` (`v1` zero in the
/// first row), including a zero `tau` on either side.
#[test]
fn two_reflector_application_matches_explicit_product() {
    let mut rng = Rng::new(11);
    for (l, k) in [(2usize, 3usize), (3, 1), (6, 5), (9, 4), (33, 7), (34, 0)] {
        for zero in [None, Some(0), Some(1)] {
            let mut a0 = rng.uniform();
            let mut tail0: Vec<f64> = (1..l).map(|_| rng.uniform()).collect();
            let mut tau0 = larfg_slice(&mut a0, &mut tail0);
            let mut a1 = rng.uniform();
            let mut tail1: Vec<f64> = (2..l).map(|_| rng.uniform()).collect();
            let mut tau1 = larfg_slice(&mut a1, &mut tail1);
            match zero {
                Some(0) => tau0 = 0.0,
                Some(_) => tau1 = 0.0,
                None => {}
            }
            let v0: Vec<f64> = std::iter::once(1.0).chain(tail0.iter().copied()).collect();
            let v1: Vec<f64> = [0.0, 1.0]
                .into_iter()
                .chain(tail1.iter().copied())
                .collect();
            let h = |tau: f64, v: &[f64]| {
                Mat::<f64>::from_fn(l, l, |i, j| (i == j) as u8 as f64 - tau * v[i] * v[j])
            };
            let p = &h(tau0, &v0) * &h(tau1, &v1);
            let z0 = random::<f64>(l, k, &mut rng);
            let mut z = z0.clone();
            larf2_left(tau0, &tail0, tau1, &tail1, z.as_mut());
            let err = (&z - &p * &z0).norm_l2();
            assert!(err <= 1e-14 * (1.0 + z0.norm_l2()), "l {l} k {k}: {err:e}");
        }
    }
}

#[test]
fn block_reflectors_match_product_of_reflectors() {
    let mut rng = Rng::new(2);
    let mut worst64: f64 = 0.0;
    let mut worst32: f64 = 0.0;
    for (m, k) in [
        (0, 0),
        (0, 3),
        (1, 1),
        (1, 3),
        (3, 5),
        (5, 5),
        (7, 3),
        (40, 16),
        (100, 33),
    ] {
        for n in [0, 1, 7] {
            worst64 = worst64.max(block_reflector_case::<f64>(m, k, n, &mut rng));
            worst32 = worst32.max(block_reflector_case::<f32>(m, k, n, &mut rng));
        }
    }
    eprintln!("block reflector worst ratio: f64 {worst64:.3}, f32 {worst32:.3}");
    assert!(worst64 < 30.0 && worst32 < 30.0, "{worst64} {worst32}");
}
