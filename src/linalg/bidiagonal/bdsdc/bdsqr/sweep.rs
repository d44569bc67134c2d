//! One QR sweep over an unreduced block of the bidiagonal, as a step
//! function: [`Sweep::step`] does one bulge-chasing position, so a driver can
//! run the sweeps of two independent bidiagonals in one loop
//! ([`super::Lane`]). A sweep is a chain of dependent square roots and
//! divisions (two `dlartg`s per position); interleaving two chains lets the
//! core overlap their latencies, while each bidiagonal's arithmetic stays
//! exactly the one of a sweep on its own.

use super::unit_pair;
use crate::linalg::blas::lasr::{apply_rotation_chain, givens, Chain};
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

    /// Normalises every rotation ([`unit_pair`]) once the sweep is done, in
    /// one pass off the chase's chain.
    pub(super) fn normalise(&mut self)
    where
        T: Scalar,
    {
        for r in self.right.iter_mut().chain(self.left.iter_mut()) {
            *r = unit_pair(r.0, r.1);
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
/// directions (the sweep itself runs on a [`Forward`] block, a reversed copy
/// when `rev`); a reversed sweep's right rotations act on `U`, its left ones on `V`.
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
    pub(super) fn set_e(&mut self, i: usize, x: T) {
        let k = self.ei(i);
        self.e[k] = x;
    }
}

/// A block laid out in chase order: `d` (its `len` diagonal entries) and `e`
/// (its `len - 1` superdiagonal entries), index 0 at the end the sweep starts
/// from ([`super::Lane::chase_entries`]). The sweep runs on this rather than
/// on a [`View`]: a position is a few dozen operations, and the view's
/// direction test and index arithmetic on each of its ten accesses were a
/// large share of its instructions. With plain slice indexing, 4,000
/// bidiagonals of random 32 x 32 matrices in groups of four took 19.9-20.4
/// us each instead of 21.0-23.4 without vectors, and 32.9-36.6 instead of
/// 34.1-41.8 with 32 x 32 vectors (same bits).
pub(super) struct Forward<'a, T> {
    pub(super) d: &'a mut [T],
    pub(super) e: &'a mut [T],
}

impl<T: Scalar> Forward<'_, T> {
    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.d.len()
    }
    #[inline(always)]
    fn d(&self, i: usize) -> T {
        self.d[i]
    }
    #[inline(always)]
    fn e(&self, i: usize) -> T {
        self.e[i]
    }
    #[inline(always)]
    fn set_d(&mut self, i: usize, x: T) {
        self.d[i] = x;
    }
    #[inline(always)]
    fn set_e(&mut self, i: usize, x: T) {
        self.e[i] = x;
    }
}

/// The state carried along a sweep from one position to the next.
///
/// The chase uses the rotations as it computes them; the copies kept for
/// the vectors are normalised ([`unit_pair`]) in one pass once the sweep is
/// done ([`Rotations::normalise`]). That keeps the normalisation off the
/// chase's chain of dependent square roots and divisions while the vectors
/// still get rotations orthogonal to rounding.
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
    pub(super) fn start(view: &Forward<'_, T>, shift: T, rot: &mut Rotations<T>) -> Self {
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
    pub(super) fn step(&mut self, view: &mut Forward<'_, T>, i: usize, rot: &mut Rotations<T>) {
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
                rot.right.push((c, sn));
                rot.left.push((oc, os));
            }
            Sweep::Shifted { f, g } => {
                let (di, ei, dn) = (view.d(i), view.e(i), view.d(i + 1));
                let p = shifted_position(*f, *g, di, ei, dn)
                    .unwrap_or_else(|| dlartg_position(*f, *g, di, ei, dn));
                if i > 0 {
                    view.set_e(i - 1, p.r);
                }
                view.set_d(i, p.d);
                view.set_d(i + 1, p.dn);
                view.set_e(i, p.e);
                *f = p.f;
                if i + 2 < view.len() {
                    let en = view.e(i + 1);
                    *g = p.sinl * en;
                    view.set_e(i + 1, p.cosl * en);
                }
                rot.right.push((p.cosr, p.sinr));
                rot.left.push((p.cosl, p.sinl));
            }
        }
    }

    /// Writes the sweep's last entries once every position is done.
    #[inline(always)]
    pub(super) fn end(self, view: &mut Forward<'_, T>) {
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

/// One position of the shifted chase, computed so that its two rotations'
/// square roots run side by side (see [`shifted_position`]).
struct Position<T> {
    cosr: T,
    sinr: T,
    cosl: T,
    sinl: T,
    /// The superdiagonal entry left above the position (`e[i - 1]`).
    r: T,
    /// The new `d[i]`, `e[i]`, `d[i + 1]`.
    d: T,
    e: T,
    dn: T,
    /// The next bulge's first entry.
    f: T,
}

/// The shifted chase at one position, with bulge `(f, g)` and entries
/// `d_i, e_i, d_{i+1}`, as a chase of two `dlartg`s would do it, but with
/// the chain of dependent operations cut by half.
///
/// The chase takes the right rotation from `(f, g)`, `h = sqrt(f^2 + g^2)`,
/// then the left one from `(f1, g1) = (c_r d_i + s_r e_i, s_r d_{i+1})`. Both
/// are `(N1, G1) / r` with `N1 = f d_i + g e_i`, `G1 = g d_{i+1}` and
/// `r = sign(f) h`, and a rotation does not change if both entries are
/// scaled: the left rotation is that of `(N1, G1)`, whose square root
/// `S = sqrt(N1^2 + G1^2)` does not wait for `h`. Its norm is `S / h`, with
/// the sign of `f1`, i.e. `sign(N1) sign(f)`. Each rotation then costs a
/// square root and one division (`c = |x| / h`, `s = sign(x) y / h` as
/// multiplications by `1 / h`), and the next bulge waits for one square root
/// and one division per position instead of two of each.
///
/// `None` (the caller then takes [`dlartg_position`]) when an entry is zero
/// or a square might overflow or underflow: the same safe range as
/// `dlartg`'s unscaled branch, for `f`, `g`, `N1` and `G1`.
#[inline(always)]
fn shifted_position<T: Scalar>(f: T, g: T, di: T, ei: T, dn: T) -> Option<Position<T>> {
    let one = T::one();
    let rtmin = T::SAFE_MIN.sqrt();
    let rtmax = (T::one() / T::SAFE_MIN / T::of(2.0)).sqrt();
    let n1 = g.mul_add(ei, f * di);
    let g1 = g * dn;
    let safe = |x: T| x.abs() > rtmin && x.abs() < rtmax;
    if !(safe(f) && safe(g) && safe(n1) && safe(g1)) {
        return None;
    }
    let h = f.mul_add(f, g * g).sqrt();
    let s = n1.mul_add(n1, g1 * g1).sqrt();
    let (ih, is) = (one / h, one / s);
    let (sf, sn) = (one.copysign(f), one.copysign(n1));
    let (cosr, sinr) = (f.abs() * ih, (g * sf) * ih);
    let (cosl, sinl) = (n1.abs() * is, (g1 * sn) * is);
    let e = cosr * ei - sinr * di;
    let dn = cosr * dn;
    Some(Position {
        cosr,
        sinr,
        cosl,
        sinl,
        r: h * sf,
        d: (s * ih) * (sn * sf),
        e,
        dn: cosl * dn - sinl * e,
        f: cosl * e + sinl * dn,
    })
}

/// The shifted chase at one position by two `dlartg`s in sequence
/// ([`givens`]): the general form, for the cases [`shifted_position`]
/// leaves out.
#[inline(always)]
fn dlartg_position<T: Scalar>(f: T, g: T, di: T, ei: T, dn: T) -> Position<T> {
    let (cosr, sinr, r) = givens(f, g);
    let f1 = cosr * di + sinr * ei;
    let e = cosr * ei - sinr * di;
    let g1 = sinr * dn;
    let dn = cosr * dn;
    let (cosl, sinl, d) = givens(f1, g1);
    Position {
        cosr,
        sinr,
        cosl,
        sinl,
        r,
        d,
        e,
        dn: cosl * dn - sinl * e,
        f: cosl * e + sinl * dn,
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
