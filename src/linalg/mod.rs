//! CPU kernels: what the tasks compute. Generic over [`crate::Scalar`]; a
//! kernel that splits its work in two takes the parallelism as a parameter
//! ([`par::Fork`], implemented by the runtime) and never names the scheduler.
//! Grouped by the problem a
//! kernel solves; inside a group, one module per pipeline stage, named for its
//! LAPACK counterpart, so a stage's kernel is found by the stage's name:
//!
//! - [`householder`]: reflectors and their compact-WY blocks, the QR of a
//!   panel ([`householder::panel_qr`]) and `Q Z` from stored reflectors
//!   ([`householder::ormqr`]), shared by every reduction;
//! - [`band`]: the two-stage reductions through a band, dense to band (EVD
//!   `sy2sb`, SVD `ge2gb`) and band to tridiagonal or bidiagonal by bulge
//!   chasing (`sb2st`, `gb2bd`, and the super-task grouping both share,
//!   `chase`);
//! - [`tridiagonal`]: the symmetric tridiagonal eigensolvers (`sterf`,
//!   `steqr`, `stedc`, `stebz`, `stein`) and the one-stage reduction to
//!   tridiagonal form (`sytrd`);
//! - [`bidiagonal`]: the bidiagonal SVD solvers (`dqds`, `bdsdc` with its QR
//!   iteration `bdsqr`) and the one-stage reduction to bidiagonal form
//!   (`gebrd`);
//! - [`small`]: the SVD of one small matrix, the batched SVD's kernels
//!   (`gebrd_small`, `jacobi`);
//! - [`back_transform`]: the vectors' back-transformations through the
//!   reflectors of the reductions (`Z := Q2 Z`, `Z := Q1 Z`);
//! - [`blas`]: the vector loops the stages share (`gemv`, the fused BLAS-2
//!   kernels, the rotation chains `lasr`, the run-time SIMD dispatch).

// First: its `simd_dispatch!` and mask macros are used by every group after
// it (and, through `#[macro_use]` on `linalg` in the crate root, by
// `crate::matrix::scan`).
#[macro_use]
pub mod blas;

pub mod back_transform;
pub mod band;
pub mod bidiagonal;
pub mod hermitian;
pub mod householder;
pub mod par;
pub mod small;
pub mod tridiagonal;
