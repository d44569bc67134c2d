//! Many small SVDs, or symmetric eigendecompositions, of one shape at once.
//!
//! The SVD takes one of two routes
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
//!
//! # The symmetric EVD
//!
//! [`eigh_batched`] and [`eigvalsh_batched`] (numpy's `eigh` and `eigvalsh`
//! on a stack; [`eigh_batched_into`] and [`eigh_batched_graph`] as for the
//! SVD) run on the same chunk tasks, reading each matrix's lower triangle.
//! Below [`BatchedOptions::evd_jacobi_below`] (default
//! [`EVD_JACOBI_BELOW`]) each chunk solves its matrices eight at a time by
//! cyclic Jacobi in SIMD lanes ([`crate::linalg::small::syevj`]; accurate for
//! nearly equal eigenvalues, where the closed forms of 2 x 2 and 3 x 3
//! matrices are not); from it on, one at a time by the one-stage path of
//! [`crate::pipeline::eigh`] on the chunk's thread (`dsytrd`, then `dsterf`
//! or divide and conquer and `dormtr`). Both are deterministic per matrix,
//! so the bits do not depend on threads or chunks.
//!
//! The crossover, measured with `benches/batched.rs --problems evd
//! --evd-routes jacobi,one-stage` (f64, 2 workers on a 2-core machine
//! loaded to about 6-8, so nearer one core; seconds, Jacobi / one-stage):
//! with vectors 20,000 x 3x3 0.007 / 0.020, 10,000 x 4x4 0.007 / 0.018,
//! 6x6 0.017 / 0.025, 8x8 0.035 / 0.039, 4,000 x 12x12 0.043 / 0.031,
//! 16x16 0.096 / 0.052; values only 3x3 0.006 / 0.013, 4x4 0.006 / 0.009,
//! 6x6 0.013 / 0.016, 8x8 0.027 / 0.024, 12x12 0.030 / 0.018. Jacobi's
//! `O(n^3)` work per sweep over several sweeps loses to the reduction's
//! `4/3 n^3` from about `n = 8`.
//!
//! Against numpy 2.4.6's stacked `eigh` / `eigvalsh` (a loop over LAPACK),
//! `benches/batched.rs` then `benches/peers_batched.py` right after it (f64,
//! 2 workers, the same loaded machine, 2026-12-07), seconds, ours / numpy:
//! 100,000 x 3x3 with vectors 0.026 / 0.103, values 0.017 / 0.057; 10,000 x
//! 32x32 with vectors 0.291 / 0.702, values 0.118 / 0.321.

mod chunk;
mod evd;
mod evd_chunk;
mod input;
mod method;
mod svd;
mod tasks;

pub use evd::{
    eigh_batched, eigh_batched_graph, eigh_batched_into, eigvalsh_batched, BatchedEvd,
    BatchedEvdHandle, BatchedEvdOut,
};
pub use input::{BatchLayout, BatchRef};
pub use method::{BatchedMethod, BatchedOptions, EVD_JACOBI_BELOW};
pub use svd::{
    svd_batched, svd_batched_graph, svd_batched_into, BatchedOut, BatchedRun, BatchedSvd,
};
pub use tasks::{BatchedHandle, BatchedStats};

#[cfg(test)]
mod tests;
