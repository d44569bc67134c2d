//! The group driver against runs of the one-lane driver: the same bits,
//! whatever the bidiagonals and however many lanes, and a failing lane leaves
//! the others' results intact.

use super::*;
use crate::gallery::Rng;
use faer::Mat;

/// A bidiagonal of order `n` from a few families: uniform, graded (the chase
/// reverses direction), with exact zeros (splits and zero-shift sweeps), and
/// uniform scaled to 1e-160 or 1e150 (squares out of range: the chase's
/// `dlartg` fallback).
fn bidiagonal(n: usize, family: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut r = Rng::new(seed);
    let mut d: Vec<f64> = (0..n).map(|_| r.uniform_in(-1.0, 1.0)).collect();
    let mut e: Vec<f64> = (0..n.saturating_sub(1))
        .map(|_| r.uniform_in(-1.0, 1.0))
        .collect();
    match family {
        1 => {
            for (i, x) in d.iter_mut().enumerate() {
                *x *= 0.5f64.powi(i as i32);
            }
            for (i, x) in e.iter_mut().enumerate() {
                *x *= 0.5f64.powi(i as i32);
            }
        }
        2 => {
            for i in (0..n).step_by(5) {
                d[i] = 0.0;
            }
            for i in (3..n.saturating_sub(1)).step_by(7) {
                e[i] = 0.0;
            }
        }
        3 | 4 => {
            let scale = if family == 3 { 1e-160 } else { 1e150 };
            for x in d.iter_mut().chain(e.iter_mut()) {
                *x *= scale;
            }
        }
        _ => {}
    }
    (d, e)
}

/// `bdsqr` with `maxitr` on one bidiagonal, with vectors of `rows` rows.
fn single(
    d: &[f64],
    e: &[f64],
    rows: usize,
    maxitr: usize,
) -> (Result<(), Error>, Vec<f64>, Mat<f64>, Mat<f64>) {
    let n = d.len();
    let (mut d, mut e) = (d.to_vec(), e.to_vec());
    let mut u = Mat::from_fn(rows, n, |i, j| ((i * 7 + j * 3) % 11) as f64 - 5.0);
    let mut v = Mat::from_fn(n, n, |i, j| if i == j { 1.0 } else { 0.0 });
    let res = bdsqr_with_budget(&mut d, &mut e, u.as_mut(), v.as_mut(), maxitr);
    (res, d, u, v)
}

#[test]
fn pair_is_bitwise_two_single_runs() {
    let cases = [(32, 32), (17, 40), (40, 3), (1, 9), (2, 2), (60, 31)];
    for (k, &(n0, n1)) in cases.iter().enumerate() {
        for family in 0..3 {
            let (d0, e0) = bidiagonal(n0, family, 10 + k as u64);
            let (d1, e1) = bidiagonal(n1, (family + 1) % 3, 20 + k as u64);
            let (r0, s0, u0, v0) = single(&d0, &e0, n0 + 3, MAXITR);
            let (r1, s1, u1, v1) = single(&d1, &e1, n1 + 3, MAXITR);
            assert!(r0.is_ok() && r1.is_ok());
            let (mut pd0, mut pe0, mut pd1, mut pe1) =
                (d0.clone(), e0.clone(), d1.clone(), e1.clone());
            let mut pu0 = Mat::from_fn(n0 + 3, n0, |i, j| ((i * 7 + j * 3) % 11) as f64 - 5.0);
            let mut pu1 = Mat::from_fn(n1 + 3, n1, |i, j| ((i * 7 + j * 3) % 11) as f64 - 5.0);
            let mut pv0 = Mat::from_fn(n0, n0, |i, j| if i == j { 1.0 } else { 0.0 });
            let mut pv1 = Mat::from_fn(n1, n1, |i, j| if i == j { 1.0 } else { 0.0 });
            let l0 = Lane::new(&mut pd0, &mut pe0, pu0.as_mut(), pv0.as_mut()).unwrap();
            let l1 = Lane::new(&mut pd1, &mut pe1, pu1.as_mut(), pv1.as_mut()).unwrap();
            let [q0, q1]: [Result<(), Error>; 2] = bdsqr_group(vec![l0, l1]).try_into().unwrap();
            assert!(q0.is_ok() && q1.is_ok());
            let same =
                |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(
                same(&s0, &pd0) && same(&s1, &pd1),
                "{n0}/{n1} family {family}: values"
            );
            assert!(
                u0 == pu0 && v0 == pv0 && u1 == pu1 && v1 == pv1,
                "{n0}/{n1} family {family}: vectors"
            );
        }
    }
}

/// A bidiagonal and its two vector matrices.
type Problem = (Vec<f64>, Vec<f64>, Mat<f64>, Mat<f64>);

/// Groups of one to four lanes of mixed orders and families (so lanes drop
/// out at different sweeps, pairs of mu tests meet lone ones, and lanes whose
/// chase takes the `dlartg` fallback run beside lanes that do not): each lane
/// bitwise as on its own.
#[test]
fn group_is_bitwise_separate_runs() {
    let orders = [32, 7, 45, 1, 20, 33, 2, 64];
    for lanes in 1..=4 {
        for start in 0..10 {
            let specs: Vec<(usize, usize, u64)> = (0..lanes)
                .map(|l| {
                    let k = (start + 3 * l) % orders.len();
                    (orders[k], (start + l) % 5, 100 + (start * 10 + l) as u64)
                })
                .collect();
            let mut inputs: Vec<Problem> = specs
                .iter()
                .map(|&(n, family, seed)| {
                    let (d, e) = bidiagonal(n, family, seed);
                    let u = Mat::from_fn(n + 2, n, |i, j| ((i * 7 + j * 3) % 11) as f64 - 5.0);
                    let v = Mat::from_fn(n, n, |i, j| if i == j { 1.0 } else { 0.0 });
                    (d, e, u, v)
                })
                .collect();
            let expect: Vec<_> = inputs
                .iter()
                .map(|(d, e, _, _)| single(d, e, d.len() + 2, MAXITR))
                .collect();
            let group: Vec<Lane<'_, f64>> = inputs
                .iter_mut()
                .map(|(d, e, u, v)| Lane::new(d, e, u.as_mut(), v.as_mut()).unwrap())
                .collect();
            let results = bdsqr_group(group);
            for (l, (r, (d, _, u, v))) in results.iter().zip(&inputs).enumerate() {
                let (r0, d0, u0, v0) = &expect[l];
                assert!(r.is_ok() && r0.is_ok(), "{specs:?} lane {l}");
                let same = d.iter().zip(d0).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(
                    same && u == u0 && v == v0,
                    "{specs:?} lane {l}: not bitwise"
                );
            }
        }
    }
}

#[test]
fn a_failing_lane_leaves_the_other_complete() {
    let (d0, e0) = bidiagonal(30, 0, 3);
    let (d1, e1) = bidiagonal(24, 1, 4);
    let (_, s1, u1, v1) = single(&d1, &e1, 24, MAXITR);
    let (mut pd0, mut pe0, mut pd1, mut pe1) = (d0.clone(), e0.clone(), d1.clone(), e1.clone());
    let (mut pu0, mut pv0) = (Mat::<f64>::zeros(0, 30), Mat::<f64>::zeros(0, 30));
    let mut pu1 = Mat::from_fn(24, 24, |i, j| ((i * 7 + j * 3) % 11) as f64 - 5.0);
    let mut pv1 = Mat::from_fn(24, 24, |i, j| if i == j { 1.0 } else { 0.0 });
    // Lane 0 starved (no inner steps allowed): an error, lane 1 as on its own.
    let l0 = Lane::with_budget(&mut pd0, &mut pe0, pu0.as_mut(), pv0.as_mut(), 0);
    let l1 = Lane::new(&mut pd1, &mut pe1, pu1.as_mut(), pv1.as_mut()).unwrap();
    let [q0, q1]: [Result<(), Error>; 2] = bdsqr_group(vec![l0, l1]).try_into().unwrap();
    assert!(matches!(
        q0,
        Err(Error::NoConvergence { stage: "bdsqr", .. })
    ));
    assert!(q1.is_ok());
    assert!(s1 == pd1 && u1 == pu1 && v1 == pv1);
    // Shapes are checked as by `bdsqr`.
    let (mut d, mut e) = (vec![1.0; 3], vec![0.5; 2]);
    assert!(matches!(
        Lane::new(
            &mut d,
            &mut e,
            Mat::<f64>::zeros(3, 2).as_mut(),
            Mat::<f64>::zeros(3, 3).as_mut()
        ),
        Err(Error::Shape(_))
    ));
}
