//! Stage 1 of the hybrid EVD: the chained panel tasks (module docs of
//! [`super`]).

use super::*;

/// Stage 1's tasks in `flow` (after the upload, on the device), one per panel
/// and one for the trailing diagonal block, each writing the band columns it
/// finishes: the band for stage 2 (fed by those tasks). Without `keep` (no
/// Q1 to come) the last task frees the device memory.
pub(super) fn sy2sb_device_tasks<T, D>(
    g: &mut TaskGraph<'static>,
    flow: &mut DeviceFlow,
    dev: &Arc<D>,
    state: &Shared<D::Buffer>,
    (n, b): (usize, usize),
    keep: bool,
    lane: Lane,
) -> Band<T>
where
    T: Scalar,
    D: GraphDevice<T>,
{
    let band = Arc::new(SharedBand::new(SymBand::<T>::zeros(n, b)));
    let panels = panel_count(n, b);
    let mut feed = Vec::new();
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
            let acc = Access::of(ctx.footprint.as_deref());
            let mut guard = state.lock();
            let s = uploaded(&mut guard)?;
            let view = out.write(&acc, rows, c0..c1);
            let done = if p < panels {
                reduce_panel(&*dev, s, p, view)
            } else {
                copy_trailing_block(&*dev, s, c0, view)
            };
            trace_timings(&*dev, ctx);
            if p == panels && !keep {
                *guard = None;
            }
            done
        };
        let task = Task::new(name, body)
            .stage(SY2SB)
            .lane(lane)
            .cost(flops, (std::mem::size_of::<T>() * (n - c0) * b) as f64);
        let t = flow.add_device(g, task, Footprint::new().write(band_region(c0, c1)));
        if c0 < c1 {
            feed.push((c0..c1, t));
        }
    }
    Band {
        band,
        b,
        feed,
        reduction: Some(crate::pipeline::columns::Reduction::fresh()),
    }
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
    let whole = DeviceRegion::whole(n, n);
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
    zero_below_diagonal(t.as_mut());
    ops.upload(v.as_ref(), &mut s.v, v_at)?;
    ops.upload(t.as_ref(), &mut s.t, t_at)?;

    let a22 = whole.sub(r0, r0, m, m);
    let work = DeviceRegion {
        offset: 0,
        rows: m,
        cols: b,
        ld: n,
    };
    let bb = DeviceRegion::whole(b, b);
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
    ops.download(
        &s.a,
        DeviceRegion::whole(n, n).sub(c0, c0, k, k),
        last.as_mut(),
    )?;
    for j in 0..k {
        for i in j..k {
            band.set(c0 + i, c0 + j, last[(i, j)]);
        }
    }
    Ok(())
}
