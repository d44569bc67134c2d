//! Stage 2 of the hybrid SVD on the device, for singular values only.

use super::*;

/// Stage 2 on the device, one task in `flow` after stage 1's (the writers of
/// the band, on the device): the band reduced to bidiagonal form by its
/// passes ([`BlasDevice::reduce_upper_band`], the gb2bd kernel on a GPU),
/// for singular values only.
pub(super) fn gb2bd_device_task<T, D>(
    g: &mut TaskGraph<'static>,
    flow: &mut DeviceFlow,
    dev: &Arc<D>,
    band: UpperBandHandle<T>,
    lane: Lane,
) -> Bidiagonal<T>
where
    T: Scalar,
    D: GraphDevice<T>,
{
    let (n, b) = (band.band.n(), band.b);
    let passes = band.passes.clone();
    // The storage ge2gb_device_tasks made for these passes.
    let (ku, kl) = storage_offsets(b, &passes);
    let (dev2, shared) = (Arc::clone(dev), Arc::clone(&band.band));
    let body = move |ctx: &TaskContext| {
        let acc = Access::of(ctx.footprint.as_deref());
        let mut view = shared.write(&acc, 0..n, 0..n);
        let mut local = UpperBand::<T>::zeros(n, ku, kl);
        let rows = |j: usize| j.saturating_sub(b)..j + 1;
        for j in 0..n {
            for i in rows(j) {
                local.set(i, j, view.get(i, j));
            }
        }
        let done = Timed(&*dev2).reduce_upper_band(&mut local, &passes);
        trace_timings(&*dev2, ctx);
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
    let task = Task::new("gb2bd.device", body)
        .stage(GB2BD)
        .lane(lane)
        .cost((8 * n * n * b) as f64, bytes);
    let whole = Footprinted::new(band.band.id(), 0..n, 0..n);
    let t = flow.add_device(g, task, Footprint::new().write(whole));
    Bidiagonal {
        band: band.band,
        all_done: vec![t],
        reduction: band.reduction,
    }
}
