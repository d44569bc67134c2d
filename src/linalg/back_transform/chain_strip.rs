//! A register-blocked kernel for one parallelogram compact-WY block applied to
//! `Z` in place (column-major, no transposed copy; see [`super::chain`]), for
//! long reflectors (the EVD's `L = b = 64`), where the GEMM path's panels have
//! inner dimensions of 16 and 63 and reach about 40% of the one-thread GEMM
//! rate.
//!
//! `Z_R := Z_R - V (T (V^T Z_R))` on the block's rows `R`, eight columns of
//! `Z` (*lanes*) at a time:
//!
//! 1. `W = V^T Z_R`, sixteen reflectors at a time: per row `r`, the sixteen
//!    entries of row `r` of `V` (stored row-major, two 512-bit vectors) times
//!    the broadcast `Z(r, q)` of each lane, into 16 accumulators; only the
//!    rows where one of the sixteen reflectors is nonzero are visited.
//! 2. `W := T W` (`T` upper triangular), sixteen rows at a time.
//! 3. `Z_R -= V W`, strips of 24 rows (three vectors of column `i` of `V`)
//!    times the broadcast `W(i, q)`, into 24 accumulators that hold the strip
//!    of the eight lanes; the last rows in masked strips of 8.
//!
//! Every lane performs the same sequence of fused multiply-adds whatever the
//! number of lanes around it (the sixteen-reflector blocks and the row strips
//! depend only on the block's shape), so any split of the columns of `Z`
//! (threads, column blocks) gives bitwise the same result. f64 on CPUs with
//! AVX-512F only ([`available`]); elsewhere the engine keeps the transposed
//! paths of [`super::chain`].
//!
//! Measured on a 2-core Zen 4 EPYC (one thread, n = 2048, b = 64, 16 sweeps
//! per block, 512 columns, row windows of 512 KiB, same run): 27-29 GFLOP/s
//! against 19-21 for the GEMM path, about 58% of the one-thread GEMM rate.

use crate::Scalar;
use faer::{MatMut, MatRef};
use std::any::TypeId;

/// Reflectors per pass of phases 1 and 2 (two 512-bit vectors of f64).
const KB: usize = 16;
/// Lanes (columns of `Z`) per pass.
const NL: usize = 8;

/// Whether this CPU runs the kernel for `T` (f64 with AVX-512F).
pub fn available<T: Scalar>() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        TypeId::of::<T>() == TypeId::of::<f64>() && std::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Reused workspace of [`apply_block`]: `V` row-major and `T` column-major,
/// both padded to a multiple of [`KB`] reflectors, and `W`.
#[derive(Default)]
pub struct StripWork {
    vt: Vec<f64>,
    t: Vec<f64>,
    w: Vec<f64>,
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
    work: &mut StripWork,
) {
    assert!(
        available::<T>(),
        "chain_strip::apply_block needs f64 and AVX-512F"
    );
    let (nr, k) = (v.nrows(), v.ncols());
    assert!(t.nrows() == k && t.ncols() == k && rows.len() == nr && rows.end <= z.nrows());
    assert!(v.row_stride() == 1 && t.row_stride() == 1 && z.row_stride() == 1);
    if k == 0 || nr == 0 || z.ncols() == 0 {
        return;
    }
    // SAFETY: `T` is f64 (checked by `available`): the same views, with the
    // same pointers, shapes and strides, typed as f64.
    let (v, t, z) = unsafe {
        (
            MatRef::<f64>::from_raw_parts(
                v.as_ptr() as *const f64,
                nr,
                k,
                v.row_stride(),
                v.col_stride(),
            ),
            MatRef::<f64>::from_raw_parts(
                t.as_ptr() as *const f64,
                k,
                k,
                t.row_stride(),
                t.col_stride(),
            ),
            MatMut::<f64>::from_raw_parts_mut(
                z.as_ptr_mut() as *mut f64,
                z.nrows(),
                z.ncols(),
                z.row_stride(),
                z.col_stride(),
            ),
        )
    };
    let kp = k.next_multiple_of(KB);
    let StripWork { vt, t: tp, w } = work;
    vt.clear();
    vt.resize(nr * kp, 0.0);
    for i in 0..k {
        for (r, &x) in v.col(i).iter().enumerate() {
            vt[r * kp + i] = x;
        }
    }
    tp.clear();
    tp.resize(kp * kp, 0.0);
    for j in 0..k {
        for (i, &x) in t.col(j).iter().enumerate().take(j + 1) {
            tp[j * kp + i] = x;
        }
    }
    w.clear();
    w.resize(2 * NL * kp, 0.0);
    let z = z.subrows_mut(rows.start, nr);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: AVX-512F is present (asserted above); the shapes were checked.
    unsafe {
        avx512::apply(v, vt, tp, kp, l, z, w)
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{KB, NL};
    use faer::reborrow::*;
    use faer::{MatMut, MatRef};
    use std::arch::x86_64::*;

    /// The three phases on every lane of `z` (`nr` rows, unit row stride):
    /// [`NL`] lanes at a time, then one at a time.
    ///
    /// # Safety
    /// The CPU must support AVX-512F. `v` is `nr x k` with unit row stride,
    /// `vt` holds `nr x kp` row-major (`kp` a multiple of [`KB`], at least
    /// `k`, zero padded), `tp` `kp x kp` column-major upper triangular (zero
    /// padded), `w` at least `2 NL kp` values, `z` has `nr` rows.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn apply(
        v: MatRef<'_, f64>,
        vt: &[f64],
        tp: &[f64],
        kp: usize,
        l: usize,
        mut z: MatMut<'_, f64>,
        w: &mut [f64],
    ) {
        let lanes = z.ncols();
        let mut q = 0;
        while q + NL <= lanes {
            lanes_block::<NL>(v, vt, tp, kp, l, z.rb_mut().subcols_mut(q, NL), w);
            q += NL;
        }
        while q < lanes {
            lanes_block::<1>(v, vt, tp, kp, l, z.rb_mut().subcols_mut(q, 1), w);
            q += 1;
        }
    }

    /// The three phases on the `Q` lanes of `z`.
    #[inline(always)]
    unsafe fn lanes_block<const Q: usize>(
        v: MatRef<'_, f64>,
        vt: &[f64],
        tp: &[f64],
        kp: usize,
        l: usize,
        z: MatMut<'_, f64>,
        w: &mut [f64],
    ) {
        let (nr, k) = (v.nrows(), v.ncols());
        let ldz = z.col_stride() as usize;
        let zp = z.as_ptr_mut();
        let (w1, w2) = w.split_at_mut(NL * kp);
        let (w1, w2) = (w1.as_mut_ptr(), w2.as_mut_ptr());
        // 1. W(i, q) = sum_r V(r, i) Z(r, q): reflectors [ib, ib + 8) are
        //    nonzero in rows [ib, ib + 7 + l), [ib + 8, ib + 16) in rows
        //    [ib + 8, ib + 15 + l); rows where one half is zero skip it.
        let mut ib = 0;
        while ib < kp {
            let mut acc = [_mm512_setzero_pd(); 2 * NL];
            let (lo, mid, hi) = (ib.min(nr), (ib + 8).min(nr), (ib + 7 + l).min(nr));
            for r in lo..mid {
                let v0 = _mm512_loadu_pd(vt.as_ptr().add(r * kp + ib));
                for qq in 0..Q {
                    let zq = _mm512_set1_pd(*zp.add(qq * ldz + r));
                    acc[2 * qq] = _mm512_fmadd_pd(v0, zq, acc[2 * qq]);
                }
            }
            for r in mid..hi {
                let row = vt.as_ptr().add(r * kp + ib);
                let (v0, v1) = (_mm512_loadu_pd(row), _mm512_loadu_pd(row.add(8)));
                for qq in 0..Q {
                    let zq = _mm512_set1_pd(*zp.add(qq * ldz + r));
                    acc[2 * qq] = _mm512_fmadd_pd(v0, zq, acc[2 * qq]);
                    acc[2 * qq + 1] = _mm512_fmadd_pd(v1, zq, acc[2 * qq + 1]);
                }
            }
            for r in hi.max(mid)..(ib + 15 + l).min(nr) {
                let v1 = _mm512_loadu_pd(vt.as_ptr().add(r * kp + ib + 8));
                for qq in 0..Q {
                    let zq = _mm512_set1_pd(*zp.add(qq * ldz + r));
                    acc[2 * qq + 1] = _mm512_fmadd_pd(v1, zq, acc[2 * qq + 1]);
                }
            }
            for qq in 0..Q {
                _mm512_storeu_pd(w1.add(qq * kp + ib), acc[2 * qq]);
                _mm512_storeu_pd(w1.add(qq * kp + ib + 8), acc[2 * qq + 1]);
            }
            ib += KB;
        }
        // 2. W2(i, q) = sum_{j >= i} T(i, j) W(j, q), rows [ib, ib + KB).
        let mut ib = 0;
        while ib < kp {
            let mut acc = [_mm512_setzero_pd(); 2 * NL];
            for j in ib..k {
                let col = tp.as_ptr().add(j * kp + ib);
                let (t0, t1) = (_mm512_loadu_pd(col), _mm512_loadu_pd(col.add(8)));
                for qq in 0..Q {
                    let wj = _mm512_set1_pd(*w1.add(qq * kp + j));
                    acc[2 * qq] = _mm512_fmadd_pd(t0, wj, acc[2 * qq]);
                    acc[2 * qq + 1] = _mm512_fmadd_pd(t1, wj, acc[2 * qq + 1]);
                }
            }
            for qq in 0..Q {
                _mm512_storeu_pd(w2.add(qq * kp + ib), acc[2 * qq]);
                _mm512_storeu_pd(w2.add(qq * kp + ib + 8), acc[2 * qq + 1]);
            }
            ib += KB;
        }
        // 3. Z(r, q) -= sum_i V(r, i) W2(i, q); row r is nonzero in
        //    reflectors [r + 1 - l, r].
        let ldv = v.col_stride() as usize;
        let vp = v.as_ptr();
        let mut r = 0;
        while r + 24 <= nr {
            let mut acc = [_mm512_setzero_pd(); 3 * NL];
            for qq in 0..Q {
                for s in 0..3 {
                    acc[3 * qq + s] = _mm512_loadu_pd(zp.add(qq * ldz + r + 8 * s));
                }
            }
            for i in (r + 1).saturating_sub(l)..(r + 24).min(k) {
                let col = vp.add(i * ldv + r);
                let c = [
                    _mm512_loadu_pd(col),
                    _mm512_loadu_pd(col.add(8)),
                    _mm512_loadu_pd(col.add(16)),
                ];
                for qq in 0..Q {
                    let m = _mm512_set1_pd(*w2.add(qq * kp + i));
                    for s in 0..3 {
                        acc[3 * qq + s] = _mm512_fnmadd_pd(c[s], m, acc[3 * qq + s]);
                    }
                }
            }
            for qq in 0..Q {
                for s in 0..3 {
                    _mm512_storeu_pd(zp.add(qq * ldz + r + 8 * s), acc[3 * qq + s]);
                }
            }
            r += 24;
        }
        while r < nr {
            let rem = (nr - r).min(8);
            let mask: __mmask8 = (0xffu32 >> (8 - rem)) as u8;
            let mut acc = [_mm512_setzero_pd(); NL];
            for (qq, a) in acc.iter_mut().enumerate().take(Q) {
                *a = _mm512_maskz_loadu_pd(mask, zp.add(qq * ldz + r));
            }
            for i in (r + 1).saturating_sub(l)..(r + rem).min(k) {
                let c = _mm512_maskz_loadu_pd(mask, vp.add(i * ldv + r));
                for (qq, a) in acc.iter_mut().enumerate().take(Q) {
                    let m = _mm512_set1_pd(*w2.add(qq * kp + i));
                    *a = _mm512_fnmadd_pd(c, m, *a);
                }
            }
            for (qq, a) in acc.iter().enumerate().take(Q) {
                _mm512_mask_storeu_pd(zp.add(qq * ldz + r), mask, *a);
            }
            r += rem;
        }
    }
}
