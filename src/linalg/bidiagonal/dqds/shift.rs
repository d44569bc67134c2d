//! The shift strategy of dqds (Parlett & Marques 2000, the cases of LAPACK
//! `dlasq4`): a lower bound for the smallest eigenvalue of the current `L L^T`
//! block, as close to it as the available information allows.
//!
//! What a dqds step leaves behind: `dmin`, the smallest of the auxiliary `d_k`, is
//! an upper bound on the smallest eigenvalue `lambda` (`1/d_k` is a diagonal entry
//! of the inverse), and `dmin / n` a lower bound. When the minimum sits at the bottom
//! (`dn`, `dn1` or `dn2`), the last rows nearly hold an eigenpair, and a sharper
//! estimate follows from the bottom 2x2 or 3x3 corner: a Gershgorin-type gap bound
//! (cases 2-3), or a Rayleigh-quotient-type bound `gam (1 - sqrt(a2)) / (1 + a2)`,
//! where `a2` estimates the squared norm of the rest of the approximate eigenvector
//! from ratios `e_k / q_k` (cases 4-5, 7-8, 10). Otherwise fixed fractions of `dmin`
//! are used (cases 6, 9, 11); case 6 grows its fraction `g` while it keeps
//! succeeding. Right after deflating more than two eigenvalues, no shift (12). A
//! negative `dmin` means: shift by `-dmin` (case 1; the first step of a block, or no
//! shift after a reversal).
//!
//! Whenever a ratio `e_k / q_k` exceeds one the estimate is abandoned and the case's
//! safe fraction of `dmin` is used.

use crate::scalar::Scalar;

/// Per-iteration shift bookkeeping (what LAPACK keeps in `ttype` and `g`).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ShiftState<T> {
    /// Which of the shift cases of [`choose`] produced the last shift.
    pub(super) case: u8,
    /// Failed attempts of the last iteration: only the last `d` negative (late) or
    /// an earlier one (early).
    pub(super) late: u8,
    pub(super) early: u8,
    /// Fraction of `dmin` used when nothing better is known (case 6).
    pub(super) g: T,
}

/// What the strategy reads of the iteration: the smallest `d` and the last
/// three `d` of the last transform (as in the qd module's `Sweep`), and the
/// newest (`q`, `e`) and the previous (`q_old`, `e_old`) qd arrays.
pub(super) struct Inputs<'a, T> {
    pub(super) dmin: T,
    pub(super) dmin1: T,
    pub(super) dmin2: T,
    pub(super) dn: T,
    pub(super) dn1: T,
    pub(super) dn2: T,
    pub(super) q: &'a [T],
    pub(super) e: &'a [T],
    pub(super) q_old: &'a [T],
    pub(super) e_old: &'a [T],
}

impl<T: Scalar> Inputs<'_, T> {
    fn qc(&self, k: usize) -> T {
        self.q[k]
    }
    fn ec(&self, k: usize) -> T {
        self.e[k]
    }
    fn qo(&self, k: usize) -> T {
        self.q_old[k]
    }
    fn eo(&self, k: usize) -> T {
        self.e_old[k]
    }
}

/// Returns `(shift, case)` for the block `i0..=l` of the qd array read
/// through `qd`, of which `deflated` eigenvalues were just removed at the
/// bottom. Updates the case-6 fraction in `state`.
pub(super) fn choose<T: Scalar>(
    qd: &Inputs<'_, T>,
    state: &mut ShiftState<T>,
    i0: usize,
    l: usize,
    deflated: usize,
) -> (T, u8) {
    let (dmin, dmin1, dmin2, dn, dn1, dn2) = (qd.dmin, qd.dmin1, qd.dmin2, qd.dn, qd.dn1, qd.dn2);
    let zero = T::zero();
    let one = T::one();
    let quarter = T::of(0.25);
    let third = T::of(0.333);
    let half = T::of(0.5);
    // Thresholds of the Rayleigh-quotient estimates (dlasq4's CNST1..3).
    let c1 = T::of(0.563);
    let c2 = T::of(1.01);
    let c3 = T::of(1.05);
    if dmin <= zero {
        return (-dmin, 1);
    }
    let (qc, ec) = (|k: usize| qd.qc(k), |k: usize| qd.ec(k));
    let rq = |gam: T, a2: T| gam * (one - a2.sqrt()) / (one + a2);
    match deflated {
        0 if dmin == dn || dmin == dn1 => {
            let b1 = qc(l).sqrt() * ec(l - 1).sqrt();
            let b2 = qc(l - 1).sqrt() * ec(l - 2).sqrt();
            let a2 = qc(l - 1) + ec(l - 1);
            if dmin == dn && dmin1 == dn1 {
                // Cases 2 and 3: the bottom 2x2 is nearly decoupled; gap bounds.
                let gap2 = dmin2 - a2 - dmin2 * quarter;
                let gap1 = if gap2 > zero && gap2 > b2 {
                    a2 - dn - (b2 / gap2) * b2
                } else {
                    a2 - dn - (b1 + b2)
                };
                if gap1 > zero && gap1 > b1 {
                    return ((dn - (b1 / gap1) * b1).max(half * dmin), 2);
                }
                let mut s = zero;
                if dn > b1 {
                    s = dn - b1;
                }
                if a2 > b1 + b2 {
                    s = s.min(a2 - (b1 + b2));
                }
                return (s.max(third * dmin), 3);
            }
            // Case 4.
            let safe = quarter * dmin;
            let (gam, a2, b2, from) = if dmin == dn {
                if ec(l - 1) > qc(l - 1) {
                    return (safe, 4);
                }
                (dn, zero, ec(l - 1) / qc(l - 1), l.checked_sub(2))
            } else {
                if qd.eo(l - 1) > qd.qo(l) || ec(l - 2) > qc(l - 2) {
                    return (safe, 4);
                }
                (
                    dn1,
                    qd.eo(l - 1) / qd.qo(l),
                    ec(l - 2) / qc(l - 2),
                    l.checked_sub(3),
                )
            };
            let Some(a2) = tail(qd, a2 + b2, b2, from, i0, true) else {
                return (safe, 4);
            };
            let a2 = c3 * a2;
            (if a2 < c1 { rq(gam, a2) } else { safe }, 4)
        }
        0 if dmin == dn2 => {
            // Case 5: the minimum two rows above the bottom.
            let safe = quarter * dmin;
            let (b1, b2) = (qd.qo(l), qd.qo(l - 1));
            if qd.eo(l - 2) > b2 || qd.eo(l - 1) > b1 {
                return (safe, 5);
            }
            let mut a2 = (qd.eo(l - 2) / b2) * (one + qd.eo(l - 1) / b1);
            if l - i0 > 2 {
                let b2 = ec(l - 3) / qc(l - 3);
                let Some(sum) = tail(qd, a2 + b2, b2, l.checked_sub(4), i0, true) else {
                    return (safe, 5);
                };
                a2 = c3 * sum;
            }
            (if a2 < c1 { rq(dn2, a2) } else { safe }, 5)
        }
        0 => {
            // Case 6: no information; grow the fraction while it keeps working.
            let sh = *state;
            state.g = match (sh.case, sh.late, sh.early) {
                (6, 0, 0) => sh.g + third * (one - sh.g),
                (6, 0, 1) => quarter * third,
                _ => quarter,
            };
            (state.g * dmin, 6)
        }
        1 if dmin1 == dn1 && dmin2 == dn2 => {
            // Cases 7 and 8: one eigenvalue just deflated, the minimum is now at
            // the bottom.
            let s = third * dmin1;
            match bottom_estimate(qd, l, i0, dmin1) {
                None => (s, 7),
                Some((a2, b2)) => {
                    let gap2 = half * dmin2 - a2;
                    if gap2 > zero && gap2 > b2 * a2 {
                        (s.max(a2 * (one - c2 * a2 * (b2 / gap2) * b2)), 7)
                    } else {
                        (s.max(a2 * (one - c2 * b2)), 8)
                    }
                }
            }
        }
        1 => (
            if dmin1 == dn1 {
                half * dmin1
            } else {
                quarter * dmin1
            },
            9,
        ),
        2 if dmin2 == dn2 && T::of(2.0) * ec(l - 1) < qc(l - 1) => {
            // Case 10: two eigenvalues just deflated.
            let s = third * dmin2;
            match bottom_estimate(qd, l, i0, dmin2) {
                None => (s, 10),
                Some((a2, b2)) => {
                    let gap2 = qc(l - 1) + ec(l - 2) - qc(l - 2).sqrt() * ec(l - 2).sqrt() - a2;
                    if gap2 > zero && gap2 > b2 * a2 {
                        (s.max(a2 * (one - c2 * a2 * (b2 / gap2) * b2)), 10)
                    } else {
                        (s.max(a2 * (one - c2 * b2)), 10)
                    }
                }
            }
        }
        2 => (quarter * dmin2, 11),
        _ => (zero, 12),
    }
}

/// Shared part of cases 7, 8 and 10: with `a2` the sum of products of the ratios
/// `e_k / q_k` from the bottom up, returns `(gam / (1 + b2^2), b2)`, `b2 =
/// sqrt(1.05 a2)`, or `None` if a ratio exceeds one.
fn bottom_estimate<T: Scalar>(qd: &Inputs<'_, T>, l: usize, i0: usize, gam: T) -> Option<(T, T)> {
    if qd.ec(l - 1) > qd.qc(l - 1) {
        return None;
    }
    let b1 = qd.ec(l - 1) / qd.qc(l - 1);
    let sum = tail(qd, b1, b1, l.checked_sub(2), i0, false)?;
    let b2 = (T::of(1.05) * sum).sqrt();
    Some((gam / (T::one() + b2 * b2), b2))
}

/// Adds to `sum` the terms `term * prod e_k / q_k` for `k = from, from - 1, ..., i0`
/// (each term the previous one times the next ratio) until they stop mattering
/// (`100 max(term, previous) < sum`, or with `cap` the sum exceeds the useful 0.563).
/// `None` if a ratio exceeds one.
fn tail<T: Scalar>(
    qd: &Inputs<'_, T>,
    mut sum: T,
    mut term: T,
    from: Option<usize>,
    i0: usize,
    cap: bool,
) -> Option<T> {
    let Some(from) = from else {
        return Some(sum);
    };
    if from < i0 {
        return Some(sum);
    }
    let hundred = T::of(100.0);
    let c1 = T::of(0.563);
    for k in (i0..=from).rev() {
        if term == T::zero() {
            break;
        }
        let prev = term;
        if qd.ec(k) > qd.qc(k) {
            return None;
        }
        term *= qd.ec(k) / qd.qc(k);
        sum += term;
        if hundred * term.max(prev) < sum || (cap && c1 < sum) {
            break;
        }
    }
    Some(sum)
}
