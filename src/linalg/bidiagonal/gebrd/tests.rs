//! Tests of the one-stage bidiagonal reduction: `A = Q B P^T`, `Q^T Q = I`,
//! `P^T P = I` as LAPACK-style scaled ratios (measured in f64), the blocked
//! reduction against the one-column panels, and the same bits whether the
//! cut products run in turn or on a runtime.

use super::*;
use crate::gallery::{self, Family};
use crate::linalg::householder::testutil::{orth_err, to_f64};
use crate::runtime::Runtime;

/// Reduces `a` (`m >= n`) with panels of `nb`, forms `Q` (`m x n`) and `P`
/// (`n x n`) through [`ormbr_q_on`] and [`ormbr_p_on`] with blocks of `qb`, and
/// returns `(||A - Q B P^T||_F / (m ||A||_F eps), orth(Q), orth(P), d, e)`.
fn reduce<T: Scalar>(
    a: &Mat<T>,
    nb: usize,
    qb: usize,
    rt: Option<&Runtime>,
) -> (f64, f64, f64, Vec<T>, Vec<T>) {
    let (m, n) = (a.nrows(), a.ncols());
    let mut w = a.clone();
    let z = T::zero();
    let (mut d, mut e) = (vec![z; n], vec![z; n.saturating_sub(1)]);
    let (mut tq, mut tp) = (vec![z; n], vec![z; n]);
    gebrd_on(w.as_mut(), nb, &mut d, &mut e, &mut tq, &mut tp, rt.into()).unwrap();
    assert!(n == 0 || tp[n - 1] == z, "taup[n - 1] must be zero");
    let mut q = Mat::<T>::zeros(m, n);
    for i in 0..n {
        q[(i, i)] = T::one();
    }
    ormbr_q_on(w.as_ref(), &tq, q.as_mut(), qb, rt.into()).unwrap();
    let mut p = Mat::<T>::identity(n, n);
    ormbr_p_on(w.as_ref(), &tp, p.as_mut(), qb, rt.into()).unwrap();
    let (q, p) = (to_f64(q.as_ref()), to_f64(p.as_ref()));
    let b = gallery::bidiagonal_to_dense(&d, &e);
    let a64 = to_f64(a.as_ref());
    let r = &a64 - &q * &b * p.transpose();
    let eps = T::EPS.f64();
    let anorm = a64.norm_l2();
    let res = if anorm > 0.0 {
        r.norm_l2() / (m.max(1) as f64 * anorm * eps)
    } else {
        r.norm_l2()
    };
    let nf = n.max(1) as f64;
    (
        res,
        orth_err(q.as_ref()) / (m.max(1) as f64 * eps),
        orth_err(p.as_ref()) / (nf * eps),
        d,
        e,
    )
}

fn check_all<T: Scalar>() {
    let mut worst = [0.0f64; 3];
    for family in Family::ALL {
        for n in [0usize, 1, 2, 3, 8, 31, 33, 64, 100] {
            for m in [n, n + 1, n + 37, 2 * n + 5] {
                let a = family.generate::<T>(m, 1);
                let a = a.as_ref().submatrix(0, 0, m, n).to_owned();
                for (nb, qb) in [(1, 1), (8, 8), (32, 32)] {
                    let (res, oq, op, ..) = reduce(&a, nb, qb, None);
                    for (w, x) in worst.iter_mut().zip([res, oq, op]) {
                        *w = w.max(x);
                    }
                    assert!(
                        res < 30.0 && oq < 30.0 && op < 30.0,
                        "{family:?} {m} x {n} nb {nb} ({}): residual {res}, Q {oq}, P {op}",
                        T::NAME
                    );
                }
            }
        }
    }
    println!("gebrd {}: worst [residual, Q, P] = {worst:?}", T::NAME);
}

#[test]
fn reduction_ratios_f64() {
    check_all::<f64>();
}

#[test]
fn reduction_ratios_f32() {
    check_all::<f32>();
}

/// Blocked and one-column panels give the same bidiagonal to rounding, and
/// its singular values are faer's.
#[test]
fn blocked_matches_unblocked_and_faer() {
    let a = gallery::random_gaussian::<f64>(150, 120, 3);
    let (_, _, _, d1, e1) = reduce(&a, 1, 1, None);
    let (_, _, _, d2, e2) = reduce(&a, 32, 32, None);
    let s1 = crate::linalg::bidiagonal::dqds::singular_values(&d1, &e1).unwrap();
    let s2 = crate::linalg::bidiagonal::dqds::singular_values(&d2, &e2).unwrap();
    let sref = a.singular_values().unwrap();
    let s1_max = sref[0];
    for ((x, y), r) in s1.iter().zip(&s2).zip(&sref) {
        assert!((x - r).abs() < 150.0 * f64::EPSILON * s1_max, "{x} vs {r}");
        assert!((y - r).abs() < 150.0 * f64::EPSILON * s1_max, "{y} vs {r}");
    }
}

/// Large enough that the matrix-vector products, the trailing updates and
/// both `dormbr` halves are cut: the same bits in turn and on 2 or 3 threads.
#[test]
fn bitwise_on_a_runtime() {
    let (m, n) = (700, 460);
    assert!((m - 1) * (n - 1) >= GEMV_SPLIT_MIN && n > GEBRD_SPLIT_MIN);
    let a = gallery::random_gaussian::<f64>(m, n, 9);
    let bits = |rt: Option<&Runtime>| {
        let mut w = a.clone();
        let (mut d, mut e) = (vec![0.0; n], vec![0.0; n - 1]);
        let (mut tq, mut tp) = (vec![0.0; n], vec![0.0; n]);
        gebrd_on(w.as_mut(), 32, &mut d, &mut e, &mut tq, &mut tp, rt.into()).unwrap();
        let mut q = Mat::<f64>::zeros(m, n);
        for i in 0..n {
            q[(i, i)] = 1.0;
        }
        ormbr_q_on(w.as_ref(), &tq, q.as_mut(), 32, rt.into()).unwrap();
        let mut p = Mat::<f64>::identity(n, n);
        ormbr_p_on(w.as_ref(), &tp, p.as_mut(), 32, rt.into()).unwrap();
        let mut out: Vec<u64> = d.iter().chain(&e).map(|x| x.to_bits()).collect();
        for x in [q, p] {
            for j in 0..x.ncols() {
                out.extend((0..x.nrows()).map(|i| x[(i, j)].to_bits()));
            }
        }
        out
    };
    let alone = bits(None);
    for rt in [
        Runtime::builder().threads(2).build(),
        Runtime::builder().threads(3).build(),
        Runtime::builder().threads(2).stack_size(4 << 20).build(),
    ] {
        assert!(alone == bits(Some(&rt)), "{} threads differ", rt.threads());
    }
}

/// A zero matrix and a matrix with zero columns: every reflector is the
/// identity and nothing becomes NaN.
#[test]
fn zero_columns_give_identity_reflectors() {
    let mut a = gallery::random_gaussian::<f64>(40, 30, 2);
    for i in 0..40 {
        a[(i, 5)] = 0.0;
        a[(i, 6)] = 0.0;
    }
    let (res, oq, op, d, e) = reduce(&a, 8, 8, None);
    assert!(res < 30.0 && oq < 30.0 && op < 30.0);
    assert!(d.iter().chain(&e).all(|x| x.is_finite()));
    let z = Mat::<f64>::zeros(20, 12);
    let (res, oq, op, d, e) = reduce(&z, 8, 8, None);
    assert!(res == 0.0 && oq < 30.0 && op < 30.0);
    assert!(d.iter().chain(&e).all(|&x| x == 0.0));
}
