//! The batched SVD: [`svd_batched`], [`svd_batched_into`] and the graph form
//! [`svd_batched_graph`].

use super::input::{BatchRef, FiniteCheck};
use super::tasks::{add_chunk_tasks, first_failure, BatchedHandle, BatchedStats, InPlace};
use super::tasks::{Plan, Solver};
use super::BatchedMethod;
use super::BatchedOptions;
use crate::graph::TaskGraph;
use crate::pipeline::svd::SvdJob;
use crate::runtime::Runtime;
use crate::{Error, Result, Scalar};
use faer::MatRef;

/// The SVDs of a batch: for matrix `i`, `values_of(i)` (descending),
/// `u_of(i)` (`m x k`) and `vt_of(i)` (`k x n`), `k = min(m, n)`.
#[derive(Debug)]
#[non_exhaustive]
pub struct BatchedSvd<T> {
    /// Number of matrices.
    pub batch: usize,
    /// Rows of each input matrix.
    pub m: usize,
    /// Columns of each input matrix.
    pub n: usize,
    /// `min(m, n)`.
    pub k: usize,
    /// `batch x k`: row `i` holds matrix `i`'s singular values, descending.
    pub values: Vec<T>,
    /// `batch` column-major `m x k` matrices one after another, if vectors
    /// were asked for.
    pub u: Option<Vec<T>>,
    /// `batch` column-major `k x n` matrices (`V^T`) one after another, if
    /// vectors were asked for.
    pub vt: Option<Vec<T>>,
    /// Matrices that did not converge within the sweep limit, each with an
    /// [`Error::NoConvergence`] naming it; ascending. Their slots hold the
    /// last iterate (Jacobi route; not trustworthy) or NaN (GEBRD route);
    /// every other matrix's result is complete. [`Self::into_result`] turns a non-empty list into an error.
    pub failed: Vec<(usize, Error)>,
    /// Counters.
    pub stats: BatchedStats,
}

impl<T: Scalar> BatchedSvd<T> {
    /// Singular values of matrix `i`, descending.
    pub fn values_of(&self, i: usize) -> &[T] {
        &self.values[i * self.k..(i + 1) * self.k]
    }

    /// `U` of matrix `i` (`m x k`), if computed.
    pub fn u_of(&self, i: usize) -> Option<MatRef<'_, T>> {
        let mk = self.m * self.k;
        self.u
            .as_ref()
            .map(|u| MatRef::from_column_major_slice(&u[i * mk..(i + 1) * mk], self.m, self.k))
    }

    /// `V^T` of matrix `i` (`k x n`), if computed.
    pub fn vt_of(&self, i: usize) -> Option<MatRef<'_, T>> {
        let kn = self.k * self.n;
        self.vt
            .as_ref()
            .map(|v| MatRef::from_column_major_slice(&v[i * kn..(i + 1) * kn], self.k, self.n))
    }

    /// `Ok(self)` if every matrix converged, else the first failure
    /// ([`Error::BatchItem`] naming the matrix); the partial results are
    /// dropped, so use [`Self::failed`] to keep them.
    pub fn into_result(mut self) -> Result<Self> {
        first_failure(&mut self.failed)?;
        Ok(self)
    }
}

/// The chunk tasks' plan for the SVDs of `batch`.
fn plan<T: Scalar>(batch: &BatchRef<'_, T>, job: SvdJob, opts: &BatchedOptions) -> Plan {
    let vectors = job == SvdJob::Vectors;
    let (m, n) = batch.shape();
    let k = m.min(n);
    let method = opts.method.resolve(m, n, vectors);
    let flops = if method == BatchedMethod::Gebrd {
        crate::linalg::small::gebrd_small::flops(m, n, vectors)
    } else {
        // About 8 sweeps of 12 m n^2 flops (Gram and updates).
        let (mt, nt) = (m.max(n) as f64, m.min(n) as f64);
        8.0 * 12.0 * mt * nt * nt
    };
    Plan {
        solver: Solver::Svd(method),
        vectors,
        chunk: opts.chunk_for::<T>(batch.batch(), m, n, vectors),
        k,
        mk: if vectors { m * k } else { 0 },
        kn: if vectors { k * n } else { 0 },
        flops,
        lower: false,
    }
}

/// Adds the batched SVD of `batch` to `g`: one task per chunk (named
/// `jacobi[lo..hi)`, stage `"jacobi"`, so a trace shows one slice per
/// chunk), all independent; the runtime's workers balance them. The tasks
/// borrow the batch, so `g` cannot outlive it.
///
/// Errors (nothing is added): [`Error::BatchItem`] wrapping
/// [`Error::NonFinite`] for the first matrix with a NaN or infinite entry,
/// [`Error::InvalidArgument`] for bad [`crate::linalg::small::jacobi::JacobiParams`].
pub fn svd_batched_graph<'a, T: Scalar>(
    g: &mut TaskGraph<'a>,
    batch: BatchRef<'a, T>,
    job: SvdJob,
    opts: &BatchedOptions,
) -> Result<BatchedHandle<T>> {
    add_chunk_tasks(
        g,
        batch,
        plan(&batch, job, opts),
        opts,
        None,
        FiniteCheck::Upfront,
    )
}

/// The thin SVDs of every matrix of `batch` (values only, or with `U` and
/// `V^T` for [`SvdJob::Vectors`]), run on `rt`'s workers.
///
/// Errors: as [`svd_batched_graph`] (for a NaN or infinite entry,
/// [`Error::BatchItem`] for the lowest such matrix), and the runtime's. The
/// chunk tasks check their own matrices as they load them, rather than one
/// serial pass over the batch before them. A matrix that does
/// not converge is not an error here: it is listed in
/// [`BatchedSvd::failed`] with the others' results complete (call
/// [`BatchedSvd::into_result`] to make it one).
pub fn svd_batched<T: Scalar>(
    batch: BatchRef<'_, T>,
    job: SvdJob,
    opts: &BatchedOptions,
    rt: &Runtime,
) -> Result<BatchedSvd<T>> {
    let (m, n) = batch.shape();
    let (nb, k) = (batch.batch(), m.min(n));
    // Zero-filled: the pages are mapped by the workers that first write
    // them, not here.
    let mut values = vec![T::zero(); nb * k];
    let mut vectors = (job == SvdJob::Vectors)
        .then(|| (vec![T::zero(); nb * m * k], vec![T::zero(); nb * k * n]));
    let out = BatchedOut {
        values: &mut values,
        vectors: vectors.as_mut().map(|(u, vt)| (&mut u[..], &mut vt[..])),
    };
    let run = svd_batched_into(batch, job, opts, rt, out)?;
    let (u, vt) = vectors.unzip();
    Ok(BatchedSvd {
        batch: nb,
        m,
        n,
        k,
        values,
        u,
        vt,
        failed: run.failed,
        stats: run.stats,
    })
}

/// The caller's buffers for [`svd_batched_into`], laid out as
/// [`BatchedSvd`]'s: `values` holds `batch x k` (row `i`: matrix `i`'s
/// singular values, descending), and with vectors `(u, vt)` hold `batch`
/// column-major `m x k` matrices `U` and `batch` column-major `k x n`
/// matrices `V^T`, one after another (`k = min(m, n)`).
#[derive(Debug)]
pub struct BatchedOut<'a, T> {
    /// `batch k` entries.
    pub values: &'a mut [T],
    /// `U` (`batch m k` entries) and `V^T` (`batch k n`), for
    /// [`SvdJob::Vectors`] only.
    pub vectors: Option<(&'a mut [T], &'a mut [T])>,
}

/// What [`svd_batched_into`] reports besides the results it wrote.
#[derive(Debug)]
#[non_exhaustive]
pub struct BatchedRun {
    /// As [`BatchedSvd::failed`]: the matrices that did not converge
    /// (their slots hold NaN or the last iterate), ascending.
    pub failed: Vec<(usize, Error)>,
    /// Counters.
    pub stats: BatchedStats,
}

/// [`svd_batched`] into the caller's buffers: the chunk tasks write each
/// matrix's results straight into `out`. For repeated calls of one shape,
/// reusing the buffers saves mapping fresh memory on every call: 10,000 x
/// 32x32 `f64` with vectors is 164 MB of results, and on a 2-core VM one
/// thread took 0.55 s per call with fresh buffers (`svd_batched`), 0.48 s
/// with reused ones (`benches/batched.rs --threads 1`).
///
/// Errors: [`Error::Shape`] (nothing written) when a buffer's length is not
/// the batch's, or when `out.vectors` is given for [`SvdJob::Values`] or
/// missing for [`SvdJob::Vectors`]; otherwise as [`svd_batched`]. After an
/// error of the runtime or a non-finite matrix (found by the chunk that
/// holds it, as in [`svd_batched`]), the buffers hold whatever the other
/// chunks wrote. A matrix that does not converge is listed in
/// [`BatchedRun::failed`].
///
/// ```
/// use eigenflow::pipeline::batched::{
///     svd_batched_into, BatchLayout, BatchRef, BatchedOptions, BatchedOut,
/// };
/// use eigenflow::pipeline::SvdJob;
/// use eigenflow::runtime::Runtime;
/// let (batch, m, n, k) = (3, 4, 3, 3);
/// let rt = Runtime::builder().threads(2).build();
/// // The result buffers, reused from call to call.
/// let mut values = vec![0.0; batch * k];
/// let (mut u, mut vt) = (vec![0.0; batch * m * k], vec![0.0; batch * k * n]);
/// for step in 0..2 {
///     let data: Vec<f64> = (0..batch * m * n).map(|x| ((x * 7 + step) % 11) as f64).collect();
///     let b = BatchRef::new(&data, batch, m, n, BatchLayout::ColMajor)?;
///     let out = BatchedOut {
///         values: &mut values,
///         vectors: Some((&mut u, &mut vt)),
///     };
///     let run = svd_batched_into(b, SvdJob::Vectors, &BatchedOptions::default(), &rt, out)?;
///     assert!(run.failed.is_empty());
///     assert!(values[0] >= values[1] && values[1] >= values[2]);
/// }
/// # Ok::<(), eigenflow::Error>(())
/// ```
pub fn svd_batched_into<T: Scalar>(
    batch: BatchRef<'_, T>,
    job: SvdJob,
    opts: &BatchedOptions,
    rt: &Runtime,
    out: BatchedOut<'_, T>,
) -> Result<BatchedRun> {
    let (m, n) = batch.shape();
    let (nb, k) = (batch.batch(), m.min(n));
    let shape = |what: &str, len: usize, want: usize| -> Result<()> {
        if len == want {
            return Ok(());
        }
        Err(Error::Shape(format!(
            "svd_batched_into: {what} holds {len} entries, the batch of {nb} {m} x {n} \
             matrices needs {want}"
        )))
    };
    shape("values", out.values.len(), nb * k)?;
    let (u, vt): (&mut [T], &mut [T]) = match (job, out.vectors) {
        (SvdJob::Vectors, Some((u, vt))) => {
            shape("u", u.len(), nb * m * k)?;
            shape("vt", vt.len(), nb * k * n)?;
            (u, vt)
        }
        (SvdJob::Values, None) => (&mut [], &mut []),
        (job, given) => {
            return Err(Error::Shape(format!(
                "svd_batched_into: job {job:?} with{} vector buffers",
                if given.is_some() { "" } else { "out" }
            )))
        }
    };
    let in_place = InPlace {
        values: out.values,
        u,
        vt,
    };
    let mut g = TaskGraph::new();
    let h = add_chunk_tasks(
        &mut g,
        batch,
        plan(&batch, job, opts),
        opts,
        Some(in_place),
        FiniteCheck::InChunks,
    )?;
    rt.run(g)?;
    let res = h.collect()?;
    Ok(BatchedRun {
        failed: res.failed,
        stats: res.stats,
    })
}
