//! The input of a batched solve: a borrowed buffer of equal-shape matrices
//! ([`BatchRef`]), its layout, and when its entries are checked for NaN and
//! infinities.

use crate::{Error, Result, Scalar};
use faer::MatRef;

/// How each matrix is stored inside the batch buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchLayout {
    /// Each matrix column-major (faer, LAPACK), matrices one after another.
    ColMajor,
    /// Each matrix row-major, matrices one after another: numpy's C-order
    /// `batch x m x n` array.
    RowMajor,
}

/// A batch of `batch` matrices of shape `m x n` in one contiguous buffer,
/// borrowed (never copied as a whole).
#[derive(Clone, Copy, Debug)]
pub struct BatchRef<'a, T> {
    data: &'a [T],
    batch: usize,
    m: usize,
    n: usize,
    layout: BatchLayout,
}

impl<'a, T: Scalar> BatchRef<'a, T> {
    /// Views `data` as `batch` matrices of shape `m x n` in `layout`.
    ///
    /// Errors: [`Error::InvalidArgument`] for an empty batch, [`Error::Shape`]
    /// for `m == 0`, `n == 0` or `data.len() != batch * m * n`.
    pub fn new(
        data: &'a [T],
        batch: usize,
        m: usize,
        n: usize,
        layout: BatchLayout,
    ) -> Result<Self> {
        if batch == 0 {
            return Err(Error::InvalidArgument("empty batch (0 matrices)".into()));
        }
        if m == 0 || n == 0 {
            return Err(Error::Shape(format!("batch of empty {m} x {n} matrices")));
        }
        let want = batch.checked_mul(m).and_then(|x| x.checked_mul(n));
        if want != Some(data.len()) {
            return Err(Error::Shape(format!(
                "a batch of {batch} matrices of {m} x {n} needs {} entries, the buffer has {}",
                want.map_or("too many".to_string(), |w| w.to_string()),
                data.len()
            )));
        }
        Ok(BatchRef {
            data,
            batch,
            m,
            n,
            layout,
        })
    }

    /// Number of matrices.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// `(m, n)`, the shape of each matrix.
    pub fn shape(&self) -> (usize, usize) {
        (self.m, self.n)
    }

    /// Matrix `i` as a faer view (no copy).
    ///
    /// # Panics
    /// If `i >= batch`.
    pub fn matrix(&self, i: usize) -> MatRef<'a, T> {
        assert!(i < self.batch, "matrix {i} of a batch of {}", self.batch);
        let mn = self.m * self.n;
        let s = &self.data[i * mn..(i + 1) * mn];
        match self.layout {
            BatchLayout::ColMajor => MatRef::from_column_major_slice(s, self.m, self.n),
            BatchLayout::RowMajor => MatRef::from_row_major_slice(s, self.m, self.n),
        }
    }

    /// [`Error::BatchItem`] wrapping [`Error::NonFinite`] (row and column in
    /// that matrix) for the first matrix with a NaN or infinite entry.
    pub fn check_finite(&self) -> Result<()> {
        match self.first_non_finite(0, self.batch, false) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The first matrix of `lo..hi` with a NaN or infinite entry (in its
    /// lower triangle only when `lower`), as [`BatchRef::check_finite`]'s
    /// error. Each whole matrix is one contiguous scan whatever the layout;
    /// only a matrix that fails it is searched for the position of its first
    /// bad entry (and, when `lower`, whether that entry is in the lower
    /// triangle).
    pub(super) fn first_non_finite(&self, lo: usize, hi: usize, lower: bool) -> Option<Error> {
        if lower {
            return (lo..hi).find_map(|i| self.non_finite_lower(i));
        }
        let mn = self.m * self.n;
        let index = (lo..hi)
            .find(|&i| !crate::matrix::scan::max_abs_finite(&self.data[i * mn..(i + 1) * mn]).1)?;
        let e = crate::matrix::check_finite(self.matrix(index), false)
            .expect_err("the scan found a non-finite entry");
        Some(Error::BatchItem {
            index,
            source: Box::new(e),
        })
    }

    /// Matrix `i`'s first NaN or infinite entry of the lower triangle, as
    /// [`Error::BatchItem`].
    fn non_finite_lower(&self, index: usize) -> Option<Error> {
        let mn = self.m * self.n;
        if crate::matrix::scan::max_abs_finite(&self.data[index * mn..(index + 1) * mn]).1 {
            return None;
        }
        let e = crate::matrix::check_finite(self.matrix(index), true).err()?;
        Some(Error::BatchItem {
            index,
            source: Box::new(e),
        })
    }
}

/// When the batch's entries are checked for NaN and infinities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FiniteCheck {
    /// Before any task is added, so a bad batch adds nothing to the graph.
    Upfront,
    /// By each chunk task on its own matrices just before it solves them,
    /// while they come into its cache anyway: one pass over the batch's
    /// memory instead of two (10,000 x 32x32 f64 with vectors, 2 threads:
    /// the serial pass before the tasks took 4% of the call). A chunk with a
    /// bad matrix solves nothing; the error is reported when the results are
    /// collected, for the lowest such matrix.
    InChunks,
}
