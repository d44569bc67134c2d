//! Many small symmetric eigendecompositions of one order at once (issue 61).
//!
//! `cargo run --release --example batched_evd -- --batch 100000 --n 3
//!     [--precision f64|f32] [--values-only] [--route auto|jacobi|one-stage]
//!     [--threads T] [--json] [--quiet] [--trace FILE] [--input FILE.npy] [--output DIR]`
//!
//! Generates `--batch` random Gaussian symmetric `n x n` matrices from
//! `--seed`, or reads `--input FILE.npy`, a 3-D array `batch x n x n` as
//! numpy writes it (C order used without a copy; Fortran order accepted).
//! The lower triangle of each matrix is read, as numpy's `eigh` does by
//! default. Runs [`eigenflow::pipeline::batched::eigh_batched_graph`] (one
//! task per chunk of the batch) and prints the time (or one JSON line with
//! `--json`: `batch`, `n`, `precision`, `job`, `route`, `threads`, `chunks`,
//! `seconds`, `failed`, `files`, `trace`); progress on stderr as
//! `batched_svd` shows it, unless `--quiet`.
//!
//! `--output DIR` writes `eigenvalues.npy` (`batch x n`, ascending), and
//! with vectors `eigenvectors.npy` (`batch x n x n`, C order, column `j` of
//! matrix `b` for eigenvalue `j`: numpy's `w, v = np.linalg.eigh(a)`
//! layout); the set replaces the previous one as a unit.
//!
//! Bad input is a clear error naming the matrix: not 3-D or not square, an
//! empty batch, a NaN or infinity in the lower triangle of matrix `i`, a
//! matrix that does not converge (exit status 1).

use args::{run_main, thread_count, DeviceArg, Precision, RunScalar, MAX_THREADS};
use clap::Parser;
use eigenflow::gallery::Rng;
use eigenflow::graph::TaskGraph;
use eigenflow::matrix::npy;
use eigenflow::pipeline::batched::{eigh_batched_graph, BatchLayout, BatchRef, BatchedOptions};
use eigenflow::pipeline::EvdJob;
use eigenflow::results::{InputFile, OutputDir};
use eigenflow::runtime::{Progress, RunOptions, Runtime};
use eigenflow::trace::TraceLevel;
use eigenflow::{sysinfo, Error, Result};
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

/// The route of every matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Route {
    /// Jacobi in SIMD lanes below the default order, one-stage above.
    Auto,
    /// Cyclic Jacobi in SIMD lanes at every order.
    Jacobi,
    /// The one-stage path (tridiagonalisation, QL/QR or divide and conquer)
    /// at every order.
    OneStage,
}

#[derive(Parser, Debug)]
#[command(about = "Batched small symmetric eigendecompositions on the eigenflow task graph")]
struct Args {
    /// Number of matrices (ignored with --input).
    #[arg(long, default_value_t = 1000)]
    batch: usize,
    /// Order of each matrix (ignored with --input).
    #[arg(long, default_value_t = 3)]
    n: usize,
    /// Arithmetic precision (default: f32 for an f4 or f2 input, else f64).
    #[arg(long, value_enum)]
    precision: Option<Precision>,
    /// Eigenvalues only (default: values and vectors).
    #[arg(long)]
    values_only: bool,
    /// Route: auto (by order), jacobi or one-stage.
    #[arg(long, value_enum, default_value_t = Route::Auto)]
    route: Route,
    /// CPU worker threads, 1 to 1024 (default: all cores).
    #[arg(long, value_parser = thread_count)]
    threads: Option<usize>,
    /// Read the batch from a 3-D .npy file (batch x n x n; f8, f4 or f2; C or
    /// Fortran order).
    #[arg(long)]
    input: Option<PathBuf>,
    /// Write eigenvalues.npy, with vectors eigenvectors.npy (C order), and
    /// the manifest result.json into this directory.
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
    /// Where to run: auto or cpu (the batched EVD has no GPU path; gpu exits
    /// non-zero, saying so).
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
    args::choose_device(args.device, "batched EVD", false)?;
    match precision {
        Precision::F64 => run::<f64>(args, stop),
        Precision::F32 => run::<f32>(args, stop),
    }
}

/// The batch as `(data, batch, n, layout)`: read from `--input` (square
/// matrices, else an error) or generated (Gaussian, from `--seed`).
fn load<T: RunScalar>(args: &Args) -> Result<(Vec<T>, usize, usize, BatchLayout)> {
    let (data, batch, m, n, layout) = batch_input::load(args.input.as_deref(), || {
        let len = args
            .batch
            .checked_mul(args.n)
            .and_then(|x| x.checked_mul(args.n))
            .ok_or_else(|| Error::InvalidArgument("--batch x --n x --n overflows".into()))?;
        let mut rng = Rng::new(args.seed);
        let data = (0..len).map(|_| T::of(rng.gaussian())).collect();
        Ok((data, args.batch, args.n, args.n))
    })?;
    if m != n {
        return Err(Error::Shape(format!(
            "a batched symmetric eigendecomposition needs square matrices, got {batch} x {m} x {n}"
        )));
    }
    Ok((data, batch, n, layout))
}

fn run<T: RunScalar>(args: &Args, stop: &Stop) -> Result<()> {
    let job = if args.values_only {
        EvdJob::Values
    } else {
        EvdJob::Vectors
    };
    let threads = args
        .threads
        .unwrap_or_else(|| sysinfo::default_threads().min(MAX_THREADS));
    let out = args.output.as_deref().map(OutputDir::lock).transpose()?;
    // The input as it was before the read, refused if it changed during it.
    let input = args.input.as_deref().map(InputFile::stat).transpose()?;
    let (data, batch, n, layout) = load::<T>(args)?;
    if let Some(file) = &input {
        file.check_unchanged()?;
    }
    let b = BatchRef::new(&data, batch, n, n, layout)?;
    if let Some(out) = &out {
        let vecs = match job {
            EvdJob::Vectors => npy::file_bytes::<T>(&[batch, n, n]),
            EvdJob::Values => 0,
        };
        out.check_space(npy::file_bytes::<T>(&[batch, n]) + vecs + (1 << 16))?;
    }
    let defaults = BatchedOptions::default();
    let opts = BatchedOptions {
        evd_jacobi_below: match args.route {
            Route::Auto => defaults.evd_jacobi_below,
            Route::Jacobi => usize::MAX,
            Route::OneStage => 0,
        },
        ..defaults
    };
    let route = if n < opts.evd_jacobi_below {
        "jacobi"
    } else {
        "one-stage"
    };
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
    let mut g = TaskGraph::new();
    let h = eigh_batched_graph(&mut g, b, job, &opts)?;
    // The graph borrows the batch, so it runs on a scoped thread while this
    // one shows the progress; a SIGINT or SIGTERM is acted on after the run.
    std::thread::scope(|s| {
        let run = s.spawn(|| rt.run_with(g, &run_options));
        let finished = || run.is_finished();
        show_progress_until(finished, || {}, &progress, args.quiet, stop, t0);
        run.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
    })?;
    // A matrix that did not converge: an error naming it.
    let evd = h.collect()?.into_result()?;
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
            "eigenvalues.npy",
            vec![batch, n],
            evd.values.iter().copied(),
        )?;
        match &evd.vectors {
            Some(v) => {
                // Column-major per matrix in memory; C order in the file.
                let nn = n * n;
                let ve = (0..batch)
                    .flat_map(move |b| (0..n).flat_map(move |i| (0..n).map(move |j| (b, i, j))))
                    .map(|(b, i, j)| v[b * nn + i + n * j]);
                set.add_array_c("eigenvectors.npy", vec![batch, n, n], ve)?;
            }
            None => set.retire("eigenvectors.npy"),
        }
        let mut fields = serde_json::Map::new();
        fields.insert("batch".into(), batch.into());
        fields.insert("n".into(), n.into());
        fields.insert("dtype".into(), npy::Dtype::of::<T>().descr().into());
        fields.insert("job".into(), format!("batched evd {job_name}").into());
        fields.insert("route".into(), route.into());
        let source = match &input {
            Some(file) => file.to_json(),
            None => serde_json::json!({ "generated": "gaussian", "seed": args.seed }),
        };
        fields.insert("input".into(), source);
        written = stop.commit(|| set.commit(fields))?;
    }
    let files: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    let chunks = evd.stats.chunks;
    if args.json {
        let line = serde_json::json!({
            "batch": batch, "n": n, "precision": T::NAME, "job": job_name,
            "route": route, "threads": rt.threads(), "chunks": chunks,
            "seconds": seconds, "failed": evd.failed.len(),
            "files": out.is_some().then_some(files),
            "trace": args.trace.as_ref().map(|p| p.display().to_string()),
        });
        println!("{line}");
    } else {
        println!(
            "{batch} x {n}x{n} ({}, {job_name}, {route}): {chunks} chunks on {} thread(s): \
             {seconds:.3} s",
            T::NAME,
            rt.threads()
        );
        for f in files {
            println!("wrote {f}");
        }
    }
    Ok(())
}
