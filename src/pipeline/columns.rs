//! A matrix that tasks produce column block by column block: the handle one
//! stage passes to the next when its output is a matrix of vectors
//! (eigenvectors of the EVD, left and right singular vectors of the SVD).

use crate::graph::TaskId;
use crate::matrix::SharedMatrix;
use crate::{Error, Result, Scalar};
use faer::Mat;
use std::ops::Range;
use std::sync::Arc;

/// A matrix of vectors a stage produces: the matrix and, per block of
/// columns, the tasks after which those columns are final. The next stage
/// orders each of its column tasks after the blocks it overlaps.
///
/// The fields are private and the handle is not `Clone`: a stage consumes it
/// by value, so at most one stage writes the matrix after its producers.
pub struct ColumnBlocks<T> {
    pub(crate) z: Arc<SharedMatrix<T>>,
    pub(crate) blocks: Vec<(Range<usize>, Vec<TaskId>)>,
}

impl<T: Scalar> ColumnBlocks<T> {
    /// A matrix given whole (no task produces it), for instance vectors
    /// computed elsewhere, to transform with a back-transformation stage.
    pub fn from_mat(z: Mat<T>) -> Self {
        ColumnBlocks {
            z: Arc::new(SharedMatrix::new(z)),
            blocks: Vec::new(),
        }
    }
}

impl<T> ColumnBlocks<T> {
    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.z.nrows()
    }

    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.z.ncols()
    }

    /// The tasks after which columns `cols` are final.
    pub(crate) fn producers(&self, cols: &Range<usize>) -> Vec<TaskId> {
        let mut v: Vec<TaskId> = self
            .blocks
            .iter()
            .filter(|(c, _)| c.start < cols.end && cols.start < c.end)
            .flat_map(|(_, t)| t.iter().copied())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Every producing task.
    pub(crate) fn tasks(&self) -> impl Iterator<Item = &TaskId> {
        self.blocks.iter().flat_map(|(_, t)| t)
    }

    /// The matrix, readable once the graph has run successfully and been
    /// dropped: see [`VectorsResult::get`].
    pub fn into_result(self) -> VectorsResult<T> {
        VectorsResult { z: self.z }
    }
}

/// The matrix of a pipeline, to be taken out after the run.
pub struct VectorsResult<T> {
    pub(crate) z: Arc<SharedMatrix<T>>,
}

impl<T: Scalar> VectorsResult<T> {
    /// The matrix, once the graph that computes it has run and been dropped
    /// ([`crate::runtime::Runtime::run`] drops it); [`Error::NotRun`] while a
    /// task still holds it (the graph has not been run).
    pub fn get(self) -> Result<Mat<T>> {
        Arc::try_unwrap(self.z)
            .map(SharedMatrix::into_inner)
            .map_err(|_| Error::NotRun)
    }
}
