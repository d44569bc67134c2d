//! The passes of the out-of-core root (module docs of [`super`]): per pass
//! of output columns, the deflated vectors read back, the root columns, Q2
//! and Q1 a chunk of reflectors at a time, and the block written.

use super::super::super::{Q1, Q2, STEDC};
use super::super::IO;
use super::{Q1Store, Q2Store, RootInputs, RootState};
use crate::graph::{Flow, Footprint, Lane, Region, Task, TaskGraph, TaskId};
use crate::linalg::back_transform::q1::{apply_q1_panels, panel_offsets};
use crate::linalg::back_transform::q2::apply_q2_groups;
use crate::linalg::band::sb2st::ReflectorsRef;
use crate::linalg::tridiagonal::stedc::col_tiles;
use crate::matrix::scratch::ScratchFile;
use crate::matrix::SharedMatrix;
use crate::pipeline::task::{column_slice, column_slice_ref, with_access, MergeSlot};
use crate::{Error, Scalar};
use faer::reborrow::*;
use faer::MatRef;
use parking_lot::Mutex;
use std::ops::Range;
use std::sync::Arc;

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

/// Adds the passes over the output columns, `inp.wide` at a time, after the
/// root's tasks (through `flow`); returns the last pass's write task.
pub(super) fn add_passes<T: Scalar>(
    g: &mut TaskGraph<'static>,
    flow: &mut Flow,
    inp: &RootInputs<T>,
    slot: &Arc<MergeSlot<RootState<T>>>,
    (all, shared_part): (&Region, &Region),
) -> Option<TaskId> {
    let n = inp.tri.n();
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
            flow: &mut *flow,
            inp,
            slot,
            bufs: &mut bufs,
            cols: w0..w1,
            tag: format!("[{w0}..{w1}]"),
        };
        last_write = Some(pass.add_tasks(all, shared_part));
        w0 = w1;
    }
    last_write
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
