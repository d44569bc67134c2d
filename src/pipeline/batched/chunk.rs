//! One chunk task's work: matrices `lo..hi` of the batch, by either route,
//! in buffers that the chunk tasks of one batch pass on to one another
//! ([`ScratchPool`]).

use super::evd_chunk::{run_evd, EvdScratch};
use super::tasks::Solver;
use super::{BatchRef, BatchedMethod, BatchedOptions};
use crate::linalg::small::gebrd_small::{small_svd_group, GebrdWorkspace, LANES};
use crate::linalg::small::jacobi::{JacobiState, JacobiWorkspace, Status};
use crate::{Error, Scalar};
use parking_lot::Mutex;

/// What a chunk task allocates: the solvers' workspaces and the chunk's
/// result buffers. A chunk of one 128 x 128 matrix with vectors sizes about
/// 1 MB of them, allocated and zeroed per task before (in a profile of that
/// batch, `memset` fell from 4.2% to 3.6% of the samples with the pool; the
/// rest is the D&C merge's own temporaries), so a task takes its scratch
/// from the batch's [`ScratchPool`] and returns it when done.
pub(super) struct ChunkScratch<T> {
    gebrd: [GebrdWorkspace<T>; LANES],
    jacobi: JacobiWorkspace<T>,
    evd: EvdScratch<T>,
    pub(super) out: ChunkOut<T>,
}

/// The scratch of a batch's chunk tasks: at most one per task running at a
/// time, so as many as the runtime has workers. A task [`take`]s one (a new
/// one when none is free) and [`give`]s it back; what a previous chunk left
/// in it is overwritten before it is read.
///
/// [`take`]: ScratchPool::take
/// [`give`]: ScratchPool::give
pub(super) struct ScratchPool<T>(Mutex<Vec<ChunkScratch<T>>>);

impl<T: Scalar> ScratchPool<T> {
    pub(super) fn new() -> Self {
        ScratchPool(Mutex::new(Vec::new()))
    }

    pub(super) fn take(&self) -> ChunkScratch<T> {
        self.0.lock().pop().unwrap_or_else(|| ChunkScratch {
            gebrd: std::array::from_fn(|_| GebrdWorkspace::new()),
            jacobi: JacobiWorkspace::new(),
            evd: EvdScratch::default(),
            out: ChunkOut::default(),
        })
    }

    pub(super) fn give(&self, scratch: ChunkScratch<T>) {
        self.0.lock().push(scratch);
    }
}

/// The slices of the result buffers where one chunk's values and vectors
/// go: `len k` values and `len m k`, `len k n` vector entries (empty
/// without vectors), matrix by matrix.
pub(super) struct ChunkDst<'d, T> {
    pub(super) values: &'d mut [T],
    pub(super) u: &'d mut [T],
    pub(super) vt: &'d mut [T],
}

/// Solves matrices `lo..hi` of `batch` as `solver` says: values and
/// vectors into `dst`, or into
/// `scratch.out`'s buffers when `dst` is `None`; counters and failures into
/// `scratch.out` either way.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_chunk<T: Scalar>(
    batch: &BatchRef<'_, T>,
    lo: usize,
    hi: usize,
    vectors: bool,
    solver: Solver,
    opts: &BatchedOptions,
    scratch: &mut ChunkScratch<T>,
    dst: Option<ChunkDst<'_, T>>,
) {
    let (m, n) = batch.shape();
    let k = m.min(n);
    let sizes = match (vectors, solver) {
        (false, _) => (0, 0),
        (true, Solver::Svd(_)) => (m * k, k * n),
        (true, Solver::Evd(_)) => (n * n, 0),
    };
    let ChunkScratch {
        gebrd,
        jacobi,
        evd,
        out,
    } = scratch;
    out.reset(hi - lo, k, sizes, dst.is_none());
    let ChunkOut {
        values,
        u,
        vt,
        stats,
    } = out;
    let dst = dst.unwrap_or(ChunkDst { values, u, vt });
    match solver {
        Solver::Svd(BatchedMethod::Gebrd) => run_gebrd(batch, lo, hi, vectors, gebrd, stats, dst),
        Solver::Svd(_) => run_jacobi(batch, lo, hi, vectors, opts, jacobi, stats, dst),
        Solver::Evd(route) => run_evd(batch, lo, hi, vectors, route, opts, evd, stats, dst),
    }
}

/// Solves matrices `lo..hi` of `batch` by bidiagonalisation
/// ([`small_svd_group`]), [`LANES`] at a time and the rest two and one at a
/// time, with results bitwise those of one at a time. A matrix whose
/// bidiagonal solver fails is listed in `failed` (its slots hold NaN); the
/// others are complete.
fn run_gebrd<T: Scalar>(
    batch: &BatchRef<'_, T>,
    lo: usize,
    hi: usize,
    vectors: bool,
    gebrd: &mut [GebrdWorkspace<T>; LANES],
    stats: &mut ChunkStats,
    out: ChunkDst<'_, T>,
) {
    let (m, n) = batch.shape();
    let k = m.min(n);
    let len = hi - lo;
    let (mk, kn) = if vectors { (m * k, k * n) } else { (0, 0) };
    let mut j = 0;
    while j < len {
        let count = match len - j {
            r if r >= LANES => LANES,
            r if r >= 2 => 2,
            _ => 1,
        };
        let values = &mut out.values[j * k..(j + count) * k];
        let u = &mut out.u[j * mk..(j + count) * mk];
        let vt = &mut out.vt[j * kn..(j + count) * kn];
        let vecs = vectors.then_some((u, vt));
        let first = lo + j;
        let res = match count {
            LANES => solve_group::<T, LANES>(batch, first, gebrd, values, vecs),
            2 => solve_group::<T, 2>(batch, first, gebrd, values, vecs),
            _ => solve_group::<T, 1>(batch, first, gebrd, values, vecs),
        };
        for (i, r) in res.into_iter().enumerate() {
            if let Err(e) = r {
                // The solve stopped part way: NaN in the matrix's slots, not
                // whatever the reused buffers held before.
                let jj = j + i;
                let nan = <T as num_traits::Float>::nan();
                out.values[jj * k..(jj + 1) * k].fill(nan);
                out.u[jj * mk..(jj + 1) * mk].fill(nan);
                out.vt[jj * kn..(jj + 1) * kn].fill(nan);
                stats.failed.push((lo + jj, name_matrix(e, lo + jj)));
            }
        }
        j += count;
    }
}

/// Matrices `first..first + L` of `batch` by [`small_svd_group`] with the
/// first `L` workspaces of `ws`: values into `values` (`L` matrices' worth)
/// and, with vectors, `U` and `V^T` into `u` and `vt` likewise.
fn solve_group<T: Scalar, const L: usize>(
    batch: &BatchRef<'_, T>,
    first: usize,
    ws: &mut [GebrdWorkspace<T>],
    values: &mut [T],
    vectors: Option<(&mut [T], &mut [T])>,
) -> Vec<crate::Result<()>> {
    let mut ws = ws.iter_mut();
    let mut values = values.chunks_exact_mut(values.len() / L);
    let vecs = vectors.map(|(u, vt)| {
        let (mk, kn) = (u.len() / L, vt.len() / L);
        let mut pairs = u.chunks_exact_mut(mk).zip(vt.chunks_exact_mut(kn));
        std::array::from_fn(|_| pairs.next().expect("L matrices"))
    });
    let res = small_svd_group::<T, L>(
        std::array::from_fn(|i| batch.matrix(first + i)),
        std::array::from_fn(|_| ws.next().expect("L workspaces")),
        std::array::from_fn(|_| values.next().expect("L matrices")),
        vecs,
    );
    Vec::from(res)
}

/// `e` with the index of the batch's matrix it concerns.
pub(super) fn name_matrix(e: Error, index: usize) -> Error {
    match e {
        Error::NoConvergence { stage, detail } => Error::NoConvergence {
            stage,
            detail: format!("matrix {index} of the batch: {detail}"),
        },
        other => other,
    }
}

/// One chunk's results: its value and vector buffers (used when the
/// results are copied in afterwards, see [`run_chunk`]) and its counters.
#[derive(Default)]
pub(super) struct ChunkOut<T> {
    pub(super) values: Vec<T>,
    pub(super) u: Vec<T>,
    pub(super) vt: Vec<T>,
    pub(super) stats: ChunkStats,
}

/// One chunk's counters and failures.
#[derive(Default)]
pub(super) struct ChunkStats {
    pub(super) sweeps: Vec<usize>,
    pub(super) failed: Vec<(usize, Error)>,
    pub(super) masked: usize,
    pub(super) idle: usize,
    pub(super) pair_skips: usize,
}

impl<T: Scalar> ChunkOut<T> {
    /// Counters cleared for `len` matrices; with `buffers`, the buffers
    /// sized for `k` values and `mk`, `kn` vector entries each (they keep
    /// their capacity, and stale entries, each overwritten by its matrix's
    /// solve), else emptied.
    pub(super) fn reset(&mut self, len: usize, k: usize, (mk, kn): (usize, usize), buffers: bool) {
        let z = T::zero();
        let held = if buffers { len } else { 0 };
        self.values.resize(held * k, z);
        self.u.resize(held * mk, z);
        self.vt.resize(held * kn, z);
        let st = &mut self.stats;
        st.sweeps.clear();
        st.sweeps.resize(len, 0);
        st.failed.clear();
        (st.masked, st.idle, st.pair_skips) = (0, 0, 0);
    }
}

/// Solves matrices `lo..hi` of `batch` by blocked one-sided Jacobi, in
/// lockstep, one outer sweep per round over the active set.
#[allow(clippy::too_many_arguments)]
fn run_jacobi<T: Scalar>(
    batch: &BatchRef<'_, T>,
    lo: usize,
    hi: usize,
    vectors: bool,
    opts: &BatchedOptions,
    ws: &mut JacobiWorkspace<T>,
    stats: &mut ChunkStats,
    out: ChunkDst<'_, T>,
) {
    let (m, n) = batch.shape();
    let k = m.min(n);
    let len = hi - lo;
    let mut states: Vec<JacobiState<T>> = (lo..hi)
        .map(|i| JacobiState::new(batch.matrix(i), vectors, &opts.params))
        .collect();
    let mut active: Vec<usize> = (0..len).collect();
    while !active.is_empty() {
        for &i in &active {
            states[i].sweep(ws);
        }
        active.retain(|&i| states[i].status() == Status::Running);
        if active.is_empty() {
            break;
        }
        if opts.mask {
            stats.masked += len - active.len();
        } else {
            for s in states.iter_mut() {
                if s.status() == Status::Converged {
                    s.idle_sweep(ws);
                    stats.idle += 1;
                }
            }
        }
    }
    for (j, s) in states.iter().enumerate() {
        let u = vectors.then(|| &mut out.u[j * m * k..(j + 1) * m * k]);
        let vt = vectors.then(|| &mut out.vt[j * k * n..(j + 1) * k * n]);
        s.finish(&mut out.values[j * k..(j + 1) * k], u, vt);
        let st = s.stats();
        stats.sweeps[j] = st.sweeps;
        stats.pair_skips += st.pair_skips;
        if s.status() != Status::Converged {
            stats.failed.push((
                lo + j,
                Error::NoConvergence {
                    stage: "jacobi",
                    detail: format!(
                        "matrix {} of the batch: {} sweeps without convergence",
                        lo + j,
                        st.sweeps
                    ),
                },
            ));
        }
    }
}
