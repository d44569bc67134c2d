//! A register-blocked kernel for one parallelogram compact-WY block applied to
//! `Z` in place (column-major, no transposed copy; see [`super::chain`]), for
//! long reflectors (the EVD's `L = b = 64`), where the GEMM path's panels have
//! inner dimensions of 16 and 63 and reach about 40% of the one-thread GEMM
//! rate.
//!
//! `Z_R := Z_R - V (T (V^T Z_R))` on the block's rows `R`, eight columns of
//! `Z` (*lanes*) at a time (with AVX-512F; the figures in parentheses are for
//! AVX2, with half as many vector registers):
//!
//! 1. `W = V^T Z_R`, two vectors of reflectors at a time (16 in f64, 32 in
//!    f32; one vector when fewer are left): per row `r`, those entries of row
//!    `r` of `V` (stored row-major) times the broadcast `Z(r, q)` of each
//!    lane, into 16 (8) accumulators; rows where all the reflectors of a
//!    vector are zero skip it.
//! 2. `W := T W` (`T` upper triangular), two vectors of rows at a time.
//! 3. `Z_R -= V W`, strips of three (two) vectors of rows of column `i` of
//!    `V` times the broadcast `W(i, q)`, into 24 (8) accumulators that hold
//!    the strip of the eight (four) lanes; the last rows in masked strips of
//!    one vector.
//!
//! Every lane performs the same sequence of fused multiply-adds whatever the
//! number of lanes around it (the passes of reflectors and the row strips
//! depend only on the block's shape and the instruction set), so any split of the columns of `Z`
//! (threads, column blocks) gives bitwise the same result. f64 and f32 on
//! CPUs with AVX-512F or with AVX2 and FMA ([`available`], [`Isa`]);
//! elsewhere the engine keeps the transposed paths of [`super::chain`].
//!
//! Measured on a 2-core Zen 4 EPYC (one thread, n = 2048, b = 64, 16 sweeps
//! per block, 512 columns, row windows of 512 KiB, alternated in one
//! process): 25.6-28.0 GFLOP/s against 18.3-21.4 for the GEMM path, 55-61%
//! of the one-thread GEMM rate; the AVX2 version on the same CPU 21-22. In
//! the EVD at n = 4096 (2 threads) the `Q2` stage went from 7.6-7.9 to
//! 5.3 busy seconds in f64, from 4.3 to 2.8-3.0 in f32.

use crate::Scalar;
use faer::{MatMut, MatRef};
use std::any::TypeId;

/// Most lanes (columns of `Z`) per pass, over the instruction sets (sizes
/// the workspace `W`).
const NL: usize = 8;

pub use crate::linalg::blas::simd::Isa;

/// Whether this CPU runs the kernel for `T` (f64 or f32, with AVX-512F or
/// AVX2 and FMA).
pub fn available<T: Scalar>() -> bool {
    (TypeId::of::<T>() == TypeId::of::<f64>() || TypeId::of::<T>() == TypeId::of::<f32>())
        && Isa::detect().is_some()
}

/// Reused workspace of [`apply_block`]: `V` row-major and `T` column-major,
/// both padded to a multiple of a vector of reflectors, and `W`.
pub struct StripWork<T> {
    vt: Vec<T>,
    t: Vec<T>,
    w: Vec<T>,
}

impl<T> Default for StripWork<T> {
    fn default() -> Self {
        StripWork {
            vt: Vec::new(),
            t: Vec::new(),
            w: Vec::new(),
        }
    }
}

/// `Z_R := (I - V T V^T) Z_R` for the rows `rows` of `z` (unit row stride,
/// non-negative column stride) with the instruction set `isa`: `v`
/// (`|rows| x k`, column `i` zero outside rows `[i, i + l)`, unit row
/// stride), `t` (`k x k` upper triangular, unit row stride). Callers pass
/// [`Isa::detect`] (tests and benchmarks may pass [`Isa::Avx2`] on a CPU with
/// AVX-512F as well); both instruction sets agree to rounding.
///
/// Panics unless `T` is f64 or f32 and the CPU runs `isa`, or if the shapes
/// do not match, a row stride is not 1 or a column stride is negative.
pub fn apply_block<T: Scalar>(
    isa: Isa,
    v: MatRef<'_, T>,
    t: MatRef<'_, T>,
    l: usize,
    rows: std::ops::Range<usize>,
    z: MatMut<'_, T>,
    work: &mut StripWork<T>,
) {
    let f64_ = TypeId::of::<T>() == TypeId::of::<f64>();
    assert!(
        (f64_ || TypeId::of::<T>() == TypeId::of::<f32>()) && isa.runs(),
        "chain_strip: {isa:?} does not run here for {}",
        T::NAME
    );
    let (nr, k) = (v.nrows(), v.ncols());
    assert!(t.nrows() == k && t.ncols() == k && rows.len() == nr && rows.end <= z.nrows());
    assert!(v.row_stride() == 1 && t.row_stride() == 1 && z.row_stride() == 1);
    // The kernels address columns as `base + j * stride`.
    assert!(
        v.col_stride() >= 0 && z.col_stride() >= 0,
        "chain_strip: column strides must not be negative"
    );
    if k == 0 || nr == 0 || z.ncols() == 0 {
        return;
    }
    let kp = k.next_multiple_of(isa.vector_len::<T>());
    let StripWork { vt, t: tp, w } = work;
    vt.clear();
    vt.resize(nr * kp, T::zero());
    for i in 0..k {
        for (r, &x) in v.col(i).iter().enumerate() {
            vt[r * kp + i] = x;
        }
    }
    tp.clear();
    tp.resize(kp * kp, T::zero());
    for j in 0..k {
        for (i, &x) in t.col(j).iter().enumerate().take(j + 1) {
            tp[j * kp + i] = x;
        }
    }
    w.clear();
    w.resize(2 * NL * kp, T::zero());
    let z = z.subrows_mut(rows.start, nr);
    #[cfg(target_arch = "x86_64")]
    {
        let s = Shape { nr, k, kp, l };
        let (vp, ldv) = (v.as_ptr(), v.col_stride() as usize);
        let (zp, lanes, ldz) = (z.as_ptr_mut(), z.ncols(), z.col_stride() as usize);
        macro_rules! call {
            ($kernel:path, $t:ty) => {
                $kernel(
                    s,
                    (vp as *const $t, ldv),
                    vt.as_ptr() as *const $t,
                    tp.as_ptr() as *const $t,
                    (zp as *mut $t, lanes, ldz),
                    w.as_mut_ptr() as *mut $t,
                )
            };
        }
        // SAFETY: `T` is the type named in each arm (checked above), the CPU
        // runs `isa` (asserted), and the pointers, strides and sizes describe
        // the checked views and the buffers sized above for `isa`'s vector
        // length.
        unsafe {
            match (isa, f64_) {
                (Isa::Avx512, true) => call!(avx512_f64::apply, f64),
                (Isa::Avx512, false) => call!(avx512_f32::apply, f32),
                (Isa::Avx2, true) => call!(avx2_f64::apply, f64),
                (Isa::Avx2, false) => call!(avx2_f32::apply, f32),
            }
        }
    }
}

/// The block's shape: rows `nr`, reflectors `k` (padded to `kp`, a multiple
/// of the vector length), reflector length `l`.
#[derive(Clone, Copy)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
struct Shape {
    nr: usize,
    k: usize,
    kp: usize,
    l: usize,
}

/// The kernel for one scalar type and instruction set (`$feature`): `$t` in
/// vectors `$v` of `$vl` values, `$nl` lanes per pass, strips of `$s3`
/// vectors, with that set's intrinsics.
#[cfg(target_arch = "x86_64")]
macro_rules! strip_kernel {
    ($name:ident, $feature:literal, $t:ty, $v:ty, $vl:expr, $nl:expr, $s3:expr,
     $load:ident, $store:ident, $set1:ident, $zero:ident, $fmadd:ident, $fnmadd:ident,
     [$($mload:tt)*], [$($mstore:tt)*]) => {
        mod $name {
            use super::Shape;
            use std::arch::x86_64::*;

            /// Values per vector.
            const VL: usize = $vl;
            /// Lanes per pass.
            const NL: usize = $nl;
            /// Vectors per row strip of phase 3.
            const S3: usize = $s3;

            /// The three phases on every lane of `z`: [`NL`] lanes at a
            /// time, then one at a time.
            ///
            /// # Safety
            /// The CPU must support the module's instruction set. `v`
            /// points to `nr x k` values (columns `ldv` apart), `vt` to `nr x kp` (row-major, zero
            /// padded), `tp` to `kp x kp` (column-major, upper triangular,
            /// zero padded), `z` to `nr x lanes` (columns `ldz` apart), `w`
            /// to `2 NL kp` writable values; `kp` is a multiple of `VL`.
            #[target_feature(enable = $feature)]
            pub(super) unsafe fn apply(
                s: Shape,
                v: (*const $t, usize),
                vt: *const $t,
                tp: *const $t,
                z: (*mut $t, usize, usize),
                w: *mut $t,
            ) {
                let (zp, lanes, ldz) = z;
                let mut q = 0;
                while q + NL <= lanes {
                    lanes_block::<NL>(s, v, vt, tp, zp.add(q * ldz), ldz, w);
                    q += NL;
                }
                while q < lanes {
                    lanes_block::<1>(s, v, vt, tp, zp.add(q * ldz), ldz, w);
                    q += 1;
                }
            }

            /// `acc[2 q + half] += x * broadcast(*src.add(q stride))` for the
            /// lanes `q < Q`.
            ///
            /// # Safety
            /// As [`apply`]; `src.add(q stride)` is readable for `q < Q`.
            #[inline(always)]
            unsafe fn rank1<const Q: usize>(
                acc: &mut [$v; 2 * NL],
                half: usize,
                x: $v,
                src: *const $t,
                stride: usize,
            ) {
                for qq in 0..Q {
                    let b = $set1(*src.add(qq * stride));
                    acc[2 * qq + half] = $fmadd(x, b, acc[2 * qq + half]);
                }
            }

            /// [`rank1`] on both halves with one broadcast.
            ///
            /// # Safety
            /// As [`rank1`].
            #[inline(always)]
            unsafe fn rank2<const Q: usize>(
                acc: &mut [$v; 2 * NL],
                x0: $v,
                x1: $v,
                src: *const $t,
                stride: usize,
            ) {
                for qq in 0..Q {
                    let b = $set1(*src.add(qq * stride));
                    acc[2 * qq] = $fmadd(x0, b, acc[2 * qq]);
                    acc[2 * qq + 1] = $fmadd(x1, b, acc[2 * qq + 1]);
                }
            }

            /// Stores the pass `[ib, ib + VL)` (and `[ib + VL, ib + 2 VL)`
            /// when `two`) of each lane `q < Q` at `dst + q kp`.
            ///
            /// # Safety
            /// As [`apply`]; `dst` is `W` or `W2`, `Q kp` writable values.
            #[inline(always)]
            unsafe fn store_pass<const Q: usize>(
                acc: &[$v; 2 * NL],
                dst: *mut $t,
                kp: usize,
                ib: usize,
                two: bool,
            ) {
                for qq in 0..Q {
                    $store(dst.add(qq * kp + ib), acc[2 * qq]);
                    if two {
                        $store(dst.add(qq * kp + ib + VL), acc[2 * qq + 1]);
                    }
                }
            }

            /// The three phases on the `Q` lanes at `zp`.
            ///
            /// # Safety
            /// As [`apply`], for the `Q <= NL` columns of `Z` at `zp`.
            #[inline(always)]
            unsafe fn lanes_block<const Q: usize>(
                s: Shape,
                (vp, ldv): (*const $t, usize),
                vt: *const $t,
                tp: *const $t,
                zp: *mut $t,
                ldz: usize,
                w: *mut $t,
            ) {
                let Shape { nr, k, kp, l } = s;
                let (w1, w2) = (w, w.add(NL * kp));
                // 1. W(i, q) = sum_r V(r, i) Z(r, q), reflectors [ib, ib + VL)
                //    (nonzero in rows [ib, ib + VL - 1 + l)) and, when
                //    there are more, [ib + VL, ib + 2 VL).
                let mut ib = 0;
                while ib < kp {
                    let two = ib + VL < kp;
                    let mut acc = [$zero(); 2 * NL];
                    let (lo, mid, hi) = (ib.min(nr), (ib + VL).min(nr), (ib + VL - 1 + l).min(nr));
                    let z_row = |r: usize| zp.add(r) as *const $t;
                    if two {
                        for r in lo..mid {
                            rank1::<Q>(&mut acc, 0, $load(vt.add(r * kp + ib)), z_row(r), ldz);
                        }
                        for r in mid..hi {
                            let row = vt.add(r * kp + ib);
                            rank2::<Q>(&mut acc, $load(row), $load(row.add(VL)), z_row(r), ldz);
                        }
                        for r in hi.max(mid)..(ib + 2 * VL - 1 + l).min(nr) {
                            let x1 = $load(vt.add(r * kp + ib + VL));
                            rank1::<Q>(&mut acc, 1, x1, z_row(r), ldz);
                        }
                    } else {
                        for r in lo..hi {
                            rank1::<Q>(&mut acc, 0, $load(vt.add(r * kp + ib)), z_row(r), ldz);
                        }
                    }
                    store_pass::<Q>(&acc, w1, kp, ib, two);
                    ib += if two { 2 * VL } else { VL };
                }
                // 2. W2(i, q) = sum_{j >= i} T(i, j) W(j, q), rows
                //    [ib, ib + VL) and, when there are more, [ib + VL, ib + 2 VL).
                let mut ib = 0;
                while ib < kp {
                    let two = ib + VL < kp;
                    let mut acc = [$zero(); 2 * NL];
                    for j in ib..k {
                        let col = tp.add(j * kp + ib);
                        let w_j = w1.add(j) as *const $t;
                        if two {
                            rank2::<Q>(&mut acc, $load(col), $load(col.add(VL)), w_j, kp);
                        } else {
                            rank1::<Q>(&mut acc, 0, $load(col), w_j, kp);
                        }
                    }
                    store_pass::<Q>(&acc, w2, kp, ib, two);
                    ib += if two { 2 * VL } else { VL };
                }
                // 3. Z(r, q) -= sum_i V(r, i) W2(i, q); row r is nonzero in
                //    reflectors [r + 1 - l, r].
                let mut r = 0;
                while r + S3 * VL <= nr {
                    let mut acc = [$zero(); S3 * NL];
                    for qq in 0..Q {
                        for s in 0..S3 {
                            acc[S3 * qq + s] = $load(zp.add(qq * ldz + r + VL * s));
                        }
                    }
                    for i in (r + 1).saturating_sub(l)..(r + S3 * VL).min(k) {
                        let col = vp.add(i * ldv + r);
                        let mut c = [$zero(); S3];
                        for (s, cs) in c.iter_mut().enumerate() {
                            *cs = $load(col.add(VL * s));
                        }
                        for qq in 0..Q {
                            let m = $set1(*w2.add(qq * kp + i));
                            for s in 0..S3 {
                                acc[S3 * qq + s] = $fnmadd(c[s], m, acc[S3 * qq + s]);
                            }
                        }
                    }
                    for qq in 0..Q {
                        for s in 0..S3 {
                            $store(zp.add(qq * ldz + r + VL * s), acc[S3 * qq + s]);
                        }
                    }
                    r += S3 * VL;
                }
                while r < nr {
                    let rem = (nr - r).min(VL);
                    let mut acc = [$zero(); NL];
                    for (qq, a) in acc.iter_mut().enumerate().take(Q) {
                        *a = masked!(load $($mload)*, rem, zp.add(qq * ldz + r));
                    }
                    for i in (r + 1).saturating_sub(l)..(r + rem).min(k) {
                        let c = masked!(load $($mload)*, rem, vp.add(i * ldv + r));
                        for (qq, a) in acc.iter_mut().enumerate().take(Q) {
                            let m = $set1(*w2.add(qq * kp + i));
                            *a = $fnmadd(c, m, *a);
                        }
                    }
                    for (qq, a) in acc.iter().enumerate().take(Q) {
                        masked!(store $($mstore)*, rem, zp.add(qq * ldz + r), *a);
                    }
                    r += rem;
                }
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
strip_kernel!(
    avx512_f64,
    "avx512f",
    f64,
    __m512d,
    8,
    8,
    3,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    _mm512_set1_pd,
    _mm512_setzero_pd,
    _mm512_fmadd_pd,
    _mm512_fnmadd_pd,
    [avx512 _mm512_maskz_loadu_pd __mmask8],
    [avx512 _mm512_mask_storeu_pd __mmask8]
);
#[cfg(target_arch = "x86_64")]
strip_kernel!(
    avx512_f32,
    "avx512f",
    f32,
    __m512,
    16,
    8,
    3,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_set1_ps,
    _mm512_setzero_ps,
    _mm512_fmadd_ps,
    _mm512_fnmadd_ps,
    [avx512 _mm512_maskz_loadu_ps __mmask16],
    [avx512 _mm512_mask_storeu_ps __mmask16]
);
#[cfg(target_arch = "x86_64")]
strip_kernel!(
    avx2_f64,
    "avx2,fma",
    f64,
    __m256d,
    4,
    4,
    2,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_set1_pd,
    _mm256_setzero_pd,
    _mm256_fmadd_pd,
    _mm256_fnmadd_pd,
    [avx2 _mm256_maskload_pd mask_256d],
    [avx2 _mm256_maskstore_pd mask_256d]
);
#[cfg(target_arch = "x86_64")]
strip_kernel!(
    avx2_f32,
    "avx2,fma",
    f32,
    __m256,
    8,
    4,
    2,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_set1_ps,
    _mm256_setzero_ps,
    _mm256_fmadd_ps,
    _mm256_fnmadd_ps,
    [avx2 _mm256_maskload_ps mask_256s],
    [avx2 _mm256_maskstore_ps mask_256s]
);

#[cfg(test)]
mod tests {
    use super::*;
    use faer::Mat;

    /// One parallelogram block of `k` random reflectors of length `l` (the
    /// last ones cut at `nr` rows) and a random upper-triangular `T`.
    fn block<T: Scalar>(nr: usize, k: usize, l: usize, seed: u64) -> (Mat<T>, Mat<T>) {
        let mut s = seed;
        let mut rnd = move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        let v = Mat::<T>::from_fn(nr, k, |r, i| match r.checked_sub(i) {
            Some(0) => T::one(),
            Some(d) if d < l => T::of(rnd()),
            _ => T::zero(),
        });
        let t = Mat::<T>::from_fn(k, k, |i, j| if i <= j { T::of(rnd()) } else { T::zero() });
        (v, t)
    }

    /// `Z_R - V (T (V^T Z_R))` in f64 by plain loops.
    fn reference<T: Scalar>(v: &Mat<T>, t: &Mat<T>, r0: usize, z: &Mat<T>) -> Mat<f64> {
        let (nr, k) = (v.nrows(), v.ncols());
        let mut out = Mat::<f64>::from_fn(z.nrows(), z.ncols(), |i, j| z[(i, j)].f64());
        for q in 0..z.ncols() {
            let w: Vec<f64> = (0..k)
                .map(|i| {
                    (0..nr)
                        .map(|r| v[(r, i)].f64() * z[(r0 + r, q)].f64())
                        .sum()
                })
                .collect();
            let w2: Vec<f64> = (0..k)
                .map(|i| (i..k).map(|j| t[(i, j)].f64() * w[j]).sum())
                .collect();
            for r in 0..nr {
                out[(r0 + r, q)] -= (0..k).map(|i| v[(r, i)].f64() * w2[i]).sum::<f64>();
            }
        }
        out
    }

    fn case<T: Scalar>(isa: Isa, nr: usize, k: usize, l: usize, lanes: usize) {
        let (v, t) = block::<T>(nr, k, l, (nr * 31 + k * 7 + l) as u64);
        let r0 = 3;
        let z0 = Mat::<T>::from_fn(nr + 5, lanes, |i, j| {
            T::of(((i * 13 + j * 7) % 17) as f64 - 8.0)
        });
        let want = reference(&v, &t, r0, &z0);
        let mut work = StripWork::default();
        let mut z = z0.clone();
        apply_block(
            isa,
            v.as_ref(),
            t.as_ref(),
            l,
            r0..r0 + nr,
            z.as_mut(),
            &mut work,
        );
        let scale = T::EPS.f64() * (nr * k) as f64 * 64.0;
        for j in 0..lanes {
            for i in 0..nr + 5 {
                let err = (z[(i, j)].f64() - want[(i, j)]).abs();
                assert!(
                    err <= scale * (1.0 + want[(i, j)].abs()),
                    "{isa:?} {} nr {nr} k {k} l {l}: ({i}, {j}) {} against {}",
                    T::NAME,
                    z[(i, j)],
                    want[(i, j)]
                );
            }
        }
        // Each lane alone gives bitwise the same column.
        for j in 0..lanes {
            let mut zj = z0.as_ref().subcols(j, 1).to_owned();
            apply_block(
                isa,
                v.as_ref(),
                t.as_ref(),
                l,
                r0..r0 + nr,
                zj.as_mut(),
                &mut work,
            );
            for i in 0..nr + 5 {
                assert_eq!(
                    zj[(i, 0)].f64().to_bits(),
                    z[(i, j)].f64().to_bits(),
                    "{isa:?} lane {j}"
                );
            }
        }
    }

    /// A view with reversed columns (a negative column stride, which the
    /// kernels' addressing does not handle) is refused, not read out of
    /// bounds.
    #[test]
    #[should_panic(expected = "column strides must not be negative")]
    fn negative_column_stride_is_refused() {
        let Some(isa) = Isa::detect() else {
            panic!("column strides must not be negative (no kernel on this CPU)");
        };
        let (v, t) = block::<f64>(20, 4, 8, 1);
        let mut z = Mat::<f64>::zeros(20, 9);
        let mut work = StripWork::default();
        let zr = z.as_mut().reverse_cols_mut();
        apply_block(isa, v.as_ref(), t.as_ref(), 8, 0..20, zr, &mut work);
    }

    /// Both instruction sets (where the CPU runs them), both types, against
    /// plain loops, on blocks with one or several passes of reflectors, row
    /// counts with and without a masked remainder, and lane counts around the
    /// pass width.
    #[test]
    fn both_isas_match_plain_loops_and_lanes_are_independent() {
        let mut ran = 0;
        for isa in [Isa::Avx512, Isa::Avx2] {
            if !isa.runs() {
                eprintln!("{isa:?} does not run on this CPU: not tested");
                continue;
            }
            ran += 1;
            for (k, l) in [
                (16usize, 64usize),
                (17, 64),
                (5, 40),
                (35, 33),
                (16, 3),
                (1, 8),
            ] {
                for nr in [k + l - 1, k + l / 2, 1.max(k)] {
                    for lanes in [1usize, 4, 8, 13] {
                        case::<f64>(isa, nr, k, l, lanes);
                        case::<f32>(isa, nr, k, l, lanes);
                    }
                }
            }
        }
        eprintln!("instruction sets tested: {ran}");
    }
}
