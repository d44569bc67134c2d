//! The deflation decisions of a merge (LAPACK `dlaed2`): the poles in
//! ascending order with their weights, the scan that removes tiny weights and
//! close pairs, and the grouping of the kept columns by sparsity type that
//! makes the merge products two half-size GEMMs (`dlaed3`).

use super::{deflate, group_by_type, sorted_by_value, ColType};
use crate::linalg::tridiagonal::stedc::secular::Secular;
use crate::scalar::Scalar;

/// The rank-one problem of a merge before deflation (`dlaed2`'s first part),
/// shared by [`MergeProblem::new`](super::MergeProblem::new) and
/// [`MergeProblem::new_split`](super::MergeProblem::new_split).
pub(super) struct Poles<T> {
    /// Pole order: position `p` holds the eigenvalue `d[perm[p]]`.
    perm: Vec<usize>,
    /// The eigenvalues in pole order.
    dl: Vec<T>,
    /// `z` normalised, in pole order.
    zs: Vec<T>,
    /// Which half each column comes from, in pole order.
    typ: Vec<ColType>,
    rho: T,
    /// `max |z_j|` after normalising.
    zmax: T,
    /// Deflation tolerance as in `dlaed2`: `8 eps max(|d|_max, |z|_max)`.
    tol: T,
}

impl<T: Scalar> Poles<T> {
    /// From the eigenvalues `d` of the halves (left `n1`, then right) and
    /// `z = (last row of Q1, sign(beta) first row of Q2)` before normalising.
    pub(super) fn new(d: &[T], mut z: Vec<T>, n1: usize, beta: T) -> Self {
        let n = d.len();
        let zero = T::zero();
        // Normalise: |z| = sqrt(2) exactly in exact arithmetic (dlaed2).
        let inv_sqrt2 = T::one() / T::of(2.0).sqrt();
        for zj in z.iter_mut() {
            *zj *= inv_sqrt2;
        }
        let rho = T::of(2.0) * beta.abs();
        // Pole order: stable sort of all n eigenvalues (the halves are each
        // ascending, so this is the merge of dlamrg; ties keep the left half
        // first).
        let mut perm: Vec<usize> = (0..n).collect();
        perm.sort_by(|&a, &b| d[a].partial_cmp(&d[b]).unwrap_or(std::cmp::Ordering::Equal));
        let dl: Vec<T> = perm.iter().map(|&p| d[p]).collect();
        let zs: Vec<T> = perm.iter().map(|&p| z[p]).collect();
        let typ: Vec<ColType> = perm
            .iter()
            .map(|&p| {
                if p < n1 {
                    ColType::Top
                } else {
                    ColType::Bottom
                }
            })
            .collect();
        let mut dmax = zero;
        let mut zmax = zero;
        for j in 0..n {
            dmax = dmax.max(dl[j].abs());
            zmax = zmax.max(zs[j].abs());
        }
        let tol = T::of(8.0) * T::EPS * dmax.max(zmax);
        Poles {
            perm,
            dl,
            zs,
            typ,
            rho,
            zmax,
            tol,
        }
    }
}

/// What a merge's deflation decided (`dlaed2`), in terms of the columns of
/// `blockdiag(Q1, Q2)`.
pub(super) struct Decisions<T> {
    /// The secular equation of the kept (non-deflated) poles.
    pub(super) secular: Secular<T>,
    /// How many kept columns are top-only, dense and bottom-only.
    pub(super) ctot: [usize; 3],
    /// Kept pole `r`'s row in the type-ordered product.
    pub(super) type_row: Vec<usize>,
    /// Columns whose top halves the product reads: the top-only, then the dense.
    pub(super) top_cols: Vec<usize>,
    /// Columns whose bottom halves the product reads: the dense, then the
    /// bottom-only.
    pub(super) bot_cols: Vec<usize>,
    /// The deflated eigenvectors' columns, ascending by value (stable: ties keep
    /// pole order), and their values.
    pub(super) defl_cols: Vec<usize>,
    pub(super) ddefl: Vec<T>,
}

impl<T: Scalar> Poles<T> {
    /// Deflates (`dlaed2`'s scan): every rotation it takes is handed to
    /// `rotate(a, b, cs, sn)` in order, on the columns `a`, `b` of
    /// `blockdiag(Q1, Q2)`, for the caller to apply or record.
    pub(super) fn decide(mut self, mut rotate: impl FnMut(usize, usize, T, T)) -> Decisions<T> {
        let n = self.perm.len();
        let perm = &self.perm;
        let (nondefl, defl) = if self.rho * self.zmax <= self.tol {
            // The rank-one term is negligible: everything deflates.
            (Vec::new(), (0..n).collect())
        } else {
            deflate(
                &mut self.dl,
                &mut self.zs,
                &mut self.typ,
                0..n,
                self.rho,
                self.tol,
                |p, j, cs, sn| rotate(perm[p], perm[j], cs, sn),
            )
        };
        let (ctot, type_row, by_row) = group_by_type(&nondefl, &self.typ);
        let ntop = ctot[0] + ctot[1];
        let top_cols = by_row[..ntop].iter().map(|&j| perm[j]).collect();
        let bot_cols = by_row[ctot[0]..].iter().map(|&j| perm[j]).collect();
        let defl = sorted_by_value(defl, &self.dl);
        Decisions {
            secular: Secular {
                d: nondefl.iter().map(|&j| self.dl[j]).collect(),
                z: nondefl.iter().map(|&j| self.zs[j]).collect(),
                rho: self.rho,
            },
            ctot,
            type_row,
            top_cols,
            bot_cols,
            defl_cols: defl.iter().map(|&j| perm[j]).collect(),
            ddefl: defl.iter().map(|&j| self.dl[j]).collect(),
        }
    }
}
