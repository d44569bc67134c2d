//! What the hybrid drivers (EVD and SVD) share: the lane their device tasks
//! take, the device memory check, the state their tasks hand on, the flow
//! that orders their tasks, the trace of the device's work, and the block
//! reflector applied as three GEMMs.

use super::{BlasDevice, DeviceRegion, Op, Timed};
use crate::graph::{Flow, Footprint, Lane, Region, Task, TaskContext, TaskGraph, TaskId};
use crate::matrix::MatrixId;
use crate::runtime::Runtime;
use crate::{Error, Result, Scalar};

/// The flow of a hybrid graph's own tasks: each declares its data once (its
/// footprint) and the edges follow ([`Flow`]). The device, that is its buffers
/// (the state the upload task makes) and the one stream its operations are
/// enqueued on, is one more matrix in these footprints, a 1 x 1 pseudo-matrix
/// every device task writes: the flow thus chains the device tasks in the
/// order they are added, and `check_races` reports a missing link.
pub(crate) struct DeviceFlow {
    flow: Flow,
    device: MatrixId,
}

impl DeviceFlow {
    /// A flow with a fresh device.
    pub(crate) fn new() -> Self {
        DeviceFlow {
            flow: Flow::new(),
            device: MatrixId::fresh(),
        }
    }

    /// Adds `task`, which works on the device and on the data `fp` declares,
    /// after every earlier task of this flow it conflicts with.
    pub(crate) fn add_device<'a>(
        &mut self,
        g: &mut TaskGraph<'a>,
        task: Task<'a>,
        fp: Footprint,
    ) -> TaskId {
        let fp = fp.write(Region::new(self.device, 0..1, 0..1));
        self.flow.add(g, task.footprint(fp))
    }

    /// Adds the edge `from -> to` (a task of another builder, ordered by
    /// its stage's handle, before a task of this flow).
    pub(crate) fn edge(&mut self, g: &mut TaskGraph<'_>, from: TaskId, to: TaskId) {
        self.flow.edge(g, from, to);
    }
}

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

/// The negative controls of a hybrid graph that `build` makes with its
/// device tasks on `Lane::Cpu` (a stream lane would order them by itself,
/// and `check_races` counts that order): the graph is race free; every two
/// consecutive device tasks (those named `*device*`) are linked by an edge,
/// and dropping it is a race `check_races` reports (the device is declared
/// in their footprints) unless another path orders them (the last stage-1
/// task reaches Q1 through the CPU's stages too); and dropping every edge
/// from a CPU task into a device task (the handles of the CPU's stages) is
/// one too, when there are such edges.
#[cfg(test)]
pub(crate) fn assert_device_edges_needed(build: impl Fn() -> TaskGraph<'static>) {
    let expect_race = |g: &TaskGraph<'static>, what: &str| {
        let r = g.check_races();
        assert!(
            matches!(r, Err(Error::Race { .. })),
            "dropping {what} was not caught: {r:?}"
        );
    };
    let g = build();
    g.check_races().unwrap();
    let id = |g: &TaskGraph<'static>, i: usize| g.task_id(i).expect("a task");
    let on_device = |g: &TaskGraph<'static>, i: usize| g.name(id(g, i)).contains("device");
    let device: Vec<usize> = (0..g.len()).filter(|&i| on_device(&g, i)).collect();
    assert!(device.len() >= 3, "{} device tasks", device.len());
    let mut caught = 0;
    for w in device.windows(2) {
        let (u, v) = (w[0], w[1]);
        let mut h = build();
        assert!(h.remove_edge(id(&h, u), id(&h, v)), "no edge {u} -> {v}");
        if !reaches(&h, u, v) {
            expect_race(&h, &format!("the device edge {u} -> {v}"));
            caught += 1;
        }
    }
    assert!(
        caught + 1 >= device.len() - 1,
        "{caught} of {} links",
        device.len() - 1
    );
    let mut h = build();
    let from_cpu: Vec<(usize, usize)> = h
        .edges()
        .filter(|&(u, v)| !on_device(&h, u) && on_device(&h, v))
        .collect();
    if !from_cpu.is_empty() {
        for &(u, v) in &from_cpu {
            assert!(h.remove_edge(id(&h, u), id(&h, v)));
        }
        expect_race(&h, "the edges from the CPU's tasks into the device's");
    }
}

/// Whether a path leads from task `u` to task `v` of `g`.
#[cfg(test)]
fn reaches(g: &TaskGraph<'_>, u: usize, v: usize) -> bool {
    let edges: Vec<(usize, usize)> = g.edges().collect();
    let mut seen = vec![false; g.len()];
    let mut stack = vec![u];
    while let Some(x) = stack.pop() {
        for &(a, b) in &edges {
            if a == x && !seen[b] {
                seen[b] = true;
                stack.push(b);
            }
        }
    }
    seen[v]
}
