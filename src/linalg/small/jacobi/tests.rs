//! Unit tests of the kernel: ordering (J7), rotation (J8), the paper's 8 x 8
//! example (J6), edge shapes (J11). Batch-level oracles live in
//! `tests/suite/batched.rs`.

use super::inner::{jacobi_sweeps, rot2};
use super::order::{round_robin, sweep_schedule};
use super::*;
use crate::gallery::Rng;
use std::collections::HashSet;

#[test]
fn round_robin_covers_every_pair_once_per_sweep() {
    for l in [2usize, 4, 6, 8, 10, 64] {
        let mut seen = HashSet::new();
        for step in sweep_schedule(l) {
            assert_eq!(step.len(), l / 2);
            let mut used = HashSet::new();
            for &(a, b) in &step {
                assert!(a < l && b < l && a != b, "l={l}: bad pair ({a},{b})");
                assert!(
                    used.insert(a) && used.insert(b),
                    "l={l}: pairs not disjoint"
                );
                assert!(seen.insert((a.min(b), a.max(b))), "l={l}: ({a},{b}) twice");
            }
        }
        assert_eq!(seen.len(), l * (l - 1) / 2, "l={l}");
    }
    // Digest A.4 / J7, and the paper's 8 x 8 example (blocks 1-based (1,2),(3,4)
    // then (1,4),(2,3)).
    assert_eq!(round_robin(4, 0), vec![(0, 1), (2, 3)]);
    assert_eq!(round_robin(4, 1), vec![(0, 3), (1, 2)]);
    assert_eq!(round_robin(4, 2), vec![(0, 2), (3, 1)]);
}

#[test]
fn rot2_zeroes_the_pair_and_is_orthogonal() {
    for (name, eps) in [("f64", f64::EPSILON / 2.0)] {
        let mut rng = Rng::new(11);
        for trial in 0..2000 {
            let gjj = rng.uniform_in(0.0, 2.0) * 10f64.powi(trial % 7 - 3);
            let gkk = rng.uniform_in(0.0, 2.0);
            let gjk = rng.uniform_in(-1.0, 1.0) * (gjj * gkk).sqrt();
            let (c, s) = rot2(gjj, gkk, gjk);
            assert!(
                (c * c + s * s - 1.0).abs() <= 4.0 * eps,
                "{name}: not orthogonal"
            );
            assert!(s.abs() <= c * (1.0 + 4.0 * eps), "{name}: |t| > 1");
            // J^T G J, off-diagonal: (c x_j + s x_k)^T (-s x_j + c x_k).
            let off = (c * c - s * s) * gjk + c * s * (gkk - gjj);
            assert!(
                off.abs() <= 4.0 * eps * (gjj + gkk),
                "{name}: off {off:e} for ({gjj}, {gkk}, {gjk})"
            );
        }
    }
}

/// The 4-decimal 8 x 8 matrix of [004 §6.1].
fn paper_matrix() -> faer::Mat<f64> {
    let rows: [[f64; 8]; 8] = [
        [
            0.1206, 0.7675, 0.3103, 0.3527, 0.7382, 0.7008, 0.6985, 0.6836,
        ],
        [
            0.6438, 0.8468, 0.4922, 0.1086, 0.8833, 0.9463, 0.4762, 0.0463,
        ],
        [
            0.0623, 0.1681, 0.0378, 0.8734, 0.3093, 0.4652, 0.1508, 0.0702,
        ],
        [
            0.4903, 0.4045, 0.6989, 0.9629, 0.4463, 0.3890, 0.5055, 0.4994,
        ],
        [
            0.3061, 0.3025, 0.1704, 0.5332, 0.0403, 0.4388, 0.8133, 0.2996,
        ],
        [
            0.8164, 0.7730, 0.4167, 0.4056, 0.9273, 0.3014, 0.1878, 0.6929,
        ],
        [
            0.9972, 0.3156, 0.1199, 0.8503, 0.7538, 0.8448, 0.3805, 0.0510,
        ],
        [
            0.4246, 0.8355, 0.2274, 0.1604, 0.5861, 0.0802, 0.5890, 0.6763,
        ],
    ];
    faer::Mat::from_fn(8, 8, |i, j| rows[i][j])
}

#[test]
fn paper_example_gram_eigenvalues_and_singular_values() {
    let a = paper_matrix();
    // G = A[:, 0:4]^T A[:, 0:4]; its eigenvalues by the inner solver run to
    // convergence (J6: {7.7671, 1.2676, 0.4876, 0.1913} within input rounding).
    let a4 = a.as_ref().subcols(0, 4);
    let gm = a4.transpose() * a4;
    let mut g: Vec<f64> = (0..16).map(|k| gm[(k % 4, k / 4)]).collect();
    let mut jac = vec![0.0; 16];
    assert!(jacobi_sweeps(
        &mut g,
        &mut jac,
        4,
        &sweep_schedule(4),
        1e-15,
        30
    ));
    let mut ev: Vec<f64> = (0..4).map(|i| g[i * 5]).collect();
    ev.sort_by(|x, y| y.partial_cmp(x).unwrap());
    for (x, want) in ev.iter().zip([7.7671, 1.2676, 0.4876, 0.1913]) {
        assert!((x - want).abs() < 5e-4, "Gram eigenvalue {x} vs {want}");
    }
    let want = [
        3.98627629, 1.24942246, 1.03146398, 0.83122769, 0.56379374, 0.47550730, 0.21050279,
        0.07308156,
    ];
    let p = JacobiParams {
        block: 2,
        ..JacobiParams::default()
    };
    let svd = gesvj(a.as_ref(), true, &p).unwrap();
    // Reference values: NumPy's SVD of [004]'s 8 x 8 example, rounded to 8
    // decimals.
    for (x, w) in svd.values.iter().zip(want) {
        assert!((x - w).abs() <= 6e-9, "sigma {x} vs {w}");
    }
    // Against faer, to working precision (J3-style ratio < 30).
    let s_ref = a.as_ref().singular_values().unwrap();
    for (x, w) in svd.values.iter().zip(&s_ref) {
        let ratio = (x - w).abs() / (8.0 * f64::EPSILON / 2.0 * s_ref[0]);
        assert!(ratio < 30.0, "ratio {ratio}");
    }
}

#[test]
fn blocking_pads_to_an_even_count_with_least_width() {
    let p = |block| JacobiParams {
        block,
        ..JacobiParams::default()
    };
    assert_eq!(super::solver::blocking(1, &p(16)), (2, 1));
    assert_eq!(super::solver::blocking(8, &p(16)), (2, 4));
    assert_eq!(super::solver::blocking(33, &p(16)), (4, 9));
    assert_eq!(super::solver::blocking(48, &p(16)), (4, 12));
    assert_eq!(super::solver::blocking(100, &p(8)), (14, 8));
}

#[test]
fn zero_and_single_column_matrices() {
    let z = faer::Mat::<f64>::zeros(5, 3);
    let s = gesvj(z.as_ref(), true, &JacobiParams::default()).unwrap();
    assert_eq!(s.values, vec![0.0; 3]);
    // U completed to an orthonormal basis (the documented choice).
    let u = s.u.unwrap();
    let utu = u.transpose() * &u;
    for i in 0..3 {
        for j in 0..3 {
            let e = if i == j { 1.0 } else { 0.0 };
            assert!((utu[(i, j)] - e).abs() < 1e-15);
        }
    }
    let c = faer::Mat::<f32>::from_fn(4, 1, |i, _| (i as f32) - 1.5);
    let s = gesvj(c.as_ref(), true, &JacobiParams::default()).unwrap();
    let want = (0..4).map(|i| (i as f32 - 1.5).powi(2)).sum::<f32>().sqrt();
    assert!((s.values[0] - want).abs() <= 2.0 * f32::EPSILON * want);
    let nan = faer::Mat::<f64>::from_fn(2, 2, |i, j| if i == 1 && j == 0 { f64::NAN } else { 1.0 });
    assert!(matches!(
        gesvj(nan.as_ref(), false, &JacobiParams::default()),
        Err(crate::Error::NonFinite { row: 1, col: 0, .. })
    ));
}

/// `validate` accepts the defaults and infinite aspect (preconditioning
/// off), and refuses each out-of-range field, NaN included.
#[test]
fn params_out_of_range_are_refused() {
    let d = JacobiParams::default();
    assert!(d.validate().is_ok());
    let off = JacobiParams {
        qr_min_aspect: f64::INFINITY,
        ..d.clone()
    };
    assert!(off.validate().is_ok());
    let bad = [
        JacobiParams {
            block: 0,
            ..d.clone()
        },
        JacobiParams {
            max_sweeps: 0,
            ..d.clone()
        },
        JacobiParams {
            tol_floor: f64::NAN,
            ..d.clone()
        },
        JacobiParams {
            tol_start: Some(0.5),
            ..d.clone()
        },
        JacobiParams {
            qr_min_aspect: 0.5,
            ..d.clone()
        },
        JacobiParams {
            qr_min_aspect: f64::NAN,
            ..d.clone()
        },
    ];
    for p in bad {
        assert!(
            matches!(p.validate(), Err(crate::Error::InvalidArgument(_))),
            "{p:?}"
        );
    }
}

/// The QR preconditioning's triangle: `Q [R; 0]` gives the input back and `R`
/// is upper triangular, padded with zero columns; an exactly zero pivot (a
/// zero column, first or later) gives `None`, so that the solver keeps the
/// full matrix (see `triangle_of_qr`).
#[test]
fn triangle_of_qr_reconstructs_and_refuses_a_zero_pivot() {
    use super::solver::{times_q, triangle_of_qr};
    let mut rng = Rng::new(5);
    let (m, n, n2) = (13usize, 4usize, 6usize);
    let a = faer::Mat::<f64>::from_fn(m, n, |_, _| rng.uniform() - 0.5);
    let (r, (v, t)) = triangle_of_qr(a.as_ref(), n2).expect("a full-rank matrix");
    assert_eq!((r.nrows(), r.ncols()), (n, n2));
    for j in 0..n2 {
        for i in 0..n {
            if i > j || j >= n {
                assert_eq!(r[(i, j)], 0.0, "R({i}, {j})");
            }
        }
    }
    let qr = times_q(v.as_ref(), t.as_ref(), r.as_ref().subcols(0, n));
    let err = (&qr - &a).norm_max();
    assert!(err <= 30.0 * m as f64 * f64::EPSILON, "|QR - A| = {err}");
    for zero in [0, 2, n - 1] {
        let mut b = a.clone();
        b.col_mut(zero).fill(0.0);
        assert!(
            triangle_of_qr(b.as_ref(), n2).is_none(),
            "zero column {zero} must refuse"
        );
    }
}
