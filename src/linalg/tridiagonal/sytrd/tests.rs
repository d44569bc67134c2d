//! Tests of the one-stage reduction: `A = Q T Q^T` and `Q^T Q = I` as
//! LAPACK-style scaled ratios (measured in f64), blocked against unblocked,
//! and the reflector-by-reflector `ormtr` against the blocked one.

use super::*;
use crate::gallery::{self, Family};
use crate::linalg::householder::testutil::{orth_err, to_f64};
use crate::runtime::Runtime;

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
            // qb = 64 and 96: the blocks `ormtr_block_for` takes from
            // n = 1536 and 3072 (at n = 131, one full block and a partial one).
            for &(nb, nx, qb) in &[
                (0, 0, 1),
                (0, 0, 8),
                (8, 8, 8),
                (4, 1, 3),
                (32, 32, 32),
                (12, 32, 64),
                (32, 32, 96),
            ] {
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
            crate::linalg::tridiagonal::sterf::sterf(&mut d, &mut e).unwrap();
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

/// `sytrd_on`/`ormtr_on` on runtimes of two and three threads (a `Team` with
/// a helper) and with dedicated stacks (splits through `Runtime::join`) give
/// bitwise the results of `sytrd`/`ormtr`, at orders where the SYR2K splits
/// (trailing order >= SYR2K_SPLIT_MIN) and the panels' `symv` too (order >=
/// SYMV_SPLIT_MIN), and are accurate there.
#[test]
fn split_updates_are_bitwise_and_accurate() {
    let runtimes = [
        Runtime::builder().threads(2).build(),
        Runtime::builder().threads(3).build(),
        Runtime::builder().threads(2).stack_size(4 << 20).build(),
    ];
    for n in [300usize, 333, 555] {
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
                rt.into(),
            )
            .unwrap();
            let mut q = Mat::<f64>::identity(n, n);
            ormtr_on(w.as_ref(), &tau, q.as_mut(), ORMTR_BLOCK, rt.into()).unwrap();
            let mut bits: Vec<u64> = d.iter().chain(&e).map(|x| x.to_bits()).collect();
            bits.extend(q.col_iter().flat_map(|c| c.iter().map(|x| x.to_bits())));
            bits
        };
        let serial = run(None);
        for rt in &runtimes {
            assert!(
                run(Some(rt)) == serial,
                "n={n}: {} threads differ from none",
                rt.threads()
            );
        }
    }
}

/// The column-pair `symv` against a plain loop over the full symmetric matrix
/// (in f64) and against faer's GEMM on the symmetrised matrix, at odd and
/// even orders on both sides of [`SYMV_SPLIT_MIN`] (the split path included):
/// `|w - w_ref| <= 4 m eps (|A| |v|)` entrywise. The split run on two threads
/// gives the bits of the run with no runtime.
fn check_symv<T: Scalar>() {
    let rt = crate::runtime::Runtime::builder().threads(2).build();
    for m in [
        1usize,
        2,
        3,
        5,
        16,
        17,
        33,
        34,
        101,
        SYMV_SPLIT_MIN - 1,
        SYMV_SPLIT_MIN,
        SYMV_SPLIT_MIN + 3,
    ] {
        let a: Mat<T> = gallery::random_symmetric_uniform(m, 3 + m as u64);
        // Garbage in the strict upper triangle: the kernel must not read it.
        let mut a = a;
        for j in 1..m {
            for i in 0..j {
                a[(i, j)] = T::of(1e30);
            }
        }
        let v: Vec<T> = (0..m)
            .map(|i| T::of(((i * 7 + 3) % 11) as f64 / 5.0 - 1.0))
            .collect();
        let s = |i: usize, j: usize| {
            if i >= j {
                a[(i, j)].f64()
            } else {
                a[(j, i)].f64()
            }
        };
        let full = Mat::<T>::from_fn(m, m, |i, j| if i >= j { a[(i, j)] } else { a[(j, i)] });
        let mut via_faer = Mat::<T>::zeros(m, 1);
        let vm = Mat::<T>::from_fn(m, 1, |i, _| v[i]);
        matmul(
            via_faer.as_mut(),
            Accum::Replace,
            full.as_ref(),
            vm.as_ref(),
            T::one(),
            Par::Seq,
        );
        let mut w = vec![T::of(7.0); m];
        symv_lower(a.as_ref(), &v, &mut w);
        let eps = T::EPS.f64();
        for i in 0..m {
            let (mut want, mut mag) = (0.0, 0.0);
            for (j, &vj) in v.iter().enumerate() {
                want += s(i, j) * vj.f64();
                mag += (s(i, j) * vj.f64()).abs();
            }
            let tol = 4.0 * m as f64 * eps * mag;
            let (got, g) = (w[i].f64(), via_faer[(i, 0)].f64());
            assert!(
                (got - want).abs() <= tol && (got - g).abs() <= 2.0 * tol,
                "{} m={m} row {i}: got {got}, loop {want}, faer {g}, tol {tol}",
                T::NAME
            );
        }
        let mut w2 = vec![T::zero(); m];
        let mut scratch = Vec::new();
        rt.fork()
            .scope(true, |team| {
                symv_lower_on(a.as_ref(), &v, &mut w2, &mut scratch, team)
            })
            .unwrap();
        assert!(
            w.iter()
                .zip(&w2)
                .all(|(x, y)| x.f64().to_bits() == y.f64().to_bits()),
            "{} m={m}: two threads differ from none",
            T::NAME
        );
    }
}

#[test]
fn sytrd_symv_column_groups_f64() {
    check_symv::<f64>();
}

#[test]
fn sytrd_symv_column_groups_f32() {
    check_symv::<f32>();
}
