//! The root merge of an out-of-core divide and conquer and the passes that
//! turn its eigenvectors into those of the matrix, `W` columns at a time.
//!
//! The root deflates from its two children stored apart
//! ([`MergeProblem::new_split`]; the deflated vectors go to a scratch file),
//! solves its secular roots and forms `z-hat` as the in-memory root does. Then
//! each pass, over output columns `w0..w1`:
//!
//! 1. `io.deflated`: reads the deflated vectors of those columns into the
//!    pass buffer `B` (`n x W`);
//! 2. `dc.root.apply`: the root columns, merge tile by merge tile;
//! 3. `io.q2` and `q2`: the stage-2 reflectors read back a range of sweep
//!    groups at a time (highest first) into one of two buffers, each range
//!    applied to every column block of `B` ([`apply_q2_groups`](crate::linalg::back_transform::q2::apply_q2_groups));
//! 4. `io.q1` and `q1`: the stage-1 panels likewise, last panel first
//!    ([`apply_q1_panels`](crate::linalg::back_transform::q1::apply_q1_panels));
//! 5. `io.write`: `B` written at its columns of the eigenvector file.
//!
//! Every product is the in-memory graph's on the same column block (the pass
//! width is a multiple of the column block and of the merge tile), so the
//! eigenvectors are bitwise those of the in-memory run. The reads and writes
//! run on the I/O lane in creation order, which is an order the edges allow:
//! each I/O task waits only for tasks that wait for earlier I/O tasks.

use super::super::sb2st::Tridiagonal;
use super::super::stedc::{
    add_finish, add_free, merge_step, root_tasks_for, store_values, DcNodes,
};
use super::super::STEDC;
use crate::graph::{Flow, Footprint, Lane, Region, Task, TaskGraph, TaskId};
use crate::linalg::back_transform::q2::Q2Plan;
use crate::linalg::band::sb2st::ReflectorLayout;
use crate::linalg::tridiagonal::stedc::MergeProblem;
use crate::matrix::npy::ColumnFile;
use crate::matrix::scratch::{IoStats, ScratchFile};
use crate::matrix::SharedMatrix;
use crate::pipeline::task::{add_merge_ranges, with_access, MergeSlot, Slot};
use crate::{Error, Result, Scalar};
use std::path::PathBuf;
use std::sync::Arc;

mod pass;

/// The root merge's state between its tasks.
pub(super) struct RootState<T> {
    problem: MergeProblem<T>,
    /// The kept vectors' halves, type-ordered ([`MergeProblem::apply_cols`]).
    work: Vec<T>,
    /// The deflated vectors, slot `s` at element offset `s n`.
    deflated: ScratchFile,
}

/// What the stage-2 reflectors on disk are.
pub(super) struct Q2Store {
    pub(super) file: Arc<ScratchFile>,
    pub(super) layout: Arc<ReflectorLayout>,
    pub(super) plan: Arc<Q2Plan>,
    /// Groups per chunk.
    pub(super) groups: usize,
    /// After these, the file is complete.
    pub(super) written: Vec<TaskId>,
}

/// What the stage-1 reflectors on disk are.
pub(super) struct Q1Store<T> {
    pub(super) file: Arc<ScratchFile>,
    /// `T_p` side by side, `b x (P b)`.
    pub(super) t: Arc<SharedMatrix<T>>,
    pub(super) b: usize,
    pub(super) panels: usize,
    /// Panels per chunk.
    pub(super) chunk: usize,
    /// After these, the file and `t` are complete.
    pub(super) written: Vec<TaskId>,
}

/// Everything the root and the passes need.
pub(super) struct RootInputs<T> {
    pub(super) nodes: DcNodes<T>,
    pub(super) tri: Tridiagonal<T>,
    pub(super) halves: [Arc<SharedMatrix<T>>; 2],
    pub(super) cut: usize,
    /// Tasks the root deflation also waits for (the stage-2 reflectors freed).
    pub(super) after: Vec<TaskId>,
    pub(super) q2: Q2Store,
    pub(super) q1: Q1Store<T>,
    pub(super) out: Arc<ColumnFile<T>>,
    pub(super) scratch: PathBuf,
    pub(super) stats: Arc<IoStats>,
    pub(super) io: Lane,
    pub(super) wide: usize,
    pub(super) col_block: usize,
    pub(super) dc_tile: usize,
    pub(super) window_bytes: usize,
}

/// Adds the root merge and the passes; returns the values' slot and the
/// tasks after which everything is computed and written. The tasks continue
/// the flow of the nodes below the root (their edges follow from the
/// footprints); the scratch files written by the spills and the T factors
/// come from the stages' handles (`written`).
pub(super) fn add_root_and_passes<T: Scalar>(
    g: &mut TaskGraph<'static>,
    mut inp: RootInputs<T>,
) -> Result<(Slot<T>, Vec<TaskId>)> {
    let n = inp.tri.n();
    let mut flow = std::mem::take(&mut inp.nodes.flow);
    let slot = Arc::new(MergeSlot::<RootState<T>>::new());
    let roots = root_tasks_for(n);
    let all = Region::new(slot.id, 0..2 * roots + 1, 0..1);
    let shared_part = Region::new(slot.id, 2 * roots..2 * roots + 1, 0..1);
    let deflate = add_root_deflate(g, &mut flow, &inp, &slot, &all);
    // Not a data edge: the memory plan frees the matrix and the stage-2
    // reflectors before the root's deflation, a peak of its own.
    g.succeed(deflate, &inp.after);
    // The range tasks come from a helper shared with the SVD, which adds
    // their edge from the deflation (or the order), as their footprints do.
    let step = merge_step(
        0,
        n,
        "roots",
        roots,
        0,
        (20 * n * n / roots) as f64,
        &shared_part,
    );
    for t in add_merge_ranges(
        g,
        &slot,
        step,
        deflate,
        |_| false,
        |s: &RootState<T>| s.problem.k(),
        |s: &RootState<T>, r| s.problem.solve_roots_range(r),
    ) {
        flow.record(g, t);
    }
    let order = add_root_order(g, &mut flow, &inp, &slot, &all);
    let step = merge_step(
        0,
        n,
        "lowner",
        roots,
        roots,
        (4 * n * n / roots) as f64,
        &shared_part,
    );
    for t in add_merge_ranges(
        g,
        &slot,
        step,
        order,
        |_| false,
        |s: &RootState<T>| s.problem.k(),
        |s: &RootState<T>, r| s.problem.lowner_range(r),
    ) {
        flow.record(g, t);
    }
    let (values, finish) = add_finish(g, &inp.nodes, &[order], &inp.tri);

    let last_write = pass::add_passes(g, &mut flow, &inp, &slot, (&all, &shared_part));
    // The free task writes the whole slot: it follows every apply reading it.
    let free = add_free(g, &slot, format!("stedc.merge[0..{n}].free"), all);
    flow.record(g, free);
    let mut exits = vec![finish, free];
    exits.extend(last_write);
    Ok((values, exits))
}

/// The root's deflation from its two children stored apart, the deflated
/// vectors to a scratch file.
fn add_root_deflate<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    inp: &RootInputs<T>,
    slot: &Arc<MergeSlot<RootState<T>>>,
    all: &Region,
) -> TaskId {
    let (n, cut, nodes) = (inp.tri.n(), inp.cut, &inp.nodes);
    let [left, right] = &inp.halves;
    let (slot, d, e) = (slot.clone(), nodes.d.clone(), nodes.e.clone());
    let (l, r) = (left.clone(), right.clone());
    let (scratch, stats) = (inp.scratch.clone(), inp.stats.clone());
    let body = with_access(move |acc| {
        let dv = d.read(acc, 0..n, 0..1);
        let ev = e.read(acc, cut - 1..cut, 0..1);
        let dl: Vec<T> = (0..n).map(|i| dv[(i, 0)]).collect();
        let deflated = ScratchFile::create(&scratch, stats)?;
        let (problem, work) = MergeProblem::new_split(
            &dl,
            l.read(acc, 0..cut, 0..cut),
            r.read(acc, 0..n - cut, 0..n - cut),
            ev[(0, 0)],
            |s, v| deflated.write_at((s * n) as u64, v),
        )?;
        *slot.problem.write() = Some(RootState {
            problem,
            work,
            deflated,
        });
        Ok(())
    });
    let fp = Footprint::new()
        .read(Region::new(nodes.d.id(), 0..n, 0..1))
        .read(Region::new(nodes.e.id(), cut - 1..cut, 0..1))
        .read(Region::new(left.id(), 0..cut, 0..cut))
        .read(Region::new(right.id(), 0..n - cut, 0..n - cut))
        .write(all.clone());
    let task = Task::new(format!("stedc.merge[0..{n}].deflate"), body)
        .stage(STEDC)
        .cost((4 * n * n) as f64, (16 * n * n) as f64)
        .footprint(fp);
    flow.add(g, task)
}

/// The root's output order and merged eigenvalues.
fn add_root_order<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    inp: &RootInputs<T>,
    slot: &Arc<MergeSlot<RootState<T>>>,
    all: &Region,
) -> TaskId {
    let n = inp.tri.n();
    let (slot, d) = (slot.clone(), inp.nodes.d.clone());
    let body = with_access(move |acc| {
        let mut guard = slot.problem.write();
        let state = guard
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("merge order before deflation".into()))?;
        state.problem.order_only()?;
        store_values(&state.problem, &d, acc, 0..n);
        Ok(())
    });
    let fp = Footprint::new()
        .write(all.clone())
        .write(Region::new(inp.nodes.d.id(), 0..n, 0..1));
    let task = Task::new(format!("stedc.merge[0..{n}].order"), body)
        .stage(STEDC)
        .cost((20 * n) as f64, (8 * n) as f64)
        .footprint(fp);
    flow.add(g, task)
}
