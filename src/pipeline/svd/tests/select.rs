//! Unit tests of the SVD selection (`select.rs`) on bidiagonals given whole.

use super::super::gb2bd::Bidiagonal;
use super::super::select::{golub_kahan, select_bidiagonal, SvdSelection};
use crate::graph::TaskGraph;
use crate::runtime::Runtime;
use faer::Mat;
use std::ops::Range;

/// `[max |sigma - ref| / (n eps sigma_1), ||B V - U S|| / (n eps ||B||),
/// orth(U), orth(V)]` of the top `k` of the bidiagonal `(d, e)`, the
/// reference from faer's singular values of the dense `B`.
fn ratios(d: &[f64], e: &[f64], sel: Range<usize>) -> [f64; 4] {
    let n = d.len();
    let b = Mat::from_fn(n, n, |i, j| {
        if i == j {
            d[i]
        } else if j == i + 1 {
            e[i]
        } else {
            0.0
        }
    });
    let mut g = TaskGraph::new();
    let bd = Bidiagonal::from_vectors(d.to_vec(), e.to_vec()).unwrap();
    let st = select_bidiagonal(&mut g, bd, sel.clone(), true, 3).unwrap();
    g.check_races().unwrap();
    Runtime::builder().threads(2).build().run(g).unwrap();
    let s = st.values.get().unwrap();
    let (u, v) = st.vectors.unwrap();
    let (u, v) = (
        u.into_result_unchecked().get().unwrap(),
        v.into_result_unchecked().get().unwrap(),
    );
    let k = sel.len();
    let r = b.singular_values().unwrap();
    let eps = f64::EPSILON;
    let (nn, bn) = (n as f64, r[0].max(f64::MIN_POSITIVE));
    let vals = s
        .iter()
        .zip(&r[sel])
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()))
        / (nn * eps * bn);
    let us = Mat::from_fn(n, k, |i, j| u[(i, j)] * s[j]);
    let res = (&b * &v - us).norm_l2() / (nn * eps * bn);
    let id = Mat::<f64>::identity(k, k);
    let ou = (u.transpose() * &u - &id).norm_l2() / (nn * eps);
    let ov = (v.transpose() * &v - &id).norm_l2() / (nn * eps);
    [vals, res, ou, ov]
}

/// Hard bidiagonals: zeros on the diagonal (exact zero singular values,
/// the near-null path), zeros off it (a split T_GK), graded entries, and
/// a repeated value; every ratio below 30.
#[test]
fn hard_bidiagonals() {
    let n = 40;
    let cases: Vec<(Vec<f64>, Vec<f64>)> = vec![
        (
            (0..n)
                .map(|i| if i % 4 == 1 { 0.0 } else { 1.0 + i as f64 })
                .collect(),
            (0..n - 1).map(|i| 0.5 + (i % 3) as f64).collect(),
        ),
        (
            (0..n).map(|i| 1.0 + (i % 5) as f64).collect(),
            (0..n - 1)
                .map(|i| if i % 7 == 0 { 0.0 } else { 0.3 })
                .collect(),
        ),
        (
            (0..n).map(|i| 10f64.powi(-(i as i32) / 3)).collect(),
            (0..n - 1)
                .map(|i| 10f64.powi(-(i as i32) / 3) * 0.5)
                .collect(),
        ),
        (vec![1.0; n], vec![0.0; n - 1]),
        (vec![0.0; n], vec![0.0; n - 1]),
    ];
    for (c, (d, e)) in cases.iter().enumerate() {
        for sel in [0..1, 0..10, 5..25, 0..n] {
            let r = ratios(d, e, sel.clone());
            assert!(r.iter().all(|&x| x < 30.0), "case {c}, {sel:?}: {r:?}");
        }
    }
}

#[test]
fn golub_kahan_layout_and_bad_selection() {
    let (dt, et) = golub_kahan(&[1.0, 2.0, 3.0], &[4.0, 5.0]);
    assert_eq!(dt, vec![0.0; 6]);
    assert_eq!(et, vec![1.0, 4.0, 2.0, 5.0, 3.0]);
    assert!(SvdSelection::Largest(4).indices(3).is_err());
    assert_eq!(SvdSelection::Largest(0).indices(3).unwrap(), 0..0);
    assert!(SvdSelection::Index(2..4).indices(3).is_err());
}
