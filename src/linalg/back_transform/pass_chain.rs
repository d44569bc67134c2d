//! The SVD's `Q2_U` / `Q2_V` (one side of the gb2bd reflectors, every pass) on
//! the shared engine [`super::chain`].
//!
//! In a group of `G` consecutive sweeps `[g G, g G + G)` of one pass
//! `b -> b'`, the reflectors at step `s` start at rows `r + b' + s b`, one row
//! apart, with length at most `L = d + 1 <= b`: a parallelogram compact-WY
//! block with step stride `B = b`, the geometry of [`super::chain`]
//! (`crate::linalg::band::gb2bd::reflectors`, "Blocked version", shows that the
//! canonical order, groups descending and steps ascending, is the sequential
//! product).

use super::chain::{
    apply_chain_t_with, apply_chain_with, groups_per_window, runs_in_place, wavefront_order,
    with_transposed, BlockKernel, WyChain,
};
use crate::linalg::band::gb2bd::{num_sweeps, steps, task_geom, PassSide};
use crate::Scalar;
use faer::reborrow::*;
use faer::MatMut;
use std::ops::Range;

/// One block: group, step, first sweep, reflectors, rows.
#[derive(Clone, Debug)]
struct Block {
    group: usize,
    step: usize,
    sweep0: usize,
    width: usize,
    rows: Range<usize>,
}

/// The reflectors of one side of one gb2bd pass as a [`WyChain`] of blocks of
/// `group` sweeps, in canonical order.
pub struct PassChain<'a, T> {
    side: PassSide<'a, T>,
    blocks: Vec<Block>,
}

impl<'a, T: Scalar> PassChain<'a, T> {
    /// The blocks of `group` (`>= 1`) consecutive sweeps of `side`.
    pub fn new(side: PassSide<'a, T>, group: usize) -> Self {
        let (n, pass) = (side.n(), side.pass());
        let group = group.max(1);
        let ns = num_sweeps(n, pass);
        let mut blocks = Vec::new();
        for g in (0..ns.div_ceil(group)).rev() {
            let r0 = g * group;
            let r1 = (r0 + group).min(ns);
            for s in 0..steps(n, pass, r0) {
                // steps(r) is non-increasing: the sweeps with step s are a prefix.
                let k = (r0..r1).take_while(|&r| s < steps(n, pass, r)).count();
                let first = task_geom(n, pass, r0, s).col;
                let last = task_geom(n, pass, r0 + k - 1, s);
                blocks.push(Block {
                    group: g,
                    step: s,
                    sweep0: r0,
                    width: k,
                    rows: first..last.col + last.len,
                });
            }
        }
        PassChain { side, blocks }
    }
}

impl<T: Scalar> WyChain<T> for PassChain<'_, T> {
    fn n(&self) -> usize {
        self.side.n()
    }
    fn full_len(&self) -> usize {
        self.side.pass().d() + 1
    }
    fn num_blocks(&self) -> usize {
        self.blocks.len()
    }
    fn rows(&self, j: usize) -> Range<usize> {
        self.blocks[j].rows.clone()
    }
    fn width(&self, j: usize) -> usize {
        self.blocks[j].width
    }
    fn reflector(&self, j: usize, i: usize) -> (usize, &[T]) {
        let bl = &self.blocks[j];
        let r = bl.sweep0 + i;
        (
            task_geom(self.side.n(), self.side.pass(), r, bl.step).col,
            self.side.slot(r, bl.step),
        )
    }
    fn coord(&self, j: usize) -> (usize, usize) {
        (self.blocks[j].group, self.blocks[j].step)
    }
}

/// `Z := Q2 Z` for an `n x kc` block `z` with one side of every pass (last
/// pass first; `Q2_U` from the left sides, `Q2_V` from the right sides), as
/// blocks of `group` sweeps in the wavefront order with row windows of about
/// `window_bytes` ([`super::chain::wavefront_order`]; 0: canonical order):
/// in place by [`super::chain_strip`] when every pass's reflectors are long
/// enough for it ([`super::chain::runs_in_place`]; one pass with `b >= 32`),
/// else on one transposed copy of `z`. Bitwise independent of how the columns of `Z`
/// are split into blocks; equal to rounding to the unblocked
/// [`crate::linalg::band::gb2bd::apply_q2u`].
pub fn apply_q2_sides_windowed<T: Scalar>(
    sides: &[PassSide<'_, T>],
    group: usize,
    window_bytes: usize,
    z: MatMut<'_, T>,
) {
    apply_q2_sides_with(sides, group, window_bytes, BlockKernel::Auto, z);
}

/// [`apply_q2_sides_windowed`] with a chosen [`BlockKernel`].
pub fn apply_q2_sides_with<'a, T: Scalar>(
    sides: &[PassSide<'a, T>],
    group: usize,
    window_bytes: usize,
    kernel: BlockKernel,
    z: MatMut<'_, T>,
) {
    let kc = z.ncols();
    for p in sides {
        assert_eq!(z.nrows(), p.n(), "Z must have n = {} rows", p.n());
    }
    let chain_order = |side: PassSide<'a, T>| {
        let chain = PassChain::new(side, group);
        let pass = side.pass();
        let w = groups_per_window(
            window_bytes,
            kc,
            std::mem::size_of::<T>(),
            group.max(1),
            pass.b,
            pass.d() + 1,
        );
        let order = wavefront_order(&chain, w);
        (chain, order)
    };
    // In place when every pass takes the in-place kernel (one pass of long
    // reflectors, the default with vectors); otherwise one transposed copy
    // serves all passes.
    if sides
        .iter()
        .all(|s| runs_in_place(kernel, s.pass().d() + 1, z.rb()))
    {
        let mut z = z;
        let mut buf = Vec::new();
        for side in sides.iter().rev() {
            let (chain, order) = chain_order(*side);
            apply_chain_with(&chain, &order, kernel, z.rb_mut(), &mut buf);
        }
        return;
    }
    with_transposed(z, |mut y| {
        for side in sides.iter().rev() {
            let (chain, order) = chain_order(*side);
            apply_chain_t_with(&chain, &order, kernel, y.rb_mut());
        }
    });
}

#[cfg(test)]
mod tests;
