//! Quotients `z / d` of eight lanes without the divider, for the secular
//! equation's loops (`dlaed4`'s sums `z_j / (D_j - lambda)` and the
//! eigenvectors `z_j / (D_j - lambda_r)`), which make one division per term.
//!
//! A 512-bit `vdivpd` issues once every 16 cycles on Intel's Golden Cove cores
//! (Sapphire Rapids), so those loops ran at the divider's rate: about 60% of
//! the secular evaluation's time. Here the reciprocal `y ~ 1/d` comes from
//! `vrcp14` (relative error below 2^-14) and Newton steps `y += y (1 - d y)`
//! (two for f64, one for f32), then the quotient `q = z y` gets one correction
//! with its exact residual, `q += y (z - d q)` (Markstein 1990), all fused
//! multiply-adds: about eight port cycles per eight lanes instead of sixteen.
//!
//! Before the correction `q` is within about an ulp of `z / d` and `y` within
//! about an ulp of `1 / d`, so the corrected `q` differs from the exact
//! quotient by about `2^-p` ulp before its rounding: it is the correctly
//! rounded quotient unless `z / d` lies that close to a midpoint between two
//! floating-point numbers. The tests compare it bit for bit with the division
//! on millions of random and hand-picked operands and found no difference.
//! A block with an operand outside `[2^-500, 2^500]` in magnitude (`[2^-60,
//! 2^60]` in f32), zero or not finite, takes the division: inside, no
//! intermediate overflows or underflows, so the residual `z - d q` is exact
//! and the quotient is never zero or infinite (whose signs and values the
//! correction step would get wrong).

/// Lanes of [`avx512::quotient_pd`] and [`avx512::quotient_ps`].
pub(crate) const LANES: usize = 8;

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512 {
    use std::arch::x86_64::*;

    /// Smallest and largest operand magnitudes of the fast path (module docs).
    const LO: f64 = 3.054936363499605e-151; // 2^-500
    const HI: f64 = 3.273390607896142e150; // 2^500
    const LO_F32: f32 = 8.673617e-19; // 2^-60
    const HI_F32: f32 = 1.1529215e18; // 2^60

    /// `z / d` lane by lane (module docs); the division when an operand of the
    /// block is outside the fast path's range.
    ///
    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(crate) unsafe fn quotient_pd(zv: __m512d, dv: __m512d) -> __m512d {
        // SAFETY (every intrinsic below): register-only AVX-512F operations,
        // and the CPU supports AVX-512F (this function's contract).
        let (lo, hi) = (_mm512_set1_pd(LO), _mm512_set1_pd(HI));
        let (az, ad) = (_mm512_abs_pd(zv), _mm512_abs_pd(dv));
        // Ordered compares: a NaN fails them.
        let inside = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(az, lo)
            & _mm512_cmp_pd_mask::<_CMP_LE_OQ>(az, hi)
            & _mm512_cmp_pd_mask::<_CMP_GE_OQ>(ad, lo)
            & _mm512_cmp_pd_mask::<_CMP_LE_OQ>(ad, hi);
        if inside != 0xff {
            return _mm512_div_pd(zv, dv);
        }
        let one = _mm512_set1_pd(1.0);
        let y = _mm512_rcp14_pd(dv);
        let y = _mm512_fmadd_pd(y, _mm512_fnmadd_pd(dv, y, one), y);
        let y = _mm512_fmadd_pd(y, _mm512_fnmadd_pd(dv, y, one), y);
        let q = _mm512_mul_pd(zv, y);
        _mm512_fmadd_pd(_mm512_fnmadd_pd(dv, q, zv), y, q)
    }

    /// [`quotient_pd`] for eight f32 (in the low half of a 512-bit register:
    /// AVX-512F alone has no 256-bit `vrcp14ps`; the high half holds zeros
    /// and is not looked at).
    ///
    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(crate) unsafe fn quotient_ps(z8: __m256, d8: __m256) -> __m256 {
        // SAFETY (every intrinsic below): register-only AVX-512F and AVX
        // operations, and the CPU supports AVX-512F, which implies AVX (this
        // function's contract).
        let zv = _mm512_zextps256_ps512(z8);
        let dv = _mm512_zextps256_ps512(d8);
        let (lo, hi) = (_mm512_set1_ps(LO_F32), _mm512_set1_ps(HI_F32));
        let (az, ad) = (_mm512_abs_ps(zv), _mm512_abs_ps(dv));
        let inside = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(az, lo)
            & _mm512_cmp_ps_mask::<_CMP_LE_OQ>(az, hi)
            & _mm512_cmp_ps_mask::<_CMP_GE_OQ>(ad, lo)
            & _mm512_cmp_ps_mask::<_CMP_LE_OQ>(ad, hi);
        if inside & 0xff != 0xff {
            return _mm256_div_ps(z8, d8);
        }
        let one = _mm512_set1_ps(1.0);
        let y = _mm512_rcp14_ps(dv);
        let y = _mm512_fmadd_ps(y, _mm512_fnmadd_ps(dv, y, one), y);
        let q = _mm512_mul_ps(zv, y);
        let q = _mm512_fmadd_ps(_mm512_fnmadd_ps(dv, q, zv), y, q);
        _mm512_castps512_ps256(q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scalar;
    #[cfg(target_arch = "x86_64")]
    use std::any::TypeId;
    #[cfg(target_arch = "x86_64")]
    use std::arch::x86_64::*;

    /// The fast quotients of eight lanes of `T` (f64 or f32).
    ///
    /// # Safety
    /// The CPU must support AVX-512F.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn fast<T: Scalar>(z: &[T; LANES], d: &[T; LANES]) -> [T; LANES] {
        let mut q = [T::zero(); LANES];
        // SAFETY: AVX-512F is this function's contract; the `TypeId` checks
        // make each cast one between arrays of the same type, of exactly eight
        // entries.
        unsafe {
            if TypeId::of::<T>() == TypeId::of::<f64>() {
                let v = avx512::quotient_pd(
                    _mm512_loadu_pd(z.as_ptr() as *const f64),
                    _mm512_loadu_pd(d.as_ptr() as *const f64),
                );
                _mm512_storeu_pd(q.as_mut_ptr() as *mut f64, v);
            } else {
                assert!(TypeId::of::<T>() == TypeId::of::<f32>());
                let v = avx512::quotient_ps(
                    _mm256_loadu_ps(z.as_ptr() as *const f32),
                    _mm256_loadu_ps(d.as_ptr() as *const f32),
                );
                _mm256_storeu_ps(q.as_mut_ptr() as *mut f32, v);
            }
        }
        q
    }

    /// Splitmix64: reproducible operands without a dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut x = self.0;
            x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            x ^ (x >> 31)
        }
        /// A random sign, a significand in [1, 2) and a binary exponent in
        /// `-e..=e`.
        fn float(&mut self, e: i32) -> f64 {
            let r = self.next();
            let sig = 1.0 + (r >> 12) as f64 / (1u64 << 52) as f64;
            let exp = (r % (2 * e as u64 + 1)) as i32 - e;
            let s = if r & (1 << 11) != 0 { -1.0 } else { 1.0 };
            s * sig * 2f64.powi(exp)
        }
    }

    /// Runs the fast path (when the CPU has AVX-512F) on `pairs` and returns the
    /// first operands whose quotient differs in any bit from the division.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn first_difference<T: Scalar>(pairs: &[(T, T)]) -> Option<(T, T, T, T)> {
        for block in pairs.chunks_exact(LANES) {
            let z: [T; LANES] = std::array::from_fn(|l| block[l].0);
            let d: [T; LANES] = std::array::from_fn(|l| block[l].1);
            // SAFETY: this function runs only where AVX-512F was detected.
            let q = unsafe { fast(&z, &d) };
            for l in 0..LANES {
                let exact = z[l] / d[l];
                let same = if exact.is_nan() {
                    q[l].is_nan()
                } else {
                    q[l].f64().to_bits() == exact.f64().to_bits()
                };
                if !same {
                    return Some((z[l], d[l], q[l], exact));
                }
            }
        }
        None
    }

    fn operands<T: Scalar>(count: usize, seed: u64, e: i32) -> Vec<(T, T)> {
        let mut rng = Rng(seed);
        let mut v: Vec<(T, T)> = (0..count)
            .map(|_| (T::of(rng.float(e)), T::of(rng.float(e))))
            .collect();
        // Hand-picked: exact quotients, ties of the significands, powers of
        // two, neighbours of one, the fast path's range ends and beyond (the
        // division's fallback), zero numerators, infinities and NaN.
        let ulp = T::EPS + T::EPS;
        let hard = [
            (1.0, 3.0),
            (1.0, 1.0),
            (-7.0, 2.0),
            (1.0 + 1e-15, 1.0 - 1e-16),
            (0.0, 5.0),
            (-0.0, 5.0),
            (3.0, f64::INFINITY),
            (f64::NAN, 2.0),
            (1.0, 0.0),
            (1.0, 1e-310),
            (1e300, 1e-300),
            (1e-300, 1e300),
            (2.5, 3.054936363499605e-151),
            (2.5, 3.273390607896142e150),
            (3.273390607896142e150, 3.054936363499605e-151),
            (f64::INFINITY, 3.0),
            (-1e-200, 7.0),
        ];
        for &(a, b) in &hard {
            v.push((T::of(a), T::of(b)));
        }
        for k in 1..40 {
            let x = T::one() + ulp * T::of(k as f64);
            v.push((x, T::one() - ulp * T::of(k as f64)));
            v.push((T::one(), x));
        }
        while !v.len().is_multiple_of(LANES) {
            v.push((T::one(), T::one()));
        }
        v
    }

    #[test]
    fn the_fast_quotients_are_the_division_bit_for_bit() {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx512f") {
            for (seed, e) in [(1u64, 8), (2, 60), (3, 300), (4, 1022)] {
                let pairs = operands::<f64>(1 << 20, seed, e);
                // SAFETY: AVX-512F was detected just above.
                let diff = unsafe { first_difference(&pairs) };
                assert!(diff.is_none(), "f64, exponents to {e}: {diff:?}");
            }
            for (seed, e) in [(5u64, 8), (6, 60), (7, 126)] {
                let pairs = operands::<f32>(1 << 20, seed, e);
                // SAFETY: AVX-512F was detected just above.
                let diff = unsafe { first_difference(&pairs) };
                assert!(diff.is_none(), "f32, exponents to {e}: {diff:?}");
            }
        }
    }

    /// Negative control: the quotient without its correction step (`z y`)
    /// differs from the division on these operands, so the comparison above
    /// can tell a wrong quotient from a right one.
    #[test]
    fn the_uncorrected_product_is_told_apart() {
        let pairs = operands::<f64>(1 << 12, 11, 8);
        let differs = pairs.iter().any(|&(z, d)| {
            let y = 1.0 / d;
            let y = y + y * 1e-16; // an ulp off, as a Newton reciprocal may be
            (z * y).to_bits() != (z / d).to_bits()
        });
        assert!(differs);
    }
}
