//! Oracles G1-G3 of `research/seed-batched.md` on the kernels of this
//! module, against faer (LAPACK-style scaled ratios, `u = T::EPS / 2`).

use super::*;
use crate::linalg::householder::testutil::{orth_err, random, to_f64, Rng};
use faer::Mat;

/// `||A - Q Bd P^T||_F / (n ||A||_F u)` (G1) and the orthogonality ratios of
/// `Q` and `P` (G2) for a random `m x n` matrix, in units of `u`.
fn bidiag_ratios<T: Scalar>(m: usize, n: usize, seed: u64) -> (f64, f64, f64) {
    let a = random::<T>(m, n, &mut Rng::new(seed));
    let mut b = a.clone();
    let (mut tq, mut tp, mut d, mut e) = (
        vec![T::zero(); n],
        vec![T::zero(); n],
        vec![T::zero(); n],
        vec![T::zero(); n.saturating_sub(1)],
    );
    let mut vr = Mat::<T>::zeros(n, n);
    let mut w = vec![T::zero(); m];
    gebd2(
        b.as_mut(),
        &mut tq,
        &mut tp,
        &mut d,
        &mut e,
        vr.as_mut(),
        &mut w,
    );
    let mut q = Mat::<T>::zeros(m, n);
    org2r(b.as_ref(), &tq, q.as_mut());
    let mut p = Mat::<T>::zeros(n, n);
    orgbr_p(vr.as_ref(), &tp, p.as_mut());
    let bd = crate::gallery::bidiagonal_to_dense(&d, &e);
    let (qf, pf, af) = (to_f64(q.as_ref()), to_f64(p.as_ref()), to_f64(a.as_ref()));
    let r = &af - &qf * &bd * pf.transpose();
    let u = T::EPS.f64() / 2.0;
    let g1 = r.norm_l2() / (n as f64 * af.norm_l2() * u);
    (
        g1,
        orth_err(qf.as_ref()) / (m as f64 * u),
        orth_err(pf.as_ref()) / (n as f64 * u),
    )
}

#[test]
fn bidiagonalisation_reconstructs_and_is_orthogonal() {
    for &(m, n) in &[
        (1, 1),
        (2, 2),
        (3, 2),
        (8, 8),
        (33, 31),
        (64, 17),
        (100, 100),
    ] {
        let (g1, oq, op) = bidiag_ratios::<f64>(m, n, 7 + m as u64);
        assert!(
            g1 < 30.0 && oq < 30.0 && op < 30.0,
            "f64 {m}x{n}: {g1} {oq} {op}"
        );
        let (g1, oq, op) = bidiag_ratios::<f32>(m, n, 9 + n as u64);
        assert!(
            g1 < 30.0 && oq < 30.0 && op < 30.0,
            "f32 {m}x{n}: {g1} {oq} {op}"
        );
    }
}

/// Values of [`small_svd`] against faer's SVD in f64 (G3 metric), and the
/// reconstruction from its vectors, tall and wide, with vectors by QR and
/// by divide and conquer (forced at every size), and by the blocked
/// reduction with `dormbr` (forced at every size).
#[test]
fn small_svd_matches_faer() {
    for (dc_from, blocked_from) in [(usize::MAX, usize::MAX), (1, usize::MAX), (1, 1)] {
        small_svd_case(dc_from, blocked_from);
    }
}

fn small_svd_case(dc_from: usize, blocked_from: usize) {
    for &(m, n) in &[
        (1, 1),
        (1, 5),
        (5, 1),
        (2, 3),
        (8, 8),
        (31, 33),
        (40, 12),
        (70, 50),
        (45, 90),
    ] {
        let a = random::<f64>(m, n, &mut Rng::new(3 * m as u64 + n as u64));
        let k = m.min(n);
        let mut ws = GebrdWorkspace::new();
        ws.dc_from = dc_from;
        ws.blocked_from = blocked_from;
        ws.blocked_from_values = blocked_from;
        let (mut s, mut u, mut vt) = (vec![0.0; k], vec![0.0; m * k], vec![0.0; k * n]);
        small_svd(a.as_ref(), &mut ws, &mut s, Some((&mut u, &mut vt))).unwrap();
        let mut s2 = vec![0.0; k];
        small_svd(a.as_ref(), &mut ws, &mut s2, None).unwrap();
        let r = a.as_ref().svd().unwrap();
        let sref: Vec<f64> = r.S().column_vector().iter().copied().collect();
        let u64_ = f64::EPSILON / 2.0;
        let nrm: f64 = sref.iter().map(|x| x * x).sum::<f64>().sqrt();
        for vals in [&s, &s2] {
            let err: f64 = vals
                .iter()
                .zip(&sref)
                .map(|(x, y)| (x - y).powi(2))
                .sum::<f64>()
                .sqrt();
            assert!(
                err / (k as f64 * nrm * u64_) < 30.0,
                "{m}x{n}: values {vals:?} vs {sref:?}"
            );
            assert!(vals.windows(2).all(|w| w[0] >= w[1]) && vals[k - 1] >= 0.0);
        }
        let um = MatRef::from_column_major_slice(&u, m, k);
        let vm = MatRef::from_column_major_slice(&vt, k, n);
        let sm = Mat::<f64>::from_fn(k, k, |i, j| if i == j { s[i] } else { 0.0 });
        let rec = a.as_ref() - um * &sm * vm;
        assert!(
            rec.norm_l2() / (k as f64 * a.norm_l2() * u64_) < 30.0,
            "{m}x{n} reconstruction"
        );
    }
}

/// Inputs near the ends of the exponent range (the batch route does not
/// rescale them, unlike the Jacobi route): the singular values of `s A` are
/// `s` times those of `A` to a few ulps and the vectors stay orthogonal, on
/// both vector paths (bidiagonal QR below `dc_from`, divide and conquer from
/// it) and for values only (dqds).
#[test]
fn extreme_scales_keep_relative_accuracy() {
    for &(m, n, blocked_from) in &[
        (20, 12, BLOCKED_FROM),
        (70, 60, BLOCKED_FROM),
        (12, 20, BLOCKED_FROM),
        (70, 60, 1),
        (12, 20, 1),
    ] {
        let a = random::<f64>(m, n, &mut Rng::new(7));
        let k = m.min(n);
        let mut ws = GebrdWorkspace::new();
        ws.blocked_from = blocked_from;
        ws.blocked_from_values = blocked_from;
        let mut want = vec![0.0; k];
        small_svd(a.as_ref(), &mut ws, &mut want, None).unwrap();
        for &s in &[2f64.powi(-1000), 1e-150, 1e150, 2f64.powi(1000)] {
            let b = Mat::<f64>::from_fn(m, n, |i, j| a[(i, j)] * s);
            for vectors in [false, true] {
                let mut got = vec![0.0; k];
                let (mut u, mut vt) = (vec![0.0; m * k], vec![0.0; k * n]);
                let vecs = vectors.then(|| (&mut u[..], &mut vt[..]));
                small_svd(b.as_ref(), &mut ws, &mut got, vecs).unwrap();
                for (g, w) in got.iter().zip(&want) {
                    let r = (g / s - w).abs() / (w.abs() * f64::EPSILON * k as f64);
                    assert!(
                        r < 30.0,
                        "{m}x{n} scale {s:e} vectors {vectors}: {g:e} vs {w:e} ({r})"
                    );
                }
                if vectors {
                    let uf = Mat::<f64>::from_fn(m, k, |i, j| u[i + j * m]);
                    let o = orth_err(uf.as_ref()) / (m as f64 * f64::EPSILON);
                    assert!(o < 30.0, "{m}x{n} scale {s:e}: U orthogonality {o}");
                }
            }
        }
    }
}

/// Two matrices solved together give the bits of two separate calls, on the
/// interleaved bidiagonal-QR route and on the routes that fall back to one
/// call after the other (values only, divide and conquer), in both
/// precisions; matrix 1 is scaled so that the two lanes take different
/// numbers of sweeps.
#[test]
fn pair_is_bitwise_two_calls() {
    fn case<T: Scalar>(m: usize, n: usize, dc_from: usize, vectors: bool) {
        let k = m.min(n);
        let a0 = random::<T>(m, n, &mut Rng::new(5 + m as u64));
        let a1 = Mat::from_fn(m, n, |i, j| {
            let x = random::<T>(m, n, &mut Rng::new(9 + n as u64))[(i, j)];
            x * T::of(if i == j { 4.0 } else { 1.0 })
        });
        let new_ws = || {
            let mut ws = GebrdWorkspace::<T>::new();
            ws.dc_from = dc_from;
            ws
        };
        let solve_one = |a: &Mat<T>| {
            let (mut s, mut u, mut vt) = (
                vec![T::zero(); k],
                vec![T::zero(); m * k],
                vec![T::zero(); k * n],
            );
            let vecs = vectors.then_some((&mut u[..], &mut vt[..]));
            small_svd(a.as_ref(), &mut new_ws(), &mut s, vecs).unwrap();
            (s, u, vt)
        };
        let (want0, want1) = (solve_one(&a0), solve_one(&a1));
        let (mut s0, mut u0, mut t0) = (
            vec![T::zero(); k],
            vec![T::zero(); m * k],
            vec![T::zero(); k * n],
        );
        let (mut s1, mut u1, mut t1) = (
            vec![T::zero(); k],
            vec![T::zero(); m * k],
            vec![T::zero(); k * n],
        );
        let vecs = vectors.then_some([(&mut u0[..], &mut t0[..]), (&mut u1[..], &mut t1[..])]);
        let [r0, r1] = small_svd_pair(
            [a0.as_ref(), a1.as_ref()],
            [&mut new_ws(), &mut new_ws()],
            [&mut s0, &mut s1],
            vecs,
        );
        r0.unwrap();
        r1.unwrap();
        let bits = |x: &[T]| x.iter().map(|v| v.f64().to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&want0.0), bits(&s0), "{m}x{n} values 0");
        assert_eq!(bits(&want1.0), bits(&s1), "{m}x{n} values 1");
        if vectors {
            assert_eq!(bits(&want0.1), bits(&u0), "{m}x{n} u 0");
            assert_eq!(bits(&want0.2), bits(&t0), "{m}x{n} vt 0");
            assert_eq!(bits(&want1.1), bits(&u1), "{m}x{n} u 1");
            assert_eq!(bits(&want1.2), bits(&t1), "{m}x{n} vt 1");
        }
    }
    for &(m, n) in &[(1, 1), (3, 2), (32, 32), (40, 20), (20, 37)] {
        for vectors in [true, false] {
            case::<f64>(m, n, DC_FROM, vectors);
            case::<f32>(m, n, DC_FROM, vectors);
        }
    }
    case::<f64>(30, 30, 1, true);
}
