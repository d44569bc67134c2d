//! The symmetric EVD with its BLAS-3 stages on a device (issue 13): the
//! hybrid split of MAGMA's two-stage `dsyevdx_2stage`.
//!
//! One task graph ([`evd_graph_hybrid`]) holds both sides:
//!
//! * **Stage 1 (sy2sb)** on the device: a `device.upload` task puts the
//!   matrix on the device; then one task per panel downloads the panel's
//!   column block, factors it ([`crate::linalg::householder::panel_qr::panel_kernel`],
//!   latency bound, so on the host), writes its columns of the band, uploads
//!   `V_p` and `T_p`, and enqueues the two-sided update of the trailing
//!   matrix exactly as the CPU tasks compute it
//!   (Wang et al., PPoPP 2025, §2.3, Eq. (1)): `X = A22 V` (SYMM),
//!   `W = X T`, `M = T^T (V^T W)`, `W -= 1/2 V M` (GEMMs),
//!   `A22 -= V W^T + W V^T` (SYR2K).
//! * **Stage 2, the divide and conquer and Q2** on the CPU, built by the CPU
//!   pipeline's own builders. The band is fed column block by column block
//!   as the panel tasks finish, so the bulge chasing of the top of the band
//!   overlaps the device's reduction of the bottom.
//! * **Q1** on the device, one task after Q2: the band's eigenvectors
//!   `Q2 Z` are uploaded into the matrix's buffer and the panels' block
//!   reflectors applied in reverse order, three GEMMs each:
//!   `Z -= V (T (V^T Z))`.
//!
//! The device tasks run one after another, on the given lane (each declares
//! the device in its footprint, so the edges derived from the footprints
//! chain them: `pipeline::device::DeviceFlow`): a stream lane of the runtime when it has one (see [`eigh_hybrid`]),
//! so the trace shows them on their own track.
//!
//! The device is any [`BlasDevice`]: cuBLAS on a GPU
//! (`pipeline::device::cuda::CublasDevice`, feature `cuda`), or [`HostBlas`], the same
//! operations on the host, which is how the driver is tested without a GPU.
//! Results are not bitwise those of the CPU pipeline (the device's products
//! sum in their own order); the tests hold them to the same accuracy ratios.
//!
//! Device memory: the matrix (reused for the eigenvectors), the `V_p` and
//! `T_p` of every panel, and four `n x b` work blocks: about `1.5 n^2 + 4 n b`
//! words ([`device_words`]), checked against the device's free memory before
//! anything is allocated.

mod back_transform;
mod sb2st;
mod sy2sb;
#[cfg(test)]
mod tests;

use back_transform::q1_device_task;
use sb2st::sb2st_device_task;
use sy2sb::sy2sb_device_tasks;

use crate::pipeline::device::{
    apply_block_reflector, device_lane, fit_device, trace_timings, uploaded, zero_below_diagonal,
    DeviceFlow, Timed,
};
pub use crate::pipeline::device::{
    check_gemm, check_symm, check_syr2k, BlasDevice, DeviceRegion, GraphDevice, HostBlas, Op,
    OpTiming,
};

use super::{
    admit, basis, grain, prepare, sb2st as sb2st_on_cpu, side, solve_tridiagonal, Band,
    Eigenvectors, EvdGraph, EvdJob, Sb2stStage, SymmetricEigen, Tridiagonal, Q1, SB2ST, SY2SB,
};
use crate::graph::{
    Footprint, Lane, Region as Footprinted, SubGraph, Task, TaskContext, TaskGraph,
};
use crate::linalg::band::sy2sb::panel_count;
use crate::linalg::householder::panel_qr::panel_kernel;
use crate::matrix::access::Access;
use crate::matrix::{BandMut, SharedBand, SymBand};
use crate::pipeline::EvdOptions;
use crate::runtime::{RunOptions, Runtime};
use crate::{Error, Result, Scalar};
use faer::{Mat, MatMut, MatRef};
use parking_lot::Mutex;
use std::sync::Arc;

/// Stage name of the upload of the matrix.
pub const TRANSFER: &str = "transfer";

/// Where panel `p`'s factors live on the device.
struct PanelFactors {
    /// `V_p` in explicit form (unit diagonal, zeros above), `m_p x b`.
    v: DeviceRegion,
    /// `T_p`, `b x b`, upper triangular (zeros below).
    t: DeviceRegion,
}

/// The device buffers of a run, made by the upload task.
struct DeviceState<B> {
    /// Order of the matrix.
    n: usize,
    /// The matrix (lower triangle), then the eigenvectors.
    a: B,
    /// `X`, then `W`; then `V^T Z` and `T V^T Z` of Q1.
    x: B,
    w: B,
    /// `V^T W` and `T^T V^T W` (`b x b`).
    p: B,
    m: B,
    /// Every panel's `V_p` and `T_p`, for Q1.
    v: B,
    t: B,
    panels: Vec<PanelFactors>,
}

/// The state the device tasks share: empty until the upload task ran (the
/// edges order every other device task after it).
type Shared<B> = Arc<Mutex<Option<DeviceState<B>>>>;

/// Words of device memory a hybrid run allocates for order `n`, bandwidth
/// `b`: the matrix, every panel's `V_p` (`m_p x b`) and `T_p`, two `n x b`
/// and two `b x b` work blocks.
pub fn device_words(n: usize, b: usize) -> u128 {
    let (n, b) = (n as u128, b as u128);
    let panels = panel_count(n as usize, b as usize) as u128;
    // sum over p of m_p = n - (p + 1) b.
    let v = (0..panels).map(|p| n - (p + 1) * b).sum::<u128>() * b;
    n * n + v + panels * b * b + 2 * n * b + 2 * b * b
}

/// [`Error::OutOfMemory`] unless [`device_words`] fit the device's free
/// memory.
fn check_device_memory<T: Scalar, D: BlasDevice<T>>(dev: &D, n: usize, b: usize) -> Result<()> {
    let bytes = |n| device_words(n, b) * std::mem::size_of::<T>() as u128;
    fit_device(dev, bytes(n), |free| {
        let lo = crate::sysinfo::largest_fitting_order(n, |k| bytes(k) <= free);
        format!("on this device n <= {lo} fits (bandwidth {b})")
    })
}

/// The hybrid EVD's graph (module docs) for the symmetric `a` (the triangle
/// [`EvdOptions::side`] is read; `a` is not modified), its device tasks on
/// `lane`. Run it on a runtime that has `lane`; the results land in the
/// returned [`EvdGraph`]'s handle, as for [`super::evd_graph`].
///
/// Errors (before anything runs): [`Error::Shape`] for a non-square input,
/// [`Error::NonFinite`] naming the first non-finite entry,
/// [`Error::OutOfMemory`] when host memory or the device's free memory is
/// short, and [`Error::InvalidArgument`] for a selection (not on this path
/// yet). The device's own errors stop the run.
pub fn evd_graph_hybrid<T, D>(
    a: MatRef<'_, T>,
    job: EvdJob,
    opts: &EvdOptions,
    dev: &Arc<D>,
    lane: Lane,
) -> Result<EvdGraph<T>>
where
    T: Scalar,
    D: GraphDevice<T>,
{
    build(a, job, opts, dev, (lane, None))
}

/// [`evd_graph_hybrid`], its host memory checked for `threads` workers (the
/// machine's cores when not known).
fn build<T: Scalar, D: GraphDevice<T>>(
    a: MatRef<'_, T>,
    job: EvdJob,
    opts: &EvdOptions,
    dev: &Arc<D>,
    (lane, threads): (Lane, Option<usize>),
) -> Result<EvdGraph<T>> {
    if opts.selection.is_some() {
        return Err(Error::InvalidArgument(
            "a selection of eigenpairs is not on the device path yet".into(),
        ));
    }
    admit::<T>(a.nrows(), a.ncols(), job, opts, threads, false)?;
    side::check_finite_side(a, opts.side)?;
    let n = a.nrows();
    let b = opts.bandwidth_for(n, job).max(1);
    check_device_memory::<T, D>(dev, n, b)?;
    let mut a = side::lower_copy(a, opts.side);
    let scaling = prepare(&mut a, false)?;

    let mut g = TaskGraph::new();
    let mut flow = DeviceFlow::new();
    let state: Shared<D::Buffer> = Arc::new(Mutex::new(None));
    {
        let (dev, state) = (Arc::clone(dev), Arc::clone(&state));
        let bytes = (n * n * std::mem::size_of::<T>()) as f64;
        let task = Task::new("device.upload", move |ctx| {
            let s = upload_matrix(&*dev, a, b);
            trace_timings(&*dev, ctx);
            *state.lock() = Some(s?);
            Ok(())
        })
        .stage(TRANSFER)
        .lane(lane)
        .cost(0.0, bytes);
        flow.add_device(&mut g, task, Footprint::new());
    }
    let keep = job == EvdJob::Vectors;
    let band = sy2sb_device_tasks(&mut g, &mut flow, dev, &state, (n, b), keep, lane);
    // Values only on a device that chases bands: stage 2 on the device too.
    let s2 = if job == EvdJob::Values && dev.chases_bands() {
        sb2st_device_task(&mut g, &mut flow, dev, band, lane)
    } else {
        sb2st_on_cpu(&mut g, band, grain(opts), job == EvdJob::Vectors)?
    };
    let q1 = |g: &mut TaskGraph<'static>, z: Eigenvectors<T, basis::Band>, _col: usize| {
        Ok(q1_device_task(g, &mut flow, dev, &state, z, lane))
    };
    solve_tridiagonal(g, s2, q1, scaling, job, opts)
}

/// The symmetric eigendecomposition of `a` by [`evd_graph_hybrid`] on
/// `dev`, run on `rt` (the device tasks on `rt`'s first stream lane when it
/// has one, else on its workers). Same results contract as
/// [`super::eigh`]; not bitwise its results. The report's stages include
/// the device tasks (`transfer`, and the `sy2sb` and `q1` tasks, which time
/// the host's wait for the device).
///
/// Errors: those of [`evd_graph_hybrid`] and of the run.
pub fn eigh_hybrid<T, D>(
    a: MatRef<'_, T>,
    job: EvdJob,
    opts: &EvdOptions,
    rt: &Runtime,
    dev: &Arc<D>,
) -> Result<SymmetricEigen<T>>
where
    T: Scalar,
    D: GraphDevice<T>,
{
    eigh_hybrid_with(a, job, opts, rt, dev, &RunOptions::new())
}

/// [`eigh_hybrid`] run under `run` (a trace, for instance).
pub fn eigh_hybrid_with<T, D>(
    a: MatRef<'_, T>,
    job: EvdJob,
    opts: &EvdOptions,
    rt: &Runtime,
    dev: &Arc<D>,
    run: &RunOptions,
) -> Result<SymmetricEigen<T>>
where
    T: Scalar,
    D: GraphDevice<T>,
{
    build(a, job, opts, dev, (device_lane(rt), Some(rt.threads())))?.run_on(rt, run)
}

/// The upload task's work: the buffers, the layout of the panels' factors,
/// and the matrix on the device.
fn upload_matrix<T: Scalar, D: BlasDevice<T>>(
    dev: &D,
    a: Mat<T>,
    b: usize,
) -> Result<DeviceState<D::Buffer>> {
    let ops = Timed(dev);
    let n = a.nrows();
    let mut panels = Vec::new();
    let (mut v_len, mut t_len) = (0, 0);
    for p in 0..panel_count(n, b) {
        let m = n - (p + 1) * b;
        let v = DeviceRegion {
            offset: v_len,
            rows: m,
            cols: b,
            ld: m.max(1),
        };
        let t = DeviceRegion {
            offset: t_len,
            rows: b,
            cols: b,
            ld: b,
        };
        panels.push(PanelFactors { v, t });
        v_len += m * b;
        t_len += b * b;
    }
    let mut s = DeviceState {
        n,
        a: dev.alloc(n * n)?,
        x: dev.alloc(n * b)?,
        w: dev.alloc(n * b)?,
        p: dev.alloc(b * b)?,
        m: dev.alloc(b * b)?,
        v: dev.alloc(v_len)?,
        t: dev.alloc(t_len)?,
        panels,
    };
    ops.upload(a.as_ref(), &mut s.a, DeviceRegion::whole(n, n))?;
    Ok(s)
}
