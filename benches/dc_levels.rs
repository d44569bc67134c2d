//! Where the time of the tridiagonal divide and conquer goes, per merge level
//! (issue 60, point 3): one thread, the pieces of `linalg::tridiagonal::stedc`
//! called in the order of its sequential driver, timed one by one.
//!
//! Per level (level 0 is the root merge): the number of merges, `K/n` after
//! deflation, the shapes of the two merge GEMMs (`n1 x ntop` and `n2 x nbot`
//! times the roots), the seconds of each step and the GF/s of the apply step
//! (useful GEMM flops over its time) beside faer's GEMM at exactly the same
//! shapes, timed right after it in the same run (`gemm`). `apply - gemm` is
//! the time of the eigenvector construction and the copies inside the apply.
//! The leaves (implicit QL/QR) come as their own row.
//!
//! The families: the tridiagonals of a random (uniform in `[-1, 1]`), a
//! clustered and a geometric spectrum (`gallery`), formed in
//! `O(n^2)` as the Lanczos matrix of `diag(lambda)` with a random unit start
//! vector, which is what Householder tridiagonalisation of `Q diag(lambda)
//! Q^T` gives for a random orthogonal `Q` (see `families::lanczos_tridiagonal`); and,
//! on request, `random-entries`, a tridiagonal with random entries (the unit
//! tests' `random`, which deflates almost everything).
//!
//! With `--svd`, the same table for the bidiagonal divide and conquer
//! (`linalg::bidiagonal::bdsdc`, its four merge GEMMs: the top and bottom
//! groups of `U` and of `V`), on upper bidiagonals `R` with `R^T R` the
//! Lanczos tridiagonal of the squared singular values (random in
//! `[0.01, 1]`, clustered, geometric with condition `1e4`: the Cholesky
//! factor loses the smallest ones beyond that).
//!
//! `cargo bench --bench dc_levels -- [--sizes 2048,4096,8192]
//!     [--families random,clustered,geometric] [--leaf 32] [--tile 256] [--svd]`

#[path = "common/mod.rs"]
mod common;
#[path = "dc_levels/families.rs"]
mod families;

use common::list;
use eigenflow::graph::TaskGraph;
use eigenflow::linalg::bidiagonal::bdsdc::merge::SvdMerge;
use eigenflow::linalg::bidiagonal::bdsdc::{solve_leaf as bd_solve_leaf, BdNode, BdTree};
use eigenflow::linalg::tridiagonal::stedc::serial::scale_block;
use eigenflow::linalg::tridiagonal::stedc::{
    col_tiles, solve_leaf, DcNode, DcParams, DcTree, MergeProblem, OutCol,
};
use eigenflow::pipeline::evd::{stedc, Tridiagonal};
use eigenflow::runtime::Runtime;
use faer::linalg::matmul::matmul;
use faer::reborrow::ReborrowMut;
use faer::{Accum, Mat, MatMut, MatRef, Par};
use families::{bidiagonal_family, family};
use std::collections::BTreeMap;
use std::time::Instant;

fn main() {
    let defaults = DcParams::default();
    let mut svd = false;
    let (mut sizes, mut families, mut leaf, mut tile) = (
        vec![2048usize, 4096, 8192],
        vec!["random".to_string(), "clustered".into(), "geometric".into()],
        defaults.leaf_size,
        defaults.col_tile,
    );
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().expect("a value after the flag");
        match flag.as_str() {
            "--sizes" => sizes = list(&val()),
            "--families" => families = list(&val()),
            "--leaf" => leaf = val().parse().expect("--leaf L"),
            "--tile" => tile = val().parse().expect("--tile T"),
            "--svd" => svd = true,
            "--gemm-widths" => {
                // faer's rate at the root's shape for several tile widths,
                // interleaved, best of 5 rounds.
                let m: usize = val().parse().expect("--gemm-widths M");
                let widths = [128usize, 256, 512, 1024];
                let mut best = [0.0f64; 4];
                for _ in 0..5 {
                    for (b, &w) in best.iter_mut().zip(&widths) {
                        *b = b.max(gemm_rate(m, m, w));
                    }
                }
                for (b, w) in best.iter().zip(widths) {
                    println!("faer GEMM {m}x{m}x{w}: {b:.1} GF/s");
                }
                return;
            }
            "--bench" => {}
            other => panic!("unknown flag {other}"),
        }
    }
    for &n in &sizes {
        for fam in &families {
            if svd {
                let (mut d, e) = bidiagonal_family(fam, n, 7);
                let levels = run_svd(&mut d, &e, leaf, tile);
                print_table(&format!("bdsdc {fam}"), n, &levels);
                continue;
            }
            let (mut d, mut e) = family(fam, n, 7);
            scale_block(&mut d, &mut e);
            let (d0, e0) = (d.clone(), e.clone());
            let levels = run(&mut d, &e, leaf, tile);
            print_table(fam, n, &levels);
            println!(
                "  faer GEMM reference, same run: {}x{}x{} {:.1} GF/s, 2048x2048x2048 {:.1} GF/s",
                n / 2,
                n / 2,
                tile,
                gemm_rate(n / 2, n / 2, tile),
                gemm_rate(2048, 2048, 2048)
            );
            for threads in [1, 2] {
                pipeline(&d0, &e0, leaf, tile, threads);
            }
        }
    }
}

/// Accumulated over the merges of one level (or the leaves).
#[derive(Default, Clone)]
struct Level {
    merges: usize,
    n: usize,
    k: usize,
    /// `n1 ntop` and `n2 nbot` of the level's first merge (its GEMM shapes).
    shape: (usize, usize, usize, usize),
    gemm_flops: f64,
    /// Roots in tiles whose root columns are contiguous.
    contiguous: usize,
    /// Seconds: deflate (step 1), roots (2), order (3), Löwner (4), apply (5),
    /// faer GEMM at the apply's shapes.
    t: [f64; 6],
}

/// The sequential driver of `serial::tridiag_eigvecs`, each step timed.
/// Returns the levels (index 0 the root) and the leaves as the last entry.
fn run(d: &mut [f64], e: &[f64], leaf: usize, tile: usize) -> Vec<Level> {
    let n = d.len();
    let mut q = Mat::<f64>::zeros(n, n);
    let tree = DcTree::new(n, leaf);
    let depth = |len: usize| (n as f64 / len as f64).log2().round() as usize;
    let mut levels = vec![Level::default(); depth(leaf) + 2];
    let mut leaves = Level::default();
    for (idx, node) in tree.nodes.iter().enumerate() {
        match *node {
            DcNode::Leaf { begin, end } => {
                let (a, b) = tree.leaf_tears(idx, e);
                let len = end - begin;
                let t0 = Instant::now();
                solve_leaf(
                    &mut d[begin..end],
                    &e[begin..end - 1],
                    a,
                    b,
                    q.as_mut().submatrix_mut(begin, begin, len, len),
                )
                .expect("leaf");
                leaves.t[0] += t0.elapsed().as_secs_f64();
                leaves.merges += 1;
                leaves.n += len;
            }
            DcNode::Merge {
                begin, cut, end, ..
            } => {
                let len = end - begin;
                let lv = &mut levels[depth(len)];
                merge_timed(
                    &mut d[begin..end],
                    q.as_mut().submatrix_mut(begin, begin, len, len),
                    cut - begin,
                    e[cut - 1],
                    tile,
                    lv,
                );
            }
        }
    }
    levels.retain(|l| l.merges > 0);
    levels.push(leaves);
    levels
}

/// `serial::merge_node`, each step timed into `lv`, then faer's GEMM at the
/// apply's shapes on the same workspace.
fn merge_timed(
    d: &mut [f64],
    mut q: MatMut<'_, f64>,
    n1: usize,
    beta: f64,
    tile: usize,
    lv: &mut Level,
) {
    let n = d.len();
    let n2 = n - n1;
    let mut work = vec![0.0; MergeProblem::<f64>::workspace_len(n, n1)];
    let t0 = Instant::now();
    let mut p = MergeProblem::new(d, q.rb_mut(), n1, beta, &mut work).expect("deflate");
    let t1 = Instant::now();
    let k = p.k();
    p.solve_roots_range(0..k).expect("roots");
    let t2 = Instant::now();
    p.order_output(q.rb_mut()).expect("order");
    let t3 = Instant::now();
    p.lowner_range(0..k).expect("lowner");
    let t4 = Instant::now();
    for t in col_tiles(n, tile) {
        p.apply_cols(t.clone(), &work, q.rb_mut().subcols_mut(t.start, t.len()))
            .expect("apply");
    }
    let t5 = Instant::now();
    p.eigenvalues_into(d);
    let [c0, c1, c2] = p.column_types();
    let (ntop, nbot) = (c0 + c1, c1 + c2);
    let flops = 2.0 * k as f64 * (n1 * ntop + n2 * nbot) as f64;
    let tg = gemm_at_shapes(&work, n1, n2, ntop, nbot, k, tile);
    lv.contiguous += contiguous_roots(p.out_cols(), tile);
    if lv.merges == 0 {
        lv.shape = (n1, ntop, n2, nbot);
    }
    lv.merges += 1;
    lv.n += n;
    lv.k += k;
    lv.gemm_flops += flops;
    let secs = |a: Instant, b: Instant| (b - a).as_secs_f64();
    for (acc, x) in lv.t.iter_mut().zip([
        secs(t0, t1),
        secs(t1, t2),
        secs(t2, t3),
        secs(t3, t4),
        secs(t4, t5),
        tg,
    ]) {
        *acc += x;
    }
}

/// The roots in tiles whose root columns are one contiguous run (no deflated
/// column between them): those the apply writes without a temporary.
fn contiguous_roots(out: &[OutCol], tile: usize) -> usize {
    let mut count = 0;
    for t in col_tiles(out.len(), tile) {
        let srcs = &out[t];
        let pos: Vec<usize> = (0..srcs.len())
            .filter(|&c| matches!(srcs[c], OutCol::Root(_)))
            .collect();
        if let (Some(&a), Some(&b)) = (pos.first(), pos.last()) {
            if b - a + 1 == pos.len() {
                count += pos.len();
            }
        }
    }
    count
}

/// Seconds of faer's sequential GEMM doing the apply's products: the `k`
/// roots in tiles of `tile` columns, `n1 x ntop` and `n2 x nbot` halves of
/// `work` times a `ntop x tile` and a `nbot x tile` block (any values: the
/// rate does not depend on them).
fn gemm_at_shapes(
    work: &[f64],
    n1: usize,
    n2: usize,
    ntop: usize,
    nbot: usize,
    k: usize,
    tile: usize,
) -> f64 {
    let (top, bot) = work.split_at(n1 * ntop);
    let qtop = MatRef::from_column_major_slice(top, n1, ntop);
    let qbot = MatRef::from_column_major_slice(&bot[..n2 * nbot], n2, nbot);
    let u = Mat::<f64>::from_fn(k, tile.min(k.max(1)), |i, j| ((i + j) % 7) as f64);
    let mut out = Mat::<f64>::zeros(n1 + n2, u.ncols());
    let t0 = Instant::now();
    for t in col_tiles(k, tile) {
        let w = t.len();
        if ntop > 0 {
            matmul(
                out.as_mut().submatrix_mut(0, 0, n1, w),
                Accum::Replace,
                qtop,
                u.as_ref().submatrix(0, 0, ntop, w),
                1.0,
                Par::Seq,
            );
        }
        if nbot > 0 {
            matmul(
                out.as_mut().submatrix_mut(n1, 0, n2, w),
                Accum::Replace,
                qbot,
                u.as_ref().submatrix(k - nbot, 0, nbot, w),
                1.0,
                Par::Seq,
            );
        }
    }
    t0.elapsed().as_secs_f64()
}

fn print_table(fam: &str, n: usize, levels: &[Level]) {
    println!("\n{fam}, n = {n}, one thread");
    println!(
        "{:>5} {:>6} {:>6} {:>6} {:>22} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6}",
        "level",
        "merges",
        "size",
        "K/n",
        "gemm n1xntop|n2xnbot",
        "deflate",
        "roots",
        "order",
        "lowner",
        "apply",
        "gemm",
        "applyGF",
        "gemmGF",
        "contig"
    );
    let mut tot = [0.0f64; 6];
    let mut flops = 0.0;
    let (last, merges) = levels.split_last().expect("the leaves");
    for (i, l) in merges.iter().enumerate() {
        let (n1, nt, n2, nb) = l.shape;
        println!(
            "{:>5} {:>6} {:>6} {:>6.3} {:>22} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>8.1} {:>8.1} {:>6.2}",
            i,
            l.merges,
            l.n / l.merges,
            l.k as f64 / l.n as f64,
            format!("{n1}x{nt}|{n2}x{nb}"),
            l.t[0],
            l.t[1],
            l.t[2],
            l.t[3],
            l.t[4],
            l.t[5],
            l.gemm_flops / l.t[4] / 1e9,
            l.gemm_flops / l.t[5] / 1e9,
            l.contiguous as f64 / l.k.max(1) as f64,
        );
        for (a, x) in tot.iter_mut().zip(l.t) {
            *a += x;
        }
        flops += l.gemm_flops;
    }
    let all: f64 = tot[..5].iter().sum::<f64>() + last.t[0];
    println!(
        "  all merges: deflate {:.3} roots {:.3} order {:.3} lowner {:.3} apply {:.3} \
         (faer gemm {:.3}, apply - gemm {:.3}); leaves ({} of ~{}) {:.3}; total {:.3} s; \
         merge gemm {:.1} GF ({:.2} n^3), {:.1} GF/s in apply, {:.1} GF/s faer",
        tot[0],
        tot[1],
        tot[2],
        tot[3],
        tot[4],
        tot[5],
        tot[4] - tot[5],
        last.merges,
        last.n / last.merges.max(1),
        last.t[0],
        all,
        flops / 1e9,
        flops / (n as f64).powi(3),
        flops / tot[4] / 1e9,
        flops / tot[5] / 1e9,
    );
}

/// The pipeline's divide and conquer (`pipeline::evd::stedc`) on the same
/// tridiagonal on `threads` threads: wall and busy seconds, and the busy
/// seconds by kind of task (the last part of its name).
fn pipeline(d: &[f64], e: &[f64], leaf: usize, tile: usize, threads: usize) {
    let params = DcParams {
        leaf_size: leaf,
        col_tile: tile,
    };
    let mut g = TaskGraph::new();
    let tri = Tridiagonal::from_vectors(d, e).expect("tridiagonal");
    let _stage = stedc(&mut g, tri, &params, 1.0).expect("graph");
    let report = Runtime::builder()
        .threads(threads)
        .build()
        .run(g)
        .expect("run");
    let mut kinds: BTreeMap<String, f64> = BTreeMap::new();
    let mut busy = 0.0;
    for t in &report.tasks {
        let secs = t.end.saturating_sub(t.start).as_secs_f64();
        let kind = match t.name.rsplit_once("].") {
            Some((_, k)) => k.split('[').next().unwrap_or(k).to_string(),
            None => t.name.split('[').next().unwrap_or(&t.name).to_string(),
        };
        *kinds.entry(kind).or_default() += secs;
        busy += secs;
    }
    let mut leaf_ms: Vec<f64> = report
        .tasks
        .iter()
        .filter(|t| t.name.starts_with("stedc.leaf"))
        .map(|t| t.end.saturating_sub(t.start).as_secs_f64() * 1e3)
        .collect();
    leaf_ms.sort_by(f64::total_cmp);
    if let (Some(lo), Some(hi)) = (leaf_ms.first(), leaf_ms.last()) {
        println!(
            "  leaf tasks: {} of them, ms min {lo:.3} median {:.3} max {hi:.3}",
            leaf_ms.len(),
            leaf_ms[leaf_ms.len() / 2]
        );
    }
    let parts: Vec<String> = kinds.iter().map(|(k, s)| format!("{k} {s:.3}")).collect();
    println!(
        "  pipeline stedc, {threads} thread(s): wall {:.3} s, busy {busy:.3} s ({})",
        report.wall.as_secs_f64(),
        parts.join(", ")
    );
}

/// GF/s of faer's sequential `m x k` times `k x w` GEMM (best of three).
fn gemm_rate(m: usize, k: usize, w: usize) -> f64 {
    let a = Mat::<f64>::from_fn(m, k, |i, j| ((i * 3 + j) % 11) as f64);
    let b = Mat::<f64>::from_fn(k, w, |i, j| ((i + 5 * j) % 13) as f64);
    let mut c = Mat::<f64>::zeros(m, w);
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t0 = Instant::now();
        matmul(
            c.as_mut(),
            Accum::Replace,
            a.as_ref(),
            b.as_ref(),
            1.0,
            Par::Seq,
        );
        best = best.min(t0.elapsed().as_secs_f64());
    }
    2.0 * (m * k * w) as f64 / best / 1e9
}

/// `bdsdc`'s sequential driver (its test oracle) over the tree, each merge
/// step timed as in [`run`], the apply beside faer's GEMM at its four shapes.
fn run_svd(d: &mut [f64], e: &[f64], leaf: usize, tile: usize) -> Vec<Level> {
    let n = d.len();
    let (mut u, mut v) = (Mat::<f64>::zeros(n, n), Mat::<f64>::zeros(n, n));
    let tree = BdTree::new(n, leaf);
    let depth = |len: usize| (n as f64 / len as f64).log2().round() as usize;
    let mut levels = vec![Level::default(); depth(leaf.max(3)) + 2];
    let mut leaves = Level::default();
    let d0 = d.to_vec();
    for node in &tree.nodes {
        let (r, c) = (node.rows(), node.cols());
        let mut ub = u.as_mut().submatrix_mut(r.start, r.start, r.len(), r.len());
        let mut vb = v.as_mut().submatrix_mut(c.start, c.start, c.len(), c.len());
        match *node {
            BdNode::Leaf { begin, .. } => {
                let t0 = Instant::now();
                bd_solve_leaf(&mut d[r.clone()], &e[begin..c.end - 1], ub, vb).expect("leaf");
                leaves.t[0] += t0.elapsed().as_secs_f64();
                leaves.merges += 1;
                leaves.n += r.len();
            }
            BdNode::Merge { begin, mid, .. } => {
                let len = r.len();
                let lv = &mut levels[depth(len)];
                let nl = mid - begin;
                let mut work = vec![0.0; SvdMerge::<f64>::workspace_len(len, c.len(), nl)];
                let t0 = Instant::now();
                let dr = &mut d[r.clone()];
                let mut p =
                    SvdMerge::new(dr, d0[mid], e[mid], ub.rb_mut(), vb.rb_mut(), nl, &mut work)
                        .expect("deflate");
                let t1 = Instant::now();
                let k = p.k();
                p.solve_roots_range(0..k).expect("roots");
                let t2 = Instant::now();
                p.order_output(ub.rb_mut(), vb.rb_mut(), false)
                    .expect("order");
                let t3 = Instant::now();
                p.lowner_range(0..k).expect("lowner");
                let t4 = Instant::now();
                for t in col_tiles(len, tile) {
                    p.apply_cols(
                        t.clone(),
                        &work,
                        ub.rb_mut().subcols_mut(t.start, t.len()),
                        vb.rb_mut().subcols_mut(t.start, t.len()),
                    )
                    .expect("apply");
                }
                let t5 = Instant::now();
                p.singular_values_into(dr);
                lv.contiguous += contiguous_roots(p.out_cols(), tile);
                let shapes = p.gemm_shapes();
                let tg = shapes_gemm_time(&shapes, k, tile);
                let words: usize = shapes.iter().map(|(a, b)| a * b).sum();
                if lv.merges == 0 {
                    lv.shape = (shapes[0].0, shapes[0].1, shapes[1].0, shapes[1].1);
                }
                lv.merges += 1;
                lv.n += len;
                lv.k += k;
                lv.gemm_flops += 2.0 * k as f64 * words as f64;
                let secs = |a: Instant, b: Instant| (b - a).as_secs_f64();
                for (acc, x) in lv.t.iter_mut().zip([
                    secs(t0, t1),
                    secs(t1, t2),
                    secs(t2, t3),
                    secs(t3, t4),
                    secs(t4, t5),
                    tg,
                ]) {
                    *acc += x;
                }
            }
        }
    }
    levels.retain(|l| l.merges > 0);
    levels.push(leaves);
    levels
}

/// Seconds of faer's sequential GEMM on blocks of the given shapes times `k`
/// columns in tiles of `tile` (any values).
fn shapes_gemm_time(shapes: &[(usize, usize)], k: usize, tile: usize) -> f64 {
    let mut mats: Vec<(Mat<f64>, Mat<f64>, Mat<f64>)> = shapes
        .iter()
        .filter(|(r, c)| r * c > 0)
        .map(|&(r, c)| {
            let w = tile.min(k.max(1));
            (
                Mat::from_fn(r, c, |i, j| ((i + 2 * j) % 7) as f64),
                Mat::from_fn(c, w, |i, j| ((i + j) % 5) as f64),
                Mat::zeros(r, w),
            )
        })
        .collect();
    let t0 = Instant::now();
    for t in col_tiles(k, tile) {
        for (a, b, out) in mats.iter_mut() {
            let w = t.len();
            matmul(
                out.as_mut().subcols_mut(0, w),
                Accum::Replace,
                a.as_ref(),
                b.as_ref().subcols(0, w),
                1.0,
                Par::Seq,
            );
        }
    }
    t0.elapsed().as_secs_f64()
}
