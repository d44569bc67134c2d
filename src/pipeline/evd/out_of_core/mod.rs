//! The eigendecomposition with vectors when it does not fit in memory (issue
//! 21): the two-stage graph with the large structures on disk between the
//! stages that make and use them, and the eigenvectors written to a file by
//! blocks of columns.
//!
//! Peak memory of the in-memory graph is about `3.1 n^2` words: the matrix
//! (which holds the stage-1 reflectors), the stage-2 reflectors, the
//! eigenvectors and the root merge's workspace. Out of core:
//!
//! * stage 1 (sy2sb) runs on the matrix in memory; each panel's reflectors go
//!   to a scratch file as soon as its QR is done, and the matrix is freed when
//!   stage 1 ends;
//! * stage 2 (sb2st) keeps its reflectors in memory while it runs, then writes
//!   them to a scratch file and frees them;
//! * the divide and conquer keeps the two children of its root in two
//!   matrices of `n^2 / 4` words each (never the `n x n` block); the root
//!   deflates from them ([`crate::linalg::tridiagonal::stedc::MergeProblem::new_split`]),
//!   sending the deflated vectors to a scratch file, and frees them;
//! * the eigenvectors are then formed `W` columns at a time (`W` from the
//!   memory limit): the root's product, `Q2` and `Q1` with their reflectors
//!   read back from disk a chunk at a time, and the block written at its
//!   offset into the eigenvector file (see [`root`](self) for the pass).
//!
//! So the resident peak is about `n^2` words (stage 1's matrix, or the root's
//! children and workspace), plus a pass buffer of `n W` words. Every read and
//! write is a task on one stream lane ([`OutOfCore::io_lane`]) in stage `io`,
//! so the trace shows the I/O beside the compute and the stage table its
//! rate. The tasks compute exactly what the in-memory graph's do, on the same
//! column blocks, so the eigenvalues and eigenvectors are bitwise those of
//! [`super::evd_graph`] with the same options, on any number of threads.
//!
//! [`plan()`] decides whether a run fits in memory, out of core, or not at
//! all (with the figures).

mod check;
mod plan;
mod root;
#[cfg(test)]
mod tests;

pub use check::{sample_columns, sampled_check, LowerPart, SampledCheck};
pub use plan::{plan, DiskSpace, MemoryPlan, OocPlan, OutOfCore};

use super::sb2st::{sb2st, Q2Reflectors, Tridiagonal};
use super::stedc::{add_nodes, NodeStore};
use super::sy2sb::{sy2sb, Band, Sy2sbReflectors};
use super::{dc_scale, grain, owned_lower, prepare, EvdJob, SB2ST, SY2SB};
use crate::graph::{Footprint, Lane, Region, Task, TaskGraph, TaskId};
use crate::linalg::back_transform::q1::panel_offsets;
use crate::linalg::back_transform::q2::Q2Plan;
use crate::linalg::band::sy2sb::panel_rows;
use crate::linalg::tridiagonal::stedc::{DcNode, DcParams, DcTree};
use crate::matrix::npy::ColumnFile;
use crate::matrix::scratch::{IoStats, ScratchFile};
use crate::pipeline::task::{with_access, FinalValues};
use crate::pipeline::EvdOptions;
use crate::runtime::{RunReport, Runtime};
use crate::{Error, Result, Scalar};
use faer::Mat;
use root::{add_root_and_passes, Q1Store, Q2Store, RootInputs};
use std::sync::Arc;

/// Stage name of the reads and writes of an out-of-core run.
pub const IO: &str = "io";

/// The graph of an out-of-core eigendecomposition and where its results land.
pub struct OocGraph<T> {
    /// The task graph; run it on a runtime with the I/O lane
    /// ([`crate::runtime::RuntimeBuilder::streams`] above
    /// [`OutOfCore::io_lane`]).
    pub graph: TaskGraph<'static>,
    results: OocResults<T>,
}

impl<T: Scalar> OocGraph<T> {
    /// Splits into the graph (to run) and the handle its results land in.
    pub fn into_parts(self) -> (TaskGraph<'static>, OocResults<T>) {
        (self.graph, self.results)
    }
}

/// Where the results of an [`OocGraph`] land: the eigenvalues here, the
/// eigenvectors in the [`ColumnFile`] the graph was given.
pub struct OocResults<T> {
    values: FinalValues<T>,
    stats: Arc<IoStats>,
}

impl<T: Scalar> OocResults<T> {
    /// Eigenvalues, ascending and unscaled, once the graph ran successfully
    /// (every eigenvector is then written too); [`Error::NotRun`] before.
    pub fn values(&self) -> Result<Vec<T>> {
        self.values.get()
    }

    /// Bytes read and written (scratch and eigenvector files) so far.
    pub fn io(&self) -> &IoStats {
        &self.stats
    }
}

/// Result of [`eigh_out_of_core`].
#[derive(Debug)]
#[non_exhaustive]
pub struct OutOfCoreEigen<T> {
    /// Eigenvalues, ascending (column `j` of the eigenvector file belongs to
    /// `values[j]`).
    pub values: Vec<T>,
    /// The run's timings.
    pub report: RunReport,
    /// Bytes read from the scratch files (and the eigenvector file, if read).
    pub read_bytes: u64,
    /// Bytes written to the scratch and eigenvector files.
    pub written_bytes: u64,
}

/// Builds the out-of-core graph of the eigendecomposition with vectors of the
/// symmetric `a` (the triangle [`EvdOptions::side`] names, taken by value and
/// worked on in place) under `plan`, with its scratch files in
/// `ooc.scratch`, writing the eigenvectors into `vectors` (`n x n`).
///
/// Errors: [`Error::Shape`] for a non-square `a` or a file or plan of another
/// order; [`Error::NonFinite`] naming a non-finite entry;
/// [`Error::InvalidArgument`] for a selection (not supported out of core);
/// [`Error::Io`] when a scratch file cannot be created.
pub fn evd_graph_out_of_core<T: Scalar>(
    a: Mat<T>,
    opts: &EvdOptions,
    plan: &OocPlan,
    ooc: &OutOfCore,
    vectors: Arc<ColumnFile<T>>,
) -> Result<OocGraph<T>> {
    let n = a.nrows();
    if a.ncols() != n || plan.n != n || vectors.nrows() != n || vectors.ncols() != n {
        return Err(Error::Shape(format!(
            "out-of-core EVD: matrix {} x {}, plan for order {}, eigenvector file {} x {}",
            a.nrows(),
            a.ncols(),
            plan.n,
            vectors.nrows(),
            vectors.ncols()
        )));
    }
    if opts.selection.is_some() {
        return Err(Error::InvalidArgument(
            "a selection of eigenpairs is not supported out of core (it fits in memory)".into(),
        ));
    }
    let tree = DcTree::new(n, opts.leaf_size.max(1));
    let Some(DcNode::Merge { cut, .. }) = tree.root().map(|r| tree.nodes[r]) else {
        return Err(Error::InvalidArgument(format!(
            "out-of-core EVD: order {n} is one divide-and-conquer leaf; run it in memory"
        )));
    };
    let mut a = owned_lower(a, opts)?;
    let (scale, anrm) = prepare(&mut a, false)?;
    let job = EvdJob::Vectors;
    let b = opts.bandwidth_for(n, job);
    let nb = opts.tile_for(n, b);
    let io = Lane::Stream(ooc.io_lane);
    let stats = Arc::new(IoStats::default());
    let mut g = TaskGraph::new();

    let (band, q1, release1) = add_stage1(&mut g, a, (b, nb), plan, ooc, &stats)?;
    let (tri, q2, release2) = add_stage2(&mut g, band, opts, plan, ooc, &stats)?;

    // The divide and conquer below the root, its children stored apart.
    let params = DcParams {
        leaf_size: opts.leaf_size.max(1),
        col_tile: opts.dc_tile.max(1),
    };
    let halves = NodeStore::split(&[0..cut, cut..n]);
    let w = cut.max(n - cut).div_ceil(2);
    let nodes = add_nodes(&mut g, &tri, &params, dc_scale(anrm), &halves, w, true)?;
    if plan.dc_after_stage2 {
        for &leaf in &nodes.entries {
            g.edge(release2, leaf);
        }
    }
    let halves = [halves.parts[0].1.clone(), halves.parts[1].1.clone()];

    let (values, last) = add_root_and_passes(
        &mut g,
        RootInputs {
            nodes,
            tri,
            halves,
            cut,
            // The matrix is freed by then (stage 2 ends after stage 1, and the
            // stage-2 spills run after the stage-1 ones on the I/O lane), but
            // say so: the root deflation is a peak of its own.
            after: vec![release1, release2],
            q2,
            q1,
            out: vectors,
            scratch: ooc.scratch.clone(),
            stats: stats.clone(),
            io,
            wide: plan.wide,
            col_block: opts.col_block_for(n),
            dc_tile: opts.dc_tile.max(1),
            window_bytes: opts.q2_window_kib.saturating_mul(1024),
        },
    )?;
    let values = FinalValues::after(&mut g, "evd.complete", super::Q1, &last, values, scale);
    Ok(OocGraph {
        graph: g,
        results: OocResults { values, stats },
    })
}

/// Stage 1 of the out-of-core graph (sy2sb with a tile `nb` for bandwidth
/// `b`), each panel's reflectors to disk once its QR is done, and the task
/// after which the matrix is freed. Returns the band (fed by that task when
/// `plan.stage2_after_stage1`), the reflectors on disk and that task.
fn add_stage1<T: Scalar>(
    g: &mut TaskGraph<'static>,
    a: Mat<T>,
    (b, nb): (usize, usize),
    plan: &OocPlan,
    ooc: &OutOfCore,
    stats: &Arc<IoStats>,
) -> Result<(Band<T>, Q1Store<T>, TaskId)> {
    let n = a.nrows();
    let io = Lane::Stream(ooc.io_lane);
    let s1 = sy2sb(g, a, b, nb)?;
    let Sy2sbReflectors {
        a,
        t,
        b,
        panels,
        done,
        panel_tasks,
        ..
    } = s1.reflectors;
    let file = Arc::new(ScratchFile::create(&ooc.scratch, stats.clone())?);
    let chunk = plan.q1_panels.max(1);
    let spills = add_q1_spills(g, &a, &file, (b, panels), &panel_tasks, chunk, io);
    drop(a);
    // Not a data edge: the matrix is freed (its last handle dropped) once
    // every task holding it is done; the memory plan counts on it.
    let release = g.add(Task::new("sy2sb.release", |_| Ok(())).stage(SY2SB));
    let feeds: Vec<TaskId> = s1.band.feed.iter().map(|&(_, t)| t).collect();
    g.succeed(
        release,
        &dedup(done.iter().chain(&spills).chain(&feeds).copied()),
    );
    let mut band = s1.band;
    if plan.stage2_after_stage1 {
        // The band's columns become available to stage 2 only once the
        // matrix is freed.
        band.feed = vec![(0..n, release)];
    }
    let q1 = Q1Store {
        file,
        t,
        b,
        panels,
        chunk,
        written: vec![release],
    };
    Ok((band, q1, release))
}

/// Stage 2 of the out-of-core graph, its reflectors to disk once it is done,
/// and the task after which they are freed in memory. Returns the
/// tridiagonal, the reflectors on disk and that task.
fn add_stage2<T: Scalar>(
    g: &mut TaskGraph<'static>,
    band: Band<T>,
    opts: &EvdOptions,
    plan: &OocPlan,
    ooc: &OutOfCore,
    stats: &Arc<IoStats>,
) -> Result<(Tridiagonal<T>, Q2Store, TaskId)> {
    let (n, b) = (band.n(), band.b());
    let io = Lane::Stream(ooc.io_lane);
    let s2 = sb2st(g, band, grain(opts), true)?;
    let Q2Reflectors { store, done, .. } = s2
        .reflectors
        .ok_or_else(|| Error::InvalidArgument("no stage-2 reflectors".into()))?;
    let q2_plan = Arc::new(Q2Plan::new(n, b, opts.q2_group.max(1)));
    let layout = Arc::new(store.layout().clone());
    let file = Arc::new(ScratchFile::create(&ooc.scratch, stats.clone())?);
    let chunk = plan.q2_groups.max(1);
    let spills = add_q2_spills(g, &store, &file, &q2_plan, &done, chunk, io);
    drop(store);
    // Not a data edge: the reflectors are freed in memory once every task
    // holding them is done.
    let release = g.add(Task::new("sb2st.release", |_| Ok(())).stage(SB2ST));
    g.succeed(release, &dedup(done.iter().chain(&spills).copied()));
    let q2 = Q2Store {
        file,
        layout,
        plan: q2_plan,
        groups: chunk,
        written: spills,
    };
    Ok((s2.tridiagonal, q2, release))
}

/// The tasks writing stage 1's reflectors (the `V_p` below the band of `a`)
/// to `file`, `chunk` panels at a time, each after the QR tasks of its panels
/// (stage 1's handle: its tasks are in sy2sb's flow, not here), on the I/O
/// lane.
fn add_q1_spills<T: Scalar>(
    g: &mut TaskGraph<'static>,
    a: &Arc<crate::matrix::SharedMatrix<T>>,
    file: &Arc<ScratchFile>,
    (b, panels): (usize, usize),
    panel_tasks: &[TaskId],
    chunk: usize,
    io: Lane,
) -> Vec<TaskId> {
    let n = a.nrows();
    let offsets = panel_offsets(n, b, 0..panels);
    let mut spills = Vec::new();
    for p0 in (0..panels).step_by(chunk) {
        let ps = p0..(p0 + chunk).min(panels);
        let (am, file2, offs) = (a.clone(), file.clone(), offsets.clone());
        let mut fp = Footprint::new().write(Region::new(
            file.id(),
            offsets[ps.start]..offsets[ps.end],
            0..1,
        ));
        for p in ps.clone() {
            let r0 = panel_rows(n, b, p).start;
            fp = fp.read(Region::new(am.id(), r0..n, p * b..(p + 1) * b));
        }
        let body = {
            let ps = ps.clone();
            with_access(move |acc| {
                for p in ps {
                    let r0 = panel_rows(n, b, p).start;
                    let v = am.read(acc, r0..n, p * b..(p + 1) * b);
                    for j in 0..b {
                        let col = v.col(j).try_as_col_major().expect("unit stride");
                        file2.write_at((offs[p] + j * (n - r0)) as u64, col.as_slice())?;
                    }
                }
                Ok(())
            })
        };
        let bytes = (offsets[ps.end] - offsets[ps.start]) * std::mem::size_of::<T>();
        let t = g.add(
            Task::new(format!("io.spill.q1[{}..{}]", ps.start, ps.end), body)
                .stage(IO)
                .lane(io)
                .cost(0.0, bytes as f64)
                .footprint(fp),
        );
        g.succeed(t, &panel_tasks[ps]);
        spills.push(t);
    }
    spills
}

/// The tasks writing stage 2's reflectors in `store` to `file`, `chunk` sweep
/// groups of `q2_plan` at a time, each after stage 2 (`done`, its handle), on
/// the I/O lane.
fn add_q2_spills<T: Scalar>(
    g: &mut TaskGraph<'static>,
    store: &Arc<crate::linalg::band::sb2st::SharedReflectors<T>>,
    file: &Arc<ScratchFile>,
    q2_plan: &Q2Plan,
    done: &[TaskId],
    chunk: usize,
    io: Lane,
) -> Vec<TaskId> {
    let layout = store.layout();
    let mut spills = Vec::new();
    for g0 in (0..q2_plan.groups()).step_by(chunk) {
        let groups = g0..(g0 + chunk).min(q2_plan.groups());
        let flat = layout.sweeps(q2_plan.group_sweeps(groups.clone()));
        let (st, file2) = (store.clone(), file.clone());
        let body = {
            let flat = flat.clone();
            with_access(move |acc| file2.write_at(flat.start as u64, st.read_flat(acc, flat)))
        };
        let t = g.add(
            Task::new(
                format!("io.spill.q2[{}..{}]", groups.start, groups.end),
                body,
            )
            .stage(IO)
            .lane(io)
            .cost(0.0, (flat.len() * std::mem::size_of::<T>()) as f64)
            .footprint(
                Footprint::new()
                    .read(Region::new(store.id(), flat.clone(), 0..1))
                    .write(Region::new(file.id(), flat.clone(), 0..1)),
            ),
        );
        g.succeed(t, done);
        spills.push(t);
    }
    spills
}

fn dedup(ids: impl Iterator<Item = TaskId>) -> Vec<TaskId> {
    let mut v: Vec<TaskId> = ids.collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The out-of-core eigendecomposition with vectors of `a` (see
/// [`evd_graph_out_of_core`]) run on `rt`, which must have the stream lane
/// [`OutOfCore::io_lane`] and no GPU streams; the eigenvectors land in
/// `vectors`, synced to the device before this returns.
///
/// Errors: as [`evd_graph_out_of_core`]; [`Error::InvalidArgument`] for a
/// runtime without the I/O lane; a failed or cancelled run's error (the
/// eigenvector file then holds no complete result).
pub fn eigh_out_of_core<T: Scalar>(
    a: Mat<T>,
    opts: &EvdOptions,
    plan: &OocPlan,
    ooc: &OutOfCore,
    vectors: Arc<ColumnFile<T>>,
    rt: &Runtime,
) -> Result<OutOfCoreEigen<T>> {
    check_runtime(rt, ooc)?;
    let (graph, results) = evd_graph_out_of_core(a, opts, plan, ooc, vectors.clone())?.into_parts();
    let report = rt.run(graph)?;
    vectors.sync()?;
    Ok(OutOfCoreEigen {
        values: results.values()?,
        report,
        read_bytes: results.io().read_bytes() + vectors.stats().read_bytes(),
        written_bytes: results.io().written_bytes() + vectors.stats().written_bytes(),
    })
}

/// [`Error::InvalidArgument`] unless `rt` runs the I/O lane on a host thread.
pub fn check_runtime(rt: &Runtime, ooc: &OutOfCore) -> Result<()> {
    if ooc.io_lane >= rt.streams() || rt.gpu_streams() {
        return Err(Error::InvalidArgument(format!(
            "an out-of-core run does its reads and writes on stream lane {}: build the runtime \
             with at least {} host stream lane(s) (RuntimeBuilder::streams); it has {}{}",
            ooc.io_lane,
            ooc.io_lane + 1,
            rt.streams(),
            if rt.gpu_streams() { " on a GPU" } else { "" }
        )));
    }
    Ok(())
}
