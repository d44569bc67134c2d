//! Symmetric eigenvalues by the two-stage task graph, or by the one-stage path
//! where that is faster.
//!
//! `cargo run --release --example evd -- --n 4096 --values-only [--json] [--trace FILE]
//!     [--path auto|one-stage|two-stage]`
//!
//! Generates a random symmetric matrix from `--seed` (or reads `--input FILE.npy`),
//! checks that the run fits in memory before allocating, runs sy2sb -> sb2st ->
//! tridiagonal eigenvalues as one DAG with a progress bar, and prints per-stage
//! times (or one JSON line with `--json`). `--path auto` (the default) takes
//! the plan of [`eigenflow::pipeline::eigh`]: below the measured crossover
//! ([`EvdOptions::one_stage_for`]) the one-stage path (LAPACK `dsyevd`'s
//! sequence, no task graph, so no stage table), above it the graph.
//!
//! Everything that can be checked before the run is: that the input is a
//! regular file (a FIFO is refused without being opened), its shape (from its
//! header, before its data or any memory figure), the memory the run needs
//! (refusing sizes whose figure overflows), that `--output` is a writable
//! directory no other run holds and with room for the result, and the ranges
//! of `--threads` and the tuning options.
//!
//! The dtype follows the input file (an f32 `.npy` is computed and written in
//! f32) unless `--precision` says otherwise. Results are written as one set
//! that replaces the previous one as a unit ([`eigenflow::results`]); SIGINT
//! and SIGTERM cancel the run, leave the previous result as it was and exit
//! with 130 and 143. The fields of `--json` are described in docs/cli.md.
//!
//! `--input A.npy --input-b B.npy [--type 1|2|3]` solves the generalized
//! problem of A and B instead (`generalized.rs`).

use args::{positive, run_main, thread_count, DeviceArg, Precision, RunScalar, MAX_THREADS};
use clap::Parser;
use eigenflow::matrix::npy;
use eigenflow::pipeline::evd::{reduction_seconds, stage_seconds, Selection};
use eigenflow::pipeline::flops::{evd_stage_flops, rate_table, rates_json, stage_rates};
use eigenflow::pipeline::{EvdJob, EvdOptions};
use eigenflow::results::{InputFile, OutputDir, MANIFEST_RESERVE};
use eigenflow::runtime::{Progress, Runtime};
use eigenflow::sysinfo;
use eigenflow::trace::TraceLevel;
use eigenflow::{Error, Result};
use faer::Mat;
use std::path::PathBuf;
use watch::Stop;

#[path = "../common/args.rs"]
mod args;
#[path = "../common/watch.rs"]
mod watch;

mod generalized;
mod input;
mod out_of_core;
mod report;
mod solve;

use input::{check_memory, load_matrix, random_lower_columns, square_order};
use report::{check_ratios, print_paths};
use solve::{solve_graph, solve_one_stage, Solved};

/// `--path`: which algorithm solves the problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PathArg {
    /// The plan of `eigenflow::eigh`: one-stage below the measured crossover
    /// (`EvdOptions::one_stage_for`), else the two-stage graph; a run sent
    /// out of core by --memory-limit, or on a GPU, takes the graph.
    Auto,
    /// LAPACK `dsyevd`'s sequence (`sytrd`, divide and conquer, `ormtr`) on
    /// the calling thread, its large products in two halves: no task graph,
    /// so no progress bar, stage table or task trace (`--trace` records its
    /// phases).
    OneStage,
    /// The two-stage task graph (sy2sb, sb2st, solver, Q2, Q1).
    TwoStage,
}

#[derive(Parser, Debug)]
#[command(about = "Symmetric eigensolver: the eigenflow task graph, or one-stage where faster")]
struct Args {
    /// Matrix order (ignored with --input).
    #[arg(long, default_value_t = 4096)]
    n: usize,
    /// Arithmetic precision (default: the dtype of --input, f32 for an f2 or
    /// f4 file; f64 for a generated matrix).
    #[arg(long, value_enum)]
    precision: Option<Precision>,
    /// Eigenvalues only (default: eigenvalues and eigenvectors).
    #[arg(long)]
    values_only: bool,
    /// Algorithm: auto (the plan of `eigenflow::eigh`: one-stage below the
    /// measured crossover, else the two-stage graph), one-stage or two-stage.
    #[arg(long, value_enum, default_value_t = PathArg::Auto)]
    path: PathArg,
    /// Also compute ||A V - V L||_F / (n ||A||_F eps) and ||V^T V - I||_F / (n eps)
    /// (keeps a copy of A; O(n^3) extra work); with --values-only, only
    /// |sum(L) - trace(A)| / (n ||A||_F eps).
    #[arg(long)]
    check: bool,
    /// CPU worker threads, 1 to 1024 (default: all cores, at most 1024).
    #[arg(long, value_parser = thread_count)]
    threads: Option<usize>,
    /// Half-bandwidth of the intermediate band (default 32 for values, 64 with
    /// vectors). 0 is refused; n or more is lowered to n - 1, with a note.
    #[arg(long, value_parser = positive)]
    bandwidth: Option<usize>,
    /// Stage-1 tile size (rounded up to a multiple of the bandwidth). 0 is
    /// refused; more than n is lowered to n, with a note.
    #[arg(long, value_parser = positive)]
    tile: Option<usize>,
    /// Stage-2 sweeps per task. 0 is refused; more than the n - 2 sweeps is
    /// lowered to n - 2, with a note.
    #[arg(long, value_parser = positive)]
    sweep_group: Option<usize>,
    /// Stage-2 steps per task. 0 is refused; more than the skewed steps of one
    /// sweep group is lowered to that count, with a note.
    #[arg(long, value_parser = positive)]
    step_chunk: Option<usize>,
    /// Q2 back-transformation: sweeps per compact-WY block. 0 is refused; more
    /// than the n - 2 sweeps is lowered to n - 2, with a note.
    #[arg(long, value_parser = positive)]
    q2_group: Option<usize>,
    /// Back-transformations: eigenvector columns per task. 0 is refused; more
    /// than n is lowered to n, with a note.
    #[arg(long, value_parser = positive)]
    col_block: Option<usize>,
    /// Divide and conquer leaf size. 0 is refused; more than n is lowered to
    /// n (one leaf), with a note.
    #[arg(long, value_parser = positive)]
    leaf_size: Option<usize>,
    /// Read the matrix from a 2-D .npy file (f64, f32 or f16, C or Fortran
    /// order; an f16 file is computed in f32 unless --precision says f64; the
    /// lower triangle is used).
    #[arg(long)]
    input: Option<PathBuf>,
    /// The generalized symmetric-definite problem: read B from this 2-D .npy
    /// file (symmetric positive definite, the order of --input, whose
    /// triangle is read too) and solve the pencil of --input A and B (see
    /// --type) as one task graph: Cholesky of B, the reduction to a standard
    /// problem, the EVD, the back-substitution. The results are the same set
    /// as the standard problem's; B not positive definite is an error naming
    /// the leading minor that fails. CPU only.
    #[arg(long, value_name = "FILE", requires = "input")]
    input_b: Option<PathBuf>,
    /// With --input-b, the problem (scipy's and LAPACK's type): 1 for
    /// A x = λ B x (the default), 2 for A B x = λ x, 3 for B A x = λ x.
    #[arg(long = "type", value_name = "1|2|3", requires = "input_b",
          value_parser = clap::value_parser!(u8).range(1..=3))]
    problem_type: Option<u8>,
    /// Write eigenvalues.npy (ascending), with vectors eigenvectors.npy
    /// (column j belongs to eigenvalue j), and the manifest result.json into
    /// this directory, replacing its previous result as a unit (created,
    /// locked against other runs and checked for space before the run).
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
    /// Only the K largest eigenpairs (bisection, inverse iteration and the
    /// back-transformation of K columns; see docs/cli.md).
    #[arg(long, value_name = "K", group = "selection")]
    top: Option<usize>,
    /// Only the K smallest eigenpairs.
    #[arg(long, value_name = "K", group = "selection")]
    bottom: Option<usize>,
    /// Only the eigenpairs of indices LO..HI in ascending order (0-based,
    /// half-open), e.g. `--index 10:20`.
    #[arg(long, value_name = "LO:HI", value_parser = index_range, group = "selection")]
    index: Option<(usize, usize)>,
    /// Only the eigenpairs with eigenvalues in [VL, VU), e.g. `--range -1:1`
    /// (`inf` and `-inf` allowed); an empty range gives empty results.
    #[arg(long, value_name = "VL:VU", value_parser = value_range, group = "selection", allow_hyphen_values = true)]
    range: Option<(f64, f64)>,
    /// Resident memory the run may use, e.g. 3GiB or 512MiB (default: the
    /// available memory, a cgroup limit respected, less a sixteenth). With
    /// vectors, a run whose in-memory plan does not fit goes out of core
    /// (says so in one line): scratch files under --scratch, the eigenvectors
    /// written to disk by blocks of columns; it is refused only when memory
    /// and disk together cannot hold it.
    #[arg(long, value_name = "BYTES", value_parser = sysinfo::parse_bytes)]
    memory_limit: Option<u64>,
    /// Directory of an out-of-core run's scratch files (created without
    /// names: nothing is left behind). Default: the --output directory, or
    /// the system's temporary directory.
    #[arg(long, value_name = "DIR")]
    scratch: Option<PathBuf>,
    #[command(flatten)]
    dist: args::DistArgs,
}

/// Parses `LO:HI` of `--index`.
fn index_range(s: &str) -> std::result::Result<(usize, usize), String> {
    let (lo, hi) = s.split_once(':').ok_or("expected LO:HI, e.g. 10:20")?;
    let p = |x: &str| x.trim().parse::<usize>().map_err(|e| format!("{x:?}: {e}"));
    let (lo, hi) = (p(lo)?, p(hi)?);
    if lo > hi {
        return Err(format!("LO {lo} is above HI {hi}"));
    }
    Ok((lo, hi))
}

/// Parses `VL:VU` of `--range`.
fn value_range(s: &str) -> std::result::Result<(f64, f64), String> {
    let (lo, hi) = s.split_once(':').ok_or("expected VL:VU, e.g. -1:1")?;
    let p = |x: &str| x.trim().parse::<f64>().map_err(|e| format!("{x:?}: {e}"));
    let (lo, hi) = (p(lo)?, p(hi)?);
    if lo.is_nan() || hi.is_nan() || lo > hi {
        return Err(format!("VL {lo} and VU {hi}: need numbers with VL <= VU"));
    }
    Ok((lo, hi))
}

/// The selection of `--top`, `--bottom`, `--index` or `--range` (at most one).
fn selection(args: &Args) -> Option<Selection> {
    if let Some(k) = args.top {
        Some(Selection::Largest(k))
    } else if let Some(k) = args.bottom {
        Some(Selection::Smallest(k))
    } else if let Some((lo, hi)) = args.index {
        Some(Selection::Index(lo..hi))
    } else {
        args.range.map(|(lo, hi)| Selection::Value(lo, hi))
    }
}

fn main() {
    let args = Args::parse();
    if args.dist.distributed {
        let mut unsupported = Vec::new();
        for (given, flag) in [
            (args.check, "--check"),
            (args.trace.is_some(), "--trace"),
            (selection(&args).is_some(), "--top/--bottom/--index/--range"),
            (args.input_b.is_some(), "--input-b"),
        ] {
            if given {
                unsupported.push(flag);
            }
        }
        args::run_distributed(
            &args.dist,
            args::DistJob {
                svd: false,
                input: args.input.clone(),
                m: args.n,
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
    if args.input_b.is_some() {
        return generalized::start(args, stop);
    }
    let gpu = args::choose_device(args.device, "EVD", cfg!(feature = "cuda"))?;
    let (input, precision) = args::inspect_input(args.input.as_deref(), args.precision)?;
    match precision {
        Precision::F64 => run::<f64>(args, input, stop, gpu),
        Precision::F32 => run::<f32>(args, input, stop, gpu),
    }
}

/// Lag between consecutive sweeps in stage 2's skewed step order (the stage-2
/// schedule of Haidar, Ltaief and Dongarra): sweep `s + r` of a group starts
/// `3 r` steps after sweep `s`.
const SWEEP_LAG: usize = 3;

/// `value` of option `--name`, lowered to `max` (at least 1) with a note when
/// it is above: larger values mean nothing more for this n, and some would
/// wrap in the index arithmetic of the stages.
fn at_most(name: &str, value: usize, max: usize, what: &str) -> usize {
    let max = max.max(1);
    if value > max {
        eprintln!("note: --{name} {value} exceeds {what}; using {max}");
        max
    } else {
        value
    }
}

/// The tuning options for order `n`, each checked against what makes sense
/// for `n` (see the options' help).
fn options(args: &Args, n: usize, job: EvdJob) -> EvdOptions {
    let mut o = EvdOptions::default();
    let sweeps = n.saturating_sub(2);
    if let Some(b) = args.bandwidth {
        let what = format!("n - 1 = {}", n.saturating_sub(1));
        o.bandwidth = at_most("bandwidth", b, n.saturating_sub(1), &what);
    }
    let b = o.bandwidth_for(n, job);
    if let Some(t) = args.tile {
        o.tile = at_most("tile", t, n, &format!("n = {n}"));
    }
    let sweeps_of_n = format!("the {sweeps} sweeps of n = {n}");
    if let Some(g) = args.sweep_group {
        o.sweep_group = at_most("sweep-group", g, sweeps, &sweeps_of_n);
    }
    if let Some(c) = args.step_chunk {
        // The longest sweep has ceil((n - 2) / b) steps; a group of G sweeps
        // spans that plus the lag of its last sweep.
        let skewed = sweeps.div_ceil(b) + SWEEP_LAG * (o.sweep_group.clamp(1, sweeps.max(1)) - 1);
        let what = format!("the {skewed} skewed steps of a sweep group");
        o.step_chunk = at_most("step-chunk", c, skewed, &what);
    }
    if let Some(g) = args.q2_group {
        o.q2_group = at_most("q2-group", g, sweeps, &sweeps_of_n);
    }
    if let Some(c) = args.col_block {
        o.back_col_block = at_most("col-block", c, n, &format!("n = {n}"));
    }
    if let Some(l) = args.leaf_size {
        o.leaf_size = at_most("leaf-size", l, n, &format!("n = {n}"));
    }
    o.selection = selection(args);
    o
}

/// The job's name in the manifest and the JSON line.
fn job_name(vectors: bool) -> &'static str {
    if vectors {
        "vectors"
    } else {
        "values"
    }
}

/// Starts the result set of a run in `out`: `eigenvalues.npy`, and
/// `eigenvectors.npy` with vectors (retired without), plus the manifest
/// fields every run has (`n`, `dtype`, `job`, `k`); the caller adds its own
/// fields and commits. The standard and the generalized problem share it.
fn begin_results<'a, T: RunScalar>(
    out: &'a OutputDir,
    stop: &'a Stop,
    n: usize,
    values: &[T],
    vectors: Option<&Mat<T>>,
) -> Result<(
    eigenflow::results::ResultWriter<'a>,
    serde_json::Map<String, serde_json::Value>,
)> {
    let mut set = out.begin()?;
    set.stop_when(|| stop.signal().is_some());
    set.add_vector("eigenvalues.npy", values)?;
    match vectors {
        Some(v) => set.add_matrix("eigenvectors.npy", v.as_ref())?,
        None => set.retire("eigenvectors.npy"),
    }
    let mut fields = serde_json::Map::new();
    fields.insert("n".into(), n.into());
    fields.insert("dtype".into(), npy::Dtype::of::<T>().descr().into());
    let job = if vectors.is_some() {
        "vectors"
    } else {
        "values"
    };
    fields.insert("job".into(), job.into());
    fields.insert("k".into(), values.len().into());
    Ok((set, fields))
}

fn run<T: RunScalar>(
    args: &Args,
    input: Option<(InputFile, npy::Header)>,
    stop: &Stop,
    gpu: bool,
) -> Result<()> {
    let job = if args.values_only {
        EvdJob::Values
    } else {
        EvdJob::Vectors
    };
    let threads = args
        .threads
        .unwrap_or_else(|| sysinfo::default_threads().min(MAX_THREADS));
    // The process's own resident memory before the run allocates anything
    // (binary, libraries, runtime threads' stacks touched so far): the JSON
    // reports it next to the peak, so that the run's share can be compared
    // with the accounted figure.
    let start_rss = sysinfo::rss_bytes();
    // Everything that can fail before the run fails here, cheapest first.
    let out = args.output.as_deref().map(OutputDir::lock).transpose()?;
    let n = match &input {
        Some((file, header)) => square_order(&file.path, header)?,
        None => args.n,
    };
    let opts = options(args, n, job);
    // The columns a selection produces (a value range: up to n); refuses a
    // selection that does not fit n before any memory figure.
    let k = match &opts.selection {
        Some(sel) => sel.capacity(n)?,
        None => n,
    };
    let limit = args.memory_limit.or_else(sysinfo::default_memory_limit);
    if let (Some(given), Some(avail)) = (args.memory_limit, sysinfo::available_memory_bytes()) {
        if given > avail {
            eprintln!(
                "note: --memory-limit {} is above the {} this machine has available; \
                 a run planned to it may be killed for lack of memory",
                sysinfo::human_bytes(given),
                sysinfo::human_bytes(avail)
            );
        }
    }
    let one_stage =
        match args.path {
            PathArg::OneStage if gpu => return Err(Error::InvalidArgument(
                "--path one-stage runs on the CPU only: add --device cpu, or use --path two-stage"
                    .into(),
            )),
            PathArg::OneStage => true,
            PathArg::TwoStage => false,
            PathArg::Auto => !gpu && opts.one_stage_for::<T>(n, job),
        };
    let may_go_out_of_core = args.path != PathArg::OneStage;
    if may_go_out_of_core && job == EvdJob::Vectors && opts.selection.is_none() && !gpu {
        if let Some(plan) =
            out_of_core::plan::<T>(args, n, &opts, threads, limit, start_rss, out.as_ref())?
        {
            return out_of_core::run::<T>(args, input, stop, out, opts, plan, threads, start_rss);
        }
    }
    let needed = check_memory::<T>(n, job, args.check, &opts, threads, limit, one_stage)?;
    if let Some(out) = &out {
        let vectors = match job {
            EvdJob::Vectors => npy::file_bytes::<T>(&[n, k]),
            EvdJob::Values => 0,
        };
        out.check_space(npy::file_bytes::<T>(&[k]) + vectors + MANIFEST_RESERVE)?;
    }
    let a: Mat<T> = load_matrix(args, &input, n)?;
    if stop.signal().is_some() {
        return Err(Error::Cancelled);
    }
    let original = args.check.then(|| a.clone());
    let progress = Progress::new();
    if !args.json && !args.quiet {
        let how = if one_stage {
            "one-stage path (no task graph)"
        } else {
            "building the task graph"
        };
        eprintln!(
            "n = {n} ({}): needs {} of memory; {how}",
            T::NAME,
            sysinfo::human_bytes(needed)
        );
    }
    // On the GPU path the device tasks get a stream lane of their own (their
    // own track in the trace).
    let rt = Runtime::builder()
        .progress(progress.clone())
        .threads(threads)
        .streams(usize::from(gpu))
        .build();
    let solved = if one_stage {
        let solved = solve_one_stage(args, a, job, &opts, &rt)?;
        if stop.signal().is_some() {
            return Err(Error::Cancelled);
        }
        solved
    } else {
        solve_graph(args, a, job, &opts, &rt, gpu, &progress, stop)?
    };
    let Solved {
        values,
        vectors,
        report,
        tasks,
        build,
    } = solved;
    // With values only, a selection has no trace identity to check against.
    let checks = original
        .filter(|_| vectors.is_some() || opts.selection.is_none())
        .map(|a| check_ratios(a.as_ref(), &values, vectors.as_ref().map(|v| v.as_ref())));
    if args.check && checks.is_none() && !args.json {
        eprintln!("note: --check has nothing to check for a values-only selection");
    }
    let b = opts.bandwidth_for(n, job);
    let seconds = report.wall.as_secs_f64();
    // The one-stage path runs no tasks: no stages, no band.
    let stages = if one_stage {
        Vec::new()
    } else {
        stage_seconds(&report)
    };
    let path = if one_stage { "one-stage" } else { "two-stage" };
    let k_vectors = vectors.as_ref().map_or(0, |v| v.ncols());
    let rates = stage_rates(&report, |s| evd_stage_flops(s, n, k_vectors));
    let reduction = reduction_seconds(&report);
    let nf = n as f64;
    let gflops = if one_stage {
        None
    } else if reduction > 0.0 {
        Some(4.0 / 3.0 * nf * nf * nf / reduction / 1e9)
    } else {
        Some(0.0)
    };
    let job_name = job_name(vectors.is_some());

    let mut written = Vec::new();
    if let Some(out) = &out {
        let (set, mut fields) = begin_results(out, stop, n, &values, vectors.as_ref())?;
        let source = match &input {
            Some((file, _)) => file.to_json(),
            None => {
                serde_json::json!({ "generated": "uniform(-1, 1) lower triangle", "seed": args.seed })
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
        let (residual, orthogonality) = match checks {
            Some((r, o)) => (Some(r), o),
            None => (None, None),
        };
        let files: Option<Vec<String>> = out
            .is_some()
            .then(|| written.iter().map(|p| p.display().to_string()).collect());
        let line = serde_json::json!({
            "n": n, "precision": T::NAME, "job": job_name, "path": path,
            "threads": rt.threads(), "bandwidth": (!one_stage).then_some(b), "tasks": tasks,
            "seconds": seconds,
            "stages": stage_obj, "stage_rates": rates_json(&rates),
            "gflops": gflops, "build_seconds": build.as_secs_f64(),
            "residual": residual, "orthogonality": orthogonality, "files": files,
            "trace": args.trace.as_ref().map(|p| p.display().to_string()),
            "k": values.len(),
            "selection": opts.selection.as_ref().map(|s| format!("{s:?}")),
            "memory_bytes": needed,
            "peak_rss_bytes": sysinfo::peak_rss_bytes(),
            "start_rss_bytes": start_rss,
        });
        println!("{line}");
    } else if one_stage {
        println!(
            "n = {n} ({}), one-stage path (no task graph) on {} thread(s): {seconds:.3} s",
            T::NAME,
            rt.threads()
        );
    } else {
        println!(
            "n = {n} ({}), bandwidth {b}, {tasks} tasks on {} thread(s): {seconds:.3} s",
            T::NAME,
            rt.threads()
        );
        println!("{report}");
        print!("{}", rate_table(&rates));
        let gflops = gflops.unwrap_or(0.0);
        println!("reduction rate (4/3 n^3 over the sy2sb-to-sb2st span): {gflops:.1} GFLOP/s");
    }
    if !args.json {
        if let (Some(lo), Some(hi)) = (values.first(), values.last()) {
            println!(
                "{} eigenvalues: min {:.6e}, max {:.6e}",
                values.len(),
                lo.f64(),
                hi.f64()
            );
        }
        match checks {
            Some((res, Some(orth))) => println!(
                "||A - V L V^T||: residual ratio {res:.3}; ||V^T V - I||: orthogonality \
                 ratio {orth:.3} (LAPACK threshold 30)"
            ),
            Some((res, None)) => println!(
                "|sum(L) - trace(A)|: residual ratio {res:.3} (LAPACK threshold 30; \
                 eigenvalues only, so no orthogonality to check)"
            ),
            None => {}
        }
    }
    print_paths(args, &written);
    Ok(())
}
