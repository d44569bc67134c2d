//! What the hybrid drivers (EVD and SVD) share: the lane their device tasks
//! take, the device memory check, the state their tasks hand on, the trace
//! of the device's work, and the block reflector applied as three GEMMs.

use super::{BlasDevice, DeviceRegion, Op, Timed};
use crate::graph::{Lane, TaskContext};
use crate::runtime::Runtime;
use crate::{Error, Result, Scalar};

/// The lane of a run's device tasks: `rt`'s first stream lane when it has
/// one (the trace then shows them on a track of their own), else its
/// workers (the tasks are chained by edges either way).
pub(crate) fn device_lane(rt: &Runtime) -> Lane {
    if rt.streams() > 0 {
        Lane::Stream(0)
    } else {
        Lane::Cpu
    }
}

/// [`Error::OutOfMemory`] unless `needed` bytes fit `dev`'s free memory;
/// `what_fits(free)` says what would (the error's suggestion).
pub(crate) fn fit_device<T: Scalar, D: BlasDevice<T>>(
    dev: &D,
    needed: u128,
    what_fits: impl FnOnce(u128) -> String,
) -> Result<()> {
    let free = dev.free_bytes()? as u128;
    if needed <= free {
        return Ok(());
    }
    let gib = |x: u128| x as f64 / (1u64 << 30) as f64;
    Err(Error::OutOfMemory {
        needed_gib: gib(needed),
        available_gib: gib(free),
        suggestion: what_fits(free),
    })
}

/// The device state a driver's upload task made; an error for a task that
/// ran before it (which the drivers' edges rule out).
pub(crate) fn uploaded<S>(state: &mut Option<S>) -> Result<&mut S> {
    state
        .as_mut()
        .ok_or_else(|| Error::InvalidArgument("device task before the upload".into()))
}

/// The device's finished operations into the run's trace, on device track
/// 0 (one device, one stream).
pub(crate) fn trace_timings<T: Scalar, D: BlasDevice<T>>(dev: &D, ctx: &TaskContext) {
    for op in dev.take_timings() {
        ctx.device_slice(0, op.name, op.start, op.end);
    }
}

/// `C := (I - V op(T) V^T) C` on the device as three GEMMs, `X = V^T C`,
/// `W = op(T) X`, `C -= V W` (`op(T) = T` for `Q C`, `T^T` for `Q^T C`,
/// with `Q = I - V T V^T`, `V` `m x k` with `m` the rows of `C`). `x` and
/// `w` are work buffers of at least `k x` (columns of `C`) elements.
#[allow(clippy::too_many_arguments)]
pub(crate) fn apply_block_reflector<T: Scalar, D: BlasDevice<T>>(
    ops: &Timed<'_, D>,
    (v, v_at): (&D::Buffer, DeviceRegion),
    (t, t_at, t_op): (&D::Buffer, DeviceRegion, Op),
    (c, c_at): (&mut D::Buffer, DeviceRegion),
    x: &mut D::Buffer,
    w: &mut D::Buffer,
) -> Result<()> {
    let work = DeviceRegion::whole(v_at.cols, c_at.cols);
    let (one, zero) = (T::one(), T::zero());
    ops.gemm(one, (v, v_at, Op::T), (&*c, c_at, Op::N), zero, (x, work))?;
    ops.gemm(one, (t, t_at, t_op), (&*x, work, Op::N), zero, (w, work))?;
    ops.gemm(-one, (v, v_at, Op::N), (&*w, work, Op::N), one, (c, c_at))
}

/// `T`'s strict lower triangle zeroed: the panel kernels leave it unread,
/// the device's GEMMs read all of it.
pub(crate) fn zero_below_diagonal<T: Scalar>(mut t: faer::MatMut<'_, T>) {
    for j in 0..t.ncols() {
        for i in j + 1..t.nrows() {
            t[(i, j)] = T::zero();
        }
    }
}
