//! Solving: the one-stage path of `eigenflow::pipeline::eigh`, or the
//! two-stage task graph on the CPU or (feature `cuda`) the hybrid graph on a
//! GPU.

use crate::args::RunScalar;
use crate::watch::{show_progress, Stop};
use crate::Args;
use eigenflow::pipeline::evd::EvdGraph;
use eigenflow::pipeline::{eigh_owned, evd_graph_owned, EvdJob, EvdOptions};
use eigenflow::runtime::{Progress, RunOptions, RunReport, Runtime};
#[cfg(not(feature = "cuda"))]
use eigenflow::Error;
use eigenflow::Result;
use faer::Mat;
use std::time::Instant;

/// What a solve hands to the report: the results, the run's report (no
/// tasks on the one-stage path), the task count and the graph's build time.
pub struct Solved<T> {
    pub values: Vec<T>,
    pub vectors: Option<Mat<T>>,
    pub report: RunReport,
    pub tasks: usize,
    pub build: std::time::Duration,
}

/// The one-stage path of `eigenflow::pipeline::eigh` on `rt` (`--trace`
/// records its phases). It has no task to stop between: the caller cancels
/// the run when a signal came during the solve.
pub fn solve_one_stage<T: RunScalar>(
    args: &Args,
    a: Mat<T>,
    job: EvdJob,
    opts: &EvdOptions,
    rt: &Runtime,
) -> Result<Solved<T>> {
    let mut one = opts.clone();
    one.one_stage_below = usize::MAX;
    let solve = || eigh_owned(a, job, &one, rt);
    let eig = match &args.trace {
        Some(path) => eigenflow::trace::record_phases(path, solve)?,
        None => solve()?,
    };
    Ok(Solved {
        values: eig.values,
        vectors: eig.vectors,
        report: eig.report,
        tasks: 0,
        build: std::time::Duration::ZERO,
    })
}

/// The two-stage task graph (on the GPU with `gpu`) run on `rt` with a
/// progress bar, `--trace` recording its tasks.
#[allow(clippy::too_many_arguments)]
pub fn solve_graph<T: RunScalar>(
    args: &Args,
    a: Mat<T>,
    job: EvdJob,
    opts: &EvdOptions,
    rt: &Runtime,
    gpu: bool,
    progress: &Progress,
    stop: &Stop,
) -> Result<Solved<T>> {
    // The trace belongs to this run (`RunOptions`), not to the runtime.
    let mut run_options = RunOptions::new();
    if let Some(path) = &args.trace {
        run_options = run_options.trace(path, args.trace_level);
    }
    let t0 = Instant::now();
    let evd = if gpu {
        gpu_graph(a, job, opts)?
    } else {
        evd_graph_owned(a, job, opts)?
    };
    let build = t0.elapsed();
    let tasks = evd.graph.len();
    let (graph, values) = evd.into_parts();
    let handle = rt.submit_with(graph, &run_options);
    show_progress(&handle, progress, args.quiet, stop, t0);
    let report = handle.wait()?;
    let (values, vectors) = values.into_results()?;
    Ok(Solved {
        values,
        vectors,
        report,
        tasks,
        build,
    })
}

/// The hybrid EVD's graph on GPU 0 (stage 1 and Q1 through cuBLAS), its
/// device tasks on stream lane 0.
#[cfg(feature = "cuda")]
fn gpu_graph<T: RunScalar>(a: Mat<T>, job: EvdJob, opts: &EvdOptions) -> Result<EvdGraph<T>> {
    use eigenflow::pipeline::evd::hybrid::evd_graph_hybrid;
    let dev = std::sync::Arc::new(eigenflow::pipeline::device::cuda::CublasDevice::open(0)?);
    evd_graph_hybrid(
        a.as_ref(),
        job,
        opts,
        &dev,
        eigenflow::graph::Lane::Stream(0),
    )
}

#[cfg(not(feature = "cuda"))]
fn gpu_graph<T: RunScalar>(_: Mat<T>, _: EvdJob, _: &EvdOptions) -> Result<EvdGraph<T>> {
    // choose_device never picks the GPU in a build without the feature.
    Err(eigenflow::cuda::probe(0).err().unwrap_or(Error::NotRun))
}
