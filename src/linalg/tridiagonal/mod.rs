//! Symmetric tridiagonal matrices: their eigensolvers (values only [`sterf`];
//! QL/QR with vectors [`steqr`]; divide and conquer [`stedc`]; selected
//! values by bisection [`stebz`] and their vectors by inverse iteration
//! [`stein`]) and the one-stage reduction of a dense symmetric matrix to
//! tridiagonal form ([`sytrd`]).

pub mod stebz;
pub mod stedc;
pub mod stein;
pub mod steqr;
pub mod sterf;
pub mod sytrd;
