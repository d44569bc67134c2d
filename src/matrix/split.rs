//! `SplitColumns`: a dense matrix whose disjoint column ranges several tasks
//! fill at the same time.
//!
//! The divide and conquer solves the roots of one secular equation in several
//! tasks, each writing its own columns of one `k x k` matrix that is shared
//! read-only afterwards. Borrows are checked at run time, one lock per borrow
//! (not per entry), so this type is sound whatever the graph orders: a second
//! mutable borrow of overlapping columns, or a shared borrow while a mutable one
//! lives, panics.

use faer::{Mat, MatMut, MatRef};
use parking_lot::Mutex;
use std::cell::UnsafeCell;
use std::ops::Range;

#[derive(Default)]
struct Borrows {
    /// Column ranges borrowed mutably.
    mutable: Vec<Range<usize>>,
    /// Number of shared borrows of the whole matrix.
    shared: usize,
}

/// A matrix whose disjoint column ranges may be borrowed mutably by several
/// threads at once (see the module docs).
pub struct SplitColumns<T> {
    data: UnsafeCell<Mat<T>>,
    ptr: *mut T,
    nrows: usize,
    ncols: usize,
    col_stride: isize,
    borrows: Mutex<Borrows>,
}

// SAFETY: every access to `data` through `&self` goes through a guard that the
// borrow table admits only if no other guard conflicts with it.
unsafe impl<T: Send> Send for SplitColumns<T> {}
unsafe impl<T: Send + Sync> Sync for SplitColumns<T> {}

impl<T: faer::traits::ComplexField> SplitColumns<T> {
    /// Takes ownership of `mat`.
    pub fn new(mut mat: Mat<T>) -> Self {
        let (nrows, ncols) = (mat.nrows(), mat.ncols());
        let view = mat.as_mut();
        let (ptr, col_stride) = (view.as_ptr_mut(), view.col_stride());
        SplitColumns {
            data: UnsafeCell::new(mat),
            ptr,
            nrows,
            ncols,
            col_stride,
            borrows: Mutex::new(Borrows::default()),
        }
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// Columns `cols`, mutably, until the guard is dropped. Panics if they
    /// overlap columns borrowed mutably, or the matrix is borrowed shared.
    pub fn cols_mut(&self, cols: Range<usize>) -> ColsMut<'_, T> {
        assert!(
            cols.start <= cols.end && cols.end <= self.ncols,
            "columns {cols:?} out of 0..{}",
            self.ncols
        );
        let mut b = self.borrows.lock();
        assert!(
            b.shared == 0
                && !b
                    .mutable
                    .iter()
                    .any(|r| r.start < cols.end && cols.start < r.end),
            "columns {cols:?} are already borrowed"
        );
        b.mutable.push(cols.clone());
        ColsMut { owner: self, cols }
    }

    /// The whole matrix, shared, until the guard is dropped. Panics if any
    /// columns are borrowed mutably.
    pub fn read(&self) -> ReadAll<'_, T> {
        let mut b = self.borrows.lock();
        assert!(b.mutable.is_empty(), "columns are borrowed mutably");
        b.shared += 1;
        ReadAll { owner: self }
    }

    /// The whole matrix, mutably (exclusive through `&mut self`).
    pub fn as_mut(&mut self) -> MatMut<'_, T> {
        self.data.get_mut().as_mut()
    }

    /// The whole matrix, shared (through `&mut self`, so no guard can live).
    pub fn as_ref(&mut self) -> MatRef<'_, T> {
        self.data.get_mut().as_ref()
    }
}

/// A mutable borrow of some columns of a [`SplitColumns`].
pub struct ColsMut<'a, T> {
    owner: &'a SplitColumns<T>,
    cols: Range<usize>,
}

impl<T> ColsMut<'_, T> {
    /// The borrowed columns.
    pub fn mat(&mut self) -> MatMut<'_, T> {
        let o = self.owner;
        let ptr = if self.cols.is_empty() || o.nrows == 0 {
            o.ptr
        } else {
            // SAFETY: column `cols.start` exists (checked when borrowed).
            unsafe { o.ptr.offset(self.cols.start as isize * o.col_stride) }
        };
        // SAFETY: the borrow table admitted these columns exclusively for the
        // guard's lifetime; the view borrows the guard mutably.
        unsafe { MatMut::from_raw_parts_mut(ptr, o.nrows, self.cols.len(), 1, o.col_stride) }
    }
}

impl<T> Drop for ColsMut<'_, T> {
    fn drop(&mut self) {
        let mut b = self.owner.borrows.lock();
        let i = b
            .mutable
            .iter()
            .position(|r| *r == self.cols)
            .expect("borrow registered");
        b.mutable.swap_remove(i);
    }
}

/// A shared borrow of a whole [`SplitColumns`].
pub struct ReadAll<'a, T> {
    owner: &'a SplitColumns<T>,
}

impl<T> ReadAll<'_, T> {
    /// The matrix.
    pub fn mat(&self) -> MatRef<'_, T> {
        let o = self.owner;
        // SAFETY: no mutable borrow exists while a shared one lives (checked).
        unsafe { MatRef::from_raw_parts(o.ptr as *const T, o.nrows, o.ncols, 1, o.col_stride) }
    }
}

impl<T> Drop for ReadAll<'_, T> {
    fn drop(&mut self) {
        self.owner.borrows.lock().shared -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disjoint_column_borrows_coexist_and_overlaps_panic() {
        let s = SplitColumns::new(Mat::<f64>::zeros(3, 6));
        {
            let mut a = s.cols_mut(0..2);
            let mut b = s.cols_mut(2..6);
            a.mat()[(0, 1)] = 1.0;
            b.mat()[(2, 3)] = 2.0;
            let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _c = s.cols_mut(1..3);
            }));
            assert!(again.is_err(), "overlapping mutable borrow admitted");
            let shared = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _r = s.read();
            }));
            assert!(
                shared.is_err(),
                "shared borrow admitted beside mutable ones"
            );
        }
        let r = s.read();
        assert_eq!(r.mat()[(0, 1)], 1.0);
        // b's local column 3 is column 5 of the matrix.
        assert_eq!(r.mat()[(2, 5)], 2.0);
        assert_eq!(r.mat()[(2, 3)], 0.0);
        let blocked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _m = s.cols_mut(0..1);
        }));
        assert!(
            blocked.is_err(),
            "mutable borrow admitted beside a shared one"
        );
    }
}
