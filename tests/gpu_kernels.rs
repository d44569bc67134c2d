//! The CUDA kernels against their CPU task bodies on small inputs (issue 13),
//! per kernel with the bound `eigenflow::cuda::check` states. They need a GPU
//! (and NVRTC): without one each test prints `SKIPPED <name>: <why>` and
//! checks nothing. The launch schedule is checked on the CPU, without a GPU.
//! Needs the `cuda` feature (Cargo.toml's `required-features`).

use eigenflow::cuda::check::{check_gb2bd, check_jacobi, check_sb2st, KernelCheck};
use eigenflow::cuda::launch::{launch_window, Kernels};
use eigenflow::cuda::GpuLanes;
use eigenflow::linalg::chase::SWEEP_LAG;
use eigenflow::linalg::{gb2bd, sb2st};
use eigenflow::Result;
use std::collections::HashMap;

/// The lanes and kernels, or `None` after printing why `test` is skipped.
fn gpu(test: &str) -> Option<(GpuLanes, Kernels)> {
    let lanes = match GpuLanes::open(0, 1) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("SKIPPED {test}: {e}");
            return None;
        }
    };
    match Kernels::load(lanes.context()) {
        Ok(k) => Some((lanes, k)),
        // A GPU without NVRTC is a broken setup, not an absent GPU.
        Err(e) => panic!("{test}: a GPU is present but the kernels do not load: {e}"),
    }
}

fn assert_within(c: Result<KernelCheck>) {
    let c = c.unwrap_or_else(|e| panic!("{e}"));
    println!("{}", c.json());
    assert!(
        c.passed(),
        "{}: GPU and CPU differ by {} ulps (bound {})",
        c.name,
        c.ulps,
        c.bound_ulps
    );
}

#[test]
fn gpu_sb2st_matches_cpu_task_body() {
    let Some((lanes, k)) = gpu("gpu_sb2st_matches_cpu_task_body") else {
        return;
    };
    for (n, b) in [(3, 1), (17, 3), (64, 8), (130, 16)] {
        assert_within(check_sb2st::<f64>(&lanes, &k, n, b, 7));
        assert_within(check_sb2st::<f32>(&lanes, &k, n, b, 7));
    }
}

#[test]
fn gpu_gb2bd_matches_cpu_task_body() {
    let Some((lanes, k)) = gpu("gpu_gb2bd_matches_cpu_task_body") else {
        return;
    };
    for (n, b) in [(4, 2), (33, 5), (64, 20), (100, 40)] {
        assert_within(check_gb2bd::<f64>(&lanes, &k, n, b, 11));
        assert_within(check_gb2bd::<f32>(&lanes, &k, n, b, 11));
    }
}

#[test]
fn gpu_jacobi_matches_cpu() {
    let Some((lanes, k)) = gpu("gpu_jacobi_matches_cpu") else {
        return;
    };
    for (batch, m, n) in [(1, 2, 2), (5, 16, 16), (7, 40, 24), (3, 65, 33)] {
        assert_within(check_jacobi::<f64>(&lanes, &k, batch, m, n, 13));
        assert_within(check_jacobi::<f32>(&lanes, &k, batch, m, n, 13));
    }
}

/// Runs the launches of a chase with `sweeps` sweeps of `steps(s)` tasks as
/// the launchers do, and checks that every task runs exactly once and after
/// its predecessors `preds(s, m)` (then tasks of one launch are unordered in
/// the DAG, so their footprints are disjoint: tested on the CPU side).
fn check_schedule(
    sweeps: usize,
    steps: impl Fn(usize) -> usize,
    preds: impl Fn(usize, usize) -> [Option<(usize, usize)>; 2],
) {
    let max_steps = if sweeps > 0 { steps(0) } else { 0 };
    let mut time = HashMap::new();
    let last_t = (0..sweeps).map(|s| steps(s) - 1 + SWEEP_LAG * s).max();
    for t in 0..=last_t.unwrap_or(0) {
        if let Some((lo, hi)) = launch_window(t, max_steps, sweeps) {
            for s in lo..=hi {
                let m = t - SWEEP_LAG * s;
                if m < steps(s) {
                    assert!(time.insert((s, m), t).is_none(), "({s}, {m}) twice");
                }
            }
        }
    }
    for s in 0..sweeps {
        for m in 0..steps(s) {
            let t = time
                .get(&(s, m))
                .unwrap_or_else(|| panic!("({s}, {m}) never launched"));
            for p in preds(s, m).into_iter().flatten() {
                assert!(time[&p] < *t, "{p:?} not before ({s}, {m})");
            }
        }
    }
    assert_eq!(time.len(), (0..sweeps).map(&steps).sum::<usize>());
}

#[test]
fn skewed_launches_cover_every_task_after_its_predecessors() {
    for (n, b) in [(3, 1), (10, 2), (17, 3), (40, 6), (41, 8), (130, 16)] {
        check_schedule(
            sb2st::num_sweeps(n),
            |s| sb2st::steps(n, b, s),
            |s, m| sb2st::fine_preds(n, b, s, m),
        );
    }
    for (n, b, bn) in [(12, 3, 1), (30, 5, 2), (33, 17, 1), (100, 40, 24)] {
        let pass = gb2bd::Pass::new(b, bn).unwrap();
        check_schedule(
            gb2bd::num_sweeps(n, pass),
            |r| gb2bd::steps(n, pass, r),
            |r, s| gb2bd::fine_preds(n, pass, r, s),
        );
    }
}
