//! Small and mid orders: eigenflow's one-stage path (on the calling thread,
//! its SYR2K updates, D&C root and `ormtr` split in two tasks on the runtime),
//! its two-stage task graph, and faer's `self_adjoint_eigen` /
//! `self_adjoint_eigenvalues`, timed in the same process on the same matrix,
//! round-robin, median of repeats; each repeat makes one call untimed, then
//! times a batch of calls long enough (about 10 ms) for the clock, sized
//! from the fastest of three first calls. The figures set
//! `EvdOptions::one_stage_below` (`ONE_STAGE_BELOW_*`). `benches/peers_evd.py`
//! prints scipy's `eigh(driver="evd")` (OpenBLAS) in the same format.
//!
//! `cargo bench --bench evd_small -- [--sizes 2,8,32,64,128,256,512,1024]
//!     [--reps 5] [--threads 1,2] [--precisions f64,f32] [--jobs values,vectors]
//!     [--solvers one,two,faer,eigh]`
//!
//! Columns: n, job, precision, threads, then seconds per call (median) of
//! eigenflow one-stage, eigenflow two-stage, faer, the one-call API
//! (`eigenflow::eigh` / `eigvalsh` on the default runtime and automatic
//! options: the per-call cost a user sees, whatever `--threads`), and
//! one-stage / two-stage. `--solvers` times only the columns it names (the
//! others print `-`): at the large orders of the vectors crossover a call
//! takes seconds, and the crossover needs only `one,two`. A call of a second
//! or more is timed once per sample, with no further sizing calls.

use eigenflow::gallery;
use eigenflow::pipeline::{eigh, EvdJob, EvdOptions};
use eigenflow::runtime::Runtime;
use eigenflow::Scalar;
use faer::{Mat, Par, Side};
use std::hint::black_box;
use std::time::Instant;

struct Args {
    sizes: Vec<usize>,
    reps: usize,
    threads: Vec<usize>,
    precisions: Vec<String>,
    jobs: Vec<String>,
    solvers: Vec<String>,
}

fn list<T: std::str::FromStr>(s: &str) -> Vec<T> {
    s.split(',')
        .map(|x| x.trim().parse().ok().expect("a comma-separated list"))
        .collect()
}

fn args() -> Args {
    let mut a = Args {
        sizes: vec![2, 8, 32, 64, 128, 256, 512, 1024],
        reps: 5,
        threads: vec![1, 2],
        precisions: vec!["f64".into(), "f32".into()],
        jobs: vec!["values".into(), "vectors".into()],
        solvers: ["one", "two", "faer", "eigh"].map(String::from).to_vec(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        let mut val = || it.next().expect("flag needs a value");
        match x.as_str() {
            "--sizes" => a.sizes = list(&val()),
            "--reps" => a.reps = val().parse().expect("--reps R"),
            "--threads" => a.threads = list(&val()),
            "--precisions" => a.precisions = list(&val()),
            "--jobs" => a.jobs = list(&val()),
            "--solvers" => a.solvers = list(&val()),
            _ => {} // cargo bench passes --bench
        }
    }
    a
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Seconds per call of `f`: calls are batched so a batch lasts about 10 ms
/// (see [`Timer::new`]), and the median over `reps` batches is taken. The
/// solvers are run round-robin by the caller.
struct Timer {
    batch: usize,
    /// Calls of a second or more: no untimed call before each sample (the
    /// cold caches are a negligible part of such a call).
    long: bool,
    samples: Vec<f64>,
}

impl Timer {
    /// Sizes the batch from the fastest of three calls (the first one pays
    /// for cold caches and first-touch allocations), for about 10 ms.
    fn new(f: &mut dyn FnMut()) -> Self {
        let mut once = f64::INFINITY;
        for _ in 0..3 {
            let t = Instant::now();
            f();
            once = once.min(t.elapsed().as_secs_f64().max(1e-7));
            // A call this long is a batch of one whatever the other two say.
            if once >= 1.0 {
                break;
            }
        }
        Timer {
            batch: ((1e-2 / once).ceil() as usize).clamp(1, 100_000),
            long: once >= 1.0,
            samples: Vec::new(),
        }
    }

    /// One sample: a call untimed (the other columns ran in between and
    /// evicted this one's data; not for long calls), then the batch.
    fn sample(&mut self, f: &mut dyn FnMut()) {
        if !self.long {
            f();
        }
        let t = Instant::now();
        for _ in 0..self.batch {
            f();
        }
        self.samples
            .push(t.elapsed().as_secs_f64() / self.batch as f64);
    }
}

/// Waits long enough for every spinning worker thread to park.
fn settle() {
    std::thread::sleep(std::time::Duration::from_millis(5));
}

/// Seconds per call of the columns named in `solvers` (`NaN` for the others).
fn bench<T: Scalar>(
    n: usize,
    job: EvdJob,
    threads: usize,
    reps: usize,
    solvers: &[String],
) -> [f64; 4] {
    let a: Mat<T> = gallery::random_symmetric_uniform(n, 42);
    let full = Mat::<T>::from_fn(n, n, |i, j| if i >= j { a[(i, j)] } else { a[(j, i)] });
    let rt = Runtime::builder().threads(threads).build();
    faer::set_global_parallelism(if threads == 1 {
        Par::Seq
    } else {
        Par::rayon(threads)
    });
    let mut one = EvdOptions::auto();
    one.one_stage_below = usize::MAX;
    let mut two = EvdOptions::auto();
    two.one_stage_below = 1;
    let mut f1 = || {
        black_box(eigh(a.as_ref(), job, &one, &rt).expect("one-stage"));
    };
    let mut f2 = || {
        black_box(eigh(a.as_ref(), job, &two, &rt).expect("two-stage"));
    };
    let mut f3 = || match job {
        EvdJob::Values => {
            black_box(full.self_adjoint_eigenvalues(Side::Lower).expect("faer"));
        }
        EvdJob::Vectors => {
            black_box(full.self_adjoint_eigen(Side::Lower).expect("faer"));
        }
    };
    let mut f4 = || match job {
        EvdJob::Values => {
            black_box(eigenflow::eigvalsh(a.as_ref()).expect("eigvalsh"));
        }
        EvdJob::Vectors => {
            black_box(eigenflow::eigh(a.as_ref()).expect("eigh"));
        }
    };
    let names = ["one", "two", "faer", "eigh"];
    let mut calls: [&mut dyn FnMut(); 4] = [&mut f1, &mut f2, &mut f3, &mut f4];
    let on: Vec<bool> = names
        .iter()
        .map(|x| solvers.iter().any(|s| s == x))
        .collect();
    let mut timers: Vec<Option<Timer>> = calls
        .iter_mut()
        .zip(&on)
        .map(|(f, &on)| on.then(|| Timer::new(*f)))
        .collect();
    for _ in 0..reps.max(1) {
        // Each sample starts after the previous column's threads (faer's
        // rayon pool, the other runtimes' helpers) have gone idle: spinning
        // threads of one column would otherwise slow the next on a small
        // machine.
        for (timer, f) in timers.iter_mut().zip(calls.iter_mut()) {
            if let Some(timer) = timer {
                settle();
                timer.sample(*f);
            }
        }
    }
    let mut out = [f64::NAN; 4];
    for (o, t) in out.iter_mut().zip(timers) {
        if let Some(t) = t {
            *o = median(t.samples);
        }
    }
    out
}

fn main() {
    let a = args();
    println!(
        "| n | job | precision | threads | eigenflow 1-stage (s) | eigenflow 2-stage (s) | faer (s) | eigenflow::eigh (s) | 1-stage / 2-stage |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for prec in &a.precisions {
        for &threads in &a.threads {
            for job in &a.jobs {
                let j = match job.as_str() {
                    "values" => EvdJob::Values,
                    "vectors" => EvdJob::Vectors,
                    other => panic!("unknown job {other}"),
                };
                for &n in &a.sizes {
                    let [t1, t2, tf, tq] = match prec.as_str() {
                        "f64" => bench::<f64>(n, j, threads, a.reps, &a.solvers),
                        "f32" => bench::<f32>(n, j, threads, a.reps, &a.solvers),
                        other => panic!("unknown precision {other}"),
                    };
                    println!(
                        "| {n} | {job} | {prec} | {threads} | {t1:.3e} | {t2:.3e} | {tf:.3e} | {tq:.3e} | {:.2} |",
                        t1 / t2
                    );
                }
            }
        }
    }
}
