//! Many small SVDs of one shape at once (issue 12).
//!
//! `cargo run --release --example batched_svd -- --batch 10000 --m 32 --n 32
//!     [--precision f64|f32] [--values-only] [--method jacobi|gebrd|auto]
//!     [--threads T] [--json] [--quiet] [--trace FILE] [--input FILE.npy] [--output DIR]`
//!
//! Generates `--batch` random Gaussian `m x n` matrices from `--seed`, or
//! reads `--input FILE.npy`, a 3-D array `batch x m x n` as numpy writes it
//! (C order: each matrix row-major inside the file, used without a copy;
//! Fortran order is accepted too). Runs
//! [`eigenflow::pipeline::batched::svd_batched_graph`] (one task per chunk of
//! the batch) and prints the time (or one JSON line with `--json`: `batch`,
//! `m`, `n`, `precision`, `job`, `method` (the route used), `threads`,
//! `chunks`, `seconds` for the whole job, `failed`, `files`, `trace`). While
//! the batch runs, its progress is shown on stderr as by `evd` and `svd` (a
//! bar in a terminal, else a line every 10 s); `--quiet` silences it.
//!
//! `--output DIR` writes `singular_values.npy` (`batch x k`, descending),
//! and with vectors `u.npy` (`batch x m x k`) and `vt.npy` (`batch x k x n`),
//! C order, `k = min(m, n)`, so that `u @ (s[..., None] * vt)` reconstructs
//! the input in numpy; the set replaces the previous one as a unit.
//!
//! Bad input is a clear error naming the matrix: not 3-D, an empty batch, a
//! NaN or infinity in matrix `i`; a matrix whose bidiagonal solver or
//! Jacobi sweeps do not converge is named too (exit status 1).

use args::{run_main, thread_count, DeviceArg, Precision, RunScalar, MAX_THREADS};
use clap::Parser;
use eigenflow::gallery::Rng;
use eigenflow::graph::TaskGraph;
use eigenflow::matrix::npy;
use eigenflow::pipeline::batched::{
    svd_batched_graph, BatchLayout, BatchRef, BatchedMethod, BatchedOptions,
};
use eigenflow::pipeline::SvdJob;
use eigenflow::results::{InputFile, OutputDir};
use eigenflow::runtime::{Progress, RunOptions, Runtime};
use eigenflow::trace::TraceLevel;
use eigenflow::{sysinfo, Error, Result, Scalar};
use std::path::PathBuf;
use watch::{show_progress_until, Stop};

#[path = "common/args.rs"]
#[allow(dead_code)]
mod args;
#[path = "common/batch_input.rs"]
mod batch_input;
#[path = "common/watch.rs"]
#[allow(dead_code)]
mod watch;

#[derive(Parser, Debug)]
#[command(about = "Batched small SVDs on the eigenflow task graph")]
struct Args {
    /// Number of matrices (ignored with --input).
    #[arg(long, default_value_t = 1000)]
    batch: usize,
    /// Rows of each matrix (default: --n; ignored with --input).
    #[arg(long)]
    m: Option<usize>,
    /// Columns of each matrix (ignored with --input).
    #[arg(long, default_value_t = 32)]
    n: usize,
    /// Arithmetic precision (default: f32 for an f4 or f2 input, else f64).
    #[arg(long, value_enum)]
    precision: Option<Precision>,
    /// Singular values only (default: values and the thin U and V^T).
    #[arg(long)]
    values_only: bool,
    /// Route: jacobi (blocked one-sided Jacobi), gebrd (bidiagonalisation and
    /// a bidiagonal solver) or auto (chosen per shape).
    #[arg(long, default_value = "auto")]
    method: BatchedMethod,
    /// CPU worker threads, 1 to 1024 (default: all cores).
    #[arg(long, value_parser = thread_count)]
    threads: Option<usize>,
    /// Read the batch from a 3-D .npy file (batch x m x n; f8, f4 or f2; C or
    /// Fortran order).
    #[arg(long)]
    input: Option<PathBuf>,
    /// Write singular_values.npy, with vectors u.npy and vt.npy (C order),
    /// and the manifest result.json into this directory.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Write a Chrome trace (one slice per chunk task).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Seed of the random matrices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one machine-readable JSON line on stdout.
    #[arg(long)]
    json: bool,
    /// No progress display.
    #[arg(long)]
    quiet: bool,
    /// Where to run: auto (a GPU if usable and the job has a GPU path, the
    /// batched Jacobi kernel for --values-only; else the CPU), cpu, or gpu
    /// (exits non-zero, saying why, without one or for vectors).
    #[arg(long, value_enum, default_value_t = DeviceArg::Auto)]
    device: DeviceArg,
}

fn main() {
    let args = Args::parse();
    run_main(args.output.as_deref(), |stop| start(&args, stop));
}

fn start(args: &Args, stop: &Stop) -> Result<()> {
    let header = match &args.input {
        Some(path) => {
            InputFile::stat(path)?;
            Some(npy::read_header(path)?)
        }
        None => None,
    };
    let precision = args.precision.unwrap_or(match &header {
        Some(h) if h.dtype != npy::Dtype::F64 => Precision::F32,
        _ => Precision::F64,
    });
    // The GPU path is the batched Jacobi kernel, values only.
    let gpu_path = cfg!(feature = "cuda") && args.values_only;
    let pipeline = if args.values_only {
        "batched SVD"
    } else {
        "batched SVD with vectors (the GPU computes values only)"
    };
    let gpu = args::choose_device(args.device, pipeline, gpu_path)?;
    match precision {
        Precision::F64 => run::<f64>(args, stop, gpu),
        Precision::F32 => run::<f32>(args, stop, gpu),
    }
}

/// The singular values of the batch by the batched Jacobi kernel on GPU 0.
#[cfg(feature = "cuda")]
fn values_on_gpu<T: RunScalar>(b: &BatchRef<'_, T>, opts: &BatchedOptions) -> Result<Vec<T>> {
    eigenflow::pipeline::device::cuda::jacobi::svd_batched_values_gpu(b, &opts.params, 0)
}

#[cfg(not(feature = "cuda"))]
fn values_on_gpu<T: RunScalar>(_: &BatchRef<'_, T>, _: &BatchedOptions) -> Result<Vec<T>> {
    // choose_device never picks the GPU in a build without the feature.
    Err(eigenflow::cuda::probe(0).err().unwrap_or(Error::NotRun))
}

/// The batch as `(data, batch, m, n, layout)`: read from `--input` or
/// generated (Gaussian, from `--seed`).
fn load<T: Scalar>(args: &Args) -> Result<(Vec<T>, usize, usize, usize, BatchLayout)> {
    batch_input::load(args.input.as_deref(), || {
        let (m, n) = (args.m.unwrap_or(args.n), args.n);
        let mut rng = Rng::new(args.seed);
        let len = args
            .batch
            .checked_mul(m)
            .and_then(|x| x.checked_mul(n))
            .ok_or_else(|| Error::InvalidArgument("--batch x --m x --n overflows".into()))?;
        let data = (0..len).map(|_| T::of(rng.gaussian())).collect();
        Ok((data, args.batch, m, n))
    })
}

fn run<T: RunScalar>(args: &Args, stop: &Stop, gpu: bool) -> Result<()> {
    let job = if args.values_only {
        SvdJob::Values
    } else {
        SvdJob::Vectors
    };
    let threads = args
        .threads
        .unwrap_or_else(|| sysinfo::default_threads().min(MAX_THREADS));
    let out = args.output.as_deref().map(OutputDir::lock).transpose()?;
    // The input as it was before the read, refused if it changed during it.
    let input = args.input.as_deref().map(InputFile::stat).transpose()?;
    let (data, batch, m, n, layout) = load::<T>(args)?;
    if let Some(file) = &input {
        file.check_unchanged()?;
    }
    let b = BatchRef::new(&data, batch, m, n, layout)?;
    let k = m.min(n);
    if let Some(out) = &out {
        let vecs = match job {
            SvdJob::Vectors => {
                npy::file_bytes::<T>(&[batch, m, k]) + npy::file_bytes::<T>(&[batch, k, n])
            }
            SvdJob::Values => 0,
        };
        out.check_space(npy::file_bytes::<T>(&[batch, k]) + vecs + (1 << 16))?;
    }
    let opts = BatchedOptions {
        method: args.method,
        ..BatchedOptions::default()
    };
    if gpu && args.method == BatchedMethod::Gebrd {
        return Err(Error::InvalidArgument(
            "--method gebrd has no GPU path (the GPU runs the batched Jacobi kernel); \
             use --method jacobi or auto, or --device cpu"
                .into(),
        ));
    }
    let method = args.method.resolve(m, n, job == SvdJob::Vectors);
    let method_name = if gpu { "jacobi (gpu)" } else { method.name() };
    let progress = Progress::new();
    let rt = Runtime::builder()
        .threads(threads)
        .progress(progress.clone())
        .build();
    let mut run_options = RunOptions::new();
    if let Some(path) = &args.trace {
        run_options = run_options.trace(path, TraceLevel::Task);
    }
    let t0 = std::time::Instant::now();
    // (values, u, vt, chunks, failed)
    let (values, u, vt, chunks, failed) = if gpu {
        (values_on_gpu(&b, &opts)?, None, None, 0, 0)
    } else {
        let mut g = TaskGraph::new();
        let h = svd_batched_graph(&mut g, b, job, &opts)?;
        // The graph borrows the batch, so it runs on a scoped thread (not a
        // submitted run) while this one shows the progress; a SIGINT or
        // SIGTERM is acted on after the run.
        std::thread::scope(|s| {
            let run = s.spawn(|| rt.run_with(g, &run_options));
            let finished = || run.is_finished();
            show_progress_until(finished, || {}, &progress, args.quiet, stop, t0);
            run.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
        })?;
        // A matrix that did not converge: an error naming it.
        let svd = h.collect()?.into_result()?;
        (
            svd.values,
            svd.u,
            svd.vt,
            svd.stats.chunks,
            svd.failed.len(),
        )
    };
    let seconds = t0.elapsed().as_secs_f64();
    if stop.signal().is_some() {
        return Err(Error::Cancelled);
    }
    let job_name = if args.values_only {
        "values"
    } else {
        "vectors"
    };
    let mut written = Vec::new();
    if let Some(out) = &out {
        let mut set = out.begin()?;
        set.stop_when(|| stop.signal().is_some());
        set.add_array_c(
            "singular_values.npy",
            vec![batch, k],
            values.iter().copied(),
        )?;
        match (&u, &vt) {
            (Some(u), Some(vt)) => {
                // Column-major per matrix in memory; C order (row-major per
                // matrix) in the file.
                let (mk, kn) = (m * k, k * n);
                let ue = (0..batch)
                    .flat_map(move |b| (0..m).flat_map(move |i| (0..k).map(move |j| (b, i, j))))
                    .map(|(b, i, j)| u[b * mk + i + m * j]);
                set.add_array_c("u.npy", vec![batch, m, k], ue)?;
                let ve = (0..batch)
                    .flat_map(move |b| (0..k).flat_map(move |i| (0..n).map(move |j| (b, i, j))))
                    .map(|(b, i, j)| vt[b * kn + i + k * j]);
                set.add_array_c("vt.npy", vec![batch, k, n], ve)?;
            }
            _ => {
                set.retire("u.npy");
                set.retire("vt.npy");
            }
        }
        let mut fields = serde_json::Map::new();
        fields.insert("batch".into(), batch.into());
        fields.insert("m".into(), m.into());
        fields.insert("n".into(), n.into());
        fields.insert("dtype".into(), npy::Dtype::of::<T>().descr().into());
        fields.insert("job".into(), format!("batched svd {job_name}").into());
        fields.insert("method".into(), method_name.into());
        let source = match &input {
            Some(file) => file.to_json(),
            None => serde_json::json!({ "generated": "gaussian", "seed": args.seed }),
        };
        fields.insert("input".into(), source);
        written = stop.commit(|| set.commit(fields))?;
    }
    let files: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    if args.json {
        let line = serde_json::json!({
            "batch": batch, "m": m, "n": n, "precision": T::NAME, "job": job_name,
            "method": method_name, "threads": rt.threads(), "chunks": chunks,
            "seconds": seconds, "failed": failed, "device": if gpu { "gpu" } else { "cpu" },
            "files": out.is_some().then_some(files),
            "trace": args.trace.as_ref().map(|p| p.display().to_string()),
        });
        println!("{line}");
    } else {
        println!(
            "{batch} x {m}x{n} ({}, {job_name}, {}): {} chunks on {} thread(s): {seconds:.3} s",
            T::NAME,
            method_name,
            chunks,
            rt.threads()
        );
        for f in files {
            println!("wrote {f}");
        }
    }
    Ok(())
}
