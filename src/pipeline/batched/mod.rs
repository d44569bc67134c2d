//! Many small SVDs of one shape at once, by one of two routes
//! ([`BatchedMethod`]): blocked one-sided Jacobi ([`crate::linalg::small::jacobi`],
//! seed 004) or Householder bidiagonalisation plus a bidiagonal solver
//! ([`crate::linalg::small::gebrd_small`], seed 002). The batch is split into chunks
//! sized for the L2 cache, one task per chunk, and the runtime's workers
//! balance the chunks. Inside a chunk the matrices advance one outer sweep
//! at a time (Jacobi route) and a converged matrix leaves the active set
//! (the batch mask of [004 §8], Design-4); the GEBRD route solves the
//! chunk's matrices in groups of four. The chunk tasks of one batch pass their
//! workspaces and result buffers on to one another through a pool (a chunk of
//! one 128 x 128 matrix would otherwise allocate and zero about 1 MB).
//!
//! Every matrix is solved by the same serial, deterministic kernel whatever
//! chunk it lands in and whichever worker runs it, so results are bitwise
//! identical across thread counts and chunkings.
//!
//! Speed of the Jacobi route (measured with `benches/batched.rs` on a loaded 2-core machine,
//! 2 workers, f64, against a loop of faer SVDs): this route is correct but
//! not fast on the CPU. It took 1.2-1.8x the faer loop's time at 8 x 8,
//! 2.5-5x at 32 x 32, 6-7x at 128 x 128 and about 14x at 512 x 512. Small
//! sizes spend most of their time in the inner eigensolver (rotation setup
//! and strided row copies); large ones in the GEMMs, of which the method
//! needs about `12 n^3` flops per sweep over 8-14 sweeps.
//!
//! The GEBRD route, measured with the same bench on a 2-core AVX2 machine
//! (2 workers, f64, median of 5, numpy's `np.linalg.svd` loop over LAPACK
//! `gesdd` from `benches/peers_batched.py`, median of 3, right after it;
//! 2026-11-27, with the interleaved groups), seconds, ours / faer 2-thread
//! loop / numpy: 10,000 x 8x8 with vectors 0.038 / 0.076 / 0.207, 10,000 x
//! 32x32 0.675 / 1.04 / 2.36, 1,000 x 128x128 1.65 / 1.68 / 4.39, 100 x
//! 512x512 4.86 / 5.48 / 12.8; values only 0.024 / 0.050 / 0.111, 0.281 /
//! 0.655 / 0.841, 0.682 / 1.21 / 1.56, 2.27 / 2.97 / 5.88. At 32x32 with
//! vectors the machine's noise is as large as the margin: five back-to-back
//! pairs that day gave numpy / ours 4.07, 2.99, 4.14, 3.74 and 3.50. Each chunk solves
//! its matrices in groups of [`crate::linalg::small::gebrd_small::LANES`]
//! ([`crate::linalg::small::gebrd_small::small_svd_group`]; chunks are sized in
//! whole groups): below 48 columns
//! ([`crate::linalg::small::gebrd_small::LANES_BELOW`]), the group's Householder
//! reductions run as one in interleaved storage, one SIMD operation per step
//! for all four, and with vectors (by bidiagonal QR there) the four chases
//! run side by side (their convergence tests two at a time), since the chase
//! and its convergence test (the mu recurrence) are chains of dependent
//! square roots and divisions that several matrices' chains overlap (two:
//! 10-13% per 32x32 matrix; four instead of two: within noise).
//! A matrix's results are bitwise those of a call on its own.
//!
//! # Crossover (`BatchedMethod::Auto`)
//!
//! Measured in one `cargo bench --bench batched` run (2 workers, f64, a
//! loaded 2-core machine, square uniform random matrices), seconds for the
//! whole batch, Jacobi / GEBRD:
//!
//! | batch x shape | values | with vectors |
//! |---|---|---|
//! | 10,000 x 8x8 | 0.171 / 0.049 | 0.207 / 0.155 |
//! | 10,000 x 32x32 | 4.55 / 0.51 | 5.07 / 1.64 |
//! | 1,000 x 128x128 | 18.1 / 1.88 | 23.5 / 8.32 |
//!
//! (GEBRD vectors here by bidiagonal QR at every size). A second run, with
//! divide and conquer from `n = 48` ([`crate::linalg::small::gebrd_small::DC_FROM`])
//! and a machine about 2.5x more loaded (the faer loop's times doubled):
//! 8x8 0.312 / 0.145 and 0.318 / 0.223, 32x32 10.9 / 1.29 and 12.8 / 5.03,
//! 128x128 39.8 / 4.28 and 47.8 / 12.7 (faer 2-thread loop: 0.215, 0.266,
//! 2.59, 3.15, 5.32, 6.99). The GEBRD route was
//! faster at every measured shape and job, by 1.3x at 8 x 8 with vectors up
//! to 10x for values only, so [`BatchedMethod::Auto`] picks it for every
//! shape: no crossover was found in the range `8 <= n <= 128`. Jacobi stays
//! available by name (its one-sided rotations give small singular values of
//! graded matrices to high relative accuracy, which bidiagonalisation does
//! not promise).
//!
//! For repeated calls of one shape, [`svd_batched_into`] writes into the
//! caller's buffers, which can then be reused (no fresh memory to map per
//! call).
//!
//! ```
//! use eigenflow::pipeline::batched::{svd_batched, BatchLayout, BatchRef, BatchedOptions};
//! use eigenflow::pipeline::SvdJob;
//! use eigenflow::runtime::Runtime;
//! // Three 4 x 3 matrices, column-major, one after another.
//! let data: Vec<f64> = (0..36).map(|x| ((x * 7) % 11) as f64).collect();
//! let batch = BatchRef::new(&data, 3, 4, 3, BatchLayout::ColMajor)?;
//! let rt = Runtime::builder().threads(2).build();
//! let svd = svd_batched(batch, SvdJob::Vectors, &BatchedOptions::default(), &rt)?;
//! assert!(svd.failed.is_empty());
//! assert_eq!(svd.values_of(2).len(), 3);
//! let (u, vt) = (svd.u_of(0).unwrap(), svd.vt_of(0).unwrap());
//! assert_eq!((u.nrows(), u.ncols(), vt.nrows(), vt.ncols()), (4, 3, 3, 3));
//! # Ok::<(), eigenflow::Error>(())
//! ```

mod chunk;

use super::svd::SvdJob;
use crate::graph::{SubGraph, Task, TaskGraph, TaskId};
use crate::linalg::small::jacobi::JacobiParams;
use crate::runtime::Runtime;
use crate::{Error, Result, Scalar};
use chunk::{run_chunk, ChunkDst, ChunkOut, ScratchPool};
use faer::MatRef;
use parking_lot::Mutex;
use std::sync::Arc;

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
        match self.first_non_finite(0, self.batch) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The first matrix of `lo..hi` with a NaN or infinite entry, as
    /// [`BatchRef::check_finite`]'s error. Each matrix is one contiguous scan
    /// whatever the layout; only a matrix that fails it is searched for the
    /// position of its first bad entry.
    fn first_non_finite(&self, lo: usize, hi: usize) -> Option<Error> {
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
}

/// When the batch's entries are checked for NaN and infinities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FiniteCheck {
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

/// Which algorithm solves the matrices of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BatchedMethod {
    /// Blocked one-sided Jacobi ([`crate::linalg::small::jacobi`], seed 004).
    Jacobi,
    /// Householder bidiagonalisation, then dqds (values) or bidiagonal QR
    /// (vectors) ([`crate::linalg::small::gebrd_small`], seed 002).
    Gebrd,
    /// Whichever of the two was measured faster for the shape and job (see
    /// [`BatchedMethod::resolve`]).
    #[default]
    Auto,
}

impl BatchedMethod {
    /// The route used for `m x n` matrices: `self` unless [`Self::Auto`],
    /// which picks from the shape and job alone (deterministically).
    pub fn resolve(self, m: usize, n: usize, vectors: bool) -> BatchedMethod {
        match self {
            BatchedMethod::Auto => auto_method(m, n, vectors),
            other => other,
        }
    }

    /// The name used in task names and stages (`"jacobi"` or `"gebrd"`).
    pub fn name(self) -> &'static str {
        match self {
            BatchedMethod::Jacobi => "jacobi",
            BatchedMethod::Gebrd => "gebrd",
            BatchedMethod::Auto => "auto",
        }
    }
}

/// [`BatchedMethod::Auto`]'s choice: GEBRD for every shape and job, the
/// faster route at every shape measured (see the module documentation's
/// crossover table); a function of the shape so that a measured crossover
/// can be added without changing callers.
fn auto_method(m: usize, n: usize, vectors: bool) -> BatchedMethod {
    let _ = (m, n, vectors);
    BatchedMethod::Gebrd
}

impl std::str::FromStr for BatchedMethod {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "jacobi" => Ok(BatchedMethod::Jacobi),
            "gebrd" => Ok(BatchedMethod::Gebrd),
            "auto" => Ok(BatchedMethod::Auto),
            _ => Err(Error::InvalidArgument(format!(
                "unknown batched method {s:?} (expected jacobi, gebrd or auto)"
            ))),
        }
    }
}

/// Options of [`svd_batched`].
#[derive(Clone, Debug)]
pub struct BatchedOptions {
    /// The route (default [`BatchedMethod::Auto`]).
    pub method: BatchedMethod,
    /// The Jacobi kernel's parameters (block width, tolerances, sweep limit).
    pub params: JacobiParams,
    /// Matrices per chunk task; `None` to size chunks for `l2_bytes`.
    pub chunk: Option<usize>,
    /// The cache a chunk's working set should fit in (bytes). Default 1 MiB.
    pub l2_bytes: usize,
    /// Automatic chunking makes at least this many chunks when the batch
    /// allows, so that the runtime can balance them over its workers.
    /// Default 16.
    pub min_chunks: usize,
    /// Converged matrices leave the active set of their chunk (default
    /// `true`). `false` keeps sweeping them until the whole chunk converged,
    /// as an unmasked batch solver would; the results are the same (see
    /// [`crate::linalg::small::jacobi::JacobiState::idle_sweep`]), it is only slower. For tests.
    pub mask: bool,
}

impl Default for BatchedOptions {
    fn default() -> Self {
        BatchedOptions {
            method: BatchedMethod::Auto,
            params: JacobiParams::default(),
            chunk: None,
            l2_bytes: 1 << 20,
            min_chunks: 16,
            mask: true,
        }
    }
}

impl BatchedOptions {
    /// The number of matrices per chunk for this batch.
    pub fn chunk_for<T: Scalar>(&self, batch: usize, m: usize, n: usize, vectors: bool) -> usize {
        if let Some(c) = self.chunk {
            return c.clamp(1, batch.max(1));
        }
        let (mt, nt) = (m.max(n), m.min(n));
        let gebrd = self.method.resolve(m, n, vectors) == BatchedMethod::Gebrd;
        let words = if gebrd {
            // Input view, working matrix and right reflectors, with vectors
            // Q, P and the outputs.
            let mut w = m * n + mt * nt + nt * nt + 6 * nt;
            if vectors {
                w += 2 * (mt * nt + nt * nt);
            }
            w
        } else {
            let (l, nb) = crate::linalg::small::jacobi::blocking_for(nt, &self.params);
            let n2 = l * nb;
            // Input view, working matrix, and with vectors V and the outputs.
            let mut w = m * n + mt * n2 + nt;
            if vectors {
                w += nt * n2 + m * nt + nt * n;
            }
            w
        };
        let fit = (self.l2_bytes / (words * std::mem::size_of::<T>()).max(1)).max(1);
        let balance = batch.div_ceil(self.min_chunks.max(1)).max(1);
        let chunk = fit.min(balance);
        // The GEBRD route reduces its matrices in groups of `LANES`: a chunk
        // of a whole number of groups leaves no remainder to reduce alone.
        let lanes = crate::linalg::small::gebrd_small::LANES;
        if gebrd && chunk > lanes {
            chunk - chunk % lanes
        } else {
            chunk
        }
    }
}

/// Counters of a batched run (for tests and tuning).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchedStats {
    /// Chunk tasks.
    pub chunks: usize,
    /// Outer sweeps per matrix (the final sweep without rotation included).
    pub sweeps: Vec<usize>,
    /// Matrix-sweeps not run because the matrix had converged while others
    /// of its chunk still iterated (what masking saves).
    pub masked_sweeps: usize,
    /// Sweeps run on already converged matrices (unmasked mode only).
    pub idle_sweeps: usize,
    /// Block pairs whose update was skipped because the inner solver applied
    /// no rotation (`J = I`).
    pub pair_skips: usize,
}

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
        if self.failed.is_empty() {
            return Ok(self);
        }
        let (index, e) = self.failed.swap_remove(0);
        Err(Error::BatchItem {
            index,
            source: Box::new(e),
        })
    }
}

/// Where the results of [`svd_batched_graph`] land.
pub struct BatchedHandle<T> {
    batch: usize,
    m: usize,
    n: usize,
    vectors: bool,
    results: Arc<Mutex<Results<T>>>,
    tasks: Vec<TaskId>,
}

/// The whole batch's results, filled by the chunk tasks as they finish (each
/// copies its chunk in under the lock, so the copies run on the workers, in
/// parallel with other chunks' solves, and [`BatchedHandle::collect`] moves
/// the buffers out without copying).
struct Results<T> {
    values: Vec<T>,
    u: Vec<T>,
    vt: Vec<T>,
    sweeps: Vec<usize>,
    failed: Vec<(usize, Error)>,
    masked: usize,
    idle: usize,
    pair_skips: usize,
    /// The lowest matrix with a non-finite entry found by a chunk task
    /// ([`FiniteCheck::InChunks`]), as its [`Error::BatchItem`].
    rejected: Option<Error>,
    /// Chunks stored so far.
    done: usize,
}

impl<T: Scalar> Results<T> {
    /// Stores chunk `lo..` (`out`): its values and vectors, `k` values and
    /// `mk`, `kn` vector entries per matrix, unless the chunk wrote them in
    /// place (its buffers are empty then), and its counters.
    fn store(&mut self, lo: usize, out: &mut ChunkOut<T>, k: usize, mk: usize, kn: usize) {
        let st = &mut out.stats;
        let len = st.sweeps.len();
        if !out.values.is_empty() {
            self.values[lo * k..(lo + len) * k].copy_from_slice(&out.values);
        }
        if !out.u.is_empty() {
            self.u[lo * mk..(lo + len) * mk].copy_from_slice(&out.u);
            self.vt[lo * kn..(lo + len) * kn].copy_from_slice(&out.vt);
        }
        self.sweeps[lo..lo + len].copy_from_slice(&st.sweeps);
        self.failed.append(&mut st.failed);
        self.masked += st.masked;
        self.idle += st.idle;
        self.pair_skips += st.pair_skips;
        self.done += 1;
    }

    /// Records a chunk that found a non-finite matrix (`e`, an
    /// [`Error::BatchItem`]) and solved nothing.
    fn reject(&mut self, e: Error) {
        let index = |e: &Error| match e {
            Error::BatchItem { index, .. } => *index,
            _ => usize::MAX,
        };
        if self.rejected.as_ref().is_none_or(|r| index(&e) < index(r)) {
            self.rejected = Some(e);
        }
        self.done += 1;
    }
}

impl<T: Scalar> BatchedHandle<T> {
    /// The chunk tasks, in batch order (independent of one another).
    pub fn tasks(&self) -> &[TaskId] {
        &self.tasks
    }

    /// The chunk tasks as a [`SubGraph`], to order them after or before
    /// other work of the same graph.
    pub fn subgraph(&self) -> SubGraph {
        SubGraph {
            entries: self.tasks.clone(),
            exits: self.tasks.clone(),
        }
    }

    /// Assembles the results once the graph ran; [`Error::NotRun`] if a chunk
    /// task has not run successfully.
    pub fn collect(self) -> Result<BatchedSvd<T>> {
        let mut res = self.results.lock();
        if res.done != self.tasks.len() {
            return Err(Error::NotRun);
        }
        use std::mem::take;
        if let Some(e) = res.rejected.take() {
            return Err(e);
        }
        // Chunks finish in any order: list the failures by matrix.
        let mut failed = take(&mut res.failed);
        failed.sort_by_key(|f| f.0);
        Ok(BatchedSvd {
            batch: self.batch,
            m: self.m,
            n: self.n,
            k: self.m.min(self.n),
            values: take(&mut res.values),
            u: self.vectors.then(|| take(&mut res.u)),
            vt: self.vectors.then(|| take(&mut res.vt)),
            failed,
            stats: BatchedStats {
                chunks: self.tasks.len(),
                sweeps: take(&mut res.sweeps),
                masked_sweeps: res.masked,
                idle_sweeps: res.idle,
                pair_skips: res.pair_skips,
            },
        })
    }
}

/// Adds the batched SVD of `batch` to `g`: one task per chunk (named
/// `jacobi[lo..hi)`, stage `"jacobi"`, so a trace shows one slice per
/// chunk), all independent; the runtime's workers balance them. The tasks
/// borrow the batch, so `g` cannot outlive it.
///
/// Errors (nothing is added): [`Error::BatchItem`] wrapping
/// [`Error::NonFinite`] for the first matrix with a NaN or infinite entry,
/// [`Error::InvalidArgument`] for bad [`JacobiParams`].
pub fn svd_batched_graph<'a, T: Scalar>(
    g: &mut TaskGraph<'a>,
    batch: BatchRef<'a, T>,
    job: SvdJob,
    opts: &BatchedOptions,
) -> Result<BatchedHandle<T>> {
    add_chunk_tasks(g, batch, job, opts, None, FiniteCheck::Upfront)
}

/// Caller-owned result buffers (sized for the batch) that the chunk tasks
/// write in place.
struct InPlace<'a, T> {
    values: &'a mut [T],
    u: &'a mut [T],
    vt: &'a mut [T],
}

/// [`svd_batched_graph`], with the values and vectors written in place into
/// `in_place` when given (else into buffers of the handle's, each chunk
/// copying its results in under the lock), and the input checked as `check`
/// says.
fn add_chunk_tasks<'a, T: Scalar>(
    g: &mut TaskGraph<'a>,
    batch: BatchRef<'a, T>,
    job: SvdJob,
    opts: &BatchedOptions,
    in_place: Option<InPlace<'a, T>>,
    check: FiniteCheck,
) -> Result<BatchedHandle<T>> {
    opts.params.validate()?;
    if check == FiniteCheck::Upfront {
        batch.check_finite()?;
    }
    let vectors = job == SvdJob::Vectors;
    let (m, n) = batch.shape();
    let chunk = opts.chunk_for::<T>(batch.batch(), m, n, vectors);
    let (nb, k) = (batch.batch(), m.min(n));
    let (mk, kn) = if vectors { (m * k, k * n) } else { (0, 0) };
    let bounds: Vec<(usize, usize)> = (0..nb)
        .step_by(chunk)
        .map(|lo| (lo, (lo + chunk).min(nb)))
        .collect();
    // Zero-filled, so the pages are mapped by the workers that first write
    // them, not here.
    let own = |len: usize| match in_place {
        Some(_) => Vec::new(),
        None => vec![T::zero(); len],
    };
    let results = Arc::new(Mutex::new(Results {
        values: own(nb * k),
        u: own(nb * mk),
        vt: own(nb * kn),
        sweeps: vec![0; nb],
        failed: Vec::new(),
        masked: 0,
        idle: 0,
        pair_skips: 0,
        rejected: None,
        done: 0,
    }));
    // Each chunk's slices of the caller's buffers, if any.
    let dsts: Vec<Option<ChunkDst<'a, T>>> = match in_place {
        Some(p) => {
            let values = chunk_slices(p.values, k, &bounds);
            let u = chunk_slices(p.u, mk, &bounds);
            let vt = chunk_slices(p.vt, kn, &bounds);
            values
                .into_iter()
                .zip(u)
                .zip(vt)
                .map(|((values, u), vt)| Some(ChunkDst { values, u, vt }))
                .collect()
        }
        None => bounds.iter().map(|_| None).collect(),
    };
    let mut handle = BatchedHandle {
        batch: nb,
        m,
        n,
        vectors,
        results: results.clone(),
        tasks: Vec::new(),
    };
    let method = opts.method.resolve(m, n, vectors);
    let per = if method == BatchedMethod::Gebrd {
        crate::linalg::small::gebrd_small::flops(m, n, vectors)
    } else {
        // About 8 sweeps of 12 m n^2 flops (Gram and updates).
        let (mt, nt) = (m.max(n) as f64, m.min(n) as f64);
        8.0 * 12.0 * mt * nt * nt
    };
    let bytes = (std::mem::size_of::<T>() * m * n) as f64;
    let pool = Arc::new(ScratchPool::new());
    for (&(lo, hi), place) in bounds.iter().zip(dsts) {
        let dst = results.clone();
        let pool = pool.clone();
        let o = opts.clone();
        let t = g.add(
            Task::new(format!("{}[{lo}..{hi})", method.name()), move |_| {
                if check == FiniteCheck::InChunks {
                    if let Some(e) = batch.first_non_finite(lo, hi) {
                        dst.lock().reject(e);
                        return Ok(());
                    }
                }
                let mut scratch = pool.take();
                run_chunk(&batch, lo, hi, vectors, method, &o, &mut scratch, place);
                dst.lock().store(lo, &mut scratch.out, k, mk, kn);
                pool.give(scratch);
                Ok(())
            })
            .stage(method.name())
            .cost(per * (hi - lo) as f64, bytes * (hi - lo) as f64),
        );
        handle.tasks.push(t);
    }
    Ok(handle)
}

/// `buf` cut into consecutive pieces of `per (hi - lo)` entries, one per
/// chunk `lo..hi` of `bounds` (empty pieces when `per` is zero).
fn chunk_slices<'s, T>(
    mut buf: &'s mut [T],
    per: usize,
    bounds: &[(usize, usize)],
) -> Vec<&'s mut [T]> {
    bounds
        .iter()
        .map(|&(lo, hi)| {
            let (head, rest) = std::mem::take(&mut buf).split_at_mut(per * (hi - lo));
            buf = rest;
            head
        })
        .collect()
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
        job,
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
