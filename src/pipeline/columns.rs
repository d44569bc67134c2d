//! A matrix that tasks produce column block by column block: the handle one
//! stage passes to the next when its output is a matrix of vectors
//! (eigenvectors of the EVD, left and right singular vectors of the SVD).
//!
//! The handle's type says which basis the vectors are expressed in
//! ([`basis`]): the solvers of the tridiagonal (bidiagonal) problem give
//! vectors of that problem, `back_transform_q2` turns them into vectors of
//! the band, `back_transform_q1` into vectors of the input. Only the last
//! can be read as a result, so a pipeline that skips or swaps a
//! back-transformation does not compile. The handle also carries the
//! [`Reduction`] its vectors come from, and a back-transformation refuses
//! the reflectors of another reduction when the graph is built.
//!
//! The EVD pipeline by hand, with the back-transformations in their order:
//!
//! ```
//! use eigenflow::graph::TaskGraph;
//! use eigenflow::linalg::tridiagonal::stedc::DcParams;
//! use eigenflow::pipeline::evd::{back_transform_q1, back_transform_q2, sb2st, stedc, sy2sb, Sb2stGrain};
//! let a = eigenflow::gallery::random_symmetric_uniform::<f64>(40, 1);
//! let mut g = TaskGraph::new();
//! let s1 = sy2sb(&mut g, a, 4, 8)?;
//! let s2 = sb2st(&mut g, s1.band, Sb2stGrain::Fine, true)?;
//! let dc = stedc(&mut g, s2.tridiagonal, &DcParams::default(), 1.0)?;
//! let z = back_transform_q2(&mut g, s2.reflectors.unwrap(), dc.vectors, 4, 16)?;
//! let v = back_transform_q1(&mut g, s1.reflectors, z, 16)?;
//! let _result = v.into_result();
//! # Ok::<(), eigenflow::Error>(())
//! ```
//!
//! Q1 before Q2 does not compile (Q1 takes vectors of the band):
//!
//! ```compile_fail
//! # use eigenflow::graph::TaskGraph;
//! # use eigenflow::linalg::tridiagonal::stedc::DcParams;
//! # use eigenflow::pipeline::evd::{back_transform_q1, back_transform_q2, sb2st, stedc, sy2sb, Sb2stGrain};
//! # let a = eigenflow::gallery::random_symmetric_uniform::<f64>(40, 1);
//! # let mut g = TaskGraph::new();
//! # let s1 = sy2sb(&mut g, a, 4, 8)?;
//! # let s2 = sb2st(&mut g, s1.band, Sb2stGrain::Fine, true)?;
//! # let dc = stedc(&mut g, s2.tridiagonal, &DcParams::default(), 1.0)?;
//! let z = back_transform_q1(&mut g, s1.reflectors, dc.vectors, 16)?;
//! let v = back_transform_q2(&mut g, s2.reflectors.unwrap(), z, 4, 16)?;
//! # Ok::<(), eigenflow::Error>(())
//! ```
//!
//! Nor does Q2 alone read as a result (vectors of the band have none):
//!
//! ```compile_fail
//! # use eigenflow::graph::TaskGraph;
//! # use eigenflow::linalg::tridiagonal::stedc::DcParams;
//! # use eigenflow::pipeline::evd::{back_transform_q2, sb2st, stedc, sy2sb, Sb2stGrain};
//! # let a = eigenflow::gallery::random_symmetric_uniform::<f64>(40, 1);
//! # let mut g = TaskGraph::new();
//! # let s1 = sy2sb(&mut g, a, 4, 8)?;
//! # let s2 = sb2st(&mut g, s1.band, Sb2stGrain::Fine, true)?;
//! # let dc = stedc(&mut g, s2.tridiagonal, &DcParams::default(), 1.0)?;
//! let z = back_transform_q2(&mut g, s2.reflectors.unwrap(), dc.vectors, 4, 16)?;
//! let _result = z.into_result();
//! # Ok::<(), eigenflow::Error>(())
//! ```
//!
//! Nor Q1 alone, nor the tridiagonal's vectors read as a result:
//!
//! ```compile_fail
//! # use eigenflow::graph::TaskGraph;
//! # use eigenflow::linalg::tridiagonal::stedc::DcParams;
//! # use eigenflow::pipeline::evd::{back_transform_q1, sb2st, stedc, sy2sb, Sb2stGrain};
//! # let a = eigenflow::gallery::random_symmetric_uniform::<f64>(40, 1);
//! # let mut g = TaskGraph::new();
//! # let s1 = sy2sb(&mut g, a, 4, 8)?;
//! # let s2 = sb2st(&mut g, s1.band, Sb2stGrain::Fine, true)?;
//! # let dc = stedc(&mut g, s2.tridiagonal, &DcParams::default(), 1.0)?;
//! let v = back_transform_q1(&mut g, s1.reflectors, dc.vectors, 16)?;
//! # Ok::<(), eigenflow::Error>(())
//! ```
//!
//! ```compile_fail
//! # use eigenflow::graph::TaskGraph;
//! # use eigenflow::linalg::tridiagonal::stedc::DcParams;
//! # use eigenflow::pipeline::evd::{sb2st, stedc, sy2sb, Sb2stGrain};
//! # let a = eigenflow::gallery::random_symmetric_uniform::<f64>(40, 1);
//! # let mut g = TaskGraph::new();
//! # let s1 = sy2sb(&mut g, a, 4, 8)?;
//! # let s2 = sb2st(&mut g, s1.band, Sb2stGrain::Fine, true)?;
//! # let dc = stedc(&mut g, s2.tridiagonal, &DcParams::default(), 1.0)?;
//! let _result = dc.vectors.into_result();
//! # Ok::<(), eigenflow::Error>(())
//! ```
//!
//! The SVD's chains likewise: `U_bd` goes through `back_transform_q2u`
//! before `back_transform_q1u`,
//!
//! ```
//! use eigenflow::graph::TaskGraph;
//! use eigenflow::pipeline::svd::{back_transform_q1u, back_transform_q2u, bdsdc, gb2bd_with, ge2gb};
//! use eigenflow::pipeline::ChaseGrain;
//! let a = eigenflow::gallery::random_uniform::<f64>(40, 30, 1);
//! let mut g = TaskGraph::new();
//! let s1 = ge2gb(&mut g, a, 4, 8, 4)?;
//! let (q1u, _q1v) = s1.reflectors.split();
//! let s2 = gb2bd_with(&mut g, s1.band, ChaseGrain::Fine, true)?;
//! let (q2u, _q2v) = s2.reflectors.unwrap().split();
//! let bd = bdsdc(&mut g, s2.bidiagonal, &Default::default())?;
//! let u = back_transform_q2u(&mut g, q2u, bd.u, 4, 16)?;
//! let _u = back_transform_q1u(&mut g, q1u, u, 16)?.into_result();
//! # Ok::<(), eigenflow::Error>(())
//! ```
//!
//! and `V` can not take the `U` side's reflectors (nor the other way round):
//!
//! ```compile_fail
//! # use eigenflow::graph::TaskGraph;
//! # use eigenflow::pipeline::svd::{back_transform_q1u, bdsdc, gb2bd_with, ge2gb};
//! # use eigenflow::pipeline::ChaseGrain;
//! # let a = eigenflow::gallery::random_uniform::<f64>(40, 30, 1);
//! # let mut g = TaskGraph::new();
//! # let s1 = ge2gb(&mut g, a, 4, 8, 4)?;
//! # let (q1u, _q1v) = s1.reflectors.split();
//! # let s2 = gb2bd_with(&mut g, s1.band, ChaseGrain::Fine, true)?;
//! # let bd = bdsdc(&mut g, s2.bidiagonal, &Default::default())?;
//! let u = back_transform_q1u(&mut g, q1u, bd.u, 16)?;
//! # Ok::<(), eigenflow::Error>(())
//! ```
//!
//! ```compile_fail
//! # use eigenflow::graph::TaskGraph;
//! # use eigenflow::pipeline::svd::{back_transform_q2v, bdsdc, gb2bd_with, ge2gb};
//! # use eigenflow::pipeline::ChaseGrain;
//! # let a = eigenflow::gallery::random_uniform::<f64>(40, 30, 1);
//! # let mut g = TaskGraph::new();
//! # let s1 = ge2gb(&mut g, a, 4, 8, 4)?;
//! # let s2 = gb2bd_with(&mut g, s1.band, ChaseGrain::Fine, true)?;
//! # let (q2u, _q2v) = s2.reflectors.unwrap().split();
//! # let bd = bdsdc(&mut g, s2.bidiagonal, &Default::default())?;
//! let v = back_transform_q2v(&mut g, q2u, bd.v, 4, 16)?;
//! # Ok::<(), eigenflow::Error>(())
//! ```

use crate::graph::{RunOutcome, TaskGraph, TaskId};
use crate::matrix::SharedMatrix;
use crate::{Error, Result, Scalar};
use faer::Mat;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The bases a matrix of vectors can be expressed in, as type markers of
/// [`ColumnBlocks`].
pub mod basis {
    /// Vectors of the tridiagonal (EVD) or bidiagonal (SVD) problem: what the
    /// divide and conquer and inverse iteration produce, before Q2.
    #[derive(Debug)]
    pub enum Reduced {}
    /// Vectors of the band matrix: after Q2, before Q1.
    #[derive(Debug)]
    pub enum Band {}
    /// Vectors of the input matrix: after Q1, the result.
    #[derive(Debug)]
    pub enum Dense {}
}

/// The identity of one two-stage reduction (one input matrix through `sy2sb`
/// and `sb2st`, or `ge2gb` and `gb2bd`): every handle derived from that input
/// carries it, and a back-transformation refuses reflectors whose reduction
/// differs from that of the vectors it transforms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Reduction(u64);

impl Reduction {
    /// A new, process-unique identity.
    pub(crate) fn fresh() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Reduction(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// [`Error::InvalidArgument`] unless `a` and `b` are the same reduction
    /// (`None`, a handle made from data given whole, matches any).
    pub(crate) fn check(
        what: &str,
        vectors: Option<Reduction>,
        reflectors: Option<Reduction>,
    ) -> Result<()> {
        match (vectors, reflectors) {
            (Some(a), Some(b)) if a != b => Err(Error::InvalidArgument(format!(
                "{what}: the reflectors come from another reduction than the vectors \
                 (another input matrix); apply the reflectors of the reduction that \
                 produced the vectors"
            ))),
            _ => Ok(()),
        }
    }
}

/// A matrix of vectors a stage produces, expressed in the basis `B` (see
/// [`basis`]): the matrix and, per block of columns, the tasks after which
/// those columns are final. The next stage orders each of its column tasks
/// after the blocks it overlaps.
///
/// The fields are private and the handle is not `Clone`: a stage consumes it
/// by value, so at most one stage writes the matrix after its producers.
pub struct ColumnBlocks<T, B = basis::Dense> {
    pub(crate) z: Arc<SharedMatrix<T>>,
    pub(crate) blocks: Vec<(Range<usize>, Vec<TaskId>)>,
    /// The reduction the vectors come from (`None`: given whole).
    pub(crate) reduction: Option<Reduction>,
    /// The outcome of the graph whose tasks produce the matrix (`None`:
    /// given whole, no task produces it).
    pub(crate) outcome: Option<RunOutcome>,
    basis: PhantomData<fn() -> B>,
}

impl<T: Scalar, B> ColumnBlocks<T, B> {
    /// A matrix given whole (no task produces it), in the basis `B` the
    /// caller states: for instance eigenvectors of a tridiagonal computed
    /// elsewhere (`ColumnBlocks::<f64, basis::Reduced>::from_mat(z)`), to
    /// transform with a back-transformation stage. It carries no reduction,
    /// so any reflectors of the right order accept it.
    pub fn from_mat(z: Mat<T>) -> Self {
        ColumnBlocks {
            z: Arc::new(SharedMatrix::new(z)),
            blocks: Vec::new(),
            reduction: None,
            outcome: None,
            basis: PhantomData,
        }
    }
}

impl<T, B> ColumnBlocks<T, B> {
    /// The matrix `z` produced by the tasks `blocks` of `g`, from `reduction`.
    pub(crate) fn produced(
        g: &TaskGraph<'_>,
        z: Arc<SharedMatrix<T>>,
        blocks: Vec<(Range<usize>, Vec<TaskId>)>,
        reduction: Option<Reduction>,
    ) -> Self {
        ColumnBlocks {
            z,
            blocks,
            reduction,
            outcome: Some(g.outcome()),
            basis: PhantomData,
        }
    }

    /// The same matrix in the basis `C`, now final after the tasks `blocks`
    /// of `g` (a back-transformation's output).
    pub(crate) fn transformed<C>(
        self,
        g: &TaskGraph<'_>,
        blocks: Vec<(Range<usize>, Vec<TaskId>)>,
    ) -> ColumnBlocks<T, C> {
        ColumnBlocks::produced(g, self.z, blocks, self.reduction)
    }

    /// The same matrix and producers in the basis `C` (a back-transformation
    /// with nothing to apply, for orders with no reflector).
    pub(crate) fn retyped<C>(self) -> ColumnBlocks<T, C> {
        ColumnBlocks {
            z: self.z,
            blocks: self.blocks,
            reduction: self.reduction,
            outcome: self.outcome,
            basis: PhantomData,
        }
    }

    /// [`Self::transformed`] into another matrix `z` (a back-transformation
    /// that writes a new matrix).
    pub(crate) fn transformed_into<C>(
        self,
        g: &TaskGraph<'_>,
        z: Arc<SharedMatrix<T>>,
        blocks: Vec<(Range<usize>, Vec<TaskId>)>,
    ) -> ColumnBlocks<T, C> {
        ColumnBlocks::produced(g, z, blocks, self.reduction)
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.z.nrows()
    }

    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.z.ncols()
    }

    /// The reduction the vectors come from (`None` for a matrix given whole).
    pub fn reduction(&self) -> Option<Reduction> {
        self.reduction
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
}

impl<T> ColumnBlocks<T, basis::Dense> {
    /// The result handle of the vectors of the input matrix (only this basis
    /// has one: vectors of the band or the tridiagonal are not a result).
    /// Readable once the graph's run has succeeded: see [`VectorsResult`].
    pub fn into_result(self) -> VectorsResult<T> {
        self.into_result_unchecked()
    }
}

impl<T> ColumnBlocks<T, basis::Reduced> {
    /// The vectors of a tridiagonal (bidiagonal) problem given whole
    /// ([`Tridiagonal::from_vectors`](crate::pipeline::evd::Tridiagonal::from_vectors),
    /// [`Bidiagonal::from_vectors`](crate::pipeline::svd::Bidiagonal::from_vectors)):
    /// there the solver's vectors are the result. Readable as
    /// [`VectorsResult`] says.
    ///
    /// Errors: [`Error::InvalidArgument`] for the vectors of a reduction,
    /// which are no result before `back_transform_q2` and
    /// `back_transform_q1`.
    pub fn into_result_given_whole(self) -> Result<VectorsResult<T>> {
        if self.reduction.is_some() {
            return Err(Error::InvalidArgument(
                "these are vectors of a reduced matrix: apply back_transform_q2 and \
                 back_transform_q1 (or q2u/q1u, q2v/q1v) to get a result"
                    .into(),
            ));
        }
        Ok(self.into_result_unchecked())
    }
}

impl<T, B> ColumnBlocks<T, B> {
    /// The result handle in any basis (the crate's own tests and the
    /// one-stage SVD, which back-transforms with its own kernels).
    pub(crate) fn into_result_unchecked(self) -> VectorsResult<T> {
        VectorsResult {
            z: Some(self.z),
            outcome: self.outcome,
        }
    }
}

/// The matrix of a pipeline, to be taken out after the run.
///
/// Readable once the run of the graph that computes it has succeeded (and
/// the runtime has dropped the graph's tasks, which it does before it
/// reports the end of the run); [`Error::NotRun`] before the run, while it
/// runs, after a run that failed or was cancelled, and after the graph was
/// dropped unrun. Reading takes the matrix out without copying it; a handle
/// that answered `NotRun` keeps it, so it can be asked again later.
pub struct VectorsResult<T> {
    z: Option<Arc<SharedMatrix<T>>>,
    outcome: Option<RunOutcome>,
}

impl<T: Scalar> VectorsResult<T> {
    /// The result handle of a matrix the caller's own graph produces.
    pub(crate) fn of(z: Arc<SharedMatrix<T>>, outcome: Option<RunOutcome>) -> Self {
        VectorsResult {
            z: Some(z),
            outcome,
        }
    }

    /// Whether [`Self::get`] would return the matrix now.
    pub fn is_ready(&self) -> bool {
        self.z.as_ref().is_some_and(|z| Arc::strong_count(z) == 1)
            && self.outcome.as_ref().is_none_or(RunOutcome::is_ready)
    }

    /// Takes the matrix out once the run has succeeded; [`Error::NotRun`]
    /// otherwise (see [`VectorsResult`]), leaving the handle as it was.
    /// After the matrix was taken, [`Error::InvalidArgument`].
    pub fn get(&mut self) -> Result<Mat<T>> {
        if let Some(o) = &self.outcome {
            o.check()?;
        }
        let z = self.z.take().ok_or_else(|| {
            Error::InvalidArgument("the vectors were already taken from this handle".into())
        })?;
        match Arc::try_unwrap(z) {
            Ok(m) => Ok(m.into_inner()),
            Err(z) => {
                // Still shared: a task of an unfinished run holds it.
                self.z = Some(z);
                Err(Error::NotRun)
            }
        }
    }

    /// Blocks until the run that computes the matrix has ended (for a run
    /// submitted with [`crate::runtime::Runtime::submit`] whose handle is
    /// gone), then answers as [`Self::get`]. Never call it from a task of the
    /// same graph.
    pub fn wait(&mut self) -> Result<Mat<T>> {
        if let Some(o) = &self.outcome {
            o.wait()?;
        }
        self.get()
    }
}
