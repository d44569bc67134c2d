//! GPU kernels against their CPU task bodies on small inputs (issue 13: "each
//! kernel against its CPU task body"), for `tests/gpu_kernels.rs` and the
//! `gpu_check` example. Never run without a GPU.
//!
//! Bounds, per kernel (the kernels are compiled with `--fmad=false` and
//! repeat the CPU's operations in its order, except the norm inside
//! `larfg`; `kernels/README.md`):
//! * sb2st and gb2bd: every band entry and every reflector value within
//!   `8 n` ulps of the input's largest entry. A task's arithmetic agrees to
//!   a few ulps; the allowance grows with `n` because each of the `n - 2`
//!   sweeps passes its rounding differences on to the next.
//! * batched Jacobi: singular values within `16 n` ulps of the largest
//!   ([`check_jacobi`]).

use super::launch::{gb2bd_offsets, gb2bd_pass_on_stream, sb2st_offsets, sb2st_on_stream};
use super::launch::{GpuScalar, Kernels};
use crate::cuda::GpuLanes;
use crate::gallery;
use crate::linalg::band::gb2bd::{self, Gb2bdReflectors, Pass, UpperBand};
use crate::linalg::band::sb2st::{self, Reflectors, Sb2stReflectors};
use crate::matrix::band::SymBand;
use crate::{Error, Result};

/// One kernel-against-CPU comparison.
#[derive(Clone, Debug)]
pub struct KernelCheck {
    /// What was compared, e.g. `sb2st f64 n=64 b=8`.
    pub name: String,
    /// Largest absolute difference between GPU and CPU values.
    pub max_diff: f64,
    /// The difference in ulps of the input's largest entry.
    pub ulps: f64,
    /// The bound, in the same ulps.
    pub bound_ulps: f64,
    /// Kernel launches made.
    pub launches: usize,
}

impl KernelCheck {
    /// Whether the difference is within the bound.
    pub fn passed(&self) -> bool {
        self.ulps <= self.bound_ulps
    }

    /// One JSON line (for `gpu_check`).
    pub fn json(&self) -> String {
        serde_json::json!({
            "check": self.name,
            "max_diff": self.max_diff,
            "ulps": self.ulps,
            "bound_ulps": self.bound_ulps,
            "launches": self.launches,
            "passed": self.passed(),
        })
        .to_string()
    }
}

fn driver(what: &str) -> impl Fn(cudarc::driver::DriverError) -> Error + '_ {
    move |e| crate::cuda::driver_error(what, e)
}

/// Largest `|a_i - b_i|`; infinite for different lengths or a NaN.
fn max_diff<T: GpuScalar>(a: &[T], b: &[T]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    a.iter().zip(b).fold(0.0, |m: f64, (&x, &y)| {
        let d = (x.f64() - y.f64()).abs();
        if d.is_nan() {
            f64::INFINITY
        } else {
            m.max(d)
        }
    })
}

fn max_abs<T: GpuScalar>(a: &[T]) -> f64 {
    a.iter().fold(0.0, |m: f64, &x| m.max(x.f64().abs()))
}

/// sb2st on GPU lane 0 against [`sb2st::sb2st_reference`] for a random
/// symmetric band of order `n`, half-bandwidth `b`: band and reflectors.
pub fn check_sb2st<T: GpuScalar>(
    lanes: &GpuLanes,
    kernels: &Kernels,
    n: usize,
    b: usize,
    seed: u64,
) -> Result<KernelCheck> {
    let input = SymBand::from_dense_lower(gallery::band_random::<T>(n, b, seed).as_ref(), b);
    let mut cpu = input.clone();
    let mut refl = Sb2stReflectors::<T>::new(n, b);
    sb2st::sb2st_reference(&mut cpu, b, Some(&mut refl));

    let stream = lanes.stream(0);
    let layout = refl.layout().clone();
    let mut ab = stream
        .clone_htod(input.as_slice())
        .map_err(driver("cuMemcpyHtoD"))?;
    let mut values = stream
        .alloc_zeros::<T>(layout.len().max(1))
        .map_err(driver("cuMemAlloc"))?;
    let offsets = stream
        .clone_htod(&sb2st_offsets(&layout))
        .map_err(driver("cuMemcpyHtoD"))?;
    let launches = sb2st_on_stream(
        kernels,
        stream,
        &mut ab,
        input.ldab(),
        n,
        b,
        Some((&mut values, &offsets)),
    )?;
    let band: Vec<T> = stream.clone_dtoh(&ab).map_err(driver("cuMemcpyDtoH"))?;
    let got: Vec<T> = stream.clone_dtoh(&values).map_err(driver("cuMemcpyDtoH"))?;
    stream
        .synchronize()
        .map_err(driver("cuStreamSynchronize"))?;

    let mut diff = max_diff(&band, cpu.as_slice());
    for s in 0..sb2st::num_sweeps(n) {
        for m in 0..sb2st::steps(n, b, s) {
            diff = diff.max(max_diff(&got[layout.slot(s, m)], refl.slot(s, m)));
        }
    }
    let scale = max_abs(input.as_slice()).max(f64::MIN_POSITIVE);
    Ok(KernelCheck {
        name: format!("sb2st {} n={n} b={b}", T::SUFFIX),
        max_diff: diff,
        ulps: diff / (T::EPS.f64() * scale),
        bound_ulps: 8.0 * n as f64,
        launches,
    })
}

/// gb2bd (every pass of the default schedule) on GPU lane 0 against
/// [`gb2bd::run_pass`] for a random upper band of order `n`, bandwidth `b`.
pub fn check_gb2bd<T: GpuScalar>(
    lanes: &GpuLanes,
    kernels: &Kernels,
    n: usize,
    b: usize,
    seed: u64,
) -> Result<KernelCheck> {
    let passes: Vec<Pass> = gb2bd::schedule(b, gb2bd::tile_width::<T>());
    let (ku, kl) = gb2bd::storage_offsets(b, &passes);
    let dense = gallery::random_uniform::<T>(n, n, seed);
    let input = UpperBand::from_dense(dense.as_ref(), b, ku, kl);
    let mut cpu = input.clone();
    let mut store = Gb2bdReflectors::<T>::new(n, &passes);
    {
        let mut view = cpu.view();
        for (p, &pass) in passes.iter().enumerate() {
            let mut slots = store.pass_mut(p).slots();
            gb2bd::run_pass(&mut view, pass, Some(&mut slots));
        }
    }

    let stream = lanes.stream(0);
    let mut ab = stream
        .clone_htod(input.as_slice())
        .map_err(driver("cuMemcpyHtoD"))?;
    let mut diff: f64 = 0.0;
    let mut launches = 0;
    let mut per_pass = Vec::new();
    for &pass in &passes {
        let off = gb2bd_offsets(n, pass);
        let tasks = (0..gb2bd::num_sweeps(n, pass))
            .map(|r| gb2bd::steps(n, pass, r))
            .sum::<usize>();
        let len = (tasks * (pass.d() + 1)).max(1);
        let mut right = stream.alloc_zeros::<T>(len).map_err(driver("cuMemAlloc"))?;
        let mut left = stream.alloc_zeros::<T>(len).map_err(driver("cuMemAlloc"))?;
        let off_dev = stream.clone_htod(&off).map_err(driver("cuMemcpyHtoD"))?;
        launches += gb2bd_pass_on_stream(
            kernels,
            stream,
            &mut ab,
            ku,
            input.ld(),
            n,
            pass,
            Some((&mut right, &mut left, &off_dev)),
        )?;
        per_pass.push((pass, off, right, left));
    }
    let band: Vec<T> = stream.clone_dtoh(&ab).map_err(driver("cuMemcpyDtoH"))?;
    diff = diff.max(max_diff(&band, cpu.as_slice()));
    for (p, (pass, off, right, left)) in per_pass.iter().enumerate() {
        let right: Vec<T> = stream.clone_dtoh(right).map_err(driver("cuMemcpyDtoH"))?;
        let left: Vec<T> = stream.clone_dtoh(left).map_err(driver("cuMemcpyDtoH"))?;
        let want = store.pass(p);
        for (r, &o) in off.iter().enumerate() {
            for s in 0..gb2bd::steps(n, *pass, r) {
                let len = gb2bd::task_geom(n, *pass, r, s).len;
                let at = (o as usize + s) * (pass.d() + 1);
                diff = diff.max(max_diff(&right[at..at + len], want.right(r, s)));
                diff = diff.max(max_diff(&left[at..at + len], want.left(r, s)));
            }
        }
    }
    stream
        .synchronize()
        .map_err(driver("cuStreamSynchronize"))?;
    let scale = max_abs(input.as_slice()).max(f64::MIN_POSITIVE);
    Ok(KernelCheck {
        name: format!("gb2bd {} n={n} b={b} passes={}", T::SUFFIX, passes.len()),
        max_diff: diff,
        ulps: diff / (T::EPS.f64() * scale),
        bound_ulps: 8.0 * n as f64 * passes.len().max(1) as f64,
        launches,
    })
}

/// The batched Jacobi kernel (values only) against [`crate::linalg::small::jacobi::gesvj`]
/// on `batch` random `m x n` matrices (`m >= n`): singular values within
/// `16 n` ulps of the largest. The kernel forms Gram matrices and products
/// with plain loops where the CPU uses faer's matmul, so it is not bitwise.
pub fn check_jacobi<T: GpuScalar>(
    lanes: &GpuLanes,
    kernels: &Kernels,
    batch: usize,
    m: usize,
    n: usize,
    seed: u64,
) -> Result<KernelCheck> {
    use super::jacobi::{all_converged, jacobi_on_stream, JacobiBatch};
    use crate::linalg::small::jacobi::{gesvj, JacobiParams};
    let params = JacobiParams::default();
    let mats: Vec<_> = (0..batch)
        .map(|k| gallery::random_uniform::<T>(m, n, seed + k as u64))
        .collect();
    let refs: Vec<_> = mats.iter().map(|a| a.as_ref()).collect();
    let prepared = JacobiBatch::new(&refs, &params)?;
    let stream = lanes.stream(0);
    let mut w = stream
        .clone_htod(&prepared.w)
        .map_err(driver("cuMemcpyHtoD"))?;
    let (status, launches) = jacobi_on_stream(kernels, stream, &mut w, &prepared, &params)?;
    let got: Vec<T> = stream.clone_dtoh(&w).map_err(driver("cuMemcpyDtoH"))?;
    stream
        .synchronize()
        .map_err(driver("cuStreamSynchronize"))?;
    let per = prepared.m * prepared.l * prepared.nb;
    let mut diff: f64 = if all_converged(&status) {
        0.0
    } else {
        f64::INFINITY // a matrix did not converge: fail
    };
    let mut scale = f64::MIN_POSITIVE;
    for (k, a) in mats.iter().enumerate() {
        let want = gesvj(a.as_ref(), false, &params)?.values;
        let have = prepared.values(k, &got[k * per..(k + 1) * per]);
        diff = diff.max(max_diff(&have, &want));
        scale = scale.max(want.first().map_or(0.0, |s| s.f64()));
    }
    Ok(KernelCheck {
        name: format!("jacobi {} batch={batch} m={m} n={n}", T::SUFFIX),
        max_diff: diff,
        ulps: diff / (T::EPS.f64() * scale),
        bound_ulps: 16.0 * n as f64,
        launches,
    })
}
