//! Run-time dispatch of the BLAS-2 loops of the one-stage reductions
//! (`sytrd`, `gebrd`), of the small SVD's Householder kernels, of the
//! bidiagonal QR's chase and of the rotation chains (`lasr`) to AVX-512 or
//! AVX2 + FMA code (the crate is built for the baseline x86-64).

/// Runs `body` compiled for AVX-512 or AVX2 + FMA when the CPU has them (the
/// crate is built for the baseline x86-64, SSE2), with an optional return
/// type (`fn name / module / body (args) -> Ret`). No fused multiply-add is
/// formed where the body does not ask for one (Rust does not contract
/// `a * b + c`), and an explicit `mul_add` is exactly rounded in hardware and
/// in the software fallback alike, so every version gives bitwise the same
/// results; FMA only turns the fallback's library call into one instruction.
macro_rules! simd_dispatch {
    ($(#[$meta:meta])* $vis:vis fn $name:ident / $avx:ident / $body:ident ($($arg:ident : $ty:ty),*)) => {
        simd_dispatch! {
            $(#[$meta])* $vis fn $name / $avx / $body ($($arg : $ty),*) -> ()
        }
    };
    // A body generic over one `usize` constant as well (`<const L: usize>`,
    // after the body's name), with no return value.
    ($(#[$meta:meta])* $vis:vis fn $name:ident / $avx:ident / $body:ident <const $c:ident : usize> ($($arg:ident : $ty:ty),*)) => {
        $(#[$meta])*
        $vis fn $name<T: Scalar, const $c: usize>($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                if std::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU supports AVX-512F (checked just above).
                    return unsafe { $avx::avx512::<T, $c>($($arg),*) };
                }
                if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                    // SAFETY: the CPU supports AVX2 and FMA (checked just above).
                    return unsafe { $avx::avx2::<T, $c>($($arg),*) };
                }
            }
            $body::<T, $c>($($arg),*)
        }
        #[cfg(target_arch = "x86_64")]
        mod $avx {
            use super::*;
            /// The body compiled for AVX-512F (which implies FMA).
            ///
            /// # Safety
            /// The CPU must support AVX-512F (the dispatcher checks it).
            #[target_feature(enable = "avx512f")]
            pub(super) unsafe fn avx512<T: Scalar, const $c: usize>($($arg: $ty),*) {
                $body::<T, $c>($($arg),*)
            }
            /// The body compiled for AVX2 and FMA.
            ///
            /// # Safety
            /// The CPU must support AVX2 and FMA (the dispatcher checks it).
            #[target_feature(enable = "avx2,fma")]
            pub(super) unsafe fn avx2<T: Scalar, const $c: usize>($($arg: $ty),*) {
                $body::<T, $c>($($arg),*)
            }
        }
    };
    ($(#[$meta:meta])* $vis:vis fn $name:ident / $avx:ident / $body:ident ($($arg:ident : $ty:ty),*) -> $ret:ty) => {
        $(#[$meta])*
        $vis fn $name<T: Scalar>($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            {
                if std::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU supports AVX-512F (checked just above).
                    return unsafe { $avx::avx512($($arg),*) };
                }
                if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                    // SAFETY: the CPU supports AVX2 and FMA (checked just above).
                    return unsafe { $avx::avx2($($arg),*) };
                }
            }
            $body($($arg),*)
        }
        #[cfg(target_arch = "x86_64")]
        mod $avx {
            use super::*;
            /// The body compiled for AVX-512F (which implies FMA).
            ///
            /// # Safety
            /// The CPU must support AVX-512F (the dispatcher checks it).
            #[target_feature(enable = "avx512f")]
            pub(super) unsafe fn avx512<T: Scalar>($($arg: $ty),*) -> $ret {
                $body($($arg),*)
            }
            /// The body compiled for AVX2 and FMA.
            ///
            /// # Safety
            /// The CPU must support AVX2 and FMA (the dispatcher checks it).
            #[target_feature(enable = "avx2,fma")]
            pub(super) unsafe fn avx2<T: Scalar>($($arg: $ty),*) -> $ret {
                $body($($arg),*)
            }
        }
    };
}

/// The sum of `L` partial sums (`L` a power of two), pairwise in a fixed
/// order: the end of every laned dot product of the BLAS-2 loops, so that
/// their results depend on the lengths only.
#[inline(always)]
pub(crate) fn reduce_lanes<T: crate::Scalar, const L: usize>(mut a: [T; L]) -> T {
    let mut half = L / 2;
    while half > 0 {
        for l in 0..half {
            a[l] += a[l + half];
        }
        half /= 2;
    }
    a[0]
}

/// The instruction sets of the hand-written kernels (`back_transform::chain_strip`,
/// `sytrd::symv`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// AVX-512F (which implies FMA): 512-bit vectors.
    Avx512,
    /// AVX2 and FMA: 256-bit vectors, sixteen vector registers.
    Avx2,
}

impl Isa {
    /// The best this CPU runs, if any.
    pub fn detect() -> Option<Isa> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                return Some(Isa::Avx512);
            }
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Some(Isa::Avx2);
            }
        }
        None
    }

    /// Whether this CPU runs `self`.
    pub fn runs(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => std::is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// Values of `T` per vector.
    pub(crate) fn vector_len<T>(self) -> usize {
        let bytes = match self {
            Isa::Avx512 => 64,
            Isa::Avx2 => 32,
        };
        bytes / std::mem::size_of::<T>()
    }
}

/// Masked loads and stores of the first `rem` values of a vector: AVX-512
/// masks are integers (the intrinsic and the mask type given), AVX2 masks are
/// vectors (the intrinsic and the macro building the mask given).
#[cfg(target_arch = "x86_64")]
macro_rules! masked {
    (load avx512 $f:ident $m:ty, $rem:expr, $p:expr) => {
        $f((u32::MAX >> (32 - $rem)) as $m, $p)
    };
    (store avx512 $f:ident $m:ty, $rem:expr, $p:expr, $x:expr) => {
        $f($p, (u32::MAX >> (32 - $rem)) as $m, $x)
    };
    (load avx2 $f:ident $mask:ident, $rem:expr, $p:expr) => {
        $f($p, $mask!($rem))
    };
    (store avx2 $f:ident $mask:ident, $rem:expr, $p:expr, $x:expr) => {
        $f($p, $mask!($rem), $x)
    };
}
/// AVX2 masks: all ones in the lanes below `rem`.
#[cfg(target_arch = "x86_64")]
macro_rules! mask_256d {
    ($rem:expr) => {
        _mm256_cmpgt_epi64(
            _mm256_set1_epi64x($rem as i64),
            _mm256_setr_epi64x(0, 1, 2, 3),
        )
    };
}
#[cfg(target_arch = "x86_64")]
macro_rules! mask_256s {
    ($rem:expr) => {
        _mm256_cmpgt_epi32(
            _mm256_set1_epi32($rem as i32),
            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
        )
    };
}
