//! eigenflow: a task-graph runtime for the dense two-stage symmetric eigenvalue
//! and singular value pipelines.
#![warn(missing_docs)]

pub mod error;
pub mod graph;
pub mod linalg;
pub mod matrix;
pub mod runtime;
pub mod scalar;
pub mod trace;

pub use error::{Error, Result};
pub use scalar::Scalar;
