//! `--input-b B.npy [--type 1|2|3]`: the generalized symmetric-definite
//! problem of `--input` A and B (`A x = λ B x`, `A B x = λ x` or
//! `B A x = λ x`) as one task graph (`eigenflow::pipeline::sygv`: Cholesky of
//! B, the reduction to the standard problem, the EVD, the back-substitution),
//! writing the same result set as the standard problem (`eigenvalues.npy`,
//! `eigenvectors.npy`, `result.json` naming both inputs and the type).

use super::input::square_order;
use super::report::print_paths;
use super::{args, begin_results, job_name, options, Args, Precision, RunScalar};
use eigenflow::matrix::npy;
use eigenflow::pipeline::evd::{memory_bytes, stage_seconds};
use eigenflow::pipeline::sygv::{sygv_graph, GeneralizedOptions, Problem};
use eigenflow::pipeline::EvdJob;
use eigenflow::results::{InputFile, OutputDir, MANIFEST_RESERVE};
use eigenflow::runtime::{Progress, RunOptions, Runtime};
use eigenflow::{sysinfo, Error, Result, Scalar};
use faer::{Mat, MatRef};
use std::time::Instant;

use super::watch::{show_progress, Stop};

type Input = (InputFile, npy::Header);

/// Looks at both inputs (headers only), picks the precision (`--precision`,
/// else f32 when neither file is f64, as numpy promotes) and runs.
pub fn start(args: &Args, stop: &Stop) -> Result<()> {
    if args::choose_device(args.device, "EVD", false)? {
        return Err(Error::InvalidArgument(
            "--input-b runs on the CPU only (the generalized problem has no GPU path)".into(),
        ));
    }
    let (a, pa) = args::inspect_input(args.input.as_deref(), args.precision)?;
    let (b, pb) = args::inspect_input(args.input_b.as_deref(), args.precision)?;
    let (Some(a), Some(b)) = (a, b) else {
        return Err(Error::InvalidArgument(
            "--input-b needs --input (the matrix A of the pencil)".into(),
        ));
    };
    match (pa, pb) {
        (Precision::F32, Precision::F32) => run::<f32>(args, a, b, stop),
        _ => run::<f64>(args, a, b, stop),
    }
}

/// The order of the pencil: both inputs square and of one order (checked
/// from the headers, before any memory figure).
fn pencil_order(a: &Input, b: &Input) -> Result<usize> {
    let n = square_order(&a.0.path, &a.1)?;
    let nb = square_order(&b.0.path, &b.1)?;
    if nb != n {
        return Err(Error::Shape(format!(
            "--input is {n} x {n} but --input-b is {nb} x {nb}: the pencil needs one order"
        )));
    }
    Ok(n)
}

/// Bytes the run needs: the EVD's figure for `C`, plus `L` and the two
/// matrices read (the graph copies their triangles), plus the copies
/// `--check` keeps.
fn check_memory<T: Scalar>(
    args: &Args,
    n: usize,
    job: EvdJob,
    opts: &GeneralizedOptions,
    threads: usize,
) -> Result<u64> {
    let words = (n as u64).checked_mul(n as u64);
    let size = std::mem::size_of::<T>() as u64;
    let extra = words.and_then(|w| w.checked_mul(3 * size));
    let run = memory_bytes::<T>(n, job, &opts.evd, threads)
        .zip(extra)
        .and_then(|(a, b)| a.checked_add(b));
    let copy = words.and_then(|w| w.checked_mul(if args.check { 2 * size } else { 0 }));
    let problem = format!("the {n} x {n} {} generalized problem", T::NAME);
    let limit = args.memory_limit.or_else(sysinfo::default_memory_limit);
    args::check_run_memory(&problem, run, copy, limit, |avail| {
        format!("{} are available", sysinfo::human_bytes(avail))
    })
}

/// `B`'s Cholesky failure as itself, not wrapped in the `potrf` task's
/// failure (the message names the leading minor).
fn unwrap_potrf(e: Error) -> Error {
    match e {
        Error::TaskFailed { source, .. }
            if matches!(*source, Error::NotPositiveDefinite { .. }) =>
        {
            *source
        }
        e => e,
    }
}

fn run<T: RunScalar>(args: &Args, a_in: Input, b_in: Input, stop: &Stop) -> Result<()> {
    let job = if args.values_only {
        EvdJob::Values
    } else {
        EvdJob::Vectors
    };
    let threads = args
        .threads
        .unwrap_or_else(|| sysinfo::default_threads().min(args::MAX_THREADS));
    let start_rss = sysinfo::rss_bytes();
    let out = args.output.as_deref().map(OutputDir::lock).transpose()?;
    let n = pencil_order(&a_in, &b_in)?;
    let t = args.problem_type.unwrap_or(1);
    let problem = Problem::from_type(t)?;
    let mut opts = GeneralizedOptions::new(problem);
    opts.evd = options(args, n, job);
    let k = match &opts.evd.selection {
        Some(sel) => sel.capacity(n)?,
        None => n,
    };
    let needed = check_memory::<T>(args, n, job, &opts, threads)?;
    if let Some(out) = &out {
        let vectors = match job {
            EvdJob::Vectors => npy::file_bytes::<T>(&[n, k]),
            EvdJob::Values => 0,
        };
        out.check_space(npy::file_bytes::<T>(&[k]) + vectors + MANIFEST_RESERVE)?;
    }
    let a = npy::read_square_matrix::<T>(&a_in.0.path)?;
    a_in.0.check_unchanged()?;
    let b = npy::read_square_matrix::<T>(&b_in.0.path)?;
    b_in.0.check_unchanged()?;
    if stop.signal().is_some() {
        return Err(Error::Cancelled);
    }
    let progress = Progress::new();
    let rt = Runtime::builder()
        .progress(progress.clone())
        .threads(threads)
        .build();
    let mut run_options = RunOptions::new();
    if let Some(path) = &args.trace {
        run_options = run_options.trace(path, args.trace_level);
    }
    let t0 = Instant::now();
    let sygv = sygv_graph(a.as_ref(), b.as_ref(), job, &opts)?;
    let build = t0.elapsed();
    let kept = args.check.then_some((a, b));
    let tasks = sygv.graph.len();
    let handle = rt.submit_with(sygv.graph, &run_options);
    show_progress(&handle, &progress, args.quiet, stop, t0);
    let report = handle.wait().map_err(unwrap_potrf)?;
    let (values, vectors) = sygv.results.into_results()?;
    let checks = match (&kept, &vectors) {
        (Some((a, b)), Some(x)) => {
            Some(ratios(a.as_ref(), b.as_ref(), problem, &values, x.as_ref()))
        }
        _ => None,
    };
    if args.check && checks.is_none() && !args.json {
        eprintln!("note: --check needs the eigenvectors; nothing to check with --values-only");
    }
    let job_name = job_name(vectors.is_some());
    let mut written = Vec::new();
    if let Some(out) = &out {
        let (set, mut fields) = begin_results(out, stop, n, &values, vectors.as_ref())?;
        fields.insert("problem_type".into(), t.into());
        fields.insert("input".into(), a_in.0.to_json());
        fields.insert("input_b".into(), b_in.0.to_json());
        written = stop.commit(|| set.commit(fields))?;
    }
    let seconds = report.wall.as_secs_f64();
    let stages = stage_seconds(&report);
    if args.json {
        let stage_obj: serde_json::Map<String, serde_json::Value> = stages
            .iter()
            .map(|(k, v)| (k.to_string(), (*v).into()))
            .collect();
        let (residual, orthogonality) = checks.unzip();
        let files: Option<Vec<String>> = out
            .is_some()
            .then(|| written.iter().map(|p| p.display().to_string()).collect());
        let line = serde_json::json!({
            "n": n, "precision": T::NAME, "job": job_name, "problem_type": t,
            "threads": rt.threads(), "tasks": tasks, "seconds": seconds, "stages": stage_obj,
            "build_seconds": build.as_secs_f64(), "residual": residual,
            "orthogonality": orthogonality, "files": files,
            "trace": args.trace.as_ref().map(|p| p.display().to_string()),
            "k": values.len(),
            "selection": opts.evd.selection.as_ref().map(|s| format!("{s:?}")),
            "memory_bytes": needed,
            "peak_rss_bytes": sysinfo::peak_rss_bytes(),
            "start_rss_bytes": start_rss,
        });
        println!("{line}");
    } else {
        println!(
            "n = {n} ({}), generalized type {}, {tasks} tasks on {} thread(s): {seconds:.3} s",
            T::NAME,
            t,
            rt.threads()
        );
        println!("{report}");
        if let (Some(lo), Some(hi)) = (values.first(), values.last()) {
            let (lo, hi) = (lo.f64(), hi.f64());
            println!("{} eigenvalues: min {lo:.6e}, max {hi:.6e}", values.len());
        }
        if let Some((res, orth)) = checks {
            println!(
                "backward error ratio {res:.3}; B-orthogonality ratio {orth:.3} (issue 65's \
                 forms; 30 is the bound for a well-conditioned B)"
            );
        }
    }
    print_paths(args, &written);
    Ok(())
}

/// The symmetric matrix whose lower triangle `a` holds, in f64.
fn sym64<T: Scalar>(a: MatRef<'_, T>) -> Mat<f64> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| {
        let (r, c) = if i >= j { (i, j) } else { (j, i) };
        a[(r, c)].f64()
    })
}

/// The 1-norm (largest column sum of magnitudes).
fn norm1(a: MatRef<'_, f64>) -> f64 {
    (0..a.ncols())
        .map(|j| a.col(j).iter().map(|x| x.abs()).sum::<f64>())
        .fold(0.0, f64::max)
}

/// Issue 65's ratios over `n eps`, in f64, with 1-norms: the worst backward
/// error `||A x - λ B x|| / ((||A|| + |λ| ||B||) ||x||)` (type 1; types 2
/// and 3: `A B x - λ x` and `B A x - λ x` over `(||A|| ||B|| + |λ|) ||x||`)
/// and the `B`-orthogonality `||X^T B X - I|| / ||B||` (type 3:
/// `X^T B^{-1} X` and `||B^{-1}||`; `B^{-1} X` by the Cholesky solve).
fn ratios<T: Scalar>(
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    problem: Problem,
    values: &[T],
    x: MatRef<'_, T>,
) -> (f64, f64) {
    use faer::linalg::solvers::{DenseSolveCore, Solve};
    let (a, b) = (sym64(a), sym64(b));
    let n = a.nrows();
    if n == 0 {
        return (0.0, 0.0);
    }
    let x = Mat::from_fn(n, x.ncols(), |i, j| x[(i, j)].f64());
    let ne = n as f64 * T::EPS.f64();
    let (an, bn) = (norm1(a.as_ref()), norm1(b.as_ref()));
    let (ax, bx) = (&a * &x, &b * &x);
    let mut worst = 0.0f64;
    for (j, l) in values.iter().map(|l| l.f64()).enumerate() {
        let (r, scale) = match problem {
            Problem::AxLambdaBx => (ax.col(j) - bx.col(j) * l, an + l.abs() * bn),
            Problem::ABxLambdaX => (&a * bx.col(j) - x.col(j) * l, an * bn + l.abs()),
            Problem::BAxLambdaX => (&b * ax.col(j) - x.col(j) * l, an * bn + l.abs()),
        };
        let rn: f64 = r.iter().map(|v| v.abs()).sum();
        let xn: f64 = x.col(j).iter().map(|v| v.abs()).sum();
        worst = worst.max(rn / (scale * xn.max(f64::MIN_POSITIVE)) / ne);
    }
    let k = values.len();
    let (g, mn) = match problem {
        Problem::AxLambdaBx | Problem::ABxLambdaX => (x.transpose() * &bx, bn),
        Problem::BAxLambdaX => match b.as_ref().llt(faer::Side::Lower) {
            Ok(llt) => (x.transpose() * llt.solve(&x), norm1(llt.inverse().as_ref())),
            Err(_) => return (worst, f64::NAN),
        },
    };
    let g = g - Mat::<f64>::identity(k, k);
    (worst, norm1(g.as_ref()) / (mn * ne))
}
