//! Tiny runs and tiny solves: what one call costs when there is almost no work,
//! so the runtime's fixed cost (thread start, wake-up, plan) dominates.

use super::median;
use eigenflow::faer::{Mat, Side};
use eigenflow::graph::TaskGraph;
use eigenflow::pipeline::{self, EvdJob, EvdOptions};
use eigenflow::runtime::Runtime;
use std::hint::black_box;
use std::time::Instant;

/// Median microseconds of `reps` calls of `f`, after `warm` unmeasured calls.
fn median_us(warm: usize, reps: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..warm {
        f();
    }
    let times = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    median(times)
}

/// `k` independent tasks that do (almost) nothing.
fn graph(k: usize) -> TaskGraph<'static> {
    let mut g = TaskGraph::with_capacity(k, 0);
    for _ in 0..k {
        g.task("t", |_| {
            black_box(());
            Ok(())
        });
    }
    g
}

/// A fresh runtime whose every CPU worker is a thread of its own (a stack size
/// set): its first run starts them all and dropping it joins them, which is
/// what every run cost before the pool.
fn fresh(threads: usize) -> Runtime {
    Runtime::builder()
        .threads(threads)
        .stack_size(2 << 20)
        .build()
}

/// Microseconds per run of an empty, a 1-task and a 10-task graph, on one
/// persistent runtime and on a fresh runtime per run (threads started and
/// joined per run).
pub fn runs(json: bool) {
    if !json {
        println!();
        println!(
            "{:<12} {:>8} {:>16} {:>22}",
            "tiny run", "threads", "pooled us/run", "new threads us/run"
        );
    }
    for threads in [1, 2] {
        let rt = Runtime::builder().threads(threads).build();
        for (name, k) in [("empty", 0), ("1 task", 1), ("10 tasks", 10)] {
            let pooled = median_us(200, 5000, || {
                rt.run(graph(k)).expect("run");
            });
            let fresh = median_us(20, 500, || {
                fresh(threads).run(graph(k)).expect("run");
            });
            if json {
                println!(
                    "{}",
                    serde_json::json!({
                        "bench": "tiny-run", "graph": name, "threads": threads,
                        "pooled_us_per_run": pooled, "fresh_runtime_us_per_run": fresh,
                    })
                );
            } else {
                println!("{name:<12} {threads:>8} {pooled:>16.2} {fresh:>22.2}");
            }
        }
    }
}

/// Microseconds per `eigvalsh` call at n = 3 and 10 (the default runtime, all
/// cores; and a fresh runtime per call, threads started per call), next to
/// faer in the same run; and where the time of a call goes: the run itself
/// (`RunReport::wall`: plan and tasks) and the memory admission check (which
/// reads /proc and the cgroup files on every call).
pub fn calls(json: bool) {
    if !json {
        println!();
        println!(
            "{:<16} {:>4} {:>10} {:>13} {:>10} {:>10} {:>12} {:>11}",
            "per call (us)",
            "n",
            "eigvalsh",
            "new threads",
            "run wall",
            "mem check",
            "faer values",
            "faer eigen"
        );
    }
    let threads = eigenflow::default_runtime().threads();
    for n in [3usize, 10] {
        // A fixed symmetric matrix with distinct eigenvalues.
        let a = Mat::<f64>::from_fn(n, n, |i, j| {
            let (i, j) = (i.max(j) as f64, i.min(j) as f64);
            1.0 / (1.0 + i + j) + if i == j { i } else { 0.0 }
        });
        let pooled = median_us(200, 3000, || {
            black_box(eigenflow::eigvalsh(&a).expect("eigvalsh"));
        });
        let fresh = median_us(20, 300, || {
            let eig = pipeline::eigh(
                a.as_ref(),
                EvdJob::Values,
                &EvdOptions::auto(),
                &fresh(threads),
            );
            black_box(eig.expect("eigh"));
        });
        let walls: Vec<f64> = (0..1000)
            .map(|_| {
                let rt = eigenflow::default_runtime();
                let eig = pipeline::eigh(a.as_ref(), EvdJob::Values, &EvdOptions::auto(), rt);
                eig.expect("eigh").report.wall.as_secs_f64() * 1e6
            })
            .collect();
        let wall = median(walls);
        let mem_check = median_us(20, 1000, || {
            black_box(eigenflow::sysinfo::available_memory_bytes());
        });
        let faer_values = median_us(200, 3000, || {
            black_box(a.self_adjoint_eigenvalues(Side::Lower).expect("faer"));
        });
        let faer_eigen = median_us(200, 3000, || {
            black_box(a.self_adjoint_eigen(Side::Lower).expect("faer"));
        });
        if json {
            println!(
                "{}",
                serde_json::json!({
                    "bench": "eigvalsh-call", "n": n, "threads": threads,
                    "eigvalsh_us": pooled, "new_threads_us": fresh,
                    "run_wall_us": wall, "memory_check_us": mem_check,
                    "faer_eigenvalues_us": faer_values, "faer_eigen_us": faer_eigen,
                })
            );
        } else {
            println!(
                "{:<16} {n:>4} {pooled:>10.2} {fresh:>13.2} {wall:>10.2} {mem_check:>10.2} {faer_values:>12.2} {faer_eigen:>11.2}",
                format!("f64, {threads} thr")
            );
        }
    }
}
