//! The gb2bd reflectors and the `Q2` back-transforms.
//!
//! # Convention
//!
//! Task `(p, r, s)` (pass, sweep, step) is `A <- H_L A H_R` with both
//! reflectors acting on the index range `[c_s, c_s + L)` (rows for `H_L`,
//! columns for `H_R`; [`super::Gb2bdTaskGeom::span`]). With the tasks in
//! sequential order (pass, sweep, step ascending) and `H^T = H`:
//!
//! ```text
//! A = Q2_U B Q2_V^T,   Q2_U = H_L(first) ... H_L(last),   Q2_V = H_R(first) ... H_R(last)
//! ```
//!
//! so the singular vectors of the band are `U = Q2_U U_bd` and
//! `V^T = V_bd^T Q2_V^T`: [`apply_q2u`] and [`apply_q2vt`] apply the
//! reflectors last task first. Tasks the DAG leaves unordered act on disjoint
//! index ranges, so their reflectors commute and the product does not depend
//! on the execution order.
//!
//! # Blocked version
//!
//! In a group of consecutive sweeps `[r0, r1)` of one pass, the reflectors at
//! step `s` start one index apart (`c_s` grows by one per sweep), so
//! `Block(s) = H(r0, s) H(r0+1, s) ... H(r1-1, s)` is one compact-WY block
//! `I - V T V^T` with a parallelogram `V` (as [`crate::linalg::back_transform::q2`] does for
//! the EVD). Within the group, the sequential product equals
//! `Block(last) ... Block(1) Block(0)`: the only pairs this reorders are
//! `H(r, s)` and `H(r', s')` with `r <= r'`, `s < s'`, whose ranges start
//! `(r' - r) + (s' - s) b >= b >= L` apart, so they are disjoint and commute.
//! Hence `Q2_U = prod_{groups ascending} prod_{s descending} Block(g, s)` per
//! pass; [`crate::linalg::back_transform::pass_chain`] applies the blocks
//! groups last first, steps ascending, on the shared compact-WY chain engine.

use super::{num_sweeps, steps, task_geom, Pass};
use crate::linalg::householder::{larf_left, larf_right};
use crate::matrix::access::Access;
use crate::matrix::{MatrixId, SharedMatrix};
use crate::Scalar;
use faer::reborrow::*;
use faer::{Mat, MatMut, MatRef};
use std::ops::Range;

/// A rectangle of one of a store's matrices, `(matrix, rows, cols)`: what a
/// task's footprint declares for it (built into a graph region by the stage
/// builder; the kernels name no graph type).
pub type StoreRect = (MatrixId, Range<usize>, Range<usize>);

/// The reflectors of one pass: task `(r, s)` owns column `off[r] + s` of each
/// of `right` and `left` (`(d + 1) x tasks`), whose first `L` entries hold
/// `[tau, v_1, ..., v_{L-1}]` (`v_0 = 1` implicit). Columns of distinct tasks
/// are disjoint, so concurrent tasks can write theirs (in a task graph, through
/// [`SharedGb2bdReflectors`], each task's column declared in its footprint).
#[derive(Clone, Debug)]
pub struct PassReflectors<T> {
    n: usize,
    pass: Pass,
    offsets: Vec<usize>,
    right: Mat<T>,
    left: Mat<T>,
}

fn task_offsets(n: usize, pass: Pass) -> Vec<usize> {
    let mut off = Vec::with_capacity(num_sweeps(n, pass) + 1);
    let mut acc = 0;
    off.push(0);
    for r in 0..num_sweeps(n, pass) {
        acc += steps(n, pass, r);
        off.push(acc);
    }
    off
}

/// Column of task `(r, s)` in the slot matrices of a pass, and its length `L`;
/// panics (in every build: the writers are reachable from safe code) if the
/// pass has no task `(r, s)`.
fn slot_col(offsets: &[usize], n: usize, pass: Pass, r: usize, s: usize) -> (usize, usize) {
    assert!(
        r + 1 < offsets.len() && offsets[r] + s < offsets[r + 1],
        "no reflector slot for task ({r}, {s})"
    );
    (offsets[r] + s, task_geom(n, pass, r, s).len)
}

impl<T: Scalar> PassReflectors<T> {
    /// Zeroed storage for `pass` on an order-`n` band.
    pub fn new(n: usize, pass: Pass) -> Self {
        let offsets = task_offsets(n, pass);
        let tasks = offsets.last().copied().unwrap_or(0);
        PassReflectors {
            n,
            pass,
            offsets,
            right: Mat::zeros(pass.d() + 1, tasks),
            left: Mat::zeros(pass.d() + 1, tasks),
        }
    }

    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The pass.
    pub fn pass(&self) -> Pass {
        self.pass
    }

    /// Number of tasks of the pass.
    pub fn num_tasks(&self) -> usize {
        self.offsets.last().copied().unwrap_or(0)
    }

    /// The left reflectors (`H_L`, the `U` side), read-only.
    pub fn left_side(&self) -> PassSide<'_, T> {
        PassSide {
            n: self.n,
            pass: self.pass,
            offsets: &self.offsets,
            slots: self.left.as_ref(),
        }
    }

    /// The right reflectors (`H_R`, the `V` side), read-only.
    pub fn right_side(&self) -> PassSide<'_, T> {
        PassSide {
            n: self.n,
            pass: self.pass,
            offsets: &self.offsets,
            slots: self.right.as_ref(),
        }
    }

    /// `[tau, v_1, ..]` of the right reflector of task `(r, s)` (length `L`).
    pub fn right(&self, r: usize, s: usize) -> &[T] {
        self.right_side().slot(r, s)
    }

    /// `[tau, v_1, ..]` of the left reflector of task `(r, s)` (length `L`).
    pub fn left(&self, r: usize, s: usize) -> &[T] {
        self.left_side().slot(r, s)
    }

    /// A slot writer for single-threaded use.
    pub fn slots(&mut self) -> PassSlots<'_, T> {
        PassSlots {
            right: self.right.as_mut(),
            left: self.left.as_mut(),
            offsets: &self.offsets,
            n: self.n,
            pass: self.pass,
        }
    }

    /// `Z := H_L(last) ... Z`: the left reflectors of this pass, last task
    /// first, applied to the `n x k` block `z` (any set of columns of `U`; unit
    /// row stride).
    pub fn apply_u(&self, z: MatMut<'_, T>) {
        self.left_side().apply_left(z);
    }

    /// `Y := Y ... H_R(last)`: the right reflectors of this pass, last task
    /// first, applied from the right to the `k x n` block `y` (any set of rows
    /// of `V^T`; unit row stride).
    pub fn apply_vt(&self, y: MatMut<'_, T>) {
        self.right_side().apply_right(y);
    }
}

/// The reflectors of one side (left `H_L` or right `H_R`) of one pass,
/// read-only: what a back-transform needs, from a [`PassReflectors`] or from
/// the [`SharedGb2bdReflectors`] of a task graph.
#[derive(Clone, Copy)]
pub struct PassSide<'a, T> {
    n: usize,
    pass: Pass,
    offsets: &'a [usize],
    slots: MatRef<'a, T>,
}

impl<'a, T: Scalar> PassSide<'a, T> {
    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The pass.
    pub fn pass(&self) -> Pass {
        self.pass
    }

    /// `[tau, v_1, ..]` of the reflector of task `(r, s)` (length `L`).
    pub fn slot(&self, r: usize, s: usize) -> &'a [T] {
        let (c, len) = slot_col(self.offsets, self.n, self.pass, r, s);
        self.slots
            .col(c)
            .subrows(0, len)
            .try_as_col_major()
            .expect("slot columns are contiguous")
            .as_slice()
    }

    /// `Z := H(last) ... Z`: the reflectors, last task first, applied from the
    /// left to the `n x k` block `z` (unit row stride). With the left
    /// reflectors this is `Z := Q2_U Z` for the pass; with the right ones
    /// `Z := Q2_V Z`.
    pub fn apply_left(&self, mut z: MatMut<'_, T>) {
        assert_eq!(z.nrows(), self.n, "Z must have n = {} rows", self.n);
        for r in (0..num_sweeps(self.n, self.pass)).rev() {
            for s in (0..steps(self.n, self.pass, r)).rev() {
                let slot = self.slot(r, s);
                let c = task_geom(self.n, self.pass, r, s).col;
                larf_left(slot[0], &slot[1..], z.rb_mut().subrows_mut(c, slot.len()));
            }
        }
    }

    /// `Y := Y ... H(last)`: the reflectors, last task first, applied from the
    /// right to the `k x n` block `y` (unit row stride); with the right
    /// reflectors, `Y := Y Q2_V^T` for the pass.
    pub fn apply_right(&self, mut y: MatMut<'_, T>) {
        assert_eq!(y.ncols(), self.n, "Y must have n = {} columns", self.n);
        let mut w = vec![T::zero(); y.nrows()];
        for r in (0..num_sweeps(self.n, self.pass)).rev() {
            for s in (0..steps(self.n, self.pass, r)).rev() {
                let slot = self.slot(r, s);
                let c = task_geom(self.n, self.pass, r, s).col;
                larf_right(
                    slot[0],
                    &slot[1..],
                    y.rb_mut().subcols_mut(c, slot.len()),
                    &mut w,
                );
            }
        }
    }
}

/// Writes the slots of individual tasks of one pass (see [`PassReflectors`]).
pub struct PassSlots<'a, T> {
    right: MatMut<'a, T>,
    left: MatMut<'a, T>,
    offsets: &'a [usize],
    n: usize,
    pass: Pass,
}

impl<T: Scalar> PassSlots<'_, T> {
    /// The `(right, left)` slots of task `(r, s)` (length `L` each), to be filled
    /// by that task; panics if the pass has no task `(r, s)`.
    #[inline]
    pub fn slot_mut(&mut self, r: usize, s: usize) -> (&mut [T], &mut [T]) {
        let (c, len) = slot_col(self.offsets, self.n, self.pass, r, s);
        let right = self.right.rb_mut().col_mut(c).subrows_mut(0, len);
        let left = self.left.rb_mut().col_mut(c).subrows_mut(0, len);
        (
            right
                .try_as_col_major_mut()
                .expect("slot columns are contiguous")
                .as_slice_mut(),
            left.try_as_col_major_mut()
                .expect("slot columns are contiguous")
                .as_slice_mut(),
        )
    }
}

/// The reflectors of all passes of one reduction.
#[derive(Clone, Debug)]
pub struct Gb2bdReflectors<T> {
    n: usize,
    passes: Vec<PassReflectors<T>>,
}

impl<T: Scalar> Gb2bdReflectors<T> {
    /// Zeroed storage for `passes` on an order-`n` band.
    pub fn new(n: usize, passes: &[Pass]) -> Self {
        Gb2bdReflectors {
            n,
            passes: passes.iter().map(|&p| PassReflectors::new(n, p)).collect(),
        }
    }

    /// Bytes [`Gb2bdReflectors::new`] allocates, without allocating.
    pub fn len_bytes(n: usize, passes: &[Pass]) -> usize {
        passes
            .iter()
            .map(|&p| {
                let tasks: usize = (0..num_sweeps(n, p)).map(|r| steps(n, p, r)).sum();
                2 * tasks * (p.d() + 1) * std::mem::size_of::<T>()
                    + (num_sweeps(n, p) + 1) * std::mem::size_of::<usize>()
            })
            .sum()
    }

    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The passes, in order.
    pub fn passes(&self) -> Vec<Pass> {
        self.passes.iter().map(|p| p.pass).collect()
    }

    /// The reflectors of pass `p`.
    pub fn pass(&self, p: usize) -> &PassReflectors<T> {
        &self.passes[p]
    }

    /// Mutable reflectors of pass `p`.
    pub fn pass_mut(&mut self, p: usize) -> &mut PassReflectors<T> {
        &mut self.passes[p]
    }
}

/// `Z := Q2_U Z` for an `n x k` column block `z` of `U` (last pass first).
pub fn apply_q2u<T: Scalar>(refl: &Gb2bdReflectors<T>, mut z: MatMut<'_, T>) {
    for p in refl.passes.iter().rev() {
        p.apply_u(z.rb_mut());
    }
}

/// `Y := Y Q2_V^T` for a `k x n` row block `y` of `V^T` (last pass first).
pub fn apply_q2vt<T: Scalar>(refl: &Gb2bdReflectors<T>, mut y: MatMut<'_, T>) {
    for p in refl.passes.iter().rev() {
        p.apply_vt(y.rb_mut());
    }
}

/// One pass of a [`SharedGb2bdReflectors`]: the slot matrices as
/// [`SharedMatrix`]es, so footprints name a task's slots as its column.
struct SharedPass<T> {
    pass: Pass,
    offsets: Vec<usize>,
    right: SharedMatrix<T>,
    left: SharedMatrix<T>,
}

/// Reflector storage shared by the tasks of one graph. Per pass, the right and
/// the left slots are each a [`SharedMatrix`] (`(d + 1) x tasks`, task `(r, s)`
/// owns one column), so every access is checked against the task's declared
/// footprint like any tile (`matrix::access`): a chase task writes
/// [`SharedGb2bdReflectors::task_regions`], a back-transform reads
/// [`SharedGb2bdReflectors::side_regions`].
pub struct SharedGb2bdReflectors<T> {
    n: usize,
    passes: Vec<SharedPass<T>>,
}

impl<T: Scalar> SharedGb2bdReflectors<T> {
    /// Takes ownership of `refl`.
    pub fn new(refl: Gb2bdReflectors<T>) -> Self {
        SharedGb2bdReflectors {
            n: refl.n,
            passes: refl
                .passes
                .into_iter()
                .map(|p| SharedPass {
                    pass: p.pass,
                    offsets: p.offsets,
                    right: SharedMatrix::new(p.right),
                    left: SharedMatrix::new(p.left),
                })
                .collect(),
        }
    }

    /// Order of the matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Number of passes.
    pub fn num_passes(&self) -> usize {
        self.passes.len()
    }

    /// The `[right, left]` slot regions task `(r, s)` of pass `p` writes.
    pub fn task_regions(&self, p: usize, r: usize, s: usize) -> [StoreRect; 2] {
        let sp = &self.passes[p];
        let (c, _) = slot_col(&sp.offsets, self.n, sp.pass, r, s);
        let rows = 0..sp.pass.d() + 1;
        [
            (sp.right.id(), rows.clone(), c..c + 1),
            (sp.left.id(), rows, c..c + 1),
        ]
    }

    /// The regions holding every reflector of one side (`left`: the `H_L`,
    /// else the `H_R`), one per pass with tasks.
    pub fn side_regions(&self, left: bool) -> Vec<StoreRect> {
        self.passes
            .iter()
            .filter(|sp| sp.right.ncols() > 0)
            .map(|sp| {
                let m = if left { &sp.left } else { &sp.right };
                (m.id(), 0..m.nrows(), 0..m.ncols())
            })
            .collect()
    }

    /// The `(right, left)` slots of task `(r, s)` of pass `p`, for the task
    /// whose footprint writes them ([`SharedGb2bdReflectors::task_regions`];
    /// checked by `access`).
    pub(crate) fn slot_mut<'s>(
        &'s self,
        access: &'s Access<'_>,
        p: usize,
        r: usize,
        s: usize,
    ) -> (&'s mut [T], &'s mut [T]) {
        let sp = &self.passes[p];
        let (c, len) = slot_col(&sp.offsets, self.n, sp.pass, r, s);
        let as_slice = |m: MatMut<'s, T>| {
            m.col_mut(0)
                .try_as_col_major_mut()
                .expect("slot columns are contiguous")
                .as_slice_mut()
        };
        (
            as_slice(sp.right.write(access, 0..len, c..c + 1)),
            as_slice(sp.left.write(access, 0..len, c..c + 1)),
        )
    }

    /// Every reflector of one side (`left`: the `H_L`, else the `H_R`), pass by
    /// pass, for a task whose footprint reads
    /// [`SharedGb2bdReflectors::side_regions`] (checked by `access`).
    pub(crate) fn read_side<'s>(
        &'s self,
        access: &'s Access<'_>,
        left: bool,
    ) -> Vec<PassSide<'s, T>> {
        self.passes
            .iter()
            .map(|sp| {
                let m = if left { &sp.left } else { &sp.right };
                PassSide {
                    n: self.n,
                    pass: sp.pass,
                    offsets: &sp.offsets,
                    slots: m.read(access, 0..m.nrows(), 0..m.ncols()),
                }
            })
            .collect()
    }

    /// Gives the storage back once no task holds it.
    pub fn into_inner(self) -> Gb2bdReflectors<T> {
        Gb2bdReflectors {
            n: self.n,
            passes: self
                .passes
                .into_iter()
                .map(|sp| PassReflectors {
                    n: self.n,
                    pass: sp.pass,
                    offsets: sp.offsets,
                    right: sp.right.into_inner(),
                    left: sp.left.into_inner(),
                })
                .collect(),
        }
    }
}
