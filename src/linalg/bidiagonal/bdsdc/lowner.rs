//! The Löwner step of the bidiagonal merge (Gu & Eisenstat 1995; LAPACK
//! `dlasd3`) in a form the compiler vectorises.

use std::ops::Range;

use crate::linalg::tridiagonal::stedc::secular::{Root, Secular};
use crate::scalar::Scalar;

/// Löwner / Gu–Eisenstat `z-hat` of the SVD merge (`dlasd3`) for the entries
/// `rows`:
/// `z-hat_i^2 = -(d_i^2 - sigma_i^2) prod_{j != i} (d_i^2 - sigma_j^2) / (d_i^2 - d_j^2)`,
/// each factor `(diff * sum) / ((d_i - d_j)(d_i + d_j))` from the accurate
/// differences [`Root::diff_sum`], signed like `z_i`. The same products in the
/// same order as the EVD's `lowner_zhat` (roots `j` outer, each root's factors
/// over the contiguous `rows`, so the divisions vectorise); any partition of
/// `0..k` gives bitwise the same `z-hat`.
pub(crate) fn svd_zhat<T: Scalar>(
    sec: &Secular<T>,
    roots: &[Root<T>],
    rows: Range<usize>,
) -> Vec<T> {
    let (dl, z) = (&sec.d, &sec.z);
    let zero = T::zero();
    let (lo, hi) = (rows.start, rows.end);
    let mut w: Vec<T> = rows
        .clone()
        .map(|i| {
            let (a, b) = roots[i].diff_sum(dl, i);
            a * b
        })
        .collect();
    let dr = &dl[lo..hi];
    for (j, root) in roots.iter().enumerate() {
        let (dj, o, tau) = (dl[j], dl[root.origin], root.tau);
        let f = |wi: &mut T, di: T| {
            let (a, b) = ((di - o) - tau, (di + o) + tau);
            *wi *= (a * b) / ((di - dj) * (di + dj));
        };
        let split = j.clamp(lo, hi) - lo;
        let skip = usize::from((lo..hi).contains(&j));
        let (wl, wr) = w.split_at_mut(split);
        for (wi, &di) in wl.iter_mut().zip(&dr[..split]) {
            f(wi, di);
        }
        for (wi, &di) in wr[skip..].iter_mut().zip(&dr[split + skip..]) {
            f(wi, di);
        }
    }
    w.iter()
        .zip(&z[lo..hi])
        .map(|(&wi, &zi)| {
            let m = (-wi).max(zero).sqrt();
            if zi < zero {
                -m
            } else {
                m
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::bidiagonal::bdsdc::secular::{locate_svd_root, solve_svd_roots_into};
    use crate::linalg::tridiagonal::stedc::secular::Secular;
    use faer::Mat;

    /// Any partition of the entries gives the bits of the plain double loop over
    /// the differences the solver returns (the same products in the same order).
    #[test]
    fn same_bits_as_the_plain_loop() {
        let k = 37;
        let d: Vec<f64> = (0..k)
            .map(|i| 0.03 * i as f64 + 0.001 * (i % 3) as f64)
            .collect();
        let z0: Vec<f64> = (0..k).map(|i| 1.0 + 0.2 * ((i * 5) % 7) as f64).collect();
        let nz = z0.iter().map(|x| x * x).sum::<f64>().sqrt();
        let sec = Secular {
            d: d.clone(),
            z: z0.iter().map(|x| x / nz).collect(),
            rho: 0.7,
        };
        let (mut dw, mut sw) = (vec![0.0; k], vec![0.0; k]);
        let roots: Vec<_> = (0..k)
            .map(|r| locate_svd_root(&sec.d, &sec.z, sec.rho, r, &mut dw, &mut sw).unwrap())
            .collect();
        let mut diff = Mat::<f64>::zeros(k, k);
        let mut sum = Mat::<f64>::zeros(k, k);
        let mut sigma = vec![0.0; k];
        solve_svd_roots_into(&sec, 0..k, &mut sigma, diff.as_mut(), sum.as_mut()).unwrap();
        let mut w: Vec<f64> = (0..k).map(|i| diff[(i, i)] * sum[(i, i)]).collect();
        for j in 0..k {
            for (i, wi) in w.iter_mut().enumerate() {
                if i != j {
                    *wi *= (diff[(i, j)] * sum[(i, j)]) / ((d[i] - d[j]) * (d[i] + d[j]));
                }
            }
        }
        let mut got = svd_zhat(&sec, &roots, 20..k);
        got.splice(0..0, svd_zhat(&sec, &roots, 0..20));
        for i in 0..k {
            let m = (-w[i]).max(0.0).sqrt();
            let want = if sec.z[i] < 0.0 { -m } else { m };
            assert_eq!(got[i].to_bits(), want.to_bits(), "entry {i}");
            assert_eq!(roots[i].lambda.to_bits(), sigma[i].to_bits(), "root {i}");
        }
    }

    /// With the roots of a well-separated secular equation, `z-hat` reproduces
    /// the weights `sqrt(rho) z` of `M^T M = D^2 + rho z z^T` (the roots are
    /// exact for `z-hat`; Gu & Eisenstat's bound is a few `k eps` relative to
    /// `|z| = 1`).
    #[test]
    fn reproduces_z_from_accurate_roots() {
        let k = 50;
        let d: Vec<f64> = (0..k).map(|i| 0.02 * i as f64).collect();
        let z0: Vec<f64> = (0..k).map(|i| 1.0 + 0.3 * ((i * 7) % 5) as f64).collect();
        let nz = z0.iter().map(|x| x * x).sum::<f64>().sqrt();
        let sec = Secular {
            d: d.clone(),
            z: z0.iter().map(|x| x / nz).collect(),
            rho: 0.5,
        };
        let (mut dw, mut sw) = (vec![0.0; k], vec![0.0; k]);
        let roots: Vec<_> = (0..k)
            .map(|r| locate_svd_root(&sec.d, &sec.z, sec.rho, r, &mut dw, &mut sw).unwrap())
            .collect();
        let zhat = svd_zhat(&sec, &roots, 0..k);
        for (i, (&zh, &zi)) in zhat.iter().zip(&sec.z).enumerate() {
            let want = sec.rho.sqrt() * zi;
            let ratio = (zh - want).abs() / (k as f64 * f64::EPSILON);
            assert!(ratio < 30.0, "entry {i}: ratio {ratio}");
        }
    }
}
