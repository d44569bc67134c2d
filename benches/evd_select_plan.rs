//! The plan of a selection (issue 66, point 5): `k` eigenpairs of a random
//! symmetric matrix (`Selection::Largest(k)`, f64) by the one-stage path
//! (`sytrd`, bisection and inverse iteration, `dormtr` on `k` columns) and by
//! the two-stage graph (`sy2sb`, `sb2st`, the same selection, `Q2` and `Q1` on
//! `k` columns), alternated in the same process, values only and with
//! vectors. Prints the medians and `one-stage / two-stage` (above 1 the
//! two-stage graph is faster), and what the automatic plan picks.
//!
//! `cargo bench --bench evd_select_plan -- [--sizes 500,1000,2000,3000,4096]
//!     [--ks 1,10,100,n/10,n/2] [--threads 2] [--reps 3] [--f32] [--bandwidth B]`

#[path = "common/mod.rs"]
mod common;

use common::{list, median};
use eigenflow::gallery;
use eigenflow::pipeline::evd::Selection;
use eigenflow::pipeline::{eigh, EvdJob, EvdOptions};
use eigenflow::runtime::Runtime;
use eigenflow::Scalar;
use faer::Mat;
use std::time::Instant;

/// A `k` of the command line: a number, `n/10` or `n/2`.
fn k_for(spec: &str, n: usize) -> usize {
    match spec.strip_prefix("n/") {
        Some(d) => n / d.parse::<usize>().expect("n/D"),
        None => spec.parse().expect("k"),
    }
    .clamp(1, n)
}

/// Seconds of one call of `eigh` with `k` largest pairs, the path forced by
/// `one_stage_below` (`usize::MAX`: one-stage; `1`: two-stage).
fn time_once<T: Scalar>(a: &Mat<T>, k: usize, job: EvdJob, below: usize, rt: &Runtime) -> f64 {
    let mut o = EvdOptions::auto();
    o.one_stage_below = below;
    o.bandwidth = bandwidth();
    o.selection = Some(Selection::Largest(k));
    let t = Instant::now();
    let e = eigh(a.as_ref(), job, &o, rt).expect("selection");
    let s = t.elapsed().as_secs_f64();
    drop(e);
    s
}

/// The `--bandwidth` of the command line (0: the automatic one).
fn bandwidth() -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--bandwidth")
        .map_or(0, |i| args[i + 1].parse().expect("--bandwidth B"))
}

/// One row per (n, k, job): the medians of the two paths, alternated.
fn sweep<T: Scalar>(sizes: &[usize], ks: &[String], reps: usize, rt: &Runtime) {
    println!("| n | k | job | one-stage s | two-stage s | one / two | auto picks |");
    println!("|---|---|---|---|---|---|---|");
    for &n in sizes {
        let a: Mat<T> = gallery::random_symmetric_uniform(n, 42);
        for spec in ks {
            let k = k_for(spec, n);
            for job in [EvdJob::Values, EvdJob::Vectors] {
                let (mut one, mut two) = (Vec::new(), Vec::new());
                for r in 0..reps {
                    // Alternate which path goes first, so that neither
                    // always runs on a warmer (or more loaded) machine.
                    if r % 2 == 0 {
                        one.push(time_once(&a, k, job, usize::MAX, rt));
                        two.push(time_once(&a, k, job, 1, rt));
                    } else {
                        two.push(time_once(&a, k, job, 1, rt));
                        one.push(time_once(&a, k, job, usize::MAX, rt));
                    }
                }
                let (o, t) = (median(one), median(two));
                let mut auto = EvdOptions::auto();
                auto.selection = Some(Selection::Largest(k));
                let pick = if auto.one_stage_for::<T>(n, job) {
                    "one"
                } else {
                    "two"
                };
                println!(
                    "| {n} | {k} | {job:?} | {o:.3} | {t:.3} | {:.2} | {pick} |",
                    o / t
                );
            }
        }
    }
}

fn main() {
    let (mut sizes, mut ks, mut threads, mut reps, mut f32) = (
        vec![500usize, 1000, 2000, 3000, 4096],
        ["1", "10", "100", "n/10", "n/2"].map(String::from).to_vec(),
        2usize,
        3usize,
        false,
    );
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().expect("value");
        match a.as_str() {
            "--sizes" => sizes = list(&val()),
            "--ks" => ks = val().split(',').map(String::from).collect(),
            "--threads" => threads = val().parse().expect("--threads T"),
            "--reps" => reps = val().parse().expect("--reps R"),
            "--f32" => f32 = true,
            "--bandwidth" => {
                val(); // read by bandwidth()
            }
            _ => {} // cargo bench passes --bench
        }
    }
    let rt = Runtime::builder().threads(threads).build();
    let precision = if f32 { "f32" } else { "f64" };
    println!("{precision}, {threads} threads, median of {reps}, Selection::Largest(k)");
    if f32 {
        sweep::<f32>(&sizes, &ks, reps, &rt);
    } else {
        sweep::<f64>(&sizes, &ks, reps, &rt);
    }
}
