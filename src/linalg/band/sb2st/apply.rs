//! Steps 2-4 of a bulge-chasing step (module docs of `sb2st`): the reflector
//! `H = I - tau v v^T` of step 1 applied from the left to the rest of the
//! left block, from both sides to the diagonal block (LAPACK `dlarfy`) and
//! from the right to the block below, with the rows of the step held in
//! vector registers.
//!
//! # Why a kernel of its own
//!
//! A step works on blocks of `b x b` (`b` = 32 by default): too short for a
//! dot product or an `axpy` per column to leave the latency of its one
//! dependency chain and its horizontal sum behind. Here `v`, `p = tau B v`
//! and the product `y` below are kept in registers as `CH` vectors of 64
//! bytes (`b <= 8` such vectors: 64 rows in f64, 128 in f32), each column is
//! loaded once per pass, and the symmetric product of step 3 takes the
//! column parts below the diagonal (`B_L v`) and their transposes (dots)
//! in the same pass. On the Xeon (model 167, AVX-512), the sequential
//! `sb2st_reference` at n = 2048, one thread, took 0.055-0.057 s against
//! 0.102 s with the loops it replaces in f64 and 0.034-0.035 against 0.073 s
//! in f32 at b = 32; at b = 64, 0.104-0.109 against 0.168 (f64) and 0.054
//! against 0.108 (f32).
//!
//! # The same bits everywhere
//!
//! Every version (AVX-512, AVX2 + FMA, and the portable one with
//! `mul_add`) performs the same exactly rounded fused multiply-adds in the
//! same order: a "vector" is 64 bytes of lanes (`L` = 8 in f64, 16 in f32;
//! two registers with AVX2), a dot product keeps one partial sum per lane
//! and reduces them pairwise in a fixed order ([`crate::linalg::blas::simd::reduce_lanes`]), and a
//! lane outside the rows of a product takes an exact zero, which adds
//! nothing (a partial sum starts at `+0` and never becomes `-0`). So the
//! result depends only on the band, not on the CPU it ran on.

use super::lanes::{Lanes, Portable};
use crate::linalg::blas::simd::Isa;
use crate::matrix::band::BandMut;
use crate::Scalar;
use std::any::TypeId;

/// Largest number of 64-byte vectors per block column (`b <= 64` in f64,
/// `b <= 128` in f32); wider steps return `false` from
/// [`apply_reflector`].
const MAX_CH: usize = 8;

/// Where a step works, in the band storage: `base` points to the diagonal
/// entry of column `ce`, column `c`'s diagonal is `(c - ce) ldab` after it,
/// and entry `(r, c)` is `r - c` after that.
#[derive(Clone, Copy)]
struct Window<T> {
    base: *mut T,
    ldab: usize,
    ce: usize,
}

impl<T> Window<T> {
    /// Entry `(r, c)`; for `r < c` a pointer that only masked-off lanes use.
    #[inline(always)]
    fn at(self, r: usize, c: usize) -> *mut T {
        self.base
            .wrapping_add((c - self.ce) * self.ldab + r)
            .wrapping_sub(c)
    }
}

/// The step's geometry (its `ce` is the [`Window`]'s) and reflector.
#[derive(Clone, Copy)]
struct Step<'a, T> {
    r0: usize,
    len: usize,
    below: usize,
    v: &'a [T],
    tau: T,
}

/// Steps 2-4 with `CH` vectors of `V` per block column.
///
/// # Safety
/// `V`'s instruction set runs on this CPU and this function is inlined into
/// one compiled for it; `w` addresses band storage that holds, and lets the
/// caller write, the entries of the step's three blocks ([`apply_reflector`]);
/// `len, below <= CH V::L`.
#[inline(always)]
unsafe fn apply<T: Scalar, V: Lanes<T>, const CH: usize>(w: Window<T>, st: Step<'_, T>) {
    let Step {
        r0,
        len,
        below,
        v,
        tau,
    } = st;
    let (ce, l) = (w.ce, V::L);
    // SAFETY (every block below): the loads and stores touch rows `lo..hi`
    // of one column of one of the three blocks, lanes outside them masked
    // off (the caller's contract).
    unsafe {
        // Rows `q l..` of a block column of `len` rows: lanes `lo..len - q l`.
        let rows = |q: usize| len.saturating_sub(q * l);
        let vv: [V; CH] =
            std::array::from_fn(|q| V::load(v.as_ptr().wrapping_add(q * l), 0, rows(q)));

        // 2. Left block, columns (ce, r0): col -= tau (v^T col) v.
        for c in ce + 1..r0 {
            let p = w.at(r0, c);
            let x: [V; CH] = std::array::from_fn(|q| V::load(p.wrapping_add(q * l), 0, rows(q)));
            let mut d = V::zero();
            for q in 0..CH {
                d = V::fma(x[q], vv[q], d);
            }
            let t = V::splat(tau * d.sum());
            for (q, &xq) in x.iter().enumerate() {
                V::fnma(vv[q], t, xq).store(p.wrapping_add(q * l), 0, rows(q));
            }
        }

        // 3. Diagonal block B (lower, dlarfy): p = tau B v, w = p - (tau/2)(p^T v) v,
        //    B -= v w^T + w v^T. Column j of B gives B[j.., j] v_j (into p's
        //    registers) and its part below the diagonal dotted with v (p_j).
        let mut acc = [V::zero(); CH];
        let mut dots = [T::zero(); MAX_CH * 16];
        for (j, dj) in dots.iter_mut().enumerate().take(len) {
            let vj = V::splat(v[j]);
            let mut d = V::zero();
            for q in j / l..CH {
                let lo = j.saturating_sub(q * l);
                let x = V::load(w.at(r0 + q * l, r0 + j), lo, rows(q));
                acc[q] = V::fma(x, vj, acc[q]);
                // The rows strictly below the diagonal.
                d = V::fma(x.keep_from((j + 1).saturating_sub(q * l)), vv[q], d);
            }
            *dj = d.sum();
        }
        let vtau = V::splat(tau);
        let mut pv = [V::zero(); CH];
        let mut pd = V::zero();
        for q in 0..CH {
            let dq = V::load(dots.as_ptr().wrapping_add(q * l), 0, l);
            pv[q] = V::mul(V::add(acc[q], dq), vtau);
            pd = V::fma(pv[q], vv[q], pd);
        }
        let half = T::of(0.5);
        let alpha = V::splat(-(half * tau * pd.sum()));
        // w = p + alpha v, in registers and (for its entries one at a time)
        // in the dots' buffer, which is free again.
        let wbuf = &mut dots;
        for q in 0..CH {
            pv[q] = V::fma(alpha, vv[q], pv[q]);
            pv[q].store(wbuf.as_mut_ptr().wrapping_add(q * l), 0, l);
        }
        for j in 0..len {
            let (vj, wj) = (V::splat(v[j]), V::splat(wbuf[j]));
            for q in j / l..CH {
                let lo = j.saturating_sub(q * l);
                let p = w.at(r0 + q * l, r0 + j);
                let x = V::load(p, lo, rows(q));
                V::fnma(pv[q], vj, V::fnma(vv[q], wj, x)).store(p, lo, rows(q));
            }
        }

        // 4. Block below, rows [r0 + len, r0 + len + below):
        //    y = A[D, R] v, A[D, R] -= tau y v^T (creates the next bulge).
        if below > 0 {
            let brows = |q: usize| below.saturating_sub(q * l);
            let mut y = [V::zero(); CH];
            for (j, &vj) in v.iter().enumerate() {
                let (p, vj) = (w.at(r0 + len, r0 + j), V::splat(vj));
                for (q, yq) in y.iter_mut().enumerate() {
                    *yq = V::fma(V::load(p.wrapping_add(q * l), 0, brows(q)), vj, *yq);
                }
            }
            for (j, &vj) in v.iter().enumerate() {
                let (p, s) = (w.at(r0 + len, r0 + j), V::splat(tau * vj));
                for (q, &yq) in y.iter().enumerate() {
                    let pq = p.wrapping_add(q * l);
                    V::fnma(yq, s, V::load(pq, 0, brows(q))).store(pq, 0, brows(q));
                }
            }
        }
    }
}

/// [`apply`] with the smallest `CH` of 1, 2, 4, 8 that holds `ch` vectors.
///
/// # Safety
/// As [`apply`], for `ch <= MAX_CH`.
#[inline(always)]
unsafe fn apply_ch<T: Scalar, V: Lanes<T>>(ch: usize, w: Window<T>, st: Step<'_, T>) {
    // SAFETY: the caller's contract; each `CH` holds `ch` vectors.
    unsafe {
        match ch {
            0 | 1 => apply::<T, V, 1>(w, st),
            2 => apply::<T, V, 2>(w, st),
            3 | 4 => apply::<T, V, 4>(w, st),
            _ => apply::<T, V, 8>(w, st),
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod compiled {
    //! [`apply_ch`] compiled for each instruction set.
    use super::{apply_ch, Step, Window};
    use crate::linalg::band::sb2st::lanes::x86::{Avx2F32, Avx2F64, Avx512F32, Avx512F64};

    macro_rules! entry {
        ($name:ident, $feature:literal, $t:ty, $v:ty) => {
            /// # Safety
            /// The CPU runs the instruction set; the rest as `apply`.
            #[target_feature(enable = $feature)]
            pub(super) unsafe fn $name(ch: usize, w: Window<$t>, st: Step<'_, $t>) {
                // SAFETY: the caller's contract.
                unsafe { apply_ch::<$t, $v>(ch, w, st) }
            }
        };
    }
    entry!(avx512_f64, "avx512f", f64, Avx512F64);
    entry!(avx512_f32, "avx512f", f32, Avx512F32);
    entry!(avx2_f64, "avx2,fma", f64, Avx2F64);
    entry!(avx2_f32, "avx2,fma", f32, Avx2F32);
}

/// Applies the reflector `(tau, v)` of the chase step with geometry
/// `(r0, len, ce, below)` (see `TaskGeom`) to `band` (steps 2-4 of the
/// step), on `isa`'s kernel or the portable one (`None`), all with the same
/// bits. Returns `false`, doing nothing, when a block column is longer than
/// 8 vectors of 64 bytes (`b > 64` in f64, `b > 128` in f32) or no longer
/// than half of one (`b <= 4` in f64, `b <= 8` in f32); the caller's loops
/// do those.
///
/// Panics unless the three blocks lie in `band`'s window and storage: the
/// left block (rows `r0..r0 + len`, columns `ce + 1..r0`), the diagonal
/// block (rows and columns `r0..r0 + len`) and the block below (rows
/// `r0 + len..r0 + len + below`, columns `r0..r0 + len`).
pub(super) fn apply_reflector<T: Scalar>(
    isa: Option<Isa>,
    band: &mut BandMut<'_, T>,
    (r0, len, ce, below): (usize, usize, usize, usize),
    v: &[T],
    tau: T,
) -> bool {
    let l = 64 / std::mem::size_of::<T>();
    let ch = len.max(below).div_ceil(l);
    if ch > MAX_CH || 2 * len.max(below) <= l {
        // Too wide for the registers, or so narrow that half the lanes or
        // more would be masked off (n = 1000, one thread, against the loops:
        // f64 b = 4 0.026 / 0.020 s, b = 8 0.009 / 0.015; f32 b = 8 0.022 /
        // 0.013, b = 12 0.007 / 0.016).
        return false;
    }
    assert!(v.len() == len && ce < r0, "apply_reflector: v or geometry");
    band.check_block(r0..r0 + len, ce + 1..r0);
    band.check_block(r0..r0 + len, r0..r0 + len);
    band.check_block(r0 + len..r0 + len + below, r0..r0 + len);
    let w = Window {
        base: band.col_ptr(ce),
        ldab: band.ldab(),
        ce,
    };
    let st = Step {
        r0,
        len,
        below,
        v,
        tau,
    };
    let f64_ = TypeId::of::<T>() == TypeId::of::<f64>();
    #[cfg(target_arch = "x86_64")]
    if let Some(isa) = isa.filter(|i| i.runs()) {
        // Reinterprets `w` and `st` as the concrete type `T` is (checked).
        macro_rules! call {
            ($f:ident, $t:ty) => {{
                let w = Window {
                    base: w.base as *mut $t,
                    ldab: w.ldab,
                    ce: w.ce,
                };
                // SAFETY: `T` is `$t` (TypeId above), so the slice and the
                // value keep their layout.
                let st = unsafe {
                    Step {
                        r0,
                        len,
                        below,
                        v: std::slice::from_raw_parts(v.as_ptr() as *const $t, len),
                        tau: *(&tau as *const T as *const $t),
                    }
                };
                // SAFETY: the CPU runs `isa` (filtered); the blocks lie in
                // the band's window and storage (checked above); `ch <=
                // MAX_CH`.
                unsafe { compiled::$f(ch, w, st) }
            }};
        }
        match (isa, f64_) {
            (Isa::Avx512, true) => call!(avx512_f64, f64),
            (Isa::Avx512, false) => call!(avx512_f32, f32),
            (Isa::Avx2, true) => call!(avx2_f64, f64),
            (Isa::Avx2, false) => call!(avx2_f32, f32),
        }
        return true;
    }
    let _ = isa;
    // SAFETY: the portable lanes need no instruction set; the blocks are
    // checked above; `ch <= MAX_CH`.
    unsafe {
        if f64_ {
            apply_ch::<T, Portable<T, 8>>(ch, w, st)
        } else {
            apply_ch::<T, Portable<T, 16>>(ch, w, st)
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gallery::Rng;
    use crate::linalg::band::sb2st::{steps, task_geom};
    use crate::matrix::SymBand;

    fn bits<T: Scalar>(x: &[T]) -> Vec<u64> {
        x.iter().map(|v| v.f64().to_bits()).collect()
    }

    /// A random band of half-bandwidth `b` with random entries in the bulge
    /// rows too (every entry a step may touch), and a reflector for T(s, m).
    fn case<T: Scalar>(n: usize, b: usize, rng: &mut Rng) -> SymBand<T> {
        let mut band = SymBand::<T>::zeros(n, b);
        for x in band.as_mut_slice() {
            *x = T::of(rng.uniform() * 2.0 - 1.0);
        }
        band
    }

    /// Every kernel gives the bits of the portable one, on every step of a
    /// few geometries (partial vectors, the bottom of the band, one and
    /// several vectors per column).
    fn same_bits_as_portable<T: Scalar>() {
        let Some(isa) = Isa::detect() else { return };
        let mut rng = Rng::new(7);
        for (n, b) in [(40, 5), (70, 9), (90, 16), (150, 31), (200, 33), (300, 64)] {
            let band = case::<T>(n, b, &mut rng);
            for s in [0, 1, n / 3] {
                for m in 0..steps(n, b, s) {
                    let g = task_geom(n, b, s, m);
                    let v: Vec<T> = (0..g.len).map(|_| T::of(rng.uniform() - 0.5)).collect();
                    let tau = T::of(1.3);
                    let geom = (g.r0, g.len, g.ce, g.below);
                    let (mut a, mut p) = (band.clone(), band.clone());
                    let did = apply_reflector(Some(isa), &mut a.as_band_mut(), geom, &v, tau);
                    let did_p = apply_reflector(None, &mut p.as_band_mut(), geom, &v, tau);
                    assert_eq!(did, did_p);
                    assert_eq!(
                        bits(a.as_slice()),
                        bits(p.as_slice()),
                        "{isa:?} against portable, {} n {n} b {b} T({s}, {m})",
                        T::NAME
                    );
                    if did {
                        assert_ne!(bits(a.as_slice()), bits(band.as_slice()));
                    }
                }
            }
        }
    }

    #[test]
    fn kernels_match_portable_f64() {
        same_bits_as_portable::<f64>();
    }

    #[test]
    fn kernels_match_portable_f32() {
        same_bits_as_portable::<f32>();
    }

    /// Only the three blocks change: the entries of the window outside them
    /// (the annihilated column, the band's other columns) keep their bits.
    #[test]
    fn touches_only_its_blocks() {
        let mut rng = Rng::new(11);
        let (n, b) = (120, 24);
        let band = case::<f64>(n, b, &mut rng);
        let g = task_geom(n, b, 5, 1);
        let v: Vec<f64> = (0..g.len).map(|_| rng.uniform() - 0.5).collect();
        for isa in [None, Isa::detect()] {
            let mut a = band.clone();
            assert!(apply_reflector(
                isa,
                &mut a.as_band_mut(),
                (g.r0, g.len, g.ce, g.below),
                &v,
                0.7
            ));
            for c in 0..n {
                for r in c..(c + a.ldab()).min(n) {
                    let inside = (g.r0..g.r0 + g.len).contains(&r)
                        && (g.ce + 1..g.r0 + g.len).contains(&c)
                        || (g.r0 + g.len..g.r0 + g.len + g.below).contains(&r)
                            && (g.r0..g.r0 + g.len).contains(&c);
                    if !inside {
                        assert_eq!(
                            a.get(r, c).to_bits(),
                            band.get(r, c).to_bits(),
                            "({r}, {c}) changed"
                        );
                    }
                }
            }
        }
    }
    /// The three blocks hold those of `H A H` formed densely (`H = I - tau v
    /// v^T` on rows `r0..r0 + len`), for one and several vectors per column.
    #[test]
    fn blocks_match_dense_two_sided_product() {
        let mut rng = Rng::new(3);
        for (n, b) in [(40usize, 8usize), (70, 16), (100, 32), (32, 32)] {
            let band = case::<f64>(n, b, &mut rng);
            for s in 0..3 {
                for m in 0..steps(n, b, s) {
                    let g = task_geom(n, b, s, m);
                    let v: Vec<f64> = (0..g.len)
                        .map(|i| if i == 0 { 1.0 } else { rng.uniform() - 0.5 })
                        .collect();
                    let mut a = band.clone();
                    let geom = (g.r0, g.len, g.ce, g.below);
                    if !apply_reflector(Isa::detect(), &mut a.as_band_mut(), geom, &v, 0.9) {
                        continue;
                    }
                    let d = band.to_dense();
                    let mut h = faer::Mat::<f64>::identity(n, n);
                    for i in 0..g.len {
                        for k in 0..g.len {
                            h[(g.r0 + i, g.r0 + k)] -= 0.9 * v[i] * v[k];
                        }
                    }
                    let want = &h * &d * &h;
                    let mut worst: f64 = 0.0;
                    for (r, c) in (0..n).flat_map(|c| (c..n).map(move |r| (r, c))) {
                        let inside = (g.r0..g.r0 + g.len).contains(&r)
                            && (g.ce + 1..g.r0 + g.len).contains(&c)
                            || (g.r0 + g.len..g.r0 + g.len + g.below).contains(&r)
                                && (g.r0..g.r0 + g.len).contains(&c);
                        if inside {
                            worst = worst.max((a.get(r, c) - want[(r, c)]).abs());
                        }
                    }
                    assert!(worst < 1e-12, "n {n} b {b} T({s},{m}) {g:?}: {worst}");
                }
            }
        }
    }
}
