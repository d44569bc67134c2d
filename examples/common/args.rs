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

/// Resolves `--device` before any work: whether the run uses the GPU.
/// `auto` without a usable GPU runs on the CPU, with one line on stderr
/// saying why in a build with the `cuda` feature; `gpu` without one is
/// [`eigenflow::Error::NoGpu`]. A GPU that is found is used when the
/// pipeline has a GPU path (`gpu_path`: the EVD's hybrid path, in a build
/// with the `cuda` feature); otherwise it is named and not used: `auto` says
/// so and runs on the CPU, `gpu` is refused.
pub fn choose_device(device: DeviceArg, pipeline: &str, gpu_path: bool) -> eigenflow::Result<bool> {
    use eigenflow::cuda::{select, Device, Placement};
    let device = match device {
        DeviceArg::Auto => Device::Auto,
        DeviceArg::Cpu => Device::Cpu,
        DeviceArg::Gpu => Device::Gpu,
    };
    match select(device)? {
        Placement::Cpu { fallback: None } => Ok(false),
        Placement::Cpu {
            fallback: Some(why),
        } => {
            eprintln!("device: running on the CPU ({why})");
            Ok(false)
        }
        Placement::Gpu(gpu) if gpu_path => {
            eprintln!(
                "device: {} (stage 1's updates and Q1 on the GPU, the rest on the CPU)",
                gpu.name
            );
            Ok(true)
        }
        Placement::Gpu(gpu) if device == Device::Auto => {
            eprintln!(
                "device: running on the CPU ({} found, but the {pipeline} pipeline has no GPU stages yet)",
                gpu.name
            );
            Ok(false)
        }
        Placement::Gpu(gpu) => Err(eigenflow::Error::InvalidArgument(format!(
            "--device gpu: {} found, but the {pipeline} pipeline has no GPU stages yet; use --device cpu",
            gpu.name
        ))),
    }
}

/// The precisions the examples run (f64, f32): with the `cuda` feature,
/// those cuBLAS and the kernels exist for, so a run can go to the GPU.
#[cfg(feature = "cuda")]
pub trait RunScalar: eigenflow::Scalar + eigenflow::pipeline::device::cuda::CublasScalar {}
/// The precisions the examples run (f64, f32).
#[cfg(not(feature = "cuda"))]
pub trait RunScalar: eigenflow::Scalar {}
impl RunScalar for f64 {}
impl RunScalar for f32 {}

/// Most worker threads accepted: the runtime's own limit, far above any
/// machine this runs on, and low enough that a typo (`--threads 50000`) is an
/// error, not 50000 threads.
pub const MAX_THREADS: usize = eigenflow::runtime::MAX_THREADS;

/// Parses `--threads` by the runtime's one rule and message
/// ([`eigenflow::runtime::check_threads`]: 1 to [`MAX_THREADS`]); negative
/// and huge counts get that message too, not a parse error.
pub fn thread_count(s: &str) -> std::result::Result<usize, String> {
    let t: i128 = s.parse().map_err(|e| format!("{e}"))?;
    eigenflow::runtime::check_threads(t).map_err(|e| e.to_string())
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
/// the documented way (docs/cli.md): 0 on success (with a note when a signal
/// came too late to stop the run); 128 + the signal, with a one-line
/// message, when a signal stopped the run (the previous result in `output`
/// is intact: `body` commits its result through [`Stop::commit`], and an
/// error after a successful commit is not possible); 1 with `error: ...`
/// otherwise.
pub fn run_main(output: Option<&Path>, body: impl FnOnce(&Stop) -> eigenflow::Result<()>) {
    let stop = Stop::install(output).unwrap_or_else(|e| {
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
    if let Some(sig) = stop.signal() {
        eprintln!(
            "{} came after the result was complete: the run finished",
            Stop::name(sig)
        );
    }
}

/// `--distributed`, `--grid` and `--block`: the distributed path (issue 15,
/// docs/DISTRIBUTED.md), flattened into both examples' flags.
#[derive(clap::Args, Debug, Clone)]
pub struct DistArgs {
    /// Run over MPI (launch with `mpirun -np P`; without a launcher, one
    /// rank): the EVD through ELPA2, the SVD through ScaLAPACK. Needs a build
    /// with the `mpi` feature.
    #[arg(long)]
    pub distributed: bool,
    /// With --distributed: the process grid, e.g. `2x3` (P x Q = the rank
    /// count; default: near-square).
    #[arg(long, value_name = "PxQ", value_parser = grid_shape, requires = "distributed")]
    pub grid: Option<(usize, usize)>,
    /// With --distributed: rows and columns of one block of the block-cyclic
    /// layout (default 64).
    #[arg(long, value_name = "NB", value_parser = positive, requires = "distributed")]
    pub block: Option<usize>,
}

/// Parses `--grid PxQ`.
fn grid_shape(s: &str) -> std::result::Result<(usize, usize), String> {
    eigenflow::distributed::layout::parse_grid(s)
}

/// What `--distributed` runs, from the example's own flags.
// Without the `mpi` feature only `unsupported` is read (the run is refused).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub struct DistJob {
    pub svd: bool,
    pub input: Option<std::path::PathBuf>,
    pub m: usize,
    pub n: usize,
    pub seed: u64,
    pub f32: Option<bool>,
    pub vectors: bool,
    pub output: Option<std::path::PathBuf>,
    pub json: bool,
    /// Flags of the single-node run the distributed path does not take, if
    /// any was given (named in the error).
    pub unsupported: Vec<&'static str>,
}

/// Runs `--distributed` and ends the process. A build without the `mpi`
/// feature says which feature it needs and exits 1.
pub fn run_distributed(dist: &DistArgs, job: DistJob) -> ! {
    if !job.unsupported.is_empty() {
        eprintln!(
            "error: invalid argument: {} not available with --distributed",
            job.unsupported.join(", ")
        );
        std::process::exit(1);
    }
    #[cfg(feature = "mpi")]
    {
        use eigenflow::distributed::{run_example, Problem, Request, DEFAULT_BLOCK};
        let req = Request {
            input: job.input,
            m: job.m,
            n: job.n,
            seed: job.seed,
            f32: job.f32,
            vectors: job.vectors,
            output: job.output,
            json: job.json,
            grid: dist.grid,
            block: dist.block.unwrap_or(DEFAULT_BLOCK),
        };
        run_example(if job.svd { Problem::Svd } else { Problem::Evd }, &req)
    }
    #[cfg(not(feature = "mpi"))]
    {
        let _ = (dist, job);
        eprintln!("error: {}", eigenflow::distributed::unavailable());
        std::process::exit(1)
    }
}

/// The input of `--input`, looked at without opening anything but a regular
/// file (its `.npy` header), and the precision of the run: `--precision` if
/// given, else f32 for an f2/f4 input, else f64.
#[allow(clippy::type_complexity)]
pub fn inspect_input(
    input: Option<&Path>,
    precision: Option<Precision>,
) -> eigenflow::Result<(
    Option<(
        eigenflow::results::InputFile,
        eigenflow::matrix::npy::Header,
    )>,
    Precision,
)> {
    use eigenflow::matrix::npy;
    let input = match input {
        Some(path) => {
            let file = eigenflow::results::InputFile::stat(path)?;
            let header = npy::read_header(path)?;
            Some((file, header))
        }
        None => None,
    };
    let precision = precision.unwrap_or(match &input {
        Some((_, h)) if h.dtype != npy::Dtype::F64 => Precision::F32,
        _ => Precision::F64,
    });
    Ok((input, precision))
}

/// The largest order below `limit`, rounded down to a multiple of 1024, for
/// which `fits(n)` holds (`fits` must be monotone: true up to some n).
pub fn largest_fitting(limit: usize, fits: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0usize, limit);
    while lo + 1 < hi {
        let mid = (lo + hi) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo / 1024 * 1024
}

/// Checks that `problem` fits before anything is allocated: `run` is the
/// pipeline's memory figure and `copy` that of the input copy `--check` keeps
/// (`None` when a figure overflows `u64`), against `limit` (`--memory-limit`)
/// or, without one, the machine's available memory. Returns the bytes needed,
/// or an error that says what fits (`suggestion` of the bytes available).
pub fn check_run_memory(
    problem: &str,
    run: Option<u64>,
    copy: Option<u64>,
    limit: Option<u64>,
    suggestion: impl Fn(u64) -> String,
) -> eigenflow::Result<u64> {
    use eigenflow::sysinfo;
    let Some(needed) = run.zip(copy).and_then(|(a, b)| a.checked_add(b)) else {
        let hint = limit
            .or_else(sysinfo::available_memory_bytes)
            .map(|avail| format!("; {}", suggestion(avail)))
            .unwrap_or_default();
        return Err(eigenflow::Error::InvalidArgument(format!(
            "{problem} is too large: the memory it needs does not fit in 64 bits{hint}"
        )));
    };
    match limit {
        Some(limit) => sysinfo::check_fits_in(needed, limit, problem, suggestion)?,
        None => sysinfo::check_fits(needed, problem, suggestion)?,
    }
    Ok(needed)
}

pub fn check_copy_bytes<T>(m: usize, n: usize, check: bool) -> Option<u64> {
    if !check {
        return Some(0);
    }
    (m as u64)
        .checked_mul(n as u64)
        .and_then(|w| w.checked_mul(std::mem::size_of::<T>() as u64))
}
