//! Pieces every benchmark shares: flag lists, medians and the machine's GEMM
//! rate measured in the same run (the unit of `T_gemm = 2 n^3 / rate`).

#![allow(dead_code)] // each bench uses a subset

use eigenflow::gallery;
use eigenflow::graph::TaskGraph;
use eigenflow::runtime::Runtime;
use eigenflow::Scalar;
use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par};
use std::time::Instant;

/// A comma-separated list of values.
pub fn list<T: std::str::FromStr>(s: &str) -> Vec<T> {
    s.split(',')
        .map(|x| x.trim().parse().ok().expect("a comma-separated list"))
        .collect()
}

/// The median of the samples (the upper one for an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// GFLOP/s of `threads` concurrent single-threaded `n x n x n` GEMMs, run as
/// tasks of our runtime (the way the stages use GEMM), best of three.
pub fn gemm_rate<T: Scalar>(threads: usize, n: usize) -> f64 {
    let mats: Vec<(Mat<T>, Mat<T>)> = (0..threads)
        .map(|k| {
            (
                gallery::random_uniform(n, n, k as u64),
                gallery::random_uniform(n, n, 10 + k as u64),
            )
        })
        .collect();
    let mut outs: Vec<Mat<T>> = (0..threads).map(|_| Mat::zeros(n, n)).collect();
    let rt = Runtime::builder().threads(threads).build();
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let mut g = TaskGraph::new();
        for ((a, b), c) in mats.iter().zip(outs.iter_mut()) {
            g.task("gemm", move |_| {
                matmul(
                    c.as_mut(),
                    Accum::Replace,
                    a.as_ref(),
                    b.as_ref(),
                    T::one(),
                    Par::Seq,
                );
                Ok(())
            });
        }
        let t = Instant::now();
        rt.run(g).expect("gemm");
        best = best.min(t.elapsed().as_secs_f64());
    }
    2.0 * (n as f64).powi(3) * threads as f64 / best / 1e9
}

/// `T_gemm` for order `n` at `gflops`: the time of one `2 n^3` GEMM.
pub fn t_gemm(n: usize, gflops: f64) -> f64 {
    2.0 * (n as f64).powi(3) / (gflops * 1e9)
}

/// faer's parallelism for `threads` threads.
pub fn faer_par(threads: usize) -> Par {
    if threads == 1 {
        Par::Seq
    } else {
        Par::rayon(threads)
    }
}
