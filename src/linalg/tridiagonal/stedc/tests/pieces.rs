//! Tests of the pieces of divide and conquer one by one: the tree, the merge
//! steps against the sequential driver, caller-supplied `z`, errors, the
//! secular solver on hard cases, the column moves, the shared workspace and
//! the normalisation.

use super::*;

#[test]
fn tree_shape() {
    let t = DcTree::new(100, 32);
    // 100 -> 50 + 50 -> 25 * 4 leaves.
    let leaves: Vec<_> = t
        .nodes
        .iter()
        .filter_map(|n| match *n {
            DcNode::Leaf { begin, end } => Some((begin, end)),
            _ => None,
        })
        .collect();
    assert_eq!(leaves, vec![(0, 25), (25, 50), (50, 75), (75, 100)]);
    for (i, n) in t.nodes.iter().enumerate() {
        if let DcNode::Merge {
            begin,
            cut,
            end,
            left,
            right,
        } = *n
        {
            assert!(left < i && right < i);
            assert_eq!(t.nodes[left].range(), begin..cut);
            assert_eq!(t.nodes[right].range(), cut..end);
        }
    }
    assert_eq!(t.nodes[t.root().unwrap()].range(), 0..100);
    assert!(DcTree::new(0, 32).root().is_none());
    assert_eq!(DcTree::new(32, 32).nodes.len(), 1);
    assert_eq!(col_tiles(10, 4), vec![0..4, 4..8, 8..10]);
    assert_eq!(col_tiles(10, 0), vec![0..10]);
}

/// The pieces run in a scrambled order (roots in random chunks solved back to front,
/// leaves and tiles in reverse order, merges of one level interleaved) must give
/// bitwise the same output as `stedc`.
#[test]
fn pieces_bitwise_equal_driver() {
    for (n, seed) in [(300usize, 5u64), (257, 6)] {
        let params = DcParams {
            leaf_size: 20,
            col_tile: 40,
        };
        let (d0, e0) = random(n, seed);
        // Reference: the driver, z = I.
        let mut d1 = d0.clone();
        let mut e1 = e0.clone();
        let mut z1 = Mat::<f64>::identity(n, n);
        stedc(&mut d1, &mut e1, z1.as_mut(), &params).unwrap();

        // Pieces (one block, no split for random data).
        assert_eq!(split_blocks(&d0, &e0).len(), 1);
        let mut d = d0.clone();
        let mut e = e0.clone();
        let nrm = scale_block(&mut d, &mut e);
        let tree = DcTree::new(n, params.leaf_size);
        let mut q = Mat::<f64>::zeros(n, n);
        let mut rng = StdRng::seed_from_u64(seed);
        let leaves: Vec<usize> = (0..tree.nodes.len())
            .filter(|&i| matches!(tree.nodes[i], DcNode::Leaf { .. }))
            .collect();
        for &i in leaves.iter().rev() {
            let r = tree.nodes[i].range();
            let (a, b) = tree.leaf_tears(i, &e);
            solve_leaf(
                &mut d[r.clone()],
                &e[r.start..r.end - 1],
                a,
                b,
                q.as_mut().submatrix_mut(r.start, r.start, r.len(), r.len()),
            )
            .unwrap();
        }
        for i in 0..tree.nodes.len() {
            let DcNode::Merge {
                begin, cut, end, ..
            } = tree.nodes[i]
            else {
                continue;
            };
            let len = end - begin;
            let mut qb = q.as_mut().submatrix_mut(begin, begin, len, len);
            let mut work = vec![0.0; MergeProblem::<f64>::workspace_len(len, cut - begin)];
            let mut p = MergeProblem::new(
                &d[begin..end],
                qb.rb_mut(),
                cut - begin,
                e[cut - 1],
                &mut work,
            )
            .unwrap();
            let k = p.k();
            // Random partition of the roots, solved back to front through split borrows.
            let mut bounds = vec![0, k];
            for _ in 0..4 {
                bounds.push(rng.random_range(0..=k));
            }
            bounds.sort();
            for w in bounds.windows(2).rev() {
                p.solve_roots_range(w[0]..w[1]).unwrap();
            }
            p.order_output(qb.rb_mut()).unwrap();
            // z-hat in a random partition too, back to front.
            let cut = rng.random_range(0..=k);
            p.lowner_range(cut..k).unwrap();
            p.lowner_range(0..cut).unwrap();
            for t in col_tiles(len, params.col_tile).into_iter().rev() {
                p.apply_cols(t.clone(), &work, qb.rb_mut().subcols_mut(t.start, t.len()))
                    .unwrap();
            }
            p.eigenvalues_into(&mut d[begin..end]);
        }
        let mut z = Mat::<f64>::zeros(n, n);
        let zold = Mat::<f64>::identity(n, n);
        for t in col_tiles(n, params.col_tile).into_iter().rev() {
            multiply_z_cols(
                zold.as_ref(),
                q.as_ref(),
                t.clone(),
                z.as_mut().subcols_mut(t.start, t.len()),
            );
        }
        unscale_block(&mut d, nrm);
        for i in 0..n {
            assert_eq!(d[i].to_bits(), d1[i].to_bits(), "eigenvalue {i}");
            for j in 0..n {
                assert_eq!(z[(i, j)].to_bits(), z1[(i, j)].to_bits(), "z({i},{j})");
            }
        }
    }
}

/// `z := z * Q` semantics with a non-identity, non-square `z`.
#[test]
fn applies_to_given_z() {
    let n = 90;
    let (d0, e0) = random(n, 42);
    let m = 7;
    let mut rng = StdRng::seed_from_u64(1);
    let z0 = Mat::<f64>::from_fn(m, n, |_, _| rng.random_range(-1.0..1.0));
    let mut d = d0.clone();
    let mut e = e0.clone();
    let mut zq = Mat::<f64>::identity(n, n);
    stedc(&mut d, &mut e, zq.as_mut(), &DcParams::default()).unwrap();
    let mut d2 = d0.clone();
    let mut e2 = e0.clone();
    let mut z = z0.clone();
    stedc(&mut d2, &mut e2, z.as_mut(), &DcParams::default()).unwrap();
    let expect = &z0 * &zq;
    assert!((&z - &expect).norm_l2() < 1e-13 * expect.norm_l2());
    assert_eq!(d, d2);
}

#[test]
fn errors() {
    let mut d = vec![1.0, f64::NAN, 2.0];
    let mut e = vec![0.5, 0.5];
    let mut z = Mat::<f64>::identity(3, 3);
    assert!(matches!(
        stedc(&mut d, &mut e, z.as_mut(), &DcParams::default()),
        Err(Error::NonFinite { .. })
    ));
    let mut d = vec![1.0, 2.0, 3.0];
    let mut e = vec![0.5];
    assert!(matches!(
        stedc(&mut d, &mut e, z.as_mut(), &DcParams::default()),
        Err(Error::Shape(_))
    ));
    let mut e = vec![0.5, 0.5];
    let mut z = Mat::<f64>::identity(3, 2);
    assert!(matches!(
        stedc(&mut d, &mut e, z.as_mut(), &DcParams::default()),
        Err(Error::Shape(_))
    ));
    let mut d: Vec<f64> = vec![];
    let mut e: Vec<f64> = vec![];
    let mut z = Mat::<f64>::zeros(0, 0);
    stedc(&mut d, &mut e, z.as_mut(), &DcParams::default()).unwrap();
}

/// The secular solver on hard configurations: roots must be bracketed by the poles,
/// satisfy the equation to rounding level, and the deltas must be consistent.
#[test]
fn secular_hard() {
    let mut rng = StdRng::seed_from_u64(9);
    let mut max_iters_fail = 0;
    for case in 0..400 {
        let k = if case % 50 == 49 { 400 } else { 1 + case % 40 };
        let mut d: Vec<f64> = Vec::new();
        let mut x = 0.0;
        for _ in 0..k {
            // Gaps from 1e-13 to 1 (close poles just above the deflation tolerance).
            // Gaps from 1e-13 to 1; every 4th case has pairs of poles 8 eps apart
            // (the deflation boundary for O(1) z).
            let gap = if case % 4 == 3 && rng.random_bool(0.3) {
                8.0 * f64::EPSILON * (1.0 + x)
            } else {
                10f64.powf(rng.random_range(-13.0..0.0))
            };
            x += gap;
            d.push(x);
        }
        let mut z: Vec<f64> = (0..k)
            .map(|_| {
                // Weights down to 1e-14 (just above the deflation tolerance).
                10f64.powf(rng.random_range(-14.0..0.0))
                    * if rng.random_bool(0.5) { 1.0 } else { -1.0 }
            })
            .collect();
        let nz = z.iter().map(|v| v * v).sum::<f64>().sqrt();
        z.iter_mut().for_each(|v| *v /= nz);
        let rho = 10f64.powf(rng.random_range(-6.0..1.0));
        let mut delta = vec![0.0; k];
        for i in 0..k {
            let lam = match solve_root(&d, &z, rho, i, &mut delta) {
                Ok(l) => l,
                Err(_) => {
                    max_iters_fail += 1;
                    continue;
                }
            };
            assert!(lam >= d[i], "case {case} root {i}: {lam} < d_i {}", d[i]);
            if i + 1 < k {
                assert!(lam <= d[i + 1], "case {case} root {i} above next pole");
            } else {
                assert!(lam <= d[k - 1] + rho * 1.000001);
            }
            for j in 0..k {
                let direct = d[j] - lam;
                assert!(
                    (delta[j] - direct).abs() <= 4.0 * f64::EPSILON * (d[j].abs() + lam.abs()),
                    "delta inconsistent"
                );
            }
            // Residual of the secular equation relative to its condition.
            let f: f64 = 1.0 / rho + (0..k).map(|j| z[j] * z[j] / delta[j]).sum::<f64>();
            let scale: f64 =
                1.0 / rho + (0..k).map(|j| (z[j] * z[j] / delta[j]).abs()).sum::<f64>();
            let fp: f64 = (0..k).map(|j| (z[j] / delta[j]).powi(2)).sum();
            // |f| <= c k eps scale, or within a few ulps of lambda (|f|/f' small).
            assert!(
                f.abs() <= 20.0 * k as f64 * f64::EPSILON * scale
                    || (f / fp).abs()
                        <= 8.0
                            * f64::EPSILON
                            * delta.iter().fold(f64::INFINITY, |m, v| m.min(v.abs())),
                "case {case} root {i}/{k}: f = {f:e}, scale {scale:e}"
            );
        }
    }
    assert_eq!(max_iters_fail, 0, "secular solver failed to converge");
}

/// `merge::move_columns` against moves done through a copy, on random partial
/// permutations (chains ending at free columns, cycles, fixed points).
#[test]
fn column_moves_in_place_match_moves_through_a_copy() {
    let mut rng = StdRng::seed_from_u64(17);
    for trial in 0..200 {
        let n = rng.random_range(1..40);
        let rows = rng.random_range(0..5);
        let q0 = Mat::<f64>::from_fn(rows, n, |i, j| (j * 100 + i) as f64);
        // Random distinct sources and distinct destinations.
        let mut cols: Vec<usize> = (0..n).collect();
        let mut dsts: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            cols.swap(i, rng.random_range(0..=i));
            dsts.swap(i, rng.random_range(0..=i));
        }
        let m = rng.random_range(0..=n);
        let moves: Vec<(usize, usize)> = cols[..m]
            .iter()
            .copied()
            .zip(dsts[..m].iter().copied())
            .collect();
        let mut q = q0.clone();
        merge::move_columns(q.as_mut(), &moves);
        for &(src, dst) in &moves {
            for i in 0..rows {
                assert_eq!(q[(i, dst)], q0[(i, src)], "trial {trial}: {moves:?}");
            }
        }
        // Columns that are neither a destination nor a source keep their contents.
        for j in 0..n {
            if moves.iter().all(|&(s, d)| s != j && d != j) {
                for i in 0..rows {
                    assert_eq!(q[(i, j)], q0[(i, j)], "trial {trial}: column {j}");
                }
            }
        }
    }
}

/// The shared merge workspace of the pipeline: every node's part
/// (`begin * w..end * w`) holds its `MergeProblem::workspace_len`.
#[test]
fn every_merge_fits_its_part_of_the_shared_workspace() {
    for n in 2..400 {
        for leaf in [1, 5, 16, 32] {
            let tree = DcTree::new(n, leaf);
            let w = DcTree::merge_words_per_row(n, leaf);
            for node in &tree.nodes {
                if let DcNode::Merge {
                    begin, cut, end, ..
                } = *node
                {
                    let len = end - begin;
                    assert!(
                        MergeProblem::<f64>::workspace_len(len, cut - begin) <= len * w,
                        "n = {n}, leaf {leaf}, node {begin}..{end}"
                    );
                }
            }
        }
    }
}

#[test]
fn unit_scale_normalises_and_refuses_zero_and_non_finite() {
    // Lengths around the lane count, so both the laned blocks and the tail
    // are exercised; entries spanning many binades.
    for len in [1usize, 3, 7, 8, 9, 16, 21, 64, 67] {
        let u: Vec<f64> = (0..len)
            .map(|i| {
                (if i % 3 == 0 { -1.0 } else { 1.0 })
                    * 2f64.powi(i as i32 % 40 - 20)
                    * (1.0 + i as f64 / 7.0)
            })
            .collect();
        let s = merge::unit_scale(&u).expect("a non-zero finite vector");
        let norm2: f64 = u.iter().map(|x| (x * s) * (x * s)).sum();
        assert!(
            (norm2 - 1.0).abs() < 8.0 * f64::EPSILON * len as f64,
            "len {len}: {norm2}"
        );
        // Huge entries: no overflow in the sum of squares.
        let big: Vec<f64> = u.iter().map(|x| x * 1e300).collect();
        let sb = merge::unit_scale(&big).expect("finite");
        assert!(((sb * 1e300) / s - 1.0).abs() < 1e-14, "len {len}");
        assert_eq!(merge::unit_scale(&vec![0.0; len]), None);
        // A NaN or an infinity anywhere, in a laned block or in the tail.
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            for at in [0, len / 2, len - 1] {
                let mut v = u.clone();
                v[at] = bad;
                assert_eq!(merge::unit_scale(&v), None, "len {len}, {bad} at {at}");
            }
        }
    }
}
