//! `SharedMatrix`: a dense column-major matrix that several tasks of one graph
//! read and write through tiles.
//!
//! Soundness of the tile accessors rests on the task graph: any two tasks whose
//! tiles overlap, with at least one writing, must be ordered by a path in the DAG.
//! [`crate::graph::TaskGraph::check_races`] verifies that from the declared
//! footprints, and the runtime's live checker verifies it while running.

use super::access::Access;
use faer::{Mat, MatMut, MatRef};
use std::cell::UnsafeCell;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Identity of a shared matrix, used in task footprints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MatrixId(pub u64);

impl MatrixId {
    /// A fresh id, unique in this process.
    pub fn fresh() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        MatrixId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// A dense matrix owned by a pipeline and shared (behind an `Arc`) by its tasks.
///
/// Its storage is allocated when it is created ([`SharedMatrix::new`]) or, for
/// a [`SharedMatrix::deferred`] one, zeroed by the first task that takes a view
/// of it: a graph can name a large buffer in its footprints from the start and
/// hold its memory only from the stage that uses it (an out-of-core run's
/// figures count on that). The memory is freed when the last `Arc` goes, that
/// is, when the last task holding it has run.
pub struct SharedMatrix<T> {
    storage: OnceLock<Storage<T>>,
    nrows: usize,
    ncols: usize,
    id: MatrixId,
}

/// The allocated matrix and the raw view the tile accessors derive from.
struct Storage<T> {
    data: UnsafeCell<Mat<T>>,
    ptr: *mut T,
    col_stride: isize,
}

// SAFETY: access goes through the `unsafe` tile methods whose contract requires
// the caller (the task graph) to exclude conflicting concurrent access.
unsafe impl<T: Send> Send for Storage<T> {}
unsafe impl<T: Send + Sync> Sync for Storage<T> {}

impl<T> Storage<T> {
    fn of(mut mat: Mat<T>) -> Self {
        let view = mat.as_mut();
        let col_stride = view.col_stride();
        let ptr = view.as_ptr_mut();
        Storage {
            data: UnsafeCell::new(mat),
            ptr,
            col_stride,
        }
    }
}

impl<T> SharedMatrix<T> {
    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// The id footprints use to name this matrix.
    pub fn id(&self) -> MatrixId {
        self.id
    }

    /// Whether the storage is allocated (always, unless
    /// [`SharedMatrix::deferred`] and no view was taken yet).
    pub fn is_allocated(&self) -> bool {
        self.storage.get().is_some()
    }
}

impl<T: faer::traits::ComplexField> SharedMatrix<T> {
    /// Takes ownership of `mat`.
    pub fn new(mat: Mat<T>) -> Self {
        let (nrows, ncols) = (mat.nrows(), mat.ncols());
        SharedMatrix {
            storage: OnceLock::from(Storage::of(mat)),
            nrows,
            ncols,
            id: MatrixId::fresh(),
        }
    }

    /// A zero `nrows x ncols` matrix whose storage is allocated by the first
    /// view taken of it (see the type's docs).
    pub fn deferred(nrows: usize, ncols: usize) -> Self {
        SharedMatrix {
            storage: OnceLock::new(),
            nrows,
            ncols,
            id: MatrixId::fresh(),
        }
    }

    fn storage(&self) -> &Storage<T> {
        self.storage
            .get_or_init(|| Storage::of(Mat::zeros(self.nrows, self.ncols)))
    }

    fn check(&self, rows: &Range<usize>, cols: &Range<usize>) {
        assert!(
            rows.start <= rows.end && rows.end <= self.nrows,
            "tile rows {rows:?} out of 0..{}",
            self.nrows
        );
        assert!(
            cols.start <= cols.end && cols.end <= self.ncols,
            "tile cols {cols:?} out of 0..{}",
            self.ncols
        );
    }

    /// Pointer to entry `(rows.start, cols.start)` of a checked tile; the base
    /// pointer for an empty tile, whose start may lie one past the allocation.
    fn tile_ptr(&self, rows: &Range<usize>, cols: &Range<usize>) -> (*mut T, isize) {
        self.check(rows, cols);
        let st = self.storage();
        if rows.is_empty() || cols.is_empty() {
            return (st.ptr, st.col_stride);
        }
        let offset = rows.start as isize + cols.start as isize * st.col_stride;
        // SAFETY: (rows.start, cols.start) is an entry of the matrix (checked above).
        (unsafe { st.ptr.offset(offset) }, st.col_stride)
    }

    /// A read-only view of the tile `rows x cols`.
    ///
    /// # Safety
    /// No task may write any part of this tile while the returned view lives.
    pub unsafe fn tile(&self, rows: Range<usize>, cols: Range<usize>) -> MatRef<'_, T> {
        let (ptr, col_stride) = self.tile_ptr(&rows, &cols);
        MatRef::from_raw_parts(ptr as *const T, rows.len(), cols.len(), 1, col_stride)
    }

    /// A mutable view of the tile `rows x cols`.
    ///
    /// # Safety
    /// No other view (read or write) of any part of this tile may live at the same
    /// time; the task graph must order every task touching it.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn tile_mut(&self, rows: Range<usize>, cols: Range<usize>) -> MatMut<'_, T> {
        let (ptr, col_stride) = self.tile_ptr(&rows, &cols);
        MatMut::from_raw_parts_mut(ptr, rows.len(), cols.len(), 1, col_stride)
    }

    /// The tile `rows x cols` for reading, from a task whose declared footprint
    /// reads or writes it (checked by `access`; see [`super::access`]).
    pub(crate) fn read<'s>(
        &'s self,
        access: &'s Access<'_>,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> MatRef<'s, T> {
        access.grant(self.id, rows.clone(), cols.clone(), false);
        // SAFETY: the task declared this read; tasks whose declared footprints
        // conflict are ordered by the graph (the builders' invariant, verified by
        // `check_races`), and `access` refused an overlapping mutable view.
        unsafe { self.tile(rows, cols) }
    }

    /// The tile `rows x cols` for writing, from a task whose declared footprint
    /// writes it (checked by `access`).
    pub(crate) fn write<'s>(
        &'s self,
        access: &'s Access<'_>,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> MatMut<'s, T> {
        access.grant(self.id, rows.clone(), cols.clone(), true);
        // SAFETY: as in `read`; `access` refused any other view of this tile.
        unsafe { self.tile_mut(rows, cols) }
    }

    /// Gives the matrix back once no task holds it any more (zeros for a
    /// deferred one no task took).
    pub fn into_inner(self) -> Mat<T> {
        let (nrows, ncols) = (self.nrows, self.ncols);
        match self.storage.into_inner() {
            Some(st) => st.data.into_inner(),
            None => Mat::zeros(nrows, ncols),
        }
    }
}
