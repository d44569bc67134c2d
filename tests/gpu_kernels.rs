//! The CUDA kernels against their CPU task bodies on small inputs (issue 13),
//! per kernel with the bound `eigenflow::pipeline::device::cuda::check` states, and the hybrid
//! EVD and SVD through cuBLAS against the CPU pipelines' accuracy suites.
//! They need a GPU (and NVRTC, and cuBLAS): built where no CUDA driver was
//! found (the build script's `cfg(eigenflow_cuda_driver)`) they are ignored,
//! as the harness lists; built where one was, a test fails if no GPU is
//! usable. The launch schedule is checked on the CPU, without a GPU. Needs
//! the `cuda` feature (Cargo.toml's `required-features`).

#[path = "common/mod.rs"]
mod common;

use eigenflow::cuda::GpuLanes;
use eigenflow::linalg::band::chase::SWEEP_LAG;
use eigenflow::linalg::band::{gb2bd, sb2st};
use eigenflow::pipeline::device::cuda::check::{
    check_gb2bd, check_jacobi, check_sb2st, KernelCheck,
};
use eigenflow::pipeline::device::cuda::launch::{launch_window, Kernels};
use eigenflow::Result;
use std::collections::HashMap;

/// The lanes and kernels (the test fails without a usable GPU: it is
/// ignored where no driver was found at build time).
fn gpu(test: &str) -> (GpuLanes, Kernels) {
    let lanes = GpuLanes::open(0, 1)
        .unwrap_or_else(|e| panic!("{test}: built where a CUDA driver was found, but {e}"));
    match Kernels::load(lanes.context()) {
        Ok(k) => (lanes, k),
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
#[cfg_attr(
    not(eigenflow_cuda_driver),
    ignore = "no CUDA driver found when this test was built"
)]
fn gpu_sb2st_matches_cpu_task_body() {
    let (lanes, k) = gpu("gpu_sb2st_matches_cpu_task_body");
    for (n, b) in [(3, 1), (17, 3), (64, 8), (130, 16)] {
        assert_within(check_sb2st::<f64>(&lanes, &k, n, b, 7));
        assert_within(check_sb2st::<f32>(&lanes, &k, n, b, 7));
    }
}

#[test]
#[cfg_attr(
    not(eigenflow_cuda_driver),
    ignore = "no CUDA driver found when this test was built"
)]
fn gpu_gb2bd_matches_cpu_task_body() {
    let (lanes, k) = gpu("gpu_gb2bd_matches_cpu_task_body");
    for (n, b) in [(4, 2), (33, 5), (64, 20), (100, 40)] {
        assert_within(check_gb2bd::<f64>(&lanes, &k, n, b, 11));
        assert_within(check_gb2bd::<f32>(&lanes, &k, n, b, 11));
    }
}

#[test]
#[cfg_attr(
    not(eigenflow_cuda_driver),
    ignore = "no CUDA driver found when this test was built"
)]
fn gpu_jacobi_matches_cpu() {
    let (lanes, k) = gpu("gpu_jacobi_matches_cpu");
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

/// The hybrid EVD with cuBLAS (stage 1 and Q1 on the GPU) on every matrix
/// family of the CPU suite: residual and orthogonality ratios below 30,
/// eigenvalues within `5 n eps max|lambda|` of faer's; values only too.
#[test]
#[cfg_attr(
    not(eigenflow_cuda_driver),
    ignore = "no CUDA driver found when this test was built"
)]
fn gpu_hybrid_evd_meets_the_accuracy_suite() {
    use eigenflow::gallery::Family;
    use eigenflow::pipeline::device::cuda::CublasDevice;
    use eigenflow::pipeline::evd::hybrid::eigh_hybrid;
    use eigenflow::pipeline::{EvdJob, EvdOptions};
    use eigenflow::runtime::Runtime;
    use std::sync::Arc;
    let dev = Arc::new(CublasDevice::open(0).unwrap_or_else(|e| {
        panic!(
            "gpu_hybrid_evd_meets_the_accuracy_suite: built where a CUDA driver was found, but {e}"
        )
    }));
    fn check<T: eigenflow::pipeline::device::cuda::CublasScalar>(dev: &Arc<CublasDevice>) {
        let rt = Runtime::builder().threads(2).streams(1).build();
        for family in Family::ALL {
            for (n, b) in [(1, 4), (2, 4), (37, 4), (130, 8), (300, 16)] {
                let mut o = EvdOptions::auto();
                o.bandwidth = b;
                let a: faer::Mat<T> = family.generate(n, 5);
                let out = eigh_hybrid(a.as_ref(), EvdJob::Vectors, &o, &rt, dev).unwrap();
                let v = out.vectors.as_ref().expect("vectors");
                let (res, orth) = common::eig_ratios(a.as_ref(), &out.values, v.as_ref());
                let want = common::reference(a.as_ref());
                let norm = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                let err = out
                    .values
                    .iter()
                    .zip(&want)
                    .fold(0.0f64, |m, (x, y)| m.max((x.f64() - y).abs()));
                let val = err / (n as f64 * T::EPS.f64() * norm.max(f64::MIN_POSITIVE));
                println!(
                    "{{\"check\": \"evd_hybrid\", \"family\": \"{}\", \"n\": {n}, \"precision\": \"{}\", \"residual\": {res}, \"orthogonality\": {orth}, \"values\": {val}}}",
                    family.name(),
                    T::NAME
                );
                assert!(
                    res < 30.0 && orth < 30.0 && val <= 5.0,
                    "{} n={n}",
                    family.name()
                );
                let values = eigh_hybrid(a.as_ref(), EvdJob::Values, &o, &rt, dev).unwrap();
                assert_eq!(values.values.len(), n);
            }
        }
    }
    check::<f64>(&dev);
    check::<f32>(&dev);
}

/// The hybrid SVD with cuBLAS (ge2gb's updates and Q1 on the GPU) on the
/// SVD families, square, tall and wide: residual and orthogonality ratios
/// below 30, singular values within `5 max(m, n) eps s_1` of faer's.
#[test]
#[cfg_attr(
    not(eigenflow_cuda_driver),
    ignore = "no CUDA driver found when this test was built"
)]
fn gpu_hybrid_svd_meets_the_accuracy_suite() {
    use eigenflow::pipeline::device::cuda::CublasDevice;
    use eigenflow::pipeline::svd::hybrid::svd_hybrid;
    use eigenflow::pipeline::{SvdJob, SvdOptions};
    use eigenflow::runtime::Runtime;
    use faer::Mat;
    use std::sync::Arc;
    let dev = Arc::new(CublasDevice::open(0).unwrap_or_else(|e| {
        panic!(
            "gpu_hybrid_svd_meets_the_accuracy_suite: built where a CUDA driver was found, but {e}"
        )
    }));
    fn check<T: eigenflow::pipeline::device::cuda::CublasScalar>(dev: &Arc<CublasDevice>) {
        let rt = Runtime::builder().threads(2).streams(1).build();
        for name in common::SVD_FAMILIES {
            for (m, n, b) in [(1, 1, 4), (5, 3, 4), (40, 23, 4), (23, 40, 4), (200, 61, 8)] {
                let mut o = SvdOptions::auto();
                o.bandwidth = b;
                let a: Mat<T> = common::svd_family(name, m, n, 7);
                let r = svd_hybrid(a.as_ref(), SvdJob::Vectors, &o, &rt, dev).unwrap();
                let (u, vt) = (r.u.unwrap(), r.vt.unwrap());
                let k = m.min(n);
                let a64 = common::to_f64(a.as_ref());
                let (u64, vt64) = (common::to_f64(u.as_ref()), common::to_f64(vt.as_ref()));
                let s: Vec<f64> = r.values.iter().map(|x| x.f64()).collect();
                let us = Mat::<f64>::from_fn(m, k, |i, j| u64[(i, j)] * s[j]);
                let eps = T::EPS.f64();
                let mm = m.max(n) as f64;
                let anorm = a64.norm_l2().max(f64::MIN_POSITIVE);
                let res = (&us * &vt64 - &a64).norm_l2() / (mm * anorm * eps);
                let ou = (u64.transpose() * &u64 - Mat::<f64>::identity(k, k)).norm_l2()
                    / (m as f64 * eps);
                let ov = (&vt64 * vt64.transpose() - Mat::<f64>::identity(k, k)).norm_l2()
                    / (n as f64 * eps);
                let want = a64.singular_values().expect("faer");
                let s1 = want.first().copied().unwrap_or(0.0).max(f64::MIN_POSITIVE);
                let err = s
                    .iter()
                    .zip(&want)
                    .fold(0.0f64, |d, (x, y)| d.max((x - y).abs()));
                let val = err / (mm * eps * s1);
                println!(
                    "{{\"check\": \"svd_hybrid\", \"family\": \"{name}\", \"m\": {m}, \"n\": {n}, \"precision\": \"{}\", \"residual\": {res}, \"orthogonality_u\": {ou}, \"orthogonality_v\": {ov}, \"values\": {val}}}",
                    T::NAME
                );
                assert!(
                    res < 30.0 && ou < 30.0 && ov < 30.0 && val <= 5.0,
                    "{name} {m} x {n}"
                );
            }
        }
    }
    check::<f64>(&dev);
    check::<f32>(&dev);
}
