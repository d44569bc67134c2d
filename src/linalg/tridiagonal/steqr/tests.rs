//! Tests of the parent module.

use super::*;
use crate::gallery::tridiagonal_to_dense;
use crate::linalg::tridiagonal::sterf::sterf;
use crate::linalg::tridiagonal::sterf::tests::{
    eig_ratio, extreme_cases, extreme_ok, families, input, reference, Case, SIZES,
};
use faer::Mat;

/// Frobenius norm without overflow or harmful underflow (entries up to 1e300).
fn fro(x: impl Iterator<Item = f64> + Clone) -> f64 {
    let s = x.clone().fold(0.0f64, |a, v| a.max(v.abs()));
    if s == 0.0 {
        return 0.0;
    }
    s * x.map(|v| (v / s) * (v / s)).sum::<f64>().sqrt()
}

struct Ratios {
    eig: f64,
    resid: f64,
    orth: f64,
}

/// Runs steqr on the case with z = I (n x n) and returns the LAPACK-style
/// ratios, all measured in f64 from the `T` results.
fn run<T: Scalar>(case: &Case) -> Ratios {
    let n = case.d.len();
    let lam_ref = reference(case);
    let (mut d, mut e) = input::<T>(case);
    let (d0, e0) = (d.clone(), e.clone());
    let mut z = Mat::<T>::identity(n, n);
    steqr(&mut d, &mut e, z.as_mut())
        .unwrap_or_else(|err| panic!("{} {}: {err}", T::NAME, case.name));
    assert!(
        d.windows(2).all(|w| w[0] <= w[1]),
        "{}: not sorted",
        case.name
    );
    let (resid, orth) = vector_ratios(&d0, &e0, &d, &z, 0.0);
    Ratios {
        eig: eig_ratio(&d, &lam_ref),
        resid,
        orth,
    }
}

/// `||T Z - Z diag(d)||_F / (n ||T||_F eps)` (with `abs_slack` added to
/// `n ||T||_F eps` in the denominator, for subnormal inputs) and
/// `||Z^T Z - I||_F / (n eps)`, in f64. `T` is applied as a tridiagonal, so
/// 1e300 entries stay finite.
fn vector_ratios<T: Scalar>(d0: &[T], e0: &[T], d: &[T], z: &Mat<T>, abs_slack: f64) -> (f64, f64) {
    let n = d.len();
    let eps = T::EPS.f64();
    let zf = Mat::<f64>::from_fn(n, n, |i, j| z[(i, j)].f64());
    let dd: Vec<f64> = d0.iter().map(|x| x.f64()).collect();
    let ee: Vec<f64> = e0.iter().map(|x| x.f64()).collect();
    let mut res = Vec::with_capacity(n * n);
    for j in 0..n {
        for i in 0..n {
            let mut t = dd[i] * zf[(i, j)];
            if i > 0 {
                t += ee[i - 1] * zf[(i - 1, j)];
            }
            if i + 1 < n {
                t += ee[i] * zf[(i + 1, j)];
            }
            res.push(t - zf[(i, j)] * d[j].f64());
        }
    }
    let tnorm = fro(dd.iter().chain(ee.iter()).chain(ee.iter()).copied());
    let r = fro(res.iter().copied());
    let resid = if r == 0.0 {
        0.0
    } else {
        r / (n as f64 * tnorm * eps + abs_slack)
    };
    let ztz = zf.transpose() * &zf;
    let orth = fro((0..n)
        .flat_map(|j| (0..n).map(move |i| (i, j)))
        .map(|(i, j)| ztz[(i, j)] - if i == j { 1.0 } else { 0.0 }))
        / (n.max(1) as f64 * eps);
    (resid, orth)
}

fn extreme<T: Scalar>() {
    let sub = T::SAFE_MIN.f64() * 2.0 * T::EPS.f64();
    for (d0, e0, lam_ref) in extreme_cases::<T>() {
        let n = d0.len();
        let (mut d, mut e) = (d0.clone(), e0.clone());
        let mut z = Mat::<T>::identity(n, n);
        steqr(&mut d, &mut e, z.as_mut()).unwrap();
        assert!(
            extreme_ok(&d, &lam_ref),
            "{} {d0:?}: {d:?} vs {lam_ref:?}",
            T::NAME
        );
        let (resid, orth) = vector_ratios(&d0, &e0, &d, &z, 4.0 * (n * n) as f64 * sub);
        assert!(
            resid < 30.0 && orth < 30.0,
            "{} {d0:?}: resid {resid}, orth {orth}",
            T::NAME
        );
    }
}

#[test]
fn extreme_entries_f64() {
    extreme::<f64>();
}

#[test]
fn extreme_entries_f32() {
    extreme::<f32>();
}

fn check_all<T: Scalar>(tiny: f64, huge: f64) {
    let mut w = [
        (0.0f64, String::new()),
        (0.0, String::new()),
        (0.0, String::new()),
    ];
    for &n in &SIZES {
        for case in families(n, tiny, huge) {
            let r = run::<T>(&case);
            assert!(
                r.eig <= 10.0,
                "{} {}: eigenvalue ratio {}",
                T::NAME,
                case.name,
                r.eig
            );
            assert!(
                r.resid < 30.0,
                "{} {}: residual ratio {}",
                T::NAME,
                case.name,
                r.resid
            );
            assert!(
                r.orth < 30.0,
                "{} {}: orthogonality ratio {}",
                T::NAME,
                case.name,
                r.orth
            );
            for (k, v) in [r.eig, r.resid, r.orth].into_iter().enumerate() {
                if v >= w[k].0 {
                    w[k] = (v, case.name.clone());
                }
            }
        }
    }
    eprintln!(
        "steqr {}: worst eig ratio {:.3} ({}), residual ratio {:.3} ({}), orthogonality ratio {:.3} ({})",
        T::NAME,
        w[0].0,
        w[0].1,
        w[1].0,
        w[1].1,
        w[2].0,
        w[2].1
    );
}

#[test]
fn families_f64() {
    check_all::<f64>(1e-300, 1e300);
}

#[test]
fn families_f32() {
    check_all::<f32>(1e-35, 1e35);
}

#[test]
fn agrees_with_sterf() {
    for case in families(64, 1.0, 1.0) {
        let (mut d1, mut e1) = input::<f64>(&case);
        let (mut d2, mut e2) = (d1.clone(), e1.clone());
        sterf(&mut d1, &mut e1).unwrap();
        let mut z = Mat::<f64>::identity(64, 64);
        steqr(&mut d2, &mut e2, z.as_mut()).unwrap();
        let lam_ref = reference(&case);
        let nrm = crate::linalg::tridiagonal::sterf::tests::norm2(&lam_ref);
        for (a, b) in d1.iter().zip(&d2) {
            assert!(
                (a - b).abs() <= 10.0 * 64.0 * f64::EPSILON * nrm,
                "{}: {a} vs {b}",
                case.name
            );
        }
    }
}

#[test]
fn z_rows_and_general_z() {
    // z = z0 * Q: a subset of rows gives exactly those rows of the full result
    // (the D&C merge needs only the first and last rows), and a general
    // orthonormal z0 (m > n) gives z0 * Q_identity.
    let n = 40;
    let case = &families(n, 1.0, 1.0)[0];
    let (d0, e0) = input::<f64>(case);
    let (mut d, mut e) = (d0.clone(), e0.clone());
    let mut zfull = Mat::<f64>::identity(n, n);
    steqr(&mut d, &mut e, zfull.as_mut()).unwrap();

    let (mut d2, mut e2) = (d0.clone(), e0.clone());
    let mut ends = Mat::<f64>::from_fn(2, n, |i, j| {
        if (i == 0 && j == 0) || (i == 1 && j == n - 1) {
            1.0
        } else {
            0.0
        }
    });
    steqr(&mut d2, &mut e2, ends.as_mut()).unwrap();
    assert_eq!(d, d2);
    for j in 0..n {
        assert_eq!(ends[(0, j)].to_bits(), zfull[(0, j)].to_bits());
        assert_eq!(ends[(1, j)].to_bits(), zfull[(n - 1, j)].to_bits());
    }

    // Row-major z (non-unit row stride): the copy path must agree bitwise.
    let mut zrow = Mat::<f64>::identity(n, n);
    let (mut d4, mut e4) = (d0.clone(), e0.clone());
    steqr(&mut d4, &mut e4, zrow.as_mut().transpose_mut()).unwrap();
    // zrow^T holds the result, stored row-major.
    for i in 0..n {
        for j in 0..n {
            assert_eq!(zrow[(j, i)].to_bits(), zfull[(i, j)].to_bits());
        }
    }

    let m = n + 3;
    let g = Mat::<f64>::from_fn(m, n, |i, j| {
        ((i * 7 + j * 13) % 17) as f64 - 8.0 + (i == j) as u8 as f64 * 20.0
    });
    let q0 = g.qr().compute_thin_Q();
    let mut z = q0.clone();
    let (mut d5, mut e5) = (d0.clone(), e0.clone());
    steqr(&mut d5, &mut e5, z.as_mut()).unwrap();
    let expect = &q0 * &zfull;
    let diff = fro((0..n)
        .flat_map(|j| (0..m).map(move |i| (i, j)))
        .map(|(i, j)| z[(i, j)] - expect[(i, j)]));
    assert!(
        diff <= 30.0 * n as f64 * f64::EPSILON,
        "z0 * Q mismatch {diff}"
    );

    // Residual of the dense similarity: A (z0 Q) = (z0 Q) diag(d) for A = z0 T z0^T.
    let a = &q0 * tridiagonal_to_dense(&d0, &e0) * q0.transpose();
    let lhs = &a * &z;
    let r = fro((0..n)
        .flat_map(|j| (0..m).map(move |i| (i, j)))
        .map(|(i, j)| lhs[(i, j)] - z[(i, j)] * d5[j]));
    assert!(
        r <= 30.0 * n as f64 * f64::EPSILON * 4.0,
        "dense residual {r}"
    );
}

#[test]
fn errors() {
    let mut d = vec![1.0f64, 2.0, 3.0];
    let mut e = vec![0.5f64, 0.5];
    let mut z = Mat::<f64>::identity(3, 2);
    assert!(matches!(
        steqr(&mut d, &mut e, z.as_mut()),
        Err(Error::Shape(_))
    ));
    let mut z = Mat::<f64>::identity(3, 3);
    assert!(matches!(
        steqr(&mut d, &mut [0.5], z.as_mut()),
        Err(Error::Shape(_))
    ));
    let mut z0 = Mat::<f64>::identity(0, 0);
    assert!(steqr::<f64>(&mut [], &mut [], z0.as_mut()).is_ok());
    let mut z1 = Mat::<f64>::from_fn(3, 1, |i, _| i as f64);
    let mut d1 = [4.0];
    assert!(steqr(&mut d1, &mut [], z1.as_mut()).is_ok());
    assert_eq!((d1[0], z1[(2, 0)]), (4.0, 2.0));
    let mut d = vec![1.0f64, f64::NAN, 3.0];
    assert!(matches!(
        steqr(&mut d, &mut e, z.as_mut()),
        Err(Error::NonFinite { .. })
    ));

    // A deliberately tiny sweep budget must be reported, not ignored.
    let case = &families(20, 1.0, 1.0)[0];
    let (mut d, mut e) = input::<f64>(case);
    let mut z = Mat::<f64>::identity(20, 20);
    match steqr_with_max_iter(&mut d, &mut e, z.as_mut(), 3) {
        Err(Error::NoConvergence {
            stage: "steqr",
            detail,
        }) => {
            assert!(detail.contains("of 19 off-diagonal"), "{detail}")
        }
        other => panic!("expected NoConvergence, got {other:?}"),
    }
}

/// Runs `steqr` on each case alone and `steqr_pair` on the two together:
/// bitwise the same values and vectors (the pair only interleaves the
/// chases), whatever the two orders and families.
fn pair_matches_alone<T: Scalar>(a: &Case, b: &Case) {
    let (mut da, mut ea) = input::<T>(a);
    let (mut db, mut eb) = input::<T>(b);
    let (na, nb) = (da.len(), db.len());
    let (mut za, mut zb) = (Mat::<T>::identity(na, na), Mat::<T>::identity(nb, nb));
    let (mut pda, mut pea, mut pza) = (da.clone(), ea.clone(), za.clone());
    let (mut pdb, mut peb, mut pzb) = (db.clone(), eb.clone(), zb.clone());
    steqr(&mut da, &mut ea, za.as_mut()).unwrap();
    steqr(&mut db, &mut eb, zb.as_mut()).unwrap();
    steqr_pair(
        (&mut pda, &mut pea, pza.as_mut()),
        (&mut pdb, &mut peb, pzb.as_mut()),
    )
    .unwrap();
    let bits = |x: &[T]| x.iter().map(|v| v.f64().to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(&da),
        bits(&pda),
        "{} {}: values of the first",
        a.name,
        b.name
    );
    assert_eq!(
        bits(&db),
        bits(&pdb),
        "{} {}: values of the second",
        a.name,
        b.name
    );
    assert!(za == pza, "{} {}: vectors of the first", a.name, b.name);
    assert!(zb == pzb, "{} {}: vectors of the second", a.name, b.name);
}

#[test]
fn pair_is_bitwise_two_alone() {
    for (n1, n2) in [(32, 32), (32, 31), (7, 40), (1, 9), (0, 5), (2, 2)] {
        for (a, b) in families(n1, 1.0, 1.0)
            .iter()
            .zip(families(n2, 1.0, 1.0).iter().rev())
        {
            pair_matches_alone::<f64>(a, b);
            pair_matches_alone::<f32>(a, b);
        }
    }
    // Either problem's bad input is an error.
    let mut z = Mat::<f64>::identity(2, 2);
    let mut z1 = Mat::<f64>::identity(2, 2);
    let r = steqr_pair(
        (&mut [1.0, 2.0], &mut [0.5], z.as_mut()),
        (&mut [1.0, f64::NAN], &mut [0.5], z1.as_mut()),
    );
    assert!(matches!(r, Err(Error::NonFinite { .. })), "{r:?}");
}

/// Up to `ROTATE_NOW_ROWS` rows of `z` each rotation is applied as the chase
/// forms it; taller `z` takes the rotation chain after each sweep. Rows are
/// independent, so the top rows of a tall `z` must come out bitwise as a
/// short `z` holding only them: the two modes give the same bits.
#[test]
fn rotations_applied_now_or_chained_give_the_same_bits() {
    let mut rng = crate::gallery::Rng::new(11);
    for n in [3usize, 17, 40, ROTATE_NOW_ROWS] {
        let d: Vec<f64> = (0..n).map(|_| rng.uniform() - 0.5).collect();
        let e: Vec<f64> = (0..n - 1).map(|_| rng.uniform() - 0.5).collect();
        let tall = Mat::from_fn(ROTATE_NOW_ROWS + 9, n, |_, _| rng.uniform() - 0.5);
        let short = tall.as_ref().subrows(0, ROTATE_NOW_ROWS).to_owned();
        let (mut d1, mut e1, mut z1) = (d.clone(), e.clone(), tall);
        steqr(&mut d1, &mut e1, z1.as_mut()).unwrap();
        let (mut d2, mut e2, mut z2) = (d.clone(), e.clone(), short);
        steqr(&mut d2, &mut e2, z2.as_mut()).unwrap();
        assert_eq!(d1, d2, "n={n}: eigenvalues");
        for j in 0..n {
            for i in 0..ROTATE_NOW_ROWS {
                assert_eq!(
                    z1[(i, j)].to_bits(),
                    z2[(i, j)].to_bits(),
                    "n={n}: z({i}, {j})"
                );
            }
        }
    }
}
