//! The Löwner step of the EVD merge (Gu and Eisenstat 1994; LAPACK `dlaed3`)
//! in a form the compiler vectorises.

use faer::MatRef;

use crate::scalar::Scalar;

/// Gu–Eisenstat / Löwner weights of the EVD merge (LAPACK `dlaed3`):
/// `z-hat_i^2 = -delta[(i, i)] prod_{j != i} delta[(i, j)] / (dl[i] - dl[j])`
/// (`delta[(i, j)] = D_i - lambda_j`), signed like `z_i`. The product runs over
/// roots `j` in the outer loop, each root's factors formed over its contiguous
/// column, which the compiler vectorises (the `k^2` divisions are most of the
/// step's time). The bidiagonal SVD's merge has its own form of this loop.
pub(crate) fn lowner_zhat_cols<T: Scalar>(z: &[T], delta: MatRef<'_, T>, dl: &[T]) -> Vec<T> {
    let k = z.len();
    let zero = T::zero();
    let mut w: Vec<T> = (0..k).map(|i| delta[(i, i)]).collect();
    for j in 0..k {
        let col = delta
            .col(j)
            .try_as_col_major()
            .expect("unit row stride")
            .as_slice();
        let dj = dl[j];
        let (wl, wr) = w.split_at_mut(j);
        for ((wi, &c), &di) in wl.iter_mut().zip(&col[..j]).zip(&dl[..j]) {
            *wi *= c / (di - dj);
        }
        for ((wi, &c), &di) in wr[1..].iter_mut().zip(&col[j + 1..k]).zip(&dl[j + 1..k]) {
            *wi *= c / (di - dj);
        }
    }
    (0..k)
        .map(|i| {
            let m = (-w[i]).max(zero).sqrt();
            if z[i] < zero {
                -m
            } else {
                m
            }
        })
        .collect()
}
