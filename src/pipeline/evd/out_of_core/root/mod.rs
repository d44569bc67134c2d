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
//!    applied to every column block of `B` ([`apply_q2_groups`]);
//! 4. `io.q1` and `q1`: the stage-1 panels likewise, last panel first
//!    ([`apply_q1_panels`]);
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
use super::super::{Q1, Q2, STEDC};
use super::IO;
use crate::graph::{Flow, Footprint, Lane, Region, Task, TaskGraph, TaskId};
use crate::linalg::back_transform::q1::{apply_q1_panels, panel_offsets};
use crate::linalg::back_transform::q2::{apply_q2_groups, Q2Plan};
use crate::linalg::band::sb2st::{ReflectorLayout, ReflectorsRef};
use crate::linalg::tridiagonal::stedc::{col_tiles, MergeProblem};
use crate::matrix::npy::ColumnFile;
use crate::matrix::scratch::{IoStats, ScratchFile};
use crate::matrix::SharedMatrix;
use crate::pipeline::task::{
    add_merge_ranges, column_slice, column_slice_ref, with_access, MergeSlot, Slot,
};
use crate::{Error, Result, Scalar};
use faer::reborrow::*;
use faer::MatRef;
use parking_lot::Mutex;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

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

/// The pass buffer and the chunk buffers (the flow orders their users).
struct Buffers<T> {
    b: Arc<SharedMatrix<T>>,
    q2: [Arc<SharedMatrix<T>>; 2],
    q1: [Arc<SharedMatrix<T>>; 2],
    /// Buffers of the Q2 tasks' transposed copies, reused from task to task.
    transposed: Arc<Mutex<Vec<Vec<T>>>>,
    /// A chain read whole: its load task, run once for every pass.
    q2_whole: Option<TaskId>,
    q1_whole: Option<TaskId>,
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

    // The passes.
    let width = inp.wide.min(n);
    let mut bufs = Buffers {
        b: Arc::new(SharedMatrix::deferred(n, width)),
        q2: chunk_buffers(q2_chunk_len(&inp.q2)),
        q1: chunk_buffers(q1_chunk_len(n, &inp.q1)),
        transposed: Arc::default(),
        q2_whole: None,
        q1_whole: None,
    };
    let mut last_write = None;
    let mut w0 = 0;
    while w0 < n {
        let w1 = (w0 + width).min(n);
        let mut pass = Pass {
            g: &mut *g,
            flow: &mut flow,
            inp: &inp,
            slot: &slot,
            bufs: &mut bufs,
            cols: w0..w1,
            tag: format!("[{w0}..{w1}]"),
        };
        last_write = Some(pass.add_tasks(&all, &shared_part));
        w0 = w1;
    }
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

fn chunk_buffers<T: Scalar>(len: usize) -> [Arc<SharedMatrix<T>>; 2] {
    [0, 1].map(|_| Arc::new(SharedMatrix::deferred(len, 1)))
}

/// The chunks of sweep groups, highest first (the order `Z := Q2 Z` needs).
fn q2_chunks(q2: &Q2Store) -> Vec<Range<usize>> {
    let g = q2.plan.groups();
    let k = q2.groups.max(1);
    (0..g.div_ceil(k))
        .map(|c| g.saturating_sub((c + 1) * k)..g - c * k)
        .collect()
}

/// The chunks of panels, last first.
fn q1_chunks<T>(q1: &Q1Store<T>) -> Vec<Range<usize>> {
    let (p, k) = (q1.panels, q1.chunk.max(1));
    (0..p.div_ceil(k))
        .map(|c| p.saturating_sub((c + 1) * k)..p - c * k)
        .collect()
}

fn q2_flat(q2: &Q2Store, groups: Range<usize>) -> Range<usize> {
    q2.layout.sweeps(q2.plan.group_sweeps(groups))
}

fn q2_chunk_len(q2: &Q2Store) -> usize {
    q2_chunks(q2)
        .into_iter()
        .map(|c| q2_flat(q2, c).len())
        .max()
        .unwrap_or(0)
}

fn q1_chunk_len<T>(n: usize, q1: &Q1Store<T>) -> usize {
    q1_chunks(q1)
        .into_iter()
        .map(|c| *panel_offsets(n, q1.b, c).last().expect("at least 0"))
        .max()
        .unwrap_or(0)
}

/// The task reading elements `flat` of `file` into `buf` on the I/O lane
/// `io`, after the tasks that wrote the file (`written`: a stage's handle,
/// outside this flow); the flow orders it after the last users of `buf`.
#[allow(clippy::too_many_arguments)]
fn add_load<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    name: String,
    io: Lane,
    file: &Arc<ScratchFile>,
    flat: Range<usize>,
    buf: &Arc<SharedMatrix<T>>,
    written: &[TaskId],
) -> TaskId {
    let fp = Footprint::new()
        .read(Region::new(file.id(), flat.clone(), 0..1))
        .write(Region::new(buf.id(), 0..flat.len(), 0..1));
    let bytes = (flat.len() * std::mem::size_of::<T>()) as f64;
    let body = {
        let (file, buf) = (file.clone(), buf.clone());
        with_access(move |acc| {
            let v = buf.write(acc, 0..flat.len(), 0..1);
            file.read_at(flat.start as u64, column_slice(v))
        })
    };
    let task = Task::new(name, body)
        .stage(IO)
        .lane(io)
        .cost(0.0, bytes)
        .footprint(fp);
    let t = flow.add(g, task);
    g.succeed(t, written);
    t
}

/// One pass over output columns `cols` of the eigenvectors, in the pass
/// buffer `B`.
struct Pass<'p, T> {
    g: &'p mut TaskGraph<'static>,
    flow: &'p mut Flow,
    inp: &'p RootInputs<T>,
    slot: &'p Arc<MergeSlot<RootState<T>>>,
    bufs: &'p mut Buffers<T>,
    cols: Range<usize>,
    /// `[w0..w1]`, for the task names.
    tag: String,
}

impl<T: Scalar> Pass<'_, T> {
    /// Adds the pass's tasks (after the previous pass's, through the flow);
    /// returns its write task.
    fn add_tasks(&mut self, all: &Region, shared_part: &Region) -> TaskId {
        let n = self.inp.tri.n();
        // 1. The deflated vectors of these columns.
        self.add_deflated(shared_part);
        // 2. The root columns, merge tile by merge tile (the in-memory tiles).
        for tile in col_tiles(n, self.inp.dc_tile) {
            if tile.start >= self.cols.start && tile.end <= self.cols.end {
                self.add_apply(all, tile);
            }
        }
        // 3. Q2, a range of sweep groups at a time.
        let chunks = q2_chunks(&self.inp.q2);
        let whole = chunks.len() == 1;
        for (c, groups) in chunks.into_iter().enumerate() {
            self.add_q2_chunk(c % 2, groups, whole);
        }
        // 4. Q1, a range of panels at a time.
        let chunks = q1_chunks(&self.inp.q1);
        let whole = chunks.len() == 1;
        for (c, panels) in chunks.into_iter().enumerate() {
            self.add_q1_chunk(c, panels, whole);
        }
        // 5. The block written at its columns.
        self.add_write()
    }

    fn push(&mut self, task: Task<'static>) -> TaskId {
        self.flow.add(self.g, task)
    }

    /// The whole pass buffer.
    fn whole_b(&self) -> Region {
        Region::new(self.bufs.b.id(), 0..self.inp.tri.n(), 0..self.cols.len())
    }

    /// The deflated vectors of the pass's columns, read into `B`.
    fn add_deflated(&mut self, shared_part: &Region) {
        let n = self.inp.tri.n();
        let width = self.cols.len();
        let (slot, b, cols) = (self.slot.clone(), self.bufs.b.clone(), self.cols.clone());
        let body = with_access(move |acc| {
            let guard = slot.problem.read();
            let state = guard
                .as_ref()
                .ok_or_else(|| Error::InvalidArgument("pass before the root deflation".into()))?;
            let mut bv = b.write(acc, 0..n, 0..cols.len());
            for (c, s) in state.problem.deflated_in(cols.clone()) {
                let col = bv
                    .rb_mut()
                    .col_mut(c - cols.start)
                    .try_as_col_major_mut()
                    .expect("unit row stride")
                    .as_slice_mut();
                state.deflated.read_at((s * n) as u64, col)?;
            }
            Ok(())
        });
        let fp = Footprint::new()
            .read(shared_part.clone())
            .write(self.whole_b());
        let task = Task::new(format!("io.deflated{}", self.tag), body)
            .stage(IO)
            .lane(self.inp.io)
            .cost(0.0, (n * width * std::mem::size_of::<T>()) as f64)
            .footprint(fp);
        self.push(task);
    }

    /// The root's columns `tile` (a merge tile inside the pass).
    fn add_apply(&mut self, all: &Region, tile: Range<usize>) {
        let n = self.inp.tri.n();
        let w0 = self.cols.start;
        let (slot, b) = (self.slot.clone(), self.bufs.b.clone());
        let local = tile.start - w0..tile.end - w0;
        let body = {
            let local = local.clone();
            with_access(move |acc| {
                let guard = slot.problem.read();
                let state = guard
                    .as_ref()
                    .ok_or_else(|| Error::InvalidArgument("merge step before deflation".into()))?;
                let out = b.write(acc, 0..n, local);
                state.problem.apply_cols(tile, &state.work, out)
            })
        };
        let name = format!(
            "stedc.merge[0..{n}].apply[{}..{}]",
            w0 + local.start,
            w0 + local.end
        );
        let fp = Footprint::new().read(all.clone()).write(Region::new(
            self.bufs.b.id(),
            0..n,
            local.clone(),
        ));
        let task = Task::new(name, body)
            .stage(STEDC)
            .cost(
                (2 * n * n * local.len()) as f64,
                (8 * n * (n + local.len())) as f64,
            )
            .footprint(fp);
        self.push(task);
    }

    /// The load of the sweep groups `groups` into Q2 buffer `k` (once for all
    /// passes when one chunk holds them all) and their application to each
    /// column block of `B`.
    fn add_q2_chunk(&mut self, k: usize, groups: Range<usize>, whole: bool) {
        let (n, inp) = (self.inp.tri.n(), self.inp);
        let flat = q2_flat(&inp.q2, groups.clone());
        let buf = self.bufs.q2[k].clone();
        if self.bufs.q2_whole.is_none() || !whole {
            let name = format!("io.q2{}[{}..{}]", self.tag, groups.start, groups.end);
            let t = add_load(
                self.g,
                self.flow,
                name,
                inp.io,
                &inp.q2.file,
                flat.clone(),
                &buf,
                &inp.q2.written,
            );
            if whole {
                self.bufs.q2_whole = Some(t);
            }
        }
        for cb in col_tiles(self.cols.len(), inp.col_block) {
            let body = {
                let (buf, b, flat, groups, cb) = (
                    buf.clone(),
                    self.bufs.b.clone(),
                    flat.clone(),
                    groups.clone(),
                    cb.clone(),
                );
                let (layout, plan) = (inp.q2.layout.clone(), inp.q2.plan.clone());
                let (window, pool) = (inp.window_bytes, self.bufs.transposed.clone());
                with_access(move |acc| {
                    let data = buf.read(acc, 0..flat.len(), 0..1);
                    let refl = ReflectorsRef::window(&layout, flat.start, column_slice_ref(data));
                    // A transposed copy's buffer from the pool (one per
                    // running task), back to the pool after.
                    let mut y = pool.lock().pop().unwrap_or_default();
                    let z = b.write(acc, 0..n, cb);
                    apply_q2_groups(&refl, &plan, groups, window, z, &mut y);
                    pool.lock().push(y);
                    Ok(())
                })
            };
            let w0 = self.cols.start;
            let flops = 4.0 * flat.len() as f64 * cb.len() as f64;
            let name = format!(
                "q2.cols[{}..{}][{}..{}]",
                w0 + cb.start,
                w0 + cb.end,
                groups.start,
                groups.end
            );
            let fp = Footprint::new()
                .read(Region::new(buf.id(), 0..flat.len(), 0..1))
                .write(Region::new(self.bufs.b.id(), 0..n, cb.clone()));
            let task = Task::new(name, body)
                .stage(Q2)
                .cost(flops, flops / 4.0)
                .footprint(fp);
            self.push(task);
        }
    }

    /// Chunk `c` of the stage-1 panels, `panels`, loaded into Q1 buffer
    /// `c % 2` (once for all passes when one chunk holds them all) and applied
    /// to each column block of `B`.
    fn add_q1_chunk(&mut self, c: usize, panels: Range<usize>, whole: bool) {
        let (n, inp) = (self.inp.tri.n(), self.inp);
        let q1 = &inp.q1;
        let (b_q1, np) = (q1.b, q1.panels);
        let offsets = panel_offsets(n, b_q1, 0..panels.end);
        let flat = offsets[panels.start]..offsets[panels.end];
        let buf = self.bufs.q1[c % 2].clone();
        if self.bufs.q1_whole.is_none() || !whole {
            let name = format!("io.q1{}[{}..{}]", self.tag, panels.start, panels.end);
            let t = add_load(
                self.g,
                self.flow,
                name,
                inp.io,
                &q1.file,
                flat.clone(),
                &buf,
                &q1.written,
            );
            if whole {
                self.bufs.q1_whole = Some(t);
            }
        }
        for cb in col_tiles(self.cols.len(), inp.col_block) {
            let body = {
                let (buf, b, tf, flat, panels, cb) = (
                    buf.clone(),
                    self.bufs.b.clone(),
                    q1.t.clone(),
                    flat.clone(),
                    panels.clone(),
                    cb.clone(),
                );
                with_access(move |acc| {
                    let data = buf.read(acc, 0..flat.len(), 0..1);
                    let t: MatRef<'_, T> = tf.read(acc, 0..b_q1, 0..np * b_q1);
                    apply_q1_panels(column_slice_ref(data), panels, t, b.write(acc, 0..n, cb));
                    Ok(())
                })
            };
            let w0 = self.cols.start;
            let flops = 4.0 * flat.len() as f64 * cb.len() as f64;
            let name = format!(
                "q1.cols[{}..{}][{}..{}]",
                w0 + cb.start,
                w0 + cb.end,
                panels.start,
                panels.end
            );
            let fp = Footprint::new()
                .read(Region::new(buf.id(), 0..flat.len(), 0..1))
                .read(Region::new(q1.t.id(), 0..b_q1, 0..np * b_q1))
                .write(Region::new(self.bufs.b.id(), 0..n, cb.clone()));
            let task = Task::new(name, body)
                .stage(Q1)
                .cost(flops, flops / 4.0)
                .footprint(fp);
            let t = self.push(task);
            if c == 0 {
                // The T factors come from stage 1, outside this flow.
                self.g.succeed(t, &q1.written);
            }
        }
    }

    /// `B` written at its columns of the eigenvector file.
    fn add_write(&mut self) -> TaskId {
        let n = self.inp.tri.n();
        let (w0, width) = (self.cols.start, self.cols.len());
        let (b, out) = (self.bufs.b.clone(), self.inp.out.clone());
        let body = with_access(move |acc| out.write_columns(w0, b.read(acc, 0..n, 0..width)));
        let task = Task::new(format!("io.write{}", self.tag), body)
            .stage(IO)
            .lane(self.inp.io)
            .cost(0.0, (n * width * std::mem::size_of::<T>()) as f64)
            .footprint(Footprint::new().read(self.whole_b()));
        self.push(task)
    }
}
