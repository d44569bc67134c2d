//! Runtime overhead: 1,000,000 empty tasks as a chain, a fan-out/fan-in and a
//! random DAG (~4 in-edges per task), built and run on 1 and 2 threads, next to a
//! plain rayon baseline for the fan-out/fan-in in the same run.
//!
//! Then the cost of one tiny run (issue 17): an empty graph, 1 task and 10
//! independent tiny tasks, median microseconds per run (graph building
//! included) on one persistent runtime, against a fresh runtime per run (which
//! starts and joins its threads every time, as every run did before the pool);
//! and per-call time of `eigenflow::eigvalsh` at n = 3 and 10 on the default
//! runtime and on a fresh runtime per call, next to faer's
//! `self_adjoint_eigenvalues` and `self_adjoint_eigen` in the same run.
//!
//! `cargo bench --bench runtime -- [--json] [--tasks N] [--reps R] [--tiny]`
//! (`--tiny`: only the tiny-run and per-call tables).

use eigenflow::graph::{TaskGraph, TaskId};
use eigenflow::runtime::Runtime;
use std::time::Instant;

#[path = "runtime/tiny.rs"]
mod tiny;

struct Args {
    json: bool,
    tasks: usize,
    reps: usize,
    tiny_only: bool,
}

fn args() -> Args {
    let mut a = Args {
        json: false,
        tasks: 1_000_000,
        reps: 3,
        tiny_only: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--json" => a.json = true,
            "--tiny" => a.tiny_only = true,
            "--tasks" => a.tasks = it.next().and_then(|v| v.parse().ok()).expect("--tasks N"),
            "--reps" => a.reps = it.next().and_then(|v| v.parse().ok()).expect("--reps R"),
            _ => {} // cargo bench passes --bench
        }
    }
    a
}

fn build(kind: &str, n: usize) -> TaskGraph<'static> {
    let mut g = TaskGraph::with_capacity(n, 4 * n);
    match kind {
        "chain" => {
            let mut prev = g.task("t", |_| Ok(()));
            for _ in 1..n {
                let t = g.task("t", |_| Ok(()));
                g.edge(prev, t);
                prev = t;
            }
        }
        "fan" => {
            let src = g.task("src", |_| Ok(()));
            let sink_placeholder: Vec<TaskId> =
                (0..n - 2).map(|_| g.task("t", |_| Ok(()))).collect();
            let sink = g.task("sink", |_| Ok(()));
            for &t in &sink_placeholder {
                g.edge(src, t);
                g.edge(t, sink);
            }
        }
        "random" => {
            let mut state = 0x2545_F491_4F6C_DD1Du64;
            for i in 0..n {
                let t = g.task("t", |_| Ok(()));
                let k = 4.min(i);
                // k distinct predecessors among the previous 256 tasks.
                let mut picked = [usize::MAX; 4];
                let mut m = 0;
                while m < k {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let p = i - 1 - (state % 256.min(i as u64)) as usize;
                    if !picked[..m].contains(&p) {
                        picked[m] = p;
                        m += 1;
                    }
                }
                for &p in &picked[..k] {
                    g.edge(g.task_id(p).expect("an earlier task"), t);
                }
            }
        }
        _ => unreachable!(),
    }
    g
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn rayon_fan(n: usize, threads: usize) -> f64 {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let t = Instant::now();
    pool.scope(|s| {
        for _ in 0..n {
            s.spawn(|_| std::hint::black_box(()));
        }
    });
    t.elapsed().as_secs_f64()
}

fn main() {
    let a = args();
    if !a.tiny_only {
        big_graphs(&a);
    }
    tiny::runs(a.json);
    tiny::calls(a.json);
}

fn big_graphs(a: &Args) {
    let n = a.tasks;
    if !a.json {
        println!(
            "{:<8} {:>9} {:>8} {:>12} {:>12} {:>15}",
            "bench", "tasks", "threads", "build ns/t", "run ns/t", "rayon ns/t"
        );
    }
    for kind in ["chain", "fan", "random"] {
        for threads in [1, 2] {
            let rt = Runtime::builder().threads(threads).build();
            let (mut builds, mut runs, mut base) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..a.reps {
                let t = Instant::now();
                let g = build(kind, n);
                builds.push(t.elapsed().as_secs_f64());
                let t = Instant::now();
                let report = rt.run(g).expect("run");
                runs.push(t.elapsed().as_secs_f64());
                drop(report);
                if kind == "fan" {
                    base.push(rayon_fan(n, threads));
                }
            }
            let per = |s: f64| s * 1e9 / n as f64;
            let build_ns = per(median(builds));
            let run_ns = per(median(runs));
            let base_ns = (!base.is_empty()).then(|| per(median(base)));
            if a.json {
                println!(
                    "{}",
                    serde_json::json!({
                        "bench": kind, "tasks": n, "threads": threads,
                        "build_ns_per_task": build_ns, "run_ns_per_task": run_ns,
                        "baseline_ns_per_task": base_ns,
                    })
                );
            } else {
                println!(
                    "{:<8} {:>9} {:>8} {:>12.1} {:>12.1} {:>15}",
                    kind,
                    n,
                    threads,
                    build_ns,
                    run_ns,
                    base_ns.map_or("-".into(), |b| format!("{b:.1}"))
                );
            }
        }
    }
}
