//! The CUDA device context, opened only after checking that the driver
//! library is present (cudarc panics at first use otherwise; anchors.md D.3).

use super::GpuInfo;
use crate::{Error, Result};
use cudarc::driver::{CudaContext, DriverError};
use std::sync::Arc;

/// The shared-library names cudarc tries for the CUDA driver (`libcuda`), in
/// its order, for the message of [`Error::NoGpu`].
pub fn driver_library_names() -> Vec<String> {
    names(&["cuda"])
}

/// The shared-library names cudarc tries for NVRTC (`libnvrtc`).
pub fn nvrtc_library_names() -> Vec<String> {
    names(&["nvrtc"])
}

/// Candidates of every library in `libs`, without repeats, in cudarc's order.
fn names(libs: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for lib in libs {
        for c in cudarc::get_lib_name_candidates(lib) {
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// `names` for a message: the list, and where the loader looks.
pub(crate) fn looked_for(names: &[String]) -> String {
    format!(
        "{} on the dynamic loader's path (LD_LIBRARY_PATH, then the system's)",
        names.join(", ")
    )
}

/// Whether the driver library loads. Safe to call without one: cudarc's
/// presence check only tries to open it.
pub(crate) fn driver_present() -> bool {
    // SAFETY: `is_culib_present` only attempts to dlopen the candidate names
    // and drops the handle; it calls no CUDA function.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// [`Error::NoGpu`] for a driver error met while looking for a device.
pub(crate) fn driver_error(what: &str, e: DriverError) -> Error {
    Error::NoGpu {
        looked_for: format!("a CUDA device through the driver ({what})"),
        reason: format!("the CUDA driver returned {e:?}"),
    }
}

/// The driver library, checked before any driver call.
fn require_driver() -> Result<()> {
    if driver_present() {
        Ok(())
    } else {
        Err(Error::NoGpu {
            looked_for: looked_for(&driver_library_names()),
            reason: "the CUDA driver library is not installed or not on the loader path".into(),
        })
    }
}

/// See [`super::probe`].
pub(crate) fn probe(ordinal: usize) -> Result<GpuInfo> {
    GpuContext::open(ordinal).map(|c| c.info().clone())
}

/// An open CUDA context on one device (cudarc's primary context), with the
/// device's description.
#[derive(Clone, Debug)]
pub struct GpuContext {
    ctx: Arc<CudaContext>,
    info: GpuInfo,
}

impl GpuContext {
    /// Opens device `ordinal`. [`Error::NoGpu`] when the driver library is
    /// missing (checked first, so this never panics), when the driver reports
    /// no device or fewer than `ordinal + 1`, or when it fails to initialise.
    pub fn open(ordinal: usize) -> Result<Self> {
        require_driver()?;
        let count = CudaContext::device_count().map_err(|e| driver_error("cuDeviceGetCount", e))?;
        if ordinal >= count.max(0) as usize {
            return Err(Error::NoGpu {
                looked_for: format!("CUDA device {ordinal}"),
                reason: format!("the driver reports {count} device(s)"),
            });
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| driver_error("cuCtx", e))?;
        let name = ctx.name().map_err(|e| driver_error("cuDeviceGetName", e))?;
        let compute_capability = ctx
            .compute_capability()
            .map_err(|e| driver_error("cuDeviceGetAttribute", e))?;
        let (free_bytes, total_bytes) = ctx
            .mem_get_info()
            .map_err(|e| driver_error("cuMemGetInfo", e))?;
        let info = GpuInfo {
            ordinal,
            name,
            compute_capability,
            free_bytes,
            total_bytes,
        };
        Ok(GpuContext { ctx, info })
    }

    /// The device, as it was when opened.
    pub fn info(&self) -> &GpuInfo {
        &self.info
    }

    /// Free device memory in bytes now (for the memory check of a GPU run).
    pub fn free_bytes(&self) -> Result<usize> {
        self.ctx
            .mem_get_info()
            .map(|(free, _)| free)
            .map_err(|e| driver_error("cuMemGetInfo", e))
    }

    /// The `sm_XY` architecture name NVRTC should target on this device.
    pub fn arch(&self) -> String {
        let (major, minor) = self.info.compute_capability;
        format!("sm_{major}{minor}")
    }

    /// cudarc's context, for launches and cuBLAS handles.
    pub fn cuda(&self) -> &Arc<CudaContext> {
        &self.ctx
    }
}
