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

mod merge_steps;

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
