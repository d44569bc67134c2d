//! Run-time dispatch of the BLAS-2 loops of the one-stage reductions
//! (`sytrd`, `gebrd`) to AVX-512 or AVX2 code (the crate is built for the
//! baseline x86-64).

/// Runs `body` compiled for AVX-512 or AVX2 when the CPU has them (the crate is built for
/// the baseline x86-64, SSE2, and these loops are the BLAS-2 half of the
/// one-stage reductions). No fused multiply-add is formed either way (Rust does not
/// contract `a * b + c`), so both versions give bitwise the same results.
macro_rules! simd_dispatch {
    ($(#[$meta:meta])* $vis:vis fn $name:ident / $avx:ident / $body:ident ($($arg:ident : $ty:ty),*)) => {
        $(#[$meta])*
        $vis fn $name<T: Scalar>($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                if std::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU supports AVX-512F (checked just above).
                    unsafe { $avx::avx512($($arg),*) };
                    return;
                }
                if std::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU supports AVX2 (checked just above).
                    unsafe { $avx::avx2($($arg),*) };
                    return;
                }
            }
            $body($($arg),*)
        }
        #[cfg(target_arch = "x86_64")]
        mod $avx {
            use super::*;
            /// The body compiled for AVX-512F.
            ///
            /// # Safety
            /// The CPU must support AVX-512F (the dispatcher checks it).
            #[target_feature(enable = "avx512f")]
            pub(super) unsafe fn avx512<T: Scalar>($($arg: $ty),*) {
                $body($($arg),*)
            }
            /// The body compiled for AVX2.
            ///
            /// # Safety
            /// The CPU must support AVX2 (the dispatcher checks it).
            #[target_feature(enable = "avx2")]
            pub(super) unsafe fn avx2<T: Scalar>($($arg: $ty),*) {
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
