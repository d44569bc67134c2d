//! Singular values and vectors of a real upper bidiagonal matrix by implicit QR:
//! Demmel & Kahan (1990, "Accurate singular values of bidiagonal matrices"), organised
//! as LAPACK `dbdsqr` with vectors.
//!
//! Per sweep the unreduced block at the bottom of the unconverged part is chased
//! with plane rotations, either from top to bottom or from bottom to top (whichever
//! end is larger in magnitude, so graded blocks deflate at their small end first),
//! with the shift taken from the trailing (or leading) 2x2 corner, or with *no* shift
//! (Demmel–Kahan's zero-shift sweep, which keeps every entry to high relative
//! accuracy) when the shift would be negligible next to the smallest singular value.
//! Off-diagonal entries are neglected by relative criteria (`|e_i| <= tol mu_i`, with
//! `mu` the running estimate of the smallest singular value of the leading part),
//! so small singular values keep high relative accuracy (to `tol = O(eps)` per
//! entry). A remaining 2x2 block is finished by `svd2x2`.
//!
//! The rotations of a sweep are collected, then applied to the columns of `U` and
//! `V` as one chain (`linalg::lasr`, LAPACK `dlasr`).
//!
//! Every rotation applied to the vectors is made orthogonal to within the rounding
//! of its two entries (`unit_pair`; the chase itself uses `dlartg`'s values): the
//! usual `c = |f| / h`, `s = g / r` carry an error in `c^2 + s^2`
//! of an ulp or so that is *systematic* when `f^2 + g^2` sits just above a power of
//! two (the square root rounds on a coarser grid there), and a column receives about
//! two rotations per sweep over about `2 n` sweeps. Uncorrected, tightly clustered
//! spectra measured `||U^T U - I|| / (n eps)` of 15, 26 and 40 at `n = 65, 200, 1000`;
//! corrected, below 2.

use faer::reborrow::ReborrowMut;
use faer::MatMut;

use crate::error::Error;
use crate::linalg::dqds::{check_bidiagonal, las2};
use crate::linalg::lasr::{apply_rotation_chain, Chain};
use crate::linalg::stedc::merge::rotate_cols;
use crate::linalg::steqr::givens;
use crate::scalar::Scalar;

/// A plane rotation with `c f + s g = r`, `-s f + c g = 0` (LAPACK `dlartg`, the
/// shared [`crate::linalg::steqr::givens`]), then normalised by [`unit_pair`].
#[inline(always)]
pub(crate) fn rotation<T: Scalar>(f: T, g: T) -> (T, T, T) {
    let (c, s, r) = crate::linalg::steqr::givens(f, g);
    let (c, s) = unit_pair(c, s);
    (c, s, r)
}

/// `(c, s)` scaled by `1 - dev / 2`, `dev = c^2 + s^2 - 1` formed exactly by fused
/// multiply-adds: the angle is unchanged and `c^2 + s^2 = 1 - O(dev^2)` up to the
/// (unbiased) rounding of the two products, so column norms do not drift over
/// thousands of rotations.
#[inline(always)]
pub(crate) fn unit_pair<T: Scalar>(c: T, s: T) -> (T, T) {
    let half_dev = T::of(0.5) * c.mul_add(c, s.mul_add(s, -T::one()));
    (c - c * half_dev, s - s * half_dev)
}

/// The relative tolerance in units of eps (see [`bdsqr_with_budget`]).
pub(crate) const TOLMUL: f64 = 10.0;

/// `dbdsqr`'s iteration limit: at most `MAXITR n^2` inner steps (each sweep over a
/// block of `m` rows counts `m`).
const MAXITR: usize = 6;

/// The 2x2 upper triangular SVD `[[cl, sl], [-sl, cl]] [[f, g], [0, h]] [[cr, -sr], [sr,
/// cr]] = diag(smax, smin)`, `|smax| >= |smin|` (signs as they come: `smax smin = f h`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Svd2<T> {
    pub smin: T,
    pub smax: T,
    /// Right rotation: `(cr, sr)` is the right singular vector of `smax`.
    pub cr: T,
    pub sr: T,
    /// Left rotation: `(cl, sl)` is the left singular vector of `smax`.
    pub cl: T,
    pub sl: T,
}

/// Singular values and vectors of `[[f, g], [0, h]]` with both singular values to
/// high relative accuracy and the vectors to full accuracy, without overflow
/// (Demmel & Kahan 1990; the job of LAPACK `dlasv2`).
///
/// With `|f| >= |h|` (else the problem is transposed and reversed, which swaps the
/// roles of the two rotations), `l = (|f| - |h|) / |f|`, `m = g / f`, `t = 2 - l`:
/// `s = sqrt(t^2 + m^2)` and `r = sqrt(l^2 + m^2)` are `(smax +- smin) / |f|`, so
/// `a = (s + r) / 2`, `smax = |f| a`, `smin = |h| / a`, and the tangent of the right
/// rotation is `(m / (s + t) + m / (r + l)) (1 + a)`, a form without cancellation.
/// When `g` exceeds `f` by more than `1 / eps`, `smax = |g|` and `smin = |f h| / |g|`
/// to full accuracy and the rotations are the obvious ones.
pub(crate) fn svd2x2<T: Scalar>(f: T, g: T, h: T) -> Svd2<T> {
    let zero = T::zero();
    let one = T::one();
    let two = T::of(2.0);
    let swap = h.abs() > f.abs();
    let (ft, ht) = if swap { (h, f) } else { (f, h) };
    let (fa, ha, ga) = (ft.abs(), ht.abs(), g.abs());
    // Rotations of the (possibly transposed) problem; `dominant` says which entry
    // dominates u1^T B v1 (0: f-like, 1: g, 2: h-like), for the sign of smax.
    let (clt, slt, crt, srt, smax, smin, g_dominant);
    if ga == zero {
        (clt, slt, crt, srt) = (one, zero, one, zero);
        (smax, smin) = (fa, ha);
        g_dominant = false;
    } else if ga > fa && fa / ga < T::EPS {
        // g beyond the precision of f: smax = |g|, smin = |f h| / |g| (ordered to
        // avoid underflow).
        smax = ga;
        smin = if ha > one {
            fa / (ga / ha)
        } else {
            (fa / ga) * ha
        };
        (clt, slt, crt, srt) = (one, ht / g, ft / g, one);
        g_dominant = true;
    } else {
        let dd = fa - ha;
        let l = if dd == fa { one } else { dd / fa };
        let m = g / ft;
        let t = two - l;
        let mm = m * m;
        let s = (t * t + mm).sqrt();
        let r = if l == zero {
            m.abs()
        } else {
            (l * l + mm).sqrt()
        };
        let a = T::of(0.5) * (s + r);
        smin = ha / a;
        smax = fa * a;
        let tan = if mm == zero {
            // m underflowed: its square is gone, the limit forms.
            if l == zero {
                two.copysign(ft) * one.copysign(g)
            } else {
                g / dd.copysign(ft) + m / t
            }
        } else {
            (m / (s + t) + m / (r + l)) * (one + a)
        };
        let ln = (tan * tan + T::of(4.0)).sqrt();
        crt = two / ln;
        srt = tan / ln;
        clt = (crt + srt * m) / a;
        slt = (ht / ft) * srt / a;
        g_dominant = ga > fa;
    }
    let (cl, sl, cr, sr) = if swap {
        (srt, crt, slt, clt)
    } else {
        (clt, slt, crt, srt)
    };
    // The left pair comes from a formula that is a unit vector only in exact
    // arithmetic (a few ulps off); normalise both.
    let ((cl, sl), (cr, sr)) = (unit_pair(cl, sl), unit_pair(cr, sr));
    // u1^T B v1 = cl (f cr + g sr) + sl h sr has the sign of its dominant term.
    let sign = |x: T| one.copysign(x);
    let tsign = if g_dominant {
        sign(sr) * sign(cl) * sign(g)
    } else if swap {
        sign(sr) * sign(sl) * sign(h)
    } else {
        sign(cr) * sign(cl) * sign(f)
    };
    let smax = smax.copysign(tsign);
    // smax smin = det = f h.
    let smin = smin.copysign(tsign * sign(f) * sign(h));
    Svd2 {
        smin,
        smax,
        cr,
        sr,
        cl,
        sl,
    }
}

/// Singular value decomposition of the `n x n` upper bidiagonal `B` with diagonal `d`
/// and superdiagonal `e` (length `n - 1`): `B = Q diag(s) P^T`. On exit `d` holds
/// `s` descending (nonnegative), `u` (`m x n`, any `m`, typically the identity) is
/// overwritten by `u Q` and `v` (`p x n`, any `p`) by `v P`; `e` is destroyed.
/// Either may have zero rows when its vectors are not wanted.
///
/// Every singular value has high relative accuracy: `|s_i - s_i(exact)| <= c n^2 tol
/// s_i` in theory, a few `n eps s_i` in practice (see the module documentation).
///
/// # Errors
/// [`Error::Shape`] for inconsistent sizes, [`Error::NonFinite`] for NaN/infinite
/// input, [`Error::NoConvergence`] (stage `"bdsqr"`) after `6 n^2` inner steps.
pub fn bdsqr<T: Scalar>(
    d: &mut [T],
    e: &mut [T],
    u: MatMut<'_, T>,
    v: MatMut<'_, T>,
) -> Result<(), Error> {
    check_bidiagonal("bdsqr", d, e)?;
    let n = d.len();
    if u.ncols() != n || v.ncols() != n {
        return Err(Error::Shape(format!(
            "bdsqr: order {n}, but u has {} and v {} columns",
            u.ncols(),
            v.ncols()
        )));
    }
    bdsqr_with_budget(d, e, u, v, MAXITR)
}

/// The rotations of one sweep, in sweep order (view coordinates, see [`View`]).
struct Rotations<T> {
    right: Vec<(T, T)>,
    left: Vec<(T, T)>,
}

/// The block `lo..=hi` of `(d, e)` seen from the top (`rev = false`) or from the
/// bottom (`rev = true`: view index `i` is row `hi - i`, view superdiagonal `i` is
/// `e[hi - 1 - i]`). The reversed view of an upper bidiagonal block is the block of
/// `J B^T J`, again upper bidiagonal, so one sweep implementation serves both
/// directions; a reversed sweep's right rotations act on `U`, its left ones on `V`.
struct View<'a, T> {
    d: &'a mut [T],
    e: &'a mut [T],
    lo: usize,
    hi: usize,
    rev: bool,
}

impl<T: Scalar> View<'_, T> {
    fn len(&self) -> usize {
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
    fn d(&self, i: usize) -> T {
        self.d[self.di(i)]
    }
    fn e(&self, i: usize) -> T {
        self.e[self.ei(i)]
    }
    fn set_d(&mut self, i: usize, x: T) {
        let k = self.di(i);
        self.d[k] = x;
    }
    fn set_e(&mut self, i: usize, x: T) {
        let k = self.ei(i);
        self.e[k] = x;
    }

    /// Demmel–Kahan zero-shift QR sweep (high relative accuracy for every entry).
    ///
    /// The chase uses the rotations as `dlartg` gives them; the copies kept for
    /// the vectors are normalised ([`unit_pair`]). That keeps the normalisation
    /// off the chase's chain of dependent square roots and divisions (about a
    /// quarter of its latency) while the vectors still get rotations orthogonal
    /// to rounding.
    #[inline(always)]
    fn sweep_zero_shift(&mut self, rot: &mut Rotations<T>) {
        let len = self.len();
        let one = T::one();
        let mut cs = one;
        let (mut oldcs, mut oldsn) = (one, T::zero());
        for i in 0..len - 1 {
            let (sn, r);
            (cs, sn, r) = givens(self.d(i) * cs, self.e(i));
            if i > 0 {
                self.set_e(i - 1, oldsn * r);
            }
            let di;
            (oldcs, oldsn, di) = givens(oldcs * r, self.d(i + 1) * sn);
            self.set_d(i, di);
            rot.right.push(unit_pair(cs, sn));
            rot.left.push(unit_pair(oldcs, oldsn));
        }
        let h = self.d(len - 1) * cs;
        self.set_d(len - 1, h * oldcs);
        self.set_e(len - 2, h * oldsn);
    }

    /// Implicitly shifted QR sweep (Golub–Kahan chase with the shift `shift`);
    /// rotations as in [`View::sweep_zero_shift`].
    #[inline(always)]
    fn sweep_shifted(&mut self, shift: T, rot: &mut Rotations<T>) {
        let len = self.len();
        let d0 = self.d(0);
        // First column of B^T B - shift^2 I, scaled by 1 / d0.
        let mut f = (d0.abs() - shift) * (T::one().copysign(d0) + shift / d0);
        let mut g = self.e(0);
        for i in 0..len - 1 {
            let (cosr, sinr, r) = givens(f, g);
            if i > 0 {
                self.set_e(i - 1, r);
            }
            let (di, ei, dn) = (self.d(i), self.e(i), self.d(i + 1));
            f = cosr * di + sinr * ei;
            let ei = cosr * ei - sinr * di;
            g = sinr * dn;
            let dn = cosr * dn;
            let (cosl, sinl, r) = givens(f, g);
            self.set_d(i, r);
            f = cosl * ei + sinl * dn;
            self.set_d(i + 1, cosl * dn - sinl * ei);
            self.set_e(i, ei);
            if i + 2 < len {
                let en = self.e(i + 1);
                g = sinl * en;
                self.set_e(i + 1, cosl * en);
            }
            rot.right.push(unit_pair(cosr, sinr));
            rot.left.push(unit_pair(cosl, sinl));
        }
        self.set_e(len - 2, f);
    }
}

/// Applies the rotations of a sweep over the block `lo..=hi` (view order, see
/// [`View`]) to the columns of `m`: rotation `i` acts on view columns `(i, i + 1)`
/// as `x' = c x + s y`, `y' = c y - s x` (in matrix columns: `(lo + i, lo + i + 1)`,
/// or `(hi - i, hi - i - 1)` when reversed).
fn apply_rotations<T: Scalar>(m: MatMut<'_, T>, lo: usize, hi: usize, rev: bool, rots: &[(T, T)]) {
    if rev {
        apply_rotation_chain(m, hi, Chain::Backward, rots);
    } else {
        apply_rotation_chain(m, lo, Chain::Forward, rots);
    }
}

simd_dispatch! {
    /// [`bdsqr`] with an explicit iteration factor (tests use 0 to prove that
    /// non-convergence is reported). Arguments must already be checked.
    /// Dispatched so that the chase's `mul_add`s ([`unit_pair`]) are single
    /// instructions, not library calls.
    pub(crate) fn bdsqr_with_budget / bdsqr_simd / bdsqr_body (
        d: &mut [T],
        e: &mut [T],
        u: MatMut<'_, T>,
        v: MatMut<'_, T>,
        maxitr: usize
    ) -> Result<(), Error>
}

#[inline(always)]
fn bdsqr_body<T: Scalar>(
    d: &mut [T],
    e: &mut [T],
    mut u: MatMut<'_, T>,
    mut v: MatMut<'_, T>,
    maxitr: usize,
) -> Result<(), Error> {
    let n = d.len();
    if n == 0 {
        return Ok(());
    }
    let zero = T::zero();
    let eps = T::EPS;
    // Relative tolerance: dbdsqr allows 10 to 100 eps (eps^(-1/8) eps, about 99 eps in
    // f64). 10 eps keeps each neglected entry's share of the residual at 10 eps |B|,
    // so ||B - U S V^T|| / (n eps ||B||) stays well below the usual 30 even for n = 3;
    // convergence at the end is cubic, so the extra cost is a fraction of a sweep.
    let tol = T::of(TOLMUL) * eps;
    let nt = T::of(n as f64);
    // Lower estimate of the smallest singular value (the mu recurrence of
    // Demmel-Kahan), for an absolute threshold below which entries are zero.
    let mut sminoa = d[0].abs();
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
    let maxit = maxitr * n * n;
    let mut iter = 0usize;
    let mut rot = Rotations {
        right: Vec::with_capacity(n),
        left: Vec::with_capacity(n),
    };
    let mut m = n - 1;
    // Block of the previous sweep, to keep the chase direction within a block.
    let (mut oldll, mut oldm): (Option<usize>, Option<usize>) = (None, None);
    let mut rev = false;
    'outer: while m > 0 {
        if iter > maxit {
            return Err(Error::NoConvergence {
                stage: "bdsqr",
                detail: format!(
                    "{} of {} superdiagonal entries still nonzero after {maxit} QR steps",
                    e[..m].iter().filter(|x| **x != zero).count(),
                    n - 1
                ),
            });
        }
        // Bottom unreduced block ll..=m.
        let mut smax = d[m].abs();
        let mut split = None;
        for l in (0..m).rev() {
            if e[l].abs() <= thresh {
                e[l] = zero;
                split = Some(l);
                break;
            }
            smax = smax.max(d[l].abs()).max(e[l].abs());
        }
        let ll = match split {
            Some(l) if l + 1 == m => {
                m -= 1;
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
            if v.nrows() > 0 {
                rotate_cols(v.rb_mut(), m - 1, m, s.cr, s.sr);
            }
            if u.nrows() > 0 {
                rotate_cols(u.rb_mut(), m - 1, m, s.cl, s.sl);
            }
            if m < 2 {
                break;
            }
            m -= 2;
            continue;
        }
        // A new block: chase from the larger end towards the smaller.
        if oldm.is_none_or(|om| ll > om) || oldll.is_none_or(|ol| m < ol) {
            rev = d[ll].abs() < d[m].abs();
        }
        // Convergence tests (relative): the far end, then the mu recurrence.
        let mut view = View {
            d: &mut *d,
            e: &mut *e,
            lo: ll,
            hi: m,
            rev,
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
        oldll = Some(ll);
        oldm = Some(m);
        // Shift from the far 2x2 corner; none if it is negligible (then the zero
        // shift sweep keeps relative accuracy).
        let mut shift = zero;
        if nt * tol * (smin / smax) > eps.max(T::of(0.01) * tol) {
            let sll = view.d(0).abs();
            shift = las2(view.d(len - 2), view.e(len - 2), view.d(len - 1)).0;
            if sll > zero && (shift / sll) * (shift / sll) < eps {
                shift = zero;
            }
        }
        iter += len - 1;
        rot.right.clear();
        rot.left.clear();
        if shift == zero {
            view.sweep_zero_shift(&mut rot);
        } else {
            view.sweep_shifted(shift, &mut rot);
        }
        if view.e(len - 2).abs() <= thresh {
            view.set_e(len - 2, zero);
        }
        // View right rotations act on V (on U when reversed), left ones on U.
        let (for_v, for_u) = if rev {
            (&rot.left, &rot.right)
        } else {
            (&rot.right, &rot.left)
        };
        apply_rotations(v.rb_mut(), ll, m, rev, for_v);
        apply_rotations(u.rb_mut(), ll, m, rev, for_u);
    }
    // Nonnegative values (flip the right vector), then descending order.
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
    Ok(())
}

fn swap_cols<T: Scalar>(m: MatMut<'_, T>, i: usize, j: usize) {
    if m.nrows() > 0 {
        crate::linalg::steqr::col_pair(m, i, j, |x, y| x.swap_with_slice(y));
    }
}
