//! The SVD with its BLAS-3 stages on a device (DESIGN §5; issue 13), the
//! SVD's counterpart of [`crate::pipeline::evd::hybrid`], in one task graph
//! ([`svd_graph_hybrid`]):
//!
//! * **Stage 1 (ge2gb)** on the device: after a `device.upload` task, one
//!   task per QR panel downloads the panel's column block (with the rows
//!   above it that hold the previous LQ panel's `L`), factors it on the host
//!   ([`crate::linalg::ge2gb::qr_panel`]), writes its band columns, uploads
//!   `V` and `T` and enqueues the left update of the trailing columns,
//!   `C -= V (T^T (V^T C))`; one task per LQ panel downloads the row block,
//!   factors it ([`crate::linalg::ge2gb::lq_panel`]), puts it back (the next
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

use super::{
    back_transform_q2u, back_transform_q2v, bdsdc, gb2bd_with, memory, prepare, singular_values,
    BandPrecision, Bidiagonal, SvdGraph, SvdJob, SvdOptions, SvdValues, UpperBandHandle, GB2BD,
    GE2GB, Q1U,
};
use crate::graph::{Footprint, Lane, Region as Footprinted, Task, TaskContext, TaskGraph, TaskId};
use crate::linalg::gb2bd::{schedule, storage_offsets, SharedUpperBand, UpperBand};
use crate::linalg::ge2gb::{lq_panel, lq_panel_count, qr_panel, qr_panel_count};
use crate::matrix::access::Access;
use crate::matrix::SharedMatrix;
use crate::pipeline::columns::ColumnBlocks;
use crate::pipeline::device::{BlasDevice, Op, Region, Timed};
use crate::pipeline::task::FinalValues;
use crate::{Error, Result, Scalar};
use faer::{Mat, MatMut, MatRef};
use parking_lot::Mutex;
use std::sync::Arc;

/// Stage name of the upload of the matrix.
pub const TRANSFER: &str = "transfer";

/// Where a panel's factors live on the device.
struct PanelFactors {
    /// `V` in explicit form (unit diagonal, zeros above).
    v: Region,
    /// `T`, upper triangular (zeros below).
    t: Region,
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
                v: Region {
                    offset: v_len,
                    rows,
                    cols: w,
                    ld: rows.max(1),
                },
                t: Region {
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
    let free = dev.free_bytes()? as u128;
    if needed <= free {
        return Ok(());
    }
    let gib = |x: u128| x as f64 / (1u64 << 30) as f64;
    Err(Error::OutOfMemory {
        needed_gib: gib(needed),
        available_gib: gib(free),
        suggestion: format!(
            "the {m} x {n} SVD (bandwidth {b}) does not fit this device's free memory"
        ),
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
    D: BlasDevice<T> + Send + Sync + 'static,
    D::Buffer: Send + 'static,
{
    if opts.selection.is_some() || opts.band_precision != BandPrecision::Same {
        return Err(Error::InvalidArgument(
            "selections and half-precision bands are not on the device path".into(),
        ));
    }
    memory::admit::<T>(a.nrows(), a.ncols(), job, opts)?;
    let transposed = a.nrows() < a.ncols();
    let (w, scale) = prepare(a)?;
    let (m, n) = (w.nrows(), w.ncols());
    let b = opts.bandwidth_for(n).max(1);
    check_device_memory::<T, D>(dev, m, n, b)?;
    let tw = opts.tile_width_for::<T>(b);

    let mut g = TaskGraph::new();
    let state: Shared<D::Buffer> = Arc::new(Mutex::new(None));
    let upload = {
        let (dev, state) = (Arc::clone(dev), Arc::clone(&state));
        g.add(
            Task::new("device.upload", move |ctx| {
                let s = upload_matrix(&*dev, w, b);
                trace_device_work(&*dev, ctx);
                *state.lock() = Some(s?);
                Ok(())
            })
            .stage(TRANSFER)
            .lane(lane)
            .cost(0.0, (m * n * std::mem::size_of::<T>()) as f64),
        )
    };
    let keep = job == SvdJob::Vectors;
    let (band, last) = ge2gb_device_tasks(&mut g, dev, &state, upload, (m, n, b, tw), keep, lane);
    let (values, vectors, done) = match job {
        SvdJob::Values => {
            // On a device that chases bands, stage 2 runs there too.
            let bidiagonal = if dev.chases_bands() {
                gb2bd_device_task(&mut g, dev, band, last, lane)
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
            let (u, v) = q1_device_task(&mut g, dev, &state, (last, m), (u, v), lane);
            let mut done = vec![bd.values.task()];
            done.extend(u.tasks().chain(v.tasks()).copied());
            (bd.values, Some((u.into_result(), v.into_result())), done)
        }
    };
    let values = FinalValues::after(&mut g, "svd.complete", "default", &done, values, scale);
    Ok(SvdGraph {
        graph: g,
        results: SvdValues {
            values,
            vectors,
            transposed,
        },
    })
}

/// The device's finished operations into the run's trace (device track 0).
fn trace_device_work<T: Scalar, D: BlasDevice<T>>(dev: &D, ctx: &TaskContext) {
    for op in dev.take_timings() {
        ctx.device_slice(0, op.name, op.start, op.end);
    }
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
    ops.upload(a.as_ref(), &mut s.a, Region::whole(m, n))?;
    Ok(s)
}

fn uploaded<B>(state: &mut Option<DeviceState<B>>) -> Result<&mut DeviceState<B>> {
    state
        .as_mut()
        .ok_or_else(|| Error::InvalidArgument("device task before the upload".into()))
}

/// Stage 1's device tasks after `upload`, chained: per step k a QR task
/// (which writes band columns `[k b, k b + w)` and feeds them to stage 2)
/// and, while `(k + 1) b < n`, an LQ task. Without `keep` the last task
/// frees the device memory. Returns the band for stage 2 and the last task.
fn ge2gb_device_tasks<T, D>(
    g: &mut TaskGraph<'static>,
    dev: &Arc<D>,
    state: &Shared<D::Buffer>,
    upload: TaskId,
    (m, n, b, tw): (usize, usize, usize, usize),
    keep: bool,
    lane: Lane,
) -> (UpperBandHandle<T>, TaskId)
where
    T: Scalar,
    D: BlasDevice<T> + Send + Sync + 'static,
    D::Buffer: Send + 'static,
{
    let passes = schedule(b, tw);
    let (ku, kl) = storage_offsets(b, &passes);
    let band = Arc::new(SharedUpperBand::new(UpperBand::zeros(n, ku, kl)));
    let (nq, nl) = (qr_panel_count(n, b), lq_panel_count(n, b));
    let bytes = std::mem::size_of::<T>() as f64;
    let mut feed = Vec::new();
    let mut prev = upload;
    for k in 0..nq {
        let c0 = k * b;
        let cols = c0..(c0 + b).min(n);
        let rows = c0.saturating_sub(b)..cols.end;
        let last_task = k + 1 == nq;
        let (dev2, st, out) = (Arc::clone(dev), Arc::clone(state), Arc::clone(&band));
        let (r, c) = (rows.clone(), cols.clone());
        let body = move |ctx: &TaskContext| {
            let acc = Access::of(ctx);
            let mut guard = st.lock();
            let s = uploaded(&mut guard)?;
            let mut view = out.write(&acc, r.clone(), c.clone());
            let done = reduce_qr_panel(&*dev2, s, k, |top, block| {
                // Band rows max(j - b, 0) ..= j of each column j.
                for j in c.clone() {
                    let i0 = j.saturating_sub(b);
                    for i in i0..=j {
                        view.rect_mut(i..i + 1, j..j + 1)[(0, 0)] = block[(i - top, j - c.start)];
                    }
                }
            });
            trace_device_work(&*dev2, ctx);
            if last_task && !keep {
                *guard = None;
            }
            done
        };
        let w = cols.len();
        let mk = m - c0;
        let t = g.add(
            Task::new(format!("ge2gb.device.qr[{k}]"), body)
                .stage(GE2GB)
                .lane(lane)
                .cost(
                    (4 * mk * w * (n - cols.end)) as f64,
                    bytes * (mk * w) as f64,
                )
                .footprint(Footprint::new().write(Footprinted::new(band.id(), rows, cols.clone()))),
        );
        g.edge(prev, t);
        prev = t;
        feed.push((cols, t));
        if k < nl {
            let (dev2, st) = (Arc::clone(dev), Arc::clone(state));
            // An LQ panel k is followed by QR panel k + 1: never the last task.
            let body = move |ctx: &TaskContext| {
                let mut guard = st.lock();
                let s = uploaded(&mut guard)?;
                let done = reduce_lq_panel(&*dev2, s, k);
                trace_device_work(&*dev2, ctx);
                done
            };
            let wk = n - (k + 1) * b;
            let t = g.add(
                Task::new(format!("ge2gb.device.lq[{k}]"), body)
                    .stage(GE2GB)
                    .lane(lane)
                    .cost((4 * (m - c0) * b * wk) as f64, bytes * (b * wk) as f64),
            );
            g.edge(prev, t);
            prev = t;
        }
    }
    let handle = UpperBandHandle {
        band,
        b,
        passes,
        feed,
    };
    (handle, prev)
}

/// Stage 2 on the device, one task after `stage1` (the last stage-1 task,
/// after every band column's writer): the band reduced to bidiagonal form by
/// its passes ([`BlasDevice::reduce_upper_band`], the gb2bd kernel on a
/// GPU), for singular values only.
fn gb2bd_device_task<T, D>(
    g: &mut TaskGraph<'static>,
    dev: &Arc<D>,
    band: UpperBandHandle<T>,
    stage1: TaskId,
    lane: Lane,
) -> Bidiagonal<T>
where
    T: Scalar,
    D: BlasDevice<T> + Send + Sync + 'static,
    D::Buffer: Send + 'static,
{
    let (n, b) = (band.band.n(), band.b);
    let passes = band.passes.clone();
    // The storage ge2gb_device_tasks made for these passes.
    let (ku, kl) = storage_offsets(b, &passes);
    let (dev2, shared) = (Arc::clone(dev), Arc::clone(&band.band));
    let body = move |ctx: &TaskContext| {
        let acc = Access::of(ctx);
        let mut view = shared.write(&acc, 0..n, 0..n);
        let mut local = UpperBand::<T>::zeros(n, ku, kl);
        let rows = |j: usize| j.saturating_sub(b)..j + 1;
        for j in 0..n {
            for i in rows(j) {
                local.set(i, j, view.get(i, j));
            }
        }
        let done = Timed(&*dev2).reduce_upper_band(&mut local, &passes);
        trace_device_work(&*dev2, ctx);
        done?;
        // The bidiagonal, and zeros in the rest of the band.
        for j in 0..n {
            for i in rows(j) {
                let x = if i + 1 >= j {
                    local.get(i, j)
                } else {
                    T::zero()
                };
                view.rect_mut(i..i + 1, j..j + 1)[(0, 0)] = x;
            }
        }
        Ok(())
    };
    let bytes = (2 * n * (b + 1) * std::mem::size_of::<T>()) as f64;
    let t = g.add(
        Task::new("gb2bd.device", body)
            .stage(GB2BD)
            .lane(lane)
            .cost((8 * n * n * b) as f64, bytes)
            .footprint(Footprint::new().write(Footprinted::new(band.band.id(), 0..n, 0..n))),
    );
    g.edge(stage1, t);
    Bidiagonal {
        band: band.band,
        all_done: vec![t],
    }
}

/// QR panel `k`: downloads rows `max(k b - b, 0)..m` of its columns, factors
/// rows `k b..m` on the host, hands the finished block (`L` rows above, `R`
/// on and above the panel's diagonal) to `band`, uploads `V`, `T` and
/// enqueues the left update of the columns right of the panel.
fn reduce_qr_panel<T: Scalar, D: BlasDevice<T>>(
    dev: &D,
    s: &mut DeviceState<D::Buffer>,
    k: usize,
    band: impl FnOnce(usize, MatRef<'_, T>),
) -> Result<()> {
    let ops = Timed(dev);
    let (m, n, b) = (s.m, s.n, s.b);
    let f = &s.qr[k];
    let (v_at, t_at) = (f.v, f.t);
    let (c0, w) = (k * b, v_at.cols);
    let top = c0.saturating_sub(b);
    let whole = Region::whole(m, n);
    let mut block = Mat::<T>::zeros(m - top, w);
    ops.download(&s.a, whole.sub(top, c0, m - top, w), block.as_mut())?;
    let mut t = Mat::<T>::zeros(w, w);
    let mut v = Mat::<T>::zeros(m - c0, w);
    qr_panel(
        block.as_mut().subrows_mut(c0 - top, m - c0),
        t.as_mut(),
        v.as_mut(),
    );
    zero_below_diagonal(t.as_mut());
    band(top, block.as_ref());
    ops.upload(v.as_ref(), &mut s.v, v_at)?;
    ops.upload(t.as_ref(), &mut s.t, t_at)?;
    let right = n - c0 - w;
    if right == 0 {
        return Ok(());
    }
    // C = A[c0.., c0 + w..]: C -= V (T^T (V^T C)).
    let c = whole.sub(c0, c0 + w, m - c0, right);
    let wx = Region::whole(w, right);
    let (one, zero) = (T::one(), T::zero());
    ops.gemm(
        one,
        (&s.v, v_at, Op::T),
        (&s.a, c, Op::N),
        zero,
        (&mut s.x, wx),
    )?;
    ops.gemm(
        one,
        (&s.t, t_at, Op::T),
        (&s.x, wx, Op::N),
        zero,
        (&mut s.w, wx),
    )?;
    ops.gemm(
        -one,
        (&s.v, v_at, Op::N),
        (&s.w, wx, Op::N),
        one,
        (&mut s.a, c),
    )
}

/// LQ panel `k`: the row block `A[k b..k b + b, (k + 1) b..]` factored on
/// the host and put back, `V` and `T` uploaded, and the right update of the
/// rows below enqueued.
fn reduce_lq_panel<T: Scalar, D: BlasDevice<T>>(
    dev: &D,
    s: &mut DeviceState<D::Buffer>,
    k: usize,
) -> Result<()> {
    let ops = Timed(dev);
    let (m, n, b) = (s.m, s.n, s.b);
    let f = &s.lq[k];
    let (v_at, t_at) = (f.v, f.t);
    let (r0, c0) = (k * b, (k + 1) * b);
    let wk = n - c0;
    let whole = Region::whole(m, n);
    let rows_at = whole.sub(r0, c0, b, wk);
    let mut panel = Mat::<T>::zeros(b, wk);
    ops.download(&s.a, rows_at, panel.as_mut())?;
    let mut t = Mat::<T>::zeros(b, b);
    let mut v = Mat::<T>::zeros(wk, b);
    lq_panel(panel.as_mut(), t.as_mut(), v.as_mut());
    zero_below_diagonal(t.as_mut());
    ops.upload(panel.as_ref(), &mut s.a, rows_at)?;
    ops.upload(v.as_ref(), &mut s.v, v_at)?;
    ops.upload(t.as_ref(), &mut s.t, t_at)?;
    let below = m - c0;
    // C = A[c0.., c0..]: C -= ((C V) T) V^T.
    let c = whole.sub(c0, c0, below, wk);
    let xw = Region::whole(below, b);
    let (one, zero) = (T::one(), T::zero());
    ops.gemm(
        one,
        (&s.a, c, Op::N),
        (&s.v, v_at, Op::N),
        zero,
        (&mut s.x, xw),
    )?;
    ops.gemm(
        one,
        (&s.x, xw, Op::N),
        (&s.t, t_at, Op::N),
        zero,
        (&mut s.w, xw),
    )?;
    ops.gemm(
        -one,
        (&s.w, xw, Op::N),
        (&s.v, v_at, Op::T),
        one,
        (&mut s.a, c),
    )
}

/// `T`'s strict lower triangle zeroed (the panel kernels leave it unread;
/// the device's GEMMs read all of it).
fn zero_below_diagonal<T: Scalar>(mut t: MatMut<'_, T>) {
    for j in 0..t.ncols() {
        for i in j + 1..t.nrows() {
            t[(i, j)] = T::zero();
        }
    }
}

/// The Q1 task: after `stage1` and every producer of `u` and `v` (both
/// `n x n`), `U = Q1_U [U; 0]` (`m x n`: a new matrix when `m > n`) and
/// `V = Q1_V V` on the device, one after the other in the matrix's buffer.
fn q1_device_task<T, D>(
    g: &mut TaskGraph<'static>,
    dev: &Arc<D>,
    state: &Shared<D::Buffer>,
    (stage1, m): (TaskId, usize),
    (u, v): (ColumnBlocks<T>, ColumnBlocks<T>),
    lane: Lane,
) -> (ColumnBlocks<T>, ColumnBlocks<T>)
where
    T: Scalar,
    D: BlasDevice<T> + Send + Sync + 'static,
    D::Buffer: Send + 'static,
{
    let n = u.nrows();
    // Square: U is transformed in place.
    let out = if m == n {
        Arc::clone(&u.z)
    } else {
        Arc::new(SharedMatrix::deferred(m, n))
    };
    let (dev2, st) = (Arc::clone(dev), Arc::clone(state));
    let (uz, vz, oz) = (Arc::clone(&u.z), Arc::clone(&v.z), Arc::clone(&out));
    let body = move |ctx: &TaskContext| {
        let acc = Access::of(ctx);
        let mut guard = st.lock();
        let s = uploaded(&mut guard)?;
        let mut o = oz.write(&acc, 0..m, 0..n);
        if m != n {
            o.as_mut()
                .subrows_mut(0, n)
                .copy_from(uz.read(&acc, 0..n, 0..n));
            o.as_mut().subrows_mut(n, m - n).fill(T::zero());
        }
        let done = apply_q1(&*dev2, s, o, vz.write(&acc, 0..n, 0..n));
        trace_device_work(&*dev2, ctx);
        *guard = None;
        done
    };
    let mut fp = Footprint::new()
        .write(Footprinted::new(out.id(), 0..m, 0..n))
        .write(Footprinted::new(v.z.id(), 0..n, 0..n));
    if m != n {
        fp = fp.read(Footprinted::new(u.z.id(), 0..n, 0..n));
    }
    let t = g.add(
        Task::new("q1.device", body)
            .stage(Q1U)
            .lane(lane)
            .cost(
                (4 * (m + n) * n * n) as f64,
                (2 * (m + n) * n * std::mem::size_of::<T>()) as f64,
            )
            .footprint(fp),
    );
    let mut after: Vec<TaskId> = u.tasks().chain(v.tasks()).copied().collect();
    after.push(stage1);
    after.sort_unstable();
    after.dedup();
    for p in after {
        g.edge(p, t);
    }
    let blocks = |z: Arc<SharedMatrix<T>>| ColumnBlocks {
        z,
        blocks: vec![(0..n, vec![t])],
    };
    (blocks(out), blocks(v.z))
}

/// `U = Q1_U U` (`m x n`) and `V = Q1_V V` (`n x n`) on the device: each
/// uploaded into the matrix's buffer, its panels' block reflectors applied
/// last first, `C -= V (T (V^T C))` on the rows the panel touches, and
/// downloaded.
fn apply_q1<T: Scalar, D: BlasDevice<T>>(
    dev: &D,
    s: &mut DeviceState<D::Buffer>,
    mut u: MatMut<'_, T>,
    mut v: MatMut<'_, T>,
) -> Result<()> {
    let ops = Timed(dev);
    let (m, n, b) = (s.m, s.n, s.b);
    let (one, zero) = (T::one(), T::zero());
    for (mut z, rows, qr) in [(u.as_mut(), m, true), (v.as_mut(), n, false)] {
        let whole = Region::whole(rows, n);
        ops.upload(z.as_ref(), &mut s.a, whole)?;
        let panels = if qr { &s.qr } else { &s.lq };
        for (k, f) in panels.iter().enumerate().rev() {
            let from = if qr { k * b } else { (k + 1) * b };
            let c = whole.sub(from, 0, f.v.rows, n);
            let wx = Region::whole(f.v.cols, n);
            ops.gemm(
                one,
                (&s.v, f.v, Op::T),
                (&s.a, c, Op::N),
                zero,
                (&mut s.x, wx),
            )?;
            ops.gemm(
                one,
                (&s.t, f.t, Op::N),
                (&s.x, wx, Op::N),
                zero,
                (&mut s.w, wx),
            )?;
            ops.gemm(
                -one,
                (&s.v, f.v, Op::N),
                (&s.w, wx, Op::N),
                one,
                (&mut s.a, c),
            )?;
        }
        ops.download(&s.a, whole, z.as_mut())?;
    }
    Ok(())
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
) -> Result<super::Svd<T>>
where
    T: Scalar,
    D: BlasDevice<T> + Send + Sync + 'static,
    D::Buffer: Send + 'static,
{
    let lane = if rt.streams() > 0 {
        Lane::Stream(0)
    } else {
        Lane::Cpu
    };
    let (graph, results) = svd_graph_hybrid(a, job, opts, dev, lane)?.into_parts();
    let report = rt.run(graph)?;
    let (values, u, vt) = results.into_results()?;
    Ok(super::Svd {
        values,
        u,
        vt,
        report,
    })
}
