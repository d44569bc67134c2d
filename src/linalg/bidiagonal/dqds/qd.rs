//! The qd array of one problem and the iteration on it (`dlasq2`, `dlasq3`,
//! `dlasq5`, `dlasq6` of LAPACK in purpose): the transforms, deflation at the bottom,
//! flips, splits and the retry logic after a failed shift.

use super::shift::{self, ShiftState};
use crate::error::Error;
use crate::scalar::Scalar;

/// Result of one transform of a block (the `dlasq5`/`dlasq6` outputs).
#[derive(Clone, Copy, Debug)]
pub(super) struct Sweep<T> {
    /// Smallest `d` over the whole block, over all but the last, all but the last two.
    pub(super) dmin: T,
    pub(super) dmin1: T,
    pub(super) dmin2: T,
    /// The last three `d`.
    pub(super) dn: T,
    pub(super) dn1: T,
    pub(super) dn2: T,
    /// Smallest new `e`.
    pub(super) emin: T,
    /// A NaN appeared (a zero pivot: retry without shift, then guarded).
    pub(super) nan: bool,
}

/// One dqds transform (`guarded = false`, shift `tau`) or guarded dqd (`guarded`:
/// no shift, quotients formed so that they cannot under- or overflow, `dlasq6`) of
/// the block `i0..=last` (at least three rows) from `(q, e)` into `(qq, ee)`. Stops
/// at the first negative `d`; then `dmin < 0` and `dmin1 < 0` unless only the last
/// `d` is negative.
#[allow(clippy::too_many_arguments)]
fn transform<T: Scalar>(
    q: &[T],
    e: &[T],
    qq: &mut [T],
    ee: &mut [T],
    i0: usize,
    last: usize,
    tau: T,
    dthresh: T,
    guarded: bool,
) -> Sweep<T> {
    let zero = T::zero();
    let safmin = T::SAFE_MIN;
    let mut d = q[i0] - tau;
    let mut out = Sweep {
        dmin: d,
        dmin1: -q[i0],
        dmin2: -q[i0],
        dn: d,
        dn1: zero,
        dn2: zero,
        emin: T::infinity(),
        nan: false,
    };
    if d < zero {
        return out;
    }
    for k in i0..last {
        if k + 2 == last {
            out.dn2 = d;
            out.dmin2 = out.dmin;
        }
        if k + 1 == last {
            out.dn1 = d;
            out.dmin1 = out.dmin;
        }
        let qhat = d + e[k];
        qq[k] = qhat;
        if !guarded {
            let t = q[k + 1] / qhat;
            if t >= safmin {
                ee[k] = e[k] * t;
                d = d * t - tau;
            } else {
                // A tiny q_{k+1} (typically a converged value at the bottom): the
                // quotient alone would underflow although the products do not
                // (LAPACK dlasq5 forms its last two steps this way for this reason).
                ee[k] = q[k + 1] * (e[k] / qhat);
                d = q[k + 1] * (d / qhat) - tau;
            }
            // With no shift, a d below eps * sigma cannot change any eigenvalue
            // sigma + lambda; flushing it speeds up deflation (LAPACK 3.7 dlasq5).
            if tau == zero && d < dthresh {
                d = zero;
            }
        } else if qhat == zero {
            ee[k] = zero;
            d = q[k + 1];
            out.dmin = d;
        } else if safmin * q[k + 1] < qhat && safmin * qhat < q[k + 1] {
            let t = q[k + 1] / qhat;
            ee[k] = e[k] * t;
            d *= t;
        } else {
            ee[k] = q[k + 1] * (e[k] / qhat);
            d = q[k + 1] * (d / qhat);
        }
        out.emin = out.emin.min(ee[k]);
        if d.is_nan() {
            out.nan = true;
            return out;
        }
        out.dmin = out.dmin.min(d);
        if d < zero {
            if k + 1 < last {
                out.dmin1 = d;
            }
            out.dn = d;
            return out;
        }
    }
    qq[last] = d;
    out.dn = d;
    out
}

/// The qd array of one problem and the state of the iteration.
pub(super) struct Qd<T> {
    pub(super) n: usize,
    /// `q[c]`, `e[c]`: copy `c` of the array; `cur` is the newest iterate, the other
    /// copy the one before it.
    pub(super) q: [Vec<T>; 2],
    pub(super) e: [Vec<T>; 2],
    pub(super) cur: usize,
    /// `split[k] = Some(sigma)` once `e_k` was found negligible, with the shift
    /// accumulated at that moment (the starting shift of the block above).
    pub(super) split: Vec<Option<T>>,
    /// Converged eigenvalues of `B^T B` by position.
    pub(super) lam: Vec<T>,
    pub(super) sigma: T,
    /// Compensation term of the running sum `sigma` (Kahan summation).
    pub(super) desig: T,
    /// The last successful transform (its `dmin <= 0` forces that shift next).
    pub(super) last: Sweep<T>,
    pub(super) shift: ShiftState<T>,
    pub(super) qmax: T,
    /// Smallest `e` of the newest and of the previous transform.
    pub(super) emin_new: T,
    pub(super) emin_old: T,
}

fn tol2<T: Scalar>() -> T {
    let tol = T::of(100.0) * T::EPS;
    tol * tol
}

impl<T: Scalar> Qd<T> {
    pub(super) fn new(q: Vec<T>, e: Vec<T>) -> Self {
        let n = q.len();
        let zero = T::zero();
        Self {
            n,
            q: [q.clone(), q],
            e: [e.clone(), e],
            cur: 0,
            split: vec![None; n - 1],
            lam: vec![zero; n],
            sigma: zero,
            desig: zero,
            last: Sweep {
                dmin: zero,
                dmin1: zero,
                dmin2: zero,
                dn: zero,
                dn1: zero,
                dn2: zero,
                emin: zero,
                nan: false,
            },
            shift: ShiftState::default(),
            qmax: zero,
            emin_new: zero,
            emin_old: zero,
        }
    }

    pub(super) fn qc(&self, k: usize) -> T {
        self.q[self.cur][k]
    }
    pub(super) fn ec(&self, k: usize) -> T {
        self.e[self.cur][k]
    }
    pub(super) fn eo(&self, k: usize) -> T {
        self.e[1 - self.cur][k]
    }

    /// The shift for the block `i0..=l`, of which `deflated` eigenvalues were
    /// just removed at the bottom ([`shift::choose`] on this array and the
    /// last transform).
    fn choose_shift(&mut self, i0: usize, l: usize, deflated: usize) -> (T, u8) {
        let s = self.last;
        let inputs = shift::Inputs {
            dmin: s.dmin,
            dmin1: s.dmin1,
            dmin2: s.dmin2,
            dn: s.dn,
            dn1: s.dn1,
            dn2: s.dn2,
            q: &self.q[self.cur],
            e: &self.e[self.cur],
            q_old: &self.q[1 - self.cur],
            e_old: &self.e[1 - self.cur],
        };
        shift::choose(&inputs, &mut self.shift, i0, l, deflated)
    }

    fn mark_split(&mut self, k: usize, sigma: T) {
        self.split[k] = Some(sigma);
        self.e[0][k] = T::zero();
        self.e[1][k] = T::zero();
    }

    /// Reverses the block `i0..=last` in both copies: the reversed array is that of
    /// `J B^T J`, which has the same singular values.
    fn reverse(&mut self, i0: usize, last: usize) {
        for c in 0..2 {
            self.q[c][i0..=last].reverse();
            self.e[c][i0..last].reverse();
        }
    }

    /// The whole algorithm on the scaled array; eigenvalues land in `lam`.
    pub(super) fn run(&mut self, steps_per_row: usize) -> Result<(), Error> {
        let n = self.n;
        let tol2 = tol2::<T>();
        let cbias = T::of(1.5);
        if cbias * self.qc(0) < self.qc(n - 1) {
            self.reverse(0, n - 1);
        }
        self.li_passes();

        let mut end = n;
        while end > 0 {
            let last = end - 1;
            self.sigma = if end == n {
                T::zero()
            } else {
                self.split[last].expect("a finished block ends at a split")
            };
            self.desig = T::zero();
            self.cur = 0;
            // Top of the block, and bounds for the first shift (a diagonally
            // dominant bottom part gives the Gershgorin-type bound below).
            let mut i0 = last;
            let mut qmin = self.qc(last);
            let mut qmax = qmin;
            let mut emax = T::zero();
            let mut emin = if last > 0 {
                self.ec(last - 1)
            } else {
                T::zero()
            };
            while i0 > 0 && self.split[i0 - 1].is_none() {
                let ek = self.ec(i0 - 1);
                if qmin >= T::of(4.0) * emax {
                    qmin = qmin.min(self.qc(i0));
                    emax = emax.max(ek);
                }
                qmax = qmax.max(self.qc(i0 - 1) + ek);
                emin = emin.min(ek);
                i0 -= 1;
            }
            self.qmax = qmax;
            self.emin_new = emin;
            self.emin_old = emin;
            let mut skip = false;
            if last > i0 + 1 && self.small_end_at_top(i0, last) {
                self.reverse(i0, last);
                skip = true;
            }
            self.last.dmin = -(qmin - T::of(2.0) * qmin.sqrt() * emax.sqrt()).max(T::zero());

            let budget = steps_per_row * (last - i0 + 1);
            let mut iters = 0usize;
            while end > i0 {
                if iters == budget {
                    return Err(Error::NoConvergence {
                        stage: "dqds",
                        detail: format!(
                            "rows {i0}..{end} of {n} still unreduced after {budget} dqds steps"
                        ),
                    });
                }
                iters += 1;
                end = self.iterate(i0, end, skip);
                skip = false;
                if self.cur == 0
                    && end >= i0 + 4
                    && (self.emin_old <= tol2 * self.qmax || self.emin_new <= tol2 * self.sigma)
                {
                    i0 = self.find_splits(i0, end - 1);
                }
            }
        }
        Ok(())
    }

    /// Whether the smallest `d` of a zero-shift pass lies in the top third of the
    /// block and is small: then the block is better processed reversed, since
    /// dqds deflates at the bottom (dlasq2's flip test).
    fn small_end_at_top(&self, i0: usize, last: usize) -> bool {
        let mut dee = self.qc(i0);
        let mut deemin = dee;
        let mut kmin = i0;
        for k in i0 + 1..=last {
            dee = self.qc(k) * (dee / (dee + self.ec(k - 1)));
            if dee <= deemin {
                deemin = dee;
                kmin = k;
            }
        }
        2 * (kmin - i0) < last - kmin && deemin <= T::of(0.5) * self.qc(last)
    }

    /// Two zero-shift dqd passes over the whole array, each preceded by Li's
    /// backward test: `e_k` is negligible when it is below `tol^2` times the `d` of
    /// the backward recurrence at `k + 1` (Parlett & Marques 2000).
    fn li_passes(&mut self) {
        let n = self.n;
        let last = n - 1;
        let tol2 = tol2::<T>();
        let safmin = T::SAFE_MIN;
        let zero = T::zero();
        for _ in 0..2 {
            let (src, dst) = (self.cur, 1 - self.cur);
            let mut d = self.q[src][last];
            for k in (0..last).rev() {
                if self.e[src][k] <= tol2 * d {
                    self.mark_split(k, zero);
                    d = self.q[src][k];
                } else {
                    let ek = self.e[src][k];
                    d = self.q[src][k] * (d / (d + ek));
                }
            }
            let mut d = self.q[src][0];
            for k in 0..last {
                let (qk1, ek) = (self.q[src][k + 1], self.e[src][k]);
                let qhat = d + ek;
                if ek <= tol2 * d {
                    self.mark_split(k, zero);
                    self.q[dst][k] = d;
                    d = qk1;
                    continue;
                }
                self.q[dst][k] = qhat;
                if safmin * qk1 < qhat && safmin * qhat < qk1 {
                    let t = qk1 / qhat;
                    self.e[dst][k] = ek * t;
                    d *= t;
                } else {
                    self.e[dst][k] = qk1 * (ek / qhat);
                    d = qk1 * (d / qhat);
                }
            }
            self.q[dst][last] = d;
            self.cur = dst;
        }
    }

    /// Records eigenvalue `k` (converged at shift `sigma`).
    fn deflate_one(&mut self, k: usize) {
        self.lam[k] = self.qc(k) + self.sigma;
    }

    /// The two eigenvalues of the trailing 2x2 block `k - 1, k` of `L L^T`
    /// (`q_a = q_{k-1}`, `e_a = e_{k-1}`, `q_b = q_k`): their sum is `q_a + e_a + q_b`
    /// and their product `q_a q_b`; the larger is `q_a + e_a + s` with
    /// `s = q_b e_a / (t + sqrt(t^2 + q_b e_a))`, `t = (q_a - q_b + e_a) / 2`
    /// (no cancellation), the smaller the product over the larger.
    fn deflate_pair(&mut self, k: usize) {
        let tol2 = tol2::<T>();
        let (mut qa, ea, mut qb) = (self.qc(k - 1), self.ec(k - 1), self.qc(k));
        if qb > qa {
            std::mem::swap(&mut qa, &mut qb);
        }
        let half = T::of(0.5);
        let one = T::one();
        let t = half * ((qa - qb) + ea);
        if ea > qb * tol2 && t != T::zero() {
            let mut s = qb * (ea / t);
            if s <= t {
                s = qb * (ea / (t * (one + (one + s / t).sqrt())));
            } else {
                s = qb * (ea / (t + t.sqrt() * (t + s).sqrt()));
            }
            let big = qa + (s + ea);
            qb *= qa / big;
            qa = big;
        }
        self.lam[k - 1] = qa + self.sigma;
        self.lam[k] = qb + self.sigma;
    }

    /// One iteration on the block `i0..end` (`dlasq3`): deflates converged
    /// eigenvalues at the bottom, then takes one successful dqds step on what is
    /// left. Returns the new end. `skip` suppresses the deflation tests that compare
    /// with the previous iterate (invalid right after a flip).
    fn iterate(&mut self, i0: usize, mut end: usize, skip: bool) -> usize {
        let end_in = end;
        let tol = T::of(100.0) * T::EPS;
        let tol2 = tol * tol;
        let zero = T::zero();
        let sigma = self.sigma;
        loop {
            if end <= i0 {
                return end;
            }
            let l = end - 1;
            if l == i0 {
                self.deflate_one(l);
                end -= 1;
            } else if l == i0 + 1 {
                self.deflate_pair(l);
                end -= 2;
            } else if !skip
                && (self.ec(l - 1) <= tol2 * (sigma + self.qc(l))
                    || self.eo(l - 1) <= tol2 * self.qc(l - 1))
            {
                self.deflate_one(l);
                end -= 1;
            } else if !skip
                && (self.ec(l - 2) <= tol2 * sigma || self.eo(l - 2) <= tol2 * self.qc(l - 2))
            {
                self.deflate_pair(l);
                end -= 2;
            } else {
                break;
            }
        }
        let l = end - 1;
        if (self.last.dmin <= zero || end < end_in) && T::of(1.5) * self.qc(i0) < self.qc(l) {
            self.reverse(i0, l);
            self.qmax = self.qmax.max(self.qc(i0)).max(self.qc(i0 + 1));
            // The last transform says nothing about the reversed array: no shift.
            self.last.dmin = -zero;
        }
        let (mut tau, case) = self.choose_shift(i0, l, end_in - end);
        self.shift.case = case;
        self.shift.late = 0;
        self.shift.early = 0;
        let (src, dst) = (self.cur, 1 - self.cur);
        let mut guarded = false;
        let sweep = loop {
            let dthresh = T::EPS * (sigma + tau);
            if tau < T::of(0.5) * dthresh {
                tau = zero;
            }
            let (qs, qd) = split_pair(&mut self.q, src);
            let (es, ed) = split_pair(&mut self.e, src);
            let mut s = transform(qs, es, qd, ed, i0, l, tau, dthresh, guarded);
            if guarded || (!s.nan && s.dmin >= zero && s.dmin1 >= zero) {
                break s;
            }
            if !s.nan
                && s.dmin < zero
                && s.dmin1 > zero
                && ed[l - 1] < tol * (sigma + s.dn1)
                && s.dn.abs() < tol * sigma
            {
                // Convergence hidden by a tiny negative last d: it is zero.
                qd[l] = zero;
                s.dmin = zero;
                break s;
            }
            if s.nan {
                if tau == zero {
                    guarded = true;
                }
                tau = zero;
            } else if s.dmin < zero {
                // Shift too large. Give up shifting after about two failures
                // (LAPACK's type counter); a late failure (only the last d < 0)
                // tells how much too large; an early one only that it was.
                let code =
                    -(case as i32) - 11 * self.shift.late as i32 - 12 * self.shift.early as i32;
                if code < -22 {
                    tau = zero;
                } else if s.dmin1 > zero {
                    tau = (tau + s.dmin) * (T::one() - T::of(2.0) * T::EPS);
                    self.shift.late += 1;
                } else {
                    tau = T::of(0.25) * tau;
                    self.shift.early += 1;
                }
            } else {
                guarded = true;
                tau = zero;
            }
        };
        if guarded {
            tau = zero;
        }
        self.last = sweep;
        self.emin_old = self.emin_new;
        self.emin_new = sweep.emin;
        // sigma += tau with the compensated sum (dlasq3).
        if tau < self.sigma {
            self.desig += tau;
            let t = self.sigma + self.desig;
            self.desig -= t - self.sigma;
            self.sigma = t;
        } else {
            let t = self.sigma + tau;
            self.desig = self.sigma - (t - tau) + self.desig;
            self.sigma = t;
        }
        self.cur = dst;
        end
    }

    /// Splits the block `i0..=last` (current copy 0) at every negligible `e_k`
    /// (`dlasq2`'s check when the smallest `e` is tiny); returns the new top of the
    /// bottom block and refreshes `qmax` and the `emin`s for it.
    fn find_splits(&mut self, i0: usize, last: usize) -> usize {
        let tol2 = tol2::<T>();
        let sigma = self.sigma;
        let mut top = i0;
        let mut qmax = self.qc(i0);
        let mut emin = self.ec(i0);
        let mut oldemn = self.eo(i0);
        for k in i0..=last - 3 {
            if self.eo(k) <= tol2 * self.qc(k) || self.ec(k) <= tol2 * sigma {
                self.mark_split(k, sigma);
                top = k + 1;
                qmax = T::zero();
                emin = self.ec(k + 1);
                oldemn = self.eo(k + 1);
            } else {
                qmax = qmax.max(self.qc(k + 1));
                emin = emin.min(self.ec(k));
                oldemn = oldemn.min(self.eo(k));
            }
        }
        self.qmax = qmax;
        self.emin_new = emin;
        self.emin_old = oldemn;
        top
    }
}

/// `(&v[src], &mut v[1 - src])`.
fn split_pair<T>(v: &mut [Vec<T>; 2], src: usize) -> (&[T], &mut [T]) {
    let (a, b) = v.split_at_mut(1);
    if src == 0 {
        (&a[0], &mut b[0])
    } else {
        (&b[0], &mut a[0])
    }
}
