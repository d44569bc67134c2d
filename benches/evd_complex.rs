//! The complex Hermitian EVD (issue 62): eigenflow's graph
//! (`pipeline::hermitian::eigh`: `zhetrd`, the real `dstedc`/`dsterf`,
//! `zunmtr` by column blocks) against faer's complex `self_adjoint_eigen` /
//! `self_adjoint_eigenvalues` (`Par::rayon(threads)`), in one process on the
//! same random Hermitian matrix with random-phase entries, alternated
//! (eigenflow, faer, eigenflow, ...), `--reps` each; prints the median and
//! best seconds of each and eigenflow's per-stage task time (the median run's).
//!
//! `cargo bench --bench evd_complex -- [--sizes 1024,2048] [--reps 3]
//!     [--threads 2] [--precisions c64,c32] [--jobs values,vectors]`

use eigenflow::faer::{c32, c64};
use eigenflow::gallery;
use eigenflow::pipeline::hermitian::eigh;
use eigenflow::pipeline::{EvdJob, EvdOptions};
use eigenflow::runtime::Runtime;
use eigenflow::ComplexScalar;
use faer::{Par, Side};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

fn list<T: std::str::FromStr>(s: &str) -> Vec<T> {
    s.split(',')
        .map(|x| x.trim().parse().ok().expect("a comma-separated list"))
        .collect()
}

struct Args {
    sizes: Vec<usize>,
    reps: usize,
    threads: usize,
    precisions: Vec<String>,
    jobs: Vec<String>,
}

fn args() -> Args {
    let mut a = Args {
        sizes: vec![1024, 2048],
        reps: 3,
        threads: 2,
        precisions: vec!["c64".into()],
        jobs: vec!["values".into(), "vectors".into()],
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        let mut val = || it.next().expect("flag needs a value");
        match x.as_str() {
            "--sizes" => a.sizes = list(&val()),
            "--reps" => a.reps = val().parse().expect("--reps R"),
            "--threads" => a.threads = val().parse().expect("--threads T"),
            "--precisions" => a.precisions = list(&val()),
            "--jobs" => a.jobs = list(&val()),
            _ => {}
        }
    }
    a
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn best(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn bench<C: ComplexScalar>(name: &str, n: usize, job: EvdJob, a: &Args) {
    let m = gallery::random_hermitian::<C>(n, 42);
    let rt = Runtime::builder().threads(a.threads).build();
    let opts = EvdOptions::default();
    let (mut ours, mut faer_t) = (Vec::new(), Vec::new());
    let mut stages: Vec<BTreeMap<String, f64>> = Vec::new();
    for _ in 0..a.reps {
        let t = Instant::now();
        let r = eigh(m.as_ref(), job, &opts, &rt).expect("eigh");
        ours.push(t.elapsed().as_secs_f64());
        let mut per = BTreeMap::new();
        for rec in &r.report.tasks {
            *per.entry(rec.stage.to_string()).or_insert(0.0) += (rec.end - rec.start).as_secs_f64();
        }
        stages.push(per);
        black_box(r);
        let t = Instant::now();
        match job {
            EvdJob::Values => {
                black_box(
                    m.as_ref()
                        .self_adjoint_eigenvalues(Side::Lower)
                        .expect("faer"),
                );
            }
            EvdJob::Vectors => {
                black_box(m.as_ref().self_adjoint_eigen(Side::Lower).expect("faer"));
            }
        }
        faer_t.push(t.elapsed().as_secs_f64());
    }
    let med = median(ours.clone());
    let k = ours.iter().position(|&x| x == med).unwrap_or(0);
    println!(
        "| {n} | {job:?} | {name} | {} | {:.3} ({:.3}) | {:.3} ({:.3}) | {:.2} | {:?} |",
        a.threads,
        med,
        best(&ours),
        median(faer_t.clone()),
        best(&faer_t),
        med / median(faer_t.clone()),
        stages[k]
            .iter()
            .map(|(s, t)| format!("{s} {t:.3}"))
            .collect::<Vec<_>>()
    );
}

fn main() {
    let a = args();
    faer::set_global_parallelism(Par::rayon(a.threads));
    println!("| n | job | precision | threads | eigenflow s median (best) | faer s median (best) | eigenflow / faer | eigenflow task seconds per stage |");
    println!("|---|---|---|---|---|---|---|---|");
    for &n in &a.sizes {
        for p in &a.precisions {
            for j in &a.jobs {
                let job = if j == "values" {
                    EvdJob::Values
                } else {
                    EvdJob::Vectors
                };
                match p.as_str() {
                    "c64" => bench::<c64>(p, n, job, &a),
                    "c32" => bench::<c32>(p, n, job, &a),
                    _ => panic!("precision c64 or c32"),
                }
            }
        }
    }
}
