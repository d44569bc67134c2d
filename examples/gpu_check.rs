//! One command that checks the GPU backend on a machine with a GPU (issue 13):
//!
//! `cargo run --release --features cuda --example gpu_check [-- --max-n 32768]`
//!
//! 1. finds the device (or prints why not and exits 1);
//! 2. compiles every `kernels/*.cu` with NVRTC for it and loads them;
//! 3. runs each kernel (sb2st, gb2bd, batched Jacobi) against its CPU
//!    counterpart on small inputs
//!    (`eigenflow::cuda::check`, bounds stated there);
//! 4. times the sb2st bulge chase on the GPU for n = 4096, 8192, ... up to
//!    `--max-n` (band b = 32, f64 and f32), from a random band.
//!
//! Prints one JSON line per check or measurement on stdout and a final line
//! `gpu_check: PASS` or `gpu_check: FAIL (...)`; exits 0 only on PASS.
//!
//! Not yet here (stated in the output too): the comparison with cuSOLVER
//! `syevd`, and the full EVD on the GPU (the pipelines have no GPU stages
//! yet). Written without a GPU: never run.

use eigenflow::cuda::check::{check_gb2bd, check_jacobi, check_sb2st, KernelCheck};
use eigenflow::cuda::launch::{sb2st_on_stream, GpuScalar, Kernels};
use eigenflow::cuda::{nvrtc_version, GpuLanes};
use eigenflow::matrix::band::SymBand;
use eigenflow::{gallery, Error, Result};
use std::time::Instant;

fn main() {
    if std::env::args().skip(1).any(|a| a == "--help" || a == "-h") {
        println!("Usage: gpu_check [--max-n N]\n\nChecks the CUDA backend on this machine's GPU (see the source's docs).\n\nOptions:\n  --max-n N  largest n of the sb2st timings (default 32768)\n  --help     print this help");
        return;
    }
    let max_n = parse_max_n().unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2);
    });
    match run(max_n) {
        Ok(failures) if failures.is_empty() => println!("gpu_check: PASS"),
        Ok(failures) => {
            println!("gpu_check: FAIL ({})", failures.join("; "));
            std::process::exit(1);
        }
        Err(e) => {
            println!("gpu_check: FAIL ({e})");
            std::process::exit(1);
        }
    }
}

/// `--max-n N` (default 32768), the largest n of the timings.
fn parse_max_n() -> std::result::Result<usize, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => Ok(32768),
        [flag, v] if flag == "--max-n" => v.parse().map_err(|e| format!("--max-n {v}: {e}")),
        _ => Err("usage: gpu_check [--max-n N]".into()),
    }
}

/// Runs everything; the names of the failed checks.
fn run(max_n: usize) -> Result<Vec<String>> {
    let lanes = GpuLanes::open(0, 1)?;
    let info = lanes.context().info().clone();
    let (major, minor) = nvrtc_version()?;
    println!(
        "{}",
        serde_json::json!({
            "device": info.name,
            "compute_capability": format!("{}.{}", info.compute_capability.0, info.compute_capability.1),
            "free_gib": info.free_bytes as f64 / (1u64 << 30) as f64,
            "nvrtc": format!("{major}.{minor}"),
        })
    );
    let kernels = Kernels::load(lanes.context())?;
    let mut failures = Vec::new();
    let mut record = |c: Result<KernelCheck>| -> Result<()> {
        let c = c?;
        println!("{}", c.json());
        if !c.passed() {
            failures.push(c.name.clone());
        }
        Ok(())
    };
    for (n, b) in [(17, 3), (64, 8), (130, 16), (257, 32)] {
        record(check_sb2st::<f64>(&lanes, &kernels, n, b, 3))?;
        record(check_sb2st::<f32>(&lanes, &kernels, n, b, 3))?;
    }
    for (n, b) in [(33, 5), (100, 40), (257, 64)] {
        record(check_gb2bd::<f64>(&lanes, &kernels, n, b, 5))?;
        record(check_gb2bd::<f32>(&lanes, &kernels, n, b, 5))?;
    }
    for (batch, m, n) in [(5, 16, 16), (64, 32, 32), (16, 128, 96)] {
        record(check_jacobi::<f64>(&lanes, &kernels, batch, m, n, 9))?;
        record(check_jacobi::<f32>(&lanes, &kernels, batch, m, n, 9))?;
    }
    let mut n = 4096;
    while n <= max_n {
        time_sb2st::<f64>(&lanes, &kernels, n, 32)?;
        time_sb2st::<f32>(&lanes, &kernels, n, 32)?;
        n *= 2;
    }
    println!(
        "{}",
        serde_json::json!({"measure": "cusolver_syevd", "status": "not implemented yet"})
    );
    Ok(failures)
}

/// Times the sb2st chase of a random order-`n` band on lane 0 (upload and
/// download excluded).
fn time_sb2st<T: GpuScalar>(lanes: &GpuLanes, kernels: &Kernels, n: usize, b: usize) -> Result<()> {
    let drv = |e: eigenflow::cuda::cudarc::driver::DriverError| {
        Error::external(format!("CUDA driver: {e:?}"))
    };
    let mut band = SymBand::<T>::zeros(n, b);
    let mut rng = gallery::Rng::new(n as u64);
    for c in 0..n {
        for r in c..(c + b + 1).min(n) {
            band.set(r, c, T::of(rng.uniform_in(-1.0, 1.0)));
        }
    }
    let stream = lanes.stream(0);
    let mut ab = stream.clone_htod(band.as_slice()).map_err(drv)?;
    stream.synchronize().map_err(drv)?;
    let start = Instant::now();
    let launches = sb2st_on_stream(kernels, stream, &mut ab, band.ldab(), n, b, None)?;
    stream.synchronize().map_err(drv)?;
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{}",
        serde_json::json!({
            "measure": "sb2st_gpu",
            "precision": T::SUFFIX,
            "n": n,
            "b": b,
            "seconds": seconds,
            "launches": launches,
            "values_only": true,
        })
    );
    Ok(())
}
