//! The values-only D&C's own pieces; its accuracy on the D&C test families
//! (against bisection and closed forms, bitwise across thread counts) is
//! checked by every case of `stedc::tests`.

use super::*;
use crate::linalg::tridiagonal::stedc::{serial::merge_node, solve_leaf};
use faer::Mat;

/// A random tridiagonal with entries in [-1, 1) from a small LCG.
fn random(n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move || {
        s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    let d = (0..n).map(|_| next()).collect();
    let e = (0..n.saturating_sub(1)).map(|_| next()).collect();
    (d, e)
}

/// The first and last rows of a merge by [`MergeProblem::new_rows`] and
/// [`MergeProblem::rows_into`] are rows 0 and n - 1 of the eigenvector
/// matrix [`merge_node`] forms from the same halves, and the eigenvalues are
/// bitwise the same (same deflation and roots).
#[test]
fn rows_are_the_full_merges_edge_rows() {
    for (n, n1, seed) in [(40, 20, 1), (41, 17, 2), (64, 32, 3)] {
        let (d0, e) = random(n, seed);
        let beta = e[n1 - 1];
        // The two torn halves, solved with their full eigenvectors.
        let mut d = d0.clone();
        let mut q = Mat::<f64>::zeros(n, n);
        let (dl, dr) = d.split_at_mut(n1);
        let (ql, _, _, qr) = q.as_mut().split_at_mut(n1, n1);
        solve_leaf(dl, &e[..n1 - 1], 0.0, beta, ql).unwrap();
        solve_leaf(dr, &e[n1..], beta, 0.0, qr).unwrap();
        let first: Vec<f64> = (0..n)
            .map(|j| if j < n1 { q[(0, j)] } else { q[(n1, j)] })
            .collect();
        let last: Vec<f64> = (0..n)
            .map(|j| {
                if j < n1 {
                    q[(n1 - 1, j)]
                } else {
                    q[(n - 1, j)]
                }
            })
            .collect();

        let (mut p, edges) = MergeProblem::new_rows(&d, &first, &last, n1, beta).unwrap();
        let k = p.k();
        assert!(k > 0);
        p.solve_roots_range(0..k).unwrap();
        p.order_only().unwrap();
        let (mut f, mut l) = (vec![0.0; n], vec![0.0; n]);
        let early = p.rows_into(&edges, 0..n, &mut f, &mut l);
        assert!(matches!(early, Err(Error::InvalidArgument(_))), "{early:?}");
        p.lowner_range(0..k).unwrap();
        // Two ranges: the same as one.
        let (fa, fb) = f.split_at_mut(n / 3);
        let (la, lb) = l.split_at_mut(n / 3);
        p.rows_into(&edges, 0..n / 3, fa, la).unwrap();
        p.rows_into(&edges, n / 3..n, fb, lb).unwrap();
        let mut values = vec![0.0; n];
        p.eigenvalues_into(&mut values);

        merge_node(&mut d, q.as_mut(), n1, beta, 16).unwrap();
        assert_eq!(values, d, "n = {n}: eigenvalues");
        for j in 0..n {
            assert!(
                (f[j] - q[(0, j)]).abs() < 1e-14,
                "n = {n}: first row, column {j}"
            );
            assert!(
                (l[j] - q[(n - 1, j)]).abs() < 1e-14,
                "n = {n}: last row, column {j}"
            );
        }
    }
}

#[test]
fn small_orders_and_zero_blocks() {
    let (mut d, mut e) = (Vec::<f64>::new(), Vec::new());
    stedc_values(&mut d, &mut e, 4, Fork::Seq).unwrap();
    let (mut d, mut e) = (vec![3.0], vec![]);
    stedc_values(&mut d, &mut e, 4, Fork::Seq).unwrap();
    assert_eq!(d, [3.0]);
    let (mut d, mut e) = (vec![2.0f64, 2.0], vec![1.0]);
    stedc_values(&mut d, &mut e, 1, Fork::Seq).unwrap();
    assert!(
        (d[0] - 1.0).abs() < 1e-15 && (d[1] - 3.0).abs() < 1e-15,
        "{d:?}"
    );
    // A zero block between two random ones: its zeros stay, sorted in.
    let (mut d, mut e) = random(30, 9);
    d[10..20].fill(0.0);
    e[9..20].fill(0.0);
    let (mut dr, mut er) = (d.clone(), e.clone());
    crate::linalg::tridiagonal::sterf::sterf(&mut dr, &mut er).unwrap();
    stedc_values(&mut d, &mut e, 4, Fork::Seq).unwrap();
    for (x, y) in d.iter().zip(&dr) {
        assert!((x - y).abs() < 1e-14, "{d:?} vs {dr:?}");
    }
}

#[test]
fn errors() {
    let (mut d, mut e) = random(50, 4);
    d[7] = f64::NAN;
    match stedc_values(&mut d, &mut e, 8, Fork::Seq) {
        Err(Error::NonFinite { row: 7, col: 7, .. }) => {}
        other => panic!("{other:?}"),
    }
    let (mut d, mut e) = random(50, 4);
    e[3] = f64::INFINITY;
    match stedc_values(&mut d, &mut e, 8, Fork::Seq) {
        Err(Error::NonFinite { row: 4, col: 3, .. }) => {}
        other => panic!("{other:?}"),
    }
    let (mut d, mut e) = (vec![1.0; 5], vec![1.0; 5]);
    assert!(matches!(
        stedc_values(&mut d, &mut e, 8, Fork::Seq),
        Err(Error::Shape(_))
    ));
    assert!(matches!(
        MergeProblem::new_rows(&[1.0, 2.0], &[1.0], &[1.0, 0.0], 1, 0.5),
        Err(Error::Shape(_))
    ));
}
