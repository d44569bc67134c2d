//! One QR sweep over an unreduced block of the bidiagonal, as a step
//! function: [`Sweep::step`] does one bulge-chasing position, so a driver can
//! run the sweeps of two independent bidiagonals in one loop
//! ([`super::Lane`]). A sweep is a chain of dependent square roots and
//! divisions (two `dlartg`s per position); interleaving two chains lets the
//! core overlap their latencies, while each bidiagonal's arithmetic stays
//! exactly the one of a sweep on its own.

use super::unit_pair;
use crate::linalg::lasr::{apply_rotation_chain, Chain};
use crate::linalg::steqr::givens;
use crate::scalar::Scalar;
use faer::MatMut;

/// The rotations of one sweep, in sweep order (view coordinates, see [`View`]).
pub(super) struct Rotations<T> {
    pub(super) right: Vec<(T, T)>,
    pub(super) left: Vec<(T, T)>,
}

impl<T> Rotations<T> {
    pub(super) fn with_capacity(n: usize) -> Self {
        Rotations {
            right: Vec::with_capacity(n),
            left: Vec::with_capacity(n),
        }
    }

    fn clear(&mut self) {
        self.right.clear();
        self.left.clear();
    }
}

/// The block `lo..=hi` of `(d, e)` seen from the top (`rev = false`) or from the
/// bottom (`rev = true`: view index `i` is row `hi - i`, view superdiagonal `i` is
/// `e[hi - 1 - i]`). The reversed view of an upper bidiagonal block is the block of
/// `J B^T J`, again upper bidiagonal, so one sweep implementation serves both
/// directions; a reversed sweep's right rotations act on `U`, its left ones on `V`.
pub(super) struct View<'a, T> {
    pub(super) d: &'a mut [T],
    pub(super) e: &'a mut [T],
    pub(super) lo: usize,
    pub(super) hi: usize,
    pub(super) rev: bool,
}

impl<T: Scalar> View<'_, T> {
    pub(super) fn len(&self) -> usize {
        self.hi - self.lo + 1
    }
    fn di(&self, i: usize) -> usize {
        if self.rev {
            self.hi - i
        } else {
            self.lo + i
        }
    }
    fn ei(&self, i: usize) -> usize {
        if self.rev {
            self.hi - 1 - i
        } else {
            self.lo + i
        }
    }
    pub(super) fn d(&self, i: usize) -> T {
        self.d[self.di(i)]
    }
    pub(super) fn e(&self, i: usize) -> T {
        self.e[self.ei(i)]
    }
    fn set_d(&mut self, i: usize, x: T) {
        let k = self.di(i);
        self.d[k] = x;
    }
    pub(super) fn set_e(&mut self, i: usize, x: T) {
        let k = self.ei(i);
        self.e[k] = x;
    }
}

/// The state carried along a sweep from one position to the next.
///
/// The chase uses the rotations as `dlartg` gives them; the copies kept for
/// the vectors are normalised ([`unit_pair`]). That keeps the normalisation
/// off the chase's chain of dependent square roots and divisions (about a
/// quarter of its latency) while the vectors still get rotations orthogonal
/// to rounding.
#[derive(Clone, Copy)]
pub(super) enum Sweep<T> {
    /// Demmel–Kahan zero-shift sweep (high relative accuracy for every entry).
    Zero { cs: T, oldcs: T, oldsn: T },
    /// Implicitly shifted sweep (Golub–Kahan chase): the bulge `(f, g)`.
    Shifted { f: T, g: T },
}

impl<T: Scalar> Sweep<T> {
    /// Starts a sweep over `view` with `shift` (zero: the zero-shift sweep),
    /// clearing `rot` for its rotations.
    #[inline(always)]
    pub(super) fn start(view: &View<'_, T>, shift: T, rot: &mut Rotations<T>) -> Self {
        rot.clear();
        let one = T::one();
        if shift == T::zero() {
            return Sweep::Zero {
                cs: one,
                oldcs: one,
                oldsn: T::zero(),
            };
        }
        // First column of B^T B - shift^2 I, scaled by 1 / d0.
        let d0 = view.d(0);
        Sweep::Shifted {
            f: (d0.abs() - shift) * (one.copysign(d0) + shift / d0),
            g: view.e(0),
        }
    }

    /// Position `i` (`0..len - 1`) of the sweep: one right and one left
    /// rotation, pushed to `rot`.
    #[inline(always)]
    pub(super) fn step(&mut self, view: &mut View<'_, T>, i: usize, rot: &mut Rotations<T>) {
        match self {
            Sweep::Zero { cs, oldcs, oldsn } => {
                let (c, sn, r) = givens(view.d(i) * *cs, view.e(i));
                *cs = c;
                if i > 0 {
                    view.set_e(i - 1, *oldsn * r);
                }
                let (oc, os, di) = givens(*oldcs * r, view.d(i + 1) * sn);
                (*oldcs, *oldsn) = (oc, os);
                view.set_d(i, di);
                rot.right.push(unit_pair(c, sn));
                rot.left.push(unit_pair(oc, os));
            }
            Sweep::Shifted { f, g } => {
                let (cosr, sinr, r) = givens(*f, *g);
                if i > 0 {
                    view.set_e(i - 1, r);
                }
                let (di, ei, dn) = (view.d(i), view.e(i), view.d(i + 1));
                let f1 = cosr * di + sinr * ei;
                let ei = cosr * ei - sinr * di;
                let g1 = sinr * dn;
                let dn = cosr * dn;
                let (cosl, sinl, r) = givens(f1, g1);
                view.set_d(i, r);
                *f = cosl * ei + sinl * dn;
                view.set_d(i + 1, cosl * dn - sinl * ei);
                view.set_e(i, ei);
                if i + 2 < view.len() {
                    let en = view.e(i + 1);
                    *g = sinl * en;
                    view.set_e(i + 1, cosl * en);
                }
                rot.right.push(unit_pair(cosr, sinr));
                rot.left.push(unit_pair(cosl, sinl));
            }
        }
    }

    /// Writes the sweep's last entries once every position is done.
    #[inline(always)]
    pub(super) fn end(self, view: &mut View<'_, T>) {
        let len = view.len();
        match self {
            Sweep::Zero { cs, oldcs, oldsn } => {
                let h = view.d(len - 1) * cs;
                view.set_d(len - 1, h * oldcs);
                view.set_e(len - 2, h * oldsn);
            }
            Sweep::Shifted { f, .. } => view.set_e(len - 2, f),
        }
    }
}

/// Applies the rotations of a sweep over the block `lo..=hi` (view order, see
/// [`View`]) to the columns of `m`: rotation `i` acts on view columns `(i, i + 1)`
/// as `x' = c x + s y`, `y' = c y - s x` (in matrix columns: `(lo + i, lo + i + 1)`,
/// or `(hi - i, hi - i - 1)` when reversed).
pub(super) fn apply_rotations<T: Scalar>(
    m: MatMut<'_, T>,
    lo: usize,
    hi: usize,
    rev: bool,
    rots: &[(T, T)],
) {
    if rev {
        apply_rotation_chain(m, hi, Chain::Backward, rots);
    } else {
        apply_rotation_chain(m, lo, Chain::Forward, rots);
    }
}
