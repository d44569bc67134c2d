//! Batched small SVDs (issue 12): eigenflow's two routes, blocked one-sided
//! Jacobi and GEBRD + bidiagonal solver (`svd_batched`, 2 runtime workers),
//! against a loop of faer SVDs over the
//! same batch (`thin_svd` for vectors, `singular_values` for values), run
//! serially and as a 2-thread rayon loop (faer itself sequential inside),
//! timed alternately in the same process; medians of `--reps` runs. Each
//! route is timed twice: `svd_batched` (fresh result buffers per call, as
//! numpy's loop has) and `svd_batched_into` with buffers reused from call
//! to call ("reused").
//!
//! `cargo bench --bench batched -- [--cases 10000x8,10000x32,1000x128,100x512]
//!     [--reps 3] [--threads 2] [--precisions f64,f32] [--jobs values,vectors]
//!     [--block 16] [--methods jacobi,gebrd]`

use eigenflow::gallery::Rng;
use eigenflow::pipeline::batched::{
    svd_batched, svd_batched_into, BatchLayout, BatchRef, BatchedMethod, BatchedOptions, BatchedOut,
};
use eigenflow::pipeline::SvdJob;
use eigenflow::runtime::Runtime;
use eigenflow::Scalar;
use faer::{MatRef, Par};
use rayon::prelude::*;
use std::time::Instant;

struct Args {
    cases: Vec<(usize, usize)>,
    reps: usize,
    threads: usize,
    precisions: Vec<String>,
    jobs: Vec<String>,
    block: Option<usize>,
    methods: Vec<BatchedMethod>,
}

fn args() -> Args {
    let mut a = Args {
        cases: vec![(10_000, 8), (10_000, 32), (1_000, 128), (100, 512)],
        reps: 3,
        threads: 2,
        precisions: vec!["f64".into(), "f32".into()],
        jobs: vec!["values".into(), "vectors".into()],
        block: None,
        methods: vec![BatchedMethod::Jacobi, BatchedMethod::Gebrd],
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        let mut val = || it.next().expect("flag needs a value");
        match x.as_str() {
            "--cases" => {
                a.cases = val()
                    .split(',')
                    .map(|c| {
                        let (b, n) = c.split_once('x').expect("--cases BxN,...");
                        (b.parse().expect("batch"), n.parse().expect("size"))
                    })
                    .collect()
            }
            "--reps" => a.reps = val().parse().expect("--reps R"),
            "--threads" => a.threads = val().parse().expect("--threads T"),
            "--precisions" => a.precisions = val().split(',').map(String::from).collect(),
            "--jobs" => a.jobs = val().split(',').map(String::from).collect(),
            "--block" => a.block = Some(val().parse().expect("--block NB")),
            "--methods" => {
                a.methods = val()
                    .split(',')
                    .map(|m| m.parse().expect("jacobi, gebrd or auto"))
                    .collect()
            }
            _ => {} // cargo bench passes --bench
        }
    }
    a
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn faer_one<T: Scalar>(a: MatRef<'_, T>, vectors: bool) -> T {
    if vectors {
        let s = a.thin_svd().expect("faer svd");
        s.S().column_vector()[0]
    } else {
        a.singular_values().expect("faer values")[0]
    }
}

fn case<T: Scalar>(a: &Args, batch: usize, n: usize, job: &str, pool: &rayon::ThreadPool) {
    let mut rng = Rng::new(batch as u64 * 1000 + n as u64);
    let data: Vec<T> = (0..batch * n * n).map(|_| T::of(rng.uniform())).collect();
    let b = BatchRef::new(&data, batch, n, n, BatchLayout::ColMajor).expect("batch");
    let vectors = job == "vectors";
    let sj = if vectors {
        SvdJob::Vectors
    } else {
        SvdJob::Values
    };
    let rt = Runtime::builder().threads(a.threads).build();
    let mut opts = BatchedOptions::default();
    if let Some(nb) = a.block {
        opts.params.block = nb;
    }
    let mut ours: Vec<Vec<f64>> = vec![Vec::new(); a.methods.len()];
    let mut reused: Vec<Vec<f64>> = vec![Vec::new(); a.methods.len()];
    let mut values = vec![T::zero(); batch * n];
    let mut u = vec![T::zero(); if vectors { batch * n * n } else { 0 }];
    let mut vt = u.clone();
    let (mut serial, mut par) = (Vec::new(), Vec::new());
    let mut sweeps = 0.0;
    for _ in 0..a.reps {
        for (k, &method) in a.methods.iter().enumerate() {
            opts.method = method;
            let t = Instant::now();
            let s = svd_batched(b, sj, &opts, &rt).expect("svd_batched");
            ours[k].push(t.elapsed().as_secs_f64());
            assert!(s.failed.is_empty());
            if method == BatchedMethod::Jacobi {
                sweeps = s.stats.sweeps.iter().sum::<usize>() as f64 / batch as f64;
            }
            drop(s);
            let out = BatchedOut {
                values: &mut values,
                vectors: vectors.then_some((&mut u[..], &mut vt[..])),
            };
            let t = Instant::now();
            let run = svd_batched_into(b, sj, &opts, &rt, out).expect("svd_batched_into");
            reused[k].push(t.elapsed().as_secs_f64());
            assert!(run.failed.is_empty());
        }
        let t = Instant::now();
        let mut acc = T::zero();
        for i in 0..batch {
            acc += faer_one(b.matrix(i), vectors);
        }
        serial.push(t.elapsed().as_secs_f64());
        std::hint::black_box(acc);
        let t = Instant::now();
        let acc: f64 = pool.install(|| {
            (0..batch)
                .into_par_iter()
                .map(|i| faer_one(b.matrix(i), vectors).f64())
                .sum()
        });
        par.push(t.elapsed().as_secs_f64());
        std::hint::black_box(acc);
    }
    let (s, p) = (median(serial), median(par));
    let mut line = format!("{:>6} x {:>3}x{:<3} {} {:7}:", batch, n, n, T::NAME, job);
    for (k, m) in a.methods.iter().enumerate() {
        let o = median(ours[k].clone());
        let r = median(reused[k].clone());
        line += &format!(
            " {} {:8.3} s ({:5.2}x), reused {:6.3} s ({:5.2}x)",
            m.name(),
            o,
            p / o,
            r,
            p / r
        );
        if *m == BatchedMethod::Jacobi {
            line += &format!(" [{sweeps:4.1} sweeps]");
        }
        line += " |";
    }
    println!(
        "{line} faer loop 1 thread {s:8.3} s | faer loop {} threads {p:8.3} s",
        a.threads
    );
}

fn main() {
    let a = args();
    // faer runs sequentially inside each SVD; the loop supplies the threads.
    faer::set_global_parallelism(Par::Seq);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.threads)
        .build()
        .expect("pool");
    println!(
        "batched SVD, {} threads, median of {} (x = faer {}-thread loop time / route time)",
        a.threads, a.reps, a.threads
    );
    for &(batch, n) in &a.cases {
        for p in &a.precisions {
            for job in &a.jobs {
                match p.as_str() {
                    "f32" => case::<f32>(&a, batch, n, job, &pool),
                    _ => case::<f64>(&a, batch, n, job, &pool),
                }
            }
        }
    }
}
