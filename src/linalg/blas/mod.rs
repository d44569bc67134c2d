//! The vector loops the stages share: run-time SIMD dispatch (`simd`), the
//! fused multiply-add kernels of the BLAS-2 loops (`blas2`) and the
//! matrix-vector products of the one-stage reductions built on them
//! ([`gemv`]), chains of plane rotations (`lasr`), and exact scaling by powers
//! of two (`pow2`).

// First: its macros are used by the modules after it.
#[macro_use]
pub(crate) mod simd;

pub(crate) mod blas2;
pub mod gemv;
pub(crate) mod lasr;
pub(crate) mod pow2;
