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
//! The batched symmetric EVD (issue 61: `eigh_batched`, `eigvalsh_batched`
//! and `eigh_batched_into` with reused buffers) on symmetric matrices of the
//! same cases is timed the same way against loops of faer's
//! `self_adjoint_eigen` / `self_adjoint_eigenvalues`, once per EVD route of
//! `--evd-routes` (`jacobi`: Jacobi in lanes at every order, `one-stage`:
//! the one-stage path at every order, `auto`: the default crossover).
//! numpy's stacked `eigh` and `svd` on the same shapes come from
//! `benches/peers_batched.py`, run right after in the same session.
//!
//! `cargo bench --bench batched -- [--cases 10000x8,10000x32,1000x128,100x512]
//!     [--reps 3] [--threads 2] [--precisions f64,f32] [--jobs values,vectors]
//!     [--block 16] [--methods jacobi,gebrd] [--problems svd,evd]
//!     [--evd-routes auto]`

use eigenflow::gallery::Rng;
use eigenflow::pipeline::batched::{
    eigh_batched, eigh_batched_into, eigvalsh_batched, svd_batched, svd_batched_into, BatchLayout,
    BatchRef, BatchedEvdOut, BatchedMethod, BatchedOptions, BatchedOut,
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
    problems: Vec<String>,
    evd_routes: Vec<String>,
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
        problems: vec!["svd".into(), "evd".into()],
        evd_routes: vec!["auto".into()],
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
            "--problems" => a.problems = val().split(',').map(String::from).collect(),
            "--evd-routes" => a.evd_routes = val().split(',').map(String::from).collect(),
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

/// The times of `one` over `0..batch`, a serial loop and a loop on `pool`.
fn faer_loops<T: Scalar>(
    batch: usize,
    pool: &rayon::ThreadPool,
    one: impl Fn(usize) -> T + Sync,
) -> (f64, f64) {
    let t = Instant::now();
    let mut acc = T::zero();
    for i in 0..batch {
        acc += one(i);
    }
    let serial = t.elapsed().as_secs_f64();
    std::hint::black_box(acc);
    let t = Instant::now();
    let acc: f64 = pool.install(|| (0..batch).into_par_iter().map(|i| one(i).f64()).sum());
    std::hint::black_box(acc);
    (serial, t.elapsed().as_secs_f64())
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
        let (ts, tp) = faer_loops(batch, pool, |i| faer_one(b.matrix(i), vectors));
        serial.push(ts);
        par.push(tp);
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

fn faer_eigen_one<T: Scalar>(a: MatRef<'_, T>, vectors: bool) -> T {
    if vectors {
        let e = a.self_adjoint_eigen(faer::Side::Lower).expect("faer eigen");
        e.S().column_vector()[0]
    } else {
        a.self_adjoint_eigenvalues(faer::Side::Lower)
            .expect("faer eigenvalues")[0]
    }
}

/// [`BatchedOptions::evd_jacobi_below`] for a route name of `--evd-routes`.
fn jacobi_below(route: &str) -> usize {
    match route {
        "jacobi" => usize::MAX,
        "one-stage" => 0,
        _ => BatchedOptions::default().evd_jacobi_below,
    }
}

/// One EVD case: each route fresh and reused, then the faer loops.
fn evd_case<T: Scalar>(a: &Args, batch: usize, n: usize, job: &str, pool: &rayon::ThreadPool) {
    let mut rng = Rng::new(batch as u64 * 1000 + n as u64);
    let data: Vec<T> = (0..batch * n * n).map(|_| T::of(rng.uniform())).collect();
    // Symmetric, so that the faer loop (lower triangle read too) and numpy
    // see the same matrices.
    let mut data = data;
    for m in data.chunks_exact_mut(n * n) {
        for j in 0..n {
            for i in j + 1..n {
                m[j + i * n] = m[i + j * n];
            }
        }
    }
    let b = BatchRef::new(&data, batch, n, n, BatchLayout::ColMajor).expect("batch");
    let vectors = job == "vectors";
    let rt = Runtime::builder().threads(a.threads).build();
    let routes = &a.evd_routes;
    let (mut ours, mut reused) = (
        vec![Vec::new(); routes.len()],
        vec![Vec::new(); routes.len()],
    );
    let mut values = vec![T::zero(); batch * n];
    let mut z = vec![T::zero(); if vectors { batch * n * n } else { 0 }];
    let (mut serial, mut par) = (Vec::new(), Vec::new());
    for _ in 0..a.reps {
        for (k, route) in routes.iter().enumerate() {
            let opts = BatchedOptions {
                evd_jacobi_below: jacobi_below(route),
                ..BatchedOptions::default()
            };
            let t = Instant::now();
            let e = if vectors {
                eigh_batched(b, &opts, &rt)
            } else {
                eigvalsh_batched(b, &opts, &rt)
            };
            ours[k].push(t.elapsed().as_secs_f64());
            assert!(e.expect("eigh_batched").failed.is_empty());
            let out = BatchedEvdOut {
                values: &mut values,
                vectors: vectors.then_some(&mut z[..]),
            };
            let t = Instant::now();
            let run = eigh_batched_into(b, &opts, &rt, out).expect("eigh_batched_into");
            reused[k].push(t.elapsed().as_secs_f64());
            assert!(run.failed.is_empty());
        }
        let (ts, tp) = faer_loops(batch, pool, |i| faer_eigen_one(b.matrix(i), vectors));
        serial.push(ts);
        par.push(tp);
    }
    let (s, p) = (median(serial), median(par));
    let mut line = format!(
        "{:>6} x {:>3}x{:<3} {} {:7} evd:",
        batch,
        n,
        n,
        T::NAME,
        job
    );
    for (k, route) in routes.iter().enumerate() {
        let (o, r) = (median(ours[k].clone()), median(reused[k].clone()));
        line += &format!(
            " {route} {o:8.3} s ({:5.2}x), reused {r:6.3} s ({:5.2}x) |",
            p / o,
            p / r
        );
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
        "batched SVD and EVD, {} threads, median of {} (x = faer {}-thread loop time / route time)",
        a.threads, a.reps, a.threads
    );
    let (svd, evd) = (
        a.problems.iter().any(|p| p == "svd"),
        a.problems.iter().any(|p| p == "evd"),
    );
    for &(batch, n) in &a.cases {
        for p in &a.precisions {
            for job in &a.jobs {
                match p.as_str() {
                    "f32" if svd => case::<f32>(&a, batch, n, job, &pool),
                    "f64" if svd => case::<f64>(&a, batch, n, job, &pool),
                    _ => {}
                }
                match p.as_str() {
                    "f32" if evd => evd_case::<f32>(&a, batch, n, job, &pool),
                    "f64" if evd => evd_case::<f64>(&a, batch, n, job, &pool),
                    _ => {}
                }
            }
        }
    }
}
