//! LAPACK's checks of a bidiagonalization (G1: `A = Q B P^T` as `dbdt01`; G2:
//! orthogonality of `Q` and `P` as `dort01`; G3: `B`'s singular values are
//! `A`'s) on the kernels of this module, against faer (LAPACK-style scaled
//! ratios, `u = T::EPS / 2`).

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

/// Matrices solved in a group give the bits of separate calls, in groups of
/// four and of two, on the interleaved routes (dqds, bidiagonal QR) and on
/// the routes that fall back to one call after the other (divide and
/// conquer, interleaving switched off), in both precisions. The matrices are
/// scaled differently, so that the lanes take different numbers of sweeps;
/// one has a zero column and one has entries whose squares underflow, so
/// that some lanes' reflectors take the zero-tail and rescaling paths of the
/// safe-range fallback while the others' do not.
#[test]
fn group_is_bitwise_single_calls() {
    fn case<T: Scalar>(m: usize, n: usize, dc_from: usize, lanes_below: usize, vectors: bool) {
        let k = m.min(n);
        let tiny = T::of(if std::mem::size_of::<T>() == 4 {
            1e-25
        } else {
            1e-170
        });
        let mats: Vec<Mat<T>> = (0..4)
            .map(|g| {
                let a = random::<T>(m, n, &mut Rng::new(5 + 7 * g + m as u64));
                Mat::from_fn(m, n, |i, j| match g {
                    1 if i == j => a[(i, j)] * T::of(4.0),
                    2 if j == n / 2 => T::zero(),
                    3 if (i, j) == (0, 0) => T::one(),
                    3 => a[(i, j)] * tiny,
                    _ => a[(i, j)],
                })
            })
            .collect();
        let new_ws = || {
            let mut ws = GebrdWorkspace::<T>::new();
            ws.dc_from = dc_from;
            ws.lanes_below = lanes_below;
            ws
        };
        let outputs = || {
            (
                vec![T::zero(); k],
                vec![T::zero(); m * k],
                vec![T::zero(); k * n],
            )
        };
        let want: Vec<_> = mats
            .iter()
            .map(|a| {
                let (mut s, mut u, mut vt) = outputs();
                let vecs = vectors.then_some((&mut u[..], &mut vt[..]));
                small_svd(a.as_ref(), &mut new_ws(), &mut s, vecs).unwrap();
                (s, u, vt)
            })
            .collect();
        let bits = |x: &[T]| x.iter().map(|v| v.f64().to_bits()).collect::<Vec<_>>();
        let check = |got: &[(Vec<T>, Vec<T>, Vec<T>)], first: usize, what: &str| {
            for (g, (s, u, vt)) in got.iter().enumerate() {
                let w = &want[first + g];
                assert_eq!(bits(&w.0), bits(s), "{m}x{n} {what} values {g}");
                if vectors {
                    assert_eq!(bits(&w.1), bits(u), "{m}x{n} {what} u {g}");
                    assert_eq!(bits(&w.2), bits(vt), "{m}x{n} {what} vt {g}");
                }
            }
        };
        // Twice on the same workspaces, first in reverse order: what one
        // group leaves in the buffers must not reach the next.
        let mut got: Vec<_> = (0..4).map(|_| outputs()).collect();
        let mut ws: Vec<_> = (0..4).map(|_| new_ws()).collect();
        for pass in 0..2 {
            let [g0, g1, g2, g3] = &mut got[..] else {
                unreachable!()
            };
            let [w0, w1, w2, w3] = &mut ws[..] else {
                unreachable!()
            };
            let vecs = vectors.then(|| {
                [
                    (&mut g0.1[..], &mut g0.2[..]),
                    (&mut g1.1[..], &mut g1.2[..]),
                    (&mut g2.1[..], &mut g2.2[..]),
                    (&mut g3.1[..], &mut g3.2[..]),
                ]
            });
            let res = small_svd_group(
                std::array::from_fn(|g| mats[if pass == 0 { 3 - g } else { g }].as_ref()),
                [w0, w1, w2, w3],
                [&mut g0.0, &mut g1.0, &mut g2.0, &mut g3.0],
                vecs,
            );
            res.into_iter().for_each(|r| r.unwrap());
        }
        check(&got, 0, "four");
        let mut got2: Vec<_> = (0..2).map(|_| outputs()).collect();
        {
            let [g0, g1] = &mut got2[..] else {
                unreachable!()
            };
            let vecs = vectors.then(|| {
                [
                    (&mut g0.1[..], &mut g0.2[..]),
                    (&mut g1.1[..], &mut g1.2[..]),
                ]
            });
            let res = small_svd_group(
                [mats[2].as_ref(), mats[3].as_ref()],
                [&mut new_ws(), &mut new_ws()],
                [&mut g0.0, &mut g1.0],
                vecs,
            );
            res.into_iter().for_each(|r| r.unwrap());
        }
        check(&got2, 2, "two");
    }
    for &(m, n) in &[(1, 1), (3, 2), (8, 8), (32, 32), (40, 20), (20, 37)] {
        for vectors in [true, false] {
            case::<f64>(m, n, DC_FROM, LANES_BELOW, vectors);
            case::<f32>(m, n, DC_FROM, LANES_BELOW, vectors);
        }
    }
    case::<f64>(30, 30, 1, LANES_BELOW, true);
    case::<f64>(30, 30, DC_FROM, 1, true);
}

/// A NaN or an infinity is refused with its position, alone or in a group,
/// and the group's other matrices get the bits they get alone; a row-major
/// view reports the position in its own coordinates.
#[test]
fn non_finite_input_is_refused_and_the_group_goes_on() {
    let (m, n) = (12, 9);
    let mut mats: Vec<Mat<f64>> = (0..4)
        .map(|g| random::<f64>(m, n, &mut Rng::new(90 + g)))
        .collect();
    mats[2][(7, 4)] = f64::NAN;
    let out = || (vec![0.0; n], vec![0.0; m * n], vec![0.0; n * n]);
    let alone = |a: &Mat<f64>| {
        let (mut s, mut u, mut vt) = out();
        let r = small_svd(
            a.as_ref(),
            &mut GebrdWorkspace::new(),
            &mut s,
            Some((&mut u, &mut vt)),
        );
        (r, s, u, vt)
    };
    let (r, ..) = alone(&mats[2]);
    assert!(
        matches!(r, Err(crate::Error::NonFinite { row: 7, col: 4, .. })),
        "{r:?}"
    );
    let mut got: Vec<_> = (0..4).map(|_| out()).collect();
    let mut ws: Vec<_> = (0..4).map(|_| GebrdWorkspace::<f64>::new()).collect();
    let [g0, g1, g2, g3] = &mut got[..] else {
        unreachable!()
    };
    let [w0, w1, w2, w3] = &mut ws[..] else {
        unreachable!()
    };
    let res = small_svd_group(
        std::array::from_fn(|g| mats[g].as_ref()),
        [w0, w1, w2, w3],
        [&mut g0.0, &mut g1.0, &mut g2.0, &mut g3.0],
        Some([
            (&mut g0.1[..], &mut g0.2[..]),
            (&mut g1.1[..], &mut g1.2[..]),
            (&mut g2.1[..], &mut g2.2[..]),
            (&mut g3.1[..], &mut g3.2[..]),
        ]),
    );
    for (g, r) in res.into_iter().enumerate() {
        if g == 2 {
            assert!(matches!(
                r,
                Err(crate::Error::NonFinite { row: 7, col: 4, .. })
            ));
            continue;
        }
        r.unwrap();
        let (_, s, u, vt) = alone(&mats[g]);
        assert!(
            s == got[g].0 && u == got[g].1 && vt == got[g].2,
            "matrix {g}"
        );
    }
    // Entry (2, 5) of a row-major 4 x 6 view.
    let mut data = vec![1.0f64; 24];
    data[2 * 6 + 5] = f64::NEG_INFINITY;
    let a = MatRef::from_row_major_slice(&data, 4, 6);
    let (mut s, mut u, mut vt) = (vec![0.0; 4], vec![0.0; 16], vec![0.0; 24]);
    let r = small_svd(
        a,
        &mut GebrdWorkspace::new(),
        &mut s,
        Some((&mut u, &mut vt)),
    );
    assert!(
        matches!(r, Err(crate::Error::NonFinite { row: 2, col: 5, .. })),
        "{r:?}"
    );
}
