//! eigenflow: a task-graph runtime for the dense two-stage symmetric eigenvalue
//! (and, later, singular value) pipelines.
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
//! ```
//! use eigenflow::pipeline::{eigh, EvdJob, EvdOptions};
//! use eigenflow::runtime::Runtime;
//!
//! let n = 120;
//! let a = eigenflow::gallery::random_symmetric_uniform::<f64>(n, 7);
//! let rt = Runtime::builder().threads(2).build();
//! let eig = eigh(a.as_ref(), EvdJob::Vectors, &EvdOptions::default(), &rt)?;
//! let v = eig.vectors.unwrap();
//! // A v_j = lambda_j v_j
//! let j = n - 1;
//! let av = &a * v.col(j);
//! let err = (0..n).map(|i| (av[i] - eig.values[j] * v[(i, j)]).abs()).fold(0.0, f64::max);
//! assert!(err < 1e-12 * n as f64 * eig.values[j].abs());
//! println!("{}", eig.report); // time, share and GFLOP/s per stage
//! # Ok::<(), eigenflow::Error>(())
//! ```
//!
//! Pipelines can also be assembled by hand, stage by stage, from
//! [`pipeline::evd`] (each stage takes the typed output of the one before and
//! orders itself after it), or from scratch with [`graph::TaskGraph`] (see
//! `examples/custom_pipeline.rs`). Two public helper modules serve examples,
//! tests and benchmarks as well as users: [`gallery`] (test matrices with known
//! spectra) and [`sysinfo`] (memory figures for "does it fit?" checks).
#![warn(missing_docs)]

pub mod error;
pub mod gallery;
pub mod graph;
pub mod linalg;
pub mod matrix;
pub mod pipeline;
pub mod runtime;
pub mod scalar;
pub mod sysinfo;
pub mod trace;

pub use error::{Error, Result};
pub use scalar::Scalar;
