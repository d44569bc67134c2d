//! The rate of stage 1 of the EVD (sy2sb: dense to band) against the GEMM
//! rate measured in the same run (issue 60, point 2): GFLOP/s per CPU
//! second of each kernel of one panel at its tile shapes (the panel QR, the
//! SYMM row blocks, `form_w`, the SYR2K tiles), next to faer's GEMM on the
//! same `m x n x k` shapes, and of the whole stage-1 graph on 1 and 2
//! threads (process CPU time, so per busy thread-second).
//!
//! Times are CPU times (`CLOCK_THREAD_CPUTIME_ID` for the kernels,
//! `getrusage` for the graph): the machine is shared, and CPU time leaves
//! out the time a thread waits for a core. Rates count the standard flops:
//! `4/3 n^3` for the stage, `2 m^2 b` for a panel's SYMM and for its SYR2K
//! (lower triangle), `2 m b^2` for the panel QR, `4 m b^2` for `form_w`.
//!
//! `cargo bench --bench stage1_rate -- [--sizes 2048,4096] [--tiles 256,512]
//!     [--bandwidths 32,64] [--reps 3] [--precision f64|f32] [--only kernels,graph]`

#[path = "common/mod.rs"]
mod common;

use common::{list, median};
use eigenflow::gallery;
use eigenflow::graph::TaskGraph;
use eigenflow::linalg::band::sy2sb::{form_w, symm_tile_row, syr2k_tile, trailing_blocks};
use eigenflow::linalg::householder::panel_qr::panel_kernel;
use eigenflow::pipeline::evd::sy2sb;
use eigenflow::runtime::Runtime;
use eigenflow::Scalar;
use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par};

/// CPU time of the calling thread, in seconds.
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// CPU time (user + system) of the whole process, in seconds.
fn process_cpu() -> f64 {
    // SAFETY: `rusage` is a plain C struct of integers, for which all zero
    // bytes are a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable out-pointer for the call.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Thread CPU seconds of `f`.
fn cpu_of(f: impl FnOnce()) -> f64 {
    let t = thread_cpu();
    f();
    thread_cpu() - t
}

/// GFLOP/s of faer's single-threaded GEMM `C (m x n) += A (m x k) B (k x n)`
/// by thread CPU time, best of `reps` (repeated until 50 ms per sample).
fn gemm_shape_rate<T: Scalar>(m: usize, n: usize, k: usize, reps: usize) -> f64 {
    let a: Mat<T> = gallery::random_uniform(m, k, 1);
    let b: Mat<T> = gallery::random_uniform(k, n, 2);
    let mut c = Mat::<T>::zeros(m, n);
    let flops = 2.0 * (m * n * k) as f64;
    let inner = ((5e7 / flops) as usize).max(1);
    let mut best = f64::INFINITY;
    for _ in 0..reps.max(1) {
        let s = cpu_of(|| {
            for _ in 0..inner {
                let (a, b) = (a.as_ref(), b.as_ref());
                matmul(c.as_mut(), Accum::Add, a, b, T::one(), Par::Seq);
            }
        });
        best = best.min(s / inner as f64);
    }
    flops / best / 1e9
}

/// Per-kernel CPU seconds of panel 0 of an `n x n` reduction (bandwidth `b`,
/// tile `nb`): [panel QR, SYMM rows, form_w, SYR2K tiles].
fn panel_kernels<T: Scalar>(a0: &Mat<T>, b: usize, nb: usize) -> [f64; 4] {
    let n = a0.nrows();
    let mut a = a0.clone();
    let (r0, m) = (b, n - b);
    let mut t = Mat::<T>::zeros(b, b);
    let mut v = Mat::<T>::zeros(m, b);
    let mut x = Mat::<T>::zeros(m, 3 * b);
    let qr = cpu_of(|| {
        panel_kernel(
            a.as_mut().submatrix_mut(r0, 0, m, b),
            t.as_mut(),
            v.as_mut(),
        )
    });
    let blocks = trailing_blocks(n, b, 0, nb);
    let symm = cpu_of(|| {
        for blk in &blocks {
            let (i0, li) = (blk.start - r0, blk.len());
            symm_tile_row(
                a.as_ref().submatrix(blk.start, r0, li, i0 + li),
                a.as_ref().submatrix(blk.end, blk.start, n - blk.end, li),
                v.as_ref(),
                t.as_ref(),
                x.as_mut().submatrix_mut(i0, b, li, b),
            );
        }
    });
    let fw = cpu_of(|| form_w(x.as_mut(), v.as_ref(), t.as_ref()));
    let syr2k = cpu_of(|| {
        for (jb, cb) in blocks.iter().enumerate() {
            for rb in &blocks[jb..] {
                let (i0, j0) = (rb.start - r0, cb.start - r0);
                syr2k_tile(
                    a.as_mut()
                        .submatrix_mut(rb.start, cb.start, rb.len(), cb.len()),
                    x.as_ref().submatrix(i0, 0, rb.len(), 2 * b),
                    x.as_ref().submatrix(j0, b, cb.len(), 2 * b),
                    rb == cb,
                );
            }
        }
    });
    [qr, symm, fw, syr2k]
}

/// Wall and process CPU seconds of the stage-1 graph alone on `threads`.
fn graph_run<T: Scalar>(a: &Mat<T>, b: usize, nb: usize, rt: &Runtime) -> (f64, f64) {
    let mut g = TaskGraph::new();
    let s1 = sy2sb(&mut g, a.clone(), b, nb).expect("sy2sb");
    let (c, w) = (process_cpu(), std::time::Instant::now());
    rt.run(g).expect("stage 1");
    let out = (w.elapsed().as_secs_f64(), process_cpu() - c);
    drop(s1);
    out
}

fn bench<T: Scalar>(sizes: &[usize], tiles: &[usize], bws: &[usize], reps: usize, only: &str) {
    let gemm = gemm_shape_rate::<T>(1024, 1024, 1024, 3);
    println!("single-thread GEMM 1024^3: {gemm:.1} GFLOP/s (thread CPU time)");
    if only.contains("kernels") {
        println!("\n| n | b | nb | kernel | GFLOP/s | of GEMM | faer GEMM same shape | shape m x n x k |");
        println!("|---|---|---|---|---|---|---|---|");
    }
    for &n in sizes {
        let a: Mat<T> = gallery::random_symmetric_uniform(n, 42);
        for &b in bws {
            for &nb0 in tiles {
                let nb = nb0.max(b).div_ceil(b) * b;
                if only.contains("kernels") {
                    let mut s = [(); 4].map(|_| Vec::new());
                    for _ in 0..reps.max(1) {
                        for (v, t) in s.iter_mut().zip(panel_kernels(&a, b, nb)) {
                            v.push(t);
                        }
                    }
                    let m = (n - b) as f64;
                    let bf = b as f64;
                    let flops = [
                        2.0 * m * bf * bf,
                        2.0 * m * m * bf,
                        4.0 * m * bf * bf,
                        2.0 * m * m * bf,
                    ];
                    let shapes = [
                        (n - b, b, b),
                        (nb, b, n - b),
                        (b, b, n - b),
                        (nb, nb, 2 * b),
                    ];
                    for (k, name) in ["panel QR", "symm rows", "form_w", "syr2k tiles"]
                        .iter()
                        .enumerate()
                    {
                        let r = flops[k] / median(s[k].clone()) / 1e9;
                        let (sm, sn, sk) = shapes[k];
                        let gr = gemm_shape_rate::<T>(sm, sn, sk, 3);
                        println!(
                            "| {n} | {b} | {nb} | {name} | {r:.1} | {:.0}% | {gr:.1} | {sm} x {sn} x {sk} |",
                            100.0 * r / gemm
                        );
                    }
                }
                if only.contains("graph") {
                    for threads in [1usize, 2] {
                        let rt = Runtime::builder().threads(threads).build();
                        let (mut wall, mut cpu) = (Vec::new(), Vec::new());
                        for _ in 0..reps.max(1) {
                            let (w, c) = graph_run(&a, b, nb, &rt);
                            wall.push(w);
                            cpu.push(c);
                        }
                        let flops = 4.0 / 3.0 * (n as f64).powi(3);
                        let (w, c) = (median(wall), median(cpu));
                        println!(
                            "graph n={n} b={b} nb={nb} threads={threads}: wall {w:.3} s, cpu {c:.3} s, {:.1} GFLOP/s per CPU-s ({:.0}% of GEMM)",
                            flops / c / 1e9,
                            100.0 * flops / c / 1e9 / gemm
                        );
                    }
                }
            }
        }
    }
}

fn main() {
    let (mut sizes, mut tiles, mut bws, mut reps) = (
        vec![2048usize, 4096],
        vec![256usize],
        vec![32usize, 64],
        3usize,
    );
    let (mut precision, mut only) = ("f64".to_string(), "kernels,graph".to_string());
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().expect("a value after the flag");
        match flag.as_str() {
            "--sizes" => sizes = list(&val()),
            "--tiles" => tiles = list(&val()),
            "--bandwidths" => bws = list(&val()),
            "--reps" => reps = val().parse().expect("--reps R"),
            "--precision" => precision = val(),
            "--only" => only = val(),
            _ => {} // cargo bench passes --bench
        }
    }
    match precision.as_str() {
        "f32" => bench::<f32>(&sizes, &tiles, &bws, reps, &only),
        _ => bench::<f64>(&sizes, &tiles, &bws, reps, &only),
    }
}
