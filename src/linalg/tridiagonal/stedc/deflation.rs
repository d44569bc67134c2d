//! Deflation of a merge of divide and conquer (LAPACK `dlaed2`, `dlasd2`),
//! shared by the EVD and the bidiagonal SVD: tiny weights and close poles
//! removed, the kept columns grouped by sparsity type.

use std::ops::Range;

use crate::scalar::Scalar;

/// Sparsity type of a (possibly rotated) eigenvector column of `blockdiag(Q1, Q2)`
/// (or of the singular vector blocks of a bidiagonal merge).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ColType {
    /// Nonzero only in the first `n1` rows.
    Top,
    /// Nonzero in both halves (after a rotation mixing a top and a bottom column).
    Dense,
    /// Nonzero only in the last `n2` rows.
    Bottom,
}

/// The deflation pass of a merge (LAPACK `dlaed2`, `dlasd2`) over the poles `range`
/// of `dl` (ascending) with weights `zs` and column types `typ`:
/// * a tiny `rho |z_j| <= tol` leaves `(dl_j, column j)` as it is: deflated;
/// * a pole close to the previous kept one `p` is merged into it by the Givens
///   rotation `c = z_j / tau`, `s = -z_p / tau` that zeroes `z_p`, when the coupling
///   it leaves, `(d_j - d_p) c s`, is at most `tol`; `rotate(p, j, c, s)` applies it
///   to the caller's vector columns (`p' = c p + s j`, `j' = c j - s p`), the two
///   diagonal entries are mixed accordingly and `p` deflates.
///
/// Returns the kept positions (ascending) and the deflated ones (in the order found).
pub(crate) fn deflate<T: Scalar>(
    dl: &mut [T],
    zs: &mut [T],
    typ: &mut [ColType],
    range: Range<usize>,
    rho: T,
    tol: T,
    mut rotate: impl FnMut(usize, usize, T, T),
) -> (Vec<usize>, Vec<usize>) {
    let zero = T::zero();
    let mut nondefl: Vec<usize> = Vec::with_capacity(range.len());
    let mut defl: Vec<usize> = Vec::new();
    let mut prev: Option<usize> = None;
    for j in range {
        if rho * zs[j].abs() <= tol {
            // Tiny z component: (d_j, column) is already an eigenpair.
            defl.push(j);
            continue;
        }
        let Some(p) = prev else {
            prev = Some(j);
            continue;
        };
        // Close poles d_p <= d_j: the Givens rotation G with c = z_j/tau,
        // s = -z_p/tau zeroes z_p; the coupling it leaves is (d_j - d_p) c s
        // (dlaed2's second deflation test).
        let tau = zs[p].hypot(zs[j]);
        let cs = zs[j] / tau;
        let sn = -zs[p] / tau;
        let t = dl[j] - dl[p];
        if (t * cs * sn).abs() <= tol {
            zs[j] = tau;
            zs[p] = zero;
            rotate(p, j, cs, sn);
            if typ[p] != typ[j] {
                typ[j] = ColType::Dense;
            }
            let (c2, s2) = (cs * cs, sn * sn);
            let dp = dl[p] * c2 + dl[j] * s2;
            dl[j] = dl[p] * s2 + dl[j] * c2;
            dl[p] = dp;
            defl.push(p);
        } else {
            nondefl.push(p);
        }
        prev = Some(j);
    }
    if let Some(p) = prev {
        nondefl.push(p);
    }
    (nondefl, defl)
}

/// Type grouping of the kept columns (`dlaed2`'s `coltyp`/`ctot`): the counts per
/// type (top, dense, bottom), the row of each kept entry in the type-ordered
/// coefficient matrix, and the kept entry of each such row.
pub(crate) fn group_by_type(
    nondefl: &[usize],
    typ: &[ColType],
) -> ([usize; 3], Vec<usize>, Vec<usize>) {
    let k = nondefl.len();
    let mut ctot = [0usize; 3];
    for &j in nondefl {
        ctot[type_index(typ[j])] += 1;
    }
    let mut next = [0, ctot[0], ctot[0] + ctot[1]];
    let mut type_row = vec![0usize; k];
    let mut by_row = vec![0usize; k];
    for (r, &j) in nondefl.iter().enumerate() {
        let t = type_index(typ[j]);
        type_row[r] = next[t];
        by_row[next[t]] = j;
        next[t] += 1;
    }
    (ctot, type_row, by_row)
}

/// `idx` sorted by `val[i]`, ascending and stable.
pub(crate) fn sorted_by_value<T: Scalar>(mut idx: Vec<usize>, val: &[T]) -> Vec<usize> {
    idx.sort_by(|&a, &b| {
        val[a]
            .partial_cmp(&val[b])
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    idx
}

pub(crate) fn type_index(t: ColType) -> usize {
    match t {
        ColType::Top => 0,
        ColType::Dense => 1,
        ColType::Bottom => 2,
    }
}
