//! eigenflow's two-stage SVD (singular values; values and vectors) against
//! faer's `singular_values` and `thin_svd`, timed alternately in the same
//! process on the same matrix, with the machine's GEMM rate from the same run:
//! times are also given as multiples of `T_gemm = 2 n^3 / rate` (issue 9: the
//! algorithm needs about 1.33 T_gemm for values and 6.7 T_gemm with vectors).
//!
//! `cargo bench --bench svd -- [--json] [--sizes 1024,2048,4096] [--reps 3]
//!     [--threads 1,2] [--precisions f64,f32] [--jobs values,vectors]
//!     [--m-extra 0] [--bandwidth B] [--tile-width TW] [--q2-group G] [--col-block C]
//!     [--q2-window KIB] [--one-stage-below V] [--compare-paths]`
//!
//! `--compare-paths` also times the one-stage path (`dgebrd` + `dormbr`) and
//! the two-stage graph, each forced, in the same repetitions, and prints their
//! ratio (the crossovers of `SvdOptions::one_stage_for` come from it).
//!
//! `--q2-kernel` instead times one `Q2_U` application in isolation on one
//! thread (column block after column block, as one thread's tasks would):
//! the shared chain engine with its in-place (strip), GEMM and FMA block
//! kernels (strip is the default for reflectors of length 32 and more), in
//! canonical order and with row windows, GFLOP/s of useful flops (4 per
//! reflector entry and column) next to the one-thread GEMM rate.
//!
//! `--bdsdc-kernel` times the bidiagonal divide and conquer with vectors on one
//! thread (the serial walk of its tree over the same pieces the tasks run) on a
//! random `n x n` bidiagonal, split into leaves, deflation, secular roots,
//! Löwner step and products per tree level, next to the one-thread `T_gemm`.

#[path = "common/mod.rs"]
mod common;

use common::{faer_par, gemm_rate, list, median, t_gemm};
use eigenflow::gallery;
use eigenflow::linalg::back_transform::chain::BlockKernel;
use eigenflow::linalg::back_transform::pass_chain::apply_q2_sides_with;
use eigenflow::linalg::band::gb2bd::{
    num_sweeps, schedule, steps, task_geom, Gb2bdReflectors, Pass,
};
use eigenflow::pipeline::{svd, SvdJob, SvdOptions};
use eigenflow::runtime::Runtime;
use eigenflow::Scalar;
use faer::Mat;
use std::time::Instant;

/// Stage names the SVD pipeline may report, in pipeline order (those that ran
/// are printed): the QR pre-reduction of a tall matrix first.
const STAGES: [&str; 8] = [
    "geqrf", "ge2gb", "gb2bd", "bdsdc", "q2u", "q2v", "q1u", "q1v",
];

struct Args {
    json: bool,
    sizes: Vec<usize>,
    m_extra: usize,
    reps: usize,
    threads: Vec<usize>,
    precisions: Vec<String>,
    jobs: Vec<String>,
    opts: SvdOptions,
    q2_kernel: bool,
    bdsdc_kernel: bool,
    compare_paths: bool,
    gebrd_kernel: bool,
}

fn args() -> Args {
    let mut a = Args {
        json: false,
        sizes: vec![1024, 2048, 4096],
        m_extra: 0,
        reps: 3,
        threads: vec![1, 2],
        precisions: vec!["f64".into(), "f32".into()],
        jobs: vec!["values".into(), "vectors".into()],
        opts: SvdOptions::auto(),
        q2_kernel: false,
        bdsdc_kernel: false,
        compare_paths: false,
        gebrd_kernel: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        let mut val = || it.next().expect("flag needs a value");
        match x.as_str() {
            "--json" => a.json = true,
            "--sizes" => a.sizes = list(&val()),
            "--m-extra" => a.m_extra = val().parse().expect("--m-extra K"),
            "--reps" => a.reps = val().parse().expect("--reps R"),
            "--threads" => a.threads = list(&val()),
            "--precisions" => a.precisions = list(&val()),
            "--jobs" => a.jobs = list(&val()),
            "--bandwidth" => a.opts.bandwidth = val().parse().expect("--bandwidth B"),
            "--tile-width" => a.opts.tile_width = val().parse().expect("--tile-width TW"),
            "--q2-group" => a.opts.q2_group = val().parse().expect("--q2-group G"),
            "--col-block" => a.opts.back_col_block = val().parse().expect("--col-block C"),
            "--q2-window" => a.opts.q2_window_kib = val().parse().expect("--q2-window KIB"),
            "--q2-kernel" => a.q2_kernel = true,
            "--one-stage-below" => {
                a.opts.one_stage_below = val().parse().expect("--one-stage-below V")
            }
            "--compare-paths" => a.compare_paths = true,
            "--gebrd-kernel" => a.gebrd_kernel = true,
            "--bdsdc-kernel" => a.bdsdc_kernel = true,
            _ => {} // cargo bench passes --bench
        }
    }
    a
}

fn case<T: Scalar>(args: &Args, job: SvdJob, n: usize, threads: usize, gemm: f64) {
    let m = n + args.m_extra;
    let a: Mat<T> = gallery::random_gaussian(m, n, 42);
    let rt = Runtime::builder().threads(threads).build();
    faer::set_global_parallelism(faer_par(threads));
    let jobname = match job {
        SvdJob::Values => "values",
        SvdJob::Vectors => "vectors",
    };
    let (mut ours, mut theirs, mut stages) = (Vec::new(), Vec::new(), Vec::new());
    let (mut one_stage, mut two_stage) = (Vec::new(), Vec::new());
    let mut max_diff = 0.0f64;
    for _ in 0..args.reps {
        if args.compare_paths {
            // Both paths forced, in the same repetition as the others.
            for (below, out) in [(usize::MAX, &mut one_stage), (1, &mut two_stage)] {
                let mut opts = args.opts.clone();
                opts.one_stage_below = below;
                let t = Instant::now();
                if svd(a.as_ref(), job, &opts, &rt).is_ok() {
                    out.push(t.elapsed().as_secs_f64());
                }
            }
        }
        let t = Instant::now();
        let res = match svd(a.as_ref(), job, &args.opts, &rt) {
            Ok(r) => r,
            Err(e) => {
                println!("# {jobname} n={n} {}: eigenflow: {e}", T::NAME);
                return;
            }
        };
        ours.push(t.elapsed().as_secs_f64());
        stages.push(
            STAGES
                .iter()
                .map(|s| res.report.stage_span(s).as_secs_f64())
                .collect::<Vec<f64>>(),
        );
        let t = Instant::now();
        let reference: Vec<T> = match job {
            SvdJob::Values => a.singular_values().expect("faer"),
            SvdJob::Vectors => {
                let s = a.thin_svd().expect("faer");
                (0..n).map(|i| s.S()[i]).collect()
            }
        };
        theirs.push(t.elapsed().as_secs_f64());
        let s1 = reference[0].f64().max(f64::MIN_POSITIVE);
        for (x, y) in res.values.iter().zip(&reference) {
            let d = (x.f64() - y.f64()).abs() / (m.max(n) as f64 * T::EPS.f64() * s1);
            max_diff = max_diff.max(d);
        }
    }
    let (ours_m, faer_m) = (median(ours), median(theirs));
    let tg = t_gemm(n, gemm);
    if args.compare_paths && !one_stage.is_empty() && !two_stage.is_empty() {
        let (o, t) = (median(one_stage), median(two_stage));
        println!(
            "# paths {jobname} {m} x {n} {} {threads} thr: one-stage {o:.4} s ({:.2} T_gemm), \
             two-stage {t:.4} s ({:.2} T_gemm), one/two {:.2}",
            T::NAME,
            o / tg,
            t / tg,
            o / t
        );
    }
    let stage_m: Vec<(&str, f64)> = STAGES
        .iter()
        .enumerate()
        .map(|(k, s)| (*s, median(stages.iter().map(|v| v[k]).collect())))
        .filter(|&(_, t)| t > 0.0)
        .collect();
    if args.json {
        let st: serde_json::Map<String, serde_json::Value> = stage_m
            .iter()
            .map(|(s, t)| (s.to_string(), (*t).into()))
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "bench": "svd", "job": jobname, "m": m, "n": n, "precision": T::NAME,
                "threads": threads, "gemm_gflops": gemm, "t_gemm_s": tg,
                "eigenflow_median_s": ours_m, "faer_median_s": faer_m,
                "eigenflow_t_gemm": ours_m / tg, "faer_t_gemm": faer_m / tg,
                "speedup_vs_faer": faer_m / ours_m, "stages": st, "max_error_ratio": max_diff,
            })
        );
    } else {
        let st: Vec<String> = stage_m
            .iter()
            .map(|(s, t)| format!("{s} {:.2}", t / tg))
            .collect();
        println!(
            "{:>7} {:>5} {:>5} {:>4} {:>3} {:>9.3} {:>6.2} {:>9.3} {:>6.2} {:>7.2}x {:>6.2}  {}",
            jobname,
            m,
            n,
            T::NAME,
            threads,
            ours_m,
            ours_m / tg,
            faer_m,
            faer_m / tg,
            faer_m / ours_m,
            max_diff,
            st.join(", ")
        );
    }
}

/// Random Householder reflectors (`tau = 2 / ||v||^2`, `v_0 = 1`) in every
/// slot of the passes of bandwidth `b`: the timing does not depend on the
/// values, only on the geometry.
fn random_reflectors<T: Scalar>(n: usize, passes: &[Pass]) -> Gb2bdReflectors<T> {
    let mut refl = Gb2bdReflectors::<T>::new(n, passes);
    let mut state = 0x9e3779b97f4a7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    for (p, pass) in passes.iter().enumerate() {
        let mut slots = refl.pass_mut(p).slots();
        for r in 0..num_sweeps(n, *pass) {
            for s in 0..steps(n, *pass, r) {
                let (right, left) = slots.slot_mut(r, s);
                for slot in [right, left] {
                    let mut nrm = 1.0;
                    for x in slot[1..].iter_mut() {
                        let v = next();
                        nrm += v * v;
                        *x = T::of(v);
                    }
                    slot[0] = T::of(2.0 / nrm);
                }
            }
        }
    }
    refl
}

/// `--q2-kernel`: one `Q2_U` application to `n x n` in isolation (module docs).
fn q2_kernel<T: Scalar>(args: &Args, n: usize, gemm1: f64) {
    let opts = &args.opts;
    let b = opts.bandwidth_for(n);
    let passes = schedule(b, opts.tile_width_for::<T>(b, SvdJob::Vectors));
    let refl = random_reflectors::<T>(n, &passes);
    let sides: Vec<_> = (0..passes.len())
        .map(|p| refl.pass(p).left_side())
        .collect();
    let entries: usize = passes
        .iter()
        .map(|&p| {
            (0..num_sweeps(n, p))
                .map(|r| {
                    (0..steps(n, p, r))
                        .map(|s| task_geom(n, p, r, s).len)
                        .sum::<usize>()
                })
                .sum::<usize>()
        })
        .sum();
    let flops = 4.0 * entries as f64 * n as f64;
    let kc = opts.col_block_for(n);
    let group = opts.q2_group.max(1);
    let z0: Mat<T> = gallery::random_gaussian(n, n, 7);
    let win = opts.q2_window_kib * 1024;
    let variants: [(&str, (usize, BlockKernel)); 6] = [
        ("strip", (0, BlockKernel::Strip)),
        ("strip+window", (win, BlockKernel::Strip)),
        ("gemm", (0, BlockKernel::Gemm)),
        ("gemm+window", (win, BlockKernel::Gemm)),
        ("fma", (0, BlockKernel::Fma)),
        ("fma+window", (win, BlockKernel::Fma)),
    ];
    let mut times = vec![Vec::new(); variants.len()];
    for _ in 0..args.reps {
        for (k, (_, (bytes, kern))) in variants.iter().enumerate() {
            let mut z = z0.clone();
            let t = Instant::now();
            let mut j = 0;
            while j < n {
                let w = kc.min(n - j);
                let zc = z.as_mut().subcols_mut(j, w);
                apply_q2_sides_with(&sides, group, *bytes, *kern, zc);
                j += w;
            }
            times[k].push(t.elapsed().as_secs_f64());
        }
    }
    for (k, (name, _)) in variants.iter().enumerate() {
        let t = median(times[k].clone());
        println!(
            "q2u-kernel n {n} {} b {b} passes {} group {group} kc {kc}: {name:>13} {t:.3} s, {:.1} GF/s ({:.0}% of 1-thread GEMM {gemm1:.1})",
            T::NAME,
            passes.len(),
            flops / t / 1e9,
            100.0 * flops / t / 1e9 / gemm1
        );
    }
}

/// `--bdsdc-kernel`: the bidiagonal D&C on one thread, timed per piece (module docs).
fn bdsdc_kernel<T: Scalar>(args: &Args, n: usize, gemm1: f64) {
    use eigenflow::linalg::bidiagonal::bdsdc::{col_tiles, solve_leaf, BdNode, BdTree, SvdMerge};
    let params = args.opts.bdsdc_params();
    let mut rng = gallery::Rng::new(3);
    // About the Golub-Kahan bidiagonal of a Gaussian matrix (entries near
    // chi_{n-i}): delocalised vectors, so the merges deflate little, as in the
    // pipeline (a uniformly random bidiagonal deflates almost everything).
    let mut chi = |k: usize| T::of((k as f64).sqrt() + 0.5 * rng.gaussian());
    let d0: Vec<T> = (0..n).map(|i| chi(n - i)).collect();
    let e0: Vec<T> = (0..n - 1).map(|i| chi(n - i - 1)).collect();
    let tg = 2.0 * (n as f64).powi(3) / (gemm1 * 1e9);
    for _ in 0..args.reps {
        let mut d = d0.clone();
        let mut u = Mat::<T>::zeros(n, n);
        let mut v = Mat::<T>::zeros(n, n);
        let tree = BdTree::new(n, params.leaf_size);
        // Per piece; the products also per merge size.
        let (mut leaf, mut defl, mut roots, mut low, mut other) = (0.0, 0.0, 0.0, 0.0, 0.0);
        let mut apply: std::collections::BTreeMap<usize, f64> = Default::default();
        let total = Instant::now();
        for node in &tree.nodes {
            let (r, c) = (node.rows(), node.cols());
            let mut ub = u.as_mut().submatrix_mut(r.start, r.start, r.len(), r.len());
            let mut vb = v.as_mut().submatrix_mut(c.start, c.start, c.len(), c.len());
            let t = Instant::now();
            match *node {
                BdNode::Leaf { begin, .. } => {
                    solve_leaf(&mut d[r.clone()], &e0[begin..c.end - 1], ub, vb).expect("leaf");
                    leaf += t.elapsed().as_secs_f64();
                }
                BdNode::Merge { begin, mid, .. } => {
                    let dl = &mut d[r.clone()];
                    let (alpha, beta) = (d0[mid], e0[mid]);
                    let mut work = vec![
                        T::zero();
                        SvdMerge::<T>::workspace_len(r.len(), c.len(), mid - begin)
                    ];
                    let mut p = SvdMerge::new(
                        dl,
                        alpha,
                        beta,
                        ub.as_mut(),
                        vb.as_mut(),
                        mid - begin,
                        &mut work,
                    )
                    .expect("deflate");
                    defl += t.elapsed().as_secs_f64();
                    let t = Instant::now();
                    p.solve_roots_range(0..p.k()).expect("roots");
                    roots += t.elapsed().as_secs_f64();
                    let t = Instant::now();
                    p.lowner(ub.as_mut(), vb.as_mut()).expect("lowner");
                    low += t.elapsed().as_secs_f64();
                    let t = Instant::now();
                    for tile in col_tiles(r.len(), params.col_tile) {
                        p.apply_cols(
                            tile.clone(),
                            &work,
                            ub.as_mut().subcols_mut(tile.start, tile.len()),
                            vb.as_mut().subcols_mut(tile.start, tile.len()),
                        )
                        .expect("apply");
                    }
                    *apply.entry(r.len()).or_default() += t.elapsed().as_secs_f64();
                    let t = Instant::now();
                    p.singular_values_into(dl);
                    other += t.elapsed().as_secs_f64();
                }
            }
        }
        let total = total.elapsed().as_secs_f64();
        let sum_apply: f64 = apply.values().sum();
        println!(
            "bdsdc-kernel n {n} {} leaf {} tile {}: total {total:.3} s = {:.2} T_gemm(1 thread {gemm1:.1} GF/s); leaves {leaf:.3} deflate {defl:.3} roots {roots:.3} lowner {low:.3} products {sum_apply:.3} other {other:.3}",
            T::NAME,
            params.leaf_size,
            params.col_tile,
            total / tg
        );
        let levels: Vec<String> = apply
            .iter()
            .rev()
            .map(|(len, t)| format!("{len}:{t:.3}"))
            .collect();
        println!("  products by merge size: {}", levels.join(" "));
    }
}

/// `--gebrd-kernel`: the one-stage reduction `gebrd_on` of an `n x n` matrix
/// alone, on the calling thread and on runtimes of `--threads`, in GFLOP/s
/// of its `8/3 n^3` flops.
fn gebrd_kernel<T: Scalar>(args: &Args, n: usize) {
    use eigenflow::linalg::bidiagonal::gebrd::{flops, gebrd_on, GEBRD_BLOCK};
    let a: Mat<T> = gallery::random_gaussian(n, n, 42);
    for &threads in &args.threads {
        let rt = Runtime::builder().threads(threads).build();
        let mut times = Vec::new();
        for _ in 0..args.reps {
            let mut w = a.clone();
            let z = T::zero();
            let (mut d, mut e) = (vec![z; n], vec![z; n.saturating_sub(1)]);
            let (mut tq, mut tp) = (vec![z; n], vec![z; n]);
            let t = Instant::now();
            gebrd_on(
                w.as_mut(),
                GEBRD_BLOCK,
                &mut d,
                &mut e,
                &mut tq,
                &mut tp,
                rt.fork(),
            )
            .expect("gebrd");
            times.push(t.elapsed().as_secs_f64());
        }
        let t = median(times);
        println!(
            "gebrd {n} {} {threads} thr: {t:.4} s, {:.2} GFLOP/s",
            T::NAME,
            flops(n, n) / t / 1e9
        );
    }
}

fn main() {
    let args = args();
    if args.gebrd_kernel {
        for p in &args.precisions {
            for &n in &args.sizes {
                match p.as_str() {
                    "f32" => gebrd_kernel::<f32>(&args, n),
                    _ => gebrd_kernel::<f64>(&args, n),
                }
            }
        }
        return;
    }
    if args.bdsdc_kernel {
        for p in &args.precisions {
            let gemm1 = match p.as_str() {
                "f32" => gemm_rate::<f32>(1, 1024),
                _ => gemm_rate::<f64>(1, 1024),
            };
            for &n in &args.sizes {
                match p.as_str() {
                    "f32" => bdsdc_kernel::<f32>(&args, n, gemm1),
                    _ => bdsdc_kernel::<f64>(&args, n, gemm1),
                }
            }
        }
        return;
    }
    if args.q2_kernel {
        for p in &args.precisions {
            let gemm1 = match p.as_str() {
                "f32" => gemm_rate::<f32>(1, 1024),
                _ => gemm_rate::<f64>(1, 1024),
            };
            for &n in &args.sizes {
                match p.as_str() {
                    "f32" => q2_kernel::<f32>(&args, n, gemm1),
                    _ => q2_kernel::<f64>(&args, n, gemm1),
                }
            }
        }
        return;
    }
    if !args.json {
        println!(
            "{:>7} {:>5} {:>5} {:>4} {:>3} {:>9} {:>6} {:>9} {:>6} {:>8} {:>6}  stages (T_gemm)",
            "job", "m", "n", "prec", "thr", "ours (s)", "Tg", "faer (s)", "Tg", "speedup", "err"
        );
    }
    for p in &args.precisions {
        for &threads in &args.threads {
            let gemm = match p.as_str() {
                "f32" => gemm_rate::<f32>(threads, 2048),
                _ => gemm_rate::<f64>(threads, 2048),
            };
            if !args.json {
                println!("# {p}, {threads} thread(s): GEMM rate {gemm:.1} GFLOP/s");
            }
            for job in &args.jobs {
                let job = if job == "vectors" {
                    SvdJob::Vectors
                } else {
                    SvdJob::Values
                };
                for &n in &args.sizes {
                    match p.as_str() {
                        "f32" => case::<f32>(&args, job, n, threads, gemm),
                        _ => case::<f64>(&args, job, n, threads, gemm),
                    }
                }
            }
        }
    }
}
