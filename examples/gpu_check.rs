//! One command that checks the GPU backend on a machine with a GPU (issue 13):
//!
//! `cargo run --release --features cuda --example gpu_check [-- --max-n 32768]`
//!
//! 1. finds the device (or prints why not and exits 1);
//! 2. compiles every `kernels/*.cu` with NVRTC for it and loads them;
//! 3. runs each kernel (sb2st, gb2bd, batched Jacobi) against its CPU
//!    counterpart on small inputs
//!    (`eigenflow::pipeline::device::cuda::check`, bounds stated there);
//! 4. runs the hybrid EVD (stage 1 and Q1 through cuBLAS,
//!    `eigenflow::pipeline::evd::hybrid`) at small n against the same driver
//!    on the host device: ratios below 30, eigenvalues within 8 n eps;
//!    and the hybrid SVD likewise (square, tall and wide);
//! 5. times the sb2st bulge chase on the GPU for n = 4096, 8192, ... up to
//!    `--max-n` (band b = 32, f64 and f32), from a random band;
//! 6. times the hybrid EVD against cuSOLVER's `syevd` (called through
//!    cudarc's cusolver bindings, here only) at the same sizes, values and
//!    vectors, f64 and f32.
//!
//! Prints one JSON line per check or measurement on stdout and a final line
//! `gpu_check: PASS` or `gpu_check: FAIL (...)`; exits 0 only on PASS.
//!
//! Written without a GPU: never run.

use eigenflow::cuda::{nvrtc_version, GpuLanes};
use eigenflow::matrix::band::SymBand;
use eigenflow::pipeline::device::cuda::check::{
    check_gb2bd, check_jacobi, check_sb2st, KernelCheck,
};
use eigenflow::pipeline::device::cuda::launch::{sb2st_on_stream, GpuScalar, Kernels};
use eigenflow::pipeline::device::cuda::{CublasDevice, CublasScalar};
use eigenflow::pipeline::evd::hybrid::{eigh_hybrid, HostBlas};
use eigenflow::pipeline::evd::stage_seconds;
use eigenflow::pipeline::{EvdJob, EvdOptions};
use eigenflow::runtime::Runtime;
use eigenflow::{gallery, Error, Result};
use faer::Mat;
use std::sync::Arc;
use std::time::Instant;

/// The precisions checked: the kernels', cuBLAS's and cuSOLVER's.
trait RunScalar: GpuScalar + CublasScalar + cusolver::Syevd {}
impl RunScalar for f64 {}
impl RunScalar for f32 {}

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
    let dev = Arc::new(CublasDevice::open(0)?);
    let mut hybrid = |c: Result<serde_json::Value>, name: String| -> Result<()> {
        let c = c?;
        println!("{c}");
        if c["passed"] != serde_json::Value::Bool(true) {
            failures.push(name);
        }
        Ok(())
    };
    for n in [1, 2, 65, 300, 1000] {
        hybrid(
            check_hybrid::<f64>(&dev, n),
            format!("evd_hybrid f64 n={n}"),
        )?;
        hybrid(
            check_hybrid::<f32>(&dev, n),
            format!("evd_hybrid f32 n={n}"),
        )?;
    }
    for (m, n) in [(1, 1), (40, 23), (23, 40), (300, 300), (1000, 400)] {
        let name = |p: &str| format!("svd_hybrid {p} {m}x{n}");
        hybrid(check_svd_hybrid::<f64>(&dev, m, n), name("f64"))?;
        hybrid(check_svd_hybrid::<f32>(&dev, m, n), name("f32"))?;
    }
    let mut n = 4096;
    while n <= max_n {
        time_sb2st::<f64>(&lanes, &kernels, n, 32)?;
        time_sb2st::<f32>(&lanes, &kernels, n, 32)?;
        for job in [EvdJob::Values, EvdJob::Vectors] {
            time_evd::<f64>(&dev, n, job)?;
            time_evd::<f32>(&dev, n, job)?;
        }
        n *= 2;
    }
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

/// The hybrid EVD (stage 1 and Q1 through cuBLAS) against the same driver
/// on the host device: LAPACK-style ratios below 30, and the eigenvalues
/// within `8 n eps max|lambda|` of the host run's.
fn check_hybrid<T: RunScalar>(dev: &Arc<CublasDevice>, n: usize) -> Result<serde_json::Value> {
    let rt = Runtime::builder().build();
    let a: Mat<T> = gallery::random_symmetric_uniform(n, 17);
    let opts = EvdOptions::auto();
    let gpu = eigh_hybrid(a.as_ref(), EvdJob::Vectors, &opts, &rt, dev)?;
    let host = eigh_hybrid(
        a.as_ref(),
        EvdJob::Vectors,
        &opts,
        &rt,
        &Arc::new(HostBlas::new()),
    )?;
    let v = gpu.vectors.as_ref().expect("vectors");
    let (res, orth) = ratios(a.as_ref(), &gpu.values, v.as_ref());
    let norm = host.values.iter().fold(0.0f64, |m, x| m.max(x.f64().abs()));
    let diff = gpu
        .values
        .iter()
        .zip(&host.values)
        .fold(0.0f64, |m, (x, y)| m.max((x.f64() - y.f64()).abs()));
    let values = diff / (n as f64 * T::EPS.f64() * norm.max(f64::MIN_POSITIVE));
    let passed = res < 30.0 && orth < 30.0 && values <= 8.0;
    Ok(serde_json::json!({
        "check": "evd_hybrid", "precision": T::SUFFIX, "n": n,
        "residual": res, "orthogonality": orth, "values_vs_host": values, "passed": passed,
    }))
}

/// The hybrid SVD (ge2gb's updates and Q1 through cuBLAS) against the same
/// driver on the host device: residual and orthogonality ratios below 30,
/// singular values within `8 max(m, n) eps s_1` of the host run's.
fn check_svd_hybrid<T: RunScalar>(
    dev: &Arc<CublasDevice>,
    m: usize,
    n: usize,
) -> Result<serde_json::Value> {
    use eigenflow::pipeline::svd::hybrid::svd_hybrid;
    use eigenflow::pipeline::{SvdJob, SvdOptions};
    let rt = Runtime::builder().streams(1).build();
    let a: Mat<T> = gallery::random_uniform(m, n, 23);
    let opts = SvdOptions::auto();
    let gpu = svd_hybrid(a.as_ref(), SvdJob::Vectors, &opts, &rt, dev)?;
    let host = svd_hybrid(
        a.as_ref(),
        SvdJob::Vectors,
        &opts,
        &rt,
        &Arc::new(HostBlas::new()),
    )?;
    let (u, vt) = (gpu.u.as_ref().expect("U"), gpu.vt.as_ref().expect("V^T"));
    let k = m.min(n);
    let f = |x: T| x.f64();
    let a64 = Mat::<f64>::from_fn(m, n, |i, j| f(a[(i, j)]));
    let u64 = Mat::<f64>::from_fn(m, k, |i, j| f(u[(i, j)]) * f(gpu.values[j]));
    let vt64 = Mat::<f64>::from_fn(k, n, |i, j| f(vt[(i, j)]));
    let un = Mat::<f64>::from_fn(m, k, |i, j| f(u[(i, j)]));
    let eps = T::EPS.f64();
    let mm = m.max(n) as f64;
    let res = (&u64 * &vt64 - &a64).norm_l2() / (mm * a64.norm_l2().max(f64::MIN_POSITIVE) * eps);
    let ou = (un.transpose() * &un - Mat::<f64>::identity(k, k)).norm_l2() / (m as f64 * eps);
    let ov = (&vt64 * vt64.transpose() - Mat::<f64>::identity(k, k)).norm_l2() / (n as f64 * eps);
    let s1 = host
        .values
        .first()
        .map_or(0.0, |x| f(*x))
        .max(f64::MIN_POSITIVE);
    let diff = gpu
        .values
        .iter()
        .zip(&host.values)
        .fold(0.0f64, |d, (x, y)| d.max((f(*x) - f(*y)).abs()));
    let values = diff / (mm * eps * s1);
    let passed = res < 30.0 && ou < 30.0 && ov < 30.0 && values <= 8.0;
    Ok(serde_json::json!({
        "check": "svd_hybrid", "precision": T::SUFFIX, "m": m, "n": n,
        "residual": res, "orthogonality_u": ou, "orthogonality_v": ov,
        "values_vs_host": values, "passed": passed,
    }))
}

/// (||A V - V L||_F / (n ||A||_F eps), ||V^T V - I||_F / (n eps)) in f64, from
/// `a`'s lower triangle.
fn ratios<T: RunScalar>(
    a: faer::MatRef<'_, T>,
    values: &[T],
    v: faer::MatRef<'_, T>,
) -> (f64, f64) {
    let n = a.nrows();
    let full = Mat::<f64>::from_fn(n, n, |i, j| a[(i.max(j), i.min(j))].f64());
    let v64 = Mat::<f64>::from_fn(n, n, |i, j| v[(i, j)].f64());
    let lam = Mat::<f64>::from_fn(n, n, |i, j| if i == j { values[i].f64() } else { 0.0 });
    let eps = T::EPS.f64();
    let r = &full * &v64 - &v64 * &lam;
    let o = v64.transpose() * &v64 - Mat::<f64>::identity(n, n);
    let nf = n as f64;
    (
        r.norm_l2() / (nf * full.norm_l2().max(f64::MIN_POSITIVE) * eps),
        o.norm_l2() / (nf * eps),
    )
}

/// Seconds of the hybrid EVD and of cuSOLVER's `syevd` on the same random
/// matrix (the input's upload excluded for cuSOLVER, included for ours,
/// whose stage 1 starts with it).
fn time_evd<T: RunScalar>(dev: &Arc<CublasDevice>, n: usize, job: EvdJob) -> Result<()> {
    // A stream lane for the device tasks.
    let rt = Runtime::builder().streams(1).build();
    let a: Mat<T> = gallery::random_symmetric_uniform(n, n as u64);
    let start = Instant::now();
    let ours = eigh_hybrid(a.as_ref(), job, &EvdOptions::auto(), &rt, dev)?;
    let seconds = start.elapsed().as_secs_f64();
    // Busy seconds per stage (the device tasks' include the host's waits).
    let stages: serde_json::Map<String, serde_json::Value> = stage_seconds(&ours.report)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.into()))
        .collect();
    let cusolver = cusolver::syevd(dev, &a, job == EvdJob::Vectors);
    let (cs, status) = match &cusolver {
        Ok(s) => (Some(*s), "ok".to_string()),
        Err(e) => (None, e.to_string()),
    };
    println!(
        "{}",
        serde_json::json!({
            "measure": "evd", "precision": T::SUFFIX, "n": n,
            "job": if job == EvdJob::Vectors { "vectors" } else { "values" },
            "eigenflow_seconds": seconds, "stages": stages,
            "cusolver_syevd_seconds": cs, "cusolver_status": status,
            "speedup_vs_cusolver": cs.map(|c| c / seconds),
        })
    );
    Ok(())
}

/// cuSOLVER's `syevd`, called here only, as the peer of the timings.
mod cusolver {
    use super::RunScalar;
    use eigenflow::cuda::cudarc::cusolver::sys::{
        self, cublasFillMode_t, cusolverDnHandle_t, cusolverEigMode_t, cusolverStatus_t,
    };
    use eigenflow::cuda::cudarc::cusolver::DnHandle;
    use eigenflow::cuda::cudarc::driver::{DevicePtr, DevicePtrMut};
    use eigenflow::pipeline::device::cuda::CublasDevice;
    use eigenflow::{Error, Result};
    use faer::Mat;
    use std::time::Instant;

    /// The two entry points of `syevd` for one precision.
    pub trait Syevd: Sized {
        /// # Safety
        /// cuSOLVER's contract for `cusolverDn?syevd_bufferSize`.
        unsafe fn buffer_size(
            h: cusolverDnHandle_t,
            job: cusolverEigMode_t,
            n: i32,
            a: u64,
            w: u64,
            lwork: &mut i32,
        ) -> cusolverStatus_t;
        /// # Safety
        /// cuSOLVER's contract for `cusolverDn?syevd`.
        #[allow(clippy::too_many_arguments)]
        unsafe fn syevd(
            h: cusolverDnHandle_t,
            job: cusolverEigMode_t,
            n: i32,
            a: u64,
            w: u64,
            work: u64,
            lwork: i32,
            info: u64,
        ) -> cusolverStatus_t;
    }

    macro_rules! syevd {
        ($t:ty, $size:ident, $run:ident) => {
            impl Syevd for $t {
                unsafe fn buffer_size(
                    h: cusolverDnHandle_t,
                    job: cusolverEigMode_t,
                    n: i32,
                    a: u64,
                    w: u64,
                    lwork: &mut i32,
                ) -> cusolverStatus_t {
                    // SAFETY: the caller's contract.
                    unsafe {
                        sys::$size(
                            h,
                            job,
                            cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
                            n,
                            a as *const $t,
                            n.max(1),
                            w as *const $t,
                            lwork,
                        )
                    }
                }
                unsafe fn syevd(
                    h: cusolverDnHandle_t,
                    job: cusolverEigMode_t,
                    n: i32,
                    a: u64,
                    w: u64,
                    work: u64,
                    lwork: i32,
                    info: u64,
                ) -> cusolverStatus_t {
                    // SAFETY: the caller's contract.
                    unsafe {
                        sys::$run(
                            h,
                            job,
                            cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
                            n,
                            a as *mut $t,
                            n.max(1),
                            w as *mut $t,
                            work as *mut $t,
                            lwork,
                            info as *mut i32,
                        )
                    }
                }
            }
        };
    }
    syevd!(f64, cusolverDnDsyevd_bufferSize, cusolverDnDsyevd);
    syevd!(f32, cusolverDnSsyevd_bufferSize, cusolverDnSsyevd);

    fn status(what: &str, s: cusolverStatus_t) -> Result<()> {
        if s == cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
            Ok(())
        } else {
            Err(Error::external(format!("cuSOLVER {what}: {s:?}")))
        }
    }

    /// Seconds of `syevd` on the device (upload excluded), after checking
    /// that the library is there and that `info` is 0.
    pub fn syevd<T: RunScalar + Syevd>(
        dev: &CublasDevice,
        a: &Mat<T>,
        vectors: bool,
    ) -> Result<f64> {
        // SAFETY: only tries to dlopen the candidate names.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::external("libcusolver not found on the loader path"));
        }
        let drv = |e: eigenflow::cuda::cudarc::driver::DriverError| {
            Error::external(format!("CUDA driver: {e:?}"))
        };
        let n = a.nrows();
        let stream = dev.lanes().stream(0).clone();
        let handle = DnHandle::new(stream.clone())
            .map_err(|e| Error::external(format!("cuSOLVER create: {e:?}")))?;
        let host: Vec<T> = (0..n)
            .flat_map(|j| (0..n).map(move |i| (i, j)))
            .map(|(i, j)| a[(i, j)])
            .collect();
        let mut da = stream.clone_htod(&host).map_err(drv)?;
        let mut dw = stream.alloc_zeros::<T>(n.max(1)).map_err(drv)?;
        let mut info = stream.alloc_zeros::<i32>(1).map_err(drv)?;
        let job = if vectors {
            cusolverEigMode_t::CUSOLVER_EIG_MODE_VECTOR
        } else {
            cusolverEigMode_t::CUSOLVER_EIG_MODE_NOVECTOR
        };
        let n32 =
            i32::try_from(n).map_err(|_| Error::external("n beyond cuSOLVER's 32-bit syevd"))?;
        let mut lwork = 0i32;
        {
            let (pa, _g1) = da.device_ptr(&stream);
            let (pw, _g2) = dw.device_ptr(&stream);
            // SAFETY: a is n x n (lda n), w has n entries.
            status("syevd_bufferSize", unsafe {
                T::buffer_size(handle.cu(), job, n32, pa, pw, &mut lwork)
            })?;
        }
        let mut work = stream
            .alloc_zeros::<T>(lwork.max(1) as usize)
            .map_err(drv)?;
        stream.synchronize().map_err(drv)?;
        let start = Instant::now();
        {
            let (pa, _g1) = da.device_ptr_mut(&stream);
            let (pw, _g2) = dw.device_ptr_mut(&stream);
            let (pk, _g3) = work.device_ptr_mut(&stream);
            let (pi, _g4) = info.device_ptr_mut(&stream);
            // SAFETY: buffers of the sizes cuSOLVER asked for.
            status("syevd", unsafe {
                T::syevd(handle.cu(), job, n32, pa, pw, pk, lwork, pi)
            })?;
        }
        stream.synchronize().map_err(drv)?;
        let seconds = start.elapsed().as_secs_f64();
        let info = stream.clone_dtoh(&info).map_err(drv)?;
        if info[0] != 0 {
            return Err(Error::external(format!(
                "cuSOLVER syevd: info = {}",
                info[0]
            )));
        }
        Ok(seconds)
    }
}
