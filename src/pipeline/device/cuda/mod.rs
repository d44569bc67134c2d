//! The GPU side of the stages (feature `cuda`): the cuBLAS [`BlasDevice`]
//! of the hybrid pipelines ([`CublasDevice`]), the launchers of the band
//! chases' kernels ([`launch`]) and of the batched Jacobi SVD ([`jacobi`]),
//! and the checks of each kernel against its CPU task body ([`check`]).
//! They sit beside the stages they serve; the device context, the stream
//! lanes and the kernel loading they build on stay in [`crate::cuda`], below
//! the runtime.
//!
//! [`BlasDevice`]: super::BlasDevice

mod blas;
pub mod check;
pub mod jacobi;
pub mod launch;

pub use blas::{cublas_library_names, CublasDevice, CublasScalar};
