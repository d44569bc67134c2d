//! Tests of the Hermitian kernels: `zlarfg`'s contract, `Q^H A Q = T` with
//! `Q` unitary from the blocked and unblocked reductions, the diagonal's
//! imaginary part ignored, and `zunmtr` by column blocks bitwise the whole.

use super::*;
use crate::gallery::random_hermitian;
use faer::{c32, c64, Mat};

/// `c` as `c64`.
fn up<C: ComplexScalar>(z: C) -> c64 {
    c64::new(z.re().f64(), z.im().f64())
}

/// `H^H (alpha, x)` for `H = I - tau v v^H`, `v = (1, vt)`.
fn apply_h_adjoint(tau: c64, vt: &[c64], y: &[c64]) -> Vec<c64> {
    let mut v = vec![c64::new(1.0, 0.0)];
    v.extend_from_slice(vt);
    // H^H y = y - conj(tau) v (v^H y).
    let s: c64 = v.iter().zip(y).map(|(a, b)| a.conj() * b).sum();
    v.iter()
        .zip(y)
        .map(|(vi, yi)| yi - tau.conj() * vi * s)
        .collect()
}

fn larfg_case<C: ComplexScalar>(alpha: c64, x: &[c64], tol: f64) {
    let cv = |z: c64| C::from_parts(Re::<C>::of(z.re), Re::<C>::of(z.im));
    let mut a = cv(alpha);
    let mut xs: Vec<C> = x.iter().map(|&z| cv(z)).collect();
    let y: Vec<c64> = std::iter::once(up(a))
        .chain(xs.iter().map(|&z| up(z)))
        .collect();
    let tau = larfg(&mut a, &mut xs);
    assert_eq!(a.im(), Re::<C>::zero(), "beta must be real");
    let vt: Vec<c64> = xs.iter().map(|&z| up(z)).collect();
    let hy = apply_h_adjoint(up(tau), &vt, &y);
    // Scaled: the squares of the tiny case underflow.
    let big = y.iter().fold(0.0f64, |m, z| m.max(z.norm()));
    let norm = big * y.iter().map(|z| (z / big).norm_sqr()).sum::<f64>().sqrt();
    assert!((hy[0] - up(a)).norm() <= tol * norm, "{hy:?} {a:?}");
    for z in &hy[1..] {
        assert!(z.norm() <= tol * norm, "{hy:?}");
    }
    // |beta| = ||(alpha, x)||: H^H preserves the norm.
    assert!((a.re().f64().abs() - norm).abs() <= tol * norm);
}

#[test]
fn larfg_annihilates_with_real_beta() {
    for (alpha, x) in [
        (
            c64::new(1.0, 2.0),
            vec![c64::new(0.5, -1.0), c64::new(3.0, 0.25)],
        ),
        (c64::new(-3.0, 0.5), vec![c64::new(0.0, 1.0)]),
        // x = 0 with a complex alpha: a pure phase reflector.
        (c64::new(0.6, -0.8), vec![c64::new(0.0, 0.0); 3]),
        (c64::new(-0.6, 0.8), vec![]),
        // Tiny: the rescaling loop.
        (c64::new(1e-300, 2e-300), vec![c64::new(3e-300, -1e-300)]),
    ] {
        larfg_case::<c64>(alpha, &x, 1e-14);
    }
    larfg_case::<c32>(c64::new(1.0, 2.0), &[c64::new(0.5, -1.0)], 1e-6);
    larfg_case::<c32>(c64::new(1e-38, 2e-38), &[c64::new(3e-38, -1e-38)], 1e-6);
}

#[test]
fn larfg_is_identity_for_real_alpha_and_zero_x() {
    let mut a = c64::new(2.5, 0.0);
    let mut x = vec![c64::new(0.0, 0.0); 2];
    assert_eq!(larfg(&mut a, &mut x), c64::new(0.0, 0.0));
    assert_eq!(a, c64::new(2.5, 0.0));
}

/// `max(||Q T Q^H - A||_F / (n ||A||_F eps), ||Q^H Q - I||_F / (n eps))`
/// for the reduction of `a` with `params`.
fn reduction_ratios<C: ComplexScalar>(a: &Mat<C>, params: HetrdParams) -> (f64, f64) {
    let n = a.nrows();
    let mut h = a.clone();
    let zero = Re::<C>::zero();
    let (mut d, mut e, mut tau) = (
        vec![zero; n],
        vec![zero; n - 1],
        vec![C::zero_impl(); n - 1],
    );
    hetrd(h.as_mut(), params, &mut d, &mut e, &mut tau);
    let mut q = Mat::<C>::identity(n, n);
    unmtr(h.as_ref(), &tau, q.as_mut(), 5);
    let q = Mat::from_fn(n, n, |i, j| up(q[(i, j)]));
    let t = Mat::from_fn(n, n, |i, j| {
        let x = if i == j {
            d[i]
        } else if i == j + 1 {
            e[j]
        } else if j == i + 1 {
            e[i]
        } else {
            zero
        };
        c64::new(x.f64(), 0.0)
    });
    let a64 = Mat::from_fn(n, n, |i, j| {
        let z = up(a[(i.max(j), i.min(j))]);
        match i.cmp(&j) {
            std::cmp::Ordering::Equal => c64::new(z.re, 0.0),
            std::cmp::Ordering::Greater => z,
            std::cmp::Ordering::Less => z.conj(),
        }
    });
    let eps = Re::<C>::EPS.f64();
    let nf = n as f64;
    let back = (&q * &t * q.adjoint() - &a64).norm_l2() / (nf * a64.norm_l2() * eps);
    let orth = (q.adjoint() * &q - Mat::<c64>::identity(n, n)).norm_l2() / (nf * eps);
    (back, orth)
}

fn reduction_case<C: ComplexScalar>() {
    for n in [2, 3, 9, 40, 77] {
        let a = random_hermitian::<C>(n, 11 + n as u64);
        for params in [
            HetrdParams {
                block: 1,
                crossover: 1,
            },
            HetrdParams {
                block: 4,
                crossover: 4,
            },
            HetrdParams {
                block: 8,
                crossover: 16,
            },
            HetrdParams::default(),
        ] {
            let (back, orth) = reduction_ratios(&a, params);
            assert!(
                back < 30.0 && orth < 30.0,
                "n {n} {params:?}: {back} {orth}"
            );
        }
    }
}

#[test]
fn hetrd_reduces_with_unitary_q_c64() {
    reduction_case::<c64>();
}

#[test]
fn hetrd_reduces_with_unitary_q_c32() {
    reduction_case::<c32>();
}

#[test]
fn hetrd_ignores_the_imaginary_part_of_the_diagonal() {
    let n = 50;
    let a = random_hermitian::<c64>(n, 3);
    let mut b = a.clone();
    for i in 0..n {
        b[(i, i)].im = (i as f64) - 7.5;
    }
    let run = |mut m: Mat<c64>| {
        let (mut d, mut e, mut tau) = (
            vec![0.0; n],
            vec![0.0; n - 1],
            vec![c64::new(0.0, 0.0); n - 1],
        );
        hetrd(
            m.as_mut(),
            HetrdParams {
                block: 8,
                crossover: 8,
            },
            &mut d,
            &mut e,
            &mut tau,
        );
        (d, e, tau)
    };
    assert_eq!(run(a), run(b));
}

#[test]
fn unmtr_by_column_blocks_is_bitwise_the_whole() {
    let n = 70;
    let mut h = random_hermitian::<c64>(n, 5);
    let (mut d, mut e, mut tau) = (
        vec![0.0; n],
        vec![0.0; n - 1],
        vec![c64::new(0.0, 0.0); n - 1],
    );
    hetrd(h.as_mut(), HetrdParams::default(), &mut d, &mut e, &mut tau);
    let z = random_hermitian::<c64>(n, 6);
    let t = block_factors(h.as_ref(), &tau, 16);
    let mut whole = z.clone();
    unmtr_blocked(h.as_ref(), t.as_ref(), 16, whole.as_mut());
    let mut parts = z.clone();
    for (c0, w) in [(0, 13), (13, 40), (53, 17)] {
        unmtr_blocked(
            h.as_ref(),
            t.as_ref(),
            16,
            parts.as_mut().subcols_mut(c0, w),
        );
    }
    assert!(whole == parts);
    // And the unblocked-factor path agrees with the blocked one to rounding.
    let mut again = z.clone();
    unmtr(h.as_ref(), &tau, again.as_mut(), 1);
    assert!((&again - &whole).norm_max() < 1e-12 * z.norm_max() * n as f64);
}
