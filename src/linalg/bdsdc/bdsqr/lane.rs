//! [`bdsqr`]'s iteration as a resumable state ([`Lane`]): between two
//! sweeps it stops and says which sweep comes next, so that
//! [`super::bdsqr_pair`] can chase two bidiagonals in one loop.

use super::sweep::{apply_rotations, Rotations, Sweep, View};
use super::{check_shapes, svd2x2, MAXITR, TOLMUL};
use crate::error::Error;
use crate::linalg::dqds::las2;
use crate::linalg::stedc::merge::rotate_cols;
use crate::scalar::Scalar;
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::MatMut;

/// One bidiagonal's QR iteration ([`bdsqr`]) as a resumable state, so that
/// [`bdsqr_pair`] can chase two bidiagonals in one loop. Create one with
/// [`Lane::new`] (which checks the shapes); the iteration leaves the SVD in
/// the borrowed arrays, as [`bdsqr`] does.
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
        }
    }

    /// Deflates converged entries and finishes 2x2 blocks until a sweep is
    /// due: its plan, or `None` once every value has converged.
    #[inline(always)]
    pub(super) fn next_sweep(&mut self) -> Result<Option<Plan<T>>, Error> {
        let zero = T::zero();
        let (tol, eps, nt) = (self.tol, T::EPS, self.nt);
        'outer: while self.m > 0 {
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
            // Bottom unreduced block ll..=m.
            let mut smax = d[m].abs();
            let mut split = None;
            for l in (0..m).rev() {
                if e[l].abs() <= self.thresh {
                    e[l] = zero;
                    split = Some(l);
                    break;
                }
                smax = smax.max(d[l].abs()).max(e[l].abs());
            }
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
            // Convergence tests (relative): the far end, then the mu recurrence.
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
            let mut mu = view.d(0).abs();
            let mut smin = mu;
            for i in 0..len - 1 {
                if view.e(i).abs() <= tol * mu {
                    view.set_e(i, zero);
                    continue 'outer;
                }
                mu = view.d(i + 1).abs() * (mu / (mu + view.e(i).abs()));
                smin = smin.min(mu);
            }
            self.oldll = Some(ll);
            self.oldm = Some(m);
            // Shift from the far 2x2 corner; none if it is negligible (then the
            // zero shift sweep keeps relative accuracy).
            let mut shift = zero;
            if nt * tol * (smin / smax) > eps.max(T::of(0.01) * tol) {
                let sll = view.d(0).abs();
                shift = las2(view.d(len - 2), view.e(len - 2), view.d(len - 1)).0;
                if sll > zero && (shift / sll) * (shift / sll) < eps {
                    shift = zero;
                }
            }
            self.iter += len - 1;
            return Ok(Some(Plan { ll, m, shift }));
        }
        Ok(None)
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

    /// After the sweep of `plan`: the absolute test at its far end, and its
    /// rotations applied to the vectors.
    #[inline(always)]
    pub(super) fn finish_sweep(&mut self, plan: &Plan<T>) {
        let (thresh, rev) = (self.thresh, self.rev);
        let (mut view, _) = self.view(plan);
        let len = view.len();
        if view.e(len - 2).abs() <= thresh {
            view.set_e(len - 2, T::zero());
        }
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
    /// [`bdsqr_run`]).
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
            let (mut view, rot) = self.view(&p);
            let mut sweep = Sweep::start(&view, p.shift, rot);
            for i in 0..view.len() - 1 {
                sweep.step(&mut view, i, rot);
            }
            sweep.end(&mut view);
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

fn swap_cols<T: Scalar>(m: MatMut<'_, T>, i: usize, j: usize) {
    if m.nrows() > 0 {
        crate::linalg::steqr::col_pair(m, i, j, |x, y| x.swap_with_slice(y));
    }
}
