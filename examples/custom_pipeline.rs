//! A pipeline built by hand from the public API: a tiled Cholesky factorization
//! A = L L^T as a task graph (POTRF, TRSM and SYRK on the CPU pool, the trailing
//! GEMMs spread over in-order stream lanes), checked against faer's Cholesky.
//!
//! `cargo run --release --example custom_pipeline -- --n 1536 --tile 128 --trace traces/cholesky.json`

use clap::Parser;
use eigenflow::graph::{Footprint, Lane, Region, Task, TaskGraph, TaskId};
use eigenflow::matrix::SharedMatrix;
use eigenflow::runtime::Runtime;
use eigenflow::trace::TraceLevel;
use faer::linalg::matmul::matmul;
use faer::linalg::triangular_solve::solve_lower_triangular_in_place;
use faer::prelude::Reborrow;
use faer::{Accum, Mat, Par, Side};
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[path = "common/args.rs"]
#[allow(dead_code)]
mod args;
#[path = "common/watch.rs"]
#[allow(dead_code)]
mod watch;

#[derive(Parser)]
#[command(about = "Tiled Cholesky as an eigenflow task graph")]
struct Args {
    /// Matrix order.
    #[arg(long, default_value_t = 1536)]
    n: usize,
    /// Tile size.
    #[arg(long, default_value_t = 128)]
    tile: usize,
    /// CPU worker threads, 1 to 1024 (default: all cores).
    #[arg(long, value_parser = args::thread_count)]
    threads: Option<usize>,
    /// Stream lanes for the GEMM tiles.
    #[arg(long, default_value_t = 2)]
    streams: usize,
    /// Chrome trace output (open in ui.perfetto.dev). Its directory must
    /// exist, except the default's `traces/`, which is created.
    #[arg(long, default_value = DEFAULT_TRACE)]
    trace: PathBuf,
    /// Seed of the random SPD matrix.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to run: auto or cpu (this example's tasks run on the CPU; gpu
    /// is refused, saying why).
    #[arg(long, value_enum, default_value_t = args::DeviceArg::Auto)]
    device: args::DeviceArg,
}

/// A random symmetric positive definite matrix B B^T / n + I.
fn spd(n: usize, seed: u64) -> Mat<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let b = Mat::from_fn(n, n, |_, _| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    });
    let mut a = Mat::<f64>::identity(n, n);
    matmul(
        a.as_mut(),
        Accum::Add,
        b.as_ref(),
        b.transpose(),
        1.0 / n as f64,
        Par::Seq,
    );
    a
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// Where the trace goes without `--trace`.
const DEFAULT_TRACE: &str = "traces/custom_pipeline.json";

fn run() -> eigenflow::Result<()> {
    let args = Args::parse();
    if args.trace == Path::new(DEFAULT_TRACE) {
        // The default's directory is this example's own; a path given with
        // --trace must have its directory already (the trace refuses a
        // missing one rather than creating it).
        std::fs::create_dir_all("traces")?;
    }
    args::choose_device(args.device, "custom Cholesky", false)?;
    let (n, nb) = (args.n, args.tile.max(1));
    let a0 = spd(n, args.seed);
    let a = Arc::new(SharedMatrix::new(a0.clone()));
    let nt = n.div_ceil(nb);
    let rng = |i: usize| i * nb..((i + 1) * nb).min(n);
    let id = a.id();
    let tile = |i: usize, j: usize| Region::new(id, rng(i), rng(j));

    let mut g = TaskGraph::new();
    // Last writer of each tile: the edges follow the data.
    let mut last: Vec<Option<TaskId>> = vec![None; nt * nt];
    let mut gemms = 0usize;
    let dep = |g: &mut TaskGraph<'_>,
               last: &mut Vec<Option<TaskId>>,
               t: TaskId,
               reads: &[(usize, usize)],
               write: (usize, usize)| {
        let mut preds: Vec<TaskId> = reads
            .iter()
            .chain(std::iter::once(&write))
            .filter_map(|&(i, j)| last[i * nt + j])
            .collect();
        preds.sort();
        preds.dedup();
        g.succeed(t, &preds);
        last[write.0 * nt + write.1] = Some(t);
    };
    for k in 0..nt {
        let m = a.clone();
        let kb = rng(k).len();
        let potrf = g.add(
            Task::new(format!("potrf[{k}]"), move |_| {
                // SAFETY: the graph orders every task touching tile (k, k).
                let mut akk = unsafe { m.tile_mut(rng(k), rng(k)) };
                let l = akk.rb().llt(Side::Lower).map_err(|e| {
                    eigenflow::Error::InvalidArgument(format!(
                        "tile {k} is not positive definite: {e:?}"
                    ))
                })?;
                akk.copy_from(l.L());
                Ok(())
            })
            .stage("potrf")
            .cost((kb * kb * kb) as f64 / 3.0, (8 * kb * kb) as f64)
            .footprint(Footprint::new().write(tile(k, k))),
        );
        dep(&mut g, &mut last, potrf, &[], (k, k));
        for i in k + 1..nt {
            let m = a.clone();
            let ib = rng(i).len();
            let trsm = g.add(
                Task::new(format!("trsm[{i},{k}]"), move |_| {
                    // SAFETY: as above; (k, k) is read-only here.
                    let (lkk, aik) =
                        unsafe { (m.tile(rng(k), rng(k)), m.tile_mut(rng(i), rng(k))) };
                    // A_ik := A_ik L_kk^{-T}, i.e. L_kk X^T = A_ik^T.
                    solve_lower_triangular_in_place(lkk, aik.transpose_mut(), Par::Seq);
                    Ok(())
                })
                .stage("trsm")
                .cost((ib * kb * kb) as f64, (8 * (ib + kb) * kb) as f64)
                .footprint(Footprint::new().read(tile(k, k)).write(tile(i, k))),
            );
            dep(&mut g, &mut last, trsm, &[(k, k)], (i, k));
        }
        for i in k + 1..nt {
            for j in k + 1..=i {
                let m = a.clone();
                let (ib, jb) = (rng(i).len(), rng(j).len());
                // Diagonal tiles (SYRK) on the CPU pool, the GEMMs on stream lanes.
                let (name, stage, lane) = if i == j {
                    (format!("syrk[{i},{k}]"), "syrk", Lane::Cpu)
                } else {
                    gemms += 1;
                    let lane = match args.streams {
                        0 => Lane::Cpu,
                        s => Lane::Stream(gemms % s),
                    };
                    (format!("gemm[{i},{j},{k}]"), "gemm", lane)
                };
                let t = g.add(
                    Task::new(name, move |_| {
                        // SAFETY: tiles (i,k), (j,k) are read, (i,j) written; all ordered.
                        let (aik, ajk, aij) = unsafe {
                            (
                                m.tile(rng(i), rng(k)),
                                m.tile(rng(j), rng(k)),
                                m.tile_mut(rng(i), rng(j)),
                            )
                        };
                        matmul(aij, Accum::Add, aik, ajk.transpose(), -1.0, Par::Seq);
                        Ok(())
                    })
                    .stage(stage)
                    .lane(lane)
                    .cost(
                        (2 * ib * jb * kb) as f64,
                        (8 * (ib * jb + (ib + jb) * kb)) as f64,
                    )
                    .footprint(
                        Footprint::new()
                            .read(tile(i, k))
                            .read(tile(j, k))
                            .write(tile(i, j)),
                    ),
                );
                dep(&mut g, &mut last, t, &[(i, k), (j, k)], (i, j));
            }
        }
    }
    g.check_races()?;
    let tasks = g.len();
    let mut rt = Runtime::builder()
        .streams(args.streams)
        .trace(&args.trace, TraceLevel::Task);
    if let Some(t) = args.threads {
        rt = rt.threads(t);
    }
    let rt = rt.build();
    let report = rt.run(g)?;

    let a = Arc::try_unwrap(a)
        .ok()
        .expect("tasks are done")
        .into_inner();
    let l = Mat::from_fn(n, n, |i, j| if i >= j { a[(i, j)] } else { 0.0 });
    let mut r = a0.clone();
    matmul(
        r.as_mut(),
        Accum::Add,
        l.as_ref(),
        l.transpose(),
        -1.0,
        Par::Seq,
    );
    let resid = r.norm_l2() / (a0.norm_l2() * n as f64 * f64::EPSILON);
    let reference = a0.llt(Side::Lower).expect("SPD");
    let diff = (&l - reference.L()).norm_l2() / reference.L().norm_l2();

    println!(
        "tiled Cholesky: n = {n}, tile = {nb}, {tasks} tasks on {} thread(s) + {} stream(s)",
        rt.threads(),
        rt.streams()
    );
    println!("{report}");
    println!("||A - L L^T||_F / (n ||A||_F eps) = {resid:.3}");
    println!("||L - L_faer||_F / ||L_faer||_F   = {diff:.3e}");
    println!(
        "trace written to {} (open in ui.perfetto.dev)",
        args.trace.display()
    );
    if resid > 30.0 || diff > 1e-10 {
        return Err(eigenflow::Error::InvalidArgument(format!(
            "check failed: residual ratio {resid:.3}, difference to faer {diff:.3e}"
        )));
    }
    Ok(())
}
