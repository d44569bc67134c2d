//! Upper bidiagonal matrices: their SVD solvers (singular values by
//! [`dqds`]; with vectors by divide and conquer [`bdsdc`], whose leaves are
//! the implicit QR iteration [`bdsdc::bdsqr`]) and the one-stage reduction of
//! a dense matrix to bidiagonal form ([`gebrd`]).

pub mod bdsdc;
pub mod dqds;
pub mod gebrd;
