//! The compute scalar trait: `f32` and `f64`.
//!
//! Kernels are generic over [`Scalar`]. It combines `num_traits::Float` (the usual
//! math methods) with faer's `RealField` (so faer's matmul can run on our data)
//! and a few LAPACK machine constants.

use std::fmt::{Debug, Display};

/// A real floating-point type eigenflow computes in.
pub trait Scalar:
    num_traits::Float
    + faer::traits::RealField
    + Copy
    + Default
    + Send
    + Sync
    + Debug
    + Display
    + 'static
{
    /// Relative machine precision (LAPACK `dlamch('E')`, i.e. half an ulp of one).
    const EPS: Self;
    /// Smallest normal number such that its reciprocal does not overflow (`dlamch('S')`).
    const SAFE_MIN: Self;
    /// Short name used in summaries (`"f64"`, `"f32"`).
    const NAME: &'static str;
    /// Converts from `f64` (rounding).
    fn of(x: f64) -> Self;
    /// Converts to `f64` (exact).
    fn f64(self) -> f64;
}

impl Scalar for f64 {
    const EPS: Self = f64::EPSILON * 0.5;
    const SAFE_MIN: Self = f64::MIN_POSITIVE;
    const NAME: &'static str = "f64";
    #[inline(always)]
    fn of(x: f64) -> Self {
        x
    }
    #[inline(always)]
    fn f64(self) -> f64 {
        self
    }
}

impl Scalar for f32 {
    const EPS: Self = f32::EPSILON * 0.5;
    const SAFE_MIN: Self = f32::MIN_POSITIVE;
    const NAME: &'static str = "f32";
    #[inline(always)]
    fn of(x: f64) -> Self {
        x as f32
    }
    #[inline(always)]
    fn f64(self) -> f64 {
        self as f64
    }
}
