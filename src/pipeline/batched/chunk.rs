//! One chunk task's work: matrices `lo..hi` of the batch, by either route.

use super::{BatchRef, BatchedMethod, BatchedOptions};
use crate::linalg::gebrd_small::{small_svd, small_svd_pair, GebrdWorkspace};
use crate::linalg::jacobi::{JacobiState, JacobiWorkspace, Status};
use crate::{Error, Scalar};

/// Solves matrices `lo..hi` of `batch` by `method` (already resolved, not
/// [`BatchedMethod::Auto`]).
pub(super) fn run_chunk<T: Scalar>(
    batch: &BatchRef<'_, T>,
    lo: usize,
    hi: usize,
    vectors: bool,
    method: BatchedMethod,
    opts: &BatchedOptions,
) -> ChunkOut<T> {
    match method {
        BatchedMethod::Gebrd => run_gebrd(batch, lo, hi, vectors),
        _ => run_jacobi(batch, lo, hi, vectors, opts),
    }
}

/// Solves matrices `lo..hi` of `batch` one after another by
/// bidiagonalisation ([`small_svd`]) with one workspace for the chunk. A
/// matrix whose bidiagonal solver fails is listed in `failed` (its slots
/// hold unspecified values); the others are complete.
fn run_gebrd<T: Scalar>(
    batch: &BatchRef<'_, T>,
    lo: usize,
    hi: usize,
    vectors: bool,
) -> ChunkOut<T> {
    let (m, n) = batch.shape();
    let k = m.min(n);
    let len = hi - lo;
    let mut out = ChunkOut {
        values: vec![T::zero(); len * k],
        u: vec![T::zero(); if vectors { len * m * k } else { 0 }],
        vt: vec![T::zero(); if vectors { len * k * n } else { 0 }],
        sweeps: vec![0; len],
        failed: Vec::new(),
        masked: 0,
        idle: 0,
        pair_skips: 0,
    };
    // Two at a time (`small_svd_pair`: the bidiagonal QR iterations of the
    // two run interleaved), with results bitwise those of one at a time.
    let [mut w0, mut w1] = [GebrdWorkspace::new(), GebrdWorkspace::new()];
    let (mk, kn) = if vectors { (m * k, k * n) } else { (0, 0) };
    let mut j = 0;
    while j < len {
        let pair = j + 1 < len;
        let count = if pair { 2 } else { 1 };
        let values = &mut out.values[j * k..(j + count) * k];
        let u = &mut out.u[j * mk..(j + count) * mk];
        let vt = &mut out.vt[j * kn..(j + count) * kn];
        let res = if pair {
            let (v0, v1) = values.split_at_mut(k);
            let vecs = vectors.then(|| {
                let (u0, u1) = u.split_at_mut(mk);
                let (t0, t1) = vt.split_at_mut(kn);
                [(u0, t0), (u1, t1)]
            });
            let a = [batch.matrix(lo + j), batch.matrix(lo + j + 1)];
            small_svd_pair(a, [&mut w0, &mut w1], [v0, v1], vecs)
        } else {
            let vecs = vectors.then_some((u, vt));
            [
                small_svd(batch.matrix(lo + j), &mut w0, values, vecs),
                Ok(()),
            ]
        };
        for (i, r) in res.into_iter().enumerate().take(count) {
            if let Err(e) = r {
                out.failed.push((lo + j + i, name_matrix(e, lo + j + i)));
            }
        }
        j += count;
    }
    out
}

/// `e` with the index of the batch's matrix it concerns.
fn name_matrix(e: Error, index: usize) -> Error {
    match e {
        Error::NoConvergence { stage, detail } => Error::NoConvergence {
            stage,
            detail: format!("matrix {index} of the batch: {detail}"),
        },
        other => other,
    }
}

/// One chunk's results.
pub(super) struct ChunkOut<T> {
    pub(super) values: Vec<T>,
    pub(super) u: Vec<T>,
    pub(super) vt: Vec<T>,
    pub(super) sweeps: Vec<usize>,
    pub(super) failed: Vec<(usize, Error)>,
    pub(super) masked: usize,
    pub(super) idle: usize,
    pub(super) pair_skips: usize,
}

/// Solves matrices `lo..hi` of `batch` by blocked one-sided Jacobi, in
/// lockstep, one outer sweep per round over the active set.
fn run_jacobi<T: Scalar>(
    batch: &BatchRef<'_, T>,
    lo: usize,
    hi: usize,
    vectors: bool,
    opts: &BatchedOptions,
) -> ChunkOut<T> {
    let (m, n) = batch.shape();
    let k = m.min(n);
    let len = hi - lo;
    let mut ws = JacobiWorkspace::new();
    let mut states: Vec<JacobiState<T>> = (lo..hi)
        .map(|i| JacobiState::new(batch.matrix(i), vectors, &opts.params))
        .collect();
    let mut active: Vec<usize> = (0..len).collect();
    let (mut masked, mut idle) = (0, 0);
    while !active.is_empty() {
        for &i in &active {
            states[i].sweep(&mut ws);
        }
        active.retain(|&i| states[i].status() == Status::Running);
        if active.is_empty() {
            break;
        }
        if opts.mask {
            masked += len - active.len();
        } else {
            for s in states.iter_mut() {
                if s.status() == Status::Converged {
                    s.idle_sweep(&mut ws);
                    idle += 1;
                }
            }
        }
    }
    let mut out = ChunkOut {
        values: vec![T::zero(); len * k],
        u: vec![T::zero(); if vectors { len * m * k } else { 0 }],
        vt: vec![T::zero(); if vectors { len * k * n } else { 0 }],
        sweeps: Vec::with_capacity(len),
        failed: Vec::new(),
        masked,
        idle,
        pair_skips: 0,
    };
    for (j, s) in states.iter().enumerate() {
        let u = vectors.then(|| &mut out.u[j * m * k..(j + 1) * m * k]);
        let vt = vectors.then(|| &mut out.vt[j * k * n..(j + 1) * k * n]);
        s.finish(&mut out.values[j * k..(j + 1) * k], u, vt);
        let st = s.stats();
        out.sweeps.push(st.sweeps);
        out.pair_skips += st.pair_skips;
        if s.status() != Status::Converged {
            out.failed.push((
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
    out
}
