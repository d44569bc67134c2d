//! Tests of the bidiagonal SVD kernels (implicit QR, the 2x2 SVD, the leaves, the tree
//! and the divide-and-conquer driver) against faer's dense SVD, the bisection oracle
//! of the dqds tests and LAPACK-style scaled ratios.

use super::bdsqr::{bdsqr, bdsqr_with_budget, svd2x2, TOLMUL};
use super::merge::solve_roots;
use super::*;
use crate::gallery::Rng;
use crate::linalg::bidiagonal::dqds::tests::{
    abs_ratio, bisection_sv, dense, faer_sv, families, rel_err_above, rel_floor, rounded, SIZES,
};
use faer::Mat;

/// LAPACK-style bound on the scaled ratios (`dbdt01`/`dort01` use 30-ish thresholds).
const RATIO_MAX: f64 = 30.0;

#[derive(Clone, Copy, Debug, Default)]
struct Ratios {
    /// `||B - U S V^T|| / (n ||B|| eps)`
    resid: f64,
    /// `||U^T U - I|| / (n eps)`
    orth_u: f64,
    /// `||V V^T - I|| / (n eps)` (V^T as returned)
    orth_v: f64,
    /// `max |s - s_faer| / (n eps s_1)`
    sv: f64,
}

impl Ratios {
    fn max(self, o: Ratios) -> Ratios {
        Ratios {
            resid: self.resid.max(o.resid),
            orth_u: self.orth_u.max(o.orth_u),
            orth_v: self.orth_v.max(o.orth_v),
            sv: self.sv.max(o.sv),
        }
    }
    fn ok(&self) -> bool {
        self.resid < RATIO_MAX
            && self.orth_u < RATIO_MAX
            && self.orth_v < RATIO_MAX
            && self.sv < RATIO_MAX
    }
}

fn to64<T: Scalar>(m: &Mat<T>) -> Mat<f64> {
    Mat::from_fn(m.nrows(), m.ncols(), |i, j| m[(i, j)].f64())
}

/// The ratios of a computed SVD `(s, U, VT)` (in `T`, of the matrix `scale * B`) of the
/// bidiagonal `B = (d64, e64)` (f64, unscaled).
fn ratios<T: Scalar>(
    d64: &[f64],
    e64: &[f64],
    scale: f64,
    s: &[T],
    u: &Mat<T>,
    vt: &Mat<T>,
) -> Ratios {
    let n = d64.len();
    if n == 0 {
        return Ratios::default();
    }
    let eps = T::EPS.f64();
    let nf = n as f64;
    let b = dense(d64, e64);
    let (u, vt) = (to64(u), to64(vt));
    let s64: Vec<f64> = s.iter().map(|x| x.f64() / scale).collect();
    let us = Mat::<f64>::from_fn(n, n, |i, j| u[(i, j)] * s64[j]);
    let bn = b.norm_l2();
    let resid = (&b - &us * &vt).norm_l2() / (nf * if bn > 0.0 { bn } else { 1.0 } * eps);
    let id = Mat::<f64>::identity(n, n);
    let orth_u = (u.transpose() * &u - &id).norm_l2() / (nf * eps);
    let orth_v = (&vt * vt.transpose() - &id).norm_l2() / (nf * eps);
    let sv = abs_ratio(&s64, &faer_sv(d64, e64), eps);
    Ratios {
        resid,
        orth_u,
        orth_v,
        sv,
    }
}

/// bdsqr on one case in `T` with `U = V = I`; returns `(s, U, V^T)`.
fn run_bdsqr<T: Scalar>(dt: &[T], et: &[T]) -> Svd<T> {
    let n = dt.len();
    let (mut d, mut e) = (dt.to_vec(), et.to_vec());
    let mut u = Mat::<T>::identity(n, n);
    let mut v = Mat::<T>::identity(n, n);
    bdsqr(&mut d, &mut e, u.as_mut(), v.as_mut()).unwrap();
    (d, u, v.transpose().to_owned())
}

/// One family sweep of a solver in `T`; `rel` also checks relative accuracy of every
/// singular value against bisection (bdsqr: high relative accuracy, to its relative
/// tolerance).
fn sweep<T: Scalar>(
    label: &str,
    sizes: &[usize],
    rel: bool,
    solve: impl Fn(&[T], &[T]) -> Svd<T>,
) -> Ratios {
    let eps = T::EPS.f64();
    let mut worst = Ratios::default();
    let mut worst_rel = 0.0f64;
    for &n in sizes {
        for c in families::<T>(n) {
            let (dt, et, d64, e64) = rounded::<T>(&c);
            let (s, u, vt) = solve(&dt, &et);
            assert_eq!(s.len(), n);
            for i in 1..n {
                assert!(
                    s[i - 1] >= s[i] && s[i] >= T::zero(),
                    "{label} {}: not descending at {i}",
                    c.name
                );
            }
            let r = ratios(&d64, &e64, c.scale, &s, &u, &vt);
            assert!(r.ok(), "{label} {} {}: {r:?}", c.name, T::NAME);
            worst = worst.max(r);
            if rel && n <= 200 {
                let bis = bisection_sv(&d64, &e64);
                let floor = rel_floor::<T>(&bis);
                let s64: Vec<f64> = s.iter().map(|x| x.f64() / c.scale).collect();
                // In units of bdsqr's relative tolerance tol = TOLMUL eps (entries
                // below tol mu are neglected).
                let re = rel_err_above(&s64, &bis, eps * TOLMUL, floor);
                let bound = 2.0 + 0.25 * n as f64;
                assert!(
                    re < bound,
                    "{label} {} {}: relative error {re:.2} tol",
                    c.name,
                    T::NAME
                );
                worst_rel = worst_rel.max(re);
            }
        }
    }
    if rel {
        println!(
            "{label} {}: worst {worst:?}; worst relative error {worst_rel:.3} tol",
            T::NAME
        );
    } else {
        println!("{label} {}: worst {worst:?}", T::NAME);
    }
    worst
}

const QR_SIZES: [usize; 9] = [0, 1, 2, 3, 31, 32, 33, 65, 200];

#[test]
fn bdsqr_families_f64() {
    sweep::<f64>("bdsqr", &QR_SIZES, true, run_bdsqr);
}

#[test]
fn bdsqr_families_f32() {
    sweep::<f32>("bdsqr", &QR_SIZES, true, run_bdsqr);
}

fn run_dc<T: Scalar>(params: BdsdcParams) -> impl Fn(&[T], &[T]) -> Svd<T> {
    move |d, e| bdsdc(d, e, &params).unwrap()
}

#[test]
fn bdsdc_families_f64() {
    sweep::<f64>("bdsdc", &SIZES, false, run_dc(BdsdcParams::default()));
}

#[test]
fn bdsdc_families_f32() {
    sweep::<f32>("bdsdc", &SIZES, false, run_dc(BdsdcParams::default()));
}

/// Tiny leaves and odd tiles: many merges (with `sqre` on both sides), merges of
/// sizes 4 and 5, and tiles that split the root groups.
#[test]
fn bdsdc_small_leaves_and_tiles() {
    let params = BdsdcParams {
        leaf_size: 3,
        col_tile: 7,
    };
    sweep::<f64>("bdsdc(leaf 3)", &[4, 5, 9, 31, 65], false, run_dc(params));
    sweep::<f32>("bdsdc(leaf 3)", &[4, 5, 9, 31, 65], false, run_dc(params));
}

/// The tree covers every row once: leaves partition the rows except the removed ones,
/// children come first, and the `sqre` pattern is the one of `dlasd0`.
#[test]
fn tree_structure() {
    for (n, leaf) in [(1usize, 32usize), (32, 32), (33, 32), (100, 3), (1000, 25)] {
        let t = BdTree::new(n, leaf);
        let root = t.root().unwrap();
        assert_eq!(t.nodes[root].rows(), 0..n);
        assert_eq!(t.nodes[root].cols(), 0..n);
        let mut seen = vec![0; n];
        for (i, node) in t.nodes.iter().enumerate() {
            match *node {
                BdNode::Leaf { begin, end, .. } => {
                    assert!(end - begin <= leaf.max(3) && end > begin);
                    seen[begin..end].iter_mut().for_each(|x| *x += 1);
                }
                BdNode::Merge {
                    begin,
                    mid,
                    end,
                    sqre,
                    left,
                    right,
                } => {
                    assert!(left < i && right < i);
                    assert_eq!(t.nodes[left].rows(), begin..mid);
                    assert_eq!(t.nodes[left].cols(), begin..mid + 1);
                    assert_eq!(t.nodes[right].rows(), mid + 1..end);
                    assert_eq!(t.nodes[right].cols(), mid + 1..end + usize::from(sqre));
                    seen[mid] += 1;
                }
            }
        }
        assert!(seen.iter().all(|&x| x == 1), "n={n}");
    }
}

/// Leaves with the extra column: `B = U [S 0] V^T`, `U`, `V` orthogonal, the last
/// column of `V` spans the null space.
#[test]
fn leaf_with_extra_column() {
    let mut r = Rng::new(21);
    for nb in [1usize, 2, 3, 17, 32] {
        let d: Vec<f64> = (0..nb).map(|_| r.uniform_in(-1.0, 1.0)).collect();
        let e: Vec<f64> = (0..nb).map(|_| r.uniform_in(-1.0, 1.0)).collect();
        let b = Mat::<f64>::from_fn(nb, nb + 1, |i, j| {
            if j == i {
                d[i]
            } else if j == i + 1 {
                e[i]
            } else {
                0.0
            }
        });
        let mut s = d.clone();
        let mut u = Mat::<f64>::zeros(nb, nb);
        let mut v = Mat::<f64>::zeros(nb + 1, nb + 1);
        solve_leaf(&mut s, &e, u.as_mut(), v.as_mut()).unwrap();
        for i in 1..nb {
            assert!(s[i - 1] <= s[i]);
        }
        let sm = Mat::<f64>::from_fn(nb, nb + 1, |i, j| if i == j { s[i] } else { 0.0 });
        let eps = f64::EPSILON * 0.5;
        let nf = (nb + 1) as f64;
        let resid = (&b - &u * &sm * v.transpose()).norm_l2() / (nf * b.norm_l2() * eps);
        let ou = (u.transpose() * &u - Mat::<f64>::identity(nb, nb)).norm_l2() / (nf * eps);
        let ov = (v.transpose() * &v - Mat::<f64>::identity(nb + 1, nb + 1)).norm_l2() / (nf * eps);
        let null = (&b * v.col(nb)).norm_l2() / (nf * b.norm_l2() * eps);
        assert!(
            resid < RATIO_MAX && ou < RATIO_MAX && ov < RATIO_MAX && null < RATIO_MAX,
            "nb={nb}: {resid} {ou} {ov} {null}"
        );
    }
}

/// The 2x2 SVD: reconstruction, orthogonality and relative accuracy of both values,
/// including entries whose squares overflow or underflow and sign patterns.
#[test]
fn svd2x2_accuracy() {
    let mut r = Rng::new(3);
    let mut cases: Vec<(f64, f64, f64)> = (0..400)
        .map(|_| {
            let e = |r: &mut Rng| r.uniform_in(-1.0, 1.0) * 10f64.powf(r.uniform_in(-8.0, 8.0));
            (e(&mut r), e(&mut r), e(&mut r))
        })
        .collect();
    cases.extend([
        (1.0, 0.0, 1.0),
        (0.0, 1.0, 0.0),
        (1.0, 1e300, 1.0),
        (1e-300, 1.0, 1e-300),
        (1e300, 1e300, 1e-300),
        (-2.0, 3.0, 0.0),
        (0.0, -2.0, 5.0),
        (1.0, 1e-200, -1.0),
        (3.0, 1.0, 3.0),
    ]);
    for (f, g, h) in cases {
        let s = svd2x2(f, g, h);
        let eps = f64::EPSILON;
        // [cl sl; -sl cl] B [cr -sr; sr cr] = diag(smax, smin), entrywise to eps |B|.
        let a = [[s.cl, s.sl], [-s.sl, s.cl]];
        let b = [[f, g], [0.0, h]];
        let c = [[s.cr, -s.sr], [s.sr, s.cr]];
        let mut m = [[0.0f64; 2]; 2];
        for i in 0..2 {
            for j in 0..2 {
                for p in 0..2 {
                    for q in 0..2 {
                        m[i][j] += a[i][p] * b[p][q] * c[q][j];
                    }
                }
            }
        }
        let big = f.abs().max(g.abs()).max(h.abs());
        let tol = 8.0 * eps * big;
        assert!(
            (m[0][0] - s.smax).abs() <= tol && m[0][1].abs() <= tol && m[1][0].abs() <= tol,
            "{f} {g} {h}: {m:?} {s:?}"
        );
        assert!((m[1][1] - s.smin).abs() <= tol, "{f} {g} {h}: {m:?} {s:?}");
        assert!(
            (s.cl * s.cl + s.sl * s.sl - 1.0).abs() <= 4.0 * eps
                && (s.cr * s.cr + s.sr * s.sr - 1.0).abs() <= 4.0 * eps
        );
        // smax smin = f h to relative accuracy (tiny smin is accurate).
        let det = f * h;
        if det != 0.0 && (s.smax * s.smin).is_finite() {
            assert!(
                ((s.smax * s.smin) - det).abs() <= 8.0 * eps * det.abs(),
                "{f} {g} {h}: {s:?}"
            );
        }
        assert!(s.smax.abs() >= s.smin.abs());
    }
}

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
