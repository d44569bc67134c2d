//! The out-of-core eigendecomposition with vectors (issue 21) against the
//! in-memory graph on the same matrix, in one process: time of each, their
//! ratio and multiples of `T_gemm` (GEMM rate measured in the same run), the
//! peak resident memory of each measured by the OS (`VmHWM`, reset between
//! the runs through `/proc/self/clear_refs`), the bytes the out-of-core run
//! read and wrote (its own count, and the storage I/O `/proc/self/io`
//! reports), and whether the results are bitwise the same.
//!
//! `cargo bench --bench evd_ooc -- [--n 16384] [--memory-limit 3GiB]
//!     [--threads 2] [--precision f64|f32] [--scratch DIR] [--json]`
//!
//! The out-of-core run goes first (its peak is the figure that matters), then
//! the in-memory one, whose peak is several times the limit; run it where the
//! in-memory graph fits (about 3.1 n^2 words: 7 GiB at n = 16384 in f64).

mod common;

use common::{gemm_rate, t_gemm};
use eigenflow::gallery;
use eigenflow::matrix::npy::ColumnFile;
use eigenflow::matrix::scratch::IoStats;
use eigenflow::pipeline::evd::out_of_core::{
    eigh_out_of_core, plan, DiskSpace, MemoryPlan, OutOfCore,
};
use eigenflow::pipeline::{evd_graph_owned, EvdJob, EvdOptions};
use eigenflow::runtime::Runtime;
use eigenflow::{sysinfo, Scalar};
use faer::Mat;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

struct Args {
    n: usize,
    limit: u64,
    threads: usize,
    f32: bool,
    scratch: PathBuf,
    json: bool,
}

fn args() -> Args {
    let mut a = Args {
        n: 16384,
        limit: 3 << 30,
        threads: sysinfo::default_threads(),
        f32: false,
        scratch: std::env::temp_dir(),
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        let mut val = || it.next().expect("flag needs a value");
        match x.as_str() {
            "--n" => a.n = val().parse().expect("--n N"),
            "--memory-limit" => a.limit = sysinfo::parse_bytes(&val()).expect("--memory-limit"),
            "--threads" => a.threads = val().parse().expect("--threads T"),
            "--precision" => a.f32 = val() == "f32",
            "--scratch" => a.scratch = PathBuf::from(val()),
            "--json" => a.json = true,
            _ => {} // cargo bench passes --bench
        }
    }
    a
}

/// Resets the kernel's high-water mark of this process's resident memory.
fn reset_peak() {
    if std::fs::write("/proc/self/clear_refs", "5").is_err() {
        eprintln!("note: cannot reset VmHWM; peaks include earlier runs");
    }
}

/// `read_bytes` and `write_bytes` of `/proc/self/io` (what reached storage).
fn storage_io() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k)?.trim().parse().ok())
            .unwrap_or(0)
    };
    (field("read_bytes:"), field("write_bytes:"))
}

fn run<T: Scalar>(a: &Args) {
    let n = a.n;
    let opts = EvdOptions::default();
    let gemm = gemm_rate::<T>(a.threads, 2048.min(n.max(256)));
    let tg = t_gemm(n, gemm);
    let baseline = sysinfo::rss_bytes().unwrap_or(0);
    let disk = DiskSpace {
        scratch_free: sysinfo::disk_available_bytes(&a.scratch).expect("scratch directory"),
        output_free: None,
        output_bytes: (n * n * std::mem::size_of::<T>()) as u64,
    };
    let p = match plan::<T>(n, &opts, a.threads, a.limit, baseline, 0, disk).expect("a plan") {
        MemoryPlan::OutOfCore(p) => p,
        MemoryPlan::InMemory(b) => {
            panic!("n = {n} fits in memory under the limit ({b} bytes): lower --memory-limit")
        }
    };
    eprintln!("# {}", p.describe());
    let ooc = OutOfCore {
        memory_limit: a.limit,
        scratch: a.scratch.clone(),
        io_lane: 0,
    };
    let matrix = || gallery::random_symmetric_uniform::<T>(n, 42);

    // Out of core.
    let file = Arc::new(
        ColumnFile::<T>::anonymous(&a.scratch, n, n, Arc::new(IoStats::default())).expect("file"),
    );
    let rt = Runtime::builder().threads(a.threads).streams(1).build();
    let a_ooc = matrix();
    reset_peak();
    let io0 = storage_io();
    let t = Instant::now();
    let res = eigh_out_of_core(a_ooc, &opts, &p, &ooc, file.clone(), &rt).expect("out of core");
    let t_ooc = t.elapsed().as_secs_f64();
    let io1 = storage_io();
    let peak_ooc = sysinfo::peak_rss_bytes().unwrap_or(0);
    drop(rt);

    // In memory.
    let rt = Runtime::builder().threads(a.threads).build();
    let a_mem = matrix();
    reset_peak();
    let t = Instant::now();
    let (graph, results) = evd_graph_owned(a_mem, EvdJob::Vectors, &opts)
        .expect("in memory")
        .into_parts();
    rt.run(graph).expect("in memory");
    let t_mem = t.elapsed().as_secs_f64();
    let peak_mem = sysinfo::peak_rss_bytes().unwrap_or(0);
    let (values, vectors) = results.into_results().expect("results");
    let vectors = vectors.expect("vectors");

    // Bitwise, column block by column block.
    let bits = |x: T| x.f64().to_bits();
    let mut same = values
        .iter()
        .zip(&res.values)
        .all(|(x, y)| bits(*x) == bits(*y));
    let mut block = Mat::<T>::zeros(n, 256.min(n));
    for j0 in (0..n).step_by(256) {
        let w = 256.min(n - j0);
        file.read_columns(j0, block.as_mut().subcols_mut(0, w))
            .expect("read back");
        same &= (0..w).all(|j| (0..n).all(|i| bits(block[(i, j)]) == bits(vectors[(i, j0 + j)])));
    }
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "n": n, "precision": T::NAME, "threads": a.threads, "gemm_gflops": gemm,
                "t_gemm": tg, "memory_limit_bytes": a.limit, "plan_resident_bytes": p.resident_bytes(),
                "pass_columns": p.wide, "ooc_seconds": t_ooc, "in_memory_seconds": t_mem,
                "ratio": t_ooc / t_mem, "ooc_peak_rss_bytes": peak_ooc,
                "in_memory_peak_rss_bytes": peak_mem, "read_bytes": res.read_bytes,
                "written_bytes": res.written_bytes, "storage_read_bytes": io1.0 - io0.0,
                "storage_written_bytes": io1.1 - io0.1, "bitwise": same,
            })
        );
    } else {
        println!(
            "n = {n} {} on {} thread(s), GEMM {gemm:.1} GFLOP/s (T_gemm {tg:.2} s), limit {:.2} GiB",
            T::NAME,
            a.threads,
            gib(a.limit)
        );
        println!(
            "out of core: {t_ooc:.1} s ({:.2} T_gemm), peak RSS {:.2} GiB, {} pass(es) of {} columns",
            t_ooc / tg,
            gib(peak_ooc),
            n.div_ceil(p.wide),
            p.wide
        );
        println!(
            "in memory:   {t_mem:.1} s ({:.2} T_gemm), peak RSS {:.2} GiB",
            t_mem / tg,
            gib(peak_mem)
        );
        println!(
            "ratio {:.3}; read {:.2} GiB, written {:.2} GiB (storage: {:.2} GiB read, {:.2} GiB written); bitwise the same: {same}",
            t_ooc / t_mem,
            gib(res.read_bytes),
            gib(res.written_bytes),
            gib(io1.0 - io0.0),
            gib(io1.1 - io0.1)
        );
    }
}

fn main() {
    let a = args();
    if a.f32 {
        run::<f32>(&a);
    } else {
        run::<f64>(&a);
    }
}
