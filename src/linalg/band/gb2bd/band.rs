//! Upper band storage for gb2bd: LAPACK general-band layout with room for the
//! bulges.
//!
//! Entry `(i, j)` with `j - ku <= i <= j + kl` lives at
//! `data[(ku + i - j) + j ld]`, `ld = ku + kl + 1`: column `j` holds rows
//! `j - ku ..= j + kl` contiguously (superdiagonal `k` in storage row `ku - k`,
//! the diagonal in row `ku`, subdiagonal `k` in row `ku + k`). Slots outside
//! the matrix (`i < 0` or `i >= n`) are padding and stay zero. A rectangle
//! `A[rows, cols]` whose corners are inside the stored band is then a plain
//! strided matrix (row stride 1, column stride `ld - 1`), which is how the
//! kernels address it ([`GbBandMut::rect_mut`]).
//!
//! For a pass `b -> b'` (`d = b - b'`) the deferred fill reaches `b + d`
//! superdiagonals and a right reflector creates `d` subdiagonals before the
//! left one removes the first of them, so `ku >= b + d` and `kl >= d`
//! (seed 000 §V: height `b + 2 TW + 1`; [`super::storage_offsets`]).

use crate::matrix::access::Access;
use crate::matrix::MatrixId;
use crate::Scalar;
use faer::{Mat, MatMut, MatRef};
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::Range;

/// An owned upper band matrix (see the module docs for the layout).
#[derive(Clone, Debug)]
pub struct UpperBand<T> {
    n: usize,
    ku: usize,
    kl: usize,
    data: Vec<T>,
}

impl<T: Scalar> UpperBand<T> {
    /// A zero `n x n` band with `ku` superdiagonals and `kl` subdiagonals of
    /// storage.
    pub fn zeros(n: usize, ku: usize, kl: usize) -> Self {
        UpperBand {
            n,
            ku,
            kl,
            data: vec![T::zero(); (ku + kl + 1) * n],
        }
    }

    /// Copies the upper band `0 <= j - i <= b` of the leading `n x n` block of
    /// `a` (`n = a.ncols() <= a.nrows()`) into storage with `ku >= b`
    /// superdiagonals and `kl` subdiagonals; everything else is zero.
    pub fn from_dense(a: MatRef<'_, T>, b: usize, ku: usize, kl: usize) -> Self {
        let n = a.ncols();
        assert!(a.nrows() >= n, "from_dense: need nrows >= ncols");
        assert!(ku >= b, "from_dense: storage ku = {ku} < bandwidth {b}");
        let mut band = Self::zeros(n, ku, kl);
        for j in 0..n {
            for i in j.saturating_sub(b)..=j {
                band.set(i, j, a[(i, j)]);
            }
        }
        band
    }

    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Superdiagonals of storage.
    pub fn ku(&self) -> usize {
        self.ku
    }

    /// Subdiagonals of storage.
    pub fn kl(&self) -> usize {
        self.kl
    }

    /// Storage rows per column, `ku + kl + 1`.
    pub fn ld(&self) -> usize {
        self.ku + self.kl + 1
    }

    /// Entry `(i, j)`; zero outside the stored band.
    pub fn get(&self, i: usize, j: usize) -> T {
        if i + self.ku >= j && i <= j + self.kl && i < self.n && j < self.n {
            self.data[(self.ku + i - j) + j * self.ld()]
        } else {
            T::zero()
        }
    }

    /// Sets entry `(i, j)`, which must be inside the stored band.
    pub fn set(&mut self, i: usize, j: usize, v: T) {
        assert!(
            i + self.ku >= j && i <= j + self.kl && i < self.n && j < self.n,
            "({i}, {j}) outside the band storage"
        );
        let ld = self.ld();
        self.data[(self.ku + i - j) + j * ld] = v;
    }

    /// The dense `n x n` matrix.
    pub fn to_dense(&self) -> Mat<T> {
        Mat::from_fn(self.n, self.n, |i, j| self.get(i, j))
    }

    /// Diagonal and first superdiagonal (the bidiagonal part).
    pub fn bidiagonal(&self) -> (Vec<T>, Vec<T>) {
        let d = (0..self.n).map(|i| self.get(i, i)).collect();
        let e = (1..self.n).map(|i| self.get(i - 1, i)).collect();
        (d, e)
    }

    /// `(largest j - i, largest i - j)` over the nonzero entries (`(0, 0)` for a
    /// diagonal or empty matrix).
    pub fn bandwidths_used(&self) -> (usize, usize) {
        let (mut up, mut lo) = (0, 0);
        for j in 0..self.n {
            for i in j.saturating_sub(self.ku)..(j + self.kl + 1).min(self.n) {
                if self.get(i, j) != T::zero() {
                    if j >= i {
                        up = up.max(j - i);
                    } else {
                        lo = lo.max(i - j);
                    }
                }
            }
        }
        (up, lo)
    }

    /// Raw column-major storage (padding included).
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// Raw column-major storage, mutable (as [`Self::as_slice`]).
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// A view for kernels that own the whole band.
    pub fn view(&mut self) -> GbBandMut<'_, T> {
        GbBandMut {
            ptr: self.data.as_mut_ptr(),
            n: self.n,
            ku: self.ku,
            kl: self.kl,
            rows: 0..self.n,
            cols: 0..self.n,
            col0: 0,
            _life: PhantomData,
        }
    }
}

/// A mutable view of [`UpperBand`] storage handed to gb2bd tasks.
///
/// Several views of one band may exist at once in different tasks (through
/// `SharedUpperBand::read`/`write`); each task touches only its declared footprint
/// and the task graph orders overlapping footprints. A view taken through
/// `SharedUpperBand::write` is confined to the window `rows x cols` it was
/// granted ([`GbBandMut::rect_mut`] panics outside it).
pub struct GbBandMut<'a, T> {
    ptr: *mut T,
    n: usize,
    ku: usize,
    kl: usize,
    rows: Range<usize>,
    cols: Range<usize>,
    /// Column stored first at `ptr` (0 for a whole band; `cols.start` for a
    /// scratch window holding only the columns `cols`).
    col0: usize,
    _life: PhantomData<&'a mut [T]>,
}

impl<'a, T: Scalar> GbBandMut<'a, T> {
    /// A view of a scratch window: `data` holds the whole storage columns
    /// `cols` (`ku + kl + 1` slots each, the layout of the module docs) of an
    /// order-`n` band, and the view addresses entries by their global
    /// `(i, j)`, confined to `rows x cols`. Used by the half-precision chase,
    /// which widens each task's window into such a buffer.
    pub fn scratch(
        data: &'a mut [T],
        n: usize,
        ku: usize,
        kl: usize,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> Self {
        assert!(
            cols.end <= n && rows.end <= n,
            "scratch window outside the order {n}"
        );
        assert_eq!(
            data.len(),
            (ku + kl + 1) * cols.len(),
            "scratch buffer must hold the storage columns {cols:?}"
        );
        GbBandMut {
            ptr: data.as_mut_ptr(),
            n,
            ku,
            kl,
            col0: cols.start,
            rows,
            cols,
            _life: PhantomData,
        }
    }
}

impl<T: Scalar> GbBandMut<'_, T> {
    /// Order of the matrix.
    #[inline]
    pub fn n(&self) -> usize {
        self.n
    }

    /// Superdiagonals of storage.
    #[inline]
    pub fn ku(&self) -> usize {
        self.ku
    }

    /// Subdiagonals of storage.
    #[inline]
    pub fn kl(&self) -> usize {
        self.kl
    }

    /// The rectangle `A[rows, cols]` as a strided matrix (row stride 1, column
    /// stride `ld - 1`). Every entry must be inside the stored band: the
    /// top-right corner at most `ku` above the diagonal, the bottom-left at
    /// most `kl` below, and the rectangle inside the view's window (asserted).
    #[inline]
    pub fn rect_mut(&mut self, rows: Range<usize>, cols: Range<usize>) -> MatMut<'_, T> {
        assert!(
            rows.end <= self.n && cols.end <= self.n,
            "rectangle {rows:?} x {cols:?} outside the order {}",
            self.n
        );
        if rows.is_empty() || cols.is_empty() {
            return MatMut::from_column_major_slice_mut(&mut [], rows.len(), cols.len());
        }
        assert!(
            self.rows.start <= rows.start
                && rows.end <= self.rows.end
                && self.cols.start <= cols.start
                && cols.end <= self.cols.end,
            "rectangle {rows:?} x {cols:?} outside the view's window {:?} x {:?}",
            self.rows,
            self.cols
        );
        assert!(
            rows.start + self.ku >= cols.end - 1 && rows.end - 1 <= cols.start + self.kl,
            "rectangle {rows:?} x {cols:?} leaves the band storage (ku = {}, kl = {})",
            self.ku,
            self.kl
        );
        let ld = self.ku + self.kl + 1;
        let off = (self.ku + rows.start - cols.start) + (cols.start - self.col0) * ld;
        // SAFETY: every entry (i, j) of the rectangle satisfies
        // j - ku <= i <= j + kl and i, j < n (corners checked above), and its
        // column is inside the window, hence stored (from column `col0` on), so
        // `off + (i - rows.start) + (j - cols.start) (ld - 1)` is the in-bounds
        // slot of (i, j); the view is exclusive for the borrow of `self`.
        unsafe {
            MatMut::from_raw_parts_mut(
                self.ptr.add(off),
                rows.len(),
                cols.len(),
                1,
                (ld - 1) as isize,
            )
        }
    }

    /// Entry `(i, j)` (inside the stored band).
    #[inline]
    pub fn get(&mut self, i: usize, j: usize) -> T {
        self.rect_mut(i..i + 1, j..j + 1)[(0, 0)]
    }
}

/// A read-only view of [`SharedUpperBand`] storage, confined to a window.
pub struct GbBandRef<'a, T>(GbBandMut<'a, T>);

impl<T: Scalar> GbBandRef<'_, T> {
    /// Entry `(i, j)` (inside the stored band and the window).
    pub fn get(&mut self, i: usize, j: usize) -> T {
        self.0.get(i, j)
    }
}

/// An [`UpperBand`] shared by the tasks of one graph.
pub struct SharedUpperBand<T> {
    band: UnsafeCell<UpperBand<T>>,
    ptr: *mut T,
    id: MatrixId,
}

// SAFETY: entries are reached only through `write`/`read`, which take a view
// only of a window the running task declared (checked by its `Access`); the
// task graph orders tasks whose declared windows conflict.
unsafe impl<T: Send> Send for SharedUpperBand<T> {}
unsafe impl<T: Send + Sync> Sync for SharedUpperBand<T> {}

impl<T: Scalar> SharedUpperBand<T> {
    /// Takes ownership of `band`.
    pub fn new(mut band: UpperBand<T>) -> Self {
        let ptr = band.data.as_mut_ptr();
        SharedUpperBand {
            band: UnsafeCell::new(band),
            ptr,
            id: MatrixId::fresh(),
        }
    }

    /// The id footprints use to name this band.
    pub fn id(&self) -> MatrixId {
        self.id
    }

    /// Order of the matrix.
    pub fn n(&self) -> usize {
        // SAFETY: the shape is never written after construction.
        unsafe { (*self.band.get()).n }
    }

    fn window(&self, rows: Range<usize>, cols: Range<usize>) -> GbBandMut<'_, T> {
        // SAFETY: the shape is never written after construction.
        let b = unsafe { &*self.band.get() };
        GbBandMut {
            ptr: self.ptr,
            n: b.n,
            ku: b.ku,
            kl: b.kl,
            rows,
            cols,
            col0: 0,
            _life: PhantomData,
        }
    }

    /// A view confined to the entries `rows x cols`, for a task whose declared
    /// footprint writes them (checked by `access`, see
    /// [`crate::matrix::access`]): the window keeps every access inside what
    /// was granted, and tasks whose declared footprints conflict are ordered by
    /// the graph (the builders' invariant, verified by `check_races`).
    pub(crate) fn write<'s>(
        &'s self,
        access: &'s Access<'_>,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> GbBandMut<'s, T> {
        access.grant(self.id, rows.clone(), cols.clone(), true);
        self.window(rows, cols)
    }

    /// A read-only view of the entries `rows x cols`, for a task whose
    /// declared footprint reads them (checked by `access`).
    pub(crate) fn read<'s>(
        &'s self,
        access: &'s Access<'_>,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> GbBandRef<'s, T> {
        access.grant(self.id, rows.clone(), cols.clone(), false);
        GbBandRef(self.window(rows, cols))
    }

    /// Gives the band back once no task holds it.
    pub fn into_inner(self) -> UpperBand<T> {
        self.band.into_inner()
    }
}
