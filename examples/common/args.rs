//! Command-line pieces the `evd` and `svd` examples share: the precision
//! and device flags, the parsers of `--threads` and of the tuning options, and how a run
//! that failed or was stopped ends the process.

use crate::watch::Stop;
use clap::ValueEnum;
use std::path::Path;

/// `--precision`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Precision {
    F64,
    F32,
}

/// `--device`: where to run (see [`eigenflow::cuda::Device`]).
#[derive(Clone, Copy, Debug, Default, ValueEnum)]
pub enum DeviceArg {
    /// A GPU if usable, else the CPU (saying so in one line on stderr when
    /// the build has the `cuda` feature; a CPU-only build just runs).
    #[default]
    Auto,
    /// The CPU.
    Cpu,
    /// A GPU; exits non-zero, saying what was looked for, without one.
    Gpu,
}

/// Resolves `--device` before any work. `auto` without a usable GPU runs on
/// the CPU, with one line on stderr saying why in a build with the `cuda`
/// feature; `gpu` without one is
/// [`eigenflow::Error::NoGpu`]. The pipelines have no GPU stages yet (issue
/// 13), so a GPU that is found is named and not used: `auto` says so and runs
/// on the CPU, `gpu` is refused.
pub fn choose_device(device: DeviceArg, pipeline: &str) -> eigenflow::Result<()> {
    use eigenflow::cuda::{select, Device, Placement};
    let device = match device {
        DeviceArg::Auto => Device::Auto,
        DeviceArg::Cpu => Device::Cpu,
        DeviceArg::Gpu => Device::Gpu,
    };
    match select(device)? {
        Placement::Cpu { fallback: None } => Ok(()),
        Placement::Cpu {
            fallback: Some(why),
        } => {
            eprintln!("device: running on the CPU ({why})");
            Ok(())
        }
        Placement::Gpu(gpu) if device == Device::Auto => {
            eprintln!(
                "device: running on the CPU ({} found, but the {pipeline} pipeline has no GPU stages yet)",
                gpu.name
            );
            Ok(())
        }
        Placement::Gpu(gpu) => Err(eigenflow::Error::InvalidArgument(format!(
            "--device gpu: {} found, but the {pipeline} pipeline has no GPU stages yet; use --device cpu",
            gpu.name
        ))),
    }
}

/// Most worker threads accepted: far above any machine this runs on, and low
/// enough that a typo (`--threads 50000`) is an error, not 50000 threads.
pub const MAX_THREADS: usize = 1024;

/// Parses `--threads`: 1 to [`MAX_THREADS`].
pub fn thread_count(s: &str) -> std::result::Result<usize, String> {
    let t: usize = s.parse().map_err(|e| format!("{e}"))?;
    if (1..=MAX_THREADS).contains(&t) {
        Ok(t)
    } else {
        Err(format!("must be between 1 and {MAX_THREADS}"))
    }
}

/// Parses a tuning option: at least 1 (omit the option for the default).
pub fn positive(s: &str) -> std::result::Result<usize, String> {
    let v: usize = s.parse().map_err(|e| format!("{e}"))?;
    if v == 0 {
        Err("must be at least 1 (omit the option for the default)".to_string())
    } else {
        Ok(v)
    }
}

/// Installs the SIGINT/SIGTERM handlers, runs `body`, and ends the process
/// the documented way (docs/cli.md): 0 on success; 128 + the signal, with a
/// one-line message, when a signal stopped the run (the previous result in
/// `output` is intact); 1 with `error: ...` otherwise.
pub fn run_main(output: Option<&Path>, body: impl FnOnce(&Stop) -> eigenflow::Result<()>) {
    let stop = Stop::install().unwrap_or_else(|e| {
        eprintln!("error: cannot install the SIGINT/SIGTERM handlers: {e}");
        std::process::exit(1);
    });
    if let Err(e) = body(&stop) {
        if let Some(sig) = stop.signal() {
            let kept = match output {
                Some(dir) => format!("; the previous result in {} is intact", dir.display()),
                None => String::new(),
            };
            eprintln!("stopped by {}: nothing was written{kept}", Stop::name(sig));
            std::process::exit(128 + sig);
        }
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
