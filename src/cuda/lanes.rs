//! Stream lanes on CUDA streams: one stream per lane, edges between lanes as
//! event record/wait, host-side completion, device buffers and transfers as
//! tasks (issue 13).
//!
//! The runtime's stream-lane thread still runs each task body in creation
//! order; a body on lane `k` *enqueues* its work on [`GpuLanes::stream`]`(k)`
//! instead of computing on the host. So:
//! * an edge CPU task -> GPU task needs nothing on the device: the lane
//!   thread starts the GPU task's body (which enqueues) only after the CPU
//!   task finished on the host;
//! * an edge GPU task (lane a) -> GPU task (lane b) is [`GpuLanes::edge`]: an
//!   event recorded on stream a after the producer's work, waited for by
//!   stream b before the consumer's, so neither host thread blocks;
//! * an edge GPU task -> CPU task is [`GpuLanes::complete_on_host`] at the end
//!   of the producer's body: the host waits for the stream's work so far, and
//!   only then does the runtime count the task finished.
//!
//! cudarc's own per-buffer event tracking is switched off for the context
//! ([`GpuLanes::open`]): the task graph already orders every access to the
//! runtime's buffers, and the tracking would add an event wait to every
//! launch. Untested without a GPU: compiled only.

use super::context::{driver_error, GpuContext};
use crate::graph::{Lane, Task};
use crate::{Error, Result};
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use parking_lot::Mutex;
use std::sync::Arc;

/// One CUDA stream per stream lane of a runtime, on one device.
#[derive(Debug)]
pub struct GpuLanes {
    ctx: GpuContext,
    streams: Vec<Arc<CudaStream>>,
}

impl GpuLanes {
    /// Opens device `ordinal` and creates `lanes` streams (at least one).
    /// [`Error::NoGpu`] without a driver or device (checked before any driver
    /// call).
    pub fn open(ordinal: usize, lanes: usize) -> Result<Self> {
        let ctx = GpuContext::open(ordinal)?;
        // SAFETY: turning the tracking off before any buffer exists; from here
        // on the task graph orders every access to buffers of this context
        // (event edges between lanes, in-order streams within a lane), which
        // is what the tracking would otherwise enforce.
        unsafe { ctx.cuda().disable_event_tracking() };
        let streams = (0..lanes.max(1))
            .map(|_| ctx.cuda().new_stream())
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| driver_error("cuStreamCreate", e))?;
        Ok(GpuLanes { ctx, streams })
    }

    /// The device context.
    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// Number of lanes (streams).
    pub fn lanes(&self) -> usize {
        self.streams.len()
    }

    /// The stream of lane `lane`.
    ///
    /// # Panics
    /// If `lane` is not below [`Self::lanes`] (the runtime validates lanes
    /// before a run).
    pub fn stream(&self, lane: usize) -> &Arc<CudaStream> {
        &self.streams[lane]
    }

    /// The edge "work enqueued so far on `from`" -> "work enqueued next on
    /// `to`": an event recorded on `from`, waited for by `to` (no host wait).
    pub fn edge(&self, from: usize, to: usize) -> Result<()> {
        if from == to {
            return Ok(()); // a stream is in order
        }
        let ev = self.record(from)?;
        self.streams[to]
            .wait(&ev)
            .map_err(|e| driver_error("cuStreamWaitEvent", e))
    }

    /// Blocks the calling (host) thread until the work enqueued so far on
    /// `lane` has finished: the end of a GPU task that a CPU task depends on.
    pub fn complete_on_host(&self, lane: usize) -> Result<()> {
        self.record(lane)?
            .synchronize()
            .map_err(|e| driver_error("cuEventSynchronize", e))
    }

    /// An event recorded on `lane` now (timing disabled: cheaper).
    fn record(&self, lane: usize) -> Result<CudaEvent> {
        self.streams[lane]
            .record_event(None)
            .map_err(|e| driver_error("cuEventRecord", e))
    }

    /// A zeroed device buffer of `len` elements, allocated in `lane`'s order.
    pub fn alloc<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        lane: usize,
        len: usize,
    ) -> Result<DeviceBuffer<T>> {
        let slice = self.streams[lane]
            .alloc_zeros::<T>(len)
            .map_err(|e| out_of_device_memory::<T>(len, e))?;
        Ok(DeviceBuffer {
            slice: Arc::new(Mutex::new(slice)),
        })
    }

    /// A task on stream lane `lane` that copies `host` into `dst` (enqueued;
    /// complete for the lane's later tasks, and for other lanes after an
    /// [`Self::edge`]). Stage `transfer`, so it shows in the trace.
    pub fn upload_task<'a, T: DeviceRepr + Sync>(
        self: &Arc<Self>,
        lane: usize,
        host: &'a [T],
        dst: &DeviceBuffer<T>,
    ) -> Task<'a> {
        let (lanes, dst) = (Arc::clone(self), dst.clone());
        Task::new(
            format!("htod {} B", std::mem::size_of_val(host)),
            move |_| {
                let mut d = dst.slice.lock();
                check_len(host.len(), d.len())?;
                lanes.streams[lane]
                    .memcpy_htod(host, &mut *d)
                    .map_err(|e| driver_error("cuMemcpyHtoDAsync", e))
            },
        )
        .lane(Lane::Stream(lane))
        .stage("transfer")
        .cost(0.0, std::mem::size_of_val(host) as f64)
    }

    /// A task on stream lane `lane` that copies `src` into `host` and waits
    /// for it on the host (so CPU successors may read `host`).
    pub fn download_task<'a, T: DeviceRepr + Send>(
        self: &Arc<Self>,
        lane: usize,
        src: &DeviceBuffer<T>,
        host: &'a mut [T],
    ) -> Task<'a> {
        let (lanes, src) = (Arc::clone(self), src.clone());
        let bytes = std::mem::size_of_val(host);
        Task::new(format!("dtoh {bytes} B"), move |_| {
            let s = src.slice.lock();
            check_len(s.len(), host.len())?;
            lanes.streams[lane]
                .memcpy_dtoh(&*s, host)
                .map_err(|e| driver_error("cuMemcpyDtoHAsync", e))?;
            lanes.complete_on_host(lane)
        })
        .lane(Lane::Stream(lane))
        .stage("transfer")
        .cost(0.0, bytes as f64)
    }
}

/// A device buffer shared by the tasks that use it (matrix, band or
/// reflector storage). The lock only hands the slice to one task body at a
/// time on the host; the device-side order is the task graph's.
#[derive(Debug)]
pub struct DeviceBuffer<T> {
    slice: Arc<Mutex<CudaSlice<T>>>,
}

impl<T> Clone for DeviceBuffer<T> {
    fn clone(&self) -> Self {
        DeviceBuffer {
            slice: Arc::clone(&self.slice),
        }
    }
}

impl<T> DeviceBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.slice.lock().len()
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs `f` with the slice (to pass it to a launch or a cuBLAS call).
    pub fn with<R>(&self, f: impl FnOnce(&mut CudaSlice<T>) -> R) -> R {
        f(&mut self.slice.lock())
    }
}

/// A transfer's host and device lengths must match.
fn check_len(from: usize, to: usize) -> Result<()> {
    if from == to {
        Ok(())
    } else {
        Err(Error::Shape(format!(
            "transfer of {from} elements into a buffer of {to}"
        )))
    }
}

/// A failed device allocation, as the crate's out-of-memory error.
fn out_of_device_memory<T>(len: usize, e: cudarc::driver::DriverError) -> Error {
    let gib = (len * std::mem::size_of::<T>()) as f64 / (1u64 << 30) as f64;
    Error::OutOfMemory {
        needed_gib: gib,
        available_gib: f64::NAN,
        suggestion: format!("the device refused the allocation ({e:?})"),
    }
}
