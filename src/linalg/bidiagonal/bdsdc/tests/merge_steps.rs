//! Tests of the bidiagonal merge's steps and failure modes: independent root
//! ranges, misuse and bad input, zeros at the cuts, the power-of-two scaling,
//! rotation drift in `bdsqr` and the shared merge workspace.

use super::*;

/// Root ranges are independent: any partition of the roots gives bitwise the same
/// merge; and the serial driver is deterministic.
#[test]
fn root_ranges_are_independent() {
    let n = 70;
    let mut r = Rng::new(8);
    let d: Vec<f64> = (0..n).map(|_| r.uniform_in(-1.0, 1.0)).collect();
    let e: Vec<f64> = (0..n - 1).map(|_| r.uniform_in(-1.0, 1.0)).collect();
    let nl = 35;
    let n1 = nl;
    let n2 = n - nl - 1;
    // Children solved as leaves (left with the extra column).
    let mut dw = d.clone();
    let mut u = Mat::<f64>::zeros(n, n);
    let mut v = Mat::<f64>::zeros(n, n);
    solve_leaf(
        &mut dw[..n1],
        &e[..n1],
        u.as_mut().submatrix_mut(0, 0, n1, n1),
        v.as_mut().submatrix_mut(0, 0, n1 + 1, n1 + 1),
    )
    .unwrap();
    solve_leaf(
        &mut dw[nl + 1..],
        &e[nl + 1..],
        u.as_mut().submatrix_mut(nl + 1, nl + 1, n2, n2),
        v.as_mut().submatrix_mut(nl + 1, nl + 1, n2, n2),
    )
    .unwrap();
    let run = |parts: &[usize]| -> Svd<f64> {
        let (mut uu, mut vv) = (u.clone(), v.clone());
        let mut work = vec![0.0; SvdMerge::<f64>::workspace_len(n, n, nl)];
        let mut p =
            SvdMerge::new(&dw, d[nl], e[nl], uu.as_mut(), vv.as_mut(), nl, &mut work).unwrap();
        let k = p.k();
        let mut cuts: Vec<usize> = parts.iter().map(|&x| x * k / 100).collect();
        cuts.insert(0, 0);
        cuts.push(k);
        // Solve the ranges in reverse order, and z-hat in the same ranges.
        for w in cuts.windows(2).rev() {
            p.solve_roots_range(w[0]..w[1]).unwrap();
        }
        p.order_output(uu.as_mut(), vv.as_mut(), false).unwrap();
        for w in cuts.windows(2).rev() {
            p.lowner_range(w[0]..w[1]).unwrap();
        }
        for t in col_tiles(n, 16) {
            p.apply_cols(
                t.clone(),
                &work,
                uu.as_mut().subcols_mut(t.start, t.len()),
                vv.as_mut().subcols_mut(t.start, t.len()),
            )
            .unwrap();
        }
        let mut s = vec![0.0; n];
        p.singular_values_into(&mut s);
        (s, uu, vv)
    };
    let a = run(&[]);
    let b = run(&[10, 50, 51, 90]);
    let c = run(&[33, 66]);
    for x in [&b, &c] {
        assert!(a
            .0
            .iter()
            .zip(&x.0)
            .all(|(p, q)| p.to_bits() == q.to_bits()));
        assert!(a.1.as_ref() == x.1.as_ref() && a.2.as_ref() == x.2.as_ref());
    }
    // The merged result is the SVD of the node.
    let b64 = dense(&d, &e);
    let us = Mat::<f64>::from_fn(n, n, |i, j| a.1[(i, j)] * a.0[j]);
    let resid =
        (&b64 - &us * a.2.transpose()).norm_l2() / (n as f64 * b64.norm_l2() * f64::EPSILON * 0.5);
    assert!(resid < RATIO_MAX, "{resid}");
}

/// solve_roots refuses ranges beyond k, and lowner refuses to run before all roots.
#[test]
fn merge_misuse_is_an_error() {
    let n = 9;
    let d = vec![1.0f64; n];
    let e = vec![0.5f64; n - 1];
    let mut u = Mat::<f64>::zeros(n, n);
    let mut v = Mat::<f64>::zeros(n, n);
    let mut dw = d.clone();
    solve_leaf(
        &mut dw[..4],
        &e[..4],
        u.as_mut().submatrix_mut(0, 0, 4, 4),
        v.as_mut().submatrix_mut(0, 0, 5, 5),
    )
    .unwrap();
    solve_leaf(
        &mut dw[5..],
        &e[5..],
        u.as_mut().submatrix_mut(5, 5, 4, 4),
        v.as_mut().submatrix_mut(5, 5, 4, 4),
    )
    .unwrap();
    let mut work = vec![0.0; SvdMerge::<f64>::workspace_len(n, n, 4)];
    let mut p = SvdMerge::new(&dw, d[4], e[4], u.as_mut(), v.as_mut(), 4, &mut work).unwrap();
    let k = p.k();
    assert!(matches!(
        solve_roots(&mut p, 0..k + 1),
        Err(Error::Shape(_))
    ));
    assert!(matches!(
        p.apply_cols(0..n, &work, u.as_mut(), v.as_mut()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        p.lowner(u.as_mut(), v.as_mut()),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        SvdMerge::new(&dw, d[4], e[4], u.as_mut(), v.as_mut(), 0, &mut work),
        Err(Error::Shape(_))
    ));
    // A workspace one word short.
    let short = SvdMerge::<f64>::workspace_len(n, n, 4) - 1;
    assert!(matches!(
        SvdMerge::new(
            &dw,
            d[4],
            e[4],
            u.as_mut(),
            v.as_mut(),
            4,
            &mut work[..short]
        ),
        Err(Error::Shape(_))
    ));
}

#[test]
fn rejects_bad_input_and_reports_no_convergence() {
    let params = BdsdcParams::default();
    assert!(matches!(
        bdsdc(&[1.0f64, 2.0], &[], &params),
        Err(Error::Shape(_))
    ));
    assert!(matches!(
        bdsdc(&[1.0f64, f64::INFINITY], &[1.0], &params),
        Err(Error::NonFinite { row: 1, col: 1, .. })
    ));
    let mut d = [1.0f64, 2.0];
    let mut e = [f64::NAN];
    assert!(matches!(
        bdsqr(
            &mut d,
            &mut e,
            Mat::<f64>::zeros(0, 2).as_mut(),
            Mat::<f64>::zeros(0, 2).as_mut()
        ),
        Err(Error::NonFinite { row: 0, col: 1, .. })
    ));
    assert!(matches!(
        bdsqr(
            &mut [1.0f64, 2.0],
            &mut [1.0],
            Mat::<f64>::zeros(2, 3).as_mut(),
            Mat::<f64>::zeros(0, 2).as_mut()
        ),
        Err(Error::Shape(_))
    ));
    // A starved QR iteration is an error, never a silent result.
    let mut r = Rng::new(4);
    let mut d: Vec<f64> = (0..40).map(|_| r.uniform_in(-1.0, 1.0)).collect();
    let mut e: Vec<f64> = (0..39).map(|_| r.uniform_in(-1.0, 1.0)).collect();
    assert!(matches!(
        bdsqr_with_budget(
            &mut d,
            &mut e,
            Mat::<f64>::zeros(0, 40).as_mut(),
            Mat::<f64>::zeros(0, 40).as_mut(),
            0
        ),
        Err(Error::NoConvergence { stage: "bdsqr", .. })
    ));
}

/// Zeros exactly where the tree cuts: the removed row's `alpha = d[mid]` and `beta =
/// e[mid]`, and the extra-column entry `e[mid - 1]` of the left child, at every merge
/// (so `z_0` is forced, the `sqre` rotation is skipped or partial, and whole halves
/// deflate); also a matrix that is zero except at the cuts.
#[test]
fn zeros_at_the_cuts() {
    let params = BdsdcParams {
        leaf_size: 4,
        col_tile: 5,
    };
    for n in [9usize, 40, 77] {
        let tree = BdTree::new(n, params.leaf_size);
        let mids: Vec<usize> = tree
            .nodes
            .iter()
            .filter_map(|x| match *x {
                BdNode::Merge { mid, .. } => Some(mid),
                _ => None,
            })
            .collect();
        let mut r = Rng::new(n as u64);
        let d0: Vec<f64> = (0..n).map(|_| r.uniform_in(-1.0, 1.0)).collect();
        let e0: Vec<f64> = (0..n - 1).map(|_| r.uniform_in(-1.0, 1.0)).collect();
        // Which entries of each removed row to zero.
        let variants = [
            ("alpha", [true, false, false]),
            ("beta", [false, true, false]),
            ("extra", [false, false, true]),
            ("all", [true, true, true]),
        ];
        for (name, [alpha, beta, extra]) in variants {
            let (mut d, mut e) = (d0.clone(), e0.clone());
            for &m in &mids {
                if alpha {
                    d[m] = 0.0;
                }
                if beta {
                    e[m] = 0.0;
                }
                if extra {
                    e[m - 1] = 0.0;
                }
            }
            let (s, u, vt) = bdsdc(&d, &e, &params).unwrap();
            let rt = ratios(&d, &e, 1.0, &s, &u, &vt);
            assert!(rt.ok(), "{name} n={n}: {rt:?}");
        }
        // Only the cut rows are nonzero.
        let mut d = vec![0.0; n];
        let mut e = vec![0.0; n - 1];
        for &m in &mids {
            d[m] = d0[m];
            e[m] = e0[m];
        }
        let (s, u, vt) = bdsdc(&d, &e, &params).unwrap();
        let rt = ratios(&d, &e, 1.0, &s, &u, &vt);
        assert!(rt.ok(), "cuts only n={n}: {rt:?}");
    }
}

/// Power-of-two scales: exact, and no overflow next to the largest float.
#[test]
fn pow2_scale() {
    use super::merge::pow2_at_least;
    assert_eq!(pow2_at_least(0.75f64), 1.0);
    assert_eq!(pow2_at_least(1.0f64), 1.0);
    assert_eq!(pow2_at_least(1.5f64), 2.0);
    assert_eq!(pow2_at_least(3e-310f64), 2f64.powi(-514) * 2f64.powi(-514));
    assert_eq!(pow2_at_least(1e-44f32), 2f32.powi(-73) * 2f32.powi(-73));
    assert_eq!(pow2_at_least(f64::MAX), 2f64.powi(1023));
    assert_eq!(pow2_at_least(f32::MAX), 2f32.powi(127));
    assert_eq!(pow2_at_least(0.0f32), 1.0);
    // The driver near the overflow threshold: still an SVD.
    let big = f64::MAX / 8.0;
    let (d, e) = ([big, -big / 3.0, big / 2.0], [big / 5.0, big / 7.0]);
    let (s, u, vt) = bdsdc(&d, &e, &BdsdcParams::default()).unwrap();
    let r = ratios(&[1.0, -1.0 / 3.0, 0.5], &[0.2, 1.0 / 7.0], big, &s, &u, &vt);
    assert!(r.ok(), "{r:?}");
}

/// Rotation drift: on a tightly clustered spectrum at n = 1000 (about 2n sweeps, so
/// thousands of rotations per column) the vectors stay orthogonal. Without the
/// normalisation of [`super::bdsqr::unit_pair`] this measured 40.
#[test]
fn bdsqr_clustered_orthogonality() {
    let n = 1000;
    let mut r = Rng::new(n as u64);
    let d: Vec<f64> = (0..n)
        .map(|_| 1.0 + 1e-10 * r.uniform_in(-1.0, 1.0))
        .collect();
    let e: Vec<f64> = (0..n - 1).map(|_| 1e-9 * r.uniform_in(-1.0, 1.0)).collect();
    let (s, u, vt) = run_bdsqr(&d, &e);
    let rt = ratios(&d, &e, 1.0, &s, &u, &vt);
    assert!(rt.ok(), "{rt:?}");
}

/// The shared merge workspace of the pipeline: every node's part
/// (`begin * w..(end + 1) * w`) holds its `SvdMerge::workspace_len`, and parts of
/// nodes with disjoint rows are disjoint.
#[test]
fn every_merge_fits_its_part_of_the_shared_workspace() {
    for n in 4..400 {
        for leaf in [3, 5, 16, 25] {
            let tree = BdTree::new(n, leaf);
            let w = BdTree::merge_words_per_row(n, leaf);
            let mut parts = Vec::new();
            for node in &tree.nodes {
                if let BdNode::Merge {
                    begin,
                    mid,
                    end,
                    sqre,
                    ..
                } = *node
                {
                    let (len, m) = (end - begin, end - begin + usize::from(sqre));
                    assert!(
                        SvdMerge::<f64>::workspace_len(len, m, mid - begin) <= (len + 1) * w,
                        "n = {n}, leaf {leaf}, node {begin}..{end}"
                    );
                    parts.push((begin * w, (end + 1) * w, begin, end));
                }
            }
            assert!(parts.iter().all(|p| p.1 <= (n + 1) * w));
            for a in &parts {
                for b in &parts {
                    let rows_disjoint = a.3 <= b.2 || b.3 <= a.2;
                    if rows_disjoint {
                        assert!(a.1 <= b.0 || b.1 <= a.0, "n = {n}: {a:?} and {b:?}");
                    }
                }
            }
        }
    }
}
