//! eigenflow's two-stage symmetric EVD (values only; values and vectors) against
//! faer's self-adjoint solvers, timed alternately in the same process, plus the machine's
//! GEMM rate measured the way stage 1 uses it (one single-threaded faer GEMM per
//! thread, run as tasks of our runtime).
//!
//! `cargo bench --bench evd -- [--json] [--sizes 1024,2048,4096] [--reps 3]
//!     [--threads 1,2] [--precisions f64,f32] [--bandwidth B] [--tile T]
//!     [--sweep-group G] [--step-chunk C] [--jobs values,vectors]
//!     [--q2-group G] [--q2-window KIB]`
//!
//! `--q2-window 0` applies the Q2 blocks in their canonical order (the kernel
//! before row windows; bitwise the same result).
//!
//! On a GPU (issue 13) the timings are `gpu_check`'s (`cargo run --release
//! --features cuda --example gpu_check`), which runs the hybrid EVD against
//! cuSOLVER's `syevd`; nothing here has run on one. Expected at n = 49152 on
//! an H100, from the seed papers' figures: cuSOLVER's tridiagonalization
//! takes about 79 s (2.0 TFLOP/s), seed 001 reaches 19.6 TFLOP/s for the
//! reduction, so the goal for values only is about 8 s or less: stage 1
//! (4/3 n^3 = 1.6e14 flops) in about 8 s at 19.6 TFLOP/s, and the bulge
//! chasing overlapped with it.

#[path = "common/mod.rs"]
mod common;

use common::{faer_par, gemm_rate, list, median};
use eigenflow::gallery;
use eigenflow::pipeline::evd::{reduction_seconds, stage_seconds};
use eigenflow::pipeline::{eigh, EvdJob, EvdOptions};
use eigenflow::runtime::Runtime;
use eigenflow::Scalar;
use faer::{Mat, Side};
use std::time::Instant;

struct Args {
    json: bool,
    sizes: Vec<usize>,
    reps: usize,
    threads: Vec<usize>,
    precisions: Vec<String>,
    jobs: Vec<String>,
    opts: EvdOptions,
}

fn args() -> Args {
    let mut a = Args {
        json: false,
        sizes: vec![1024, 2048, 4096],
        reps: 3,
        threads: vec![1, 2],
        precisions: vec!["f64".into(), "f32".into()],
        jobs: vec!["values".into(), "vectors".into()],
        opts: EvdOptions::default(),
    };
    // This bench times the two-stage graph (its stage table needs the tasks);
    // benches/evd_small.rs compares it with the one-stage path.
    a.opts.one_stage_below = 1;
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        let mut val = || it.next().expect("flag needs a value");
        match x.as_str() {
            "--json" => a.json = true,
            "--sizes" => a.sizes = list(&val()),
            "--reps" => a.reps = val().parse().expect("--reps R"),
            "--threads" => a.threads = list(&val()),
            "--precisions" => a.precisions = list(&val()),
            "--jobs" => a.jobs = list(&val()),
            "--bandwidth" => a.opts.bandwidth = val().parse().expect("--bandwidth B"),
            "--tile" => a.opts.tile = val().parse().expect("--tile T"),
            "--sweep-group" => a.opts.sweep_group = val().parse().expect("--sweep-group G"),
            "--step-chunk" => a.opts.step_chunk = val().parse().expect("--step-chunk C"),
            "--q2-group" => a.opts.q2_group = val().parse().expect("--q2-group G"),
            "--q2-window" => a.opts.q2_window_kib = val().parse().expect("--q2-window KIB"),
            _ => {} // cargo bench passes --bench
        }
    }
    a
}

fn case<T: Scalar>(args: &Args, job: EvdJob, n: usize, threads: usize, gemm: f64) {
    let a: Mat<T> = gallery::random_symmetric_uniform(n, 42);
    let rt = Runtime::builder().threads(threads).build();
    faer::set_global_parallelism(faer_par(threads));
    let (mut ours, mut theirs, mut stages) = (Vec::new(), Vec::new(), Vec::new());
    let mut reductions = Vec::new();
    let mut max_diff = 0.0f64;
    for _ in 0..args.reps {
        let t = Instant::now();
        let eig = eigh(a.as_ref(), job, &args.opts, &rt).expect("eigenflow");
        ours.push(t.elapsed().as_secs_f64());
        stages.push(stage_seconds(&eig.report));
        reductions.push(reduction_seconds(&eig.report));
        drop(eig.vectors);
        let t = Instant::now();
        let reference: Vec<T> = match job {
            EvdJob::Values => a.self_adjoint_eigenvalues(Side::Lower).expect("faer"),
            EvdJob::Vectors => {
                let e = a.self_adjoint_eigen(Side::Lower).expect("faer");
                (0..n).map(|i| e.S()[i]).collect()
            }
        };
        theirs.push(t.elapsed().as_secs_f64());
        let norm = reference.iter().fold(0.0f64, |m, x| m.max(x.f64().abs()));
        for (x, y) in eig.values.iter().zip(&reference) {
            max_diff = max_diff.max((x.f64() - y.f64()).abs() / (n as f64 * T::EPS.f64() * norm));
        }
    }
    let (ours_m, faer_m) = (median(ours), median(theirs));
    let stage = |name: &str| {
        median(
            stages
                .iter()
                .map(|s| s.iter().find(|x| x.0 == name).map_or(0.0, |x| x.1))
                .collect(),
        )
    };
    let (sy2sb, sb2st) = (stage("sy2sb"), stage("sb2st"));
    let stage_obj: serde_json::Map<String, serde_json::Value> =
        ["sy2sb", "sb2st", "sterf", "stedc", "q2", "q1"]
            .iter()
            .filter(|s| stages[0].iter().any(|x| x.0 == **s))
            .map(|s| (s.to_string(), stage(s).into()))
            .collect();
    let jobname = match job {
        EvdJob::Values => "values",
        EvdJob::Vectors => "vectors",
    };
    // Spans after the reduction (they may overlap): sterf, or stedc + q2 + q1.
    let after = stage("sterf") + stage("stedc") + stage("q2") + stage("q1");
    let nf = n as f64;
    let gflops = 4.0 / 3.0 * nf.powi(3) / median(reductions) / 1e9;
    let sy2sb_rate = 4.0 / 3.0 * nf.powi(3) / sy2sb / 1e9;
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "bench": "evd", "job": jobname, "n": n, "precision": T::NAME, "threads": threads,
                "bandwidth": args.opts.bandwidth_for(n, job), "tile": args.opts.tile_for(n, args.opts.bandwidth_for(n, job)),
                "sweep_group": args.opts.sweep_group, "step_chunk": args.opts.step_chunk,
                "eigenflow_median_s": ours_m, "faer_median_s": faer_m, "speedup": faer_m / ours_m,
                "stages": stage_obj, "gflops": gflops, "sy2sb_gflops": sy2sb_rate, "gemm_gflops": gemm,
                "sy2sb_fraction_of_gemm": sy2sb_rate / gemm, "max_error_ratio": max_diff,
            })
        );
    } else {
        println!(
            "{:>7} {:>5} {:>4} {:>3} {:>9.3} {:>9.3} {:>7.2}x {:>8.3} {:>8.3} {:>8.3} {:>7.1} {:>6.0}% {:>6.2}",
            jobname,
            n,
            T::NAME,
            threads,
            ours_m,
            faer_m,
            faer_m / ours_m,
            sy2sb,
            sb2st,
            after,
            gflops,
            100.0 * sy2sb_rate / gemm,
            max_diff
        );
    }
}

fn main() {
    let args = args();
    if !args.json {
        println!(
            "{:>7} {:>5} {:>4} {:>3} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>7} {:>7} {:>6}",
            "job",
            "n",
            "prec",
            "thr",
            "ours (s)",
            "faer (s)",
            "speedup",
            "sy2sb",
            "sb2st",
            "solve",
            "GF/s",
            "%GEMM",
            "err"
        );
    }
    for p in &args.precisions {
        for &threads in &args.threads {
            let gemm = match p.as_str() {
                "f32" => gemm_rate::<f32>(threads, 2048),
                _ => gemm_rate::<f64>(threads, 2048),
            };
            if !args.json {
                println!("# {p}, {threads} thread(s): GEMM rate {gemm:.1} GFLOP/s");
            }
            for job in &args.jobs {
                let job = if job == "vectors" {
                    EvdJob::Vectors
                } else {
                    EvdJob::Values
                };
                for &n in &args.sizes {
                    match p.as_str() {
                        "f32" => case::<f32>(&args, job, n, threads, gemm),
                        _ => case::<f64>(&args, job, n, threads, gemm),
                    }
                }
            }
        }
    }
}
