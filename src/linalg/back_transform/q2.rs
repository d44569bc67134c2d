//! Back-transformation of bulge chasing: applying `Q2` (`DESIGN.md` §4.1 step 4,
//! `research/seed-tridiag.md` §5.1, §5.3).
//!
//! # Convention
//!
//! Task T(s, m) of [`crate::linalg::sb2st`] is the similarity `A <- H A H` with
//! `H(s, m) = I - tau v v^T` acting on rows `R(s, m) = [s + 1 + m b, + L)`. With
//! the tasks in sequential (sweep-major) order,
//!
//! ```text
//! Q2 = H(0,0) H(0,1) ... H(0,M_0-1) H(1,0) ... H(n-3, M_{n-3}-1),   T = Q2^T B Q2,
//! ```
//!
//! so `B = Q2 T Q2^T` and the eigenvectors of `B` are `Q2 Z` for those `Z` of
//! `T`. [`apply_q2_unblocked`] computes `Z := Q2 Z` (last reflector first);
//! [`apply_q2t_unblocked`] computes `Z := Q2^T Z`.
//!
//! # Blocked version
//!
//! Sweeps are grouped `nb` at a time; the reflectors of one group at one step
//! `m`, `H(s0, m) H(s0+1, m) ... H(s1-1, m)`, form a compact-WY block
//! `I - V T V^T` (LAPACK `dlarft`, forward, columnwise): `V` is a parallelogram
//! of `b + nb - 1` rows (column `i` is sweep `s0 + i`, shifted down `i` rows).
//! Inside a group, `H(s, m)` and `H(s', m')` with `s < s'`, `m < m'` act on
//! disjoint rows (they are at least `b + 1` rows apart), so
//!
//! ```text
//! Q2 = prod_{groups j ascending} prod_{m descending} Block(j, m),
//! ```
//!
//! and `Z := Q2 Z` applies the blocks for groups descending, steps ascending
//! ([`Q2Plan::blocks`] is that order). Each block costs three GEMMs
//! (`W = V^T Z`, `W = T W`, `Z -= V W`, run on `Z^T` as `W = Y V`, `W T^T`,
//! `Y -= W V^T`, see [`apply_q2_blocks`]) over any set of columns of `Z`, so
//! column blocks of `Z` are independent; blocks touching disjoint rows commute
//! exactly ([`Q2Plan::row_deps`] gives the ordering a finer task graph needs).

use crate::linalg::sb2st::{num_sweeps, steps, task_geom, Reflectors};
use crate::Scalar;
use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{matmul as tri_matmul, BlockStructure};
use faer::prelude::*;
use faer::{Accum, Mat, MatMut, MatRef};
use std::ops::Range;
use BlockStructure::Rectangular as Rect;

/// The contiguous storage of column `j` of `z` (faer matrices are column-major).
#[inline]
fn col_slice<'a, T>(z: MatMut<'a, T>, j: usize) -> &'a mut [T] {
    z.col_mut(j)
        .try_as_col_major_mut()
        .expect("Z must have unit row stride")
        .as_slice_mut()
}

/// `Z[R, :] := H Z[R, :]` for the reflector of T(s, m) (LAPACK `dlarfx('Left')`).
fn apply_one<T: Scalar>(refl: &impl Reflectors<T>, s: usize, m: usize, mut z: MatMut<'_, T>) {
    let slot = refl.slot(s, m);
    let tau = slot[0];
    if tau == T::zero() {
        return;
    }
    let r0 = task_geom(refl.n(), refl.b(), s, m).r0;
    let tail = &slot[1..];
    for j in 0..z.ncols() {
        let col = &mut col_slice(z.rb_mut(), j)[r0..r0 + slot.len()];
        let (c0, rest) = col.split_first_mut().expect("L >= 2");
        let mut w = *c0;
        for (&x, &v) in rest.iter().zip(tail) {
            w += x * v;
        }
        let t = tau * w;
        *c0 -= t;
        for (x, &v) in rest.iter_mut().zip(tail) {
            *x -= t * v;
        }
    }
}

fn check_shape<T: Scalar>(refl: &impl Reflectors<T>, z: &MatMut<'_, T>) {
    assert_eq!(z.nrows(), refl.n(), "Z must have n = {} rows", refl.n());
}

/// `Z := Q2 Z`, one reflector at a time in reverse sequential order (the simple
/// reference for [`apply_q2_blocked`]). `z` is `n x k`, any `k`.
pub fn apply_q2_unblocked<T: Scalar>(refl: &impl Reflectors<T>, mut z: MatMut<'_, T>) {
    check_shape(refl, &z);
    let (n, b) = (refl.n(), refl.b());
    for s in (0..num_sweeps(n)).rev() {
        for m in (0..steps(n, b, s)).rev() {
            apply_one(refl, s, m, z.rb_mut());
        }
    }
}

/// `Z := Q2^T Z`, one reflector at a time in sequential order.
pub fn apply_q2t_unblocked<T: Scalar>(refl: &impl Reflectors<T>, mut z: MatMut<'_, T>) {
    check_shape(refl, &z);
    let (n, b) = (refl.n(), refl.b());
    for s in 0..num_sweeps(n) {
        for m in 0..steps(n, b, s) {
            apply_one(refl, s, m, z.rb_mut());
        }
    }
}

/// One compact-WY block of `Q2`: the reflectors of sweeps `sweeps` at step `step`
/// (only sweeps that have that step), acting on rows `rows`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Q2Block {
    /// Sweeps whose reflector at `step` is in the block (column `i` of `V` is
    /// sweep `sweeps.start + i`).
    pub sweeps: Range<usize>,
    /// The step index `m` shared by the block's reflectors.
    pub step: usize,
    /// Rows of `Z` the block reads and writes.
    pub rows: Range<usize>,
}

/// The blocks of `Q2` in application order for `Z := Q2 Z`.
#[derive(Clone, Debug)]
pub struct Q2Plan {
    n: usize,
    b: usize,
    nb: usize,
    blocks: Vec<Q2Block>,
}

impl Q2Plan {
    /// Groups of `nb` consecutive sweeps, for an order-`n` band of
    /// half-bandwidth `b`.
    pub fn new(n: usize, b: usize, nb: usize) -> Self {
        assert!(b >= 1 && nb >= 1, "b and nb must be >= 1");
        let ns = num_sweeps(n);
        let mut blocks = Vec::new();
        for g in (0..ns.div_ceil(nb)).rev() {
            let s0 = g * nb;
            let s1 = (s0 + nb).min(ns);
            // M_s is non-increasing in s: the group's first sweep has the most steps.
            for m in 0..steps(n, b, s0) {
                let last = (s0..s1)
                    .take_while(|&s| m < steps(n, b, s))
                    .last()
                    .expect("s0 has step m");
                let g_last = task_geom(n, b, last, m);
                let rows = task_geom(n, b, s0, m).r0..g_last.r0 + g_last.len;
                blocks.push(Q2Block {
                    sweeps: s0..last + 1,
                    step: m,
                    rows,
                });
            }
        }
        Q2Plan { n, b, nb, blocks }
    }

    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Half-bandwidth of the band the reflectors came from.
    pub fn b(&self) -> usize {
        self.b
    }

    /// Sweeps per block.
    pub fn nb(&self) -> usize {
        self.nb
    }

    /// The blocks, in the order `Z := Q2 Z` applies them.
    pub fn blocks(&self) -> &[Q2Block] {
        &self.blocks
    }

    /// Rows of the largest `V`, `b + nb - 1` (or less for small `n`).
    pub fn max_rows(&self) -> usize {
        self.blocks
            .iter()
            .map(|bl| bl.rows.len())
            .max()
            .unwrap_or(0)
    }

    /// For each block (by index into [`Q2Plan::blocks`]), the earlier blocks it
    /// must follow: the last earlier block touching each of its rows. Any order
    /// of the blocks consistent with these edges gives bitwise the same `Q2 Z`
    /// (blocks on disjoint rows touch disjoint data), per column block of `Z`.
    pub fn row_deps(&self) -> Vec<Vec<usize>> {
        let mut last: Vec<Option<usize>> = vec![None; self.n];
        let mut deps = Vec::with_capacity(self.blocks.len());
        for (i, bl) in self.blocks.iter().enumerate() {
            let mut d: Vec<usize> = bl.rows.clone().filter_map(|r| last[r]).collect();
            d.sort_unstable();
            d.dedup();
            deps.push(d);
            last[bl.rows.clone()].iter_mut().for_each(|x| *x = Some(i));
        }
        deps
    }
}

/// Builds `V` (`rows x k`, the parallelogram with unit "diagonal", zeros
/// elsewhere) and the upper-triangular `T` (`k x k`) of `block` so that
/// `H(s0, m) ... H(s1-1, m) = I - V T V^T` (LAPACK `dlarft`, forward, columnwise).
/// `v` and `t` must be at least that large; only their leading parts are used.
pub fn block_factors<T: Scalar>(
    refl: &impl Reflectors<T>,
    block: &Q2Block,
    mut v: MatMut<'_, T>,
    mut t: MatMut<'_, T>,
) {
    let k = block.sweeps.len();
    let rows = block.rows.len();
    let r_first = block.rows.start;
    let mut v = v.rb_mut().submatrix_mut(0, 0, rows, k);
    let mut t = t.rb_mut().submatrix_mut(0, 0, k, k);
    let mut taus = Vec::with_capacity(k);
    let mut spans = Vec::with_capacity(k);
    for (i, s) in block.sweeps.clone().enumerate() {
        let slot = refl.slot(s, block.step);
        let off = task_geom(refl.n(), refl.b(), s, block.step).r0 - r_first;
        let col = col_slice(v.rb_mut(), i);
        col.fill(T::zero());
        col[off] = T::one();
        col[off + 1..off + slot.len()].copy_from_slice(&slot[1..]);
        taus.push(slot[0]);
        spans.push(off..off + slot.len());
    }
    // T(i, i) = tau_i; T(0..i, i) = -tau_i T(0..i, 0..i) V(:, 0..i)^T v_i.
    let mut x = vec![T::zero(); k];
    for i in 0..k {
        let tau = taus[i];
        for j in 0..i {
            t[(j, i)] = T::zero();
        }
        for j in i + 1..k {
            t[(j, i)] = T::zero();
        }
        t[(i, i)] = tau;
        if tau == T::zero() || i == 0 {
            continue;
        }
        let vi = v.rb().col(i).try_as_col_major().unwrap().as_slice();
        for j in 0..i {
            let vj = v.rb().col(j).try_as_col_major().unwrap().as_slice();
            // Overlap of the nonzero spans of columns j and i.
            let lo = spans[i].start.max(spans[j].start);
            let hi = spans[i].end.min(spans[j].end);
            let mut acc = T::zero();
            for r in lo..hi.max(lo) {
                acc += vj[r] * vi[r];
            }
            x[j] = -tau * acc;
        }
        for j in 0..i {
            let mut acc = T::zero();
            for l in j..i {
                acc += t[(j, l)] * x[l];
            }
            t[(j, i)] = acc;
        }
    }
}

/// Workspace for [`apply_q2t_right`]: one block's `V` and `T`, and `W`, `W2`
/// (`kc x k`).
struct Work<T> {
    v: Mat<T>,
    t: Mat<T>,
    w: Mat<T>,
    w2: Mat<T>,
}

impl<T: Scalar> Work<T> {
    fn new(plan: &Q2Plan, nrows: usize) -> Self {
        let k = plan.nb;
        Work {
            v: Mat::zeros(plan.max_rows(), k),
            t: Mat::zeros(k, k),
            w: Mat::zeros(nrows, k),
            w2: Mat::zeros(nrows, k),
        }
    }
}

/// `Y_R := Y_R (I - V T V^T)^T = Y_R - (Y_R V) T^T V^T` for the block's columns
/// `R` of `y` (`y = Z^T`, so this is `Z_R := Block Z_R`).
fn apply_block_right<T: Scalar>(
    refl: &impl Reflectors<T>,
    block: &Q2Block,
    work: &mut Work<T>,
    y: MatMut<'_, T>,
) {
    let k = block.sweeps.len();
    let rows = block.rows.len();
    let kc = y.nrows();
    block_factors(refl, block, work.v.as_mut(), work.t.as_mut());
    let v = work.v.as_ref().submatrix(0, 0, rows, k);
    let t = work.t.as_ref().submatrix(0, 0, k, k);
    let mut w = work.w.as_mut().submatrix_mut(0, 0, kc, k);
    let mut w2 = work.w2.as_mut().submatrix_mut(0, 0, kc, k);
    let mut yr = y.subcols_mut(block.rows.start, rows);
    let b = refl.b();
    // Column i of V holds rows [i, i + b) when the block is complete
    // (rows = b + k - 1): a parallelogram, half zeros when k is near b. Cut it
    // into column panels of width at most b - 1, so the zeros a panel's GEMMs
    // multiply are confined to two small triangles. Short blocks at the bottom
    // of the matrix use the dense parallelogram.
    let structured = b >= 2 && rows == b + k - 1;
    let panels = || {
        (0..k)
            .step_by((b - 1).max(1))
            .map(move |j| (j, (b - 1).min(k - j)))
    };
    // W = Y_R V.
    if structured {
        for (j, kj) in panels() {
            let vp = v.submatrix(j, j, b + kj - 1, kj);
            let yp = yr.rb().subcols(j, b + kj - 1);
            panel_y_v(yp, vp, w.rb_mut().subcols_mut(j, kj), b);
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
        for (j, kj) in panels() {
            let vp = v.submatrix(j, j, b + kj - 1, kj);
            panel_y_minus_w_vt(
                w2.rb().subcols(j, kj),
                vp,
                yr.rb_mut().subcols_mut(j, b + kj - 1),
                b,
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

/// `w := yp vp` for a parallelogram panel `vp` (`(b + kj - 1) x kj`, column i
/// nonzero in rows `[i, i + b)`, `kj <= b - 1`, zeros stored explicitly): rows
/// `0..b-1` of `vp` as one GEMM, then the last `kj` rows (an upper triangle) as
/// a small one. Plain GEMMs on the stored zeros of the two small triangles beat
/// faer's recursive triangular products at these sizes.
fn panel_y_v<T: Scalar>(yp: MatRef<'_, T>, vp: MatRef<'_, T>, mut w: MatMut<'_, T>, b: usize) {
    let kj = vp.ncols();
    matmul(
        w.rb_mut(),
        Accum::Replace,
        yp.subcols(0, b - 1),
        vp.subrows(0, b - 1),
        T::one(),
        Par::Seq,
    );
    matmul(
        w.rb_mut(),
        Accum::Add,
        yp.subcols(b - 1, kj),
        vp.subrows(b - 1, kj),
        T::one(),
        Par::Seq,
    );
}

/// `yp -= w2 vp^T` for a parallelogram panel (see [`panel_y_v`]).
fn panel_y_minus_w_vt<T: Scalar>(
    w2: MatRef<'_, T>,
    vp: MatRef<'_, T>,
    mut yp: MatMut<'_, T>,
    b: usize,
) {
    let kj = vp.ncols();
    matmul(
        yp.rb_mut().subcols_mut(0, b - 1),
        Accum::Add,
        w2,
        vp.subrows(0, b - 1).transpose(),
        -T::one(),
        Par::Seq,
    );
    matmul(
        yp.rb_mut().subcols_mut(b - 1, kj),
        Accum::Add,
        w2,
        vp.subrows(b - 1, kj).transpose(),
        -T::one(),
        Par::Seq,
    );
}

/// `Y := Y Q2^T` restricted to the blocks `range` of `plan` (in that order),
/// for `y = Z^T` (`kc x n`): the same as `Z := Q2 Z` on those blocks, in the
/// layout where the rows of `Z` a block touches are contiguous columns of `Y`.
/// This is what [`apply_q2_blocks`] runs on its transposed copy; callers that
/// keep `Z^T` can use it directly. Rows of `Y` are independent; consecutive
/// ranges must run in order (or follow [`Q2Plan::row_deps`]).
pub fn apply_q2t_right<T: Scalar>(
    refl: &impl Reflectors<T>,
    plan: &Q2Plan,
    range: Range<usize>,
    mut y: MatMut<'_, T>,
) {
    assert_eq!(y.ncols(), refl.n(), "Y must have n = {} columns", refl.n());
    assert!(
        plan.n == refl.n() && plan.b == refl.b(),
        "plan is for another (n, b)"
    );
    if range.is_empty() || y.nrows() == 0 {
        return;
    }
    let mut work = Work::new(plan, y.nrows());
    for block in &plan.blocks[range] {
        apply_block_right(refl, block, &mut work, y.rb_mut());
    }
}

/// Applies the blocks `range` of `plan` (indices into [`Q2Plan::blocks`], in
/// that order) to `z`, an `n x kc` column block of `Z`: the unit of work of a
/// back-transform task. Column blocks are independent; consecutive ranges on
/// one column block must run in order (or follow [`Q2Plan::row_deps`]).
///
/// Works on a transposed copy (`kc x n`, see [`apply_q2t_right`]): in `Z`, the
/// `b + nb - 1` rows a block touches are short pieces of `kc` far-apart
/// columns; in `Z^T` they are contiguous columns, which the GEMMs stream well
/// (measured ~20% faster at n = 4096, b = 64, kc = 512). The copy costs
/// `n kc` values of workspace and two passes over `z`.
pub fn apply_q2_blocks<T: Scalar>(
    refl: &impl Reflectors<T>,
    plan: &Q2Plan,
    range: Range<usize>,
    mut z: MatMut<'_, T>,
) {
    check_shape(refl, &z);
    let (n, kc) = (z.nrows(), z.ncols());
    if range.is_empty() || kc == 0 {
        return;
    }
    let ld = transposed_ld(kc);
    let mut buf = vec![T::zero(); ld * n];
    let mut y = MatMut::from_column_major_slice_with_stride_mut(&mut buf, kc, n, ld);
    y.copy_from(z.rb().transpose());
    apply_q2t_right(refl, plan, range, y.rb_mut());
    z.copy_from(y.rb().transpose());
}

/// Column stride of the transposed copy of `kc` columns: a multiple of 8
/// values, at least `kc + 8` and not a multiple of 256 values, so the stride is
/// never a multiple of 4 KiB (columns a power of two apart would map to the
/// same cache sets).
fn transposed_ld(kc: usize) -> usize {
    let ld = kc.next_multiple_of(8) + 8;
    if ld.is_multiple_of(256) {
        ld + 8
    } else {
        ld
    }
}

/// Words of workspace [`apply_q2_blocks`] allocates for an `n x kc` column
/// block, half-bandwidth `b` and blocks of `nb` sweeps: the transposed copy,
/// one block's `V` and `T`, and `W`, `W2` (for memory checks before a run).
pub fn workspace_len(n: usize, b: usize, nb: usize, kc: usize) -> usize {
    transposed_ld(kc) * n + (b + nb - 1) * nb + nb * nb + 2 * kc * nb
}

/// `Z := Q2 Z` with compact-WY blocks of `plan` (see the module docs).
pub fn apply_q2_blocked<T: Scalar>(refl: &impl Reflectors<T>, plan: &Q2Plan, z: MatMut<'_, T>) {
    apply_q2_blocks(refl, plan, 0..plan.blocks.len(), z);
}

#[cfg(test)]
mod tests;
