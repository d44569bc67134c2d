//! The rate of the back-transformations `Q2` and `Q1` against the GEMM rate
//! measured in the same run (issue 60, point 1): GFLOP/s per busy
//! thread-second of the `Q2` engine ([`apply_q2_windowed`] on column blocks,
//! the way the EVD's `q2.cols` tasks call it; variants of group size, column
//! block, row window, bandwidth and `Z`'s column stride), of `Q1` (one compact-WY block per panel,
//! and panels merged into larger blocks by [`Q1Blocks`]), on 1 and 2
//! threads, and of one `Q2` block applied to a window of `Z` that sits in
//! cache (the in-place kernel alone, with `Z`'s column stride packed or that
//! of an `n x n` matrix). Variants are interleaved inside every repetition;
//! the table shows medians.
//!
//! Times are thread CPU times (`CLOCK_THREAD_CPUTIME_ID`, summed over the
//! threads), as is the one-thread GEMM rate they are divided by: the machine
//! is shared, and a thread's CPU time leaves out the time it waits for a
//! core. The two-thread GEMM column is wall time of two concurrent GEMMs.
//!
//! Rates count useful flops only: `4 L` per reflector of length `L` and
//! column of `Z` for `Q2` (`2 n^3` in all), `4 m b` per panel of `m` rows for
//! `Q1`; the zeros a compact-WY block multiplies are not counted.
//! The reflectors are random (orthogonal `H = I - tau v v^T`): the time does
//! not depend on their values.
//!
//! `cargo bench --bench backtransform_rate -- [--sizes 2048,4096] [--reps 3]
//!     [--precision f64|f32] [--cols 1024] [--only q2,q1,kernel]`
//! (`Q2_VARIANTS=<text>` keeps the `Q2` variants whose name contains it).

#[path = "common/mod.rs"]
mod common;

use common::{gemm_rate, list, median};
use eigenflow::linalg::back_transform::chain::DEFAULT_WINDOW_BYTES;
use eigenflow::linalg::back_transform::chain_strip::{self, Isa, StripWork};
use eigenflow::linalg::back_transform::q1::{apply_q1_left, Q1Blocks};
use eigenflow::linalg::back_transform::q2::{apply_q2_windowed, Q2Plan};
use eigenflow::linalg::band::sb2st::{num_sweeps, steps, task_geom, Sb2stReflectors, SlotSink};
use eigenflow::linalg::band::sy2sb::{panel_count, panel_rows, Sy2sbFactors};
use eigenflow::{gallery, Scalar};
use faer::{Mat, MatMut};

/// A small deterministic generator in `[-0.5, 0.5)`.
struct Rnd(u64);

impl Rnd {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64) - 0.5
    }
}

/// Random orthogonal reflectors for every sb2st task of `(n, b)`.
fn q2_reflectors<T: Scalar>(n: usize, b: usize) -> Sb2stReflectors<T> {
    let mut refl = Sb2stReflectors::<T>::new(n, b);
    let mut rnd = Rnd(7);
    for s in 0..num_sweeps(n) {
        for m in 0..steps(n, b, s) {
            let slot = refl.slot_mut(s, m);
            let mut norm2 = 1.0;
            for x in slot[1..].iter_mut() {
                let v = rnd.next();
                norm2 += v * v;
                *x = T::of(v);
            }
            slot[0] = T::of(2.0 / norm2);
        }
    }
    refl
}

/// Useful flops of `Z := Q2 Z` on `cols` columns.
fn q2_flops(n: usize, b: usize, cols: usize) -> f64 {
    let mut f = 0.0;
    for s in 0..num_sweeps(n) {
        for m in 0..steps(n, b, s) {
            f += 4.0 * task_geom(n, b, s, m).len as f64;
        }
    }
    f * cols as f64
}

/// CPU time of the calling thread, in seconds: the machine is shared, and
/// a thread's CPU time does not count the time it waits for a core.
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// GFLOP/s of one single-threaded `n^3` GEMM (faer) by thread CPU time,
/// best of three.
fn gemm_cpu_rate<T: Scalar>(n: usize) -> f64 {
    let a: Mat<T> = gallery::random_uniform(n, n, 1);
    let b: Mat<T> = gallery::random_uniform(n, n, 2);
    let mut c = Mat::<T>::zeros(n, n);
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = thread_cpu();
        faer::linalg::matmul::matmul(
            c.as_mut(),
            faer::Accum::Replace,
            a.as_ref(),
            b.as_ref(),
            T::one(),
            faer::Par::Seq,
        );
        best = best.min(thread_cpu() - t);
    }
    2.0 * (n as f64).powi(3) / best / 1e9
}

/// Runs `f` on each column block of `z` (`kc` columns), the blocks dealt
/// round-robin to `threads` threads; returns the CPU time summed over the
/// threads (busy thread-seconds).
fn on_blocks<T: Scalar>(
    z: &mut Mat<T>,
    kc: usize,
    threads: usize,
    f: &(dyn Fn(MatMut<'_, T>) + Sync),
) -> f64 {
    let ncols = z.ncols();
    let mut parts: Vec<Vec<MatMut<'_, T>>> = (0..threads).map(|_| Vec::new()).collect();
    let mut rest = z.as_mut();
    let mut i = 0;
    while rest.ncols() > 0 {
        let w = kc.min(rest.ncols());
        let (head, tail) = rest.split_at_col_mut(w);
        parts[i % threads].push(head);
        rest = tail;
        i += 1;
    }
    let _ = ncols;
    std::thread::scope(|sc| {
        let hs: Vec<_> = parts
            .into_iter()
            .map(|part| {
                sc.spawn(move || {
                    let t = thread_cpu();
                    for blk in part {
                        f(blk);
                    }
                    thread_cpu() - t
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("no panic")).sum()
    })
}

/// One `Q2` engine configuration.
#[derive(Clone, Copy)]
struct Q2Variant {
    name: &'static str,
    b: usize,
    group: usize,
    kc: usize,
    window: usize,
    /// Extra rows in `Z`'s column stride (`n + pad`; the EVD's is `n`).
    pad: usize,
}

fn q2_table<T: Scalar>(n: usize, cols: usize, reps: usize, gemm1: f64) {
    let w = DEFAULT_WINDOW_BYTES;
    let variants = [
        Q2Variant {
            name: "now: b64 g16 kc512 win512K",
            b: 64,
            group: 16,
            kc: 512,
            window: w,
            pad: 0,
        },
        Q2Variant {
            name: "now, Z stride n+8",
            b: 64,
            group: 16,
            kc: 512,
            window: w,
            pad: 8,
        },
        Q2Variant {
            name: "b64 g16 kc512 canonical",
            b: 64,
            group: 16,
            kc: 512,
            window: 0,
            pad: 0,
        },
        Q2Variant {
            name: "b64 g16 kc512 win1.5M",
            b: 64,
            group: 16,
            kc: 512,
            window: 3 * w,
            pad: 0,
        },
        Q2Variant {
            name: "b64 g32 kc512 win512K",
            b: 64,
            group: 32,
            kc: 512,
            window: w,
            pad: 0,
        },
        Q2Variant {
            name: "b64 g16 kc128 win512K",
            b: 64,
            group: 16,
            kc: 128,
            window: w,
            pad: 0,
        },
        Q2Variant {
            name: "b64 g16 kc64 win512K",
            b: 64,
            group: 16,
            kc: 64,
            window: w,
            pad: 0,
        },
        Q2Variant {
            name: "b64 g32 kc128 win1M",
            b: 64,
            group: 32,
            kc: 128,
            window: 2 * w,
            pad: 0,
        },
        Q2Variant {
            name: "b48 g16 kc512 win512K",
            b: 48,
            group: 16,
            kc: 512,
            window: w,
            pad: 0,
        },
    ];
    let filter = std::env::var("Q2_VARIANTS").unwrap_or_default();
    let variants: Vec<Q2Variant> = variants
        .into_iter()
        .filter(|v| filter.is_empty() || v.name.contains(filter.as_str()))
        .collect();
    let z0: Mat<T> = gallery::random_uniform(n, cols, 3);
    let mut refls: Vec<(usize, Sb2stReflectors<T>)> = Vec::new();
    for v in &variants {
        if !refls.iter().any(|(b, _)| *b == v.b) {
            refls.push((v.b, q2_reflectors::<T>(n, v.b)));
        }
    }
    let plans: Vec<Q2Plan> = variants
        .iter()
        .map(|v| Q2Plan::new(n, v.b, v.group))
        .collect();
    for threads in [1usize, 2] {
        let mut times = vec![Vec::new(); variants.len()];
        for _ in 0..reps {
            for (i, v) in variants.iter().enumerate() {
                let refl = &refls.iter().find(|(b, _)| *b == v.b).unwrap().1;
                let plan = &plans[i];
                let mut z = Mat::<T>::zeros(n + v.pad, cols);
                z.as_mut().subrows_mut(0, n).copy_from(&z0);
                let window = v.window;
                let t = on_blocks(&mut z, v.kc, threads, &|zc| {
                    apply_q2_windowed(refl, plan, window, zc.subrows_mut(0, n))
                });
                times[i].push(t);
            }
        }
        for (i, v) in variants.iter().enumerate() {
            let t = median(times[i].clone());
            let rate = q2_flops(n, v.b, cols) / t / 1e9;
            println!(
                "| {} | {n} | q2 | {} | {threads} | {t:.3} | {rate:.1} | {:.2} |",
                T::NAME,
                v.name,
                rate / gemm1
            );
        }
    }
}

/// Random `a_with_vs` and upper-triangular `T` factors for `Q1` of `(n, b)`.
fn q1_factors<T: Scalar>(n: usize, b: usize) -> (Mat<T>, Sy2sbFactors<T>) {
    let a: Mat<T> = gallery::random_uniform(n, n, 11);
    let mut rnd = Rnd(5);
    let ts = (0..panel_count(n, b))
        .map(|_| {
            Mat::<T>::from_fn(b, b, |i, j| {
                if i <= j {
                    T::of(rnd.next() * 0.01)
                } else {
                    T::zero()
                }
            })
        })
        .collect();
    (a, Sy2sbFactors::new(n, b, ts))
}

fn q1_table<T: Scalar>(n: usize, cols: usize, reps: usize, gemm1: f64) {
    let b = 64;
    let (a, f) = q1_factors::<T>(n, b);
    let flops: f64 = (0..panel_count(n, b))
        .map(|p| 4.0 * (panel_rows(n, b, p).len() * b * cols) as f64)
        .sum();
    let groups = [2usize, 3, 4];
    let merged: Vec<Q1Blocks<T>> = groups
        .iter()
        .map(|&g| Q1Blocks::new(a.as_ref(), &f, g))
        .collect();
    let z0: Mat<T> = gallery::random_uniform(n, cols, 4);
    let kc = 512;
    for threads in [1usize, 2] {
        let mut times = vec![Vec::new(); 1 + groups.len()];
        for _ in 0..reps {
            let mut z = z0.clone();
            times[0].push(on_blocks(&mut z, kc, threads, &|zc| {
                apply_q1_left(a.as_ref(), &f, zc)
            }));
            for (i, m) in merged.iter().enumerate() {
                let mut z = z0.clone();
                times[1 + i].push(on_blocks(&mut z, kc, threads, &|zc| {
                    m.apply_left(a.as_ref(), zc)
                }));
            }
        }
        for (i, ts) in times.into_iter().enumerate() {
            let name = if i == 0 {
                "now: one block per panel (b64) kc512".to_string()
            } else {
                format!("{} panels merged kc512", groups[i - 1])
            };
            let t = median(ts);
            let rate = flops / t / 1e9;
            println!(
                "| {} | {n} | q1 | {name} | {threads} | {t:.3} | {rate:.1} | {:.2} |",
                T::NAME,
                rate / gemm1
            );
        }
    }
}

/// One `Q2` block (`k` reflectors of length `l`, `V` a parallelogram) applied
/// `reps` times to a window of `kc` columns of `Z` held in cache, by the
/// in-place kernel with factors built once: the kernel's own rate.
fn kernel_table<T: Scalar>(reps: usize, gemm1: f64) {
    let Some(isa) = Isa::detect() else {
        println!("(no AVX2/AVX-512 kernel on this CPU)");
        return;
    };
    let l = 64;
    for k in [16usize, 32] {
        for (kc, ld) in [(64usize, 0usize), (512, 0), (512, 4096), (512, 4000)] {
            let nr = k + l - 1;
            let mut rnd = Rnd(9);
            let v = Mat::<T>::from_fn(nr, k, |r, i| match r.checked_sub(i) {
                Some(0) => T::one(),
                Some(d) if d < l => T::of(rnd.next() * 0.1),
                _ => T::zero(),
            });
            let t = Mat::<T>::from_fn(k, k, |i, j| {
                if i <= j {
                    T::of(rnd.next() * 0.01)
                } else {
                    T::zero()
                }
            });
            // `ld` rows: the column stride of `Z` in the EVD (0: `nr`, packed).
            let mut z: Mat<T> = gallery::random_uniform(ld.max(nr), kc, 1);
            let mut work = StripWork::default();
            let inner = (1_000_000_000 / (4 * l * k * kc)).max(1);
            let mut times = Vec::new();
            for _ in 0..reps {
                let s = thread_cpu();
                for _ in 0..inner {
                    chain_strip::apply_block(
                        isa,
                        v.as_ref(),
                        t.as_ref(),
                        l,
                        0..nr,
                        z.as_mut(),
                        &mut work,
                    );
                }
                times.push(thread_cpu() - s);
            }
            let tm = median(times);
            let rate = (4 * l * k * kc * inner) as f64 / tm / 1e9;
            println!(
                "| {} | - | kernel | strip {isa:?} k{k} l{l} kc{kc} ld{} (in cache) | 1 | {tm:.3} | {rate:.1} | {:.2} |",
                T::NAME,
                ld.max(nr),
                rate / gemm1
            );
        }
    }
}

fn run<T: Scalar>(sizes: &[usize], reps: usize, cols: usize, only: &[String]) {
    let gemm1 = gemm_cpu_rate::<T>(2048);
    let gemm2 = gemm_rate::<T>(2, 2048) / 2.0;
    println!(
        "{}: GEMM 2048^3 (faer, best of 3): 1 thread {gemm1:.1} GF/s per CPU second, 2 concurrent {gemm2:.1} GF/s per thread (wall)",
        T::NAME
    );
    println!("| type | n | stage | variant | threads | busy (s) | GF/s per busy thread-second | / GEMM(1) |");
    println!("|---|---|---|---|---|---|---|---|");
    let want = |s: &str| only.is_empty() || only.iter().any(|o| o == s);
    if want("kernel") {
        kernel_table::<T>(reps, gemm1);
    }
    for &n in sizes {
        if want("q2") {
            q2_table::<T>(n, cols, reps, gemm1);
        }
        if want("q1") {
            q1_table::<T>(n, cols, reps, gemm1);
        }
    }
}

fn main() {
    let (mut sizes, mut reps, mut cols, mut f32_, mut only) = (
        vec![2048usize, 4096],
        3usize,
        1024usize,
        false,
        Vec::<String>::new(),
    );
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().expect("a value after the flag");
        match flag.as_str() {
            "--sizes" => sizes = list(&val()),
            "--reps" => reps = val().parse().expect("--reps R"),
            "--cols" => cols = val().parse().expect("--cols C"),
            "--precision" => f32_ = val() == "f32",
            "--only" => only = list(&val()),
            _ => {} // cargo bench passes --bench
        }
    }
    if f32_ {
        run::<f32>(&sizes, reps, cols, &only);
    } else {
        run::<f64>(&sizes, reps, cols, &only);
    }
}
