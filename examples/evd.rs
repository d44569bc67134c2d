//! Symmetric eigenvalues by the two-stage task graph.
//!
//! `cargo run --release --example evd -- --n 4096 --values-only [--json] [--trace FILE]`
//!
//! Generates a random symmetric matrix from `--seed` (or reads `--input FILE.npy`),
//! checks that the run fits in memory before allocating, runs sy2sb -> sb2st ->
//! tridiagonal eigenvalues as one DAG with a progress bar, and prints per-stage
//! times (or one JSON line with `--json`).

use clap::{Parser, ValueEnum};
use eigenflow::gallery::Rng;
use eigenflow::matrix::npy;
use eigenflow::pipeline::evd::{memory_bytes, reduction_seconds, stage_seconds};
use eigenflow::pipeline::{evd_graph_owned, EvdJob, EvdOptions};
use eigenflow::runtime::{Progress, Runtime};
use eigenflow::sysinfo;
use eigenflow::trace::TraceLevel;
use eigenflow::{Error, Result, Scalar};
use faer::Mat;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Precision {
    F64,
    F32,
}

#[derive(Parser, Debug)]
#[command(about = "Two-stage symmetric eigensolver on the eigenflow task graph")]
struct Args {
    /// Matrix order (ignored with --input).
    #[arg(long, default_value_t = 4096)]
    n: usize,
    /// Arithmetic precision.
    #[arg(long, value_enum, default_value_t = Precision::F64)]
    precision: Precision,
    /// Eigenvalues only (default: eigenvalues and eigenvectors).
    #[arg(long)]
    values_only: bool,
    /// Also compute ||A V - V L||_F / (n ||A||_F eps) and ||V^T V - I||_F / (n eps)
    /// (keeps a copy of A; O(n^3) extra work).
    #[arg(long)]
    check: bool,
    /// CPU worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Half-bandwidth of the intermediate band.
    #[arg(long)]
    bandwidth: Option<usize>,
    /// Stage-1 tile size (a multiple of the bandwidth).
    #[arg(long)]
    tile: Option<usize>,
    /// Stage-2 sweeps per task.
    #[arg(long)]
    sweep_group: Option<usize>,
    /// Stage-2 steps per task.
    #[arg(long)]
    step_chunk: Option<usize>,
    /// Q2 back-transformation: sweeps per compact-WY block.
    #[arg(long)]
    q2_group: Option<usize>,
    /// Back-transformations: eigenvector columns per task.
    #[arg(long)]
    col_block: Option<usize>,
    /// Divide and conquer leaf size.
    #[arg(long)]
    leaf_size: Option<usize>,
    /// Read the matrix from a 2-D .npy file (f64 or f32, C or Fortran order; the
    /// lower triangle is used).
    #[arg(long)]
    input: Option<PathBuf>,
    /// Write eigenvalues.npy (ascending) and, with vectors, eigenvectors.npy
    /// (column j belongs to eigenvalue j) into this directory.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Write a Chrome trace (open in ui.perfetto.dev).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Trace volume: auto (task up to 2^20 tasks, else stage), task or stage.
    #[arg(long, default_value = "auto")]
    trace_level: TraceLevel,
    /// Seed of the random matrix.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one machine-readable JSON line.
    #[arg(long)]
    json: bool,
}

fn main() {
    let args = Args::parse();
    let result = match args.precision {
        Precision::F64 => run::<f64>(&args),
        Precision::F32 => run::<f32>(&args),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn options(args: &Args) -> EvdOptions {
    let mut o = EvdOptions::default();
    if let Some(b) = args.bandwidth {
        o.bandwidth = b;
    }
    if let Some(t) = args.tile {
        o.tile = t;
    }
    if let Some(g) = args.sweep_group {
        o.sweep_group = g;
    }
    if let Some(c) = args.step_chunk {
        o.step_chunk = c;
    }
    if let Some(g) = args.q2_group {
        o.q2_group = g;
    }
    if let Some(c) = args.col_block {
        o.back_col_block = c;
    }
    if let Some(l) = args.leaf_size {
        o.leaf_size = l;
    }
    o
}

/// The largest n (a multiple of 1024) whose run fits in `available` bytes.
fn largest_fitting<T: Scalar>(
    available: u64,
    job: EvdJob,
    opts: &EvdOptions,
    threads: usize,
) -> usize {
    let (mut lo, mut hi) = (0usize, 1usize << 20);
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        if memory_bytes::<T>(mid, job, opts, threads).is_some_and(|m| m <= available) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo / 1024 * 1024
}

fn check_memory<T: Scalar>(
    n: usize,
    job: EvdJob,
    check: bool,
    opts: &EvdOptions,
    threads: usize,
) -> Result<()> {
    let copy = if check {
        (n * n * std::mem::size_of::<T>()) as u64
    } else {
        0
    };
    let needed = memory_bytes::<T>(n, job, opts, threads)
        .and_then(|m| m.checked_add(copy))
        .ok_or_else(|| {
            Error::InvalidArgument(format!("n = {n}: the memory figure overflows 64 bits"))
        })?;
    let what = match job {
        EvdJob::Values => "eigenvalues",
        EvdJob::Vectors => "eigenvalues and eigenvectors",
    };
    sysinfo::check_fits(
        needed,
        &format!("the {n} x {n} {} problem ({what})", T::NAME),
        |avail| {
            let f = |j| {
                (
                    largest_fitting::<f64>(avail, j, opts, threads),
                    largest_fitting::<f32>(avail, j, opts, threads),
                )
            };
            let (v64, v32) = f(EvdJob::Vectors);
            let (e64, e32) = f(EvdJob::Values);
            format!(
                "this machine fits --n {v64} (f64) or {v32} (f32) with vectors, \
             --n {e64} (f64) or {e32} (f32) with --values-only"
            )
        },
    )
}

fn random_symmetric<T: Scalar>(n: usize, seed: u64) -> Mat<T> {
    // Only the lower triangle is read; fill it in place (one n x n allocation).
    let mut rng = Rng::new(seed);
    let mut a = Mat::<T>::zeros(n, n);
    for j in 0..n {
        for i in j..n {
            a[(i, j)] = T::of(rng.uniform_in(-1.0, 1.0));
        }
    }
    a
}

fn run<T: Scalar>(args: &Args) -> Result<()> {
    let opts = options(args);
    let job = if args.values_only {
        EvdJob::Values
    } else {
        EvdJob::Vectors
    };
    let threads = args.threads.unwrap_or_else(sysinfo::default_threads);
    let a: Mat<T> = match &args.input {
        Some(path) => {
            let header = npy::read_header(path)?;
            let n = header.shape.first().copied().unwrap_or(0);
            check_memory::<T>(n, job, args.check, &opts, threads)?;
            npy::read_square_matrix::<T>(path)?
        }
        None => {
            check_memory::<T>(args.n, job, args.check, &opts, threads)?;
            random_symmetric(args.n, args.seed)
        }
    };
    let n = a.nrows();
    let b = opts.bandwidth_for(n, job);
    let original = args.check.then(|| a.clone());
    let progress = Progress::new();
    if !args.json {
        eprintln!(
            "n = {n} ({}): needs {} of memory; building the task graph",
            T::NAME,
            sysinfo::human_bytes(memory_bytes::<T>(n, job, &opts, threads).unwrap_or(u64::MAX))
        );
    }
    let mut rt = Runtime::builder()
        .progress(progress.clone())
        .threads(threads);
    if let Some(path) = &args.trace {
        rt = rt.trace(path, args.trace_level);
    }
    let rt = rt.build();

    let t0 = Instant::now();
    let evd = evd_graph_owned(a, job, &opts)?;
    let build = t0.elapsed();
    let tasks = evd.graph.len();
    // Run in the background and show progress (cost-weighted) with an ETA.
    let (graph, values) = evd.into_parts();
    let handle = rt.submit(graph);
    let bar = if args.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(1000)
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:40} {percent:>3}% ETA {eta} {msg}",
        )
        .expect("valid template"),
    );
    // Without a terminal the bar is hidden: print a line every 10 s instead.
    let plain = !args.json && bar.is_hidden();
    let mut last_line = Instant::now();
    while !handle.is_finished() {
        let fraction = progress.fraction();
        bar.set_position((fraction * 1000.0) as u64);
        let (done, total) = progress.tasks();
        bar.set_message(format!("{done}/{total} tasks"));
        if plain && last_line.elapsed() >= Duration::from_secs(10) {
            let elapsed = t0.elapsed().as_secs_f64();
            let eta = if fraction > 0.0 {
                elapsed * (1.0 - fraction) / fraction
            } else {
                f64::NAN
            };
            eprintln!("{:5.1}% of the estimated work, {done}/{total} tasks, {elapsed:.0} s elapsed, ETA {eta:.0} s", 100.0 * fraction);
            last_line = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    bar.finish_and_clear();
    let report = handle.wait()?;
    let (values, vectors) = values.into_results()?;
    let checks =
        original.map(|a| check_ratios(a.as_ref(), &values, vectors.as_ref().map(|v| v.as_ref())));
    let seconds = report.wall.as_secs_f64();
    let stages = stage_seconds(&report);
    let reduction = reduction_seconds(&report);
    let nf = n as f64;
    let gflops = if reduction > 0.0 {
        4.0 / 3.0 * nf * nf * nf / reduction / 1e9
    } else {
        0.0
    };

    if let Some(dir) = &args.output {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        npy::write_vector(&dir.join("eigenvalues.npy"), &values)?;
        if let Some(v) = &vectors {
            npy::write_matrix(&dir.join("eigenvectors.npy"), v.as_ref())?;
        }
    }
    if args.json {
        let stage_obj: serde_json::Map<String, serde_json::Value> = stages
            .iter()
            .map(|(k, v)| (k.to_string(), (*v).into()))
            .collect();
        let mut line = serde_json::json!({
            "n": n, "precision": T::NAME,
            "job": if vectors.is_some() { "vectors" } else { "values" },
            "threads": rt.threads(), "bandwidth": b, "tasks": tasks, "seconds": seconds,
            "stages": stage_obj, "gflops": gflops, "build_seconds": build.as_secs_f64(),
        });
        if let Some((res, orth)) = checks {
            line["residual"] = res.into();
            line["orthogonality"] = orth.into();
        }
        println!("{line}");
    } else {
        println!(
            "n = {n} ({}), bandwidth {b}, {tasks} tasks on {} thread(s): {seconds:.3} s",
            T::NAME,
            rt.threads()
        );
        println!("{report}");
        println!("reduction rate (4/3 n^3 over the sy2sb-to-sb2st span): {gflops:.1} GFLOP/s");
        if n > 0 {
            println!(
                "eigenvalues: min {:.6e}, max {:.6e}",
                values[0].f64(),
                values[n - 1].f64()
            );
        }
        if let Some((res, orth)) = checks {
            println!("||A - V L V^T||: residual ratio {res:.3}; ||V^T V - I||: orthogonality ratio {orth:.3} (LAPACK threshold 30)");
        }
        if let Some(p) = &args.trace {
            println!("trace written to {} (open in ui.perfetto.dev)", p.display());
        }
    }
    Ok(())
}

/// LAPACK-style ratios: `||A V - V L||_F / (n ||A||_F eps)` (for values only,
/// `|sum(L) - trace(A)| / (n ||A||_F eps)`) and `||V^T V - I||_F / (n eps)`.
fn check_ratios<T: Scalar>(
    a: faer::MatRef<'_, T>,
    values: &[T],
    v: Option<faer::MatRef<'_, T>>,
) -> (f64, f64) {
    use faer::linalg::matmul::matmul;
    use faer::{Accum, Par};
    let n = a.nrows();
    if n == 0 {
        return (0.0, 0.0);
    }
    let par = Par::rayon(0);
    let full = Mat::from_fn(n, n, |i, j| if i >= j { a[(i, j)] } else { a[(j, i)] });
    let (nf, eps) = (n as f64, T::EPS.f64());
    let anorm = full.norm_l2().f64().max(f64::MIN_POSITIVE);
    let Some(v) = v else {
        let trace: f64 = (0..n).map(|i| full[(i, i)].f64()).sum();
        let sum: f64 = values.iter().map(|x| x.f64()).sum();
        return ((trace - sum).abs() / (nf * anorm * eps), 0.0);
    };
    let mut r = Mat::from_fn(n, n, |i, j| v[(i, j)] * values[j]);
    matmul(r.as_mut(), Accum::Add, full.as_ref(), v, -T::one(), par);
    let mut o = Mat::<T>::identity(n, n);
    matmul(o.as_mut(), Accum::Add, v.transpose(), v, -T::one(), par);
    (
        r.norm_l2().f64() / (nf * anorm * eps),
        o.norm_l2().f64() / (nf * eps),
    )
}
