//! The `evd` example's out-of-core run (issue 21): when the eigendecomposition
//! with vectors does not fit under `--memory-limit`, it runs with its large
//! structures on disk under `--scratch` and writes `eigenvectors.npy` by
//! blocks of columns (`eigenflow::pipeline::evd::out_of_core`).

use super::args;
use super::watch::{show_progress, Stop};
use super::{load_matrix, print_paths, random_lower_columns, Args};
use eigenflow::matrix::npy::{self, ColumnFile};
use eigenflow::matrix::scratch::IoStats;
use eigenflow::pipeline::evd::out_of_core::{
    check_runtime, evd_graph_out_of_core, plan as plan_ooc, sample_columns, sampled_check,
    DiskSpace, LowerPart, MemoryPlan, OocPlan, OutOfCore,
};
use eigenflow::pipeline::evd::stage_seconds;
use eigenflow::pipeline::EvdOptions;
use eigenflow::results::{InputFile, OutputDir, MANIFEST_RESERVE};
use eigenflow::runtime::{Progress, RunOptions, Runtime};
use eigenflow::sysinfo::{self, human_bytes};
use eigenflow::{Error, Result, Scalar};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Columns a `--check` of an out-of-core run reads back.
const CHECK_COLUMNS: usize = 64;

/// An out-of-core run as planned, and where its scratch files go.
pub struct Planned {
    plan: OocPlan,
    limit: u64,
    scratch: PathBuf,
}

/// The directory of the scratch files: `--scratch`, else the output
/// directory, else the system's temporary directory.
fn scratch_dir(args: &Args) -> PathBuf {
    args.scratch
        .clone()
        .or_else(|| args.output.clone())
        .unwrap_or_else(std::env::temp_dir)
}

/// `Some` when the run with vectors must go out of core under `limit`
/// (`None` when it fits in memory, or no limit is known); an error when it
/// fits neither way.
pub fn plan<T: Scalar>(
    args: &Args,
    n: usize,
    opts: &EvdOptions,
    threads: usize,
    limit: Option<u64>,
    start_rss: Option<u64>,
    out: Option<&OutputDir>,
) -> Result<Option<Planned>> {
    let Some(limit) = limit else {
        return Ok(None);
    };
    let scratch = scratch_dir(args);
    if !scratch.is_dir() {
        return Err(Error::InvalidArgument(format!(
            "scratch directory {} does not exist",
            scratch.display()
        )));
    }
    let vectors = npy::file_bytes::<T>(&[n, n]);
    let output_bytes = match out {
        Some(_) => vectors + npy::file_bytes::<T>(&[n]) + MANIFEST_RESERVE,
        // Kept on scratch (unnamed) until the run ends.
        None => vectors,
    };
    let dev = |p: &Path| std::fs::metadata(p).map(|m| m.dev()).ok();
    let output_free = match out {
        Some(o) if dev(o.path()) != dev(&scratch) => Some(o.available_bytes()?),
        _ => None,
    };
    let disk = DiskSpace {
        scratch_free: sysinfo::disk_available_bytes(&scratch)?,
        output_free,
        output_bytes,
    };
    let copy = args::check_copy_bytes::<T>(n, n, args.check).unwrap_or(u64::MAX);
    let baseline = start_rss.unwrap_or(0);
    match plan_ooc::<T>(n, opts, threads, limit, baseline, copy, disk)? {
        MemoryPlan::InMemory(_) => Ok(None),
        MemoryPlan::OutOfCore(plan) => Ok(Some(Planned {
            plan,
            limit,
            scratch,
        })),
    }
}

/// Runs the planned out-of-core eigendecomposition and reports it like the
/// in-memory run (plus the plan's figures and the bytes moved).
#[allow(clippy::too_many_arguments)]
pub fn run<T: Scalar>(
    args: &Args,
    input: Option<(InputFile, npy::Header)>,
    stop: &Stop,
    out: Option<OutputDir>,
    opts: EvdOptions,
    planned: Planned,
    threads: usize,
    start_rss: Option<u64>,
) -> Result<()> {
    let Planned {
        plan,
        limit,
        scratch,
    } = planned;
    let n = plan.n;
    eprintln!(
        "n = {n} ({}): the in-memory run does not fit under the memory limit of {}; {}",
        T::NAME,
        human_bytes(limit),
        plan.describe()
    );
    if let Some(out) = &out {
        out.check_space(plan.output_bytes)?;
    }
    let a = load_matrix::<T>(args, &input, n)?;
    if stop.signal().is_some() {
        return Err(Error::Cancelled);
    }
    let stats = Arc::new(IoStats::default());
    let mut set = match &out {
        Some(o) => {
            let mut s = o.begin()?;
            s.stop_when(|| stop.signal().is_some());
            Some(s)
        }
        None => None,
    };
    let vectors = Arc::new(match &set {
        Some(s) => ColumnFile::<T>::create(&s.set_dir().join("eigenvectors.npy"), n, n, stats)?,
        None => ColumnFile::<T>::anonymous(&scratch, n, n, stats)?,
    });
    let ooc = OutOfCore {
        memory_limit: limit,
        scratch,
        io_lane: 0,
    };
    let progress = Progress::new();
    let rt = Runtime::builder()
        .progress(progress.clone())
        .threads(threads)
        .streams(1)
        .build();
    check_runtime(&rt, &ooc)?;
    let mut run_options = RunOptions::new();
    if let Some(path) = &args.trace {
        run_options = run_options.trace(path, args.trace_level);
    }
    let t0 = Instant::now();
    let (graph, results) =
        evd_graph_out_of_core(a, &opts, &plan, &ooc, vectors.clone())?.into_parts();
    let build = t0.elapsed();
    let tasks = graph.len();
    let handle = rt.submit_with(graph, &run_options);
    show_progress(&handle, &progress, args.quiet, stop, t0);
    let report = handle.wait()?;
    vectors.sync()?;
    let values = results.values()?;
    let read = results.io().read_bytes() + vectors.stats().read_bytes();
    let written = results.io().written_bytes() + vectors.stats().written_bytes();
    let peak = sysinfo::peak_rss_bytes();

    let check = if args.check {
        let cols = sample_columns(n, CHECK_COLUMNS);
        let c = match &input {
            Some((file, header)) => sampled_check(&values, &vectors, &cols, |f| {
                // The logical matrix's lower triangle: a Fortran-order file
                // streams columns, a C-order one rows.
                let fortran = header.fortran_order;
                npy::for_each_lane::<T>(&file.path, |k, lane| {
                    f(if fortran {
                        LowerPart::Column(k, &lane[k..])
                    } else {
                        LowerPart::Row(k, &lane[..=k])
                    })
                })
                .map(|_| ())
            })?,
            None => sampled_check(&values, &vectors, &cols, |f| {
                random_lower_columns::<T>(n, args.seed, |j, col| f(LowerPart::Column(j, col)));
                Ok(())
            })?,
        };
        Some(c)
    } else {
        None
    };

    let mut paths = Vec::new();
    if let Some(mut s) = set.take() {
        s.add_vector("eigenvalues.npy", &values)?;
        s.add_written::<T>("eigenvectors.npy", vec![n, n])?;
        let mut fields = serde_json::Map::new();
        fields.insert("n".into(), n.into());
        fields.insert("dtype".into(), npy::Dtype::of::<T>().descr().into());
        fields.insert("job".into(), "vectors".into());
        fields.insert("k".into(), values.len().into());
        fields.insert("out_of_core".into(), true.into());
        let source = match &input {
            Some((file, _)) => file.to_json(),
            None => {
                serde_json::json!({ "generated": "uniform(-1, 1) lower triangle", "seed": args.seed })
            }
        };
        fields.insert("input".into(), source);
        paths = stop.commit(|| s.commit(fields))?;
    }

    let seconds = report.wall.as_secs_f64();
    if args.json {
        let stage_obj: serde_json::Map<String, serde_json::Value> = stage_seconds(&report)
            .iter()
            .map(|(k, v)| (k.to_string(), (*v).into()))
            .chain([(
                "io".to_string(),
                report
                    .stage_span(eigenflow::pipeline::evd::out_of_core::IO)
                    .as_secs_f64()
                    .into(),
            )])
            .collect();
        let line = serde_json::json!({
            "n": n, "precision": T::NAME, "job": "vectors", "mode": "out-of-core",
            "threads": rt.threads(), "bandwidth": opts.bandwidth_for(n, eigenflow::pipeline::EvdJob::Vectors),
            "tasks": tasks, "seconds": seconds, "stages": stage_obj,
            "build_seconds": build.as_secs_f64(),
            "residual": check.as_ref().map(|c| c.residual),
            "orthogonality": check.as_ref().map(|c| c.orthogonality),
            "check_columns": check.as_ref().map(|c| c.columns.clone()),
            "files": out.is_some().then(|| paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>()),
            "trace": args.trace.as_ref().map(|p| p.display().to_string()),
            "k": values.len(), "selection": null,
            "memory_limit_bytes": limit,
            "memory_bytes": plan.resident_bytes(),
            "scratch_bytes": plan.scratch_bytes,
            "output_bytes": plan.output_bytes,
            "pass_columns": plan.wide,
            "io_read_bytes": read, "io_written_bytes": written,
            "peak_rss_bytes": peak,
            "start_rss_bytes": start_rss,
        });
        println!("{line}");
    } else {
        println!(
            "n = {n} ({}), out of core, {tasks} tasks on {} thread(s): {seconds:.3} s",
            T::NAME,
            rt.threads()
        );
        println!("{report}");
        println!(
            "I/O: {} read, {} written; peak resident {} (limit {})",
            human_bytes(read),
            human_bytes(written),
            peak.map_or("unknown".into(), human_bytes),
            human_bytes(limit)
        );
        if let Some(c) = &check {
            println!(
                "on {} eigenpairs read back (columns {} to {}, evenly spaced): \
                 ||A V - V L|| ratio {:.3}; ||V^T V - I|| ratio {:.3} (LAPACK threshold 30)",
                c.columns.len(),
                c.columns.first().copied().unwrap_or(0),
                c.columns.last().copied().unwrap_or(0),
                c.residual,
                c.orthogonality
            );
        }
    }
    print_paths(args, &paths);
    Ok(())
}
