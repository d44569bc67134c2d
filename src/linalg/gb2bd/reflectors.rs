//! The gb2bd reflectors and the `Q2` back-transforms.
//!
//! # Convention
//!
//! Task `(p, r, s)` (pass, sweep, step) is `A <- H_L A H_R` with both
//! reflectors acting on the index range `[c_s, c_s + L)` (rows for `H_L`,
//! columns for `H_R`; [`super::TaskGeom::span`]). With the tasks in
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
//! pass, and [`apply_q2u_blocked`] / [`apply_q2vt_blocked`] apply the blocks
//! groups last first, steps ascending, each with three GEMMs.

use super::{num_sweeps, steps, task_geom, Pass};
use crate::linalg::householder::{
    apply_block_reflector_left, apply_block_reflector_right, larf_left, larf_right, larft,
};
use crate::Scalar;
use faer::reborrow::*;
use faer::{Mat, MatMut};
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::Range;

/// The reflectors of one pass: task `(r, s)` owns the slot
/// `[(off[r] + s) (d + 1) ..][..d + 1]` in each of `right` and `left`, whose
/// first `L` entries hold `[tau, v_1, ..., v_{L-1}]` (`v_0 = 1` implicit).
/// Slots of distinct tasks are disjoint, so concurrent tasks can write theirs.
#[derive(Clone, Debug)]
pub struct PassReflectors<T> {
    n: usize,
    pass: Pass,
    offsets: Vec<usize>,
    right: Vec<T>,
    left: Vec<T>,
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

impl<T: Scalar> PassReflectors<T> {
    /// Zeroed storage for `pass` on an order-`n` band.
    pub fn new(n: usize, pass: Pass) -> Self {
        let offsets = task_offsets(n, pass);
        let len = offsets.last().copied().unwrap_or(0) * (pass.d() + 1);
        PassReflectors {
            n,
            pass,
            offsets,
            right: vec![T::zero(); len],
            left: vec![T::zero(); len],
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

    fn range(&self, r: usize, s: usize) -> std::ops::Range<usize> {
        let len = task_geom(self.n, self.pass, r, s).len;
        let i = (self.offsets[r] + s) * (self.pass.d() + 1);
        i..i + len
    }

    /// `[tau, v_1, ..]` of the right reflector of task `(r, s)` (length `L`).
    pub fn right(&self, r: usize, s: usize) -> &[T] {
        &self.right[self.range(r, s)]
    }

    /// `[tau, v_1, ..]` of the left reflector of task `(r, s)` (length `L`).
    pub fn left(&self, r: usize, s: usize) -> &[T] {
        &self.left[self.range(r, s)]
    }

    /// A slot writer for single-threaded use.
    pub fn slots(&mut self) -> PassSlots<'_, T> {
        PassSlots {
            right: self.right.as_mut_ptr(),
            left: self.left.as_mut_ptr(),
            offsets: &self.offsets,
            n: self.n,
            pass: self.pass,
            _life: PhantomData,
        }
    }

    /// `Z := H_L(last) ... Z`: the left reflectors of this pass, last task
    /// first, applied to the `n x k` block `z` (any set of columns of `U`; unit
    /// row stride).
    pub fn apply_u(&self, mut z: MatMut<'_, T>) {
        assert_eq!(z.nrows(), self.n, "Z must have n = {} rows", self.n);
        for r in (0..num_sweeps(self.n, self.pass)).rev() {
            for s in (0..steps(self.n, self.pass, r)).rev() {
                let slot = self.left(r, s);
                let c = task_geom(self.n, self.pass, r, s).col;
                larf_left(slot[0], &slot[1..], z.rb_mut().subrows_mut(c, slot.len()));
            }
        }
    }

    /// `Y := Y ... H_R(last)`: the right reflectors of this pass, last task
    /// first, applied from the right to the `k x n` block `y` (any set of rows
    /// of `V^T`; unit row stride).
    pub fn apply_vt(&self, mut y: MatMut<'_, T>) {
        assert_eq!(y.ncols(), self.n, "Y must have n = {} columns", self.n);
        let mut w = vec![T::zero(); y.nrows()];
        for r in (0..num_sweeps(self.n, self.pass)).rev() {
            for s in (0..steps(self.n, self.pass, r)).rev() {
                let slot = self.right(r, s);
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

impl<T: Scalar> PassReflectors<T> {
    /// Builds the compact-WY block of the reflectors of sweeps `group` at step
    /// `s` (left side if `left`, else right): `H(r0, s) H(r0+1, s) ... =
    /// I - V T V^T` (forward, LAPACK `dlarft`). Column `i` of `V` is sweep
    /// `r0 + i`, whose reflector starts `i` rows below the first (pivot columns
    /// of consecutive sweeps at one step are one apart), so `V` is a
    /// parallelogram in `dgeqrf` layout. Returns the first row and `(V, T)`,
    /// or `None` if no sweep of the group has step `s`.
    fn block(&self, left: bool, group: Range<usize>, s: usize) -> Option<(usize, Mat<T>, Mat<T>)> {
        let (n, pass) = (self.n, self.pass);
        // steps(r) is non-increasing: the sweeps with step s are a prefix.
        let k = group.clone().take_while(|&r| s < steps(n, pass, r)).count();
        if k == 0 {
            return None;
        }
        let first = task_geom(n, pass, group.start, s).col;
        let last = task_geom(n, pass, group.start + k - 1, s);
        let rows = last.col + last.len - first;
        let mut v = Mat::<T>::zeros(rows, k);
        let mut tau = Vec::with_capacity(k);
        for i in 0..k {
            let r = group.start + i;
            let slot = if left {
                self.left(r, s)
            } else {
                self.right(r, s)
            };
            tau.push(slot[0]);
            for (e, &x) in slot[1..].iter().enumerate() {
                v[(i + 1 + e, i)] = x;
            }
        }
        let mut t = Mat::<T>::zeros(k, k);
        larft(v.as_ref(), &tau, t.as_mut());
        Some((first, v, t))
    }

    /// The blocks of `group` sweeps, in the order the back-transforms apply
    /// them: groups last first, steps ascending (module docs, "Blocked
    /// version").
    fn for_each_block(&self, left: bool, group: usize, mut f: impl FnMut(usize, Mat<T>, Mat<T>)) {
        let group = group.max(1);
        let ns = num_sweeps(self.n, self.pass);
        for g in (0..ns.div_ceil(group)).rev() {
            let sweeps = g * group..((g + 1) * group).min(ns);
            for s in 0..steps(self.n, self.pass, sweeps.start) {
                if let Some((r0, v, t)) = self.block(left, sweeps.clone(), s) {
                    f(r0, v, t);
                }
            }
        }
    }

    /// [`PassReflectors::apply_u`] with compact-WY blocks of `group` sweeps
    /// (three GEMMs per block instead of one rank-1 update per reflector).
    pub fn apply_u_blocked(&self, group: usize, mut z: MatMut<'_, T>) {
        assert_eq!(z.nrows(), self.n, "Z must have n = {} rows", self.n);
        self.for_each_block(true, group, |r0, v, t| {
            let rows = v.nrows();
            apply_block_reflector_left(
                v.as_ref(),
                t.as_ref(),
                z.rb_mut().subrows_mut(r0, rows),
                false,
            );
        });
    }

    /// [`PassReflectors::apply_vt`] with compact-WY blocks of `group` sweeps.
    pub fn apply_vt_blocked(&self, group: usize, mut y: MatMut<'_, T>) {
        assert_eq!(y.ncols(), self.n, "Y must have n = {} columns", self.n);
        self.for_each_block(false, group, |c0, v, t| {
            let cols = v.nrows();
            apply_block_reflector_right(
                v.as_ref(),
                t.as_ref(),
                y.rb_mut().subcols_mut(c0, cols),
                true,
            );
        });
    }
}

/// Writes the slots of individual tasks of one pass (see [`PassReflectors`]).
pub struct PassSlots<'a, T> {
    right: *mut T,
    left: *mut T,
    offsets: &'a [usize],
    n: usize,
    pass: Pass,
    _life: PhantomData<&'a mut [T]>,
}

impl<T: Scalar> PassSlots<'_, T> {
    /// The `(right, left)` slots of task `(r, s)` (length `L` each), to be filled
    /// by that task.
    #[inline]
    pub fn slot_mut(&mut self, r: usize, s: usize) -> (&mut [T], &mut [T]) {
        let len = task_geom(self.n, self.pass, r, s).len;
        let i = (self.offsets[r] + s) * (self.pass.d() + 1);
        // Checked in every build: the writer is reachable from safe code, so an
        // out-of-range (r, s) must panic, not write past the arrays.
        assert!(
            r + 1 < self.offsets.len()
                && self.offsets[r] + s < self.offsets[r + 1]
                && i + len <= self.offsets.last().unwrap() * (self.pass.d() + 1),
            "no reflector slot for task ({r}, {s})"
        );
        // SAFETY: in bounds (checked above);
        // exclusive by the contract of whoever created this writer (`&mut`
        // storage or `SharedGb2bdReflectors::slots`); the two arrays are distinct.
        unsafe {
            (
                std::slice::from_raw_parts_mut(self.right.add(i), len),
                std::slice::from_raw_parts_mut(self.left.add(i), len),
            )
        }
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

/// [`apply_q2u`] with compact-WY blocks of `group` sweeps (equal to rounding).
pub fn apply_q2u_blocked<T: Scalar>(refl: &Gb2bdReflectors<T>, group: usize, mut z: MatMut<'_, T>) {
    for p in refl.passes.iter().rev() {
        p.apply_u_blocked(group, z.rb_mut());
    }
}

/// [`apply_q2vt`] with compact-WY blocks of `group` sweeps (equal to rounding).
pub fn apply_q2vt_blocked<T: Scalar>(
    refl: &Gb2bdReflectors<T>,
    group: usize,
    mut y: MatMut<'_, T>,
) {
    for p in refl.passes.iter().rev() {
        p.apply_vt_blocked(group, y.rb_mut());
    }
}

/// Reflector storage shared by the tasks of one graph; each task writes only
/// the slots of its own `(pass, r, s)`.
pub struct SharedGb2bdReflectors<T> {
    inner: UnsafeCell<Gb2bdReflectors<T>>,
    /// `(right, left)` base pointers per pass, taken once at construction.
    ptrs: Vec<(*mut T, *mut T)>,
}

// SAFETY: access goes through `slots`/`get`, whose contracts make writers
// disjoint and readers wait for the writers.
unsafe impl<T: Send> Send for SharedGb2bdReflectors<T> {}
unsafe impl<T: Send + Sync> Sync for SharedGb2bdReflectors<T> {}

impl<T: Scalar> SharedGb2bdReflectors<T> {
    /// Takes ownership of `refl`.
    pub fn new(mut refl: Gb2bdReflectors<T>) -> Self {
        let ptrs = refl
            .passes
            .iter_mut()
            .map(|p| (p.right.as_mut_ptr(), p.left.as_mut_ptr()))
            .collect();
        SharedGb2bdReflectors {
            inner: UnsafeCell::new(refl),
            ptrs,
        }
    }

    /// A writer for the tasks of pass `p`.
    ///
    /// # Safety
    /// Concurrent writers must write disjoint slots (each task only its own),
    /// and nobody reads a slot before its task has finished.
    pub unsafe fn slots(&self, p: usize) -> PassSlots<'_, T> {
        let r = &*self.inner.get();
        let pr = &r.passes[p];
        PassSlots {
            right: self.ptrs[p].0,
            left: self.ptrs[p].1,
            offsets: &pr.offsets,
            n: pr.n,
            pass: pr.pass,
            _life: PhantomData,
        }
    }

    /// Read access to all reflectors.
    ///
    /// # Safety
    /// Every task that writes a slot must have finished, and none may start
    /// while the reference lives.
    pub unsafe fn get(&self) -> &Gb2bdReflectors<T> {
        &*self.inner.get()
    }

    /// Gives the storage back once no task holds it.
    pub fn into_inner(self) -> Gb2bdReflectors<T> {
        self.inner.into_inner()
    }
}
