//! The symmetric EVD with its BLAS-3 stages on a device (DESIGN §5; issue
//! 13): the hybrid split of MAGMA's two-stage `dsyevdx_2stage`.
//!
//! One task graph ([`evd_graph_hybrid`]) holds both sides:
//!
//! * **Stage 1 (sy2sb)** on the device: a `device.upload` task puts the
//!   matrix on the device; then one task per panel downloads the panel's
//!   column block, factors it ([`crate::linalg::sy2sb::panel_kernel`],
//!   latency bound, so on the host), writes its columns of the band, uploads
//!   `V_p` and `T_p`, and enqueues the two-sided update of the trailing
//!   matrix exactly as the CPU tasks compute it
//!   (`research/seed-tridiag.md` §2 Eq. (1)): `X = A22 V` (SYMM),
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
//! The device tasks run one after another (edges chain them), on the given
//! lane: a stream lane of the runtime when it has one (see [`eigh_hybrid`]),
//! so the trace shows them on their own track.
//!
//! The device is any [`BlasDevice`]: cuBLAS on a GPU
//! (`crate::cuda::CublasDevice`, feature `cuda`), or [`HostBlas`], the same
//! operations on the host, which is how the driver is tested without a GPU.
//! Results are not bitwise those of the CPU pipeline (the device's products
//! sum in their own order); the tests hold them to the same accuracy ratios.
//!
//! Device memory: the matrix (reused for the eigenvectors), the `V_p` and
//! `T_p` of every panel, and four `n x b` work blocks: about `1.5 n^2 + 4 n b`
//! words ([`device_words`]), checked against the device's free memory before
//! anything is allocated.

use crate::pipeline::device::Timed;
pub use crate::pipeline::device::{
    check_gemm, check_symm, check_syr2k, BlasDevice, HostBlas, Op, OpTiming, Region,
};

use super::{
    admit, grain, prepare, sb2st, side, solve_tridiagonal, Band, Eigenvectors, EvdGraph, EvdJob,
    Sb2stStage, SymmetricEigen, Tridiagonal, Q1, SB2ST, SY2SB,
};
use crate::graph::{
    Footprint, Lane, Region as Footprinted, SubGraph, Task, TaskContext, TaskGraph, TaskId,
};
use crate::linalg::sy2sb::{panel_count, panel_kernel};
use crate::matrix::access::Access;
use crate::matrix::{BandMut, SharedBand, SymBand};
use crate::pipeline::columns::ColumnBlocks;
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
    v: Region,
    /// `T_p`, `b x b`, upper triangular (zeros below).
    t: Region,
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
    let free = dev.free_bytes()? as u128;
    if bytes(n) <= free {
        return Ok(());
    }
    // Largest order whose figure fits (the figure grows with n).
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if bytes(mid) <= free {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let gib = |x: u128| x as f64 / (1u64 << 30) as f64;
    Err(Error::OutOfMemory {
        needed_gib: gib(bytes(n)),
        available_gib: gib(free),
        suggestion: format!("on this device n <= {lo} fits (bandwidth {b})"),
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
    D: BlasDevice<T> + Send + Sync + 'static,
    D::Buffer: Send + 'static,
{
    if opts.selection.is_some() {
        return Err(Error::InvalidArgument(
            "a selection of eigenpairs is not on the device path yet".into(),
        ));
    }
    admit::<T>(a.nrows(), a.ncols(), job, opts, None, false)?;
    side::check_finite_side(a, opts.side)?;
    let n = a.nrows();
    let b = opts.bandwidth_for(n, job).max(1);
    check_device_memory::<T, D>(dev, n, b)?;
    let mut a = side::lower_copy(a, opts.side);
    let scaling = prepare(&mut a)?;

    let mut g = TaskGraph::new();
    let state: Shared<D::Buffer> = Arc::new(Mutex::new(None));
    let upload = {
        let (dev, state) = (Arc::clone(dev), Arc::clone(&state));
        let bytes = (n * n * std::mem::size_of::<T>()) as f64;
        g.add(
            Task::new("device.upload", move |ctx| {
                let s = upload_matrix(&*dev, a, b);
                trace_device_work(&*dev, ctx);
                *state.lock() = Some(s?);
                Ok(())
            })
            .stage(TRANSFER)
            .lane(lane)
            .cost(0.0, bytes),
        )
    };
    let keep = job == EvdJob::Vectors;
    let (band, last) = sy2sb_device_tasks(&mut g, dev, &state, upload, (n, b), keep, lane);
    // Values only on a device that chases bands: stage 2 on the device too.
    let s2 = if job == EvdJob::Values && dev.chases_bands() {
        sb2st_device_task(&mut g, dev, band, last, lane)
    } else {
        sb2st(&mut g, band, grain(opts), job == EvdJob::Vectors)?
    };
    let q1 = |g: &mut TaskGraph<'static>, z: Eigenvectors<T>, _col: usize| {
        Ok(q1_device_task(g, dev, &state, last, z, lane))
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
    D: BlasDevice<T> + Send + Sync + 'static,
    D::Buffer: Send + 'static,
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
    D: BlasDevice<T> + Send + Sync + 'static,
    D::Buffer: Send + 'static,
{
    admit::<T>(a.nrows(), a.ncols(), job, opts, Some(rt.threads()), false)?;
    let lane = if rt.streams() > 0 {
        Lane::Stream(0)
    } else {
        Lane::Cpu
    };
    let (graph, slot) = evd_graph_hybrid(a, job, opts, dev, lane)?.into_parts();
    let report = rt.run_with(graph, run)?;
    let (values, vectors) = slot.into_results()?;
    Ok(SymmetricEigen {
        values,
        vectors,
        report,
    })
}

/// The device's finished operations into the run's trace, on device track
/// 0 (one device, one stream).
fn trace_device_work<T: Scalar, D: BlasDevice<T>>(dev: &D, ctx: &TaskContext) {
    for op in dev.take_timings() {
        ctx.device_slice(0, op.name, op.start, op.end);
    }
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
        let v = Region {
            offset: v_len,
            rows: m,
            cols: b,
            ld: m.max(1),
        };
        let t = Region {
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
    ops.upload(a.as_ref(), &mut s.a, Region::whole(n, n))?;
    Ok(s)
}

/// The uploaded state, or the error of a task that ran before the upload
/// (which the edges rule out).
fn uploaded<B>(state: &mut Option<DeviceState<B>>) -> Result<&mut DeviceState<B>> {
    state
        .as_mut()
        .ok_or_else(|| Error::InvalidArgument("device task before the upload".into()))
}

/// Stage 1's tasks after `upload`, one per panel and one for the trailing
/// diagonal block, chained, each writing the band columns it finishes: the
/// band for stage 2 (fed by those tasks) and the last task. Without `keep`
/// (no Q1 to come) the last task frees the device memory.
fn sy2sb_device_tasks<T, D>(
    g: &mut TaskGraph<'static>,
    dev: &Arc<D>,
    state: &Shared<D::Buffer>,
    upload: TaskId,
    (n, b): (usize, usize),
    keep: bool,
    lane: Lane,
) -> (Band<T>, TaskId)
where
    T: Scalar,
    D: BlasDevice<T> + Send + Sync + 'static,
    D::Buffer: Send + 'static,
{
    let band = Arc::new(SharedBand::new(SymBand::<T>::zeros(n, b)));
    let panels = panel_count(n, b);
    let mut feed = Vec::new();
    let mut prev = upload;
    // Columns [c0, c1) of the band, with the rows the bulge chasing may
    // touch (as the CPU's band copy declares them).
    let band_region =
        |c0: usize, c1: usize| Footprinted::new(band.id(), c0..(c1 + 2 * b).min(n), c0..c1);
    for p in 0..=panels {
        let c0 = p * b;
        let c1 = if p < panels { c0 + b } else { n };
        let (dev, state, out) = (Arc::clone(dev), Arc::clone(state), Arc::clone(&band));
        let m = n.saturating_sub(c0 + b);
        let (name, flops) = if p < panels {
            (
                format!("sy2sb.device[{p}]"),
                (4 * m * m * b + 2 * m * b * b) as f64,
            )
        } else {
            (format!("sy2sb.device.tail[{c0}..{n}]"), 0.0)
        };
        let rows = c0..(c1 + 2 * b).min(n);
        let body = move |ctx: &TaskContext| {
            let acc = Access::of(ctx);
            let mut guard = state.lock();
            let s = uploaded(&mut guard)?;
            let view = out.write(&acc, rows, c0..c1);
            let done = if p < panels {
                reduce_panel(&*dev, s, p, view)
            } else {
                copy_trailing_block(&*dev, s, c0, view)
            };
            trace_device_work(&*dev, ctx);
            if p == panels && !keep {
                *guard = None;
            }
            done
        };
        let t = g.add(
            Task::new(name, body)
                .stage(SY2SB)
                .lane(lane)
                .cost(flops, (std::mem::size_of::<T>() * (n - c0) * b) as f64)
                .footprint(Footprint::new().write(band_region(c0, c1))),
        );
        g.edge(prev, t);
        prev = t;
        if c0 < c1 {
            feed.push((c0..c1, t));
        }
    }
    (Band { band, b, feed }, prev)
}

/// Panel `p` (columns `c0 = p b` to `c0 + b`): its band columns into
/// `band`, its factors to the device, and the update of the trailing matrix
/// enqueued (module docs).
fn reduce_panel<T: Scalar, D: BlasDevice<T>>(
    dev: &D,
    s: &mut DeviceState<D::Buffer>,
    p: usize,
    mut band: BandMut<'_, T>,
) -> Result<()> {
    let ops = Timed(dev);
    let (v_at, t_at) = (s.panels[p].v, s.panels[p].t);
    let (m, b) = (v_at.rows, v_at.cols);
    let (c0, r0) = (p * b, (p + 1) * b);
    let n = r0 + m;
    let whole = Region::whole(n, n);
    // The column block from the diagonal down, as the previous panels'
    // updates left it: its diagonal block is final, the rest is factored.
    let mut block = Mat::<T>::zeros(n - c0, b);
    ops.download(&s.a, whole.sub(c0, c0, n - c0, b), block.as_mut())?;
    for j in 0..b {
        for i in j..b {
            band.set(c0 + i, c0 + j, block[(i, j)]);
        }
    }
    let mut t = Mat::<T>::zeros(b, b);
    let mut v = Mat::<T>::zeros(m, b);
    let mut panel = block.as_mut().subrows_mut(b, m);
    panel_kernel(panel.as_mut(), t.as_mut(), v.as_mut());
    // R_p, on and above the panel's diagonal: band rows r0.. of its columns.
    for j in 0..b {
        for i in 0..=j.min(m - 1) {
            band.set(r0 + i, c0 + j, panel[(i, j)]);
        }
    }
    for j in 0..b {
        for i in j + 1..b {
            t[(i, j)] = T::zero();
        }
    }
    ops.upload(v.as_ref(), &mut s.v, v_at)?;
    ops.upload(t.as_ref(), &mut s.t, t_at)?;

    let a22 = whole.sub(r0, r0, m, m);
    let work = Region {
        offset: 0,
        rows: m,
        cols: b,
        ld: n,
    };
    let bb = Region::whole(b, b);
    let (one, zero) = (T::one(), T::zero());
    ops.symm_lower(one, (&s.a, a22), (&s.v, v_at), zero, (&mut s.x, work))?;
    ops.gemm(
        one,
        (&s.x, work, Op::N),
        (&s.t, t_at, Op::N),
        zero,
        (&mut s.w, work),
    )?;
    ops.gemm(
        one,
        (&s.v, v_at, Op::T),
        (&s.w, work, Op::N),
        zero,
        (&mut s.p, bb),
    )?;
    ops.gemm(
        one,
        (&s.t, t_at, Op::T),
        (&s.p, bb, Op::N),
        zero,
        (&mut s.m, bb),
    )?;
    let half = T::of(-0.5);
    ops.gemm(
        half,
        (&s.v, v_at, Op::N),
        (&s.m, bb, Op::N),
        one,
        (&mut s.w, work),
    )?;
    ops.syr2k_lower(-one, (&s.v, v_at), (&s.w, work), one, (&mut s.a, a22))
}

/// The trailing diagonal block from `c0` (at most `b + 1` square, band
/// already) into `band`.
fn copy_trailing_block<T: Scalar, D: BlasDevice<T>>(
    dev: &D,
    s: &DeviceState<D::Buffer>,
    c0: usize,
    mut band: BandMut<'_, T>,
) -> Result<()> {
    let ops = Timed(dev);
    let n = s.n;
    let k = n - c0;
    let mut last = Mat::<T>::zeros(k, k);
    ops.download(&s.a, Region::whole(n, n).sub(c0, c0, k, k), last.as_mut())?;
    for j in 0..k {
        for i in j..k {
            band.set(c0 + i, c0 + j, last[(i, j)]);
        }
    }
    Ok(())
}

/// Stage 2 on the device, one task after `stage1` (the last stage-1 task,
/// which follows every band column's writer): the band chased to
/// tridiagonal form ([`BlasDevice::chase_band`], the sb2st kernel on a GPU),
/// for eigenvalues only.
fn sb2st_device_task<T, D>(
    g: &mut TaskGraph<'static>,
    dev: &Arc<D>,
    band: Band<T>,
    stage1: TaskId,
    lane: Lane,
) -> Sb2stStage<T>
where
    T: Scalar,
    D: BlasDevice<T> + Send + Sync + 'static,
    D::Buffer: Send + 'static,
{
    let (n, b) = (band.band.n(), band.b);
    let (dev2, shared) = (Arc::clone(dev), Arc::clone(&band.band));
    let body = move |ctx: &TaskContext| {
        let acc = Access::of(ctx);
        let mut view = shared.write(&acc, 0..n, 0..n);
        let mut local = SymBand::<T>::zeros(n, b);
        for c in 0..n {
            for r in c..(c + b + 1).min(n) {
                local.set(r, c, view.get(r, c));
            }
        }
        let done = Timed(&*dev2).chase_band(&mut local, b);
        trace_device_work(&*dev2, ctx);
        done?;
        // The tridiagonal, and zeros in the rest of the band.
        for c in 0..n {
            for r in c..(c + b + 1).min(n) {
                let x = if r <= c + 1 {
                    local.get(r, c)
                } else {
                    T::zero()
                };
                view.set(r, c, x);
            }
        }
        Ok(())
    };
    let bytes = (2 * n * (b + 1) * std::mem::size_of::<T>()) as f64;
    let t = g.add(
        Task::new("sb2st.device", body)
            .stage(SB2ST)
            .lane(lane)
            .cost((6 * n * n * b) as f64, bytes)
            .footprint(Footprint::new().write(Footprinted::new(band.band.id(), 0..n, 0..n))),
    );
    g.edge(stage1, t);
    Sb2stStage {
        sub: SubGraph {
            entries: vec![t],
            exits: vec![t],
        },
        tridiagonal: Tridiagonal {
            band: band.band,
            column_done: Vec::new(),
            all_done: vec![t],
        },
        reflectors: None,
    }
}

/// The Q1 task: after `stage1` (the last device task) and every producer of
/// `z`, `z = Q1 z` on the device.
fn q1_device_task<T, D>(
    g: &mut TaskGraph<'static>,
    dev: &Arc<D>,
    state: &Shared<D::Buffer>,
    stage1: TaskId,
    z: Eigenvectors<T>,
    lane: Lane,
) -> Eigenvectors<T>
where
    T: Scalar,
    D: BlasDevice<T> + Send + Sync + 'static,
    D::Buffer: Send + 'static,
{
    let n = z.nrows();
    let (dev, state, zm) = (Arc::clone(dev), Arc::clone(state), Arc::clone(&z.z));
    let body = move |ctx: &TaskContext| {
        let acc = Access::of(ctx);
        let mut guard = state.lock();
        let s = uploaded(&mut guard)?;
        let done = apply_q1(&*dev, s, zm.write(&acc, 0..n, 0..n));
        trace_device_work(&*dev, ctx);
        // The device memory is not needed any more.
        *guard = None;
        done
    };
    let bytes = (2 * n * n * std::mem::size_of::<T>()) as f64;
    let t = g.add(
        Task::new("q1.device", body)
            .stage(Q1)
            .lane(lane)
            .cost((2 * n * n * n) as f64, bytes)
            .footprint(Footprint::new().write(Footprinted::new(z.z.id(), 0..n, 0..n))),
    );
    let mut after: Vec<TaskId> = z.tasks().copied().collect();
    after.push(stage1);
    after.sort_unstable();
    after.dedup();
    for p in after {
        g.edge(p, t);
    }
    ColumnBlocks {
        z: z.z,
        blocks: vec![(0..n, vec![t])],
    }
}

/// `z = Q1 z` on the device: `Q_{P-1}` first, `z[r0.., :] -= V (T (V^T
/// z[r0.., :]))` per panel, in the matrix's buffer.
fn apply_q1<T: Scalar, D: BlasDevice<T>>(
    dev: &D,
    s: &mut DeviceState<D::Buffer>,
    mut z: MatMut<'_, T>,
) -> Result<()> {
    let ops = Timed(dev);
    let n = z.nrows();
    let whole = Region::whole(n, n);
    ops.upload(z.as_ref(), &mut s.a, whole)?;
    let (one, zero) = (T::one(), T::zero());
    for f in s.panels.iter().rev() {
        let (m, b) = (f.v.rows, f.v.cols);
        let zr = whole.sub(n - m, 0, m, n);
        let vz = Region::whole(b, n);
        ops.gemm(
            one,
            (&s.v, f.v, Op::T),
            (&s.a, zr, Op::N),
            zero,
            (&mut s.x, vz),
        )?;
        ops.gemm(
            one,
            (&s.t, f.t, Op::N),
            (&s.x, vz, Op::N),
            zero,
            (&mut s.w, vz),
        )?;
        ops.gemm(
            -one,
            (&s.v, f.v, Op::N),
            (&s.w, vz, Op::N),
            one,
            (&mut s.a, zr),
        )?;
    }
    ops.download(&s.a, whole, z.as_mut())
}
