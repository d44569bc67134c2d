//! The split of the one-stage EVD's time by stage (`sytrd`, the tridiagonal
//! solvers `sterf`, the values-only divide and conquer and the divide and
//! conquer with vectors, `ormtr`), f64, with the same calls
//! as `pipeline::evd`'s direct solve, median over repeats, on 1 and 2 threads
//! (issue 17: where the one-stage path loses to LAPACK `dsyevd`). The
//! `dc values / sterf` column is what sets `VALUES_DC_FROM`.
//!
//! `cargo bench --bench evd_stages -- [--sizes 128,256,512,1024] [--reps 5]
//!     [--threads 1,2] [--leaf L]`

#[path = "common/mod.rs"]
mod common;

use common::{list, median};
use eigenflow::gallery;
use eigenflow::linalg::tridiagonal::stedc::forked::stedc_identity;
use eigenflow::linalg::tridiagonal::stedc::values::stedc_values;
use eigenflow::linalg::tridiagonal::sterf::sterf;
use eigenflow::linalg::tridiagonal::sytrd::{
    ormtr_block_for, ormtr_on, sytrd_block_for, sytrd_on, SYTRD_CROSSOVER,
};
use eigenflow::pipeline::EvdOptions;
use eigenflow::runtime::Runtime;
use faer::Mat;
use std::time::Instant;

fn main() {
    let (mut sizes, mut reps, mut threads, mut leaf) = (
        vec![128usize, 256, 512, 1024],
        5usize,
        vec![1usize, 2],
        EvdOptions::auto().leaf_size,
    );
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().expect("a value after the flag");
        match flag.as_str() {
            "--sizes" => sizes = list(&val()),
            "--reps" => reps = val().parse().expect("--reps R"),
            "--threads" => threads = list(&val()),
            "--leaf" => leaf = val().parse().expect("--leaf L"),
            _ => {} // cargo bench passes --bench
        }
    }
    println!(
        "| n | threads | sytrd (s) | sterf (s) | dc values (s) | stedc (s) | ormtr (s) | dc values / sterf |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for &threads in &threads {
        let rt = Runtime::builder().threads(threads).build();
        for &n in &sizes {
            let a: Mat<f64> = gallery::random_symmetric_uniform(n, 42);
            let mut t = [(); 5].map(|_| Vec::new());
            for _ in 0..reps.max(1) {
                let mut w = a.clone();
                let m = n.saturating_sub(1);
                let (mut d, mut e, mut tau) = (vec![0.0; n], vec![0.0; m], vec![0.0; m]);
                let s = Instant::now();
                sytrd_on(
                    w.as_mut(),
                    sytrd_block_for(n),
                    SYTRD_CROSSOVER,
                    &mut d,
                    &mut e,
                    &mut tau,
                    rt.fork(),
                )
                .expect("sytrd");
                t[0].push(s.elapsed().as_secs_f64());
                let (mut d2, mut e2) = (d.clone(), e.clone());
                let s = Instant::now();
                sterf(&mut d2, &mut e2).expect("sterf");
                t[1].push(s.elapsed().as_secs_f64());
                let (mut d2, mut e2) = (d.clone(), e.clone());
                let s = Instant::now();
                stedc_values(&mut d2, &mut e2, leaf, rt.fork()).expect("stedc_values");
                t[2].push(s.elapsed().as_secs_f64());
                let s = Instant::now();
                let mut z = stedc_identity(&mut d, &mut e, leaf, rt.fork()).expect("stedc");
                t[3].push(s.elapsed().as_secs_f64());
                let s = Instant::now();
                ormtr_on(w.as_ref(), &tau, z.as_mut(), ormtr_block_for(n), rt.fork())
                    .expect("ormtr");
                t[4].push(s.elapsed().as_secs_f64());
            }
            let [a0, a1, a2, a3, a4] = t.map(median);
            let ratio = a2 / a1;
            println!(
                "| {n} | {threads} | {a0:.3e} | {a1:.3e} | {a2:.3e} | {a3:.3e} | {a4:.3e} | {ratio:.2} |"
            );
        }
    }
}
