//! The merge tasks of the divide and conquer (LAPACK `dlaed1`): per merge
//! the deflation, parallel secular-root tasks, the Löwner step and the
//! eigenvector product as column-tile tasks, and the pieces the out-of-core
//! root merge shares with them.

use super::super::STEDC;
use super::NodeCtx;
use crate::graph::{Flow, Footprint, Region, Task, TaskGraph, TaskId};
use crate::linalg::tridiagonal::stedc::col_tiles;
use crate::linalg::tridiagonal::stedc::merge::MergeProblem;
use crate::matrix::SharedMatrix;
use crate::pipeline::task::{
    add_merge_ranges, column_slice, column_slice_ref, deflated, with_access, MergeRanges, MergeSlot,
};
use crate::{Error, Scalar};
use std::ops::Range;
use std::sync::Arc;

/// The merge `begin..cut..end`, its block of the eigenvectors in `z` at
/// offset `off`.
pub(super) struct Merge<'z, T> {
    pub(super) z: &'z Arc<SharedMatrix<T>>,
    pub(super) off: usize,
    pub(super) begin: usize,
    pub(super) cut: usize,
    pub(super) end: usize,
}

/// The regions a merge's tasks share.
struct MergeRegions {
    /// The whole slot. Pseudo-matrix rows of the slot: `0..roots` = root
    /// ranges, `roots..2 roots` = z-hat ranges, `2 roots` = the rest.
    all: Region,
    /// The rest: what the range tasks read.
    shared_part: Region,
    /// The merge's eigenvalues in `d`.
    d: Region,
    /// Its diagonal block of the eigenvectors.
    z: Region,
    /// Its rows of the workspace.
    work: Region,
}

impl<T: Scalar> Merge<'_, T> {
    /// Adds the merge's tasks after its children (through `flow`): deflate,
    /// roots, order, Löwner, apply tiles and free. Returns what its parent
    /// waits for.
    pub(super) fn add(
        &self,
        g: &mut TaskGraph<'static>,
        flow: &mut Flow,
        ctx: &NodeCtx<'_, T>,
    ) -> Vec<TaskId> {
        let (begin, end) = (self.begin, self.end);
        let len = end - begin;
        let roots = root_tasks_for(len);
        let slot = Arc::new(MergeSlot::<MergeProblem<T>>::new());
        let zr = self.zr();
        let regions = MergeRegions {
            all: Region::new(slot.id, 0..2 * roots + 1, 0..1),
            shared_part: Region::new(slot.id, 2 * roots..2 * roots + 1, 0..1),
            d: Region::new(ctx.d.id(), begin..end, 0..1),
            z: Region::new(self.z.id(), zr.clone(), zr),
            work: Region::new(ctx.work.id(), begin * ctx.w..end * ctx.w, 0..1),
        };
        let deflate = self.add_deflate(g, flow, ctx, &slot, &regions);
        // The range tasks come from a helper shared with the SVD, which adds
        // their edge from the deflation (the same edge their footprints give).
        let roots_step = merge_step(
            begin,
            end,
            "roots",
            roots,
            0,
            (20 * len * len / roots) as f64,
            &regions.shared_part,
        );
        for t in add_merge_ranges(
            g,
            &slot,
            roots_step,
            deflate,
            |_| false,
            MergeProblem::k,
            MergeProblem::solve_roots_range,
        ) {
            flow.record(g, t);
        }
        let order = self.add_order(g, flow, ctx, &slot, &regions);
        // Disjoint ranges of z-hat (checked by `SplitColumns`).
        let lowner_step = merge_step(
            begin,
            end,
            "lowner",
            roots,
            roots,
            (4 * len * len / roots) as f64,
            &regions.shared_part,
        );
        for t in add_merge_ranges(
            g,
            &slot,
            lowner_step,
            order,
            |_| false,
            MergeProblem::k,
            MergeProblem::lowner_range,
        ) {
            flow.record(g, t);
        }
        let mut node_exits = vec![order];
        for tile in col_tiles(len, ctx.col_tile) {
            node_exits.push(self.add_apply(g, flow, ctx, &slot, &regions, tile));
        }
        // The merge's workspace (O(len^2)) is freed as soon as the last
        // apply is done, not when the graph is dropped: the free task writes
        // the whole slot, so it follows every task reading it.
        let name = format!("stedc.merge[{begin}..{end}].free");
        let free = add_free(g, &slot, name, regions.all);
        flow.record(g, free);
        node_exits
    }

    /// The merge's rows and columns in `z`.
    fn zr(&self) -> Range<usize> {
        self.begin - self.off..self.end - self.off
    }

    /// Deflation: after both children, owns the node's d, z block, slot and
    /// workspace.
    fn add_deflate(
        &self,
        g: &mut TaskGraph<'static>,
        flow: &mut Flow,
        ctx: &NodeCtx<'_, T>,
        slot: &Arc<MergeSlot<MergeProblem<T>>>,
        r: &MergeRegions,
    ) -> TaskId {
        let (begin, cut, end) = (self.begin, self.cut, self.end);
        let (len, n1) = (end - begin, cut - begin);
        let (slot, d, e, z) = (slot.clone(), ctx.d.clone(), ctx.e.clone(), self.z.clone());
        let (work, wrows, zr) = (ctx.work.clone(), r.work.rows.clone(), self.zr());
        let body = with_access(move |acc| {
            let dv = d.read(acc, begin..end, 0..1);
            let ev = e.read(acc, cut - 1..cut, 0..1);
            let q = z.write(acc, zr.clone(), zr);
            let wv = work.write(acc, wrows, 0..1);
            let dl: Vec<T> = (0..len).map(|i| dv[(i, 0)]).collect();
            let problem = MergeProblem::new(&dl, q, n1, ev[(0, 0)], column_slice(wv))?;
            *slot.problem.write() = Some(problem);
            Ok(())
        });
        let fp = Footprint::new()
            .read(r.d.clone())
            .read(Region::new(ctx.e.id(), cut - 1..cut, 0..1))
            .write(r.z.clone())
            .write(r.work.clone())
            .write(r.all.clone());
        let task = Task::new(format!("stedc.merge[{begin}..{end}].deflate"), body)
            .stage(STEDC)
            .cost((4 * len * len) as f64, (16 * len * len) as f64)
            .footprint(fp);
        flow.add(g, task)
    }

    /// The output order, the deflated columns moved into place and the
    /// merged eigenvalues: O(len) work plus the column moves.
    fn add_order(
        &self,
        g: &mut TaskGraph<'static>,
        flow: &mut Flow,
        ctx: &NodeCtx<'_, T>,
        slot: &Arc<MergeSlot<MergeProblem<T>>>,
        r: &MergeRegions,
    ) -> TaskId {
        let (begin, end) = (self.begin, self.end);
        let len = end - begin;
        let (slot, d, z, zr) = (slot.clone(), ctx.d.clone(), self.z.clone(), self.zr());
        let body = with_access(move |acc| {
            let mut guard = slot.problem.write();
            let problem = guard
                .as_mut()
                .ok_or_else(|| Error::InvalidArgument("merge order before deflation".into()))?;
            problem.order_output(z.write(acc, zr.clone(), zr))?;
            store_values(problem, &d, acc, begin..end);
            Ok(())
        });
        let fp = Footprint::new()
            .write(r.all.clone())
            .write(r.d.clone())
            .write(r.z.clone());
        let task = Task::new(format!("stedc.merge[{begin}..{end}].order"), body)
            .stage(STEDC)
            // A sort and at most `len` column moves.
            .cost((20 * len) as f64, (16 * len * len) as f64)
            .footprint(fp);
        flow.add(g, task)
    }

    /// The apply task of column tile `tile` (of the merge's columns): the
    /// eigenvectors of the rank-one problem times the kept halves.
    fn add_apply(
        &self,
        g: &mut TaskGraph<'static>,
        flow: &mut Flow,
        ctx: &NodeCtx<'_, T>,
        slot: &Arc<MergeSlot<MergeProblem<T>>>,
        r: &MergeRegions,
        tile: Range<usize>,
    ) -> TaskId {
        let (begin, end, off) = (self.begin, self.end, self.off);
        let len = end - begin;
        let (slot, z, work) = (slot.clone(), self.z.clone(), ctx.work.clone());
        let cols = begin + tile.start - off..begin + tile.end - off;
        let body = {
            let (cols, wrows, zr) = (cols.clone(), r.work.rows.clone(), self.zr());
            with_access(move |acc| {
                // Apply tasks share the problem and the workspace
                // read-only and write disjoint column tiles of the
                // node's block.
                let guard = slot.problem.read();
                let wv = work.read(acc, wrows, 0..1);
                let out = z.write(acc, zr, cols);
                deflated(&guard)?.apply_cols(tile, column_slice_ref(wv), out)
            })
        };
        let name = format!(
            "stedc.merge[{begin}..{end}].apply[{}..{}]",
            cols.start + off,
            cols.end + off
        );
        let fp = Footprint::new()
            .read(r.all.clone())
            .read(r.work.clone())
            .write(Region::new(self.z.id(), self.zr(), cols.clone()));
        let task = Task::new(name, body)
            .stage(STEDC)
            .cost(
                (2 * len * len * cols.len()) as f64,
                (8 * len * (len + cols.len())) as f64,
            )
            .footprint(fp);
        flow.add(g, task)
    }
}

/// Tasks a merge of order `len` splits its secular roots and Löwner step into.
pub(in crate::pipeline::evd) fn root_tasks_for(len: usize) -> usize {
    (len / 512).clamp(1, 8)
}

/// The [`MergeRanges`] of one parallel step (`roots`, `lowner`) of merge
/// `begin..end`.
pub(in crate::pipeline::evd) fn merge_step(
    begin: usize,
    end: usize,
    step: &str,
    count: usize,
    first_row: usize,
    flops: f64,
    shared_part: &Region,
) -> MergeRanges {
    let len = end - begin;
    MergeRanges {
        name: format!("stedc.merge[{begin}..{end}].{step}"),
        stage: STEDC,
        count,
        first_row,
        cost: (flops, (8 * len * len / count) as f64),
        reads: Footprint::new().read(shared_part.clone()),
    }
}

/// Writes the merged eigenvalues of `problem` (after its order step) into
/// rows `range` of `d`.
pub(in crate::pipeline::evd) fn store_values<T: Scalar>(
    problem: &MergeProblem<T>,
    d: &SharedMatrix<T>,
    acc: &crate::matrix::access::Access<'_>,
    range: Range<usize>,
) {
    let mut dl = vec![T::zero(); range.len()];
    problem.eigenvalues_into(&mut dl);
    let mut dv = d.write(acc, range, 0..1);
    for (i, x) in dl.into_iter().enumerate() {
        dv[(i, 0)] = x;
    }
}

/// The task that drops a merge's problem (its `O(len^2)` state) once its last
/// reader is done.
pub(in crate::pipeline::evd) fn add_free<T: Send + Sync + 'static>(
    g: &mut TaskGraph<'static>,
    slot: &Arc<MergeSlot<T>>,
    name: String,
    all: Region,
) -> TaskId {
    let slot = slot.clone();
    g.add(
        Task::new(name, move |_| {
            slot.problem.write().take();
            Ok(())
        })
        .stage(STEDC)
        .footprint(Footprint::new().write(all)),
    )
}
