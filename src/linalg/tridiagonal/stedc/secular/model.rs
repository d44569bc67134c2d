//! The scalar steps of the secular solver: the roots of a two-pole model's
//! quadratic, the admissible one among them, and the safeguarding bisection
//! (Li 1993; LAPACK `dlaed4`'s fallbacks, here with an explicit bracket).

use super::c;
use crate::scalar::Scalar;

/// The two roots of `cq x^2 - a x + b = 0`, computed without cancellation.
pub(super) fn quad_roots<T: Scalar>(cq: T, a: T, b: T) -> [Option<T>; 2] {
    let zero = T::zero();
    if cq == zero {
        if a == zero {
            return [None, None];
        }
        return [Some(b / a), None];
    }
    let disc = (a * a - c::<T>(4.0) * b * cq).max(zero);
    let sq = disc.sqrt();
    let qv = if a >= zero {
        (a + sq) * c::<T>(0.5)
    } else {
        (a - sq) * c::<T>(0.5)
    };
    let r1 = qv / cq;
    let r2 = if qv != zero { Some(b / qv) } else { None };
    [
        Some(r1).filter(|x| x.is_finite()),
        r2.filter(|x| x.is_finite()),
    ]
}

/// A point strictly inside `(lo, hi)`: geometric mean when the bracket spans more than a
/// factor two on one side of zero (so tiny roots next to a pole are found in a bounded
/// number of steps), arithmetic midpoint otherwise. `None` if the bracket is collapsed.
pub(super) fn bisect<T: Scalar>(lo: T, hi: T, geometric: bool) -> Option<T> {
    let zero = T::zero();
    let two = c::<T>(2.0);
    let cand = if !geometric {
        None
    } else if lo >= zero && hi > two * lo {
        let base = if lo == zero { T::SAFE_MIN } else { lo };
        Some(base.sqrt() * hi.sqrt())
    } else if hi <= zero && lo < two * hi {
        let base = if hi == zero { T::SAFE_MIN } else { -hi };
        Some(-(base.sqrt() * (-lo).sqrt()))
    } else {
        None
    };
    if let Some(m) = cand {
        if m > lo && m < hi {
            return Some(m);
        }
    }
    let m = lo + (hi - lo) * c::<T>(0.5);
    if m > lo && m < hi {
        Some(m)
    } else {
        None
    }
}

/// Picks the root of the model quadratic that is admissible: strictly inside
/// `(lo_ok, hi_ok)` (the model's own pole interval), smallest in magnitude if both are.
pub(super) fn pick<T: Scalar>(roots: [Option<T>; 2], lo_ok: T, hi_ok: T) -> Option<T> {
    let mut best: Option<T> = None;
    for r in roots.into_iter().flatten() {
        if r > lo_ok && r < hi_ok && best.is_none_or(|b| r.abs() < b.abs()) {
            best = Some(r);
        }
    }
    best
}
