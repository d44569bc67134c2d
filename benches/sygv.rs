//! The generalized problem `A x = λ B x` with vectors (issue 65): eigenflow's
//! one graph (potrf, sygst, the EVD, the back-substitution) next to its
//! standard EVD of `A` alone, timed alternately in the same process, with the
//! extra cost of the generalized problem in `T_gemm = 2 n^3 / rate` (the
//! machine's GEMM rate measured in the same run, as `benches/evd.rs` does).
//! The goal: an extra within 1.5 T_gemm (potrf n^3/3, sygst n^3,
//! the back-substitution n^3 flops).
//!
//! `cargo bench --bench sygv -- [--sizes 2048,4096] [--reps 3] [--threads 2]
//!     [--type 1]`
//!
//! LAPACK's `dsygvd` (scipy/OpenBLAS, and MKL when installed) on the same
//! pencils is `benches/peers_sygv.py`; run both in one session, one after the
//! other, and compare the ratios to T_gemm, not the seconds.

#[path = "common/mod.rs"]
mod common;

use common::{faer_par, gemm_rate, list, median, t_gemm};
use eigenflow::gallery;
use eigenflow::pipeline::sygv::{self, GeneralizedOptions, Problem};
use eigenflow::pipeline::{eigh, EvdJob, EvdOptions};
use eigenflow::runtime::Runtime;
use faer::Mat;
use std::time::Instant;

/// A symmetric positive definite `B` of order `n`: `M M^T / n + I` for a
/// uniform random `M` (condition number about 5), as `peers_sygv.py` makes.
fn spd(n: usize, seed: u64) -> Mat<f64> {
    let m: Mat<f64> = gallery::random_uniform(n, n, seed);
    let mut b = &m * m.transpose();
    for j in 0..n {
        for i in 0..n {
            b[(i, j)] /= n as f64;
        }
        b[(j, j)] += 1.0;
    }
    b
}

/// The stages of the generalized problem before and after the EVD.
const STAGES: [&str; 3] = [sygv::POTRF, sygv::SYGST, sygv::BACK];

/// The median of stage `k`'s spans.
fn stage(spans: &[[f64; 3]], k: usize) -> f64 {
    median(spans.iter().map(|s| s[k]).collect())
}

fn main() {
    let (mut sizes, mut reps, mut threads, mut problem) =
        (vec![2048usize, 4096], 3usize, 2usize, 1u8);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().expect("value");
        match a.as_str() {
            "--sizes" => sizes = list(&val()),
            "--reps" => reps = val().parse().expect("--reps R"),
            "--threads" => threads = val().parse().expect("--threads T"),
            "--type" => problem = val().parse().expect("--type 1|2|3"),
            _ => {} // cargo bench passes --bench
        }
    }
    let rt = Runtime::builder().threads(threads).build();
    faer::set_global_parallelism(faer_par(threads));
    let gemm = gemm_rate::<f64>(threads, 2048);
    println!("# f64, {threads} thread(s), type {problem}: GEMM rate {gemm:.1} GFLOP/s");
    println!(
        "{:>5} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "n", "gen (s)", "evd (s)", "T_gemm", "gen/Tg", "extra/Tg", "potrf", "sygst", "back"
    );
    let mut opts = GeneralizedOptions::new(Problem::from_type(problem).expect("--type 1|2|3"));
    opts.evd = EvdOptions::auto();
    for &n in &sizes {
        let a: Mat<f64> = gallery::random_symmetric_uniform(n, 42);
        let b = spd(n, 7);
        let mut std_opts = EvdOptions::auto();
        std_opts.one_stage_below = 1;
        let (mut gen, mut evd, mut spans) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..reps {
            let t = Instant::now();
            let e = eigh(a.as_ref(), EvdJob::Vectors, &std_opts, &rt).expect("evd");
            evd.push(t.elapsed().as_secs_f64());
            drop(e);
            let t = Instant::now();
            let g = sygv::eigh_generalized(a.as_ref(), b.as_ref(), EvdJob::Vectors, &opts, &rt)
                .expect("generalized");
            gen.push(t.elapsed().as_secs_f64());
            spans.push(STAGES.map(|s| g.report.stage_span(s).as_secs_f64()));
        }
        let (gm, em, tg) = (median(gen), median(evd), t_gemm(n, gemm));
        println!(
            "{n:>5} {gm:>9.3} {em:>9.3} {tg:>7.3} {:>9.2} {:>9.2} {:>9.3} {:>9.3} {:>9.3}",
            gm / tg,
            (gm - em) / tg,
            stage(&spans, 0),
            stage(&spans, 1),
            stage(&spans, 2),
        );
    }
}
