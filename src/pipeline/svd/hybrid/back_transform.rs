//! Q1_U and Q1_V of the hybrid SVD on the device.

use super::*;

/// The Q1 task in `flow` (after the device's earlier tasks) and after every
/// producer of `u` and `v` (both `n x n`): `U = Q1_U [U; 0]` (`m x n`: a new
/// matrix when `m > n`) and `V = Q1_V V` on the device, one after the other
/// in the matrix's buffer.
pub(super) fn q1_device_task<T, D>(
    g: &mut TaskGraph<'static>,
    flow: &mut DeviceFlow,
    dev: &Arc<D>,
    state: &Shared<D::Buffer>,
    m: usize,
    (u, v): (ColumnBlocks<T, basis::Band>, ColumnBlocks<T, basis::Band>),
    lane: Lane,
) -> (ColumnBlocks<T, basis::Dense>, ColumnBlocks<T, basis::Dense>)
where
    T: Scalar,
    D: GraphDevice<T>,
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
        let acc = Access::of(ctx.footprint.as_deref());
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
        trace_timings(&*dev2, ctx);
        *guard = None;
        done
    };
    let mut fp = Footprint::new()
        .write(Footprinted::new(out.id(), 0..m, 0..n))
        .write(Footprinted::new(v.z.id(), 0..n, 0..n));
    if m != n {
        fp = fp.read(Footprinted::new(u.z.id(), 0..n, 0..n));
    }
    let task = Task::new("q1.device", body).stage(Q1U).lane(lane).cost(
        (4 * (m + n) * n * n) as f64,
        (2 * (m + n) * n * std::mem::size_of::<T>()) as f64,
    );
    let t = flow.add_device(g, task, fp);
    // The CPU's tasks are not in this flow: the vectors' handles order them.
    for &p in u.tasks().chain(v.tasks()) {
        flow.edge(g, p, t);
    }
    let blocks = vec![(0..n, vec![t])];
    (
        u.transformed_into(g, out, blocks.clone()),
        v.transformed(g, blocks),
    )
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
    for (mut z, rows, qr) in [(u.as_mut(), m, true), (v.as_mut(), n, false)] {
        let whole = DeviceRegion::whole(rows, n);
        ops.upload(z.as_ref(), &mut s.a, whole)?;
        let panels = if qr { &s.qr } else { &s.lq };
        for (k, f) in panels.iter().enumerate().rev() {
            let from = if qr { k * b } else { (k + 1) * b };
            let c = whole.sub(from, 0, f.v.rows, n);
            apply_block_reflector(
                &ops,
                (&s.v, f.v),
                (&s.t, f.t, Op::N),
                (&mut s.a, c),
                &mut s.x,
                &mut s.w,
            )?;
        }
        ops.download(&s.a, whole, z.as_mut())?;
    }
    Ok(())
}
