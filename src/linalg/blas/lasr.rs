//! A chain of plane rotations applied to consecutive columns of a matrix
//! (LAPACK `dlasr` with `side = 'R'`, `pivot = 'V'`): the vector update of
//! one implicit QR sweep of the bidiagonal SVD ([`crate::linalg::bidiagonal::bdsdc::bdsqr`])
//! and of the symmetric tridiagonal QL iteration ([`crate::linalg::tridiagonal::steqr`]).
//!
//! Rotation `k` of a sweep acts on columns `k` and `k + 1` of the chain, and
//! column `k + 1` is touched again by rotation `k + 1`. Applied one pair at a
//! time (BLAS `drot` per rotation), every column is loaded and stored twice
//! per sweep. Here the rows are taken in strips that stay in registers: the
//! strip of the column carried from one rotation to the next never leaves
//! them, so each column is loaded once and stored once per sweep (Van Zee, van
//! de Geijn and Quintana-Ortí, "Restructuring the tridiagonal and bidiagonal
//! QR algorithms for performance", ACM TOMS 40(3), 2014, §3 calls this the
//! wavefront over one sweep).
//!
//! The arithmetic per entry is `drot`'s with one product fused: `x := c x + s y`
//! as `fma(c, x, s y)` and `y := c y - s x` as `fma(-s, x, c y)`. The carried
//! column `x` then passes through one fused multiply-add per rotation (four
//! cycles on current x86 cores) instead of a product and a sum (eight), and
//! that dependency, not the arithmetic, bounds a strip of 16 rows: on
//! 10,000 32x32 SVDs with vectors the chain was 16% of the samples. `mul_add`
//! is exactly rounded everywhere (see `simd_dispatch!`), so every strip width,
//! ISA and the strided path give the same bits ([`rotate_pair_fused`]).
//!
//! The single rotations the solvers share live here as well: the plane
//! rotation that zeroes an entry ([`givens`], LAPACK `dlartg`), BLAS `drot`
//! on two columns ([`rotate_cols`], [`rotate_pair`]), and two columns of a
//! matrix as slices ([`col_pair`]). Their users are the tridiagonal QL
//! iteration (`steqr`), the bidiagonal QR iteration (`bdsqr`) and the merges
//! of both divide and conquers (`stedc`, `bdsdc`).

use faer::reborrow::ReborrowMut;
use faer::MatMut;

use crate::scalar::Scalar;

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

/// Plane rotation of columns `a != b` (BLAS `drot`): `a' = c a + s b`,
/// `b' = c b - s a`. The merges of both divide and conquers (tridiagonal and
/// bidiagonal) and the bidiagonal QR's deflation.
pub(crate) fn rotate_cols<T: Scalar>(q: MatMut<'_, T>, a: usize, b: usize, cs: T, sn: T) {
    col_pair(q, a, b, |x, y| rotate_pair(x, y, cs, sn));
}

/// [`rotate_cols`] on two slices of equal length (the same operations, so the
/// same bits, wherever the columns are stored).
pub(crate) fn rotate_pair<T: Scalar>(x: &mut [T], y: &mut [T], cs: T, sn: T) {
    for (u, v) in x.iter_mut().zip(y.iter_mut()) {
        let (p, r) = (*u, *v);
        *u = cs * p + sn * r;
        *v = cs * r - sn * p;
    }
}

/// The order in which a chain visits the columns of the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Chain {
    /// Columns `first, first + 1, ..., first + rots.len()`.
    Forward,
    /// Columns `first, first - 1, ..., first - rots.len()`.
    Backward,
}

/// Applies `rots` to the columns of `m` visited from `first` in `order`:
/// with `x` column `k` of the chain (as left by rotation `k - 1`) and `y`
/// column `k + 1`, rotation `k = (c, s)` sets `x := c x + s y` and
/// `y := c y - s x` (BLAS `drot`, one product of each fused: see the module
/// docs). Columns with unit row stride take the register-strip kernel; any
/// other layout is rotated pair by pair ([`rotate_pair_fused`]), with the
/// same results.
///
/// # Panics
/// If the chain leaves the columns of `m`.
pub(crate) fn apply_rotation_chain<T: Scalar>(
    mut m: MatMut<'_, T>,
    first: usize,
    order: Chain,
    rots: &[(T, T)],
) {
    let len = rots.len();
    if len == 0 || m.nrows() == 0 {
        return;
    }
    let lo = match order {
        Chain::Forward => first,
        Chain::Backward => first.checked_sub(len).expect("chain leaves the matrix"),
    };
    assert!(lo + len < m.ncols(), "chain leaves the matrix");
    if m.row_stride() != 1 {
        for (k, &(c, s)) in rots.iter().enumerate() {
            let (x, y) = match order {
                Chain::Forward => (first + k, first + k + 1),
                Chain::Backward => (first - k, first - k - 1),
            };
            col_pair(m.rb_mut(), x, y, |x, y| rotate_pair_fused(x, y, c, s));
        }
        return;
    }
    rotate_chain(m.subcols_mut(lo, len + 1), order, rots);
}

/// One rotation of the chain on two columns given as slices of equal length,
/// with the chain kernel's arithmetic: `x := fma(c, x, s y)`,
/// `y := fma(-s, x, c y)` (the old `x` in both).
#[inline(always)]
pub(crate) fn rotate_pair_fused<T: Scalar>(x: &mut [T], y: &mut [T], c: T, s: T) {
    for (u, v) in x.iter_mut().zip(y.iter_mut()) {
        let (p, q) = (*u, *v);
        *u = c.mul_add(p, s * q);
        *v = (-s).mul_add(p, c * q);
    }
}

simd_dispatch! {
    /// [`apply_rotation_chain`] on the `rots.len() + 1` unit-stride columns
    /// of `m`, visited in `order` from its first (`Forward`) or last column.
    fn rotate_chain / rotate_chain_simd / rotate_chain_body (
        m: MatMut<'_, T>,
        order: Chain,
        rots: &[(T, T)]
    )
}

/// Rows in strips of 16, then 4, then one at a time. Each strip walks the
/// columns afresh (no list of columns is built: the chain runs once per QR
/// sweep, and an allocation per sweep showed in profiles of small SVDs).
#[inline(always)]
fn rotate_chain_body<T: Scalar>(mut m: MatMut<'_, T>, order: Chain, rots: &[(T, T)]) {
    let nrows = m.nrows();
    let mut r = 0;
    while r + 16 <= nrows {
        rotate_strip::<T, 16>(m.rb_mut(), order, rots, r);
        r += 16;
    }
    while r + 4 <= nrows {
        rotate_strip::<T, 4>(m.rb_mut(), order, rots, r);
        r += 4;
    }
    while r < nrows {
        rotate_strip::<T, 1>(m.rb_mut(), order, rots, r);
        r += 1;
    }
}

/// Rows `r..r + S` of the whole chain, in `order`.
#[inline(always)]
fn rotate_strip<T: Scalar, const S: usize>(
    m: MatMut<'_, T>,
    order: Chain,
    rots: &[(T, T)],
    r: usize,
) {
    let cols = m.col_iter_mut().map(|c| {
        &mut c
            .try_as_col_major_mut()
            .expect("unit row stride")
            .as_slice_mut()[r..r + S]
    });
    match order {
        Chain::Forward => rotate_strip_of::<T, S>(cols, rots),
        Chain::Backward => rotate_strip_of::<T, S>(cols.rev(), rots),
    }
}

/// One strip of the chain, its columns in chain order: the carried column's
/// strip stays in `x` from one rotation to the next.
#[inline(always)]
fn rotate_strip_of<'a, T: Scalar, const S: usize>(
    mut cols: impl Iterator<Item = &'a mut [T]>,
    rots: &[(T, T)],
) {
    let mut prev = cols.next().expect("a chain has rots + 1 columns");
    let mut x: [T; S] = (&*prev).try_into().expect("strip of S rows");
    for &(c, s) in rots {
        let next = cols.next().expect("a chain has rots + 1 columns");
        let y: &[T; S] = (&*next).try_into().expect("strip of S rows");
        let mut done = [T::zero(); S];
        let ms = -s;
        for i in 0..S {
            // `c q` and `s q` do not wait for the carried `p`; one fused
            // step per output does (module docs).
            let (p, q) = (x[i], y[i]);
            done[i] = c.mul_add(p, s * q);
            x[i] = ms.mul_add(p, c * q);
        }
        prev.copy_from_slice(&done);
        prev = next;
    }
    prev.copy_from_slice(&x);
}

#[cfg(test)]
mod tests {
    use super::*;
    use faer::Mat;

    /// The chain against its rotations applied pair by pair, bitwise, both
    /// orders, row counts around the strip widths, and a strided (row-major)
    /// view; and within rounding of BLAS `drot` pair by pair.
    #[test]
    fn chain_matches_pairwise_rotations() {
        for nrows in [1usize, 3, 4, 5, 15, 16, 17, 21, 33, 40] {
            for order in [Chain::Forward, Chain::Backward] {
                let ncols = 7;
                let a = Mat::from_fn(nrows, ncols, |i, j| {
                    ((i * 31 + j * 17) % 13) as f64 / 7.0 - 0.9
                });
                let rots: Vec<(f64, f64)> = (0..5)
                    .map(|k| {
                        let t = 0.3 + k as f64;
                        (t.cos(), t.sin())
                    })
                    .collect();
                let first = if order == Chain::Forward { 1 } else { 5 };
                let mut want = a.clone();
                let mut drot = a.clone();
                for (k, &(c, s)) in rots.iter().enumerate() {
                    let (x, y) = if order == Chain::Forward {
                        (first + k, first + k + 1)
                    } else {
                        (first - k, first - k - 1)
                    };
                    col_pair(want.as_mut(), x, y, |x, y| rotate_pair_fused(x, y, c, s));
                    rotate_cols(drot.as_mut(), x, y, c, s);
                }
                let mut got = a.clone();
                apply_rotation_chain(got.as_mut(), first, order, &rots);
                assert!(got == want, "nrows {nrows}, {order:?}");
                // The fused products move the result by rounding only.
                let diff = (&got - &drot).norm_max();
                assert!(diff <= 8.0 * f64::EPSILON, "{diff:e} from drot");
                let mut t = a.transpose().to_owned();
                apply_rotation_chain(t.as_mut().transpose_mut(), first, order, &rots);
                assert!(t.transpose().to_owned() == want, "strided, nrows {nrows}");
            }
        }
    }

    #[test]
    fn givens_properties() {
        let vals = [0.0, 1.0, -2.5, 1e-300, -1e300, 3e-320, 1e200];
        for &f in &vals {
            for &g in &vals {
                let (c, s, r) = givens::<f64>(f, g);
                assert!((c * c + s * s - 1.0).abs() <= 4e-16, "{f} {g}");
                // Subnormal inputs round absolutely: allow a few of their ulps.
                let tol = 4e-16 * f.abs().max(g.abs()) + 4.0 * 5e-324;
                assert!((c * f + s * g - r).abs() <= tol, "{f} {g}");
                assert!((-s * f + c * g).abs() <= tol, "{f} {g}");
                assert!(c >= 0.0);
            }
        }
    }

    #[test]
    #[should_panic(expected = "chain leaves the matrix")]
    fn chain_past_the_last_column_panics() {
        let mut a = Mat::<f64>::zeros(3, 3);
        apply_rotation_chain(a.as_mut(), 1, Chain::Forward, &[(1.0, 0.0); 2]);
    }
}
