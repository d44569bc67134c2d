//! One merge of the bidiagonal divide and conquer as tasks (Gu & Eisenstat
//! 1995, LAPACK `dlasd1`): deflation, the secular roots, the output order,
//! the Löwner step, the products per column tile, and the release of the
//! merge's workspace.

use super::{Stores, ROOT_GRAIN};
use crate::graph::{Flow, Footprint, Region, Task, TaskGraph, TaskId};
use crate::linalg::bidiagonal::bdsdc::{col_tiles, BdsdcParams, SvdMerge};
use crate::matrix::access::Access;
use crate::matrix::SharedMatrix;
use crate::pipeline::svd::BDSDC;
use crate::pipeline::task::{
    add_merge_ranges, column_slice, column_slice_ref, deflated, with_access, MergeRanges, MergeSlot,
};
use crate::{Error, Scalar};
use faer::reborrow::ReborrowMut;
use std::ops::Range;
use std::sync::Arc;

/// A merge node of the tree: rows `r` and columns `c` of the stores, its
/// problem (set by `deflate`, dropped by `free`) and its words `wrows` of the
/// shared workspace.
pub(super) struct MergeNode<T> {
    st: Stores<T>,
    slot: Arc<MergeSlot<SvdMerge<T>>>,
    work: Arc<SharedMatrix<T>>,
    wrows: Range<usize>,
    r: Range<usize>,
    c: Range<usize>,
    begin: usize,
    mid: usize,
    /// Rows of the node.
    len: usize,
    /// The root writes its columns straight into the final descending order.
    is_root: bool,
    /// Number of tasks for the secular roots and for z-hat.
    roots: usize,
    /// Prefix of the task names.
    name: String,
}

impl<T: Scalar> MergeNode<T> {
    /// The merge `begin..end` (split at `mid`) of rows `r`, columns `c`, with
    /// `w` workspace words per row.
    pub(super) fn new(
        st: &Stores<T>,
        work: &Arc<SharedMatrix<T>>,
        w: usize,
        (begin, mid, end): (usize, usize, usize),
        r: Range<usize>,
        c: Range<usize>,
        is_root: bool,
    ) -> Self {
        let len = r.len();
        MergeNode {
            st: st.clone(),
            slot: Arc::new(MergeSlot::new()),
            work: work.clone(),
            wrows: begin * w..(end + 1) * w,
            r,
            c,
            begin,
            mid,
            len,
            is_root,
            roots: (len / ROOT_GRAIN).clamp(1, 8),
            name: format!("bdsdc.merge[{begin}..{end}]"),
        }
    }

    /// Adds the merge's tasks to `flow`, which orders them after both
    /// children and each other from their footprints; at the root pushes each
    /// apply task with its destination columns to `blocks`. Returns the node's
    /// exit tasks.
    pub(super) fn add(
        &self,
        g: &mut TaskGraph<'static>,
        flow: &mut Flow,
        params: &BdsdcParams,
        blocks: &mut Vec<(Range<usize>, Vec<TaskId>)>,
    ) -> Vec<TaskId> {
        let deflate = flow.add(g, self.deflate_task());
        let len = self.len;
        let root_tasks = add_merge_ranges(
            g,
            &self.slot,
            self.ranges("roots", 0, (40 * len * len / self.roots) as f64),
            deflate,
            self.zero(),
            SvdMerge::k,
            SvdMerge::solve_roots_range,
        );
        for &t in &root_tasks {
            flow.record(g, t);
        }
        let order = flow.add(g, self.order_task());
        // Disjoint ranges of z-hat (checked by `SplitColumns`).
        let lowners = add_merge_ranges(
            g,
            &self.slot,
            self.ranges("lowner", self.roots, (8 * len * len / self.roots) as f64),
            order,
            self.zero(),
            SvdMerge::k,
            SvdMerge::lowner_range,
        );
        for &t in &lowners {
            flow.record(g, t);
        }
        let mut applies = Vec::new();
        for tile in col_tiles(len, params.col_tile) {
            let (dest, task) = self.apply_task(tile);
            let t = flow.add(g, task);
            if self.is_root {
                blocks.push((dest, vec![t]));
            }
            applies.push(t);
        }
        flow.add(g, self.free_task());
        let mut node_exits = vec![order];
        node_exits.extend(applies);
        node_exits
    }

    /// Pseudo-matrix rows of the slot: `0..roots` the root ranges,
    /// `roots..2 roots` the z-hat ranges, `2 roots` the rest.
    fn all(&self) -> Region {
        Region::new(self.slot.id, 0..2 * self.roots + 1, 0..1)
    }

    fn wreg(&self) -> Region {
        Region::new(self.work.id(), self.wrows.clone(), 0..1)
    }

    fn ureg(&self) -> Region {
        Region::new(self.st.u.id(), self.r.clone(), self.r.clone())
    }

    fn vreg(&self) -> Region {
        Region::new(self.st.v.id(), self.c.clone(), self.c.clone())
    }

    /// A zero bidiagonal has no merge problems: its range tasks do nothing.
    fn zero(&self) -> impl Fn(&Access<'_>) -> bool + Clone + Send + 'static {
        let st = self.st.clone();
        move |acc: &Access<'_>| st.scale(acc) == T::zero()
    }

    /// The range tasks `step` over slot rows from `first_row`.
    fn ranges(&self, step: &str, first_row: usize, flops: f64) -> MergeRanges {
        let len = self.len;
        let shared_part = Region::new(self.slot.id, 2 * self.roots..2 * self.roots + 1, 0..1);
        MergeRanges {
            name: format!("{}.{step}", self.name),
            stage: BDSDC,
            count: self.roots,
            first_row,
            cost: (flops, (16 * len * len / self.roots) as f64),
            reads: Footprint::new()
                .read(self.st.scale_region())
                .read(shared_part),
        }
    }

    /// The `deflate` task ([`SvdMerge::new`]): after both children; owns the
    /// node's d, U and V blocks and its part of the workspace.
    fn deflate_task(&self) -> Task<'static> {
        let (begin, mid, len) = (self.begin, self.mid, self.len);
        let footprint = Footprint::new()
            .read(self.st.scale_region())
            .read(Region::new(self.st.d.id(), self.r.clone(), 0..1))
            .read(Region::new(self.st.e.id(), mid..mid + 1, 0..1))
            .write(self.ureg())
            .write(self.vreg())
            .write(self.wreg())
            .write(self.all());
        let (slot, st, r, c) = (
            self.slot.clone(),
            self.st.clone(),
            self.r.clone(),
            self.c.clone(),
        );
        let (work, wrows) = (self.work.clone(), self.wrows.clone());
        let body = with_access(move |acc| {
            if st.scale(acc) == T::zero() {
                return Ok(());
            }
            let dv = st.d.read(acc, r.clone(), 0..1);
            let dl: Vec<T> = (0..r.len()).map(|i| dv[(i, 0)]).collect();
            // d[mid] is still the scaled input: no child owns row mid.
            let alpha = dl[mid - begin];
            let beta = st.e.read(acc, mid..mid + 1, 0..1)[(0, 0)];
            let ub = st.u.write(acc, r.clone(), r.clone());
            let vb = st.v.write(acc, c.clone(), c.clone());
            let wv = work.write(acc, wrows, 0..1);
            let p = SvdMerge::new(&dl, alpha, beta, ub, vb, mid - begin, column_slice(wv))?;
            *slot.problem.write() = Some(p);
            Ok(())
        });
        Task::new(format!("{}.deflate", self.name), body)
            .stage(BDSDC)
            .cost((8 * len * len) as f64, (32 * len * len) as f64)
            .footprint(footprint)
    }

    /// The `order` task: the output order, the deflated columns moved into
    /// place (at the root into the descending order) and the node's singular
    /// values.
    fn order_task(&self) -> Task<'static> {
        let (len, is_root) = (self.len, self.is_root);
        let footprint = Footprint::new()
            .read(self.st.scale_region())
            .write(self.all())
            .write(Region::new(self.st.d.id(), self.r.clone(), 0..1))
            .write(self.ureg())
            .write(self.vreg());
        let (slot, st, r, c) = (
            self.slot.clone(),
            self.st.clone(),
            self.r.clone(),
            self.c.clone(),
        );
        let body = with_access(move |acc| {
            if st.scale(acc) == T::zero() {
                return Ok(());
            }
            let mut guard = slot.problem.write();
            let p = guard
                .as_mut()
                .ok_or_else(|| Error::InvalidArgument("bdsdc order before deflation".into()))?;
            let ub = st.u.write(acc, r.clone(), r.clone());
            let vb = st.v.write(acc, c.clone(), c.clone());
            p.order_output(ub, vb, is_root)?;
            let mut dl = vec![T::zero(); r.len()];
            p.singular_values_into(&mut dl);
            let mut dv = st.d.write(acc, r.clone(), 0..1);
            for (i, x) in dl.into_iter().enumerate() {
                dv[(i, 0)] = x;
            }
            Ok(())
        });
        Task::new(format!("{}.order", self.name), body)
            .stage(BDSDC)
            // A sort and at most `len` column moves in each block.
            .cost((20 * len) as f64, (32 * len * len) as f64)
            .footprint(footprint)
    }

    /// The `apply` task of column tile `tile` ([`SvdMerge::apply_cols`]) and
    /// its destination columns (the node's tile, or at the root the mirrored
    /// tile of the final descending order).
    fn apply_task(&self, tile: Range<usize>) -> (Range<usize>, Task<'static>) {
        let (len, is_root, n) = (self.len, self.is_root, self.st.n);
        let dest = if is_root {
            n - tile.end..n - tile.start
        } else {
            self.begin + tile.start..self.begin + tile.end
        };
        let footprint = Footprint::new()
            .read(self.st.scale_region())
            .read(self.all())
            .read(self.wreg())
            .write(Region::new(self.st.u.id(), self.r.clone(), dest.clone()))
            .write(Region::new(self.st.v.id(), self.c.clone(), dest.clone()));
        let name = format!("{}.apply[{}..{}]", self.name, tile.start, tile.end);
        let cost = (
            (4 * len * len * tile.len()) as f64,
            (16 * len * (len + tile.len())) as f64,
        );
        let (slot, st, r, c) = (
            self.slot.clone(),
            self.st.clone(),
            self.r.clone(),
            self.c.clone(),
        );
        let (work, wrows, dest2) = (self.work.clone(), self.wrows.clone(), dest.clone());
        let body = with_access(move |acc| {
            let mut uo = st.u.write(acc, r.clone(), dest2.clone());
            let mut vo = st.v.write(acc, c.clone(), dest2.clone());
            if st.scale(acc) == T::zero() {
                // A zero bidiagonal: U = V = I (as the serial driver).
                if is_root {
                    for (j, col) in dest2.clone().enumerate() {
                        uo.rb_mut().col_mut(j).fill(T::zero());
                        vo.rb_mut().col_mut(j).fill(T::zero());
                        uo[(col, j)] = T::one();
                        vo[(col, j)] = T::one();
                    }
                }
                return Ok(());
            }
            let guard = slot.problem.read();
            let p = deflated(&guard)?;
            let wv = column_slice_ref(work.read(acc, wrows, 0..1));
            if is_root {
                // The descending order through a reversed view
                // of the destination (no temporary, no copy).
                p.apply_cols(
                    tile.clone(),
                    wv,
                    uo.reverse_cols_mut(),
                    vo.reverse_cols_mut(),
                )
            } else {
                p.apply_cols(tile.clone(), wv, uo, vo)
            }
        });
        let task = Task::new(name, body)
            .stage(BDSDC)
            .cost(cost.0, cost.1)
            .footprint(footprint);
        (dest, task)
    }

    /// The `free` task: the merge's workspace (O(len^2)) is freed as soon as
    /// the last apply is done (its write of the problem follows their reads),
    /// not when the graph is dropped.
    fn free_task(&self) -> Task<'static> {
        let slot = self.slot.clone();
        Task::new(format!("{}.free", self.name), move |_| {
            slot.problem.write().take();
            Ok(())
        })
        .stage(BDSDC)
        .footprint(Footprint::new().write(self.all()))
    }
}
