//! Where a computation runs: device selection, and (with the `cuda` feature)
//! the CUDA device context, stream lanes, device buffers and run-time compiled
//! kernels (issue 13).
//!
//! This module is in every build so that a CPU-only build answers a GPU
//! request the same way as a GPU build on a machine without a driver: with
//! [`Error::NoGpu`], which says what was looked for. Everything that touches
//! cudarc is behind the `cuda` feature.
//!
//! The module sits below the runtime (which opens the lanes) and knows no
//! kernel or pipeline stage: the cuBLAS device and the launchers of the
//! stages' kernels live with the stages, in `pipeline::device::cuda`.
//!
//! # Why every first use is guarded
//! cudarc is built with dynamic loading (the crate builds without a CUDA
//! toolkit), and it *panics* at the first driver or NVRTC call when the
//! library is not on the loader path. So every entry point here calls
//! cudarc's `is_culib_present()` for the library it is about to use first,
//! and turns its absence into [`Error::NoGpu`].
//!
//! # What has run where
//! Without a GPU (this project's machines and CI) only the no-driver paths,
//! the selection logic and the NVRTC compilation of `kernels/*.cu` run; the
//! context, stream, event, buffer and launch code is compiled but has never
//! executed. The README's "Running on a GPU" section says how to check it.

#[cfg(feature = "cuda")]
mod context;
#[cfg(feature = "cuda")]
mod kernels;
#[cfg(feature = "cuda")]
mod lanes;

#[cfg(feature = "cuda")]
pub(crate) use context::{driver_error, looked_for};
#[cfg(feature = "cuda")]
pub use context::{driver_library_names, nvrtc_library_names, GpuContext};
/// cudarc, re-exported for task bodies that launch kernels on a lane's stream.
#[cfg(feature = "cuda")]
pub use cudarc;
#[cfg(feature = "cuda")]
pub use kernels::{compile, nvrtc_version, Compiled, KERNEL_FILES};
#[cfg(feature = "cuda")]
pub use lanes::{DeviceBuffer, GpuLanes};

use crate::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// Which device to run on (the examples' `--device`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Device {
    /// A GPU if one is usable, else the CPU (saying why, see [`Placement`]).
    #[default]
    Auto,
    /// The CPU, without looking for a GPU.
    Cpu,
    /// A GPU, or [`Error::NoGpu`].
    Gpu,
}

impl FromStr for Device {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(Device::Auto),
            "cpu" => Ok(Device::Cpu),
            "gpu" => Ok(Device::Gpu),
            _ => Err(Error::InvalidArgument(format!(
                "device `{s}`: expected auto, cpu or gpu"
            ))),
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Device::Auto => "auto",
            Device::Cpu => "cpu",
            Device::Gpu => "gpu",
        })
    }
}

/// A usable GPU, as the driver describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Device name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Compute capability (major, minor), e.g. (9, 0).
    pub compute_capability: (i32, i32),
    /// Free device memory in bytes when it was probed (what a memory check
    /// on the GPU path compares against).
    pub free_bytes: usize,
    /// Total device memory in bytes.
    pub total_bytes: usize,
}

/// Where [`select`] placed a computation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// On the CPU; `fallback` says why when a GPU was considered
    /// ([`Device::Auto`] in a build with the `cuda` feature) and not usable
    /// (the reason of [`Error::NoGpu`]), `None` otherwise.
    Cpu {
        /// Why no GPU is used, as one line.
        fallback: Option<String>,
    },
    /// On this GPU.
    Gpu(GpuInfo),
}

/// Looks for GPU `ordinal`: its description, or [`Error::NoGpu`] saying what
/// was looked for (the `cuda` feature; the driver library's names; a device).
/// Never panics, with or without a driver.
pub fn probe(ordinal: usize) -> Result<GpuInfo> {
    #[cfg(feature = "cuda")]
    {
        context::probe(ordinal)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = ordinal;
        Err(no_feature())
    }
}

/// Resolves `device` to a placement: [`Device::Cpu`] never looks for a GPU;
/// [`Device::Gpu`] returns [`probe`]'s error when no GPU is usable;
/// [`Device::Auto`] falls back to the CPU with the reason, except in a build
/// without the `cuda` feature, where no GPU is ever considered: there it is
/// [`Device::Cpu`] (no fallback line for every CPU-only run).
pub fn select(device: Device) -> Result<Placement> {
    match device {
        Device::Cpu => Ok(Placement::Cpu { fallback: None }),
        Device::Auto if !cfg!(feature = "cuda") => Ok(Placement::Cpu { fallback: None }),
        Device::Gpu => probe(0).map(Placement::Gpu),
        Device::Auto => Ok(match probe(0) {
            Ok(info) => Placement::Gpu(info),
            // One line for the user: the reason, without the list of names.
            Err(Error::NoGpu { reason, .. }) => Placement::Cpu {
                fallback: Some(reason),
            },
            Err(e) => return Err(e),
        }),
    }
}

/// [`Error::NoGpu`] of a build without the `cuda` feature.
#[cfg(not(feature = "cuda"))]
pub(crate) fn no_feature() -> Error {
    Error::NoGpu {
        looked_for: "the `cuda` cargo feature".into(),
        reason: "this build of eigenflow has no GPU support (rebuild with `--features cuda`)"
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_round_trip() {
        for d in [Device::Auto, Device::Cpu, Device::Gpu] {
            assert_eq!(d.to_string().parse::<Device>().unwrap(), d);
        }
        assert!(matches!(
            "tpu".parse::<Device>(),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn cpu_never_looks_for_a_gpu() {
        assert_eq!(
            select(Device::Cpu).unwrap(),
            Placement::Cpu { fallback: None }
        );
    }

    /// `gpu` and `auto` agree with `probe`: an error and a CPU fallback with
    /// the same message when there is no GPU (this machine; no message in a
    /// CPU-only build), the same GPU otherwise.
    #[test]
    fn gpu_and_auto_agree_with_probe() {
        match probe(0) {
            Err(e) => {
                let Error::NoGpu { reason, looked_for } = &e else {
                    panic!("probe failed with another error: {e}")
                };
                assert!(!looked_for.is_empty() && !reason.is_empty());
                let gpu = select(Device::Gpu).unwrap_err();
                assert_eq!(gpu.to_string(), e.to_string());
                // A CPU-only build never considers a GPU: no fallback line.
                let fallback = cfg!(feature = "cuda").then(|| reason.clone());
                assert_eq!(select(Device::Auto).unwrap(), Placement::Cpu { fallback });
            }
            Ok(info) => {
                // Free memory changes between probes: compare the device.
                for d in [Device::Gpu, Device::Auto] {
                    match select(d).unwrap() {
                        Placement::Gpu(g) => assert_eq!(
                            (g.ordinal, g.name, g.total_bytes),
                            (info.ordinal, info.name.clone(), info.total_bytes)
                        ),
                        other => panic!("{d}: {other:?} although {info:?} is usable"),
                    }
                }
            }
        }
    }
}
