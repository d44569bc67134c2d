//! Roots of the secular equation of a rank-one modified diagonal matrix.
//!
//! For `D = diag(d_0 < d_1 < ... < d_{k-1})`, weights `z` (all nonzero) and `rho > 0`,
//! the eigenvalues of `D + rho z z^T` are the roots of
//!
//! ```text
//! f(lambda) = 1/rho + sum_j z_j^2 / (d_j - lambda)            (Golub 1973)
//! ```
//!
//! with exactly one root in each `(d_i, d_{i+1})` and the last one in
//! `(d_{k-1}, d_{k-1} + rho |z|^2]`. This is the job of LAPACK `dlaed4`; the method here
//! follows the same ideas (Li 1993, "Solving secular equations stably and efficiently";
//! Ren-Cang Li's "middle way" rational model) but adds an explicit bracket with
//! bisection so that every iteration is safeguarded:
//!
//! * The root is written as `lambda = d_origin + tau`, where `d_origin` is the pole nearest
//!   to the root (decided by the sign of `f` at the midpoint of the interval, as in
//!   `dlaed4`). All differences `d_j - lambda` are then evaluated as
//!   `(d_j - d_origin) - tau`, which is accurate to a few ulps even when `tau` is tiny;
//!   these differences (`delta`) are returned, because the Gu–Eisenstat eigenvector
//!   formula needs them to full relative accuracy.
//! * Each step solves a two-pole rational model `c + s/(d_p - x) + S/(d_q - x)` that
//!   matches `f` and `f'` at the iterate (a quadratic in the correction). The first
//!   steps use the "fixed weight" model (the origin pole keeps its exact weight
//!   `z_o^2`; `dlaed4`'s default); if that does not reduce `|f|` tenfold the solver
//!   switches, as `dlaed4` does, to the "middle way" (left and right partial sums each
//!   modelled by one pole whose weight matches that sum's derivative; Li 1993). Unlike
//!   `dlaed4`, which puts those poles at the interval's ends and falls back to a
//!   three-pole model (`dlaed6`), each side's pole is the one contributing most to that
//!   side's derivative, which covers the case of an interval pole with a tiny weight
//!   next to a heavy neighbour without a cubic solve.
//! * A bracket `[lo, hi]` on `tau` with `f(lo) < 0 <= f(hi)` is maintained; a model step
//!   that leaves the bracket or does not halve `|f|` is replaced by a bisection step,
//!   alternately geometric (so roots tiny compared to the interval, next to a pole, are
//!   reached in a bounded number of steps) and arithmetic.
//! * Convergence: `|f| <= eps * (bound on the rounding error of evaluating f)`, as in
//!   `dlaed4`, or the bracket (or the Newton correction) shrinking below a few ulps of
//!   `tau`. After [`MAX_ITER`] evaluations the solver reports [`Error::NoConvergence`];
//!   a root is never returned unconverged.

use std::ops::Range;

use faer::reborrow::ReborrowMut;
use faer::MatMut;

use crate::error::Error;
use crate::scalar::Scalar;

mod eval;
mod frame;
mod model;
mod quotient;
use eval::{dominant_deltas, eval};
pub(crate) use frame::{Frame, Shifted};
use model::{bisect, pick, quad_roots};

/// Iteration limit per root (evaluations of `f`: model plus bisection steps). `dlaed4`
/// uses 30 unsafeguarded model steps; the extra room is for the bisection fallback
/// (about 11 geometric plus `digits` arithmetic halvings, interleaved with model steps).
/// Measured over the test suite: at most 14, about 2.8 on average.
pub const MAX_ITER: usize = 160;

/// The secular equation of a rank-one modified diagonal matrix `diag(d) + rho z z^T`
/// (the non-deflated part of a merge).
#[derive(Clone, Debug)]
pub struct Secular<T> {
    /// The poles, strictly increasing.
    pub d: Vec<T>,
    /// The weights, all nonzero.
    pub z: Vec<T>,
    /// The rank-one coefficient, `rho > 0`.
    pub rho: T,
}

impl<T: Scalar> Secular<T> {
    /// Number of roots.
    pub fn len(&self) -> usize {
        self.d.len()
    }

    /// Whether there are no roots.
    pub fn is_empty(&self) -> bool {
        self.d.is_empty()
    }
}

#[inline(always)]
fn c<T: Scalar>(x: f64) -> T {
    T::of(x)
}

/// Solves for root `i` (0-based, ascending) of the secular equation
/// `1/rho + sum_j z_j^2/(d_j - lambda) = 0`, `d` strictly increasing, `rho > 0`.
///
/// Returns `lambda_i` and writes `delta[j] = d_j - lambda_i` (each to a few ulps of
/// its own magnitude) for all `j`. Equivalent in purpose to LAPACK `dlaed4`.
pub fn solve_root<T: Scalar>(
    d: &[T],
    z: &[T],
    rho: T,
    i: usize,
    delta: &mut [T],
) -> Result<T, Error> {
    solve_root_max_iter(d, z, rho, i, delta, MAX_ITER)
}

/// [`solve_root`] with an explicit iteration limit.
fn solve_root_max_iter<T: Scalar>(
    d: &[T],
    z: &[T],
    rho: T,
    i: usize,
    delta: &mut [T],
    max_iter: usize,
) -> Result<T, Error> {
    let k = d.len();
    assert!(i < k && z.len() == k && delta.len() == k);
    Ok(locate_root_max_iter(d, z, rho, i, delta, max_iter)?.lambda)
}

/// A root of the secular equation as the solver found it: `lambda = d[origin] + tau`,
/// with `origin` the pole nearer the root. The differences
/// `d_j - lambda = (d_j - d[origin]) - tau` ([`Root::delta`]) are accurate to a few
/// ulps of their own magnitude, which `d_j - lambda` formed from `lambda` is not:
/// the Gu–Eisenstat eigenvectors need them (LAPACK `dlaed4` returns them as `DELTA`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Root<T> {
    /// The pole the root is measured from (`i` or `i + 1` for root `i`).
    pub origin: usize,
    /// `lambda - d[origin]`.
    pub tau: T,
    /// The root.
    pub lambda: T,
}

impl<T: Scalar> Root<T> {
    /// `d[j] - lambda`, bitwise as [`solve_root`] writes it.
    #[inline(always)]
    pub fn delta(&self, d: &[T], j: usize) -> T {
        (d[j] - d[self.origin]) - self.tau
    }

    /// For a root of the SVD's secular equation (`lambda` is `sigma`):
    /// `(d[j] - sigma, d[j] + sigma)`, bitwise as
    /// [`crate::linalg::bidiagonal::bdsdc::secular::solve_svd_root`] writes them.
    #[inline(always)]
    pub fn diff_sum(&self, d: &[T], j: usize) -> (T, T) {
        let o = d[self.origin];
        ((d[j] - o) - self.tau, (d[j] + o) + self.tau)
    }
}

/// [`solve_root`], returning where the root lies instead of all its differences
/// (`work`, of length `k`, is scratch).
pub fn locate_root<T: Scalar>(
    d: &[T],
    z: &[T],
    rho: T,
    i: usize,
    work: &mut [T],
) -> Result<Root<T>, Error> {
    locate_root_max_iter(d, z, rho, i, work, MAX_ITER)
}

fn locate_root_max_iter<T: Scalar>(
    d: &[T],
    z: &[T],
    rho: T,
    i: usize,
    work: &mut [T],
    max_iter: usize,
) -> Result<Root<T>, Error> {
    let k = d.len();
    assert!(i < k && z.len() == k && work.len() == k);
    let mut frame = Shifted {
        d,
        dd: work,
        o: 0,
        t: T::zero(),
    };
    let lambda = solve_in_frame(&mut frame, k, z, rho, i, max_iter)?;
    Ok(Root {
        origin: frame.o,
        tau: frame.t,
        lambda,
    })
}

/// The root finder of the module documentation, for root `i` of `k` in `frame`.
pub(crate) fn solve_in_frame<T: Scalar, F: Frame<T>>(
    frame: &mut F,
    k: usize,
    z: &[T],
    rho: T,
    i: usize,
    max_iter: usize,
) -> Result<T, Error> {
    let zero = T::zero();
    let half = c::<T>(0.5);
    if k == 1 {
        // The only root: lambda = D_0 + rho z_0^2 exactly (up to one rounding).
        frame.set_origin(0);
        let t = frame.iterate(rho * z[0] * z[0]);
        return Ok(frame.finish(t));
    }
    let rhoinv = T::one() / rho;
    let eps = T::EPS;
    let origin;
    let split;
    // Bracket on the iterate t, and the pole gap D_{i+1} - D_i of an interior root.
    let (mut lo, mut hi);
    let mut tau;
    let mut gap = zero;
    if i + 1 < k {
        // Interior root in (D_i, D_{i+1}); model poles i and i+1.
        split = i;
        frame.set_origin(i);
        let del = frame.delta(i + 1, zero);
        gap = del;
        let hd = del * half;
        let tm = frame.iterate(hd);
        let em = eval(frame, k, z, tm, split, rhoinv);
        // Two-pole model at the midpoint for the starting value (cf. dlaed4's initial
        // guess): c0 + z_i^2/(D_i - x) + z_{i+1}^2/(D_{i+1} - x), c0 from w(mid).
        let zi2 = z[i] * z[i];
        let zq2 = z[i + 1] * z[i + 1];
        let c0 = em.w - zi2 / frame.delta(i, tm) - zq2 / frame.delta(i + 1, tm);
        if em.w >= zero {
            // Root in (D_i, mid]: origin D_i, lambda offset in (0, del/2].
            origin = i;
            lo = zero;
            hi = tm;
            let a = c0 * del + zi2 + zq2;
            let b = zi2 * del;
            tau = pick(quad_roots(c0, a, b), zero, hd + hd * eps)
                .map(|x| frame.iterate(x).min(hi))
                .unwrap_or_else(|| frame.iterate(hd * half));
        } else {
            // Root in (mid, D_{i+1}): origin D_{i+1}, lambda offset in (-del/2, 0).
            origin = i + 1;
            frame.set_origin(i + 1);
            lo = frame.iterate(-hd);
            hi = zero;
            let a = zi2 + zq2 - c0 * del;
            let b = -zq2 * del;
            tau = pick(quad_roots(c0, a, b), -hd, zero)
                .map(|x| frame.iterate(x))
                .unwrap_or_else(|| frame.iterate(-hd * half));
        }
    } else {
        // Last root in (D_{k-1}, D_{k-1} + rho |z|^2]; origin D_{k-1}; model poles
        // k-2 and k-1.
        origin = k - 1;
        split = k - 2;
        frame.set_origin(k - 1);
        let mut zz = zero;
        for &zj in z {
            zz += zj * zj;
        }
        // Lambda-space bracket for the model root, iterate-space bracket for t.
        let (mut xlo, mut xhi) = (zero, rho * zz);
        let xmid = xhi * half;
        lo = zero;
        hi = frame.iterate(xhi);
        let mid = frame.iterate(xmid);
        let em = eval(frame, k, z, mid, split, rhoinv);
        if em.w >= zero {
            xhi = xmid;
            hi = mid;
        } else {
            xlo = xmid;
            lo = mid;
        }
        let del = -frame.delta(k - 2, zero);
        let zp2 = z[k - 2] * z[k - 2];
        let zq2 = z[k - 1] * z[k - 1];
        let c0 = em.w - zp2 / frame.delta(k - 2, mid) - zq2 / frame.delta(k - 1, mid);
        let a = zp2 + zq2 - c0 * del;
        let b = -zq2 * del;
        tau = pick(quad_roots(c0, a, b), xlo, xhi + xhi * eps)
            .map(|x| frame.iterate(x).min(hi))
            .unwrap_or_else(|| bisect(lo, hi, false).unwrap_or(mid));
    }
    if !(tau > lo && tau <= hi) {
        tau = bisect(lo, hi, false).unwrap_or(hi);
    }

    let mut converged = false;
    let mut prev_w: Option<T> = None; // |w| before the last model step
    let mut force_bisect = false;
    let mut switched = false;
    let mut fw_steps = 0usize;
    let mut geo = false;
    for _ in 0..max_iter {
        let ev = eval(frame, k, z, tau, split, rhoinv);
        if !ev.w.is_finite() {
            break;
        }
        if ev.w.abs() <= eps * ev.err {
            converged = true;
            break;
        }
        if let Some(pw) = prev_w {
            if !switched && fw_steps > 0 && ev.w.abs() > c::<T>(0.1) * pw {
                switched = true;
            }
            if ev.w.abs() > half * pw {
                force_bisect = true;
            }
        }
        // w is increasing in lambda between consecutive poles and right of the last.
        if ev.w < zero {
            lo = lo.max(tau);
        } else {
            hi = hi.min(tau);
        }
        let mut step: Option<T> = None;
        if !force_bisect {
            let dw = ev.dpsi + ev.dphi;
            let (dp, dq, cq) = if i + 1 < k && !switched {
                // Fixed weight (dlaed4's default first model; Li 1993): the origin
                // pole keeps its exact weight z_o^2, the other pole of the interval
                // gets the weight that matches w'.
                fw_steps += 1;
                let (dp, dq) = (ev.del_lo, ev.del_hi);
                let cq = if origin == i {
                    let t = z[i] / dp;
                    ev.w - dq * dw + gap * t * t
                } else {
                    let t = z[i + 1] / dq;
                    ev.w - dp * dw + (-gap) * t * t
                };
                (dp, dq, cq)
            } else {
                // Middle way (Li 1993): psi and phi each modelled by one pole with the
                // weight matching its derivative. The pole is the one contributing most
                // to that derivative (the interval's own pole when it dominates, as in
                // dlaed4; a heavier neighbour when the interval's pole has a tiny
                // weight, where lumping at the interval's pole converges only linearly).
                let (dp, dq) = dominant_deltas(frame, k, z, tau, split);
                (dp, dq, ev.w - dp * ev.dpsi - dq * ev.dphi)
            };
            // Model c + s/(dp - eta) + S/(dq - eta) matching w and w' at eta = 0:
            // c eta^2 - a eta + b = 0.
            let a = (dp + dq) * ev.w - dp * dq * dw;
            let b = dp * dq * ev.w;
            let roots = quad_roots(cq, a, b);
            let eta = if i + 1 < k {
                pick(roots, dp, dq)
            } else {
                pick(roots, dq, T::infinity())
            };
            let mut eta = eta.unwrap_or(-ev.w / (ev.dpsi + ev.dphi));
            if ev.w * eta >= zero {
                // Wrong direction: fall back to Newton (as dlaed4 does).
                eta = -ev.w / (ev.dpsi + ev.dphi);
            }
            let mut t = frame.step(tau, eta);
            if t == Some(tau) {
                // The model correction is below one ulp of tau. Accept tau only if the
                // Newton correction is too (w is monotone here, so then the root is
                // within rounding of tau); otherwise take the Newton step.
                t = frame.step(tau, -(ev.w / dw));
                if t == Some(tau) {
                    converged = true;
                    break;
                }
            }
            if let Some(t) = t {
                if t > lo && t < hi {
                    step = Some(t);
                }
            }
        }
        match step {
            Some(t) => {
                prev_w = Some(ev.w.abs());
                tau = t;
            }
            None => {
                force_bisect = false;
                prev_w = None;
                geo = !geo;
                match bisect(lo, hi, geo) {
                    Some(m) => tau = m,
                    None => {
                        converged = true;
                        break;
                    }
                }
            }
        }
        if hi - lo <= c::<T>(4.0) * eps * lo.abs().max(hi.abs()) {
            // Bracket collapsed to a few ulps around the root.
            converged = true;
            break;
        }
    }
    if !converged {
        return Err(Error::NoConvergence {
            stage: F::STAGE,
            detail: format!(
                "root {i} of {k} did not converge in {max_iter} iterations (rho = {rho})"
            ),
        });
    }
    // The frame is still at `origin` (the last `set_origin` above).
    Ok(frame.finish(tau))
}

/// Checks the output shapes of a root-range solve: `range` of `k` roots, `values`
/// of length `range.len()`, and each matrix `k x range.len()`.
pub(crate) fn check_range<T>(
    k: usize,
    range: &Range<usize>,
    values: usize,
    mats: &[&MatMut<'_, T>],
) -> Result<(), Error> {
    let bad = range.start > range.end
        || range.end > k
        || values != range.len()
        || mats
            .iter()
            .any(|m| m.nrows() != k || m.ncols() != range.len());
    if bad {
        let shapes: Vec<String> = mats
            .iter()
            .map(|m| format!("{}x{}", m.nrows(), m.ncols()))
            .collect();
        return Err(Error::Shape(format!(
            "solve_roots: range {range:?} of {k} roots, {values} values, matrices {}",
            shapes.join(", ")
        )));
    }
    Ok(())
}

/// Solves roots `range` of `sec`; `lambda[r - range.start]` receives root `r` and column
/// `r - range.start` of `delta` (`k x range.len()`) receives `d_j - lambda_r`.
///
/// Roots are independent: any partition of `0..k` into ranges, run in any order or
/// concurrently, gives bitwise identical results.
pub fn solve_roots_into<T: Scalar>(
    sec: &Secular<T>,
    range: Range<usize>,
    lambda: &mut [T],
    mut delta: MatMut<'_, T>,
) -> Result<(), Error> {
    let k = sec.len();
    check_range(k, &range, lambda.len(), &[&delta])?;
    let mut col = vec![T::zero(); k];
    for (idx, r) in range.enumerate() {
        lambda[idx] = solve_root(&sec.d, &sec.z, sec.rho, r, &mut col)?;
        let mut dst = delta.rb_mut().col_mut(idx);
        for j in 0..k {
            dst[j] = col[j];
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The iteration limit is enforced: a starved solver reports NoConvergence instead
    /// of returning an unconverged root.
    #[test]
    fn starved_solver_reports_no_convergence() {
        let d = [0.0, 1e-3, 0.5, 1.0, 2.0];
        let z = [0.5, 1e-6, 0.5, 0.5, 0.5];
        let mut delta = [0.0; 5];
        let mut failures = 0;
        for i in 0..5 {
            match solve_root_max_iter(&d, &z, 1.0, i, &mut delta, 1) {
                Err(Error::NoConvergence { .. }) => failures += 1,
                Err(e) => panic!("unexpected error {e}"),
                Ok(_) => {}
            }
            solve_root(&d, &z, 1.0, i, &mut delta).unwrap();
        }
        assert!(failures > 0);
    }
}
