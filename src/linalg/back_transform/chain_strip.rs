//! A register-blocked kernel for one parallelogram compact-WY block applied to
//! `Z` in place (column-major, no transposed copy; see [`super::chain`]), for
//! long reflectors (the EVD's `L = b = 64`), where the GEMM path's panels have
//! inner dimensions of 16 and 63 and reach about 40% of the one-thread GEMM
//! rate.
//!
//! `Z_R := Z_R - V (T (V^T Z_R))` on the block's rows `R`, eight columns of
//! `Z` (*lanes*) at a time:
//!
//! 1. `W = V^T Z_R`, two vectors of reflectors at a time (16 in f64, 32 in
//!    f32; one vector when fewer are left): per row `r`, those entries of row
//!    `r` of `V` (stored row-major) times the broadcast `Z(r, q)` of each
//!    lane, into 16 accumulators; rows where all the reflectors of a vector
//!    are zero skip it.
//! 2. `W := T W` (`T` upper triangular), two vectors of rows at a time.
//! 3. `Z_R -= V W`, strips of three vectors of rows (24 in f64, 48 in f32) of
//!    column `i` of `V` times the broadcast `W(i, q)`, into 24 accumulators
//!    that hold the strip of the eight lanes; the last rows in masked strips
//!    of one vector.
//!
//! Every lane performs the same sequence of fused multiply-adds whatever the
//! number of lanes around it (the sixteen-reflector blocks and the row strips
//! depend only on the block's shape), so any split of the columns of `Z`
//! (threads, column blocks) gives bitwise the same result. f64 and f32 on
//! CPUs with AVX-512F only ([`available`]); elsewhere the engine keeps the
//! transposed paths of [`super::chain`].
//!
//! Measured on a 2-core Zen 4 EPYC (one thread, n = 2048, b = 64, 16 sweeps
//! per block, 512 columns, row windows of 512 KiB, same run): 27-29 GFLOP/s
//! against 19-21 for the GEMM path, about 58% of the one-thread GEMM rate.

use crate::Scalar;
use faer::{MatMut, MatRef};
use std::any::TypeId;

/// Lanes (columns of `Z`) per pass.
const NL: usize = 8;

/// Whether this CPU runs the kernel for `T` (f64 or f32, with AVX-512F).
pub fn available<T: Scalar>() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        (TypeId::of::<T>() == TypeId::of::<f64>() || TypeId::of::<T>() == TypeId::of::<f32>())
            && std::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Values of `T` per 512-bit vector.
fn vector_len<T>() -> usize {
    64 / std::mem::size_of::<T>()
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

/// `Z_R := (I - V T V^T) Z_R` for the rows `rows` of `z` (unit row stride):
/// `v` (`|rows| x k`, column `i` zero outside rows `[i, i + l)`, unit row
/// stride), `t` (`k x k` upper triangular, unit row stride).
///
/// Panics unless [`available`]`::<T>()` (callers check it once) or if the
/// shapes do not match.
pub fn apply_block<T: Scalar>(
    v: MatRef<'_, T>,
    t: MatRef<'_, T>,
    l: usize,
    rows: std::ops::Range<usize>,
    z: MatMut<'_, T>,
    work: &mut StripWork<T>,
) {
    assert!(
        available::<T>(),
        "chain_strip::apply_block needs f64 or f32 and AVX-512F"
    );
    let (nr, k) = (v.nrows(), v.ncols());
    assert!(t.nrows() == k && t.ncols() == k && rows.len() == nr && rows.end <= z.nrows());
    assert!(v.row_stride() == 1 && t.row_stride() == 1 && z.row_stride() == 1);
    if k == 0 || nr == 0 || z.ncols() == 0 {
        return;
    }
    let kp = k.next_multiple_of(vector_len::<T>());
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
        let (v, z) = (
            (v.as_ptr(), v.col_stride()),
            (z.as_ptr_mut(), z.ncols(), z.col_stride()),
        );
        let s = Shape { nr, k, kp, l };
        if TypeId::of::<T>() == TypeId::of::<f64>() {
            // SAFETY: `T` is f64 (checked just above), AVX-512F is present
            // (asserted), and the pointers, strides and sizes describe the
            // checked views and the buffers sized above.
            unsafe {
                avx512_f64::apply(
                    s,
                    (v.0 as *const f64, v.1 as usize),
                    vt.as_ptr() as *const f64,
                    tp.as_ptr() as *const f64,
                    (z.0 as *mut f64, z.1, z.2 as usize),
                    w.as_mut_ptr() as *mut f64,
                )
            }
        } else {
            // SAFETY: as above, with `T` f32 (the only other type `available`
            // accepts).
            unsafe {
                avx512_f32::apply(
                    s,
                    (v.0 as *const f32, v.1 as usize),
                    vt.as_ptr() as *const f32,
                    tp.as_ptr() as *const f32,
                    (z.0 as *mut f32, z.1, z.2 as usize),
                    w.as_mut_ptr() as *mut f32,
                )
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

/// The kernel for one scalar type: `$t` in 512-bit vectors `$v` of `$vl`
/// values, with that type's intrinsics.
#[cfg(target_arch = "x86_64")]
macro_rules! strip_kernel {
    ($name:ident, $t:ty, $v:ty, $vl:expr, $mask:ty,
     $load:ident, $store:ident, $set1:ident, $zero:ident, $fmadd:ident, $fnmadd:ident,
     $mload:ident, $mstore:ident) => {
        mod $name {
            use super::{Shape, NL};
            use std::arch::x86_64::*;

            const VL: usize = $vl;

            /// The three phases on every lane of `z`: [`NL`] lanes at a
            /// time, then one at a time.
            ///
            /// # Safety
            /// The CPU must support AVX-512F. `v` points to `nr x k` values
            /// (columns `ldv` apart), `vt` to `nr x kp` (row-major, zero
            /// padded), `tp` to `kp x kp` (column-major, upper triangular,
            /// zero padded), `z` to `nr x lanes` (columns `ldz` apart), `w`
            /// to `2 NL kp` writable values; `kp` is a multiple of `VL`.
            #[target_feature(enable = "avx512f")]
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

            /// `acc[a] += x * broadcast(*z_q(r))` for the lanes `q < Q`.
            #[inline(always)]
            unsafe fn rank1<const Q: usize>(
                acc: &mut [$v; 2 * NL],
                half: usize,
                x: $v,
                zp: *const $t,
                ldz: usize,
                r: usize,
            ) {
                for qq in 0..Q {
                    let zq = $set1(*zp.add(qq * ldz + r));
                    acc[2 * qq + half] = $fmadd(x, zq, acc[2 * qq + half]);
                }
            }

            /// The three phases on the `Q` lanes at `zp`.
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
                    if two {
                        for r in lo..mid {
                            rank1::<Q>(&mut acc, 0, $load(vt.add(r * kp + ib)), zp, ldz, r);
                        }
                        for r in mid..hi {
                            let row = vt.add(r * kp + ib);
                            let (v0, v1) = ($load(row), $load(row.add(VL)));
                            for qq in 0..Q {
                                let zq = $set1(*zp.add(qq * ldz + r));
                                acc[2 * qq] = $fmadd(v0, zq, acc[2 * qq]);
                                acc[2 * qq + 1] = $fmadd(v1, zq, acc[2 * qq + 1]);
                            }
                        }
                        for r in hi.max(mid)..(ib + 2 * VL - 1 + l).min(nr) {
                            rank1::<Q>(&mut acc, 1, $load(vt.add(r * kp + ib + VL)), zp, ldz, r);
                        }
                    } else {
                        for r in lo..hi {
                            rank1::<Q>(&mut acc, 0, $load(vt.add(r * kp + ib)), zp, ldz, r);
                        }
                    }
                    for qq in 0..Q {
                        $store(w1.add(qq * kp + ib), acc[2 * qq]);
                        if two {
                            $store(w1.add(qq * kp + ib + VL), acc[2 * qq + 1]);
                        }
                    }
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
                        let t0 = $load(col);
                        let t1 = if two { $load(col.add(VL)) } else { $zero() };
                        for qq in 0..Q {
                            let wj = $set1(*w1.add(qq * kp + j));
                            acc[2 * qq] = $fmadd(t0, wj, acc[2 * qq]);
                            if two {
                                acc[2 * qq + 1] = $fmadd(t1, wj, acc[2 * qq + 1]);
                            }
                        }
                    }
                    for qq in 0..Q {
                        $store(w2.add(qq * kp + ib), acc[2 * qq]);
                        if two {
                            $store(w2.add(qq * kp + ib + VL), acc[2 * qq + 1]);
                        }
                    }
                    ib += if two { 2 * VL } else { VL };
                }
                // 3. Z(r, q) -= sum_i V(r, i) W2(i, q); row r is nonzero in
                //    reflectors [r + 1 - l, r].
                let mut r = 0;
                while r + 3 * VL <= nr {
                    let mut acc = [$zero(); 3 * NL];
                    for qq in 0..Q {
                        for s in 0..3 {
                            acc[3 * qq + s] = $load(zp.add(qq * ldz + r + VL * s));
                        }
                    }
                    for i in (r + 1).saturating_sub(l)..(r + 3 * VL).min(k) {
                        let col = vp.add(i * ldv + r);
                        let c = [$load(col), $load(col.add(VL)), $load(col.add(2 * VL))];
                        for qq in 0..Q {
                            let m = $set1(*w2.add(qq * kp + i));
                            for s in 0..3 {
                                acc[3 * qq + s] = $fnmadd(c[s], m, acc[3 * qq + s]);
                            }
                        }
                    }
                    for qq in 0..Q {
                        for s in 0..3 {
                            $store(zp.add(qq * ldz + r + VL * s), acc[3 * qq + s]);
                        }
                    }
                    r += 3 * VL;
                }
                while r < nr {
                    let rem = (nr - r).min(VL);
                    let mask = (u32::MAX >> (32 - rem)) as $mask;
                    let mut acc = [$zero(); NL];
                    for (qq, a) in acc.iter_mut().enumerate().take(Q) {
                        *a = $mload(mask, zp.add(qq * ldz + r));
                    }
                    for i in (r + 1).saturating_sub(l)..(r + rem).min(k) {
                        let c = $mload(mask, vp.add(i * ldv + r));
                        for (qq, a) in acc.iter_mut().enumerate().take(Q) {
                            let m = $set1(*w2.add(qq * kp + i));
                            *a = $fnmadd(c, m, *a);
                        }
                    }
                    for (qq, a) in acc.iter().enumerate().take(Q) {
                        $mstore(zp.add(qq * ldz + r), mask, *a);
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
    f64,
    __m512d,
    8,
    __mmask8,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    _mm512_set1_pd,
    _mm512_setzero_pd,
    _mm512_fmadd_pd,
    _mm512_fnmadd_pd,
    _mm512_maskz_loadu_pd,
    _mm512_mask_storeu_pd
);
#[cfg(target_arch = "x86_64")]
strip_kernel!(
    avx512_f32,
    f32,
    __m512,
    16,
    __mmask16,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_set1_ps,
    _mm512_setzero_ps,
    _mm512_fmadd_ps,
    _mm512_fnmadd_ps,
    _mm512_maskz_loadu_ps,
    _mm512_mask_storeu_ps
);
