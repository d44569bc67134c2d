//! Stage 1 of the hybrid SVD: the chained QR and LQ panel tasks (module docs of
//! [`super`]).

use super::*;

/// Stage 1's device tasks in `flow` (after the upload): per step k a QR
/// task (which writes band columns `[k b, k b + w)` and feeds them to stage
/// 2) and, while `(k + 1) b < n`, an LQ task. Without `keep` the last task
/// frees the device memory. Returns the band for stage 2.
pub(super) fn ge2gb_device_tasks<T, D>(
    g: &mut TaskGraph<'static>,
    flow: &mut DeviceFlow,
    dev: &Arc<D>,
    state: &Shared<D::Buffer>,
    (m, n, b, tw): (usize, usize, usize, usize),
    keep: bool,
    lane: Lane,
) -> UpperBandHandle<T>
where
    T: Scalar,
    D: GraphDevice<T>,
{
    let passes = schedule(b, tw);
    let (ku, kl) = storage_offsets(b, &passes);
    let band = Arc::new(SharedUpperBand::new(UpperBand::zeros(n, ku, kl)));
    let (nq, nl) = (qr_panel_count(n, b), lq_panel_count(n, b));
    let bytes = std::mem::size_of::<T>() as f64;
    let mut feed = Vec::new();
    for k in 0..nq {
        let c0 = k * b;
        let cols = c0..(c0 + b).min(n);
        let rows = c0.saturating_sub(b)..cols.end;
        let last_task = k + 1 == nq;
        let (dev2, st, out) = (Arc::clone(dev), Arc::clone(state), Arc::clone(&band));
        let (r, c) = (rows.clone(), cols.clone());
        let body = move |ctx: &TaskContext| {
            let acc = Access::of(ctx.footprint.as_deref());
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
            trace_timings(&*dev2, ctx);
            if last_task && !keep {
                *guard = None;
            }
            done
        };
        let w = cols.len();
        let mk = m - c0;
        let task = Task::new(format!("ge2gb.device.qr[{k}]"), body)
            .stage(GE2GB)
            .lane(lane)
            .cost(
                (4 * mk * w * (n - cols.end)) as f64,
                bytes * (mk * w) as f64,
            );
        let fp = Footprint::new().write(Footprinted::new(band.id(), rows, cols.clone()));
        let t = flow.add_device(g, task, fp);
        feed.push((cols, t));
        if k < nl {
            let (dev2, st) = (Arc::clone(dev), Arc::clone(state));
            // An LQ panel k is followed by QR panel k + 1: never the last task.
            let body = move |ctx: &TaskContext| {
                let mut guard = st.lock();
                let s = uploaded(&mut guard)?;
                let done = reduce_lq_panel(&*dev2, s, k);
                trace_timings(&*dev2, ctx);
                done
            };
            let wk = n - (k + 1) * b;
            let task = Task::new(format!("ge2gb.device.lq[{k}]"), body)
                .stage(GE2GB)
                .lane(lane)
                .cost((4 * (m - c0) * b * wk) as f64, bytes * (b * wk) as f64);
            flow.add_device(g, task, Footprint::new());
        }
    }
    UpperBandHandle {
        band,
        b,
        passes,
        feed,
        reduction: Some(crate::pipeline::columns::Reduction::fresh()),
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
    let whole = DeviceRegion::whole(m, n);
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
    // C = A[c0.., c0 + w..]: C := Q^T C = C - V (T^T (V^T C)).
    let c = whole.sub(c0, c0 + w, m - c0, right);
    apply_block_reflector(
        &ops,
        (&s.v, v_at),
        (&s.t, t_at, Op::T),
        (&mut s.a, c),
        &mut s.x,
        &mut s.w,
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
    let whole = DeviceRegion::whole(m, n);
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
    let xw = DeviceRegion::whole(below, b);
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
