//! Stage 2 of the hybrid EVD on the device, for eigenvalues only.

use super::*;

/// Stage 2 on the device, one task in `flow` after stage 1's (the writers of
/// the band, on the device): the band chased to tridiagonal form
/// ([`BlasDevice::chase_band`], the sb2st kernel on a GPU), for eigenvalues
/// only.
pub(super) fn sb2st_device_task<T, D>(
    g: &mut TaskGraph<'static>,
    flow: &mut DeviceFlow,
    dev: &Arc<D>,
    band: Band<T>,
    lane: Lane,
) -> Sb2stStage<T>
where
    T: Scalar,
    D: GraphDevice<T>,
{
    let (n, b) = (band.band.n(), band.b);
    let (dev2, shared) = (Arc::clone(dev), Arc::clone(&band.band));
    let body = move |ctx: &TaskContext| {
        let acc = Access::of(ctx.footprint.as_deref());
        let mut view = shared.write(&acc, 0..n, 0..n);
        let mut local = SymBand::<T>::zeros(n, b);
        for c in 0..n {
            for r in c..(c + b + 1).min(n) {
                local.set(r, c, view.get(r, c));
            }
        }
        let done = Timed(&*dev2).chase_band(&mut local, b);
        trace_timings(&*dev2, ctx);
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
    let task = Task::new("sb2st.device", body)
        .stage(SB2ST)
        .lane(lane)
        .cost((6 * n * n * b) as f64, bytes);
    let whole = Footprinted::new(band.band.id(), 0..n, 0..n);
    let t = flow.add_device(g, task, Footprint::new().write(whole));
    Sb2stStage {
        sub: SubGraph {
            entries: vec![t],
            exits: vec![t],
        },
        tridiagonal: Tridiagonal {
            band: band.band,
            column_done: Vec::new(),
            all_done: vec![t],
            reduction: band.reduction,
            outcome: Some(g.outcome()),
        },
        reflectors: None,
    }
}
