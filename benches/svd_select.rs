//! The largest K singular triplets (issue 11 part 2, `SvdSelection::Largest`,
//! f64) next to our values-only and full-vectors SVD, timed alternately in
//! the same process on the same random Gaussian matrix, with the GEMM rate of
//! the same run: times also as multiples of `T_gemm = 2 n^3 / rate` (the
//! machine may be shared: compare the ratios, not the seconds).
//!
//! `cargo bench --bench svd_select -- [--sizes 2048,4096] [--ks 10,100,1000]
//!     [--threads 2] [--reps 1]`

#[path = "common/mod.rs"]
mod common;

use common::{gemm_rate, list, median, t_gemm};
use eigenflow::gallery;
use eigenflow::pipeline::svd::{stage_seconds, SvdSelection};
use eigenflow::pipeline::{svd, SvdJob, SvdOptions};
use eigenflow::runtime::Runtime;
use faer::Mat;
use std::time::Instant;

fn main() {
    let (mut sizes, mut ks, mut threads, mut reps) =
        (vec![2048usize], vec![10usize, 100, 1000], 2usize, 1usize);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().expect("value");
        match a.as_str() {
            "--sizes" => sizes = list(&val()),
            "--ks" => ks = list(&val()),
            "--threads" => threads = val().parse().expect("--threads T"),
            "--reps" => reps = val().parse().expect("--reps R"),
            _ => {} // cargo bench passes --bench
        }
    }
    let rt = Runtime::builder().threads(threads).build();
    for &n in &sizes {
        let a: Mat<f64> = gallery::random_gaussian(n, n, 42);
        let base = SvdOptions::auto();
        let (mut values, mut full) = (Vec::new(), Vec::new());
        let mut tops: Vec<Vec<f64>> = vec![Vec::new(); ks.len()];
        let mut stages: Vec<String> = vec![String::new(); ks.len()];
        for _ in 0..reps {
            let t = Instant::now();
            drop(svd(a.as_ref(), SvdJob::Values, &base, &rt).expect("values"));
            values.push(t.elapsed().as_secs_f64());
            for (i, &k) in ks.iter().enumerate() {
                let mut o = base.clone();
                o.selection = Some(SvdSelection::Largest(k.min(n)));
                let t = Instant::now();
                let r = svd(a.as_ref(), SvdJob::Vectors, &o, &rt).expect("top k");
                tops[i].push(t.elapsed().as_secs_f64());
                stages[i] = stage_seconds(&r.report)
                    .iter()
                    .map(|(s, t)| format!("{s} {t:.2}"))
                    .collect::<Vec<_>>()
                    .join(", ");
            }
            let t = Instant::now();
            drop(svd(a.as_ref(), SvdJob::Vectors, &base, &rt).expect("vectors"));
            full.push(t.elapsed().as_secs_f64());
        }
        let rate = gemm_rate::<f64>(threads, n.min(2048));
        let tg = t_gemm(n, rate);
        let (vm, fm) = (median(values), median(full));
        println!(
            "n = {n}, f64, {threads} threads, {reps} rep(s), GEMM {rate:.1} GFLOP/s, T_gemm {tg:.3} s: \
             values-only {vm:.3} s ({:.2} T_gemm), full vectors {fm:.3} s ({:.2} T_gemm)",
            vm / tg,
            fm / tg
        );
        for (i, &k) in ks.iter().enumerate() {
            let tm = median(tops[i].clone());
            println!(
                "  top {k:>5}: {tm:.3} s = {:.2} T_gemm = {:.3} x values-only, {:.3} x full vectors  [{}]",
                tm / tg,
                tm / vm,
                tm / fm,
                stages[i]
            );
        }
    }
}
