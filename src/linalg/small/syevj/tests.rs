//! Unit tests of the kernel: a matrix's bits alone and in any lane of a
//! group, diagonal and non-finite input, the sweep limit. The accuracy
//! families run through the batched API (`pipeline/batched/tests/`).

use super::*;
use crate::gallery::Rng;
use faer::Mat;

fn random_sym(n: usize, seed: u64) -> Mat<f64> {
    let mut rng = Rng::new(seed);
    let b = Mat::from_fn(n, n, |_, _| rng.uniform_in(-1.0, 1.0));
    Mat::from_fn(n, n, |i, j| b[(i, j)] + b[(j, i)])
}

fn solve(a: &[MatRef<'_, f64>], vectors: bool) -> (Vec<f64>, Vec<f64>, Vec<Result<usize>>) {
    let n = a[0].nrows();
    let mut ws = SyevjWorkspace::new();
    let mut values = vec![0.0; a.len() * n];
    let mut v = vec![0.0; a.len() * n * n];
    let r = syevj_group(
        a,
        &mut ws,
        &mut values,
        vectors.then_some(&mut v[..]),
        &SyevjParams::default(),
    );
    (values, v, r)
}

#[test]
fn a_matrix_gets_the_same_bits_alone_and_in_any_lane() {
    for n in [1usize, 2, 3, 5, 9] {
        let mats: Vec<Mat<f64>> = (0..LANES as u64).map(|s| random_sym(n, 100 + s)).collect();
        let views: Vec<_> = mats.iter().map(|m| m.as_ref()).collect();
        let (gv, gz, gr) = solve(&views, true);
        for (l, m) in mats.iter().enumerate() {
            let (v, z, r) = solve(&[m.as_ref()], true);
            assert!(r[0].is_ok() && gr[l].is_ok(), "n={n}: converged");
            assert_eq!(
                r[0].as_ref().unwrap(),
                gr[l].as_ref().unwrap(),
                "n={n}: sweeps"
            );
            let bits = |x: &[f64]| x.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&v),
                bits(&gv[l * n..(l + 1) * n]),
                "n={n} lane {l}: values"
            );
            let nn = n * n;
            assert_eq!(
                bits(&z[..nn]),
                bits(&gz[l * nn..(l + 1) * nn]),
                "n={n} lane {l}"
            );
        }
        // Reversed order: the lanes change, the bits do not.
        let rev: Vec<_> = views.iter().rev().copied().collect();
        let (rv, _, _) = solve(&rev, false);
        let (fv, _, _) = solve(&views, false);
        for l in 0..LANES {
            let (a, b) = (
                &rv[l * n..(l + 1) * n],
                &fv[(LANES - 1 - l) * n..(LANES - l) * n],
            );
            assert_eq!(a, b, "n={n}: values only, lane {l}");
        }
    }
}

#[test]
fn diagonal_input_is_returned_sorted_with_a_permutation() {
    let a = Mat::from_fn(4, 4, |i, j| {
        if i == j {
            [3.0, -1.0, 2.0, 0.5][i]
        } else {
            0.0
        }
    });
    let (v, z, r) = solve(&[a.as_ref()], true);
    assert_eq!(*r[0].as_ref().unwrap(), 1, "no rotation: one sweep");
    assert_eq!(v, vec![-1.0, 0.5, 2.0, 3.0]);
    let col_of = [1usize, 3, 2, 0];
    for (j, &c) in col_of.iter().enumerate() {
        for i in 0..4 {
            assert_eq!(z[j * 4 + i], if i == c { 1.0 } else { 0.0 });
        }
    }
}

#[test]
fn a_non_finite_lane_is_reported_and_the_others_solved() {
    let good = random_sym(3, 7);
    let mut bad = random_sym(3, 8);
    bad[(2, 1)] = f64::NAN;
    // NaN in the strict upper triangle is not read.
    let mut upper = random_sym(3, 9);
    upper[(0, 2)] = f64::INFINITY;
    let (v, _, r) = solve(&[good.as_ref(), bad.as_ref(), upper.as_ref()], true);
    assert!(
        matches!(r[1], Err(Error::NonFinite { row: 2, col: 1, .. })),
        "{:?}",
        r[1]
    );
    assert!(r[0].is_ok() && r[2].is_ok());
    let (alone, _, _) = solve(&[good.as_ref()], true);
    assert_eq!(&v[..3], &alone[..]);
}

#[test]
fn the_sweep_limit_is_an_error() {
    let a = random_sym(6, 3);
    let mut ws = SyevjWorkspace::new();
    let mut values = vec![0.0; 6];
    let r = syevj_group(
        &[a.as_ref()],
        &mut ws,
        &mut values,
        None,
        &SyevjParams { max_sweeps: 1 },
    );
    assert!(matches!(
        r[0],
        Err(Error::NoConvergence { stage: "syevj", .. })
    ));
}

/// The scale puts the largest entry in `[1, 2)` exactly, for normal and
/// subnormal entries, just below and at powers of two, in both precisions.
#[test]
fn the_scale_puts_the_largest_entry_in_one_two() {
    fn check<T: Scalar>(x: T) {
        assert!(x > T::zero() && x.is_finite());
        let (h, r) = scale_of(x);
        let y = x * h * r;
        assert!(y >= T::one() && y < T::of(2.0), "{x:?}: {y:?}");
    }
    let mut rng = Rng::new(11);
    for _ in 0..2000 {
        let x = rng.uniform_in(-1074.0, 1023.0).exp2() * rng.uniform_in(1.0, 2.0);
        if x > 0.0 && x.is_finite() {
            check(x);
            let f = x as f32;
            if f > 0.0 && f.is_finite() {
                check(f);
            }
        }
    }
    for k in [-1074, -1050, -1022, -100, -1, 0, 1, 100, 1023] {
        // In two factors: 2^-1074 alone would be computed as 1 / inf.
        let p = 2f64.powi(k / 2) * 2f64.powi(k - k / 2);
        check(p);
        if k > -1074 {
            check(p * (1.0 - f64::EPSILON / 2.0));
        }
        check(p * (2.0 - f64::EPSILON));
    }
    for x in [f32::MIN_POSITIVE, 1e-45, f32::MAX, 1.0 - f32::EPSILON / 2.0] {
        check(x);
    }
    assert_eq!(scale_of(0.0f64), (1.0, 1.0));
}
