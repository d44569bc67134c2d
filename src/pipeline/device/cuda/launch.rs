//! Host side of the kernels of `kernels/*.cu`: loading the modules for the
//! device and launching the sb2st and gb2bd sweeps in the skewed schedule
//! (one launch per skewed time step, the lag-3 rule as launch boundaries;
//! `kernels/README.md`). Compiled only: never run without a GPU.

use crate::cuda::{compile, driver_error, GpuContext};
use crate::linalg::band::gb2bd::{self, Pass};
use crate::linalg::band::sb2st::{self, ReflectorLayout};
use crate::{Result, Scalar};
use cudarc::driver::{
    CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
    ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;
use std::sync::Arc;

/// Lag between sweeps in the skewed schedule (`crate::linalg::band::chase`).
const LAG: usize = crate::linalg::band::chase::SWEEP_LAG;

/// The scalar types the kernels exist for, with their entry-point suffix.
pub trait GpuScalar: Scalar + DeviceRepr + ValidAsZeroBits {
    /// `f64` or `f32`, the suffix of the `extern "C"` kernels.
    const SUFFIX: &'static str;
}

impl GpuScalar for f64 {
    const SUFFIX: &'static str = "f64";
}

impl GpuScalar for f32 {
    const SUFFIX: &'static str = "f32";
}

/// The kernel modules, compiled by NVRTC for the device's architecture and
/// loaded into its context.
#[derive(Debug)]
pub struct Kernels {
    sb2st: Arc<CudaModule>,
    gb2bd: Arc<CudaModule>,
    jacobi: Arc<CudaModule>,
}

impl Kernels {
    /// Compiles and loads every kernel file for `ctx`'s device.
    pub fn load(ctx: &GpuContext) -> Result<Self> {
        let arch = ctx.arch();
        let load = |stem: &str| -> Result<Arc<CudaModule>> {
            let c = compile(stem, &arch)?;
            ctx.cuda()
                .load_module(Ptx::from_src(c.ptx))
                .map_err(|e| driver_error("cuModuleLoadData", e))
        };
        Ok(Kernels {
            sb2st: load("sb2st")?,
            gb2bd: load("gb2bd")?,
            jacobi: load("jacobi")?,
        })
    }

    fn function(module: &Arc<CudaModule>, name: &str) -> Result<CudaFunction> {
        module
            .load_function(name)
            .map_err(|e| driver_error("cuModuleGetFunction", e))
    }

    /// The batched Jacobi module (`ef_jacobi_batched_{f64,f32}`).
    pub fn jacobi(&self) -> &Arc<CudaModule> {
        &self.jacobi
    }
}

/// Launch geometry: `threads` per block, at least one warp.
fn config(blocks: usize, threads: usize, shared_bytes: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (threads.clamp(32, 1024) as u32, 1, 1),
        shared_mem_bytes: shared_bytes as u32,
    }
}

/// The sweeps launch `t` covers: the first that can have a task at skewed
/// time `t` (`m = t - 3 s < M_s <= max_steps`, `max_steps` = the steps of
/// sweep 0, the most) and the last (`m >= 0`), or `None`. A block whose
/// sweep has no task at `t` returns at once.
pub fn launch_window(t: usize, max_steps: usize, sweeps: usize) -> Option<(usize, usize)> {
    let lo = if t >= max_steps {
        (t - max_steps) / LAG + 1
    } else {
        0
    };
    let hi = (t / LAG).min(sweeps.checked_sub(1)?);
    (lo <= hi).then_some((lo, hi))
}

/// Sweep offsets of an sb2st reflector layout, for the kernel's `refl_off`.
pub fn sb2st_offsets(layout: &ReflectorLayout) -> Vec<i64> {
    (0..sb2st::num_sweeps(layout.n()))
        .map(|s| layout.sweep_slots(s, 0..0).start as i64)
        .collect()
}

/// Bulge chasing of the order-`n` band in `ab` (lower storage, `ldab >= 2b`,
/// the layout of [`crate::matrix::band::SymBand`]) on `stream`, all sweeps,
/// one launch per skewed time step. With `refl = Some((values, offsets))`
/// (laid out by [`ReflectorLayout`], offsets from [`sb2st_offsets`]) the
/// reflectors are stored as the CPU stores them. Returns the number of
/// launches. Enqueued only: synchronise before reading the result.
#[allow(clippy::too_many_arguments)]
pub fn sb2st_on_stream<T: GpuScalar>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    ab: &mut CudaSlice<T>,
    ldab: usize,
    n: usize,
    b: usize,
    refl: Option<(&mut CudaSlice<T>, &CudaSlice<i64>)>,
) -> Result<usize> {
    assert!(b >= 1 && ldab >= 2 * b, "sb2st on the GPU needs ldab >= 2b");
    let f = Kernels::function(&kernels.sb2st, &format!("ef_sb2st_sweep_{}", T::SUFFIX))?;
    let sweeps = sb2st::num_sweeps(n);
    let max_steps = sb2st::steps(n, b, 0);
    let last_t = (0..sweeps)
        .map(|s| sb2st::steps(n, b, s) - 1 + LAG * s)
        .max();
    let Some(last_t) = last_t else { return Ok(0) };
    let (ldab, n_i, b_i) = (ldab as i64, n as i32, b as i32);
    let null = 0u64;
    let mut refl = refl;
    let mut launches = 0;
    for t in 0..=last_t {
        let Some((lo, hi)) = launch_window(t, max_steps, sweeps) else {
            continue;
        };
        let (t_i, lo_i) = (t as i32, lo as i32);
        let mut l = stream.launch_builder(&f);
        l.arg(&mut *ab)
            .arg(&ldab)
            .arg(&n_i)
            .arg(&b_i)
            .arg(&t_i)
            .arg(&lo_i);
        match refl.as_mut() {
            Some((values, offsets)) => l.arg(&mut **values).arg(*offsets),
            None => l.arg(&null).arg(&null),
        };
        let cfg = config(hi - lo + 1, b, 2 * b * std::mem::size_of::<T>());
        // SAFETY: the argument list matches ef_sb2st_sweep_<T> in
        // kernels/sb2st.cu; the band holds n columns of ldab values, the
        // reflector store the layout's length (the caller's contract).
        unsafe { l.launch(cfg) }.map_err(|e| driver_error("cuLaunchKernel", e))?;
        launches += 1;
    }
    Ok(launches)
}

/// Task offsets of one gb2bd pass (`off[r]` = tasks of the sweeps before
/// `r`), for the kernel's `off`: the layout of `gb2bd::reflectors`.
pub fn gb2bd_offsets(n: usize, pass: Pass) -> Vec<i64> {
    let mut acc = 0i64;
    (0..gb2bd::num_sweeps(n, pass))
        .map(|r| {
            let o = acc;
            acc += gb2bd::steps(n, pass, r) as i64;
            o
        })
        .collect()
}

/// One gb2bd pass on the upper band `ab` (`ku`, `ld = ku + kl + 1`, the
/// layout of [`crate::linalg::band::gb2bd::UpperBand`], `ku >= b + d`, `kl >= d`)
/// on `stream`, one launch per skewed time step. With `refl = Some((right,
/// left, offsets))` the reflectors are stored as the CPU's
/// `PassReflectors` holds them. Returns the number of launches.
#[allow(clippy::too_many_arguments)]
pub fn gb2bd_pass_on_stream<T: GpuScalar>(
    kernels: &Kernels,
    stream: &Arc<CudaStream>,
    ab: &mut CudaSlice<T>,
    ku: usize,
    ld: usize,
    n: usize,
    pass: Pass,
    refl: Option<(&mut CudaSlice<T>, &mut CudaSlice<T>, &CudaSlice<i64>)>,
) -> Result<usize> {
    let f = Kernels::function(&kernels.gb2bd, &format!("ef_gb2bd_sweep_{}", T::SUFFIX))?;
    let sweeps = gb2bd::num_sweeps(n, pass);
    let max_steps = gb2bd::steps(n, pass, 0);
    let last_t = (0..sweeps)
        .map(|r| gb2bd::steps(n, pass, r) - 1 + LAG * r)
        .max();
    let Some(last_t) = last_t else { return Ok(0) };
    let (ku_i, ld_i, n_i) = (ku as i32, ld as i64, n as i32);
    let (b_i, bn_i) = (pass.b as i32, pass.b_new as i32);
    let null = 0u64;
    let mut refl = refl;
    let mut launches = 0;
    for t in 0..=last_t {
        let Some((lo, hi)) = launch_window(t, max_steps, sweeps) else {
            continue;
        };
        let (t_i, lo_i) = (t as i32, lo as i32);
        let mut l = stream.launch_builder(&f);
        l.arg(&mut *ab)
            .arg(&ku_i)
            .arg(&ld_i)
            .arg(&n_i)
            .arg(&b_i)
            .arg(&bn_i)
            .arg(&t_i)
            .arg(&lo_i);
        match refl.as_mut() {
            Some((right, left, off)) => l.arg(&mut **right).arg(&mut **left).arg(*off),
            None => l.arg(&null).arg(&null).arg(&null),
        };
        let threads = pass.b + pass.d() + 1;
        let cfg = config(
            hi - lo + 1,
            threads,
            (pass.d() + 1) * std::mem::size_of::<T>(),
        );
        // SAFETY: the argument list matches ef_gb2bd_sweep_<T> in
        // kernels/gb2bd.cu; the band holds n columns of ld values.
        unsafe { l.launch(cfg) }.map_err(|e| driver_error("cuLaunchKernel", e))?;
        launches += 1;
    }
    Ok(launches)
}
