//! Shared helpers of the batched SVD tests (tests/suite/batched.rs,
//! tests/suite/batched_gebrd.rs): the matrix families of Abdelfattah and Fasi's
//! Table 1 (J5), packing, and
//! the LAPACK-style ratios J1-J4.
#![allow(dead_code)]

use eigenflow::gallery::{self, Rng};
use eigenflow::pipeline::batched::{BatchedMethod, BatchedOptions, BatchedSvd};
use eigenflow::runtime::Runtime;
use eigenflow::Scalar;
use faer::{Mat, MatRef};

pub const FAMILIES: [&str; 6] = ["random", "arith", "cluster0", "cluster1", "logrand", "geo"];

/// Digest Table 1 spectra (descending) for `k` values at condition `kappa`.
pub fn sigma(family: &str, k: usize, kappa: f64, rng: &mut Rng) -> Vec<f64> {
    let t = |i: usize| {
        if k == 1 {
            0.0
        } else {
            i as f64 / (k - 1) as f64
        }
    };
    (0..k)
        .map(|i| match family {
            "arith" => 1.0 - t(i) * (1.0 - 1.0 / kappa),
            "cluster0" => {
                if i == 0 {
                    1.0
                } else {
                    1.0 / kappa
                }
            }
            "cluster1" => {
                if i + 1 < k || k == 1 {
                    1.0
                } else {
                    1.0 / kappa
                }
            }
            "logrand" => (rng.uniform() * (1.0 / kappa).ln()).exp(),
            "geo" => kappa.powf(-t(i)),
            _ => unreachable!(),
        })
        .collect()
}

/// One `m x n` member of `family` (J5): uniform [0, 1] entries for
/// "random", else `Q1 diag(sigma) Q2^T` with Haar-random `Q1`, `Q2`.
pub fn member<T: Scalar>(family: &str, m: usize, n: usize, seed: u64) -> Mat<T> {
    let kappa = if T::NAME == "f32" { 1e5 } else { 1e10 };
    let mut rng = Rng::new(seed);
    if family == "random" {
        return Mat::from_fn(m, n, |_, _| T::of(rng.uniform()));
    }
    let s: Vec<T> = sigma(family, m.min(n), kappa, &mut rng)
        .into_iter()
        .map(T::of)
        .collect();
    gallery::with_singular_values::<T>(m, n, &s, seed ^ 0x5eed)
}

/// Column-major matrices one after another.
pub fn pack<T: Scalar>(mats: &[Mat<T>]) -> Vec<T> {
    let mut v = Vec::new();
    for a in mats {
        for j in 0..a.ncols() {
            for i in 0..a.nrows() {
                v.push(a[(i, j)]);
            }
        }
    }
    v
}

pub fn f64_of<T: Scalar>(a: MatRef<'_, T>) -> Mat<f64> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| a[(i, j)].f64())
}

pub fn norm1(a: MatRef<'_, f64>) -> f64 {
    (0..a.ncols())
        .map(|j| (0..a.nrows()).map(|i| a[(i, j)].abs()).sum::<f64>())
        .fold(0.0, f64::max)
}

pub fn orth_ratio(q: MatRef<'_, f64>, rows: usize, u: f64) -> f64 {
    let mut e = q.transpose() * q;
    for i in 0..e.nrows() {
        e[(i, i)] -= 1.0;
    }
    norm1(e.as_ref()) / (rows as f64 * u)
}

/// Worst ratios over a batch: (J1, J2 of U, J2 of V, J3).
#[derive(Default, Debug, Clone, Copy)]
pub struct Ratios {
    pub rec: f64,
    pub u: f64,
    pub v: f64,
    pub val: f64,
}

impl Ratios {
    pub fn max(self, o: Ratios) -> Ratios {
        Ratios {
            rec: self.rec.max(o.rec),
            u: self.u.max(o.u),
            v: self.v.max(o.v),
            val: self.val.max(o.val),
        }
    }
}

/// J1-J4 of every matrix of `svd` against the inputs `mats`.
pub fn check<T: Scalar>(mats: &[Mat<T>], svd: &BatchedSvd<T>) -> Ratios {
    let u_eps = T::EPS.f64();
    let mut worst = Ratios::default();
    for (i, a) in mats.iter().enumerate() {
        let a = f64_of(a.as_ref());
        let (m, n) = (a.nrows(), a.ncols());
        let k = m.min(n);
        let s: Vec<f64> = svd.values_of(i).iter().map(|x| x.f64()).collect();
        // J4: descending and non-negative.
        assert!(
            s.windows(2).all(|w| w[0] >= w[1]) && s[k - 1] >= 0.0,
            "matrix {i}: not sorted"
        );
        let s_ref = a.as_ref().singular_values().unwrap();
        let (mut d2, mut r2) = (0.0, 0.0);
        for (x, y) in s.iter().zip(&s_ref) {
            d2 += (x - y) * (x - y);
            r2 += y * y;
        }
        let val = if r2 == 0.0 {
            d2.sqrt()
        } else {
            d2.sqrt() / (k as f64 * r2.sqrt() * u_eps)
        };
        let mut r = Ratios {
            val,
            ..Ratios::default()
        };
        if let (Some(uu), Some(vt)) = (svd.u_of(i), svd.vt_of(i)) {
            let (uu, vt) = (f64_of(uu), f64_of(vt));
            let us = Mat::from_fn(m, k, |p, q| uu[(p, q)] * s[q]);
            let resid = &a - &us * &vt;
            let an = norm1(a.as_ref());
            r.rec = if an == 0.0 {
                norm1(resid.as_ref())
            } else {
                norm1(resid.as_ref()) / (m.max(n) as f64 * an * u_eps)
            };
            r.u = orth_ratio(uu.as_ref(), m, u_eps);
            r.v = orth_ratio(vt.transpose(), n, u_eps);
        }
        worst = worst.max(r);
    }
    worst
}

pub fn rt(threads: usize) -> Runtime {
    Runtime::builder().threads(threads).build()
}

/// A batch mixing fast and slow convergers, zero and rank-deficient
/// matrices, repeated values, with an odd block count before padding
/// (n = 20, block 8: 3 blocks padded to 4).
pub fn mixed_batch(m: usize, n: usize) -> Vec<Mat<f64>> {
    let mut v = Vec::new();
    for i in 0..24u64 {
        let a = match i % 6 {
            0 => member::<f64>("geo", m, n, i),
            1 => member::<f64>("cluster1", m, n, i),
            2 => Mat::zeros(m, n),
            3 => {
                // rank 5: B (m x 5) C (5 x n)
                let b = gallery::random_gaussian::<f64>(m, 5, i);
                let c = gallery::random_gaussian::<f64>(5, n, i + 99);
                &b * &c
            }
            4 => member::<f64>("logrand", m, n, i),
            _ => {
                // already orthogonal columns: Q diag(d), converges at once
                let q = gallery::random_orthogonal::<f64>(m, i);
                Mat::from_fn(m, n, |r, c| q[(r, c)] * (1.0 + c as f64))
            }
        };
        v.push(a);
    }
    v
}

pub fn bits(s: &BatchedSvd<f64>) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
    let b = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    (
        b(&s.values),
        b(s.u.as_ref().unwrap()),
        b(s.vt.as_ref().unwrap()),
    )
}

/// Options selecting `method`, the rest default.
pub fn with_method(method: BatchedMethod) -> BatchedOptions {
    BatchedOptions {
        method,
        ..BatchedOptions::default()
    }
}
