//! [`bdsqr`](super::bdsqr)'s iteration as a resumable state ([`Lane`]): between two
//! sweeps it stops and says which sweep comes next, so that
//! [`super::bdsqr_group`] can chase several bidiagonals in one loop.

use super::sweep::{apply_rotations, Forward, Rotations, Sweep, View};
use super::{check_shapes, svd2x2, MAXITR, TOLMUL};
use crate::error::Error;
use crate::linalg::bidiagonal::dqds::las2;
use crate::linalg::blas::lasr::rotate_cols;
use crate::scalar::Scalar;
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::MatMut;

/// One bidiagonal's QR iteration ([`bdsqr`](super::bdsqr)) as a resumable state, so that
/// [`bdsqr_group`](super::bdsqr_group) can chase several bidiagonals in one loop. Create one with
/// [`Lane::new`] (which checks the shapes); the iteration leaves the SVD in
/// the borrowed arrays, as [`bdsqr`](super::bdsqr) does.
pub(crate) struct Lane<'a, T> {
    d: &'a mut [T],
    e: &'a mut [T],
    u: MatMut<'a, T>,
    v: MatMut<'a, T>,
    /// Relative tolerance, absolute threshold, `n` as a scalar.
    tol: T,
    thresh: T,
    nt: T,
    /// Inner steps done and allowed.
    iter: usize,
    maxit: usize,
    /// The unconverged part is `0..=m`.
    m: usize,
    /// Block of the previous sweep, to keep the chase direction within a block.
    oldll: Option<usize>,
    oldm: Option<usize>,
    rev: bool,
    rot: Rotations<T>,
    /// A block chased upwards, reversed ([`Lane::chase_entries`]).
    chase_d: Vec<T>,
    chase_e: Vec<T>,
}

/// The next sweep of a [`Lane`]: over the block `ll..=m` with `shift` (zero
/// for the zero-shift sweep).
pub(super) struct Plan<T> {
    ll: usize,
    m: usize,
    pub(super) shift: T,
}

impl<'a, T: Scalar> Lane<'a, T> {
    /// A lane for `bdsqr(d, e, u, v)`, with the same checks and errors.
    pub(crate) fn new(
        d: &'a mut [T],
        e: &'a mut [T],
        u: MatMut<'a, T>,
        v: MatMut<'a, T>,
    ) -> Result<Self, Error> {
        check_shapes(d, e, u.rb(), v.rb())?;
        Ok(Lane::with_budget(d, e, u, v, MAXITR))
    }

    pub(super) fn with_budget(
        d: &'a mut [T],
        e: &'a mut [T],
        u: MatMut<'a, T>,
        v: MatMut<'a, T>,
        maxitr: usize,
    ) -> Self {
        let n = d.len();
        let zero = T::zero();
        // Relative tolerance: dbdsqr allows 10 to 100 eps (eps^(-1/8) eps, about 99
        // eps in f64). 10 eps keeps each neglected entry's share of the residual at
        // 10 eps |B|, so ||B - U S V^T|| / (n eps ||B||) stays well below the usual
        // 30 even for n = 3; convergence at the end is cubic, so the extra cost is
        // a fraction of a sweep.
        let tol = T::of(TOLMUL) * T::EPS;
        let nt = T::of(n as f64);
        // Lower estimate of the smallest singular value (the mu recurrence of
        // Demmel-Kahan), for an absolute threshold below which entries are zero.
        let mut sminoa = d.first().map_or(zero, |x| x.abs());
        let mut mu = sminoa;
        for i in 1..n {
            if sminoa == zero {
                break;
            }
            mu = d[i].abs() * (mu / (mu + e[i - 1].abs()));
            sminoa = sminoa.min(mu);
        }
        sminoa /= nt.sqrt();
        let thresh = (tol * sminoa).max(T::of(maxitr as f64) * (nt * (nt * T::SAFE_MIN)));
        Lane {
            d,
            e,
            u,
            v,
            tol,
            thresh,
            nt,
            iter: 0,
            maxit: maxitr * n * n,
            m: n.saturating_sub(1),
            oldll: None,
            oldm: None,
            rev: false,
            rot: Rotations::with_capacity(n),
            chase_d: Vec::with_capacity(n),
            chase_e: Vec::with_capacity(n),
        }
    }

    /// Deflates converged entries and finishes 2x2 blocks until a sweep is
    /// due: its plan, or `None` once every value has converged.
    #[inline(always)]
    pub(super) fn next_sweep(&mut self) -> Result<Option<Plan<T>>, Error> {
        match self.next_block()? {
            Some(block) => self.resume(block),
            None => Ok(None),
        }
    }

    /// [`Lane::next_sweep`] from a block whose mu test is due.
    #[inline(always)]
    fn resume(&mut self, block: Block<T>) -> Result<Option<Plan<T>>, Error> {
        let mu = mu_test(self.tol, &self.block_view(&block));
        let plan = self.conclude(block, mu);
        self.plan_or_next(plan)
    }

    /// `plan` if there is one; else (the mu recurrence deflated an entry)
    /// [`Lane::next_sweep`] looks again.
    #[inline(always)]
    fn plan_or_next(&mut self, plan: Option<Plan<T>>) -> Result<Option<Plan<T>>, Error> {
        match plan {
            Some(p) => Ok(Some(p)),
            None => self.next_sweep(),
        }
    }

    /// Deflates and finishes 2x2 blocks until the bottom block `ll..=m` needs
    /// a sweep unless the mu recurrence finds a negligible entry: that block
    /// (its chase direction chosen, its far end tested), or `None` once every
    /// value has converged.
    #[inline(always)]
    fn next_block(&mut self) -> Result<Option<Block<T>>, Error> {
        let zero = T::zero();
        let tol = self.tol;
        while self.m > 0 {
            let m = self.m;
            if self.iter > self.maxit {
                return Err(Error::NoConvergence {
                    stage: "bdsqr",
                    detail: format!(
                        "{} of {} superdiagonal entries still nonzero after {} QR steps",
                        self.e[..m].iter().filter(|x| **x != zero).count(),
                        self.d.len() - 1,
                        self.maxit
                    ),
                });
            }
            let (d, e) = (&mut *self.d, &mut *self.e);
            // Bottom unreduced block ll..=m, and its largest magnitude (two
            // independent running maxima, so the scan is not one chain of
            // NaN-aware `max`es: the entries are finite).
            let (mut dmax, mut emax) = (d[m].abs(), zero);
            let mut split = None;
            for l in (0..m).rev() {
                let el = e[l].abs();
                if el <= self.thresh {
                    e[l] = zero;
                    split = Some(l);
                    break;
                }
                let dl = d[l].abs();
                dmax = if dl > dmax { dl } else { dmax };
                emax = if el > emax { el } else { emax };
            }
            let smax = if emax > dmax { emax } else { dmax };
            let ll = match split {
                Some(l) if l + 1 == m => {
                    self.m -= 1;
                    continue;
                }
                Some(l) => l + 1,
                None => 0,
            };
            if ll + 1 == m {
                let s = svd2x2(d[m - 1], e[m - 1], d[m]);
                d[m - 1] = s.smax;
                e[m - 1] = zero;
                d[m] = s.smin;
                if self.v.nrows() > 0 {
                    rotate_cols(self.v.rb_mut(), m - 1, m, s.cr, s.sr);
                }
                if self.u.nrows() > 0 {
                    rotate_cols(self.u.rb_mut(), m - 1, m, s.cl, s.sl);
                }
                self.m = m.saturating_sub(2);
                continue;
            }
            // A new block: chase from the larger end towards the smaller.
            if self.oldm.is_none_or(|om| ll > om) || self.oldll.is_none_or(|ol| m < ol) {
                self.rev = d[ll].abs() < d[m].abs();
            }
            // Convergence tests (relative): the far end here, then the mu
            // recurrence ([`mu_test`]).
            let mut view = View {
                d,
                e,
                lo: ll,
                hi: m,
                rev: self.rev,
            };
            let len = view.len();
            if view.e(len - 2).abs() <= tol * view.d(len - 1).abs() {
                view.set_e(len - 2, zero);
                continue;
            }
            return Ok(Some(Block { ll, m, smax }));
        }
        Ok(None)
    }

    /// The block as a [`View`] in the lane's chase direction.
    #[inline(always)]
    fn block_view(&mut self, block: &Block<T>) -> View<'_, T> {
        View {
            d: &mut *self.d,
            e: &mut *self.e,
            lo: block.ll,
            hi: block.m,
            rev: self.rev,
        }
    }

    /// After the mu recurrence on `block`: `None` if it found a negligible
    /// entry (now zero; the lane must look again), else the sweep's plan with
    /// its shift from the far 2x2 corner (none if negligible: the zero-shift
    /// sweep then keeps relative accuracy).
    #[inline(always)]
    fn conclude(&mut self, block: Block<T>, mu: MuTest<T>) -> Option<Plan<T>> {
        let zero = T::zero();
        let (tol, eps, nt) = (self.tol, T::EPS, self.nt);
        let Block { ll, m, smax } = block;
        let smin = match mu {
            MuTest::Negligible(i) => {
                self.block_view(&block).set_e(i, zero);
                return None;
            }
            MuTest::Smin(smin) => smin,
        };
        self.oldll = Some(ll);
        self.oldm = Some(m);
        let view = self.block_view(&block);
        let len = view.len();
        let mut shift = zero;
        if nt * tol * (smin / smax) > eps.max(T::of(0.01) * tol) {
            let sll = view.d(0).abs();
            shift = las2(view.d(len - 2), view.e(len - 2), view.d(len - 1)).0;
            if sll > zero && (shift / sll) * (shift / sll) < eps {
                shift = zero;
            }
        }
        self.iter += len - 1;
        Some(Plan { ll, m, shift })
    }

    /// The block of `plan` as a [`View`], and the rotation lists for its sweep.
    #[inline(always)]
    pub(super) fn view(&mut self, plan: &Plan<T>) -> (View<'_, T>, &mut Rotations<T>) {
        let view = View {
            d: &mut *self.d,
            e: &mut *self.e,
            lo: plan.ll,
            hi: plan.m,
            rev: self.rev,
        };
        (view, &mut self.rot)
    }

    /// The block of `plan` in chase order for its sweep, and the rotation
    /// lists: the lane's own entries when the sweep runs down the block, a
    /// reversed copy when it runs up (written back by [`Lane::finish_sweep`]).
    /// Either way the sweep does the same operations as on [`Lane::view`].
    #[inline(always)]
    pub(super) fn chase_entries(&mut self, plan: &Plan<T>) -> (Forward<'_, T>, &mut Rotations<T>) {
        let (lo, hi) = (plan.ll, plan.m);
        if !self.rev {
            let block = Forward {
                d: &mut self.d[lo..=hi],
                e: &mut self.e[lo..hi],
            };
            return (block, &mut self.rot);
        }
        self.chase_d.clear();
        self.chase_d.extend(self.d[lo..=hi].iter().rev());
        self.chase_e.clear();
        self.chase_e.extend(self.e[lo..hi].iter().rev());
        let block = Forward {
            d: &mut self.chase_d[..],
            e: &mut self.chase_e[..],
        };
        (block, &mut self.rot)
    }

    /// After the sweep of `plan` (on [`Lane::chase_entries`]): a reversed
    /// block written back, the absolute test at its far end, and its
    /// rotations applied to the vectors.
    #[inline(always)]
    pub(super) fn finish_sweep(&mut self, plan: &Plan<T>) {
        if self.rev {
            let (lo, hi) = (plan.ll, plan.m);
            for (x, &y) in self.d[lo..=hi].iter_mut().rev().zip(&self.chase_d) {
                *x = y;
            }
            for (x, &y) in self.e[lo..hi].iter_mut().rev().zip(&self.chase_e) {
                *x = y;
            }
        }
        let (thresh, rev) = (self.thresh, self.rev);
        let (mut view, _) = self.view(plan);
        let len = view.len();
        if view.e(len - 2).abs() <= thresh {
            view.set_e(len - 2, T::zero());
        }
        self.rot.normalise();
        // View right rotations act on V (on U when reversed), left ones on U.
        let (for_v, for_u) = if rev {
            (&self.rot.left, &self.rot.right)
        } else {
            (&self.rot.right, &self.rot.left)
        };
        apply_rotations(self.v.rb_mut(), plan.ll, plan.m, rev, for_v);
        apply_rotations(self.u.rb_mut(), plan.ll, plan.m, rev, for_u);
    }

    /// Runs the iteration to its end on its own (not dispatched: see
    /// [`bdsqr_run`](super::bdsqr_run)).
    #[inline(always)]
    pub(super) fn run(mut self) -> Result<(), Error> {
        if let Some(plan) = self.next_sweep()? {
            self.run_from(plan)?;
        }
        self.finish();
        Ok(())
    }

    /// Runs the sweeps from `plan` on until every value has converged.
    #[inline(always)]
    pub(super) fn run_from(&mut self, plan: Plan<T>) -> Result<(), Error> {
        let mut plan = Some(plan);
        while let Some(p) = plan {
            let (mut block, rot) = self.chase_entries(&p);
            let mut sweep = Sweep::start(&block, p.shift, rot);
            for i in 0..block.len() - 1 {
                sweep.step(&mut block, i, rot);
            }
            sweep.end(&mut block);
            self.finish_sweep(&p);
            plan = self.next_sweep()?;
        }
        Ok(())
    }

    /// Nonnegative values (flipping the right vector), then descending order.
    #[inline(always)]
    pub(super) fn finish(self) {
        let zero = T::zero();
        let (d, mut u, mut v) = (self.d, self.u, self.v);
        let n = d.len();
        for (i, di) in d.iter_mut().enumerate() {
            if *di < zero {
                *di = -*di;
                if v.nrows() > 0 {
                    v.rb_mut().col_mut(i).iter_mut().for_each(|x| *x = -*x);
                }
            }
        }
        for i in 0..n {
            let mut k = i;
            for j in i + 1..n {
                if d[j] > d[k] {
                    k = j;
                }
            }
            if k != i {
                d.swap(i, k);
                swap_cols(u.rb_mut(), i, k);
                swap_cols(v.rb_mut(), i, k);
            }
        }
    }
}

/// [`Lane::next_sweep`] of two lanes, their mu recurrences (a chain of
/// dependent divisions each) run side by side; each lane's arithmetic and
/// decisions are those of its own `next_sweep`.
#[inline(always)]
pub(super) fn next_sweep_pair<T: Scalar>(
    a: &mut Lane<'_, T>,
    b: &mut Lane<'_, T>,
) -> [Result<Option<Plan<T>>, Error>; 2] {
    let (ba, bb) = match (a.next_block(), b.next_block()) {
        (Ok(Some(x)), Ok(Some(y))) => (x, y),
        // A lane that is done or failed: the other goes on alone.
        (Ok(Some(x)), rb) => return [a.resume(x), rb.map(|_| None)],
        (ra, Ok(Some(y))) => return [ra.map(|_| None), b.resume(y)],
        (ra, rb) => return [ra.map(|_| None), rb.map(|_| None)],
    };
    let [ma, mb] = mu_test_pair(a.tol, [&a.block_view(&ba), &b.block_view(&bb)]);
    let pa = a.conclude(ba, ma);
    let pb = b.conclude(bb, mb);
    // A lane whose recurrence deflated an entry looks again on its own.
    [a.plan_or_next(pa), b.plan_or_next(pb)]
}

/// The bottom unreduced block `ll..=m` whose mu test is due, and the largest
/// magnitude in it (for the shift decision).
#[derive(Clone, Copy)]
struct Block<T> {
    ll: usize,
    m: usize,
    smax: T,
}

/// What the mu recurrence found on a block.
#[derive(Clone, Copy)]
enum MuTest<T> {
    /// View superdiagonal `i` is negligible relative to the recurrence.
    Negligible(usize),
    /// No negligible entry; the smallest mu (an estimate of the smallest
    /// singular value of the block).
    Smin(T),
}

/// The relative convergence test of Demmel and Kahan along the chase
/// direction: `mu_0 = |d_0|`, `mu_{i+1} = |d_{i+1}| mu_i / (mu_i + |e_i|)`;
/// entry `i` is negligible if `|e_i| <= tol mu_i` (`dbdsqr`).
///
/// The recurrence runs on `x_i = 1 / mu_i`, which is affine:
/// `x_{i+1} = (1 + |e_i| x_i) / |d_{i+1}|`. The reciprocal of `|d_{i+1}|`
/// does not depend on the previous step, so the chain from one entry to the
/// next is a product, an addition and a product instead of an addition, a
/// division and a product (on 32 x 32 bidiagonals the planning between
/// sweeps was about 30% of the QR's time, values only; with this form and
/// the two-maxima block scan the QR took 7-11% less). No fused multiply-add: this
/// code is also compiled for the baseline target (the lane's planning is
/// recursive, so not always inlined into the dispatched drivers), where
/// `mul_add` is a library call. The test becomes
/// `|e_i| x_i <= tol`; a zero `d` gives `x = inf` (`mu = 0`), as in the
/// original form. The decisions agree with the original up to the rounding
/// of the recurrence, which only moves the point where an entry counts as
/// negligible by an ulp or so of `tol`.
#[inline(always)]
fn mu_test<T: Scalar>(tol: T, view: &View<'_, T>) -> MuTest<T> {
    let mut r = MuRecurrence::new(view);
    for i in 0..view.len() - 1 {
        if let Some(out) = r.step(tol, view, i) {
            return out;
        }
    }
    r.done()
}

/// [`mu_test`] of two blocks in one loop: the two recurrences are
/// independent chains, which the core overlaps; each lane's arithmetic and
/// stopping point are those of [`mu_test`].
#[inline(always)]
fn mu_test_pair<T: Scalar>(tol: T, views: [&View<'_, T>; 2]) -> [MuTest<T>; 2] {
    let [va, vb] = views;
    let (mut a, mut b) = (MuRecurrence::new(va), MuRecurrence::new(vb));
    let (la, lb) = (va.len() - 1, vb.len() - 1);
    let (mut oa, mut ob) = (None, None);
    for i in 0..la.max(lb) {
        if oa.is_none() && i < la {
            oa = a.step(tol, va, i);
        }
        if ob.is_none() && i < lb {
            ob = b.step(tol, vb, i);
        }
        if oa.is_some() && ob.is_some() {
            break;
        }
    }
    [
        oa.unwrap_or_else(|| a.done()),
        ob.unwrap_or_else(|| b.done()),
    ]
}

/// The state of one mu recurrence, on `x = 1 / mu` (see [`mu_test`]).
struct MuRecurrence<T> {
    x: T,
    /// The largest `x` so far (`1 / min mu`).
    xmax: T,
}

impl<T: Scalar> MuRecurrence<T> {
    #[inline(always)]
    fn new(view: &View<'_, T>) -> Self {
        let x = T::one() / view.d(0).abs();
        MuRecurrence { x, xmax: x }
    }

    /// Entry `i`: `Some` if it is negligible, else the recurrence moves on.
    #[inline(always)]
    fn step(&mut self, tol: T, view: &View<'_, T>, i: usize) -> Option<MuTest<T>> {
        let ei = view.e(i).abs();
        if ei == T::zero() || ei * self.x <= tol {
            return Some(MuTest::Negligible(i));
        }
        let inv_d = T::one() / view.d(i + 1).abs();
        self.x = (T::one() + ei * self.x) * inv_d;
        self.xmax = if self.x > self.xmax {
            self.x
        } else {
            self.xmax
        };
        None
    }

    /// No negligible entry: the smallest mu.
    #[inline(always)]
    fn done(&self) -> MuTest<T> {
        MuTest::Smin(T::one() / self.xmax)
    }
}

fn swap_cols<T: Scalar>(m: MatMut<'_, T>, i: usize, j: usize) {
    if m.nrows() > 0 {
        crate::linalg::blas::lasr::col_pair(m, i, j, |x, y| x.swap_with_slice(y));
    }
}
