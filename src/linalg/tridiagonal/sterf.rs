//! All eigenvalues of a symmetric tridiagonal matrix, no vectors: the root-free
//! QL/QR iteration of Pal, Walker and Kahan, organised as in LAPACK `dsterf`.
//!
//! The matrix is `T = tridiag(e, d, e)`, `d` the `n` diagonal entries and `e` the
//! `n - 1` off-diagonal entries. The iteration works on the squares `e_i^2`, so a
//! sweep needs no square roots (Pal-Walker-Kahan; see also Parlett, *The Symmetric
//! Eigenvalue Problem*, §8.15). Per unreduced block it scales by a power of two
//! into a range narrower than `dsterf`'s safe range (its `ssfmax`/`ssfmin`
//! device), because the step is reordered to keep one division on its
//! dependency chain and then forms products of three entries (see `pwk_ql`);
//! and it runs QL when the bottom end is the larger one and QR otherwise, so
//! graded matrices deflate at their small end first.
//!
//! This module also holds the helpers that [`super::steqr`] shares: argument
//! checks, the split test, block scaling and the symmetric 2x2 eigensolver.

use crate::error::Error;
use crate::linalg::blas::pow2::{exponent, scale_pow2};
use crate::scalar::Scalar;

/// Computes all eigenvalues of the symmetric tridiagonal matrix with diagonal `d`
/// (length `n`) and off-diagonal `e` (length `n - 1`), in place, sorted ascending
/// in `d`.
///
/// Follows LAPACK `dsterf` (Pal-Walker-Kahan root-free QL/QR): the matrix is split
/// where `|e_i| <= eps sqrt(|d_i|) sqrt(|d_i+1|)`, each unreduced block is scaled
/// (exactly, by a power of two) into a safe range, and QL or QR is chosen per
/// block by which end of its diagonal is larger in magnitude. At most `30 n`
/// sweeps are spent in total.
///
/// On return `e` is overwritten (workspace). On error the contents of `d` and `e`
/// are unspecified; no partial result is ever reported as a success.
///
/// # Errors
/// * [`Error::Shape`] if `n >= 1` and `e.len() != n - 1` (for `n == 0`, `e` is
///   ignored).
/// * [`Error::NonFinite`] if an entry is NaN or infinite (row/column refer to the
///   dense matrix).
/// * [`Error::NoConvergence`] if the iteration limit is reached, naming how many
///   off-diagonal entries were still nonzero; or if an eigenvalue overflows when
///   the block scaling is undone (entries within a factor of a few of the largest
///   finite number).
pub fn sterf<T: Scalar>(d: &mut [T], e: &mut [T]) -> Result<(), Error> {
    let n = d.len();
    check_tridiag("sterf", d, e)?;
    sterf_with_max_iter(d, e, 30 * n)
}

/// [`sterf`] with an explicit cap on the total number of QL/QR sweeps; the public
/// function uses `30 n`, as `dsterf` does. Tests use a tiny cap to prove that
/// non-convergence is reported. Arguments must already have been checked.
pub(crate) fn sterf_with_max_iter<T: Scalar>(
    d: &mut [T],
    e: &mut [T],
    max_iter: usize,
) -> Result<(), Error> {
    let n = d.len();
    if n <= 1 {
        return Ok(());
    }
    let c = Consts::<T>::new();
    let mut sweeps = 0usize;
    let mut start = 0usize;
    while start < n {
        let end = block_end(d, e, start);
        let blk_d = &mut d[start..=end];
        let blk_e = &mut e[start..end];
        start = end + 1;
        if blk_d.len() == 1 {
            continue;
        }
        let anorm = max_abs(blk_d).max(max_abs(blk_e));
        if anorm == T::zero() {
            // A zero block: its eigenvalues are its (zero) diagonal.
            continue;
        }
        // Scale by a power of two (exact) whenever the block's norm leaves
        // [2^-S, 2^S], S an eighth of the exponent range: the sweep's step
        // forms products of three entries (see `pwk_ql`), which must stay far
        // from overflow and underflow. This range lies inside dsterf's safe
        // range [ssfmin, ssfmax], which scales only past its ends.
        let k = pow2_exponent_to_scale::<T>(anorm);
        if k != 0 {
            scale_pow2(blk_d, k);
            scale_pow2(blk_e, k);
        }
        // The root-free sweep works on e_i^2 only.
        for x in blk_e.iter_mut() {
            *x = *x * *x;
        }
        // Choosing QR over QL is the same as running QL on the reversed block
        // (a permutation similarity), which leaves one sweep to maintain.
        if blk_d[blk_d.len() - 1].abs() < blk_d[0].abs() {
            blk_d.reverse();
            blk_e.reverse();
        }
        let ok = pwk_ql(blk_d, blk_e, &c, &mut sweeps, max_iter);
        if k != 0 {
            scale_pow2(blk_d, -k);
        }
        if !ok {
            return Err(no_convergence("sterf", e, max_iter));
        }
    }
    if let Some(i) = d.iter().position(|x| !x.is_finite()) {
        return Err(Error::NoConvergence {
            stage: "sterf",
            detail: format!(
                "eigenvalue {i} overflowed when the block scaling was undone (input too close to the overflow threshold)"
            ),
        });
    }
    d.sort_unstable_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    Ok(())
}

/// Pal-Walker-Kahan QL on one unreduced, scaled block whose off-diagonal holds
/// the squares `e2_i = e_i^2`. Deflates at the top (index 0) end. Returns `false`
/// when the shared sweep budget runs out before every eigenvalue is found.
fn pwk_ql<T: Scalar>(
    d: &mut [T],
    e2: &mut [T],
    c: &Consts<T>,
    sweeps: &mut usize,
    max_iter: usize,
) -> bool {
    let last = d.len() - 1;
    let two = T::of(2.0);
    let mut l = 0usize;
    while l <= last {
        // Smallest m >= l with a negligible e_m (in squared form; SAFE_MIN stops
        // stagnation when both neighbouring diagonal entries are zero: it is far
        // below eps^2 times the scaled block norm).
        let m = first_negligible(l, last, |m| {
            e2[m].abs() <= c.eps2 * (d[m] * d[m + 1]).abs() + T::SAFE_MIN
        });
        if m < last {
            e2[m] = T::zero();
        }
        if m == l {
            // d[l] is an eigenvalue.
            l += 1;
            continue;
        }
        if m == l + 1 {
            // A 2x2 block: solve it directly.
            let (a, b, _, _) = sym2x2(d[l], e2[l].sqrt(), d[l + 1]);
            d[l] = a;
            d[l + 1] = b;
            e2[l] = T::zero();
            l += 2;
            continue;
        }
        if *sweeps >= max_iter {
            return false;
        }
        *sweeps += 1;

        // Wilkinson shift from the leading 2x2 of the active block.
        let p = d[l];
        let rte = e2[l].sqrt();
        let mut sigma = (d[l + 1] - p) / (two * rte);
        let r = hypot_one(sigma);
        sigma = p - rte / (sigma + r.copysign(sigma));

        // One implicit QL sweep, bottom (m) to top (l), carrying the squared
        // quantities: `pp = gamma^2 / c` stands for the square of the bulge
        // element, so no square roots are taken (PWK's reformulation).
        let mut cc = T::one();
        let mut s = T::zero();
        let mut gamma = d[m] - sigma;
        let mut pp = gamma * gamma;
        for i in (l..m).rev() {
            let bb = e2[i];
            let r = pp + bb;
            if i + 1 != m {
                e2[i + 1] = s * r;
            }
            // The step of dsterf (cc = pp / r, s = bb / r, gamma = cc (alpha -
            // sigma) - s oldgam, pp = gamma^2 / cc) reordered so that only
            // one division sits on the sweep's dependency chain
            // (pp -> r -> 1/r -> gamma -> pp): with w = pp (alpha - sigma) -
            // bb oldgam = r gamma, which does not wait for the division,
            // gamma = w / r and gamma^2 / cc = gamma (w / pp), whose quotient
            // runs beside 1 / r.
            let rinv = T::one() / r;
            let oldc = cc;
            cc = pp * rinv;
            s = bb * rinv;
            let oldgam = gamma;
            let alpha = d[i];
            let w = pp * (alpha - sigma) - bb * oldgam;
            gamma = w * rinv;
            d[i + 1] = oldgam + (alpha - gamma);
            let fast = gamma * (w / pp);
            pp = if cc == T::zero() {
                oldc * bb
            } else if w.abs() >= c.w_min && fast.is_finite() {
                fast
            } else {
                // w near the underflow threshold (its products may have lost
                // bits), or a quotient overflowed: dsterf's own formula.
                gamma = cc * (alpha - sigma) - s * oldgam;
                d[i + 1] = oldgam + (alpha - gamma);
                gamma * gamma / cc
            };
        }
        e2[l] = s * pp;
        d[l] = sigma + gamma;
    }
    true
}

/// The smallest `m` in `l..last` with `negligible(m)`, or `last`: the split
/// search that starts every QL sweep. It looks at blocks of
/// [`SCAN_BLOCK`] entries with no early exit inside a block (a test per
/// entry, or-ed), so the tests of a block run side by side; only a block
/// that holds a hit is searched entry by entry. Which `m` it finds is the
/// entry-by-entry search's.
#[inline(always)]
pub(crate) fn first_negligible(l: usize, last: usize, negligible: impl Fn(usize) -> bool) -> usize {
    let mut m = l;
    while m + SCAN_BLOCK <= last {
        let mut any = false;
        for k in 0..SCAN_BLOCK {
            any |= negligible(m + k);
        }
        if any {
            break;
        }
        m += SCAN_BLOCK;
    }
    while m < last {
        if negligible(m) {
            return m;
        }
        m += 1;
    }
    last
}

/// Entries [`first_negligible`] tests per block.
const SCAN_BLOCK: usize = 8;

/// Machine constants of the scaled iteration (`dsterf`/`dsteqr`'s `eps2`,
/// `ssfmax`, `ssfmin`).
pub(crate) struct Consts<T> {
    /// `eps^2`.
    pub(crate) eps2: T,
    /// Upper limit of the safe range: `sqrt(1/safmin) / 3`, so products of two
    /// entries (and the small multiples formed in a sweep) stay finite.
    ssfmax: T,
    /// Lower limit: `sqrt(safmin) / eps^2`, so squares of entries, even
    /// multiplied by `eps^2`, stay above the underflow threshold.
    ssfmin: T,
    /// `safmin / eps`: a `w` of [`pwk_ql`]'s step at least this large is
    /// exact to a relative `eps` although its products may be subnormal.
    w_min: T,
}

impl<T: Scalar> Consts<T> {
    pub(crate) fn new() -> Self {
        let safmin = T::SAFE_MIN;
        let eps2 = T::EPS * T::EPS;
        Self {
            eps2,
            ssfmax: (T::one() / safmin).sqrt() / T::of(3.0),
            ssfmin: safmin.sqrt() / eps2,
            w_min: safmin / T::EPS,
        }
    }

    /// The norm a block with max-norm `anorm` should be scaled to, if any.
    pub(crate) fn scale_target(&self, anorm: T) -> Option<T> {
        if anorm > self.ssfmax {
            Some(self.ssfmax)
        } else if anorm < self.ssfmin {
            Some(self.ssfmin)
        } else {
            None
        }
    }
}

/// The `k` for which `2^k anorm` lies in `[2^-S, 2^S]`, `S` an eighth of
/// the exponent range (127 in f64, 15 in f32), or 0 when `anorm` already
/// does; `anorm` is positive and finite.
fn pow2_exponent_to_scale<T: Scalar>(anorm: T) -> i32 {
    let s = -exponent(T::SAFE_MIN.f64()) / 8;
    let e = exponent(anorm.f64());
    if e > s || e < -s {
        -e
    } else {
        0
    }
}

/// Checks `e.len() + 1 == d.len()` (for `n >= 1`) and that all entries are finite.
pub(crate) fn check_tridiag<T: Scalar>(stage: &str, d: &[T], e: &[T]) -> Result<(), Error> {
    let n = d.len();
    if n == 0 {
        return Ok(());
    }
    if e.len() + 1 != n {
        return Err(Error::Shape(format!(
            "{stage}: diagonal has {n} entries, so the off-diagonal needs {} but has {}",
            n - 1,
            e.len()
        )));
    }
    if let Some(i) = d.iter().position(|x| !x.is_finite()) {
        return Err(Error::NonFinite {
            row: i,
            col: i,
            value: format!("{}", d[i]),
        });
    }
    if let Some(i) = e.iter().position(|x| !x.is_finite()) {
        return Err(Error::NonFinite {
            row: i + 1,
            col: i,
            value: format!("{}", e[i]),
        });
    }
    Ok(())
}

/// Last index of the unreduced block starting at `start`: the first `m >= start`
/// whose `e_m` is negligible next to its diagonal neighbours (`|e_m| <= eps
/// sqrt|d_m| sqrt|d_m+1|`, the `dsterf`/`dsteqr` split test; the square roots keep
/// the product from under- or overflowing). Negligible entries are set to zero,
/// as is the entry just above the block, so a later error count sees only real
/// non-convergence.
pub(crate) fn block_end<T: Scalar>(d: &[T], e: &mut [T], start: usize) -> usize {
    let n = d.len();
    if start > 0 {
        e[start - 1] = T::zero();
    }
    let mut m = start;
    while m + 1 < n {
        let x = e[m].abs();
        if x == T::zero() || x <= d[m].abs().sqrt() * d[m + 1].abs().sqrt() * T::EPS {
            e[m] = T::zero();
            break;
        }
        m += 1;
    }
    m
}

/// Largest magnitude in `x` (0 for an empty slice).
pub(crate) fn max_abs<T: Scalar>(x: &[T]) -> T {
    x.iter().fold(T::zero(), |acc, v| acc.max(v.abs()))
}

/// Multiplies `x` by `to / from` without forming an overflowing or underflowing
/// ratio (the job of LAPACK `dlascl` here). `from` and `to` are positive and
/// finite; `|x_i| <= max(from, to)` as for a block and its norm.
pub(crate) fn scale<T: Scalar>(x: &mut [T], from: T, to: T) {
    let f = to / from;
    if f.is_finite() && f >= T::SAFE_MIN {
        for v in x.iter_mut() {
            *v *= f;
        }
    } else {
        // e.g. f32 with `from` subnormal: the ratio itself would overflow. Two
        // half-steps each stay in range, and so do the intermediate products.
        let g = to.sqrt() / from.sqrt();
        for v in x.iter_mut() {
            *v = *v * g * g;
        }
    }
}

/// `sqrt(x^2 + 1)`, as `x.hypot(1)` but without libm's general `hypot` (a
/// call of tens of cycles, once per QL/QR sweep and per 2 x 2 block; at
/// n = 8 it was 8% of an eigendecomposition). For `|x| >= 1 / eps`, `x^2 + 1`
/// rounds to `x^2`, whose root is `|x|` to within rounding, so `|x|` is
/// returned and `x^2` is never formed where it could overflow; below that,
/// `x^2 + 1 <= eps^-2 + 1` is far from overflow and the root is within an ulp
/// or so of `hypot`'s. NaN gives NaN and an infinity `+inf`, as `hypot` does.
#[inline]
pub(crate) fn hypot_one<T: Scalar>(x: T) -> T {
    let a = x.abs();
    if a >= T::one() / T::EPS {
        a
    } else {
        (x * x + T::one()).sqrt()
    }
}

/// Eigendecomposition of the symmetric 2x2 `[[a, b], [b, c]]` by one Jacobi
/// rotation (Golub & Van Loan, *Matrix Computations*, Alg. 8.5.1 `sym.schur2`).
///
/// Returns `(lam1, lam2, cs, sn)` with `J^T A J = diag(lam1, lam2)` for
/// `J = [[cs, sn], [-sn, cs]]`: `(cs, -sn)` is the eigenvector of `lam1` and
/// `(sn, cs)` that of `lam2`. The rotation is the smaller of the two
/// (`|sn| <= |cs|`), so `lam1` stays next to `a` and `lam2` next to `c`.
pub(crate) fn sym2x2<T: Scalar>(a: T, b: T, c: T) -> (T, T, T, T) {
    if b == T::zero() {
        return (a, c, T::one(), T::zero());
    }
    let tau = (c - a) / (T::of(2.0) * b);
    // t = tan(theta), the smaller root of t^2 + 2 tau t - 1 = 0; `hypot_one`
    // keeps it finite for huge tau (then t ~ 1 / (2 tau)).
    let t = T::one().copysign(tau) / (tau.abs() + hypot_one(tau));
    let cs = T::one() / hypot_one(t);
    let sn = t * cs;
    (a - t * b, c + t * b, cs, sn)
}

/// The error for a spent sweep budget: counts the off-diagonal entries that are
/// still nonzero (as `dsterf`/`dsteqr` report in `info`).
pub(crate) fn no_convergence<T: Scalar>(stage: &'static str, e: &[T], max_iter: usize) -> Error {
    let left = e.iter().filter(|x| **x != T::zero()).count();
    Error::NoConvergence {
        stage,
        detail: format!(
            "{left} of {} off-diagonal entries had not converged to zero after {max_iter} QL/QR sweeps",
            e.len()
        ),
    }
}

#[cfg(test)]
pub(crate) mod tests;
