//! The dense SVD by the two-stage task graph.
//!
//! `cargo run --release --example svd -- --m 3000 --n 2000 [--values-only]
//!     [--check] [--json] [--trace FILE] [--output DIR]`
//!
//! Generates a random Gaussian `m x n` matrix from `--seed` (or reads `--input
//! FILE.npy`, any 2-D f64/f32/f16 array, C or Fortran order), checks that the run
//! fits in memory before allocating, runs ge2gb -> gb2bd -> the bidiagonal
//! SVD (-> the back-transformations) as one DAG with a progress display, and
//! prints per-stage times (or one JSON line with `--json`; fields in
//! docs/cli.md).
//!
//! Results (`--output DIR`): `singular_values.npy` (descending) and, with
//! vectors, `u.npy` (`m x k`) and `vt.npy` (`k x n`), `k = min(m, n)`, in
//! numpy's convention (`u @ np.diag(s) @ vt` reconstructs A); with `--top K`
//! the K largest triplets only (`k = K`), written as one
//! set that replaces the previous one as a unit ([`eigenflow::results`]).
//! SIGINT and SIGTERM cancel the run, leave the previous result as it was and
//! exit with 130 and 143. The dtype follows the input file unless
//! `--precision` says otherwise. `--band-precision f16|bf16` (with
//! `--values-only`) stores the band in half precision during stage 2.

use args::{positive, run_main, thread_count, DeviceArg, Precision, RunScalar, MAX_THREADS};
use clap::{Parser, ValueEnum};
use eigenflow::gallery;
use eigenflow::matrix::npy;
use eigenflow::pipeline::flops::{rate_table, rates_json, stage_rates, svd_stage_flops, SvdShape};
use eigenflow::pipeline::svd::{memory_bytes, stage_seconds, SvdGraph, GEQRF};
use eigenflow::pipeline::{svd_graph, BandPrecision, SvdJob, SvdOptions};
use eigenflow::results::{InputFile, OutputDir, MANIFEST_RESERVE};
use eigenflow::runtime::{Progress, RunOptions, Runtime};
use eigenflow::sysinfo;
use eigenflow::trace::TraceLevel;
use eigenflow::{Error, Result, Scalar};
use faer::{Mat, MatRef};
use std::path::PathBuf;
use std::time::Instant;
use watch::{show_progress, Stop};

#[path = "../common/args.rs"]
mod args;
#[path = "../common/watch.rs"]
mod watch;

/// Storage of the band during stage 2 (`--band-precision`).
#[derive(Clone, Copy, Debug, ValueEnum)]
enum BandStore {
    /// IEEE binary16.
    F16,
    /// bfloat16.
    Bf16,
}

#[derive(Parser, Debug)]
#[command(about = "Two-stage SVD on the eigenflow task graph")]
struct Args {
    /// Rows (default: --n, a square matrix; ignored with --input).
    #[arg(long)]
    m: Option<usize>,
    /// Columns (ignored with --input).
    #[arg(long, default_value_t = 2048)]
    n: usize,
    /// Arithmetic precision (default: the dtype of --input, f32 for an f2 or
    /// f4 file; f64 for a generated matrix).
    #[arg(long, value_enum)]
    precision: Option<Precision>,
    /// Singular values only (default: values and the thin U and V^T).
    #[arg(long)]
    values_only: bool,
    /// Only the K largest singular values (descending) and, with vectors,
    /// their K columns of U (u.npy m x K) and rows of V^T (vt.npy K x n), by
    /// bisection and inverse iteration on the Golub-Kahan tridiagonal of the
    /// bidiagonal (issue 11); K = 0 writes empty results.
    #[arg(long, value_name = "K")]
    top: Option<usize>,
    /// Store the band in f16 or bf16 during stage 2 (f32 arithmetic inside
    /// each task; seed 000's data-precision awareness). Singular values only:
    /// needs --values-only. Relative error about 2e-4 (f16) or 1.5e-3 (bf16)
    /// of ||s||_2.
    #[arg(long, value_enum)]
    band_precision: Option<BandStore>,
    /// Also compute ||A - U S V^T||_F / (max(m,n) ||A||_F eps), ||U^T U - I||_F
    /// / (m eps) and ||V^T V - I||_F / (n eps) (keeps a copy of A; O(m n k)
    /// extra work); with --values-only, |sum(s^2) - ||A||_F^2| / (max(m,n)
    /// ||A||_F^2 eps).
    #[arg(long)]
    check: bool,
    /// CPU worker threads, 1 to 1024 (default: all cores).
    #[arg(long, value_parser = thread_count)]
    threads: Option<usize>,
    /// Upper bandwidth of the intermediate band (default 32); lowered to
    /// min(m, n) - 1.
    #[arg(long, value_parser = positive)]
    bandwidth: Option<usize>,
    /// Stage 2: superdiagonals removed per pass (default: values only, one
    /// 128-byte cache line, 16 for f64 and 32 for f32; with vectors one pass);
    /// at least the bandwidth - 1 means one pass.
    #[arg(long, value_parser = positive)]
    tilewidth: Option<usize>,
    /// Q2 back-transformations: sweeps per compact-WY block (default 16). 0 is
    /// refused.
    #[arg(long, value_parser = positive)]
    q2_group: Option<usize>,
    /// Back-transformations: columns of U and V per task (default 512, lowered
    /// to about n / 8). 0 is refused.
    #[arg(long, value_parser = positive)]
    col_block: Option<usize>,
    /// Read the matrix from a 2-D .npy file (f8, f4 or f2; C or Fortran
    /// order; an f2 file is computed in f32 unless --precision says f64).
    #[arg(long)]
    input: Option<PathBuf>,
    /// Write singular_values.npy, with vectors u.npy and vt.npy, and the
    /// manifest result.json into this directory, replacing its previous
    /// result as a unit (created, locked against other runs and checked for
    /// space before the run).
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
    /// Print one machine-readable JSON line on stdout (fields: docs/cli.md);
    /// progress and messages go to stderr.
    #[arg(long)]
    json: bool,
    /// No progress display.
    #[arg(long)]
    quiet: bool,
    /// Where to run: auto (a GPU if usable, else the CPU, said in one line),
    /// cpu, or gpu (exits non-zero, saying what was looked for, without one).
    #[arg(long, value_enum, default_value_t = DeviceArg::Auto)]
    device: DeviceArg,
    #[command(flatten)]
    dist: args::DistArgs,
}

fn main() {
    let args = Args::parse();
    if args.dist.distributed {
        let mut unsupported = Vec::new();
        for (given, flag) in [
            (args.check, "--check"),
            (args.trace.is_some(), "--trace"),
            (args.band_precision.is_some(), "--band-precision"),
        ] {
            if given {
                unsupported.push(flag);
            }
        }
        args::run_distributed(
            &args.dist,
            args::DistJob {
                svd: true,
                input: args.input.clone(),
                m: args.m.unwrap_or(args.n),
                n: args.n,
                seed: args.seed,
                f32: args.precision.map(|p| matches!(p, Precision::F32)),
                vectors: !args.values_only,
                output: args.output.clone(),
                json: args.json,
                unsupported,
            },
        );
    }
    run_main(args.output.as_deref(), |stop| start(&args, stop));
}

/// Looks at the input (without opening anything but a regular file), picks
/// the precision and runs.
fn start(args: &Args, stop: &Stop) -> Result<()> {
    let gpu = args::choose_device(args.device, "SVD", cfg!(feature = "cuda"))?;
    let (input, precision) = args::inspect_input(args.input.as_deref(), args.precision)?;
    match precision {
        Precision::F64 => run::<f64>(args, input, stop, gpu),
        Precision::F32 => run::<f32>(args, input, stop, gpu),
    }
}

/// The hybrid SVD's graph on GPU 0 (ge2gb's updates and Q1 through cuBLAS),
/// its device tasks on stream lane 0.
#[cfg(feature = "cuda")]
fn gpu_graph<T: RunScalar>(
    a: MatRef<'_, T>,
    job: SvdJob,
    opts: &SvdOptions,
) -> Result<SvdGraph<T>> {
    use eigenflow::pipeline::svd::hybrid::svd_graph_hybrid;
    let dev = std::sync::Arc::new(eigenflow::pipeline::device::cuda::CublasDevice::open(0)?);
    svd_graph_hybrid(a, job, opts, &dev, eigenflow::graph::Lane::Stream(0))
}

#[cfg(not(feature = "cuda"))]
fn gpu_graph<T: RunScalar>(_: MatRef<'_, T>, _: SvdJob, _: &SvdOptions) -> Result<SvdGraph<T>> {
    // choose_device never picks the GPU in a build without the feature.
    Err(eigenflow::cuda::probe(0).err().unwrap_or(Error::NotRun))
}

/// The shape `(m, n)` of the 2-D array in the header.
fn matrix_shape(path: &std::path::Path, header: &npy::Header) -> Result<(usize, usize)> {
    match header.shape[..] {
        [m, n] => Ok((m, n)),
        _ => Err(Error::Npy {
            path: path.to_path_buf(),
            reason: format!("expected a 2-D matrix, found shape {:?}", header.shape),
        }),
    }
}

/// The largest square order (a multiple of 1024) whose run fits in `available`.
fn largest_fitting<T: Scalar>(
    available: u64,
    job: SvdJob,
    opts: &SvdOptions,
    threads: usize,
) -> usize {
    args::largest_fitting(1 << 21, |n| {
        memory_bytes::<T>(n, n, job, opts, threads).is_some_and(|b| b <= available)
    })
}

/// Bytes the run needs (the input, kept for `--check`, included); fails, saying
/// what fits, if they are more than the memory available.
fn check_memory<T: Scalar>(
    m: usize,
    n: usize,
    job: SvdJob,
    opts: &SvdOptions,
    threads: usize,
) -> Result<u64> {
    let what = match job {
        SvdJob::Values => "singular values",
        SvdJob::Vectors => "singular values and vectors",
    };
    let problem = format!("the {m} x {n} {} SVD ({what})", T::NAME);
    let suggestion = |avail: u64| {
        let f = |j| {
            (
                largest_fitting::<f64>(avail, j, opts, threads),
                largest_fitting::<f32>(avail, j, opts, threads),
            )
        };
        let (v64, v32) = f(SvdJob::Vectors);
        let (e64, e32) = f(SvdJob::Values);
        format!(
            "this machine fits square --n {v64} (f64) or {v32} (f32) with vectors, \
             --n {e64} (f64) or {e32} (f32) with --values-only"
        )
    };
    args::check_run_memory(
        &problem,
        memory_bytes::<T>(m, n, job, opts, threads),
        // The input itself: held while the graph copies it, and through the
        // run for --check.
        args::check_copy_bytes::<T>(m, n, true),
        None,
        suggestion,
    )
}

fn run<T: RunScalar>(
    args: &Args,
    input: Option<(InputFile, npy::Header)>,
    stop: &Stop,
    gpu: bool,
) -> Result<()> {
    let job = if args.values_only {
        SvdJob::Values
    } else {
        SvdJob::Vectors
    };
    let threads = args
        .threads
        .unwrap_or_else(|| sysinfo::default_threads().min(MAX_THREADS));
    // The process's resident memory before the run allocates anything, reported
    // next to the peak (as the evd example does).
    let start_rss = sysinfo::rss_bytes();
    let out = args.output.as_deref().map(OutputDir::lock).transpose()?;
    let (m, n) = match &input {
        Some((file, header)) => matrix_shape(&file.path, header)?,
        None => (args.m.unwrap_or(args.n), args.n),
    };
    let kmin = m.min(n);
    let mut opts = SvdOptions::auto();
    if let Some(top) = args.top {
        let sel = eigenflow::SvdSelection::Largest(top);
        sel.indices(kmin)?;
        if args.check && job == SvdJob::Values {
            return Err(Error::InvalidArgument(
                "--check with --top needs the vectors (its residual is ||A V - U S||):                  drop --values-only"
                    .into(),
            ));
        }
        opts.selection = Some(sel);
    }
    // The number of singular triplets the run returns.
    let k = args.top.unwrap_or(kmin);
    if let Some(b) = args.bandwidth {
        opts.bandwidth = b;
    }
    if let Some(tw) = args.tilewidth {
        opts.tile_width = tw;
    }
    if let Some(g) = args.q2_group {
        opts.q2_group = g;
    }
    if let Some(c) = args.col_block {
        opts.back_col_block = c;
    }
    if let Some(bp) = args.band_precision {
        if job == SvdJob::Vectors {
            return Err(Error::InvalidArgument(
                "--band-precision stores the band in half precision, which is for singular \
                 values only: add --values-only"
                    .into(),
            ));
        }
        opts.band_precision = match bp {
            BandStore::F16 => BandPrecision::F16,
            BandStore::Bf16 => BandPrecision::BF16,
        };
    }
    let needed = check_memory::<T>(m, n, job, &opts, threads)?;
    if let Some(out) = &out {
        let vectors = match job {
            SvdJob::Vectors => npy::file_bytes::<T>(&[m, k]) + npy::file_bytes::<T>(&[k, n]),
            SvdJob::Values => 0,
        };
        out.check_space(npy::file_bytes::<T>(&[k]) + vectors + MANIFEST_RESERVE)?;
    }
    let a: Mat<T> = match &input {
        Some((file, _)) => {
            let a = npy::read_matrix::<T>(&file.path)?;
            file.check_unchanged()?;
            a
        }
        None => gallery::random_gaussian(m, n, args.seed),
    };
    if stop.signal().is_some() {
        return Err(Error::Cancelled);
    }
    let b = opts.bandwidth_for(kmin);
    if !args.json && !args.quiet {
        eprintln!(
            "{m} x {n} ({}): needs {} of memory; building the task graph",
            T::NAME,
            sysinfo::human_bytes(needed)
        );
    }
    let progress = Progress::new();
    // On the GPU path the device tasks get a stream lane of their own.
    let rt = Runtime::builder()
        .progress(progress.clone())
        .threads(threads)
        .streams(usize::from(gpu))
        .build();
    // The trace belongs to this run (`RunOptions`), not to the runtime.
    let mut run_options = RunOptions::new();
    if let Some(path) = &args.trace {
        run_options = run_options.trace(path, args.trace_level);
    }

    let t0 = Instant::now();
    let svd = if gpu {
        gpu_graph(a.as_ref(), job, &opts)?
    } else {
        svd_graph(a.as_ref(), job, &opts)?
    };
    let build = t0.elapsed();
    // The graph works on its own copy: keep the input only for --check (the
    // copy the memory check counts).
    let original = args.check.then_some(a);
    let tasks = svd.graph.len();
    let (graph, results) = svd.into_parts();
    let handle = rt.submit_with(graph, &run_options);
    show_progress(&handle, &progress, args.quiet, stop, t0);
    let report = handle.wait()?;
    let (values, u, vt) = results.into_results()?;
    let checks = original
        .as_ref()
        .map(|a| check_ratios(a.as_ref(), &values, u.as_ref().zip(vt.as_ref())));
    let job_name = match (job, args.top) {
        (SvdJob::Values, None) => "values",
        (SvdJob::Vectors, None) => "vectors",
        (SvdJob::Values, Some(_)) => "top values",
        (SvdJob::Vectors, Some(_)) => "top vectors",
    };
    drop(original);
    let seconds = report.wall.as_secs_f64();
    let stages = stage_seconds(&report);
    let shape = SvdShape {
        m: m.max(n),
        n: kmin,
        k: if u.is_some() { k } else { 0 },
        qr: report.tasks.iter().any(|t| t.stage == GEQRF),
    };
    let rates = stage_rates(&report, |s| svd_stage_flops(s, shape));

    let mut written = Vec::new();
    if let Some(out) = &out {
        let mut set = out.begin()?;
        set.stop_when(|| stop.signal().is_some());
        set.add_vector("singular_values.npy", &values)?;
        match (&u, &vt) {
            (Some(u), Some(vt)) => {
                set.add_matrix("u.npy", u.as_ref())?;
                set.add_matrix("vt.npy", vt.as_ref())?;
            }
            _ => {
                set.retire("u.npy");
                set.retire("vt.npy");
            }
        }
        let mut fields = serde_json::Map::new();
        fields.insert("m".into(), m.into());
        fields.insert("n".into(), n.into());
        fields.insert("dtype".into(), npy::Dtype::of::<T>().descr().into());
        fields.insert("job".into(), format!("svd {job_name}").into());
        let source = match &input {
            Some((file, _)) => file.to_json(),
            None => {
                serde_json::json!({ "generated": "standard Gaussian entries", "seed": args.seed })
            }
        };
        fields.insert("input".into(), source);
        written = stop.commit(|| set.commit(fields))?;
    }
    if args.json {
        let stage_obj: serde_json::Map<String, serde_json::Value> = stages
            .iter()
            .map(|(k, v)| (k.to_string(), (*v).into()))
            .collect();
        let (residual, orth_u, orth_v) = match checks {
            Some((r, Some((ou, ov)))) => (Some(r), Some(ou), Some(ov)),
            Some((r, None)) => (Some(r), None, None),
            None => (None, None, None),
        };
        let files: Option<Vec<String>> = out
            .is_some()
            .then(|| written.iter().map(|p| p.display().to_string()).collect());
        let line = serde_json::json!({
            "m": m, "n": n, "precision": T::NAME, "job": job_name,
            "band_precision": args.band_precision.map(|p| match p {
                BandStore::F16 => "f16",
                BandStore::Bf16 => "bf16",
            }),
            "top": args.top, "k": k, "threads": rt.threads(), "bandwidth": b, "tasks": tasks, "seconds": seconds,
            "stages": stage_obj, "stage_rates": rates_json(&rates),
            "build_seconds": build.as_secs_f64(),
            "residual": residual, "orthogonality_u": orth_u, "orthogonality_v": orth_v,
            "files": files, "trace": args.trace.as_ref().map(|p| p.display().to_string()),
            "memory_bytes": needed,
            "peak_rss_bytes": sysinfo::peak_rss_bytes(),
            "start_rss_bytes": start_rss,
        });
        println!("{line}");
    } else {
        println!(
            "{m} x {n} ({}), bandwidth {b}, {tasks} tasks on {} thread(s): {seconds:.3} s",
            T::NAME,
            rt.threads()
        );
        println!("{report}");
        print!("{}", rate_table(&rates));
        if k > 0 {
            println!(
                "singular values: max {:.6e}, min {:.6e}",
                values[0].f64(),
                values[k - 1].f64()
            );
        }
        match checks {
            Some((res, Some((ou, ov)))) => println!(
                "||A - U S V^T||: residual ratio {res:.3}; ||U^T U - I||: {ou:.3}; \
                 ||V^T V - I||: {ov:.3} (LAPACK threshold 30)"
            ),
            Some((res, None)) => println!(
                "|sum(s^2) - ||A||_F^2|: ratio {res:.3} (LAPACK threshold 30; values only{})",
                if args.band_precision.is_some() {
                    "; a half band gives about 1e-4 / eps by design"
                } else {
                    ""
                }
            ),
            None => {}
        }
    }
    let mut paths: Vec<String> = written
        .iter()
        .map(|p| format!("wrote {}", p.display()))
        .collect();
    if let Some(p) = &args.trace {
        paths.push(format!(
            "wrote {} (trace; open in ui.perfetto.dev)",
            p.display()
        ));
    }
    for line in paths {
        if args.json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
    Ok(())
}

/// LAPACK-style ratios: `||A - U S V^T||_F / (max(m,n) ||A||_F eps)` (for
/// fewer than `min(m, n)` triplets, `--top`: `||A V - U S||_F`) and the
/// orthogonality of the `k` columns of `U` and `V`; values only: `|sum(s^2) - ||A||_F^2| /
/// (max(m,n) ||A||_F^2 eps)`.
fn check_ratios<T: Scalar>(
    a: MatRef<'_, T>,
    s: &[T],
    uv: Option<(&Mat<T>, &Mat<T>)>,
) -> (f64, Option<(f64, f64)>) {
    use faer::linalg::matmul::matmul;
    use faer::{Accum, Par};
    let (m, n) = (a.nrows(), a.ncols());
    let k = s.len();
    if k == 0 {
        return (0.0, uv.map(|_| (0.0, 0.0)));
    }
    let par = Par::rayon(0);
    let eps = T::EPS.f64();
    let mm = m.max(n) as f64;
    let anorm = a.norm_l2().f64().max(f64::MIN_POSITIVE);
    let Some((u, vt)) = uv else {
        let sum: f64 = s.iter().map(|x| x.f64() * x.f64()).sum();
        return (
            (sum - anorm * anorm).abs() / (mm * anorm * anorm * eps),
            None,
        );
    };
    let us = Mat::from_fn(m, k, |i, j| u[(i, j)] * s[j]);
    let r = if k == m.min(n) {
        let mut r = a.to_owned();
        matmul(
            r.as_mut(),
            Accum::Add,
            us.as_ref(),
            vt.as_ref(),
            -T::one(),
            par,
        );
        r
    } else {
        // Selected triplets: A V - U S (m x k).
        let mut r = us;
        matmul(r.as_mut(), Accum::Add, a, vt.transpose(), -T::one(), par);
        r
    };
    let mut ou = Mat::<T>::identity(k, k);
    matmul(
        ou.as_mut(),
        Accum::Add,
        u.transpose(),
        u.as_ref(),
        -T::one(),
        par,
    );
    let mut ov = Mat::<T>::identity(k, k);
    matmul(
        ov.as_mut(),
        Accum::Add,
        vt.as_ref(),
        vt.transpose(),
        -T::one(),
        par,
    );
    (
        r.norm_l2().f64() / (mm * anorm * eps),
        Some((
            ou.norm_l2().f64() / (m as f64 * eps),
            ov.norm_l2().f64() / (n as f64 * eps),
        )),
    )
}
