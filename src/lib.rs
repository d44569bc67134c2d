//! eigenflow: a task-graph runtime for the dense two-stage symmetric eigenvalue
//! and singular value pipelines.
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
