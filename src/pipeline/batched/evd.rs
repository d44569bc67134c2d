//! The batched symmetric EVD: [`eigh_batched`], [`eigvalsh_batched`],
//! [`eigh_batched_into`] and the graph form [`eigh_batched_graph`].

use super::evd_chunk::EvdRoute;
use super::input::{BatchRef, FiniteCheck};
use super::svd::BatchedRun;
use super::tasks::{add_chunk_tasks, first_failure, BatchedHandle, BatchedStats, InPlace};
use super::tasks::{Plan, Solver};
use super::BatchedOptions;
use crate::graph::{SubGraph, TaskGraph, TaskId};
use crate::pipeline::evd::EvdJob;
use crate::runtime::Runtime;
use crate::{Error, Result, Scalar};
use faer::MatRef;

/// The eigendecompositions of a batch of symmetric `n x n` matrices: for
/// matrix `i`, [`values_of`](Self::values_of) (ascending) and
/// [`vectors_of`](Self::vectors_of) (column `j` for value `j`).
#[derive(Debug)]
#[non_exhaustive]
pub struct BatchedEvd<T> {
    /// Number of matrices.
    pub batch: usize,
    /// Order of each matrix.
    pub n: usize,
    /// `batch x n`: row `i` holds matrix `i`'s eigenvalues, ascending.
    pub values: Vec<T>,
    /// `batch` column-major `n x n` matrices of orthonormal eigenvectors one
    /// after another, if vectors were asked for.
    pub vectors: Option<Vec<T>>,
    /// Matrices that did not converge, each with an [`Error::NoConvergence`]
    /// naming it; ascending. Their slots hold NaN; every other matrix's
    /// result is complete. [`Self::into_result`] turns a non-empty list into
    /// an error.
    pub failed: Vec<(usize, Error)>,
    /// Counters (`sweeps`: the Jacobi sweeps of each matrix, 0 on the
    /// one-stage route).
    pub stats: BatchedStats,
}

impl<T: Scalar> BatchedEvd<T> {
    /// Eigenvalues of matrix `i`, ascending.
    pub fn values_of(&self, i: usize) -> &[T] {
        &self.values[i * self.n..(i + 1) * self.n]
    }

    /// Eigenvectors of matrix `i` (`n x n`, column `j` for value `j`), if
    /// computed.
    pub fn vectors_of(&self, i: usize) -> Option<MatRef<'_, T>> {
        let nn = self.n * self.n;
        self.vectors
            .as_ref()
            .map(|v| MatRef::from_column_major_slice(&v[i * nn..(i + 1) * nn], self.n, self.n))
    }

    /// `Ok(self)` if every matrix converged, else the first failure
    /// ([`Error::BatchItem`] naming the matrix).
    pub fn into_result(mut self) -> Result<Self> {
        first_failure(&mut self.failed)?;
        Ok(self)
    }
}

/// Where the results of [`eigh_batched_graph`] land.
pub struct BatchedEvdHandle<T>(BatchedHandle<T>);

impl<T: Scalar> BatchedEvdHandle<T> {
    /// The chunk tasks, in batch order (independent of one another).
    pub fn tasks(&self) -> &[TaskId] {
        self.0.tasks()
    }

    /// The chunk tasks as a [`SubGraph`], to order them after or before
    /// other work of the same graph.
    pub fn subgraph(&self) -> SubGraph {
        self.0.subgraph()
    }

    /// Assembles the results once the graph ran; [`Error::NotRun`] if a chunk
    /// task has not run successfully.
    pub fn collect(self) -> Result<BatchedEvd<T>> {
        let n = self.0.shape().1;
        let c = self.0.collect_parts()?;
        Ok(BatchedEvd {
            batch: c.batch,
            n,
            values: c.values,
            vectors: c.u,
            failed: c.failed,
            stats: c.stats,
        })
    }
}

/// The chunk tasks' plan for the EVD of `batch` (square matrices, else
/// [`Error::Shape`]).
fn plan<T: Scalar>(batch: &BatchRef<'_, T>, job: EvdJob, opts: &BatchedOptions) -> Result<Plan> {
    let (m, n) = batch.shape();
    if m != n {
        return Err(Error::Shape(format!(
            "a batched symmetric eigendecomposition needs square matrices, got {m} x {n}"
        )));
    }
    let vectors = job == EvdJob::Vectors;
    let route = EvdRoute::for_order(n, opts);
    let chunk = match opts.chunk {
        Some(c) => c.clamp(1, batch.batch()),
        None => opts.chunk_of::<T>(batch.batch(), route.words(n, vectors), route.group()),
    };
    Ok(Plan {
        solver: Solver::Evd(route),
        vectors,
        chunk,
        k: n,
        mk: if vectors { n * n } else { 0 },
        kn: 0,
        flops: route.flops(n, vectors),
        lower: true,
    })
}

/// Adds the eigendecompositions of the symmetric matrices of `batch` (lower
/// triangles read) to `g`: one task per chunk (named `syevj[lo..hi)` or
/// `syevd[lo..hi)` after the route, the stage likewise), all independent.
/// The tasks borrow the batch, so `g` cannot outlive it.
///
/// Errors (nothing is added): [`Error::Shape`] for non-square matrices,
/// [`Error::BatchItem`] wrapping [`Error::NonFinite`] for the first matrix
/// with a NaN or infinite entry in its lower triangle.
pub fn eigh_batched_graph<'a, T: Scalar>(
    g: &mut TaskGraph<'a>,
    batch: BatchRef<'a, T>,
    job: EvdJob,
    opts: &BatchedOptions,
) -> Result<BatchedEvdHandle<T>> {
    let plan = plan(&batch, job, opts)?;
    add_chunk_tasks(g, batch, plan, opts, None, FiniteCheck::Upfront).map(BatchedEvdHandle)
}

/// The eigenvalues (ascending) and orthonormal eigenvectors of every
/// symmetric matrix of `batch` (lower triangles read), run on `rt`'s
/// workers: numpy's `np.linalg.eigh` on a stack. Orders below
/// [`BatchedOptions::evd_jacobi_below`] are solved by cyclic Jacobi, eight
/// matrices at once in SIMD lanes; larger ones by the one-stage path
/// (`dsytrd`, divide and conquer, `dormtr`) one matrix per call. Each
/// matrix's results are bitwise the same whatever the thread count and the
/// chunking.
///
/// Errors: [`Error::Shape`] for non-square matrices; for a NaN or infinite
/// entry in a lower triangle, [`Error::BatchItem`] naming the lowest such
/// matrix (the chunk tasks check their own matrices as they load them); the
/// runtime's. A matrix that does not converge is listed in
/// [`BatchedEvd::failed`] with the others' results complete.
///
/// ```
/// use eigenflow::pipeline::batched::{eigh_batched, BatchLayout, BatchRef, BatchedOptions};
/// use eigenflow::runtime::Runtime;
/// // Two 3 x 3 symmetric matrices, one after another.
/// let data = [
///     2.0, 1.0, 0.0, 1.0, 2.0, 1.0, 0.0, 1.0, 2.0, // tridiagonal
///     4.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 9.0, // diagonal
/// ];
/// let batch = BatchRef::new(&data, 2, 3, 3, BatchLayout::RowMajor)?;
/// let rt = Runtime::builder().threads(2).build();
/// let evd = eigh_batched(batch, &BatchedOptions::default(), &rt)?.into_result()?;
/// assert_eq!(evd.values_of(1), &[1.0, 4.0, 9.0]);
/// let (w, v) = (evd.values_of(0), evd.vectors_of(0).unwrap());
/// let lambda = faer::Mat::from_fn(3, 3, |i, j| if i == j { w[i] } else { 0.0 });
/// let a = batch.matrix(0);
/// assert!((a * v - v * lambda.as_ref()).norm_l2() < 1e-14); // A V = V Lambda
/// # Ok::<(), eigenflow::Error>(())
/// ```
pub fn eigh_batched<T: Scalar>(
    batch: BatchRef<'_, T>,
    opts: &BatchedOptions,
    rt: &Runtime,
) -> Result<BatchedEvd<T>> {
    solve(batch, EvdJob::Vectors, opts, rt)
}

/// [`eigh_batched`] for eigenvalues only (numpy's `np.linalg.eigvalsh` on a
/// stack): [`BatchedEvd::vectors`] is `None`.
///
/// ```
/// use eigenflow::pipeline::batched::{eigvalsh_batched, BatchLayout, BatchRef, BatchedOptions};
/// use eigenflow::runtime::Runtime;
/// let data = [2.0f32, -1.0, -1.0, 2.0];
/// let batch = BatchRef::new(&data, 1, 2, 2, BatchLayout::ColMajor)?;
/// let rt = Runtime::builder().threads(1).build();
/// let evd = eigvalsh_batched(batch, &BatchedOptions::default(), &rt)?;
/// assert!((evd.values_of(0)[0] - 1.0).abs() < 1e-6 && (evd.values_of(0)[1] - 3.0).abs() < 1e-6);
/// assert!(evd.vectors.is_none());
/// # Ok::<(), eigenflow::Error>(())
/// ```
pub fn eigvalsh_batched<T: Scalar>(
    batch: BatchRef<'_, T>,
    opts: &BatchedOptions,
    rt: &Runtime,
) -> Result<BatchedEvd<T>> {
    solve(batch, EvdJob::Values, opts, rt)
}

/// [`eigh_batched`] or [`eigvalsh_batched`] after `job`, into fresh buffers.
fn solve<T: Scalar>(
    batch: BatchRef<'_, T>,
    job: EvdJob,
    opts: &BatchedOptions,
    rt: &Runtime,
) -> Result<BatchedEvd<T>> {
    let (nb, n) = (batch.batch(), batch.shape().1);
    // Zero-filled: the pages are mapped by the workers that first write
    // them, not here.
    let mut values = vec![T::zero(); nb * n];
    let mut vectors = (job == EvdJob::Vectors).then(|| vec![T::zero(); nb * n * n]);
    let out = BatchedEvdOut {
        values: &mut values,
        vectors: vectors.as_deref_mut(),
    };
    let run = eigh_batched_into(batch, opts, rt, out)?;
    Ok(BatchedEvd {
        batch: nb,
        n,
        values,
        vectors,
        failed: run.failed,
        stats: run.stats,
    })
}

/// The caller's buffers for [`eigh_batched_into`], laid out as
/// [`BatchedEvd`]'s: `values` holds `batch x n` (row `i`: matrix `i`'s
/// eigenvalues, ascending), `vectors`, when given, `batch` column-major
/// `n x n` matrices one after another.
#[derive(Debug)]
pub struct BatchedEvdOut<'a, T> {
    /// `batch n` entries.
    pub values: &'a mut [T],
    /// `batch n n` entries; `None` for eigenvalues only.
    pub vectors: Option<&'a mut [T]>,
}

/// [`eigh_batched`] into the caller's buffers (eigenvalues only when
/// `out.vectors` is `None`): the chunk tasks write each matrix's results
/// straight into `out`, which can be reused from call to call.
///
/// Errors: [`Error::Shape`] (nothing written) for non-square matrices or a
/// buffer whose length is not the batch's; otherwise as [`eigh_batched`].
/// After an error of the runtime or a non-finite matrix, the buffers hold
/// whatever the other chunks wrote; the input is never written.
///
/// ```
/// use eigenflow::pipeline::batched::{
///     eigh_batched_into, BatchLayout, BatchRef, BatchedEvdOut, BatchedOptions,
/// };
/// use eigenflow::runtime::Runtime;
/// let (batch, n) = (4, 2);
/// let rt = Runtime::builder().threads(2).build();
/// let (mut values, mut vectors) = (vec![0.0; batch * n], vec![0.0; batch * n * n]);
/// for step in 0..2 {
///     let data: Vec<f64> = (0..batch * n * n).map(|x| ((x * 5 + step) % 7) as f64).collect();
///     let b = BatchRef::new(&data, batch, n, n, BatchLayout::ColMajor)?;
///     let out = BatchedEvdOut { values: &mut values, vectors: Some(&mut vectors) };
///     let run = eigh_batched_into(b, &BatchedOptions::default(), &rt, out)?;
///     assert!(run.failed.is_empty());
///     assert!(values[0] <= values[1]);
/// }
/// # Ok::<(), eigenflow::Error>(())
/// ```
pub fn eigh_batched_into<T: Scalar>(
    batch: BatchRef<'_, T>,
    opts: &BatchedOptions,
    rt: &Runtime,
    out: BatchedEvdOut<'_, T>,
) -> Result<BatchedRun> {
    let job = match out.vectors {
        Some(_) => EvdJob::Vectors,
        None => EvdJob::Values,
    };
    let plan = plan(&batch, job, opts)?;
    let (nb, n) = (batch.batch(), batch.shape().1);
    let shape = |what: &str, len: usize, want: usize| -> Result<()> {
        if len == want {
            return Ok(());
        }
        Err(Error::Shape(format!(
            "eigh_batched_into: {what} holds {len} entries, the batch of {nb} {n} x {n} \
             matrices needs {want}"
        )))
    };
    shape("values", out.values.len(), nb * n)?;
    let u = match out.vectors {
        Some(v) => {
            shape("vectors", v.len(), nb * n * n)?;
            v
        }
        None => &mut [],
    };
    let in_place = InPlace {
        values: out.values,
        u,
        vt: &mut [],
    };
    let mut g = TaskGraph::new();
    let h = add_chunk_tasks(
        &mut g,
        batch,
        plan,
        opts,
        Some(in_place),
        FiniteCheck::InChunks,
    )?;
    rt.run(g)?;
    let res = h.collect_parts()?;
    Ok(BatchedRun {
        failed: res.failed,
        stats: res.stats,
    })
}
