//! Tests of divide and conquer against faer's dense symmetric eigensolver, closed-form
//! spectra and LAPACK-style residual/orthogonality ratios.

use super::serial::*;
use super::*;
use crate::gallery::tridiagonal_to_dense;
use faer::reborrow::ReborrowMut;
use faer::{Mat, Side};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

mod pieces;

/// LAPACK-style thresholds (`dstt21`/`dsyt21` use 30-60 for these ratios).
const RATIO_MAX: f64 = 30.0;
/// Eigenvalue error bound against the accurate oracles (Sturm bisection in f64, closed
/// forms): `max |lambda - ref| <= EIG_C * n * eps * ||T||_2`.
const EIG_C: f64 = 2.0;
/// Same against faer's dense solver, whose own error reaches ~2.5 n eps ||T|| on large
/// Wilkinson matrices (checked against bisection and steqr), so the bound is looser.
const EIG_C_FAER: f64 = 6.0;

#[derive(Clone, Copy, Debug, Default)]
struct Ratios {
    resid: f64,
    orth: f64,
    /// Against Sturm bisection (or the closed form when there is one).
    eig: f64,
    /// Against faer's dense symmetric eigensolver.
    eig_faer: f64,
    /// The values-only D&C ([`values::stedc_values`]) against the oracle of `eig`.
    values: f64,
}

impl Ratios {
    fn max(self, o: Ratios) -> Ratios {
        Ratios {
            resid: self.resid.max(o.resid),
            orth: self.orth.max(o.orth),
            eig: self.eig.max(o.eig),
            eig_faer: self.eig_faer.max(o.eig_faer),
            values: self.values.max(o.values),
        }
    }
}

/// Independent oracle: eigenvalues by bisection on Sturm counts (LDL^T inertia of
/// `T - x I`, as in LAPACK `dstebz`), in f64 on the max-norm scaled matrix, to an
/// absolute accuracy of about `eps ||T||`.
fn sturm_eigs(d: &[f64], e: &[f64]) -> Vec<f64> {
    let n = d.len();
    let nrm = d.iter().chain(e).fold(0.0f64, |m, x| m.max(x.abs()));
    if nrm == 0.0 {
        return vec![0.0; n];
    }
    let ds: Vec<f64> = d.iter().map(|x| x / nrm).collect();
    let e2: Vec<f64> = e.iter().map(|x| (x / nrm) * (x / nrm)).collect();
    let pivmin = f64::MIN_POSITIVE * e2.iter().fold(1.0f64, |m, &x| m.max(x));
    // Number of eigenvalues < x.
    let count = |x: f64| -> usize {
        let mut c = 0;
        let mut q = ds[0] - x;
        for i in 0..n {
            if i > 0 {
                q = ds[i] - x - e2[i - 1] / q;
            }
            if q.abs() < pivmin {
                q = -pivmin;
            }
            if q < 0.0 {
                c += 1;
            }
        }
        c
    };
    let bound: f64 = 3.0 + 1e-12;
    (0..n)
        .map(|k| {
            let (mut lo, mut hi) = (-bound, bound);
            while hi - lo > 0.25 * f64::EPSILON * lo.abs().max(hi.abs()).max(1e-3) {
                let mid = 0.5 * (lo + hi);
                if mid <= lo || mid >= hi {
                    break;
                }
                if count(mid) > k {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            0.5 * (lo + hi) * nrm
        })
        .collect()
}

fn max_err_ratio(lam: &[f64], reference: &[f64], eps: f64, slack: f64) -> f64 {
    let n = lam.len();
    let norm2 = reference.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let mut err = 0.0f64;
    for i in 0..n {
        err = err.max((lam[i] - reference[i]).abs());
    }
    // `slack`: absolute error the oracle itself may carry, in units of f64 eps ||T||.
    err = (err - slack * f64::EPSILON * norm2).max(0.0);
    if norm2 > 0.0 {
        err / (n as f64 * eps * norm2)
    } else if err == 0.0 {
        0.0
    } else {
        f64::INFINITY
    }
}

/// Reference eigenvalues (ascending) of the tridiagonal matrix, by faer in f64.
fn faer_eigs(d: &[f64], e: &[f64]) -> Vec<f64> {
    if d.is_empty() {
        return vec![];
    }
    let mut v = tridiagonal_to_dense(d, e)
        .self_adjoint_eigenvalues(Side::Lower)
        .unwrap();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v
}

/// The eigenvalues (into `d`, ascending) and eigenvectors of the tridiagonal
/// `(d, e)` by the pipeline's D&C task tree on two threads.
fn run_pipeline_stedc<T: Scalar>(d: &mut [T], e: &[T], params: &DcParams) -> Mat<T> {
    use crate::pipeline::evd::{dc_scale, stedc as stedc_stage, Tridiagonal};
    let anrm = d.iter().chain(e).fold(T::zero(), |m, x| m.max(x.abs()));
    let mut g = crate::graph::TaskGraph::new();
    let tri = Tridiagonal::from_vectors(d, e).unwrap();
    let st = stedc_stage(&mut g, tri, params, dc_scale(anrm)).unwrap();
    crate::runtime::Runtime::builder()
        .threads(2)
        .build()
        .run(g)
        .unwrap();
    d.copy_from_slice(&st.values.get().unwrap());
    st.vectors.into_result_unchecked().get().unwrap()
}

/// Runs the pipeline's D&C in precision `T` on `(d, e)` (given in f64, rounded to `T`) with
/// `z = I` and returns the ratios, all evaluated in f64 against the rounded input.
fn run<T: Scalar>(d: &[f64], e: &[f64], params: &DcParams, reference: Option<&[f64]>) -> Ratios {
    let n = d.len();
    let mut dt: Vec<T> = d.iter().map(|&x| T::of(x)).collect();
    let et: Vec<T> = e.iter().map(|&x| T::of(x)).collect();
    // The matrix actually solved (rounded to T).
    let d64: Vec<f64> = dt.iter().map(|x| x.f64()).collect();
    let e64: Vec<f64> = et.iter().map(|x| x.f64()).collect();
    let z = run_pipeline_stedc(&mut dt, &et, params);
    let eps = T::EPS.f64();
    if n == 0 {
        return Ratios::default();
    }
    for i in 1..n {
        assert!(dt[i - 1] <= dt[i], "eigenvalues not ascending at {i}");
    }
    let lam: Vec<f64> = dt.iter().map(|x| x.f64()).collect();
    let zz = Mat::<f64>::from_fn(n, n, |i, j| z[(i, j)].f64());
    let t = tridiagonal_to_dense(&d64, &e64);
    let tn = t.norm_l2();
    let tz = &t * &zz;
    let zl = Mat::<f64>::from_fn(n, n, |i, j| zz[(i, j)] * lam[j]);
    let resid = (&tz - &zl).norm_l2() / (n as f64 * if tn > 0.0 { tn } else { 1.0 } * eps);
    let ztz = zz.transpose() * &zz;
    let orth = (&ztz - Mat::<f64>::identity(n, n)).norm_l2() / (n as f64 * eps);
    let oracle = |lam: &[f64]| match reference {
        // Closed form evaluated in f64: a few ulps of its own error.
        Some(r) => max_err_ratio(lam, r, eps, 4.0),
        None => max_err_ratio(lam, &sturm_eigs(&d64, &e64), eps, 2.0),
    };
    let eig = oracle(&lam);
    let eig_faer = max_err_ratio(&lam, &faer_eigs(&d64, &e64), eps, 0.0);
    let values = oracle(&values_only::<T>(&d64, &e64, params.leaf_size));
    Ratios {
        resid,
        orth,
        eig,
        eig_faer,
        values,
    }
}

/// The eigenvalues of `(d, e)` (exactly representable in `T`) by the
/// values-only D&C in `T`, checked ascending and bitwise the same on this
/// thread and on a 2-thread runtime, in f64.
fn values_only<T: Scalar>(d: &[f64], e: &[f64], leaf: usize) -> Vec<f64> {
    let solve = |rt: Option<&crate::runtime::Runtime>| {
        let mut dt: Vec<T> = d.iter().map(|&x| T::of(x)).collect();
        let mut et: Vec<T> = e.iter().map(|&x| T::of(x)).collect();
        values::stedc_values(&mut dt, &mut et, leaf, rt.into()).unwrap();
        dt.iter().map(|x| x.f64()).collect::<Vec<f64>>()
    };
    let alone = solve(None);
    let rt = crate::runtime::Runtime::builder().threads(2).build();
    let two = solve(Some(&rt));
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(&alone),
        bits(&two),
        "values-only D&C: 1 and 2 threads differ"
    );
    assert!(
        alone.windows(2).all(|w| w[0] <= w[1]),
        "values-only D&C: not ascending"
    );
    alone
}

fn check<T: Scalar>(name: &str, d: &[f64], e: &[f64], params: &DcParams) -> Ratios {
    check_ref::<T>(name, d, e, params, None)
}

fn check_ref<T: Scalar>(
    name: &str,
    d: &[f64],
    e: &[f64],
    params: &DcParams,
    reference: Option<&[f64]>,
) -> Ratios {
    let r = run::<T>(d, e, params, reference);
    let n = d.len();
    assert!(
        r.resid < RATIO_MAX
            && r.orth < RATIO_MAX
            && r.eig <= EIG_C
            && r.eig_faer <= EIG_C_FAER
            && r.values <= EIG_C,
        "{name} ({}) n={n}: residual {:.3} orth {:.3} eig {:.3} eig vs faer {:.3} \
         values-only D&C {:.3}",
        T::NAME,
        r.resid,
        r.orth,
        r.eig,
        r.eig_faer,
        r.values
    );
    r
}

fn wilkinson(m: usize) -> (Vec<f64>, Vec<f64>) {
    let n = 2 * m + 1;
    let d = (0..n).map(|i| (m as f64 - i as f64).abs()).collect();
    (d, vec![1.0; n - 1])
}

fn glued_wilkinson(m: usize, copies: usize, glue: f64) -> (Vec<f64>, Vec<f64>) {
    let (dw, ew) = wilkinson(m);
    let mut d = Vec::new();
    let mut e = Vec::new();
    for c in 0..copies {
        if c > 0 {
            e.push(glue);
        }
        d.extend_from_slice(&dw);
        e.extend_from_slice(&ew);
    }
    (d, e)
}

fn random(n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let d = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let e = (0..n.saturating_sub(1))
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    (d, e)
}

const SIZES: [usize; 9] = [1, 2, 3, 31, 32, 33, 100, 257, 600];

fn suite<T: Scalar>() -> Ratios {
    let p = DcParams::default();
    let mut worst = Ratios::default();
    for &n in &SIZES {
        // Random.
        let (d, e) = random(n, 7 + n as u64);
        worst = worst.max(check::<T>("random", &d, &e, &p));
        // (1,2,1) Toeplitz: eigenvalues 2 - 2 cos(j pi/(n+1)) = 4 sin^2(j pi/(2(n+1))),
        // an oracle independent of faer.
        let d = vec![2.0; n];
        let e = vec![1.0; n.saturating_sub(1)];
        let mut exact: Vec<f64> = (1..=n)
            .map(|j| {
                let s = (j as f64 * std::f64::consts::PI / (2.0 * (n as f64 + 1.0))).sin();
                4.0 * s * s
            })
            .collect();
        exact.sort_by(|a, b| a.partial_cmp(b).unwrap());
        worst = worst.max(check_ref::<T>("toeplitz121", &d, &e, &p, Some(&exact)));
        // Clustered: eigenvalues within ~1e-10 of 1 plus a few well separated.
        let mut rng = StdRng::seed_from_u64(100 + n as u64);
        let d: Vec<f64> = (0..n)
            .map(|i| {
                if i % 10 == 0 {
                    i as f64
                } else {
                    1.0 + 1e-10 * rng.random_range(-1.0..1.0)
                }
            })
            .collect();
        let e: Vec<f64> = (0..n.saturating_sub(1))
            .map(|_| 1e-10 * rng.random_range(-1.0..1.0))
            .collect();
        worst = worst.max(check::<T>("clustered", &d, &e, &p));
        // Zero off-diagonal in the middle (splits), the rest random.
        let (d, mut e) = random(n, 1000 + n as u64);
        if n >= 2 {
            e[(n - 1) / 2] = 0.0;
        }
        worst = worst.max(check::<T>("split", &d, &e, &p));
    }
    worst
}

#[test]
fn suite_f64() {
    let w = suite::<f64>();
    eprintln!("dc suite f64 worst: {w:?}");
}

#[test]
fn suite_f32() {
    let w = suite::<f32>();
    eprintln!("dc suite f32 worst: {w:?}");
}

fn hard_cases<T: Scalar>() -> Ratios {
    let p = DcParams::default();
    let mut worst = Ratios::default();
    // Wilkinson W21 (leaf) and larger, also with tiny leaves so W21 is merged.
    for m in [10, 50, 150] {
        let (d, e) = wilkinson(m);
        worst = worst.max(check::<T>("wilkinson", &d, &e, &p));
        worst = worst.max(check::<T>(
            "wilkinson leaf4",
            &d,
            &e,
            &DcParams {
                leaf_size: 4,
                col_tile: 7,
            },
        ));
    }
    // Glued Wilkinson: heavy deflation (pairs of nearly equal eigenvalues and many
    // identical blocks).
    for glue in [1e-14, 1e-8, 1e-3] {
        let (d, e) = glued_wilkinson(10, 20, glue);
        worst = worst.max(check::<T>("glued wilkinson", &d, &e, &p));
    }
    // Exactly repeated eigenvalues: identical random blocks, split by exact zeros and
    // glued by a tiny coupling that D&C sees (deflated in the merges).
    let (db, eb) = random(25, 3);
    for glue in [0.0, 1e-200, 1e-12] {
        let mut d = Vec::new();
        let mut e = Vec::new();
        for c in 0..12 {
            if c > 0 {
                e.push(glue);
            }
            d.extend_from_slice(&db);
            e.extend_from_slice(&eb);
        }
        worst = worst.max(check::<T>("repeated", &d, &e, &p));
    }
    // Constant diagonal, repeated eigenvalue 1 with multiplicity n - 2.
    let n = 200;
    let mut d = vec![1.0; n];
    let mut e = vec![0.0; n - 1];
    e[n / 2] = 0.5;
    d[0] = 3.0;
    worst = worst.max(check::<T>("identity-like", &d, &e, &p));
    let d = vec![1.0; n];
    let e = vec![0.0; n - 1];
    worst = worst.max(check::<T>("identity", &d, &e, &p));
    let d = vec![0.0; n];
    worst = worst.max(check::<T>("zero", &d, &e, &p));
    // Tiny and huge off-diagonals; whole matrix tiny or huge (scaling); graded.
    let big = if T::NAME == "f32" { 1e30 } else { 1e300 };
    let small = if T::NAME == "f32" { 1e-30 } else { 1e-300 };
    let (d0, e0) = random(257, 11);
    let e: Vec<f64> = e0.iter().map(|_| small).collect();
    worst = worst.max(check::<T>("tiny offdiag", &d0, &e, &p));
    let e: Vec<f64> = e0.iter().map(|x| x * big).collect();
    worst = worst.max(check::<T>("huge offdiag", &d0, &e, &p));
    let d: Vec<f64> = d0.iter().map(|x| x * small).collect();
    let e: Vec<f64> = e0.iter().map(|x| x * small).collect();
    worst = worst.max(check::<T>("tiny matrix", &d, &e, &p));
    let d: Vec<f64> = d0.iter().map(|x| x * big).collect();
    let e: Vec<f64> = e0.iter().map(|x| x * big).collect();
    worst = worst.max(check::<T>("huge matrix", &d, &e, &p));
    let g = if T::NAME == "f32" { 0.8f64 } else { 0.7f64 };
    let d: Vec<f64> = (0..100).map(|i| g.powi(i)).collect();
    let e: Vec<f64> = (0..99).map(|i| 0.5 * g.powi(i)).collect();
    worst = worst.max(check::<T>("graded", &d, &e, &p));
    // Random with many leaf/tile shapes.
    for (leaf, tile) in [(1, 1), (2, 3), (5, 64), (16, 0)] {
        let (d, e) = random(150, 99);
        worst = worst.max(check::<T>(
            "random small leaves",
            &d,
            &e,
            &DcParams {
                leaf_size: leaf,
                col_tile: tile,
            },
        ));
    }
    worst
}

#[test]
fn hard_f64() {
    let w = hard_cases::<f64>();
    eprintln!("dc hard f64 worst: {w:?}");
}

#[test]
fn hard_f32() {
    let w = hard_cases::<f32>();
    eprintln!("dc hard f32 worst: {w:?}");
}
