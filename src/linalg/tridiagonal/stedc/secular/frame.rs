//! The frames of the secular solver: how the unknown and the pole
//! differences `D_j - lambda` are represented, so that one root finder serves
//! the EVD (`dlaed4`) and the SVD (`dlasd4`) with each difference accurate to
//! a few ulps.

use crate::scalar::Scalar;

/// How the unknown of the secular equation and the pole differences are represented.
///
/// The equation is always `w(lambda) = 1/rho + sum_j z_j^2 / (D_j - lambda)` ("lambda
/// space"); the solver iterates on `t`, the position of the root relative to an origin
/// pole `o`, and needs `D_j - lambda(t)` to full relative accuracy for every `j`.
/// * EVD (`dlaed4`), [`Shifted`]: `lambda = D_o + t`, `D_j - lambda = (D_j - D_o) - t`.
/// * SVD (`dlasd4`), `D_j = d_j^2`, `lambda = sigma^2`, `sigma = d_o + t`:
///   `D_j - lambda = ((d_j - d_o) - t) ((d_j + d_o) + t)`, accurate from the `d_j`
///   themselves even where the squares would cancel (see `bdsdc::secular`).
///
/// Model steps are computed in lambda space and mapped to `t` by [`Frame::step`].
pub(crate) trait Frame<T: Scalar> {
    /// Stage named in a
    /// [`Error::NoConvergence`](crate::error::Error::NoConvergence).
    const STAGE: &'static str;
    /// Moves the origin to pole `o` (prepares the per-pole differences).
    fn set_origin(&mut self, o: usize);
    /// `D_j - lambda(t)`.
    fn delta(&self, j: usize, t: T) -> T;
    /// `D_j - lambda(t)` for `j = j0..j0 + L` (a block of [`eval()`](super::eval::eval)'s loop).
    #[inline(always)]
    fn deltas<const L: usize>(&self, j0: usize, t: T) -> [T; L] {
        std::array::from_fn(|l| self.delta(j0 + l, t))
    }
    /// `lambda(t) - D_o`.
    fn offset(&self, t: T) -> T;
    /// The `t` with `lambda(t) - D_o = x` (`D_o + x` inside the domain).
    fn iterate(&self, x: T) -> T;
    /// The `t` of `lambda(t) + eta`, or `None` if that leaves the domain.
    fn step(&self, t: T, eta: T) -> Option<T>;
    /// Records the converged root `t` (the final differences) and returns its value
    /// (`lambda` for the EVD, `sigma` for the SVD).
    fn finish(&mut self, t: T) -> T;
}

/// The EVD frame: `lambda = d_o + t`; `dd` (the caller's `delta` buffer) holds
/// `d_j - d_o` while iterating and `d_j - lambda` on exit.
pub(crate) struct Shifted<'a, T> {
    pub(super) d: &'a [T],
    pub(super) dd: &'a mut [T],
    pub(super) o: usize,
    /// The converged iterate, once [`Frame::finish`] ran.
    pub(super) t: T,
}

impl<T: Scalar> Frame<T> for Shifted<'_, T> {
    const STAGE: &'static str = "dc secular equation";
    fn set_origin(&mut self, o: usize) {
        self.o = o;
        for j in 0..self.d.len() {
            self.dd[j] = self.d[j] - self.d[o];
        }
    }
    #[inline(always)]
    fn delta(&self, j: usize, t: T) -> T {
        self.dd[j] - t
    }
    #[inline(always)]
    fn deltas<const L: usize>(&self, j0: usize, t: T) -> [T; L] {
        let dd = &self.dd[j0..j0 + L];
        std::array::from_fn(|l| dd[l] - t)
    }
    #[inline(always)]
    fn offset(&self, t: T) -> T {
        t
    }
    #[inline(always)]
    fn iterate(&self, x: T) -> T {
        x
    }
    #[inline(always)]
    fn step(&self, t: T, eta: T) -> Option<T> {
        Some(t + eta)
    }
    fn finish(&mut self, t: T) -> T {
        self.t = t;
        for x in self.dd.iter_mut() {
            *x -= t;
        }
        self.d[self.o] + t
    }
}
