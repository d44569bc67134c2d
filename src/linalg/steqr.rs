//! Eigenvalues and eigenvectors of a symmetric tridiagonal matrix by implicit QL/QR
//! with Wilkinson shifts, organised as LAPACK `dsteqr` with `compz = 'V'`.
//!
//! Used for the leaves of the divide-and-conquer tree (DESIGN.md §4.1 step 3), so it
//! is sequential and deterministic: the same input gives bitwise the same output.
//!
//! Splitting, per-block scaling, the QL-or-QR choice and the total sweep budget
//! are those of [`super::sterf`] (whose helpers this module shares); the sweep
//! itself is the classic implicit QL step with explicit rotations (as in EISPACK
//! `tql2`/`dsteqr`; Golub & Van Loan §8.3.5 for the QR form), because the
//! rotations are needed for the vectors.

use super::sterf::{
    block_end, check_tridiag, first_negligible, max_abs, no_convergence, scale, sym2x2, Consts,
};
use crate::error::Error;
use crate::linalg::lasr::{apply_rotation_chain, Chain};
use crate::scalar::Scalar;
use faer::reborrow::ReborrowMut;
use faer::MatMut;

/// Computes all eigenvalues and eigenvectors of the symmetric tridiagonal matrix
/// `T` with diagonal `d` (length `n`) and off-diagonal `e` (length `n - 1`).
///
/// Semantics of LAPACK `dsteqr` with `compz = 'V'`: on entry `z` (`m x n`, any
/// `m`, typically the identity or the orthogonal matrix that reduced a dense
/// matrix to `T`) is overwritten by `z * Q`, where `T = Q diag(d) Q^T`. On exit
/// `d` holds the eigenvalues ascending and the columns of `z` are permuted to
/// match. `z` may be any view; column-major (unit row stride) is the fast path.
///
/// The method is implicit QL (or QR, chosen per unreduced block by which end of
/// its diagonal is larger) with Wilkinson shifts. The rotations of one sweep are
/// stored and then applied to column pairs of `z`, each a contiguous pass when
/// `z` is column-major. At most `30 n` sweeps are spent in total.
///
/// On return `e` is overwritten (workspace). On error `d`, `e` and `z` are
/// unspecified; no partial result is ever reported as a success.
///
/// # Errors
/// * [`Error::Shape`] if `n >= 1` and `e.len() != n - 1`, or `z.ncols() != n`.
/// * [`Error::NonFinite`] if an entry of `d` or `e` is NaN or infinite.
/// * [`Error::NoConvergence`] if the sweep limit is reached (naming how many
///   off-diagonal entries were still nonzero), or an eigenvalue overflows when the
///   block scaling is undone.
pub fn steqr<T: Scalar>(d: &mut [T], e: &mut [T], z: MatMut<'_, T>) -> Result<(), Error> {
    let n = d.len();
    check_tridiag("steqr", d, e)?;
    if z.ncols() != n {
        return Err(Error::Shape(format!(
            "steqr: z has {} columns but the tridiagonal matrix has order {n}",
            z.ncols()
        )));
    }
    steqr_with_max_iter(d, e, z, 30 * n)
}

/// [`steqr`] with an explicit cap on the total number of sweeps (the public
/// function uses `30 n`, as `dsteqr` does). Arguments must already be checked.
pub(crate) fn steqr_with_max_iter<T: Scalar>(
    d: &mut [T],
    e: &mut [T],
    mut z: MatMut<'_, T>,
    max_iter: usize,
) -> Result<(), Error> {
    let n = d.len();
    if n <= 1 {
        return Ok(());
    }
    let c = Consts::<T>::new();
    // Rotations of the current sweep, in the order they were generated.
    let mut rots = Vec::with_capacity(n - 1);
    let mut sweeps = 0usize;
    let mut start = 0usize;
    while start < n {
        let end = block_end(d, e, start);
        let first = start;
        let nb = end - first + 1;
        start = end + 1;
        if nb == 1 {
            continue;
        }
        let blk_d = &mut d[first..=end];
        let blk_e = &mut e[first..end];
        let anorm = max_abs(blk_d).max(max_abs(blk_e));
        if anorm == T::zero() {
            continue;
        }
        let target = c.scale_target(anorm);
        if let Some(t) = target {
            scale(blk_d, anorm, t);
            scale(blk_e, anorm, t);
        }
        let mut zb = z.as_mut().subcols_mut(first, nb);
        // QR on the block = QL on the reversed block: with P the reversal, T = P T' P
        // and z Q = (z P) Q', so reversing z's columns as well is all it takes.
        if blk_d[nb - 1].abs() < blk_d[0].abs() {
            blk_d.reverse();
            blk_e.reverse();
            for k in 0..nb / 2 {
                col_pair(zb.as_mut(), k, nb - 1 - k, |x, y| x.swap_with_slice(y));
            }
        }
        let ok = implicit_ql(blk_d, blk_e, zb, &mut rots, &c, &mut sweeps, max_iter);
        if let Some(t) = target {
            // e is workspace on return (only its zero pattern matters, for the
            // error count), so it is left scaled.
            scale(blk_d, t, anorm);
        }
        if !ok {
            return Err(no_convergence("steqr", e, max_iter));
        }
    }
    if let Some(i) = d.iter().position(|x| !x.is_finite()) {
        return Err(Error::NoConvergence {
            stage: "steqr",
            detail: format!(
                "eigenvalue {i} overflowed when the block scaling was undone (input too close to the overflow threshold)"
            ),
        });
    }
    // Selection sort: at most n - 1 column swaps, and deterministic.
    for i in 0..n - 1 {
        let mut k = i;
        for j in i + 1..n {
            if d[j] < d[k] {
                k = j;
            }
        }
        if k != i {
            d.swap(i, k);
            col_pair(z.as_mut(), i, k, |x, y| x.swap_with_slice(y));
        }
    }
    Ok(())
}

/// Implicit QL with Wilkinson shifts on one unreduced, scaled block; deflates at
/// the top (index 0). `z` holds the block's columns. Returns `false` when the
/// shared sweep budget runs out first.
fn implicit_ql<T: Scalar>(
    d: &mut [T],
    e: &mut [T],
    mut z: MatMut<'_, T>,
    rots: &mut Vec<(T, T)>,
    c: &Consts<T>,
    sweeps: &mut usize,
    max_iter: usize,
) -> bool {
    let last = d.len() - 1;
    let two = T::of(2.0);
    let mut l = 0usize;
    while l <= last {
        // Smallest m >= l with a negligible e_m: e_m^2 <= eps^2 |d_m d_m+1| (plus
        // SAFE_MIN so zero diagonal neighbours cannot stall it; far below
        // eps^2 times the scaled block norm). The block is scaled, so the
        // squares neither overflow nor lose a non-negligible e to underflow.
        let m = first_negligible(l, last, |m| {
            let t = e[m];
            t * t <= c.eps2 * d[m].abs() * d[m + 1].abs() + T::SAFE_MIN
        });
        if m < last {
            e[m] = T::zero();
        }
        if m == l {
            l += 1;
            continue;
        }
        if m == l + 1 {
            let (a, b, cs, sn) = sym2x2(d[l], e[l], d[l + 1]);
            d[l] = a;
            d[l + 1] = b;
            e[l] = T::zero();
            col_pair(z.as_mut(), l, l + 1, |x, y| rotate(x, y, cs, sn));
            l += 2;
            continue;
        }
        if *sweeps >= max_iter {
            return false;
        }
        *sweeps += 1;

        // Wilkinson shift sigma (eigenvalue of the leading 2x2 nearer d_l);
        // g = d_m - sigma starts the implicit sweep.
        let p = d[l];
        let mut g = (d[l + 1] - p) / (two * e[l]);
        let r = g.hypot(T::one());
        g = d[m] - p + e[l] / (g + r.copysign(g));

        // Chase from the bottom of the active block (m) up to l. The rotation in
        // plane (i, i+1) is kept for the vectors: columns i, i+1 of z become
        // (c z_i - s z_i+1, s z_i + c z_i+1).
        let mut s = T::one();
        let mut cc = T::one();
        let mut p = T::zero();
        rots.clear();
        for i in (l..m).rev() {
            let f = s * e[i];
            let b = cc * e[i];
            let (cn, sn, r) = givens(g, f);
            cc = cn;
            s = sn;
            if i + 1 != m {
                e[i + 1] = r;
            }
            g = d[i + 1] - p;
            let r = (d[i] - g) * s + two * cc * b;
            p = s * r;
            d[i + 1] = g + p;
            g = cc * r - b;
            rots.push((cc, s));
        }
        d[l] -= p;
        e[l] = g;
        // Apply the sweep's rotations in the order they were generated, as one
        // chain (LAPACK `dlasr`): rotation (i, i + 1) takes column i + 1 as
        // left by rotation (i + 1, i + 2), so the chain runs backward from
        // column m. Per entry `z_i+1 := s z_i + c z_i+1` and
        // `z_i := c z_i - s z_i+1`, the arithmetic of `rotate`.
        apply_rotation_chain(z.as_mut(), m, Chain::Backward, rots);
    }
    true
}

/// `(x, y) <- (c x - s y, s x + c y)`, elementwise.
#[inline]
fn rotate<T: Scalar>(x: &mut [T], y: &mut [T], c: T, s: T) {
    for (a, b) in x.iter_mut().zip(y.iter_mut()) {
        let (u, v) = (*a, *b);
        *a = c * u - s * v;
        *b = s * u + c * v;
    }
}

/// Plane rotation with `c f + s g = r`, `-s f + c g = 0`, `c >= 0`, `r` carrying
/// the sign of `f`; squares are formed only inside the safe range, otherwise
/// after scaling by the larger magnitude (the approach of LAPACK 3.10 `dlartg`).
#[inline(always)]
pub(crate) fn givens<T: Scalar>(f: T, g: T) -> (T, T, T) {
    if g == T::zero() {
        return (T::one(), T::zero(), f);
    }
    if f == T::zero() {
        return (T::zero(), T::one().copysign(g), g.abs());
    }
    let safmin = T::SAFE_MIN;
    let safmax = T::one() / safmin;
    let rtmin = safmin.sqrt();
    let rtmax = (safmax / T::of(2.0)).sqrt();
    let (f1, g1) = (f.abs(), g.abs());
    if f1 > rtmin && f1 < rtmax && g1 > rtmin && g1 < rtmax {
        let h = (f * f + g * g).sqrt();
        let r = h.copysign(f);
        (f1 / h, g / r, r)
    } else {
        let u = safmin.max(f1).max(g1).min(safmax);
        let (fs, gs) = (f / u, g / u);
        let h = (fs * fs + gs * gs).sqrt();
        let r = h.copysign(f);
        (fs.abs() / h, gs / r, r * u)
    }
}

/// Runs `op` on columns `i != j` of `z` as two mutable slices: directly when the
/// columns are contiguous, through copies otherwise.
pub(crate) fn col_pair<T: Scalar>(
    z: MatMut<'_, T>,
    i: usize,
    j: usize,
    op: impl FnOnce(&mut [T], &mut [T]),
) {
    let (mut x, mut y) = z.two_cols_mut(i, j);
    if let (Some(xs), Some(ys)) = (
        x.rb_mut().try_as_col_major_mut(),
        y.rb_mut().try_as_col_major_mut(),
    ) {
        op(xs.as_slice_mut(), ys.as_slice_mut());
        return;
    }
    let mut xv: Vec<T> = x.as_mut().iter().copied().collect();
    let mut yv: Vec<T> = y.as_mut().iter().copied().collect();
    op(&mut xv, &mut yv);
    for (dst, src) in x.iter_mut().zip(xv) {
        *dst = src;
    }
    for (dst, src) in y.iter_mut().zip(yv) {
        *dst = src;
    }
}

#[cfg(test)]
mod tests;
