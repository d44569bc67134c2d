//! Back-transformation of bulge chasing: applying `Q2` (the eigenvectors are
//! `Q1 (Q2 Z)`, Wang et al., "Improving Tridiagonalization Performance on GPU
//! Architectures", PPoPP 2025, §4.3; the blocks of Haidar, Ltaief and Dongarra,
//! SC 2011).
//!
//! # Convention
//!
//! Task T(s, m) of [`crate::linalg::band::sb2st`] is the similarity `A <- H A H` with
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

use super::chain::{
    self, apply_chain_t, groups_per_window, transposed_ld, wavefront_order, WyChain,
};
use crate::linalg::band::sb2st::{num_sweeps, steps, task_geom, Reflectors};
use crate::Scalar;
use faer::reborrow::*;
use faer::MatMut;
use std::ops::Range;

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

    /// Bytes the block list of `Q2Plan::new(n, b, nb)` holds, without
    /// building it (one block per step of each group's first sweep).
    pub fn list_bytes(n: usize, b: usize, nb: usize) -> u64 {
        let blocks: u64 = (0..num_sweeps(n))
            .step_by(nb.max(1))
            .map(|s0| steps(n, b, s0) as u64)
            .sum();
        blocks.saturating_mul(std::mem::size_of::<Q2Block>() as u64)
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

    /// Number of sweep groups (`ceil(sweeps / nb)`).
    pub fn groups(&self) -> usize {
        num_sweeps(self.n).div_ceil(self.nb)
    }

    /// The sweeps of groups `groups`.
    pub fn group_sweeps(&self, groups: Range<usize>) -> Range<usize> {
        let ns = num_sweeps(self.n);
        (groups.start * self.nb).min(ns)..(groups.end * self.nb).min(ns)
    }

    /// The blocks of groups `groups` (contiguous in [`Q2Plan::blocks`]: the
    /// higher groups come first).
    pub fn group_blocks(&self, groups: Range<usize>) -> Range<usize> {
        let inside = |bl: &Q2Block| groups.contains(&(bl.sweeps.start / self.nb));
        let first = self.blocks.iter().position(inside).unwrap_or(0);
        let len = self.blocks[first..]
            .iter()
            .take_while(|bl| inside(bl))
            .count();
        first..first + len
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

/// The blocks of a [`Q2Plan`] over sb2st reflectors as a [`WyChain`]: full
/// reflector length `L = b`, coordinates `(group, step)`.
pub struct PlanChain<'a, R> {
    refl: &'a R,
    plan: &'a Q2Plan,
}

impl<'a, R> PlanChain<'a, R> {
    /// The chain of `plan`'s blocks over `refl` (same `n` and `b`).
    pub fn new<T: Scalar>(refl: &'a R, plan: &'a Q2Plan) -> Self
    where
        R: Reflectors<T>,
    {
        assert!(
            plan.n == refl.n() && plan.b == refl.b(),
            "plan is for another (n, b)"
        );
        PlanChain { refl, plan }
    }
}

impl<T: Scalar, R: Reflectors<T>> WyChain<T> for PlanChain<'_, R> {
    fn n(&self) -> usize {
        self.plan.n
    }
    fn full_len(&self) -> usize {
        self.plan.b
    }
    fn num_blocks(&self) -> usize {
        self.plan.blocks.len()
    }
    fn rows(&self, j: usize) -> Range<usize> {
        self.plan.blocks[j].rows.clone()
    }
    fn width(&self, j: usize) -> usize {
        self.plan.blocks[j].sweeps.len()
    }
    fn reflector(&self, j: usize, i: usize) -> (usize, &[T]) {
        let bl = &self.plan.blocks[j];
        let s = bl.sweeps.start + i;
        (
            task_geom(self.plan.n, self.plan.b, s, bl.step).r0,
            self.refl.slot(s, bl.step),
        )
    }
    fn coord(&self, j: usize) -> (usize, usize) {
        let bl = &self.plan.blocks[j];
        (bl.sweeps.start / self.plan.nb, bl.step)
    }
}

/// Builds `V` (`rows x k`, the parallelogram with unit "diagonal", zeros
/// elsewhere) and the upper-triangular `T` (`k x k`) of `block` so that
/// `H(s0, m) ... H(s1-1, m) = I - V T V^T` (LAPACK `dlarft`, forward, columnwise;
/// [`chain::block_factors`]). `v` and `t` must be at least that large; only
/// their leading parts are used.
pub fn block_factors<T: Scalar>(
    refl: &impl Reflectors<T>,
    block: &Q2Block,
    v: MatMut<'_, T>,
    t: MatMut<'_, T>,
) {
    let plan = Q2Plan {
        n: refl.n(),
        b: refl.b(),
        nb: block.sweeps.len().max(1),
        blocks: vec![block.clone()],
    };
    chain::block_factors(&PlanChain::new(refl, &plan), 0, v, t);
}

/// `Y := Y Q2^T` restricted to the blocks `range` of `plan` (in that order),
/// for `y = Z^T` (`kc x n`): the same as `Z := Q2 Z` on those blocks, in the
/// layout where the rows of `Z` a block touches are contiguous columns of `Y`.
/// For callers that keep `Z^T` ([`apply_q2_blocks`] works on `Z` and
/// chooses its kernel, see [`chain::apply_chain`]). Rows of `Y` are
/// independent; consecutive ranges must run in order (or follow
/// [`Q2Plan::row_deps`]).
pub fn apply_q2t_right<T: Scalar>(
    refl: &impl Reflectors<T>,
    plan: &Q2Plan,
    range: Range<usize>,
    y: MatMut<'_, T>,
) {
    let order: Vec<usize> = range.collect();
    apply_chain_t(&PlanChain::new(refl, plan), &order, y);
}

/// Applies the blocks `range` of `plan` (indices into [`Q2Plan::blocks`], in
/// that order) to `z`, an `n x kc` column block of `Z`: the unit of work of a
/// back-transform task. Column blocks are independent; consecutive ranges on
/// one column block must run in order (or follow [`Q2Plan::row_deps`]).
///
/// Works in place with [`super::chain_strip`] where it runs (f64 or f32 with
/// AVX-512F or AVX2; `b >= 32`), else on a
/// transposed copy (`kc x n`, [`chain::with_transposed`]; measured ~20%
/// faster than the GEMMs on `Z` at n = 4096, b = 64, kc = 512), see
/// [`chain::apply_chain`].
pub fn apply_q2_blocks<T: Scalar>(
    refl: &impl Reflectors<T>,
    plan: &Q2Plan,
    range: Range<usize>,
    z: MatMut<'_, T>,
) {
    check_shape(refl, &z);
    if range.is_empty() {
        return;
    }
    let order: Vec<usize> = range.collect();
    chain::apply_chain(&PlanChain::new(refl, plan), &order, z, &mut Vec::new());
}

/// `Z := Q2 Z` for an `n x kc` column block `z`, every block of `plan` in the
/// wavefront order of [`chain::wavefront_order`] with row windows of about
/// `window_bytes` (0: the canonical order): bitwise the result of
/// [`apply_q2_blocked`], with the working set of each window in cache.
pub fn apply_q2_windowed<T: Scalar>(
    refl: &impl Reflectors<T>,
    plan: &Q2Plan,
    window_bytes: usize,
    z: MatMut<'_, T>,
) {
    apply_q2_groups(
        refl,
        plan,
        0..plan.groups(),
        window_bytes,
        z,
        &mut Vec::new(),
    );
}

/// [`apply_q2_windowed`] restricted to the blocks of the sweep groups
/// `groups` (their own wavefront order), for reflectors held a range of
/// groups at a time (an out-of-core run reads them back from disk): applying
/// the ranges of all groups, from the highest range down, is bitwise
/// [`apply_q2_windowed`] (the canonical order applies every block of a higher
/// group before any of a lower one, and inside a range the wavefront order is
/// bitwise the canonical one, see [`chain::wavefront_order`]).
///
/// `buf` holds the transposed copy ([`chain::with_transposed_in`]).
pub fn apply_q2_groups<T: Scalar>(
    refl: &impl Reflectors<T>,
    plan: &Q2Plan,
    groups: Range<usize>,
    window_bytes: usize,
    z: MatMut<'_, T>,
    buf: &mut Vec<T>,
) {
    check_shape(refl, &z);
    let blocks = plan.group_blocks(groups);
    if blocks.is_empty() {
        return;
    }
    let chain = SubChain {
        inner: PlanChain::new(refl, plan),
        first: blocks.start,
        len: blocks.len(),
    };
    let w = groups_per_window(
        window_bytes,
        z.ncols(),
        std::mem::size_of::<T>(),
        plan.nb,
        plan.b,
        plan.b,
    );
    let order = wavefront_order(&chain, w);
    chain::apply_chain(&chain, &order, z, buf);
}

/// The blocks `first..first + len` of a chain, as a chain of their own.
struct SubChain<C> {
    inner: C,
    first: usize,
    len: usize,
}

impl<T, C: WyChain<T>> WyChain<T> for SubChain<C> {
    fn n(&self) -> usize {
        self.inner.n()
    }
    fn full_len(&self) -> usize {
        self.inner.full_len()
    }
    fn num_blocks(&self) -> usize {
        self.len
    }
    fn rows(&self, j: usize) -> Range<usize> {
        self.inner.rows(self.first + j)
    }
    fn width(&self, j: usize) -> usize {
        self.inner.width(self.first + j)
    }
    fn reflector(&self, j: usize, i: usize) -> (usize, &[T]) {
        self.inner.reflector(self.first + j, i)
    }
    fn coord(&self, j: usize) -> (usize, usize) {
        self.inner.coord(self.first + j)
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
