//! The copies of a column block of `Z` that the block kernels run on: `Z^T`
//! for the GEMM and FMA kernels (the rows a block touches become contiguous
//! columns), and `Z` with a padded column stride for the in-place kernel when
//! the caller's stride is a multiple of 4 KiB.

use crate::Scalar;
use faer::prelude::*;
use faer::MatMut;
use faer::MatRef;

/// Whether the columns of `z` start a multiple of 4 KiB apart (`n` a
/// multiple of 512 values in f64, of 1024 in f32, for a whole `n x n` matrix
/// of eigenvectors): then the rows a block touches in every column map to
/// the same cache sets, and the in-place kernel, which reads eight columns
/// at a time over a window of a few hundred columns, loses its window from
/// L1 and L2. Measured at n = 4096 (one thread, `benches/backtransform_rate`,
/// "Z stride n+8"): 32.7-33.6 GF/s with the stride `n`, 35.2-36.0 with `n + 8`
/// (f32: 66.0 against 68.4).
pub(super) fn aliased_stride<T>(z: MatRef<'_, T>) -> bool {
    let bytes = z.col_stride().unsigned_abs() * std::mem::size_of::<T>();
    z.ncols() > 1 && bytes.is_multiple_of(4096)
}

/// A copy of `z` (`n x kc`) in `buf` with the column stride `n` rounded up
/// to a multiple of 8 values, plus 8 (plus 8 more if that is a multiple of
/// 4 KiB, see
/// [`aliased_stride`]), handed to `f`, then copied back: `n kc` values of
/// workspace (what [`with_transposed_in`] takes for the same block) and two
/// passes over `z`, against `4 L` flops per reflector and column.
pub(super) fn with_padded_in<T: Scalar>(
    mut z: MatMut<'_, T>,
    buf: &mut Vec<T>,
    f: impl FnOnce(MatMut<'_, T>),
) {
    let (n, kc) = (z.nrows(), z.ncols());
    let mut ld = n.next_multiple_of(8) + 8;
    if (ld * std::mem::size_of::<T>()).is_multiple_of(4096) {
        ld += 8;
    }
    if buf.len() < ld * kc {
        buf.resize(ld * kc, T::zero());
    }
    let mut zp = MatMut::from_column_major_slice_with_stride_mut(&mut buf[..ld * kc], n, kc, ld);
    zp.copy_from(z.rb());
    f(zp.rb_mut());
    z.copy_from(zp.rb());
}

/// Column stride of the transposed copy of `kc` columns: a multiple of 8
/// values, at least `kc + 8` and not a multiple of 256 values, so the stride is
/// never a multiple of 4 KiB (columns a power of two apart would map to the
/// same cache sets).
pub fn transposed_ld(kc: usize) -> usize {
    let ld = kc.next_multiple_of(8) + 8;
    if ld.is_multiple_of(256) {
        ld + 8
    } else {
        ld
    }
}

/// A transposed copy `Y = Z^T` of the `n x kc` block `z` (stride
/// [`transposed_ld`]), handed to `f`, then copied back: in `Z` the rows a
/// block touches are short pieces of `kc` far-apart columns, in `Z^T` they
/// are contiguous columns, which the GEMMs stream well. Costs `n kc` values
/// of workspace and two passes over `z`.
pub fn with_transposed<T: Scalar>(z: MatMut<'_, T>, f: impl FnOnce(MatMut<'_, T>)) {
    with_transposed_in(z, &mut Vec::new(), f);
}

/// [`with_transposed`] in the caller's buffer `buf` (grown as needed, never
/// shrunk): for callers that transpose the same block many times (an
/// out-of-core pass applies `Q2` a chunk of reflectors at a time), so that
/// the copy does not fault in fresh pages every time.
pub fn with_transposed_in<T: Scalar>(
    mut z: MatMut<'_, T>,
    buf: &mut Vec<T>,
    f: impl FnOnce(MatMut<'_, T>),
) {
    let (n, kc) = (z.nrows(), z.ncols());
    if kc == 0 || n == 0 {
        return;
    }
    let ld = transposed_ld(kc);
    if buf.len() < ld * n {
        buf.resize(ld * n, T::zero());
    }
    let mut y = MatMut::from_column_major_slice_with_stride_mut(&mut buf[..ld * n], kc, n, ld);
    y.copy_from(z.rb().transpose());
    f(y.rb_mut());
    z.copy_from(y.rb().transpose());
}
