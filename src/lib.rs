//! eigenflow: a task-graph runtime for the dense two-stage symmetric eigenvalue
//! decomposition and singular value decomposition pipelines.
//!
//! Every stage of the two-stage algorithm is a set of nodes in one dependency
//! DAG ([`graph::TaskGraph`]) that the [`runtime::Runtime`] schedules across CPU
//! workers and in-order stream lanes:
//!
//! 1. `sy2sb`: dense to band (panel QR, SYMM and SYR2K tiles, lookahead),
//! 2. `sb2st`: band to tridiagonal by bulge chasing (the three-task lag between
//!    sweeps is a DAG edge),
//! 3. `tridiag` (values) or `dc` (divide and conquer, as a tree of tasks),
//! 4. `q2`, `q1`: back-transformations of the eigenvectors.
//!
//! One call, on a default runtime (every core), for any faer matrix or view:
//!
//! ```
//! use eigenflow::faer::Mat;
//!
//! let n = 120;
//! let a: Mat<f64> = eigenflow::gallery::random_symmetric_uniform(n, 7);
//! let eig = eigenflow::eigh(&a)?; // values ascending, vectors in columns
//! // A v_j = lambda_j v_j
//! let j = n - 1;
//! let av = &a * eig.vectors.col(j);
//! let err = (0..n).map(|i| (av[i] - eig.values[j] * eig.vectors[(i, j)]).abs()).fold(0.0, f64::max);
//! assert!(err < 1e-12 * n as f64 * eig.values[j].abs());
//! let w = eigenflow::eigvalsh(a.as_ref())?; // values only, from a view
//! assert!((w[j] - eig.values[j]).abs() < 1e-12 * n as f64 * w[j].abs());
//! # Ok::<(), eigenflow::Error>(())
//! ```
//!
//! The configurable form, [`pipeline::eigh`], takes the job, [`EvdOptions`]
//! (the triangle read, [`Side`], and tuning) and a [`runtime::Runtime`] of the
//! caller's, and returns the run's timings too:
//!
//! ```
//! use eigenflow::pipeline::{eigh, EvdJob, EvdOptions};
//! use eigenflow::runtime::Runtime;
//!
//! let a = eigenflow::gallery::random_symmetric_uniform::<f64>(120, 7);
//! let rt = Runtime::builder().threads(2).build();
//! let mut opts = EvdOptions::auto();
//! opts.side = eigenflow::Side::Upper;
//! let eig = eigh(a.as_ref(), EvdJob::Values, &opts, &rt)?;
//! assert!(eig.vectors.is_none());
//! println!("{}", eig.report); // time, share and GFLOP/s per stage
//! # Ok::<(), eigenflow::Error>(())
//! ```
//!
//! Pipelines can also be assembled by hand, stage by stage, from
//! [`pipeline::evd`] (each stage takes the typed output of the one before and
//! orders itself after it), or from scratch with [`graph::TaskGraph`] (see
//! `examples/custom_pipeline.rs`). Three public helper modules serve examples,
//! tests and benchmarks as well as users: [`gallery`] (test matrices with known
//! spectra), [`sysinfo`] (memory figures for "does it fit?" checks) and
//! `results` (Unix: result sets of `.npy` files written atomically into a
//! locked output directory, with a checksummed manifest).
#![warn(missing_docs)]

pub mod cuda;
#[cfg(unix)]
pub mod distributed;
pub mod error;
pub mod gallery;
pub mod graph;
// Its run-time SIMD dispatch (`simd_dispatch!`) also compiles the modules
// declared after it (`matrix::scan`).
#[macro_use]
pub mod linalg;
pub mod matrix;
pub mod pipeline;
mod quick;
#[cfg(unix)]
pub mod results;
mod rng;
pub mod runtime;
pub mod scalar;
pub mod sysinfo;
pub mod trace;

/// The matrix library of eigenflow's inputs and outputs, re-exported so that one
/// dependency line is enough (`eigenflow::faer::Mat`).
pub use faer;

pub use error::{Error, Result};
pub use pipeline::evd::Selection;
pub use pipeline::svd::SvdSelection;
pub use pipeline::sygv::{GeneralizedOptions, Problem};
pub use pipeline::{EvdOptions, Side, SvdOptions};
pub use quick::{
    default_runtime, eigh, eigh_generalized, eigh_generalized_with, eigh_select, eigh_with,
    eigvalsh, eigvalsh_generalized, svd, svd_top, svd_with, svdvals, Eigh, Field, Svd,
};
pub use scalar::{ComplexScalar, Scalar};

/// Every Rust code block of README.md, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
mod readme_doctests {}
