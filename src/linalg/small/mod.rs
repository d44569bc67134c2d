//! The SVD of one small dense matrix, the kernels of the batched SVD (one
//! matrix per call; the batch parallelism lives in the pipeline): Householder
//! bidiagonalisation and a bidiagonal solver ([`gebrd_small`]), or blocked
//! one-sided Jacobi ([`jacobi`]).

pub mod gebrd_small;
pub mod jacobi;
pub mod syevj;
