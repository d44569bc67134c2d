//! `Z := Q Z` for `Q = H_0 H_1 ... H_{k-1}` given by its Householder
//! vectors in columns (LAPACK `dormqr`, side L, no transpose): the shared
//! back-transformation of the one-stage reductions (`dormtr` after `sytrd`,
//! both halves of `dormbr` after `gebrd`).
//!
//! Reflector `j` is `H_j = I - tau_j v_j v_j^T` with `v_j[0..j] = 0`,
//! `v_j[j] = 1` (implicit) and its tail in `v[j+1.., j]`: the unit lower
//! trapezoidal storage of [`crate::linalg::householder`]. The reflectors are
//! applied as compact-WY blocks `I - V T V^T` (`dlarft` + `dlarfb`), last block
//! first, so that each block only touches the rows it changes.

use crate::error::Error;
use crate::linalg::householder::{apply_block_reflector_left, larf_left, larft};
use crate::linalg::par::Fork;
use crate::Scalar;
use faer::reborrow::*;
use faer::{Mat, MatMut, MatRef};

/// Smallest column count of `z` that [`ormqr_on`] splits in two tasks.
pub const ORMQR_SPLIT_MIN: usize = 64;

/// `Z := H_0 ... H_{k-1} Z` (module docs) with `v` `r x k` (`k <= r`), `tau`
/// of `k` entries and `z` `r x c` with unit row stride, in blocks of `nb`
/// reflectors (`nb <= 1`: one at a time, LAPACK `dlarf`). A block whose
/// reflectors are all the identity is skipped.
///
/// # Panics
/// On inconsistent shapes.
pub fn ormqr<T: Scalar>(v: MatRef<'_, T>, tau: &[T], mut z: MatMut<'_, T>, nb: usize) {
    let (r, k) = (v.nrows(), v.ncols());
    assert!(k <= r && z.nrows() == r, "ormqr: shapes");
    assert!(tau.len() >= k, "ormqr: tau too short");
    if k == 0 || z.ncols() == 0 {
        return;
    }
    if nb <= 1 {
        for j in (0..k).rev() {
            let tail = &v
                .col(j)
                .try_as_col_major()
                .expect("unit row stride")
                .as_slice()[j + 1..];
            larf_left(tau[j], tail, z.rb_mut().subrows_mut(j, r - j));
        }
        return;
    }
    apply_blocks(v, &block_factors(v, tau, nb), z, nb);
}

/// The triangular factor `T` of every block of `nb` reflectors of `v`
/// (`dlarft`), `None` for a block of identities. Formed once and shared by
/// the column halves of [`ormqr_on`].
fn block_factors<T: Scalar>(v: MatRef<'_, T>, tau: &[T], nb: usize) -> Vec<Option<Mat<T>>> {
    let (r, k) = (v.nrows(), v.ncols());
    (0..k.div_ceil(nb))
        .map(|b| {
            let j0 = b * nb;
            let kb = nb.min(k - j0);
            if tau[j0..j0 + kb].iter().all(|&t| t == T::zero()) {
                return None;
            }
            // Reflector j0 + j has its unit at row j0 + j: in the view
            // starting at row j0 that is the (implicit) unit diagonal.
            let mut t = Mat::<T>::zeros(kb, kb);
            larft(
                v.submatrix(j0, j0, r - j0, kb),
                &tau[j0..j0 + kb],
                t.as_mut(),
            );
            Some(t)
        })
        .collect()
}

/// `Z := H_0 ... H_{k-1} Z` from the blocks' factors ([`block_factors`]),
/// last block first.
fn apply_blocks<T: Scalar>(
    v: MatRef<'_, T>,
    factors: &[Option<Mat<T>>],
    mut z: MatMut<'_, T>,
    nb: usize,
) {
    let r = v.nrows();
    for (b, t) in factors.iter().enumerate().rev() {
        let Some(t) = t else { continue };
        let j0 = b * nb;
        let vb = v.submatrix(j0, j0, r - j0, t.ncols());
        apply_block_reflector_left(vb, t.as_ref(), z.rb_mut().subrows_mut(j0, r - j0), false);
    }
}

/// [`ormqr`] with the columns of `z` split in two fixed halves (from
/// [`ORMQR_SPLIT_MIN`] columns on) run by [`Fork::join`] on `par`: each
/// column is computed as by [`ormqr`], so the result depends on the shapes
/// only, not on `par`.
///
/// # Errors
/// Only the fork-join's own ([`Fork::join`]).
///
/// # Panics
/// On inconsistent shapes.
pub fn ormqr_on<T: Scalar>(
    v: MatRef<'_, T>,
    tau: &[T],
    z: MatMut<'_, T>,
    nb: usize,
    par: Fork<'_>,
) -> Result<(), Error> {
    let c = z.ncols();
    if c < ORMQR_SPLIT_MIN {
        ormqr(v, tau, z, nb);
        return Ok(());
    }
    let (r, k) = (v.nrows(), v.ncols());
    assert!(k <= r && z.nrows() == r, "ormqr: shapes");
    assert!(tau.len() >= k, "ormqr: tau too short");
    // The blocks' factors once for both halves (none for one reflector at a
    // time, `nb <= 1`).
    let factors = if nb > 1 {
        block_factors(v, tau, nb)
    } else {
        Vec::new()
    };
    let half = |z: MatMut<'_, T>| {
        if nb > 1 {
            apply_blocks(v, &factors, z, nb)
        } else {
            ormqr(v, tau, z, nb)
        }
    };
    let half = &half;
    let (za, zb) = z.split_at_col_mut(c / 2);
    par.join(
        move || {
            half(za);
            Ok(())
        },
        move || {
            half(zb);
            Ok(())
        },
    )
}
