//! Q1 of the hybrid EVD on the device.

use super::*;

/// The Q1 task in `flow` (after the device's earlier tasks) and after every
/// producer of `z`: `z = Q1 z` on the device.
pub(super) fn q1_device_task<T, D>(
    g: &mut TaskGraph<'static>,
    flow: &mut DeviceFlow,
    dev: &Arc<D>,
    state: &Shared<D::Buffer>,
    z: Eigenvectors<T, basis::Band>,
    lane: Lane,
) -> Eigenvectors<T, basis::Dense>
where
    T: Scalar,
    D: GraphDevice<T>,
{
    let n = z.nrows();
    let (dev, state, zm) = (Arc::clone(dev), Arc::clone(state), Arc::clone(&z.z));
    let body = move |ctx: &TaskContext| {
        let acc = Access::of(ctx.footprint.as_deref());
        let mut guard = state.lock();
        let s = uploaded(&mut guard)?;
        let done = apply_q1(&*dev, s, zm.write(&acc, 0..n, 0..n));
        trace_timings(&*dev, ctx);
        // The device memory is not needed any more.
        *guard = None;
        done
    };
    let bytes = (2 * n * n * std::mem::size_of::<T>()) as f64;
    let task = Task::new("q1.device", body)
        .stage(Q1)
        .lane(lane)
        .cost((2 * n * n * n) as f64, bytes);
    let whole = Footprinted::new(z.z.id(), 0..n, 0..n);
    let t = flow.add_device(g, task, Footprint::new().write(whole));
    // The CPU's tasks are not in this flow: the eigenvectors' handle orders them.
    for &p in z.tasks() {
        flow.edge(g, p, t);
    }
    z.transformed(g, vec![(0..n, vec![t])])
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
    let whole = DeviceRegion::whole(n, n);
    ops.upload(z.as_ref(), &mut s.a, whole)?;
    for f in s.panels.iter().rev() {
        let zr = whole.sub(n - f.v.rows, 0, f.v.rows, n);
        apply_block_reflector(
            &ops,
            (&s.v, f.v),
            (&s.t, f.t, Op::N),
            (&mut s.a, zr),
            &mut s.x,
            &mut s.w,
        )?;
    }
    ops.download(&s.a, whole, z.as_mut())
}
