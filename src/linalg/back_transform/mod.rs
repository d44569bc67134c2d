//! Back-transformations of the eigenvectors: `Z := Q2 Z` (the stage-2 bulge
//! chasing reflectors, [`q2`]) and `Z := Q1 Z` (the stage-1 panel reflectors,
//! [`q1`]). Columns of `Z` are independent, so each kernel works on one column
//! block (one task).

pub mod chain;
pub mod chain_fma;
pub mod chain_strip;
pub mod pass_chain;
pub mod q1;
pub mod q2;
