//! The Löwner step of the EVD merge (Gu and Eisenstat 1994; LAPACK `dlaed3`)
//! in a form the compiler vectorises.

use std::ops::Range;

use super::secular::{Root, Secular};
use crate::scalar::Scalar;

/// Gu–Eisenstat / Löwner weights of the EVD merge (LAPACK `dlaed3`) for the
/// entries `rows` of `z-hat`:
/// `z-hat_i^2 = -delta_i(i) prod_{j != i} delta_i(j) / (d_i - d_j)` with
/// `delta_i(j) = d_i - lambda_j` from [`Root::delta`], signed like `z_i`. The
/// product runs over roots `j` in the outer loop, each root's factors formed
/// over the contiguous `rows`, which the compiler vectorises (the
/// `k * rows.len()` divisions are most of the step's time). Each entry's factors
/// are multiplied in the same order whatever `rows` is, so any partition of
/// `0..k` gives bitwise the same `z-hat`. The bidiagonal SVD's merge has its own
/// form of this loop.
pub(crate) fn lowner_zhat<T: Scalar>(
    sec: &Secular<T>,
    roots: &[Root<T>],
    rows: Range<usize>,
) -> Vec<T> {
    let (d, z) = (&sec.d, &sec.z);
    let zero = T::zero();
    let (lo, hi) = (rows.start, rows.end);
    let mut w: Vec<T> = rows.clone().map(|i| roots[i].delta(d, i)).collect();
    let dr = &d[lo..hi];
    for (j, root) in roots.iter().enumerate() {
        let (dj, dorigin, tau) = (d[j], d[root.origin], root.tau);
        let factor = |wi: &mut T, di: T| *wi *= ((di - dorigin) - tau) / (di - dj);
        // Entries before and after j (the factor of entry j itself is its
        // initial value).
        let split = j.clamp(lo, hi) - lo;
        let skip = usize::from((lo..hi).contains(&j));
        let (wl, wr) = w.split_at_mut(split);
        for (wi, &di) in wl.iter_mut().zip(&dr[..split]) {
            factor(wi, di);
        }
        for (wi, &di) in wr[skip..].iter_mut().zip(&dr[split + skip..]) {
            factor(wi, di);
        }
    }
    w.iter()
        .zip(&z[lo..hi])
        .map(|(&wi, &zi)| {
            let m = (-wi).max(zero).sqrt();
            if zi < zero {
                -m
            } else {
                m
            }
        })
        .collect()
}
