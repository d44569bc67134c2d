//! Singular values of a real upper bidiagonal matrix by the dqds algorithm: the
//! differential quotient-difference algorithm with shifts of Fernando & Parlett
//! (1994, "Accurate singular values and differential qd algorithms"), organised as
//! in Parlett & Marques (2000, "An implementation of the dqds algorithm (positive
//! case)"), the design LAPACK `dlasq1`–`dlasq6` realise.
//!
//! # Method
//!
//! For `B` with diagonal `a_i` and superdiagonal `b_i`, the squares `q_i = a_i^2`,
//! `e_i = b_i^2` (the *qd array*) determine `B^T B`, whose eigenvalues are the
//! squared singular values. One dqds transform with shift `tau`,
//!
//! ```text
//! d = q_0 - tau
//! q'_k = d + e_k,  t = q_{k+1} / q'_k,  e'_k = e_k t,  d = d t - tau,  q'_{n-1} = d
//! ```
//!
//! maps the array of `L L^T` to that of `L' L'^T = L^T L - tau I` using only
//! products, quotients and one subtraction of the shift from a positive quantity,
//! so every entry keeps high relative accuracy as long as all `d` stay positive
//! (Fernando–Parlett). The accumulated shift `sigma` is added back when an
//! eigenvalue deflates at the bottom, which makes every computed singular value
//! accurate relative to itself, however small.
//!
//! The pieces, in this file, `qd` and `shift`:
//! * the matrix is scaled by a power of two so that its largest entry is about
//!   `sqrt(eps / safmin)` (exact; then the squares can neither overflow nor
//!   underflow harmfully, as in `dlasq1`);
//! * two zero-shift passes with Li's backward test find negligible `e_k` early;
//! * per unreduced block (bottom block first): a flip when the smallest entries sit
//!   at the top, a Gershgorin-type first shift, then iterations of
//!   deflate-at-the-bottom (one or two eigenvalues) and one dqds step with a shift
//!   from `shift::choose`; a failed step (some `d < 0`: shift too large) is
//!   retried with a smaller shift, finally with the guarded zero-shift dqd;
//! * splits inside a block are searched whenever the smallest `e` is tiny.
//!
//! Two copies of the array are kept (new and previous iterate, as LAPACK's
//! "ping-pong"): some deflation and split tests compare the two.

mod qd;
mod shift;

use qd::Qd;

use crate::error::Error;
use crate::linalg::blas::pow2::{exponent, scale_pow2};
use crate::scalar::Scalar;

/// Iteration budget per row of a block, for each visit of the block (`dlasq2`
/// allows `100 n` dqds steps per unreduced block).
const STEPS_PER_ROW: usize = 100;

/// Checks the shape (`e.len() == n - 1` for `n >= 1`) and finiteness of a bidiagonal
/// matrix. `NonFinite` positions are those of the dense matrix: `d_i` at `(i, i)`,
/// `e_i` at `(i, i + 1)`.
pub(crate) fn check_bidiagonal<T: Scalar>(stage: &str, d: &[T], e: &[T]) -> Result<(), Error> {
    let n = d.len();
    if n > 0 && e.len() + 1 != n {
        return Err(Error::Shape(format!(
            "{stage}: diagonal has {n} entries, so the superdiagonal needs {} but has {}",
            n - 1,
            e.len()
        )));
    }
    let bad = |x: &T| !x.is_finite();
    if let Some(i) = d.iter().position(bad) {
        return Err(Error::NonFinite {
            row: i,
            col: i,
            value: format!("{}", d[i]),
        });
    }
    if let Some(i) = e.iter().position(bad) {
        return Err(Error::NonFinite {
            row: i,
            col: i + 1,
            value: format!("{}", e[i]),
        });
    }
    Ok(())
}

/// All singular values, descending, of the upper bidiagonal matrix with diagonal `d`
/// (length `n`) and superdiagonal `e` (length `n - 1`; ignored for `n = 0`), each to
/// high relative accuracy (a few ulps of itself times a modest function of `n`)
/// wherever the entries are within the scaled range (largest over smallest nonzero
/// magnitude below about `2^990` in f64, `2^100` in f32).
///
/// # Errors
/// [`Error::Shape`] for inconsistent lengths, [`Error::NonFinite`] for NaN/infinite
/// entries, [`Error::NoConvergence`] (stage `"dqds"`) if a block needs more than
/// `100` dqds steps per row, or if a singular value overflows when the scaling is
/// undone (input within a factor of a few of the largest finite number).
pub fn singular_values<T: Scalar>(d: &[T], e: &[T]) -> Result<Vec<T>, Error> {
    check_bidiagonal("dqds", d, e)?;
    singular_values_with_budget(d, e, STEPS_PER_ROW)
}

/// [`singular_values`] with an explicit step budget per row of a block (tests
/// prove with `0` that non-convergence is reported). Arguments must be checked.
pub(crate) fn singular_values_with_budget<T: Scalar>(
    d: &[T],
    e: &[T],
    steps_per_row: usize,
) -> Result<Vec<T>, Error> {
    let n = d.len();
    match n {
        0 => return Ok(Vec::new()),
        1 => return Ok(vec![d[0].abs()]),
        2 => {
            let (smin, smax) = las2(d[0], e[0], d[1]);
            return Ok(vec![smax, smin]);
        }
        _ => {}
    }
    // Singular values do not depend on the signs of the entries.
    let mut a: Vec<T> = d.iter().map(|x| x.abs()).collect();
    let mut b: Vec<T> = e[..n - 1].iter().map(|x| x.abs()).collect();
    let bmax = b.iter().fold(T::zero(), |m, &x| m.max(x));
    if bmax == T::zero() {
        a.sort_by(|x, y| y.partial_cmp(x).unwrap_or(std::cmp::Ordering::Equal));
        return Ok(a);
    }
    let amax = a.iter().fold(bmax, |m, &x| m.max(x));
    // Largest entry to just below sqrt(eps / safmin) by a power of two (exact),
    // so that the squares have room above and below (dlasq1's scaling).
    let target = (T::EPS / T::SAFE_MIN).sqrt();
    let k = exponent(target.f64()) - exponent(amax.f64()) - 1;
    scale_pow2(&mut a, k);
    scale_pow2(&mut b, k);
    let q: Vec<T> = a.iter().map(|&x| x * x).collect();
    let e2: Vec<T> = b.iter().map(|&x| x * x).collect();
    let mut qd = Qd::new(q, e2);
    qd.run(steps_per_row)?;
    let mut s: Vec<T> = qd.lam.iter().map(|x| x.sqrt()).collect();
    scale_pow2(&mut s, -k);
    if let Some(i) = s.iter().position(|x| !x.is_finite()) {
        return Err(Error::NoConvergence {
            stage: "dqds",
            detail: format!(
                "singular value {i} overflowed when the scaling was undone (input too close to the overflow threshold)"
            ),
        });
    }
    s.sort_by(|x, y| y.partial_cmp(x).unwrap_or(std::cmp::Ordering::Equal));
    Ok(s)
}

/// Singular values `(smin, smax)` of the upper triangular `[[f, g], [0, h]]`, both to
/// high relative accuracy and without overflow (the job of LAPACK `dlas2`).
///
/// With `F = max(|f|, |h|)`, `H = min(|f|, |h|)`, `G = |g|`: `smax smin = F H` and
/// `(smax +- smin)^2 = (F +- H)^2 + G^2`, so `smax = (sqrt((F+H)^2+G^2) +
/// sqrt((F-H)^2+G^2)) / 2` and `smin = F H / smax`, each sum formed from ratios
/// at most one.
pub(crate) fn las2<T: Scalar>(f: T, g: T, h: T) -> (T, T) {
    let zero = T::zero();
    let one = T::one();
    let two = T::of(2.0);
    let (fa, ga, ha) = (f.abs(), g.abs(), h.abs());
    let big = fa.max(ha);
    let small = fa.min(ha);
    if small == zero {
        let smax = if big == zero {
            ga
        } else {
            let (x, y) = (big.max(ga), big.min(ga));
            x * (one + (y / x) * (y / x)).sqrt()
        };
        return (zero, smax);
    }
    let plus = one + small / big;
    let minus = (big - small) / big;
    if ga < big {
        let gr = (ga / big) * (ga / big);
        let c = two / ((plus * plus + gr).sqrt() + (minus * minus + gr).sqrt());
        (small * c, big / c)
    } else {
        let r = big / ga;
        if r == zero {
            // g dominates beyond the exponent range of the ratio.
            ((small * big) / ga, ga)
        } else {
            let c = one
                / ((one + (plus * r) * (plus * r)).sqrt()
                    + (one + (minus * r) * (minus * r)).sqrt());
            let smin = (small * c) * r;
            (smin + smin, ga / (c + c))
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
