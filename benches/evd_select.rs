//! Part of the spectrum (issue 11): the top k eigenpairs of a random symmetric
//! matrix (`Selection::Largest(k)`, f64) next to our values-only EVD and
//! faer's full EVD, timed alternately in the same process (the machine may be
//! shared: compare the ratios, not the seconds).
//!
//! `cargo bench --bench evd_select -- [--sizes 2048,4096] [--ks 10,100,1000]
//!     [--threads 2] [--reps 1] [--one-stage]`
//!
//! By default the two-stage graph is used at every size (`one_stage_below =
//! 1`); `--one-stage` lets the automatic crossover pick the path.

#[path = "common/mod.rs"]
mod common;

use common::{faer_par, list, median};
use eigenflow::gallery;
use eigenflow::pipeline::evd::{stage_seconds, Selection};
use eigenflow::pipeline::{eigh, EvdJob, EvdOptions};
use eigenflow::runtime::Runtime;
use faer::{Mat, Side};
use std::time::Instant;

fn main() {
    let (mut sizes, mut ks, mut threads, mut reps, mut one_stage) = (
        vec![2048usize],
        vec![10usize, 100, 1000],
        2usize,
        1usize,
        false,
    );
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().expect("value");
        match a.as_str() {
            "--sizes" => sizes = list(&val()),
            "--ks" => ks = list(&val()),
            "--threads" => threads = val().parse().expect("--threads T"),
            "--reps" => reps = val().parse().expect("--reps R"),
            "--one-stage" => one_stage = true,
            _ => {} // cargo bench passes --bench
        }
    }
    let rt = Runtime::builder().threads(threads).build();
    faer::set_global_parallelism(faer_par(threads));
    for &n in &sizes {
        let a: Mat<f64> = gallery::random_symmetric_uniform(n, 42);
        let mut base = EvdOptions::auto();
        if !one_stage {
            base.one_stage_below = 1;
        }
        let (mut values, mut full_faer) = (Vec::new(), Vec::new());
        let mut tops: Vec<Vec<f64>> = vec![Vec::new(); ks.len()];
        let mut stages: Vec<String> = vec![String::new(); ks.len()];
        for _ in 0..reps {
            let t = Instant::now();
            let v = eigh(a.as_ref(), EvdJob::Values, &base, &rt).expect("values");
            values.push(t.elapsed().as_secs_f64());
            drop(v);
            for (i, &k) in ks.iter().enumerate() {
                let mut o = base.clone();
                o.selection = Some(Selection::Largest(k.min(n)));
                let t = Instant::now();
                let e = eigh(a.as_ref(), EvdJob::Vectors, &o, &rt).expect("top k");
                tops[i].push(t.elapsed().as_secs_f64());
                stages[i] = stage_seconds(&e.report)
                    .iter()
                    .map(|(s, t)| format!("{s} {t:.2}"))
                    .collect::<Vec<_>>()
                    .join(", ");
            }
            let t = Instant::now();
            let e = a.self_adjoint_eigen(Side::Lower).expect("faer");
            full_faer.push(t.elapsed().as_secs_f64());
            drop(e);
        }
        let (vm, fm) = (median(values), median(full_faer));
        println!("n = {n}, f64, {threads} threads, {reps} rep(s): values-only {vm:.3} s, faer full EVD {fm:.3} s");
        for (i, &k) in ks.iter().enumerate() {
            let tm = median(tops[i].clone());
            println!(
                "  top {k:>5}: {tm:.3} s = {:.3} x values-only, {:.3} x faer full  [{}]",
                tm / vm,
                tm / fm,
                stages[i]
            );
        }
    }
}
