//! Symmetric band storage, lower triangle, LAPACK style with room for the bulge.
//!
//! Entry `(r, c)` with `r >= c` and `r - c < ldab` lives at `data[(r - c) + c * ldab]`.
//! A band of half-bandwidth `kd` is stored with `ldab = 2 * kd` rows per column:
//! the diagonal, `kd` subdiagonals, and `kd - 1` more for the fill that bulge
//! chasing creates (the fill never passes `r - c <= 2 kd - 1`,
//! from the task geometry in `linalg::sb2st`; LAPACK `dsytrd_sb2st` uses
//! `2 KD + 1`).
//! Each column's band and bulge are contiguous.

use super::access::Access;
use super::MatrixId;
use crate::Scalar;
use faer::{Mat, MatRef};
use std::cell::UnsafeCell;
use std::ops::Range;

/// An owned symmetric band matrix (lower storage).
#[derive(Clone, Debug)]
pub struct SymBand<T> {
    n: usize,
    kd: usize,
    ldab: usize,
    data: Vec<T>,
}

impl<T: Scalar> SymBand<T> {
    /// A zero band matrix of order `n` and half-bandwidth `kd`, with bulge room.
    pub fn zeros(n: usize, kd: usize) -> Self {
        let kd = kd.max(1);
        let ldab = 2 * kd;
        SymBand {
            n,
            kd,
            ldab,
            data: vec![T::zero(); ldab * n],
        }
    }

    /// Copies the lower band (`r - c <= kd`) of a dense matrix; the rest is ignored.
    pub fn from_dense_lower(a: MatRef<'_, T>, kd: usize) -> Self {
        assert_eq!(a.nrows(), a.ncols(), "band source must be square");
        let mut band = Self::zeros(a.nrows(), kd);
        let kd = band.kd;
        for c in 0..band.n {
            for r in c..(c + kd + 1).min(band.n) {
                band.set(r, c, a[(r, c)]);
            }
        }
        band
    }

    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Half-bandwidth the band was built for.
    pub fn kd(&self) -> usize {
        self.kd
    }

    /// Rows stored per column.
    pub fn ldab(&self) -> usize {
        self.ldab
    }

    /// Entry `(r, c)` of the symmetric matrix; zero outside the stored band.
    pub fn get(&self, r: usize, c: usize) -> T {
        let (r, c) = if r >= c { (r, c) } else { (c, r) };
        if r - c < self.ldab {
            self.data[(r - c) + c * self.ldab]
        } else {
            T::zero()
        }
    }

    /// Sets entry `(r, c)`, `r >= c`, `r - c < ldab`.
    pub fn set(&mut self, r: usize, c: usize, v: T) {
        assert!(
            r >= c && r - c < self.ldab,
            "({r}, {c}) outside band storage"
        );
        self.data[(r - c) + c * self.ldab] = v;
    }

    /// The full symmetric matrix.
    pub fn to_dense(&self) -> Mat<T> {
        Mat::from_fn(self.n, self.n, |i, j| self.get(i, j))
    }

    /// Largest `r - c` with a nonzero entry (0 for a diagonal matrix).
    pub fn bandwidth_used(&self) -> usize {
        let mut w = 0;
        for c in 0..self.n {
            for k in 0..self.ldab.min(self.n - c) {
                if self.data[k + c * self.ldab] != T::zero() {
                    w = w.max(k);
                }
            }
        }
        w
    }

    /// Diagonal and first subdiagonal (the tridiagonal part).
    pub fn tridiagonal(&self) -> (Vec<T>, Vec<T>) {
        let d = (0..self.n).map(|i| self.get(i, i)).collect();
        let e = (1..self.n).map(|i| self.get(i, i - 1)).collect();
        (d, e)
    }

    /// Raw column-major band storage.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// The storage, mutable (`ldab` values per column, as [`Self::as_slice`]).
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// A view for kernels that own the whole band.
    pub fn as_band_mut(&mut self) -> BandMut<'_, T> {
        BandMut {
            ptr: self.data.as_mut_ptr(),
            n: self.n,
            ldab: self.ldab,
            rows: 0..self.n,
            cols: 0..self.n,
            _life: std::marker::PhantomData,
        }
    }
}

/// A mutable view of band storage handed to kernels (bulge-chasing tasks).
///
/// A view covers the entries `(r, c)` with `r` in `rows` and `c` in `cols` (the
/// whole band for [`SymBand::as_band_mut`]); every access is checked against
/// that window and the band layout (`r >= c`, `r - c < ldab`, `r < n`), so no
/// index reaches outside the allocation. Several views of one band may exist at
/// once in different tasks of a graph (see [`SharedBand`]).
pub struct BandMut<'a, T> {
    ptr: *mut T,
    n: usize,
    ldab: usize,
    rows: Range<usize>,
    cols: Range<usize>,
    _life: std::marker::PhantomData<&'a mut [T]>,
}

impl<T: Copy> BandMut<'_, T> {
    /// Order of the matrix.
    #[inline]
    pub fn n(&self) -> usize {
        self.n
    }

    /// Rows stored per column.
    #[inline]
    pub fn ldab(&self) -> usize {
        self.ldab
    }

    /// Panics unless rows `r0..r0 + len` of column `c` lie in the band storage
    /// and in this view's window.
    #[inline(always)]
    fn check(&self, r0: usize, c: usize, len: usize) {
        let end = r0.checked_add(len);
        assert!(
            r0 >= c
                && end.is_some_and(|end| {
                    end - c <= self.ldab
                        && end <= self.n
                        && (len == 0 || (r0 >= self.rows.start && end <= self.rows.end))
                })
                && self.cols.contains(&c),
            "band entries ({r0}.., {c}) x {len} outside the view (rows {:?}, cols {:?}, ldab {}, n {})",
            self.rows,
            self.cols,
            self.ldab,
            self.n
        );
    }

    /// Entry `(r, c)`, `r >= c`, `r - c < ldab`.
    #[inline(always)]
    pub fn get(&self, r: usize, c: usize) -> T {
        self.check(r, c, 1);
        // SAFETY: in bounds of the band storage (checked).
        unsafe { *self.ptr.add((r - c) + c * self.ldab) }
    }

    /// Sets entry `(r, c)`, `r >= c`, `r - c < ldab`.
    #[inline(always)]
    pub fn set(&mut self, r: usize, c: usize, v: T) {
        self.check(r, c, 1);
        // SAFETY: as in `get`.
        unsafe { *self.ptr.add((r - c) + c * self.ldab) = v }
    }

    /// Panics unless the entries `(r, c)` with `r` in `rows`, `c` in `cols`
    /// and `r >= c` lie in the band storage and in this view's window (for
    /// kernels that address a block through [`BandMut::col_ptr`]).
    #[inline(always)]
    pub(crate) fn check_block(&self, rows: Range<usize>, cols: Range<usize>) {
        if rows.is_empty() || cols.is_empty() || rows.end <= cols.start {
            return;
        }
        // The first column reaches furthest from its diagonal.
        assert!(
            rows.start >= self.rows.start
                && rows.end <= self.rows.end
                && cols.start >= self.cols.start
                && cols.end <= self.cols.end
                && rows.end <= self.n
                && rows.end - cols.start <= self.ldab,
            "band block {rows:?} x {cols:?} outside the view (rows {:?}, cols {:?}, ldab {}, n {})",
            self.rows,
            self.cols,
            self.ldab,
            self.n
        );
    }

    /// A pointer to the diagonal entry of column `c` (entry `(r, c')` is
    /// `(c' - c) ldab + r - c'` after it), for kernels that address a block
    /// [`BandMut::check_block`] has checked; valid for that block's entries
    /// while `self` is borrowed mutably.
    #[inline(always)]
    pub(crate) fn col_ptr(&mut self, c: usize) -> *mut T {
        assert!(
            self.cols.contains(&c) && c < self.n,
            "column {c} outside the view"
        );
        self.ptr.wrapping_add(c * self.ldab)
    }

    /// Column `c` from row `r0` (`r0 >= c`) for `len` rows, contiguous.
    #[inline(always)]
    pub fn col_mut(&mut self, r0: usize, c: usize, len: usize) -> &mut [T] {
        self.check(r0, c, len);
        // SAFETY: contiguous within column c of the band storage (checked); the
        // slice borrows `self` mutably, so no other slice of this view aliases it.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add((r0 - c) + c * self.ldab), len) }
    }
}

/// A band matrix shared by the tasks of one graph (see [`BandMut`]).
pub struct SharedBand<T> {
    band: UnsafeCell<SymBand<T>>,
    ptr: *mut T,
    n: usize,
    ldab: usize,
    id: MatrixId,
}

// SAFETY: entries are reached only through `write`/`read`, which take a view
// only of a window the running task declared (checked by its `Access`); the
// task graph orders tasks whose declared windows conflict.
unsafe impl<T: Send> Send for SharedBand<T> {}
unsafe impl<T: Send + Sync> Sync for SharedBand<T> {}

impl<T> SharedBand<T> {
    /// The id footprints use to name this band.
    pub fn id(&self) -> MatrixId {
        self.id
    }

    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Half-bandwidth the band was built for.
    pub fn kd(&self) -> usize {
        self.ldab / 2
    }
}

impl<T: Scalar> SharedBand<T> {
    /// Takes ownership of `band`.
    pub fn new(mut band: SymBand<T>) -> Self {
        let ptr = band.data.as_mut_ptr();
        let (n, ldab) = (band.n, band.ldab);
        SharedBand {
            band: UnsafeCell::new(band),
            ptr,
            n,
            ldab,
            id: MatrixId::fresh(),
        }
    }

    fn window(&self, rows: Range<usize>, cols: Range<usize>) -> BandMut<'_, T> {
        BandMut {
            ptr: self.ptr,
            n: self.n,
            ldab: self.ldab,
            rows,
            cols,
            _life: std::marker::PhantomData,
        }
    }

    /// A view of the entries `rows x cols` for a task whose declared footprint
    /// writes them (checked by `access`, see [`super::access`]).
    pub(crate) fn write<'s>(
        &'s self,
        access: &'s Access<'_>,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> BandMut<'s, T> {
        access.grant(self.id, rows.clone(), cols.clone(), true);
        // The window confines every access to what was granted; tasks whose
        // declared footprints conflict are ordered by the graph.
        self.window(rows, cols)
    }

    /// A view of the entries `rows x cols` for reading (it must not be written
    /// through), for a task whose declared footprint reads them.
    pub(crate) fn read<'s>(
        &'s self,
        access: &'s Access<'_>,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> BandRef<'s, T> {
        access.grant(self.id, rows.clone(), cols.clone(), false);
        BandRef(self.window(rows, cols))
    }

    /// Gives the band back once no task holds it.
    pub fn into_inner(self) -> SymBand<T> {
        self.band.into_inner()
    }
}

/// A read-only [`BandMut`].
pub struct BandRef<'a, T>(BandMut<'a, T>);

impl<T: Copy> BandRef<'_, T> {
    /// Entry `(r, c)`, `r >= c`, `r - c < ldab`, inside the view.
    #[inline(always)]
    pub fn get(&self, r: usize, c: usize) -> T {
        self.0.get(r, c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panics(f: impl FnOnce()) -> bool {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err()
    }

    /// Out-of-band indices through the safe `BandMut` panic (in every build),
    /// instead of reading or writing outside the allocation.
    #[test]
    fn band_views_refuse_out_of_band_indices() {
        let mut band = SymBand::<f64>::zeros(6, 2);
        let mut v = band.as_band_mut();
        v.set(3, 1, 1.0);
        assert_eq!(v.get(3, 1), 1.0);
        assert!(
            panics(|| {
                let _ = v.get(100, 0);
            }),
            "row past n"
        );
        assert!(panics(|| v.set(5, 0, 1.0)), "r - c >= ldab");
        assert!(
            panics(|| {
                let _ = v.get(0, 1);
            }),
            "upper triangle"
        );
        assert!(
            panics(|| {
                let _ = v.col_mut(4, 4, 3);
            }),
            "column past n"
        );
        assert!(
            panics(|| {
                let _ = v.col_mut(usize::MAX, 0, 2);
            }),
            "wrapping row"
        );
    }
}
