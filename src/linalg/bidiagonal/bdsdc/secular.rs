//! The secular equation of a bidiagonal divide-and-conquer merge (LAPACK `dlasd4` in
//! purpose): the singular values of `M = [z^T; 0 diag(d_1, ..., d_{k-1})]` (first row
//! `z`, pole `d_0 = 0`) are the roots of
//!
//! ```text
//! f(sigma) = 1/rho + sum_j z_j^2 / ((d_j - sigma)(d_j + sigma)) = 0
//! ```
//!
//! (`M^T M = diag(d)^2 + rho z z^T` with `|z| = 1`), one in each `(d_i, d_{i+1})` and the
//! last in `(d_{k-1}, sqrt(d_{k-1}^2 + rho)]`.
//!
//! This is the EVD secular equation in the squares `D_j = d_j^2`, `lambda = sigma^2`,
//! and the root finder is the EVD's ([`crate::linalg::tridiagonal::stedc::secular`]) run in the
//! `Squared` frame: the iterate is `t = sigma - d_o` relative to the origin pole,
//! and every difference `D_j - lambda` is formed as `((d_j - d_o) - t)((d_j + d_o) + t)`
//! from the poles themselves. Subtracting rounded squares instead would lose all
//! relative accuracy for poles closer than `sqrt(eps)` (Gu & Eisenstat 1995, the
//! reason `dlasd4` works with `d_j - sigma` and `d_j + sigma`). Both factors are
//! returned: the singular vectors need `(d_j - sigma)(d_j + sigma)` to full relative
//! accuracy.

use std::ops::Range;

use faer::reborrow::ReborrowMut;
use faer::MatMut;

use crate::error::Error;
use crate::linalg::tridiagonal::stedc::secular::{
    check_range, solve_in_frame, Frame, Root, Secular, MAX_ITER,
};
use crate::scalar::Scalar;

/// The SVD frame: `sigma = d_o + t`; `diff[j] = d_j - d_o`, `sum[j] = d_j + d_o` while
/// iterating, `d_j - sigma` and `d_j + sigma` on exit.
pub(crate) struct Squared<'a, T> {
    d: &'a [T],
    diff: &'a mut [T],
    sum: &'a mut [T],
    o: usize,
    /// The converged iterate, once [`Frame::finish`] ran.
    t: T,
}

impl<T: Scalar> Frame<T> for Squared<'_, T> {
    const STAGE: &'static str = "bdsdc secular equation";
    fn set_origin(&mut self, o: usize) {
        self.o = o;
        let dox = self.d[o];
        for ((df, sm), &dj) in self.diff.iter_mut().zip(self.sum.iter_mut()).zip(self.d) {
            *df = dj - dox;
            *sm = dj + dox;
        }
    }
    #[inline(always)]
    fn delta(&self, j: usize, t: T) -> T {
        (self.diff[j] - t) * (self.sum[j] + t)
    }
    #[inline(always)]
    fn deltas<const L: usize>(&self, j0: usize, t: T) -> [T; L] {
        // Fixed-length slices: no bounds checks in the lanes, so the shared
        // evaluator's loop vectorises (the same operations as `delta`).
        let diff: &[T; L] = self.diff[j0..j0 + L].try_into().expect("L poles");
        let sum: &[T; L] = self.sum[j0..j0 + L].try_into().expect("L poles");
        std::array::from_fn(|l| (diff[l] - t) * (sum[l] + t))
    }
    #[inline(always)]
    fn offset(&self, t: T) -> T {
        // sigma^2 - d_o^2 = t (2 d_o + t)
        t * (self.sum[self.o] + t)
    }
    fn iterate(&self, x: T) -> T {
        // sigma - d_o = (sigma^2 - d_o^2) / (sigma + d_o)
        let dox = self.d[self.o];
        x / (dox + (dox * dox + x).max(T::zero()).sqrt())
    }
    fn step(&self, t: T, eta: T) -> Option<T> {
        let s = self.d[self.o] + t;
        let s2 = s * s + eta;
        if s2 >= T::zero() {
            Some(t + eta / (s + s2.sqrt()))
        } else {
            None
        }
    }
    fn finish(&mut self, t: T) -> T {
        self.t = t;
        for (df, sm) in self.diff.iter_mut().zip(self.sum.iter_mut()) {
            *df -= t;
            *sm += t;
        }
        self.d[self.o] + t
    }
}

/// Root `i` (ascending) of the SVD secular equation with poles `0 <= d_0 < d_1 < ...`,
/// weights `z` (nonzero) and `rho > 0`. Returns `sigma_i` and writes `diff[j] = d_j -
/// sigma_i`, `sum[j] = d_j + sigma_i`, each to a few ulps of itself.
pub fn solve_svd_root<T: Scalar>(
    d: &[T],
    z: &[T],
    rho: T,
    i: usize,
    diff: &mut [T],
    sum: &mut [T],
) -> Result<T, Error> {
    Ok(locate_svd_root(d, z, rho, i, diff, sum)?.lambda)
}

/// [`solve_svd_root`], returning where the root lies (`sigma = d[origin] + tau`,
/// in [`Root::lambda`]); its differences are [`Root::diff_sum`]. `diff` and `sum`
/// (length `k`) are scratch.
pub fn locate_svd_root<T: Scalar>(
    d: &[T],
    z: &[T],
    rho: T,
    i: usize,
    diff: &mut [T],
    sum: &mut [T],
) -> Result<Root<T>, Error> {
    let k = d.len();
    assert!(i < k && z.len() == k && diff.len() == k && sum.len() == k);
    let mut frame = Squared {
        d,
        diff,
        sum,
        o: 0,
        t: T::zero(),
    };
    let sigma = solve_in_frame(&mut frame, k, z, rho, i, MAX_ITER)?;
    Ok(Root {
        origin: frame.o,
        tau: frame.t,
        lambda: sigma,
    })
}

/// Solves roots `range` of the SVD secular equation `sec` (poles `sec.d`, ascending,
/// `sec.d[0] >= 0`): `sigma[r - range.start]` receives root `r`, and column
/// `r - range.start` of `diff` and of `sum` (each `k x range.len()`) receives
/// `d_j - sigma_r` and `d_j + sigma_r`.
///
/// Roots are independent: any partition of `0..k` into ranges, run in any order or
/// concurrently, gives bitwise identical results (the pipeline's root-range tasks).
pub fn solve_svd_roots_into<T: Scalar>(
    sec: &Secular<T>,
    range: Range<usize>,
    sigma: &mut [T],
    mut diff: MatMut<'_, T>,
    mut sum: MatMut<'_, T>,
) -> Result<(), Error> {
    let k = sec.len();
    check_range(k, &range, sigma.len(), &[&diff, &sum])?;
    let mut dcol = vec![T::zero(); k];
    let mut scol = vec![T::zero(); k];
    for (idx, r) in range.enumerate() {
        sigma[idx] = solve_svd_root(&sec.d, &sec.z, sec.rho, r, &mut dcol, &mut scol)?;
        diff.rb_mut()
            .col_mut(idx)
            .iter_mut()
            .zip(&dcol)
            .for_each(|(x, &y)| *x = y);
        sum.rb_mut()
            .col_mut(idx)
            .iter_mut()
            .zip(&scol)
            .for_each(|(x, &y)| *x = y);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Roots of a small SVD secular equation against the singular values of the
    /// arrowhead matrix by faer, and the returned differences against f64 recomputation.
    #[test]
    fn roots_match_arrowhead_singular_values() {
        let d = [0.0, 1e-3, 0.3, 0.30000001, 0.7, 1.0];
        let z0 = [0.4, 1e-4, 0.5, 0.3, 0.6, 0.35];
        let nz = z0.iter().map(|x| x * x).sum::<f64>().sqrt();
        let z: Vec<f64> = z0.iter().map(|x| x / nz).collect();
        let rho = nz * nz;
        let k = d.len();
        let m = faer::Mat::<f64>::from_fn(k, k, |i, j| {
            if i == 0 {
                z0[j]
            } else if i == j {
                d[i]
            } else {
                0.0
            }
        });
        let mut sv = m.singular_values().unwrap();
        sv.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let (mut diff, mut sum) = (vec![0.0; k], vec![0.0; k]);
        for i in 0..k {
            let s = solve_svd_root(&d, &z, rho, i, &mut diff, &mut sum).unwrap();
            assert!(
                (s - sv[i]).abs() <= 8.0 * f64::EPSILON * sv[k - 1],
                "root {i}: {s} vs {}",
                sv[i]
            );
            assert!(
                s > d[i] && (i + 1 == k || s < d[i + 1]),
                "root {i} outside its interval"
            );
            for j in 0..k {
                let scale = 4.0 * f64::EPSILON * d[j].max(s);
                assert!(
                    (diff[j] - (d[j] - s)).abs() <= scale && (sum[j] - (d[j] + s)).abs() <= scale
                );
            }
        }
    }

    /// The iteration limit is enforced for the SVD frame too.
    #[test]
    fn starved_solver_reports_no_convergence() {
        let d = [0.0, 1e-3, 0.5, 1.0];
        let z = [0.5, 0.5, 0.5, 0.5];
        let (mut diff, mut sum) = ([0.0; 4], [0.0; 4]);
        let fails = (0..4)
            .filter(|&i| {
                let mut frame = Squared {
                    d: &d,
                    diff: &mut diff,
                    sum: &mut sum,
                    o: 0,
                    t: 0.0,
                };
                matches!(
                    solve_in_frame(&mut frame, 4, &z, 1.0, i, 1),
                    Err(Error::NoConvergence {
                        stage: "bdsdc secular equation",
                        ..
                    })
                )
            })
            .count();
        assert!(fails > 0);
    }
}
