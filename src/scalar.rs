//! The compute scalar traits: [`Scalar`] (`f32` and `f64`) and
//! [`ComplexScalar`] (faer's `c32` and `c64`).
//!
//! Real kernels are generic over [`Scalar`]. It combines `num_traits::Float` (the usual
//! math methods) with faer's `RealField` (so faer's matmul can run on our data)
//! and a few LAPACK machine constants. Complex kernels are generic over
//! [`ComplexScalar`], whose real type (`ComplexField::Real`) is a [`Scalar`]:
//! the real SIMD kernels stay as they are, and the complex ones reuse the
//! real constants and solvers through it.

use faer::traits::ComplexField;
use std::fmt::{Debug, Display};
use std::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

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

/// A complex floating-point type eigenflow computes in: faer's `c64` and
/// `c32` (`num_complex::Complex<f64>`, `<f32>`), whose real and imaginary
/// parts are a [`Scalar`] (`Self::Real`). faer's matmul runs on it (the
/// portable complex GEMM); the arithmetic is `num_complex`'s.
///
/// The methods have names of their own (not `conj`, `abs`) so that they do
/// not collide with faer's extension traits or `num_complex`'s inherent
/// methods in generic code.
pub trait ComplexScalar:
    ComplexField<Real: Scalar>
    + Copy
    + Default
    + PartialEq
    + Send
    + Sync
    + Debug
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + 'static
{
    /// `re + i im`.
    fn from_parts(re: Self::Real, im: Self::Real) -> Self;
    /// The real part.
    fn re(self) -> Self::Real;
    /// The imaginary part.
    fn im(self) -> Self::Real;
    /// The complex conjugate.
    #[inline(always)]
    fn conjugate(self) -> Self {
        Self::from_parts(self.re(), -self.im())
    }
    /// `|z|^2 = re^2 + im^2` (no scaling: may overflow or underflow).
    #[inline(always)]
    fn modulus_squared(self) -> Self::Real {
        self.re() * self.re() + self.im() * self.im()
    }
    /// `|z|`, without spurious overflow or underflow (`hypot`).
    #[inline(always)]
    fn modulus(self) -> Self::Real {
        num_traits::Float::hypot(self.re(), self.im())
    }
    /// `z s` for a real `s`.
    #[inline(always)]
    fn scaled(self, s: Self::Real) -> Self {
        Self::from_parts(self.re() * s, self.im() * s)
    }
    /// Both parts finite.
    #[inline(always)]
    fn finite(self) -> bool {
        num_traits::Float::is_finite(self.re()) && num_traits::Float::is_finite(self.im())
    }
}

impl<R: Scalar> ComplexScalar for faer::complex::Complex<R> {
    #[inline(always)]
    fn from_parts(re: R, im: R) -> Self {
        faer::complex::Complex { re, im }
    }
    #[inline(always)]
    fn re(self) -> R {
        self.re
    }
    #[inline(always)]
    fn im(self) -> R {
        self.im
    }
}
