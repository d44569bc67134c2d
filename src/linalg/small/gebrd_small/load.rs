//! The working copy of [`super::small_svd`]'s input: transposed when wide,
//! scaled by powers of two, checked for NaN and infinities.

use super::GebrdWorkspace;
use crate::linalg::small::jacobi::pow2_scale;
use crate::{Result, Scalar};
use faer::MatRef;

/// The tall working copy of a matrix, scaled: `mt x nt` with `mt >= nt`,
/// the input's transpose when `transposed`, times `h r` (powers of two).
pub(super) struct Scaled<T> {
    pub(super) mt: usize,
    pub(super) nt: usize,
    pub(super) transposed: bool,
    pub(super) h: T,
    pub(super) r: T,
}

impl<T: Scalar> Scaled<T> {
    /// The input's shape.
    pub(super) fn shape(&self) -> (usize, usize) {
        if self.transposed {
            (self.nt, self.mt)
        } else {
            (self.mt, self.nt)
        }
    }

    /// Undoes the scaling on singular values.
    pub(super) fn unscale(&self, values: &mut [T]) {
        for x in values.iter_mut() {
            *x = *x / self.h / self.r;
        }
    }
}

/// Copies `a` (transposed if wide) into `ws.a`, scaled, after sizing `ws`;
/// [`crate::Error::NonFinite`] (position in `a`) if an entry is NaN or
/// infinite, found by the scan the scaling needs anyway.
pub(super) fn load_scaled<T: Scalar>(
    a: MatRef<'_, T>,
    ws: &mut GebrdWorkspace<T>,
    values: &[T],
    vectors: bool,
) -> Result<Scaled<T>> {
    let (m, n) = (a.nrows(), a.ncols());
    let transposed = m < n;
    let (mt, nt) = if transposed { (n, m) } else { (m, n) };
    assert_eq!(values.len(), nt, "small_svd: values must hold min(m, n)");
    ws.reserve(mt, nt, vectors);
    let src = if transposed { a.transpose() } else { a };
    let b = &mut ws.a[..mt * nt];
    copy_col_major(src, b);
    // Bring the largest entry into [1, 2) by powers of two (exact), as the
    // Jacobi route does: the bidiagonal QR loses relative accuracy on
    // matrices near the underflow threshold. Undone on the singular values
    // (`unscale`); the vectors do not change.
    let (amax, finite) = crate::matrix::scan::max_abs_finite(b);
    if !finite {
        return Err(
            crate::matrix::check_finite(a, false).expect_err("the scan found a non-finite entry")
        );
    }
    let (h, r) = pow2_scale(amax);
    if (h, r) != (T::one(), T::one()) {
        for x in b.iter_mut() {
            *x = *x * h * r;
        }
    }
    Ok(Scaled {
        mt,
        nt,
        transposed,
        h,
        r,
    })
}

/// Copies `src` (`r x c`, any strides) into the column-major `dst`
/// (`r c` entries). The two layouts of a batch take loops over contiguous
/// slices (faer's general `copy_from` was 4-10% of a 32x32 SVD with
/// vectors); other strides go entry by entry.
pub(super) fn copy_col_major<T: Scalar>(src: MatRef<'_, T>, dst: &mut [T]) {
    let r = src.nrows();
    if r == 0 {
        return;
    }
    if let Some(cm) = src.try_as_col_major() {
        for (j, d) in dst.chunks_exact_mut(r).enumerate() {
            d.copy_from_slice(cm.col(j).try_as_col_major().expect("unit rows").as_slice());
        }
    } else if let Some(rm) = src.transpose().try_as_col_major() {
        // Row i of `src` is contiguous: scatter it along row i of `dst`.
        for i in 0..r {
            let row = rm.col(i).try_as_col_major().expect("unit rows").as_slice();
            for (j, &x) in row.iter().enumerate() {
                dst[i + j * r] = x;
            }
        }
    } else {
        for (j, d) in dst.chunks_exact_mut(r).enumerate() {
            for (i, x) in d.iter_mut().enumerate() {
                *x = src[(i, j)];
            }
        }
    }
}
