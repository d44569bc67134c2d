//! The chunk tasks of a batched solve, shared by the SVD and the EVD: the
//! batch cut into chunks, one independent task per chunk, and the results
//! each chunk stores (into buffers of the handle's, or in place into the
//! caller's).

use super::chunk::{run_chunk, ChunkDst, ChunkOut, ScratchPool};
use super::evd_chunk::EvdRoute;
use super::input::{BatchRef, FiniteCheck};
use super::svd::BatchedSvd;
use super::{BatchedMethod, BatchedOptions};
use crate::graph::{SubGraph, Task, TaskGraph, TaskId};
use crate::{Error, Result, Scalar};
use parking_lot::Mutex;
use std::sync::Arc;

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

/// Where the results of [`super::svd_batched_graph`] land.
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
pub(super) struct Results<T> {
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
    /// `(m, n)`, the shape of each matrix of the batch.
    pub(super) fn shape(&self) -> (usize, usize) {
        (self.m, self.n)
    }

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
        let (m, n) = (self.m, self.n);
        let c = self.collect_parts()?;
        Ok(BatchedSvd {
            batch: c.batch,
            m,
            n,
            k: m.min(n),
            values: c.values,
            u: c.u,
            vt: c.vt,
            failed: c.failed,
            stats: c.stats,
        })
    }

    /// The results' buffers once the graph ran (the vector buffers only if
    /// vectors were asked for), failures ascending; [`Error::NotRun`] if a
    /// chunk task has not run successfully, the lowest rejected matrix's
    /// error if any.
    pub(super) fn collect_parts(self) -> Result<Collected<T>> {
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
        Ok(Collected {
            batch: self.batch,
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

/// `Err` with the first of `failed` ([`Error::BatchItem`] naming its
/// matrix, taken out of the list), `Ok` if it is empty.
pub(super) fn first_failure(failed: &mut Vec<(usize, Error)>) -> Result<()> {
    if failed.is_empty() {
        return Ok(());
    }
    let (index, e) = failed.swap_remove(0);
    Err(Error::BatchItem {
        index,
        source: Box::new(e),
    })
}

/// A batch's results as [`BatchedHandle::collect_parts`] returns them.
pub(super) struct Collected<T> {
    pub(super) batch: usize,
    pub(super) values: Vec<T>,
    pub(super) u: Option<Vec<T>>,
    pub(super) vt: Option<Vec<T>>,
    pub(super) failed: Vec<(usize, Error)>,
    pub(super) stats: BatchedStats,
}

/// What the chunk tasks solve, with its route resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Solver {
    /// The SVD by this route (not [`BatchedMethod::Auto`]).
    Svd(BatchedMethod),
    /// The symmetric EVD by this route.
    Evd(EvdRoute),
}

impl Solver {
    /// The name of its tasks and their stage.
    fn name(self) -> &'static str {
        match self {
            Solver::Svd(method) => method.name(),
            Solver::Evd(route) => route.name(),
        }
    }
}

/// How a batch is cut and solved: what the chunk tasks add to the graph.
#[derive(Clone, Copy, Debug)]
pub(super) struct Plan {
    pub(super) solver: Solver,
    pub(super) vectors: bool,
    /// Matrices per chunk.
    pub(super) chunk: usize,
    /// Values per matrix, and entries per matrix of the two vector buffers
    /// (zero without vectors, or for a buffer the problem does not have).
    pub(super) k: usize,
    pub(super) mk: usize,
    pub(super) kn: usize,
    /// Flops per matrix (a cost hint for the scheduler).
    pub(super) flops: f64,
    /// Only the lower triangles are read (and checked for NaN and
    /// infinities).
    pub(super) lower: bool,
}

/// Caller-owned result buffers (sized for the batch) that the chunk tasks
/// write in place.
pub(super) struct InPlace<'a, T> {
    pub(super) values: &'a mut [T],
    pub(super) u: &'a mut [T],
    pub(super) vt: &'a mut [T],
}

/// The chunk tasks of `plan` on `batch` added to `g`, with the values and
/// vectors written in place into `in_place` when given (else into buffers
/// of the handle's, each chunk copying its results in under the lock), and
/// the input checked as `check` says.
pub(super) fn add_chunk_tasks<'a, T: Scalar>(
    g: &mut TaskGraph<'a>,
    batch: BatchRef<'a, T>,
    plan: Plan,
    opts: &BatchedOptions,
    in_place: Option<InPlace<'a, T>>,
    check: FiniteCheck,
) -> Result<BatchedHandle<T>> {
    opts.params.validate()?;
    let (nb, lower) = (batch.batch(), plan.lower);
    if check == FiniteCheck::Upfront {
        if let Some(e) = batch.first_non_finite(0, nb, lower) {
            return Err(e);
        }
    }
    let Plan {
        solver,
        vectors,
        chunk,
        k,
        mk,
        kn,
        ..
    } = plan;
    let (m, n) = batch.shape();
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
    let per = plan.flops;
    let bytes = (std::mem::size_of::<T>() * m * n) as f64;
    let pool = Arc::new(ScratchPool::new());
    for (&(lo, hi), place) in bounds.iter().zip(dsts) {
        let dst = results.clone();
        let pool = pool.clone();
        let o = opts.clone();
        let t = g.add(
            Task::new(format!("{}[{lo}..{hi})", solver.name()), move |_| {
                if check == FiniteCheck::InChunks {
                    if let Some(e) = batch.first_non_finite(lo, hi, lower) {
                        dst.lock().reject(e);
                        return Ok(());
                    }
                }
                let mut scratch = pool.take();
                run_chunk(&batch, lo, hi, vectors, solver, &o, &mut scratch, place);
                dst.lock().store(lo, &mut scratch.out, k, mk, kn);
                pool.give(scratch);
                Ok(())
            })
            .stage(solver.name())
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
