//! Tests of the one-stage reduction: `A = Q T Q^T` and `Q^T Q = I` as
//! LAPACK-style scaled ratios (measured in f64), blocked against unblocked,
//! and the reflector-by-reflector `ormtr` against the blocked one.

use super::*;
use crate::gallery::{self, Family};
use crate::linalg::householder::testutil::{orth_err, to_f64};

/// The symmetric matrix of the lower triangle of `a`, in f64.
fn sym_f64<T: Scalar>(a: MatRef<'_, T>) -> Mat<f64> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| {
        if i >= j {
            a[(i, j)].f64()
        } else {
            a[(j, i)].f64()
        }
    })
}

/// Reduces `a` (blocked with `nb`, `nx`, or unblocked when `nb == 0`), forms
/// `Q` by applying it to the identity with reflector blocks of `qb`, and
/// returns `(||A - Q T Q^T||_F / (n ||A||_F eps), ||Q^T Q - I||_F / (n eps),
/// d, e)`.
fn reduce<T: Scalar>(a: &Mat<T>, nb: usize, nx: usize, qb: usize) -> (f64, f64, Vec<T>, Vec<T>) {
    let n = a.nrows();
    let mut w = a.clone();
    let (mut d, mut e, mut tau) = (
        vec![T::zero(); n],
        vec![T::zero(); n.saturating_sub(1)],
        vec![T::zero(); n.saturating_sub(1)],
    );
    if nb == 0 {
        sytd2(w.as_mut(), &mut d, &mut e, &mut tau);
    } else {
        sytrd(w.as_mut(), nb, nx, &mut d, &mut e, &mut tau);
    }
    let mut q = Mat::<T>::identity(n, n);
    ormtr(w.as_ref(), &tau, q.as_mut(), qb);
    let q = to_f64(q.as_ref());
    let t = gallery::tridiagonal_to_dense::<f64>(
        &d.iter().map(|x| x.f64()).collect::<Vec<_>>(),
        &e.iter().map(|x| x.f64()).collect::<Vec<_>>(),
    );
    let a64 = sym_f64(a.as_ref());
    let r = &a64 - &q * &t * q.transpose();
    let eps = T::EPS.f64();
    let nf = n.max(1) as f64;
    let anorm = a64.norm_l2();
    let res = if anorm > 0.0 {
        r.norm_l2() / (nf * anorm * eps)
    } else {
        r.norm_l2()
    };
    (res, orth_err(q.as_ref()) / (nf * eps), d, e)
}

fn check_all<T: Scalar>() {
    let mut worst = (0.0f64, 0.0f64);
    for family in Family::ALL {
        for n in [0usize, 1, 2, 3, 8, 31, 33, 64, 100, 131] {
            let a: Mat<T> = family.generate(n, 7);
            for &(nb, nx, qb) in &[(0, 0, 1), (0, 0, 8), (8, 8, 8), (4, 1, 3), (32, 32, 32)] {
                let (res, orth, _, _) = reduce(&a, nb, nx, qb);
                assert!(
                    res < 30.0 && orth < 30.0,
                    "{} n={n} nb={nb} nx={nx} qb={qb} {}: residual {res}, orthogonality {orth}",
                    family.name(),
                    T::NAME
                );
                worst = (worst.0.max(res), worst.1.max(orth));
            }
        }
    }
    eprintln!(
        "sytrd {}: worst residual {:.3}, orthogonality {:.3}",
        T::NAME,
        worst.0,
        worst.1
    );
}

#[test]
fn reduction_reconstructs_a_f64() {
    check_all::<f64>();
}

#[test]
fn reduction_reconstructs_a_f32() {
    check_all::<f32>();
}

#[test]
fn tridiagonal_has_the_eigenvalues_of_a() {
    // Blocked and unblocked: the eigenvalues of T (sterf) against faer's of A,
    // as max |error| / (n eps max |lambda|).
    for n in [150usize, 300] {
        let a: Mat<f64> = gallery::random_symmetric_gaussian(n, 3);
        let mut want = sym_f64(a.as_ref())
            .self_adjoint_eigenvalues(faer::Side::Lower)
            .unwrap();
        want.sort_by(f64::total_cmp);
        let norm = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        for (nb, nx) in [(0, 0), (16, 16), (32, 32)] {
            let (_, _, mut d, mut e) = reduce(&a, nb, nx, 32);
            crate::linalg::sterf::sterf(&mut d, &mut e).unwrap();
            let err = d
                .iter()
                .zip(&want)
                .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
            let r = err / (n as f64 * f64::EPSILON * norm);
            assert!(r < 5.0, "n={n} nb={nb}: eigenvalue ratio {r}");
        }
    }
}

#[test]
fn upper_triangle_is_never_touched() {
    let n = 70;
    let mut a: Mat<f64> = gallery::random_symmetric_uniform(n, 5);
    for j in 0..n {
        for i in 0..j {
            a[(i, j)] = f64::NAN;
        }
    }
    let (res, orth, _, _) = reduce(&a, 8, 8, 8);
    assert!(
        res < 30.0 && orth < 30.0,
        "residual {res}, orthogonality {orth}"
    );
}

/// `sytrd_on`/`ormtr_on` on a two-thread runtime (SYR2K and column halves as
/// tasks) give bitwise the results of `sytrd`/`ormtr`, at orders where the
/// SYR2K splits (trailing order >= SYR2K_SPLIT_MIN), and are accurate there.
#[test]
fn split_updates_are_bitwise_and_accurate() {
    let rt = Runtime::builder().threads(2).build();
    for n in [300usize, 333] {
        let a: Mat<f64> = gallery::random_symmetric_gaussian(n, 11);
        let (res, orth, _, _) = reduce(&a, SYTRD_BLOCK, SYTRD_CROSSOVER, ORMTR_BLOCK);
        assert!(
            res < 30.0 && orth < 30.0,
            "n={n}: residual {res}, orthogonality {orth}"
        );
        let run = |rt: Option<&Runtime>| {
            let mut w = a.clone();
            let m = n - 1;
            let (mut d, mut e, mut tau) = (vec![0.0; n], vec![0.0; m], vec![0.0; m]);
            sytrd_on(
                w.as_mut(),
                SYTRD_BLOCK,
                SYTRD_CROSSOVER,
                &mut d,
                &mut e,
                &mut tau,
                rt,
            )
            .unwrap();
            let mut q = Mat::<f64>::identity(n, n);
            ormtr_on(w.as_ref(), &tau, q.as_mut(), ORMTR_BLOCK, rt).unwrap();
            let mut bits: Vec<u64> = d.iter().chain(&e).map(|x| x.to_bits()).collect();
            bits.extend(q.col_iter().flat_map(|c| c.iter().map(|x| x.to_bits())));
            bits
        };
        assert!(
            run(Some(&rt)) == run(None),
            "n={n}: two threads differ from none"
        );
    }
}
