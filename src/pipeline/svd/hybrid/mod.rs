//! The SVD with its BLAS-3 stages on a device (issue 13), the
//! SVD's counterpart of [`crate::pipeline::evd::hybrid`], in one task graph
//! ([`svd_graph_hybrid`]):
//!
//! * **Stage 1 (ge2gb)** on the device: after a `device.upload` task, one
//!   task per QR panel downloads the panel's column block (with the rows
//!   above it that hold the previous LQ panel's `L`), factors it on the host
//!   ([`crate::linalg::band::ge2gb::qr_panel`]), writes its band columns, uploads
//!   `V` and `T` and enqueues the left update of the trailing columns,
//!   `C -= V (T^T (V^T C))`; one task per LQ panel downloads the row block,
//!   factors it ([`crate::linalg::band::ge2gb::lq_panel`]), puts it back (the next
//!   QR task reads its `L`), uploads `V`, `T` and enqueues the right update
//!   of the rows below, `C -= ((C V) T) V^T`. All GEMMs.
//! * **Stage 2 (gb2bd), the bidiagonal solver and Q2** on the CPU, built by
//!   the CPU pipeline's own builders; the band is fed column block by column
//!   block as the QR tasks finish, so the bulge chasing overlaps the
//!   device's reduction.
//! * **Q1** on the device, one task after Q2: `U = Q1_U U` (QR panels last
//!   first, `U[k b.., :] -= V (T (V^T U[k b.., :]))`) and `V = Q1_V V` (LQ
//!   panels likewise), in the matrix's buffer.
//!
//! A wide matrix is reduced through its transpose, as on the CPU; the CPU
//! path's QR pre-reduction of tall matrices is not used here (the device
//! reduces the `m x n` matrix directly). Not bitwise the CPU pipeline's
//! results; `tests/suite/svd_hybrid.rs` holds them to the same ratios on
//! [`HostBlas`](crate::pipeline::device::HostBlas).

mod back_transform;
mod gb2bd;
mod ge2gb;
#[cfg(test)]
mod tests;

use back_transform::q1_device_task;
use gb2bd::gb2bd_device_task;
use ge2gb::ge2gb_device_tasks;

use super::{
    back_transform_q2u, back_transform_q2v, bdsdc, gb2bd_with, memory, prepare, singular_values,
    BandPrecision, Bidiagonal, SvdGraph, SvdJob, SvdOptions, UpperBandHandle, GB2BD, GE2GB, Q1U,
};
use crate::graph::{Footprint, Lane, Region as Footprinted, Task, TaskContext, TaskGraph};
use crate::linalg::band::gb2bd::{schedule, storage_offsets, SharedUpperBand, UpperBand};
use crate::linalg::band::ge2gb::{lq_panel, lq_panel_count, qr_panel, qr_panel_count};
use crate::matrix::access::Access;
use crate::matrix::SharedMatrix;
use crate::pipeline::columns::{basis, ColumnBlocks};
use crate::pipeline::device::{
    apply_block_reflector, device_lane, fit_device, trace_timings, uploaded, zero_below_diagonal,
    BlasDevice, DeviceFlow, DeviceRegion, GraphDevice, Op, Timed,
};
use crate::{Error, Result, Scalar};
use faer::{Mat, MatMut, MatRef};
use parking_lot::Mutex;
use std::sync::Arc;

/// Stage name of the upload of the matrix.
pub const TRANSFER: &str = "transfer";

/// Where a panel's factors live on the device.
struct PanelFactors {
    /// `V` in explicit form (unit diagonal, zeros above).
    v: DeviceRegion,
    /// `T`, upper triangular (zeros below).
    t: DeviceRegion,
}

/// The device buffers of a run, made by the upload task.
struct DeviceState<B> {
    /// Rows and columns (`m >= n`).
    m: usize,
    n: usize,
    b: usize,
    /// The matrix, then `U`, then `V`.
    a: B,
    /// Two work blocks of `max(m, n) b` elements.
    x: B,
    w: B,
    /// The QR panels' and the LQ panels' factors.
    v: B,
    t: B,
    qr: Vec<PanelFactors>,
    lq: Vec<PanelFactors>,
}

type Shared<B> = Arc<Mutex<Option<DeviceState<B>>>>;

/// Words of device memory a hybrid SVD allocates for an `m x n` (`m >= n`)
/// matrix with bandwidth `b`: the matrix, every panel's `V` and `T`, and two
/// `max(m, n) x b` work blocks.
pub fn device_words(m: usize, n: usize, b: usize) -> u128 {
    let layout = Layout::new(m, n, b);
    let (m, n, b) = (m as u128, n as u128, b as u128);
    m * n + layout.v_len as u128 + layout.t_len as u128 + 2 * m.max(n) * b
}

/// The panels' factor regions, packed one after another.
struct Layout {
    qr: Vec<PanelFactors>,
    lq: Vec<PanelFactors>,
    v_len: usize,
    t_len: usize,
}

impl Layout {
    fn new(m: usize, n: usize, b: usize) -> Self {
        let (mut v_len, mut t_len) = (0, 0);
        let mut add = |rows: usize, w: usize| {
            let f = PanelFactors {
                v: DeviceRegion {
                    offset: v_len,
                    rows,
                    cols: w,
                    ld: rows.max(1),
                },
                t: DeviceRegion {
                    offset: t_len,
                    rows: w,
                    cols: w,
                    ld: w.max(1),
                },
            };
            v_len += rows * w;
            t_len += w * w;
            f
        };
        let qr = (0..qr_panel_count(n, b))
            .map(|k| add(m - k * b, b.min(n - k * b)))
            .collect();
        let lq = (0..lq_panel_count(n, b))
            .map(|k| add(n - (k + 1) * b, b))
            .collect();
        Layout {
            qr,
            lq,
            v_len,
            t_len,
        }
    }
}

/// [`Error::OutOfMemory`] unless [`device_words`] fit the device.
fn check_device_memory<T: Scalar, D: BlasDevice<T>>(
    dev: &D,
    m: usize,
    n: usize,
    b: usize,
) -> Result<()> {
    let needed = device_words(m, n, b) * std::mem::size_of::<T>() as u128;
    fit_device(dev, needed, |_| {
        format!("the {m} x {n} SVD (bandwidth {b}) does not fit this device's free memory")
    })
}

/// The hybrid SVD's graph (module docs) of `a` (not modified), its device
/// tasks on `lane`; the results land in the returned [`SvdGraph`]'s handle,
/// as for [`super::svd_graph`].
///
/// Errors (before anything runs): those of [`super::svd_graph`], an
/// [`Error::OutOfMemory`] when the device's free memory is short, and
/// [`Error::InvalidArgument`] for a selection or a half-precision band (not
/// on this path).
pub fn svd_graph_hybrid<T, D>(
    a: MatRef<'_, T>,
    job: SvdJob,
    opts: &SvdOptions,
    dev: &Arc<D>,
    lane: Lane,
) -> Result<SvdGraph<T>>
where
    T: Scalar,
    D: GraphDevice<T>,
{
    if opts.selection.is_some() || opts.band_precision != BandPrecision::Same {
        return Err(Error::InvalidArgument(
            "selections and half-precision bands are not on the device path".into(),
        ));
    }
    memory::admit::<T>(a.nrows(), a.ncols(), job, opts)?;
    let transposed = a.nrows() < a.ncols();
    let (w, scale) = prepare(a, false)?;
    let (m, n) = (w.nrows(), w.ncols());
    let b = opts.bandwidth_for(n).max(1);
    check_device_memory::<T, D>(dev, m, n, b)?;
    let tw = opts.tile_width_for::<T>(b, job);

    let mut g = TaskGraph::new();
    let mut flow = DeviceFlow::new();
    let state: Shared<D::Buffer> = Arc::new(Mutex::new(None));
    {
        let (dev, state) = (Arc::clone(dev), Arc::clone(&state));
        let task = Task::new("device.upload", move |ctx| {
            let s = upload_matrix(&*dev, w, b);
            trace_timings(&*dev, ctx);
            *state.lock() = Some(s?);
            Ok(())
        })
        .stage(TRANSFER)
        .lane(lane)
        .cost(0.0, (m * n * std::mem::size_of::<T>()) as f64);
        flow.add_device(&mut g, task, Footprint::new());
    }
    let keep = job == SvdJob::Vectors;
    let band = ge2gb_device_tasks(&mut g, &mut flow, dev, &state, (m, n, b, tw), keep, lane);
    let (values, vectors, done) = match job {
        SvdJob::Values => {
            // On a device that chases bands, stage 2 runs there too.
            let bidiagonal = if dev.chases_bands() {
                gb2bd_device_task(&mut g, &mut flow, dev, band, lane)
            } else {
                gb2bd_with(&mut g, band, opts.grain(), false)?.bidiagonal
            };
            let values = singular_values(&mut g, bidiagonal)?;
            let done = vec![values.task()];
            (values, None, done)
        }
        SvdJob::Vectors => {
            let s2 = gb2bd_with(&mut g, band, opts.grain(), true)?;
            let (q2u, q2v) = s2
                .reflectors
                .ok_or_else(|| Error::InvalidArgument("gb2bd kept no reflectors".into()))?
                .split();
            let bd = bdsdc(&mut g, s2.bidiagonal, &opts.bdsdc_params())?;
            let (group, cb) = (opts.q2_kernel(), opts.col_block_for(n));
            let u = back_transform_q2u(&mut g, q2u, bd.u, group, cb)?;
            let v = back_transform_q2v(&mut g, q2v, bd.v, group, cb)?;
            let (u, v) = q1_device_task(&mut g, &mut flow, dev, &state, m, (u, v), lane);
            let mut done = vec![bd.values.task()];
            done.extend(u.tasks().chain(v.tasks()).copied());
            (bd.values, Some((u.into_result(), v.into_result())), done)
        }
    };
    Ok(SvdGraph::finish(
        g,
        &done,
        values,
        vectors,
        (scale, transposed),
    ))
}

fn upload_matrix<T: Scalar, D: BlasDevice<T>>(
    dev: &D,
    a: Mat<T>,
    b: usize,
) -> Result<DeviceState<D::Buffer>> {
    let ops = Timed(dev);
    let (m, n) = (a.nrows(), a.ncols());
    let layout = Layout::new(m, n, b);
    let work = m.max(n) * b;
    let mut s = DeviceState {
        m,
        n,
        b,
        a: dev.alloc(m * n)?,
        x: dev.alloc(work)?,
        w: dev.alloc(work)?,
        v: dev.alloc(layout.v_len)?,
        t: dev.alloc(layout.t_len)?,
        qr: layout.qr,
        lq: layout.lq,
    };
    ops.upload(a.as_ref(), &mut s.a, DeviceRegion::whole(m, n))?;
    Ok(s)
}

/// The SVD of `a` by [`svd_graph_hybrid`] on `dev`, run on `rt` (the device
/// tasks on `rt`'s first stream lane when it has one, else on its workers).
/// Same results contract as [`super::svd`]; not bitwise its results.
///
/// Errors: those of [`svd_graph_hybrid`] and of the run.
pub fn svd_hybrid<T, D>(
    a: MatRef<'_, T>,
    job: SvdJob,
    opts: &SvdOptions,
    rt: &crate::runtime::Runtime,
    dev: &Arc<D>,
) -> Result<super::SvdOutput<T>>
where
    T: Scalar,
    D: GraphDevice<T>,
{
    svd_graph_hybrid(a, job, opts, dev, device_lane(rt))?.run_on(rt)
}
