//! The engine shared by the `Q2` back-transformations of the EVD
//! ([`super::q2`], sb2st reflectors) and of the SVD
//! ([`crate::linalg::band::gb2bd::reflectors`], one side of the gb2bd reflectors):
//! `Z := B_last ... B_1 B_0 Z` for a chain of parallelogram compact-WY blocks
//! (the "diamond"/parallelogram blocks of Haidar, Ltaief and Dongarra, SC 2011,
//! and MAGMA's `bulge_back`).
//!
//! # Geometry ([`WyChain`])
//!
//! Both chases produce, per pass, reflectors `H(r, s)` (sweep `r`, step `s`)
//! whose first row is `r + c + s B` (`B` the step stride: the bandwidth `b`
//! for sb2st, the pass's `b` for gb2bd) and whose length is at most
//! `L <= B`. Grouping `G` consecutive sweeps `[g G, g G + G)` at one step
//! gives block `(g, s)`, `I - V T V^T` with a parallelogram `V` of at most
//! `G + L - 1` rows (column `i` starts `i` rows down), applied in the
//! canonical order: groups descending, steps ascending.
//!
//! # Wavefront order ([`wavefront_order`])
//!
//! Applying the canonical order sweeps every group over all of `Z`, so a
//! column block of `Z` larger than the cache streams from memory once per
//! group. Block `(g, s)` starts at row `g G + s B + c`; let `tau = s - g`
//! (plus a constant). Inside one group the canonical order is `s` ascending,
//! which is `tau` ascending. A block `(g + j, s')` of a later group (`j >= 1`,
//! canonical first) can overlap `(g, s)` only if `s' < s + j`: for
//! `s' >= s + j` their starts differ by `j G + (s' - s) B >= G + B >
//! G + L - 1` rows, more than a block spans. So every overlapping pair keeps
//! its canonical order when blocks are sorted by `tau = s + (g_top - g)`
//! ascending, and blocks with equal `tau` (`s' = s + j`) are disjoint. Inside a window of `W` consecutive
//! groups, the blocks of one `tau` lie within about `W (G + B) + L` rows,
//! moving down by `B` rows per `tau`: that row window of the column block
//! stays in cache while every group of the window passes over it (two-level
//! blocking, as MAGMA/ELPA apply several sweeps to a cached panel). Windows
//! run in canonical (descending) order. Blocks on disjoint rows touch disjoint
//! data, so the result is bitwise that of the canonical order.
//!
//! # Kernel
//!
//! Each block is three GEMMs on the transposed column block `Y = Z^T` (the
//! rows a block touches are then contiguous columns of `Y`): `W = Y_R V`,
//! `W2 = W T^T`, `Y_R -= W2 V^T`, with `V` cut into column panels of width
//! `L - 1` so that the stored zeros the GEMMs multiply are two small triangles
//! per panel. `V` and `T` of a block are built in a reused workspace (no
//! allocation per block): their `O(G^2 L)` flops are about `G / (8 k_c)` of the
//! block's GEMM flops on `k_c` columns. Two register-blocked kernels replace
//! the GEMMs where the CPU runs them: [`super::chain_fma`] on `Y` for short
//! reflectors, and [`super::chain_strip`] on `Z` itself, with no transposed
//! copy, for long ones ([`apply_chain`] chooses).

mod copies;
mod wavefront;

use copies::{aliased_stride, with_padded_in};
pub use copies::{transposed_ld, with_transposed, with_transposed_in};
pub use wavefront::{groups_per_window, wavefront_order, DEFAULT_WINDOW_BYTES};

use crate::Scalar;
use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{matmul as tri_matmul, BlockStructure};
use faer::prelude::*;
use faer::{Accum, Mat, MatMut, MatRef};
use std::ops::Range;
use BlockStructure::Rectangular as Rect;

/// A chain of parallelogram compact-WY blocks (module docs, "Geometry").
pub trait WyChain<T> {
    /// Rows of `Z` (the order of the matrix).
    fn n(&self) -> usize;
    /// Full reflector length `L` (`>= 1`): column `i` of a complete block is
    /// nonzero in rows `[i, i + L)` of the block.
    fn full_len(&self) -> usize;
    /// Number of blocks.
    fn num_blocks(&self) -> usize;
    /// Rows of `Z` block `j` reads and writes.
    fn rows(&self, j: usize) -> Range<usize>;
    /// Reflectors in block `j` (columns of its `V`).
    fn width(&self, j: usize) -> usize;
    /// First row of `Z` (absolute) and `[tau, v_1, ..]` (`v_0 = 1` implicit)
    /// of reflector `i` of block `j`; reflector `i` starts `i` rows below
    /// reflector 0.
    fn reflector(&self, j: usize, i: usize) -> (usize, &[T]);
    /// `(group, step)` of block `j`, for [`wavefront_order`].
    fn coord(&self, j: usize) -> (usize, usize);
}

/// Builds `V` (`rows x k`, the parallelogram with unit "diagonal", zeros
/// elsewhere) and the upper-triangular `T` (`k x k`) of block `j` so that the
/// block is `H_0 H_1 ... H_{k-1} = I - V T V^T` (LAPACK `dlarft`, forward,
/// columnwise). `v` and `t` must be at least that large; only their leading
/// parts are written.
pub fn block_factors<T: Scalar, C: WyChain<T> + ?Sized>(
    chain: &C,
    j: usize,
    mut v: MatMut<'_, T>,
    mut t: MatMut<'_, T>,
) {
    let k = chain.width(j);
    let rows = chain.rows(j);
    let mut v = v.rb_mut().submatrix_mut(0, 0, rows.len(), k);
    let mut t = t.rb_mut().submatrix_mut(0, 0, k, k);
    let mut taus = [T::zero(); 64];
    let mut taus_vec;
    let taus: &mut [T] = if k <= 64 {
        &mut taus[..k]
    } else {
        taus_vec = vec![T::zero(); k];
        &mut taus_vec
    };
    for (i, tau) in taus.iter_mut().enumerate() {
        let (r0, slot) = chain.reflector(j, i);
        let off = r0 - rows.start;
        let col = col_slice(v.rb_mut(), i);
        col.fill(T::zero());
        col[off] = T::one();
        col[off + 1..off + slot.len()].copy_from_slice(&slot[1..]);
        *tau = slot[0];
    }
    // T(i, i) = tau_i; T(0..i, i) = T(0..i, 0..i) x with x_j = -tau_i v_j^T v_i.
    // The Gram matrix V^T V is one small GEMM into `t` (its strict upper part
    // is all the recurrence reads; the zeros of the parallelogram add nothing
    // exactly), which runs at a multiple of the per-pair dot products'
    // speed: the factors were about a tenth of the in-place kernel's time.
    matmul(
        t.rb_mut(),
        Accum::Replace,
        v.rb().transpose(),
        v.rb(),
        T::one(),
        Par::Seq,
    );
    t_from_gram(t, taus);
}

simd_dispatch! {
    /// The triangular factor `T` of [`block_factors`] from the Gram matrix
    /// `V^T V` in the strict upper part of `t` (`k x k`, `k = taus.len()`):
    /// `T(i, i) = tau_i`, `T(0..i, i) = T(0..i, 0..i) x` with `x_j = -tau_i
    /// v_j^T v_i` (LAPACK `dlarft`, forward, columnwise). Compiled for
    /// AVX-512 or AVX2 where the CPU has them.
    fn t_from_gram / t_from_gram_simd / t_from_gram_body (
        t: MatMut<'_, T>,
        taus: &[T]
    )
}

#[inline(always)]
fn t_from_gram_body<T: Scalar>(mut t: MatMut<'_, T>, taus: &[T]) {
    for (i, &tau) in taus.iter().enumerate() {
        let (left, right) = t.rb_mut().split_at_col_mut(i);
        let col = col_slice(right, 0);
        let (x, lower) = col.split_at_mut(i);
        lower.fill(T::zero());
        lower[0] = tau;
        if tau == T::zero() {
            x.fill(T::zero());
            continue;
        }
        for xj in x.iter_mut() {
            *xj = -tau * *xj;
        }
        // x := T(0..i, 0..i) x in place, a column of T at a time (BLAS
        // `dtrmv`, upper, columnwise): column l adds x_l T(0..l, l) to the
        // entries above it, then x_l := T(l, l) x_l. Entry jj thus sums
        // T(jj, l) x_l for l = jj, jj + 1, ... in that order, from zero, as
        // the row-by-row recurrence does (the same bits), but the inner
        // loop runs down a contiguous column.
        for (l, tl) in left.col_iter().enumerate() {
            let tl = tl.try_as_col_major().expect("unit row stride").as_slice();
            let xl = x[l];
            for (xj, &a) in x[..l].iter_mut().zip(&tl[..l]) {
                *xj += a * xl;
            }
            x[l] = T::zero() + tl[l] * xl;
        }
    }
}

/// The contiguous storage of column `j` of `z` (faer matrices are column-major).
#[inline]
fn col_slice<'a, T>(z: MatMut<'a, T>, j: usize) -> &'a mut [T] {
    z.col_mut(j)
        .try_as_col_major_mut()
        .expect("unit row stride")
        .as_slice_mut()
}

/// How [`apply_chain_t_with`] applies each block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKernel {
    /// In [`apply_chain_with`], [`BlockKernel::Strip`] where it runs and the
    /// reflectors are long (`L >= 32`); otherwise
    /// [`BlockKernel::Fma`] where it runs and the reflectors are short
    /// (`L <= 32`), else [`BlockKernel::Gemm`].
    Auto,
    /// Three GEMMs per block (faer), `V` cut into panels.
    Gemm,
    /// The register-blocked kernel of [`super::chain_fma`] (falls back to
    /// [`BlockKernel::Gemm`] where the CPU lacks AVX2/FMA).
    Fma,
    /// The in-place kernel of [`super::chain_strip`] on `Z` itself (no
    /// transposed copy; f64 or f32 with AVX-512F or AVX2, else as [`BlockKernel::Auto`]).
    /// Only [`apply_chain_with`] takes it; on a transposed `Y` it is
    /// [`BlockKernel::Auto`].
    Strip,
}

impl BlockKernel {
    /// Whether blocks with reflectors of length `l` take the FMA kernel.
    fn fma(self, l: usize) -> bool {
        match self {
            BlockKernel::Auto | BlockKernel::Strip => l <= 32 && super::chain_fma::available(),
            BlockKernel::Gemm => false,
            BlockKernel::Fma => super::chain_fma::available(),
        }
    }

    /// Whether blocks with reflectors of length `l` take the in-place kernel
    /// of [`super::chain_strip`] for `T`: where it runs, for long reflectors
    /// (`L >= 32`: the EVD's `b = 64`, the SVD's single pass with `b = 32`).
    /// Shorter ones keep the transposed FMA kernel. Measured in f64 (one
    /// thread, n = 2048, 16 sweeps per block, 512 columns, same run): `L = 17`
    /// FMA 24.5 against 21 GFLOP/s in place, `L = 32` 24.3 against 27.8. In
    /// f32 with `L = 32` (`svd --n 4096 --precision f32`, 2 threads, 16
    /// sweeps per block, five runs alternated) `q2u` took 3.1-3.8 busy
    /// seconds in place (median 3.4) against 2.9-4.6 (median 4.0); with 8
    /// sweeps per block it had been slower in place.
    fn strip<T: Scalar>(self, l: usize) -> bool {
        let long = l >= 32;
        match self {
            BlockKernel::Auto => long && super::chain_strip::available::<T>(),
            BlockKernel::Strip => super::chain_strip::available::<T>(),
            BlockKernel::Gemm | BlockKernel::Fma => false,
        }
    }
}

/// Reused workspace: one block's `V` and `T` (columns padded to a multiple of
/// 4 for the FMA kernel), and `W`, `W2` (`kc x k`).
struct Work<T> {
    v: Mat<T>,
    t: Mat<T>,
    w: Mat<T>,
    w2: Mat<T>,
    fma: bool,
    lanes: Vec<T>,
}

impl<T: Scalar> Work<T> {
    fn new<C: WyChain<T> + ?Sized>(chain: &C, kc: usize, kernel: BlockKernel) -> Self {
        let (mut rows, mut k) = (0, 0);
        for j in 0..chain.num_blocks() {
            rows = rows.max(chain.rows(j).len());
            k = k.max(chain.width(j));
        }
        let fma = kernel.fma(chain.full_len());
        let kp = k.next_multiple_of(4);
        let wk = if fma { 0 } else { k };
        Work {
            v: Mat::zeros(rows, kp),
            t: Mat::zeros(kp, kp),
            w: Mat::zeros(kc, wk),
            w2: Mat::zeros(kc, wk),
            fma,
            lanes: if fma {
                vec![T::zero(); kp * 16]
            } else {
                Vec::new()
            },
        }
    }
}

/// `Y_R := Y_R (I - V T V^T)^T = Y_R - (Y_R V) T^T V^T` for block `j` on the
/// columns `R` of `y` (`y = Z^T`, so this is `Z_R := Block Z_R`).
fn apply_block_t<T: Scalar, C: WyChain<T> + ?Sized>(
    chain: &C,
    j: usize,
    work: &mut Work<T>,
    y: MatMut<'_, T>,
) {
    let k = chain.width(j);
    let rows = chain.rows(j);
    let nr = rows.len();
    let kc = y.nrows();
    if k == 0 {
        return;
    }
    block_factors(chain, j, work.v.as_mut(), work.t.as_mut());
    if work.fma {
        let kp = k.next_multiple_of(4);
        // Zero padding: columns k..kp of V, and of T the columns k..kp and
        // rows k..kp (block_factors wrote the leading k x k only).
        work.v
            .as_mut()
            .submatrix_mut(0, k, nr, kp - k)
            .fill(T::zero());
        work.t
            .as_mut()
            .submatrix_mut(0, k, kp, kp - k)
            .fill(T::zero());
        work.t
            .as_mut()
            .submatrix_mut(k, 0, kp - k, k)
            .fill(T::zero());
        super::chain_fma::apply_block(
            work.v.as_ref().submatrix(0, 0, nr, kp),
            work.t.as_ref().submatrix(0, 0, kp, kp),
            chain.full_len(),
            y.subcols_mut(rows.start, nr),
            &mut work.lanes,
        );
        return;
    }
    let v = work.v.as_ref().submatrix(0, 0, nr, k);
    let t = work.t.as_ref().submatrix(0, 0, k, k);
    let mut w = work.w.as_mut().submatrix_mut(0, 0, kc, k);
    let mut w2 = work.w2.as_mut().submatrix_mut(0, 0, kc, k);
    let mut yr = y.subcols_mut(rows.start, nr);
    let l = chain.full_len();
    // Column i of V holds rows [i, i + L) when the block is complete
    // (rows = L + k - 1): a parallelogram, half zeros when k is near L. Cut it
    // into column panels of width at most L - 1, so the zeros a panel's GEMMs
    // multiply are confined to two small triangles. Short blocks at the bottom
    // of the matrix use the dense parallelogram.
    let structured = l >= 2 && nr == l + k - 1;
    let panels = || {
        (0..k)
            .step_by((l - 1).max(1))
            .map(move |p| (p, (l - 1).min(k - p)))
    };
    // W = Y_R V.
    if structured {
        for (p, kp) in panels() {
            let vp = v.submatrix(p, p, l + kp - 1, kp);
            let yp = yr.rb().subcols(p, l + kp - 1);
            panel_y_v(yp, vp, w.rb_mut().subcols_mut(p, kp), l);
        }
    } else {
        matmul(w.rb_mut(), Accum::Replace, yr.rb(), v, T::one(), Par::Seq);
    }
    // W2 = W T^T (T^T lower triangular).
    tri_matmul(
        w2.rb_mut(),
        Rect,
        Accum::Replace,
        w.rb(),
        Rect,
        t.transpose(),
        BlockStructure::TriangularLower,
        T::one(),
        Par::Seq,
    );
    // Y_R -= W2 V^T.
    if structured {
        for (p, kp) in panels() {
            let vp = v.submatrix(p, p, l + kp - 1, kp);
            panel_y_minus_w_vt(
                w2.rb().subcols(p, kp),
                vp,
                yr.rb_mut().subcols_mut(p, l + kp - 1),
                l,
            );
        }
    } else {
        matmul(
            yr.rb_mut(),
            Accum::Add,
            w2.rb(),
            v.transpose(),
            -T::one(),
            Par::Seq,
        );
    }
}

/// `w := yp vp` for a parallelogram panel `vp` (`(l + kp - 1) x kp`, column
/// `i` nonzero in rows `[i, i + l)`, `kp <= l - 1`, zeros stored explicitly):
/// rows `0..l-1` of `vp` as one GEMM, then the last `kp` rows (an upper
/// triangle) as a small one. Plain GEMMs on the stored zeros of the two small
/// triangles beat faer's recursive triangular products at these sizes.
fn panel_y_v<T: Scalar>(yp: MatRef<'_, T>, vp: MatRef<'_, T>, mut w: MatMut<'_, T>, l: usize) {
    let kp = vp.ncols();
    matmul(
        w.rb_mut(),
        Accum::Replace,
        yp.subcols(0, l - 1),
        vp.subrows(0, l - 1),
        T::one(),
        Par::Seq,
    );
    matmul(
        w.rb_mut(),
        Accum::Add,
        yp.subcols(l - 1, kp),
        vp.subrows(l - 1, kp),
        T::one(),
        Par::Seq,
    );
}

/// `yp -= w2 vp^T` for a parallelogram panel (see [`panel_y_v`]).
fn panel_y_minus_w_vt<T: Scalar>(
    w2: MatRef<'_, T>,
    vp: MatRef<'_, T>,
    mut yp: MatMut<'_, T>,
    l: usize,
) {
    let kp = vp.ncols();
    matmul(
        yp.rb_mut().subcols_mut(0, l - 1),
        Accum::Add,
        w2,
        vp.subrows(0, l - 1).transpose(),
        -T::one(),
        Par::Seq,
    );
    matmul(
        yp.rb_mut().subcols_mut(l - 1, kp),
        Accum::Add,
        w2,
        vp.subrows(l - 1, kp).transpose(),
        -T::one(),
        Par::Seq,
    );
}

/// `Y := Y B_{order[0]}^T B_{order[1]}^T ...` for `y = Z^T` (`kc x n`): the
/// same as `Z := ... B_{order[1]} B_{order[0]} Z` on the blocks `order`, in the
/// layout where the rows of `Z` a block touches are contiguous columns of
/// `Y`. Rows of `Y` are independent (any split of them gives bitwise the same
/// result).
pub fn apply_chain_t<T: Scalar, C: WyChain<T> + ?Sized>(
    chain: &C,
    order: &[usize],
    y: MatMut<'_, T>,
) {
    apply_chain_t_with(chain, order, BlockKernel::Auto, y);
}

/// [`apply_chain_t`] with a chosen [`BlockKernel`] (for benchmarks and
/// tests; both kernels agree to rounding).
pub fn apply_chain_t_with<T: Scalar, C: WyChain<T> + ?Sized>(
    chain: &C,
    order: &[usize],
    kernel: BlockKernel,
    mut y: MatMut<'_, T>,
) {
    assert_eq!(
        y.ncols(),
        chain.n(),
        "Y must have n = {} columns",
        chain.n()
    );
    if order.is_empty() || y.nrows() == 0 {
        return;
    }
    let mut work = Work::new(chain, y.nrows(), kernel);
    for &j in order {
        apply_block_t(chain, j, &mut work, y.rb_mut());
    }
}

/// `Z := ... B_{order[1]} B_{order[0]} Z` on an `n x kc` column block `z`:
/// with [`BlockKernel::Auto`], in place by [`super::chain_strip`] where it
/// runs for these reflectors (on a copy in `buf` with a padded column stride
/// when the columns of `z` start a multiple of 4 KiB apart, see
/// `aliased_stride`; the kernel's result does not depend on the stride),
/// else by [`apply_chain_t`] on a transposed copy in `buf`
/// ([`with_transposed_in`]). Columns of `Z` are independent (any split of
/// them gives bitwise the same result).
pub fn apply_chain<T: Scalar, C: WyChain<T> + ?Sized>(
    chain: &C,
    order: &[usize],
    z: MatMut<'_, T>,
    buf: &mut Vec<T>,
) {
    apply_chain_with(chain, order, BlockKernel::Auto, z, buf);
}

/// [`apply_chain`] with a chosen [`BlockKernel`] (for benchmarks and tests).
pub fn apply_chain_with<T: Scalar, C: WyChain<T> + ?Sized>(
    chain: &C,
    order: &[usize],
    kernel: BlockKernel,
    z: MatMut<'_, T>,
    buf: &mut Vec<T>,
) {
    assert_eq!(z.nrows(), chain.n(), "Z must have n = {} rows", chain.n());
    if order.is_empty() || z.ncols() == 0 {
        return;
    }
    if !runs_in_place(kernel, chain.full_len(), z.rb()) {
        with_transposed_in(z, buf, |y| apply_chain_t_with(chain, order, kernel, y));
        return;
    }
    if aliased_stride::<T>(z.rb()) {
        with_padded_in(z, buf, |zp| apply_in_place(chain, order, zp));
    } else {
        apply_in_place(chain, order, z);
    }
}

/// The blocks `order` applied to `z` in place by [`super::chain_strip`]
/// (which [`runs_in_place`] checked).
fn apply_in_place<T: Scalar, C: WyChain<T> + ?Sized>(
    chain: &C,
    order: &[usize],
    mut z: MatMut<'_, T>,
) {
    let (mut rows, mut k) = (0, 0);
    for j in 0..chain.num_blocks() {
        rows = rows.max(chain.rows(j).len());
        k = k.max(chain.width(j));
    }
    let (mut v, mut t) = (Mat::<T>::zeros(rows, k), Mat::<T>::zeros(k, k));
    let mut work = super::chain_strip::StripWork::<T>::default();
    let isa = super::chain_strip::Isa::detect().expect("`strip` checked that the kernel runs");
    for &j in order {
        let k = chain.width(j);
        if k == 0 {
            continue;
        }
        let rows = chain.rows(j);
        block_factors(chain, j, v.as_mut(), t.as_mut());
        super::chain_strip::apply_block(
            isa,
            v.as_ref().submatrix(0, 0, rows.len(), k),
            t.as_ref().submatrix(0, 0, k, k),
            chain.full_len(),
            rows,
            z.rb_mut(),
            &mut work,
        );
    }
}

/// Whether [`apply_chain_with`] applies blocks with reflectors of length `l`
/// to `z` in place (by [`super::chain_strip`]) rather than on a transposed
/// copy: the kernel runs on this CPU for `T`, `kernel` picks it for `l`, and
/// `z` has a unit row stride and a non-negative column stride (the kernel
/// addresses columns as `base + j * stride`).
pub fn runs_in_place<T: Scalar>(kernel: BlockKernel, l: usize, z: MatRef<'_, T>) -> bool {
    z.row_stride() == 1 && z.col_stride() >= 0 && kernel.strip::<T>(l)
}
