//! Tests of the parent module.

use super::*;
use faer::Side;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub(crate) fn random_band<T: Scalar>(n: usize, b: usize, seed: u64) -> SymBand<T> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut band = SymBand::<T>::zeros(n, b);
    for c in 0..n {
        for r in c..(c + b + 1).min(n) {
            band.set(r, c, T::of(rng.random::<f64>() * 2.0 - 1.0));
        }
    }
    band
}

fn bits<T: Scalar>(x: &[T]) -> Vec<u64> {
    x.iter().map(|v| v.f64().to_bits()).collect()
}

#[test]
fn geometry_counts() {
    assert_eq!(num_sweeps(0), 0);
    assert_eq!(num_sweeps(2), 0);
    assert_eq!(num_sweeps(3), 1);
    // M_s is the number of r0 = s + 1 + m b with r0 <= n - 2.
    for n in 0..40 {
        for b in 1..6 {
            for s in 0..n + 2 {
                let brute = (0..n)
                    .filter(|m| s + 1 + m * b + 2 <= n && s + 2 < n)
                    .count();
                assert_eq!(steps(n, b, s), brute, "n {n} b {b} s {s}");
            }
        }
    }
    let g = task_geom(10, 3, 0, 0);
    assert_eq!(
        g,
        TaskGeom {
            r0: 1,
            len: 3,
            ce: 0,
            below: 3
        }
    );
    let g = task_geom(10, 3, 0, 2);
    assert_eq!(
        g,
        TaskGeom {
            r0: 7,
            len: 3,
            ce: 4,
            below: 0
        }
    );
    assert_eq!(task_footprint(10, 3, 1, 1), (5..10, 2..8));
}

#[test]
fn larfg_convention() {
    let mut a = 3.0f64;
    let mut x = [4.0f64];
    let tau = larfg(&mut a, &mut x);
    assert!((a + 5.0).abs() < 1e-15);
    // H (3, 4) = (beta, 0) with v = (1, x).
    let v = [1.0, x[0]];
    let y = [3.0, 4.0];
    let d = v[0] * y[0] + v[1] * y[1];
    let z = [y[0] - tau * d * v[0], y[1] - tau * d * v[1]];
    assert!((z[0] + 5.0).abs() < 1e-14 && z[1].abs() < 1e-14);
    // Zero tail: tau = 0, alpha unchanged, even for negative alpha.
    let mut a = -2.0f64;
    let mut x = [0.0f64, 0.0];
    assert_eq!(larfg(&mut a, &mut x), 0.0);
    assert_eq!(a, -2.0);
    // Tiny entries: dlarfg's rescaling keeps full accuracy.
    let mut a = 3e-310f64;
    let mut x = [4e-310f64];
    let tau = larfg(&mut a, &mut x);
    assert!((a / -5e-310 - 1.0).abs() < 1e-6, "{a}");
    assert!(
        (tau - 1.6).abs() < 1e-6 && (x[0] - 0.5).abs() < 1e-6,
        "{tau} {x:?}"
    );
    // Huge entries do not overflow.
    let mut a = 3e300f64;
    let mut x = [4e300f64];
    larfg(&mut a, &mut x);
    assert!((a / -5e300 - 1.0).abs() < 1e-14);
    let mut a = 0.0f32;
    let mut x = [3e-30f32, 4e-30];
    let tau = larfg(&mut a, &mut x);
    assert!((a / -5e-30 - 1.0).abs() < 1e-5 && (tau - 1.0).abs() < 1e-5);
}

/// Runs the reference and checks the exact-zero structure and eigenvalues.
fn check_sb2st<T: Scalar>(n: usize, b: usize, seed: u64) -> f64 {
    let band = random_band::<T>(n, b, seed);
    let dense = band.to_dense();
    let mut work = band.clone();
    sb2st_reference(&mut work, b, None);
    let ldab = work.ldab();
    for c in 0..n {
        for k in 2..ldab.min(n - c) {
            assert!(
                work.as_slice()[k + c * ldab] == T::zero(),
                "n {n} b {b}: entry ({}, {c}) = {} not zero",
                c + k,
                work.as_slice()[k + c * ldab]
            );
        }
    }
    if n == 0 {
        return 0.0;
    }
    let mut want: Vec<f64> = dense
        .self_adjoint_eigenvalues(Side::Lower)
        .unwrap()
        .iter()
        .map(|x| x.f64())
        .collect();
    let mut got: Vec<f64> = work
        .to_dense()
        .self_adjoint_eigenvalues(Side::Lower)
        .unwrap()
        .iter()
        .map(|x| x.f64())
        .collect();
    want.sort_by(f64::total_cmp);
    got.sort_by(f64::total_cmp);
    let norm = dense.norm_l2().f64().max(f64::MIN_POSITIVE);
    let err = want
        .iter()
        .zip(&got)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    err / (n as f64 * norm * T::EPS.f64())
}

fn sizes(b: usize) -> Vec<usize> {
    vec![1, 2, 3, b, b + 1, 2 * b + 1, 100, 257]
}

#[test]
fn sb2st_tridiagonal_and_eigenvalues() {
    let mut worst = (0.0f64, 0.0f64);
    for b in [2usize, 3, 8, 32] {
        for (i, n) in sizes(b).into_iter().enumerate() {
            let r64 = check_sb2st::<f64>(n, b, 17 + i as u64);
            let r32 = check_sb2st::<f32>(n, b, 17 + i as u64);
            assert!(r64 < 10.0, "f64 n {n} b {b}: eigenvalue ratio {r64}");
            assert!(r32 < 10.0, "f32 n {n} b {b}: eigenvalue ratio {r32}");
            worst = (worst.0.max(r64), worst.1.max(r32));
        }
    }
    eprintln!(
        "sb2st eigenvalue ratio |dlambda|/(n ||B|| eps): f64 {:.3e}, f32 {:.3e}",
        worst.0, worst.1
    );
}

#[test]
fn sb2st_eigenvalues_catch_a_broken_kernel() {
    // Negative control of the eigenvalue oracle: perturb one entry mid-way.
    let (n, b) = (60, 4);
    let band = random_band::<f64>(n, b, 3);
    let dense = band.to_dense();
    let mut work = band.clone();
    let mut view = work.as_band_mut();
    for s in 0..num_sweeps(n) {
        for m in 0..steps(n, b, s) {
            chase_step(&mut view, b, s, m, None);
            if s == 10 && m == 1 {
                let x = view.get(20, 19);
                view.set(20, 19, x * (1.0 + 1e-10));
            }
        }
    }
    let mut want = dense.self_adjoint_eigenvalues(Side::Lower).unwrap();
    let mut got = work
        .to_dense()
        .self_adjoint_eigenvalues(Side::Lower)
        .unwrap();
    want.sort_by(f64::total_cmp);
    got.sort_by(f64::total_cmp);
    let err = want
        .iter()
        .zip(&got)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    let ratio = err / (n as f64 * dense.norm_l2() * f64::EPSILON / 2.0);
    assert!(ratio > 10.0, "perturbation not detected: {ratio}");
}

/// Every entry a task reads or writes lies in its footprint: poison
/// everything else with NaN and check the footprint stays finite and the
/// rest is untouched.
#[test]
fn footprint_covers_accesses() {
    for (n, b) in [(30usize, 3usize), (25, 4), (17, 2), (40, 8), (9, 8)] {
        let mut band = random_band::<f64>(n, b, 5);
        let ldab = band.ldab();
        let mut view = band.as_band_mut();
        for s in 0..num_sweeps(n) {
            for m in 0..steps(n, b, s) {
                let (rows, cols) = task_footprint(n, b, s, m);
                // Save and poison the outside.
                let mut saved = Vec::new();
                for c in 0..n {
                    for r in c..(c + ldab).min(n) {
                        if !(rows.contains(&r) && cols.contains(&c)) {
                            saved.push((r, c, view.get(r, c)));
                            view.set(r, c, f64::NAN);
                        }
                    }
                }
                chase_step(&mut view, b, s, m, None);
                for c in cols.clone() {
                    for r in rows.clone() {
                        if r >= c && r - c < ldab {
                            assert!(
                                view.get(r, c).is_finite(),
                                "T({s},{m}) read outside its footprint"
                            );
                        }
                    }
                }
                for (r, c, x) in saved {
                    assert!(
                        view.get(r, c).is_nan(),
                        "T({s},{m}) wrote ({r},{c}) outside its footprint"
                    );
                    view.set(r, c, x);
                }
            }
        }
    }
}

// ----- DAG checks ------------------------------------------------------

/// A small DAG: node ids, predecessor lists.
struct Dag {
    preds: Vec<Vec<usize>>,
}

impl Dag {
    /// `reach[i][j]`: j precedes i (transitively).
    fn ancestors(&self) -> Vec<Vec<bool>> {
        let n = self.preds.len();
        let order = self.topo(None);
        let mut anc = vec![vec![false; n]; n];
        for &i in &order {
            for &p in &self.preds[i] {
                anc[i][p] = true;
                let (a, bb) = if p < i {
                    let (lo, hi) = anc.split_at_mut(i);
                    (&mut hi[0], &lo[p])
                } else {
                    let (lo, hi) = anc.split_at_mut(p);
                    (&mut lo[i], &hi[0])
                };
                for k in 0..n {
                    a[k] |= bb[k];
                }
            }
        }
        anc
    }

    /// A topological order; random ready-node choice with `rng`, else the
    /// smallest ready id.
    fn topo(&self, mut rng: Option<&mut StdRng>) -> Vec<usize> {
        let n = self.preds.len();
        let mut indeg: Vec<usize> = self.preds.iter().map(|p| p.len()).collect();
        let mut succ = vec![Vec::new(); n];
        for (i, ps) in self.preds.iter().enumerate() {
            for &p in ps {
                succ[p].push(i);
            }
        }
        let mut ready: Vec<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
        let mut order = Vec::with_capacity(n);
        while !ready.is_empty() {
            let k = match rng.as_mut() {
                Some(r) => r.random_range(0..ready.len()),
                None => 0,
            };
            let i = ready.swap_remove(k);
            order.push(i);
            for &j in &succ[i] {
                indeg[j] -= 1;
                if indeg[j] == 0 {
                    ready.push(j);
                }
            }
        }
        assert_eq!(order.len(), n, "cycle");
        order
    }
}

fn overlaps(a: &(Range<usize>, Range<usize>), b: &(Range<usize>, Range<usize>)) -> bool {
    a.0.start < b.0.end && b.0.start < a.0.end && a.1.start < b.1.end && b.1.start < a.1.end
}

/// The grouped DAG as a `Dag` plus the node -> (g, c) map.
fn grouped_dag(gr: &SweepGrouping) -> (Dag, Vec<(usize, usize)>) {
    let mut nodes = Vec::new();
    let mut base = Vec::new();
    for g in 0..gr.num_groups() {
        base.push(nodes.len());
        for c in 0..gr.num_chunks(g) {
            nodes.push((g, c));
        }
    }
    let preds = nodes
        .iter()
        .map(|&(g, c)| {
            gr.preds(g, c)
                .into_iter()
                .flatten()
                .map(|(pg, pc)| base[pg] + pc)
                .collect()
        })
        .collect();
    (Dag { preds }, nodes)
}

/// Every task belongs to exactly one super-task; in-super-task order is
/// sweep-major.
#[test]
fn grouping_partitions_tasks() {
    for (n, b, gs, cs) in [
        (50, 3, 2, 4),
        (41, 4, 3, 1),
        (33, 2, 1, 1),
        (70, 5, 4, 7),
        (5, 8, 3, 2),
    ] {
        let gr = SweepGrouping::new(n, b, gs, cs);
        let mut seen = std::collections::HashSet::new();
        for g in 0..gr.num_groups() {
            for c in 0..gr.num_chunks(g) {
                for t in gr.tasks(g, c) {
                    assert!(seen.insert(t), "task {t:?} twice");
                }
            }
            // Chunks past lastchunk are empty; the last one is not.
            assert_eq!(gr.tasks(g, gr.num_chunks(g)).count(), 0);
            assert!(gr.tasks(g, gr.last_chunk(g)).count() > 0);
        }
        let total: usize = (0..num_sweeps(n)).map(|s| steps(n, b, s)).sum();
        assert_eq!(seen.len(), total);
    }
}

/// Runs the grouped DAG in `order` on a copy of `band`, returning the band
/// and the reflectors.
fn run_order(
    band: &SymBand<f64>,
    gr: &SweepGrouping,
    nodes: &[(usize, usize)],
    order: &[usize],
) -> (SymBand<f64>, Sb2stReflectors<f64>) {
    let mut work = band.clone();
    let mut refl = Sb2stReflectors::new(gr.n(), gr.b());
    {
        let mut view = work.as_band_mut();
        for &i in order {
            let (g, c) = nodes[i];
            run_super_task(&mut view, gr, g, c, Some(&mut refl));
        }
    }
    (work, refl)
}

/// The main schedule-invariance check: random topological orders of the
/// grouped DAG give results bitwise identical to the sequential order, and
/// unordered super-tasks have disjoint footprints.
#[test]
fn grouped_dag_random_orders_bitwise() {
    let cases = [
        (40usize, 3usize, 1usize, 1usize),
        (37, 2, 1, 1),
        (45, 4, 2, 3),
        (60, 3, 3, 2),
        (50, 5, 4, 7),
        (64, 8, 2, 1),
        (33, 3, 5, 16),
        (70, 2, 3, 5),
        (29, 4, 1, 2),
        (12, 8, 2, 2),
    ];
    let mut rng = StdRng::seed_from_u64(2024);
    for (case, &(n, b, gs, cs)) in cases.iter().enumerate() {
        let band = random_band::<f64>(n, b, 100 + case as u64);
        let mut seq = band.clone();
        let mut seq_refl = Sb2stReflectors::new(n, b);
        sb2st_reference(&mut seq, b, Some(&mut seq_refl));
        let gr = SweepGrouping::new(n, b, gs, cs);
        let (dag, nodes) = grouped_dag(&gr);

        // Footprints of unordered super-tasks are disjoint.
        let anc = dag.ancestors();
        let fps: Vec<_> = nodes.iter().map(|&(g, c)| gr.footprint(g, c)).collect();
        for i in 0..nodes.len() {
            for j in 0..i {
                if anc[i][j] || anc[j][i] {
                    continue;
                }
                if let (Some(a), Some(bb)) = (&fps[i], &fps[j]) {
                    assert!(
                        !overlaps(a, bb),
                        "case {case}: unordered {:?} {:?} overlap: {a:?} {bb:?}",
                        nodes[i],
                        nodes[j]
                    );
                }
            }
        }
        for _ in 0..25 {
            let order = dag.topo(Some(&mut rng));
            let (got, refl) = run_order(&band, &gr, &nodes, &order);
            assert_eq!(
                bits(got.as_slice()),
                bits(seq.as_slice()),
                "case {case}: band differs"
            );
            assert_eq!(
                bits(&refl.data),
                bits(&seq_refl.data),
                "case {case}: reflectors differ"
            );
        }
    }
}

/// The fine DAG orders every pair of tasks whose footprints overlap (so all
/// its topological orders agree), with the tail clamp; lag 2 does not.
#[test]
fn fine_dag_orders_overlapping_tasks() {
    for (n, b) in [(30usize, 3usize), (26, 2), (40, 5), (13, 4)] {
        for (lag, expect_ok) in [(3usize, true), (2, false)] {
            let mut ids = std::collections::HashMap::new();
            let mut tasks = Vec::new();
            for s in 0..num_sweeps(n) {
                for m in 0..steps(n, b, s) {
                    ids.insert((s, m), tasks.len());
                    tasks.push((s, m));
                }
            }
            let preds = tasks
                .iter()
                .map(|&(s, m)| {
                    fine_preds_lag(n, b, s, m, lag)
                        .into_iter()
                        .flatten()
                        .map(|t| ids[&t])
                        .collect()
                })
                .collect();
            let dag = Dag { preds };
            let anc = dag.ancestors();
            let mut bad = 0;
            for i in 0..tasks.len() {
                for j in 0..i {
                    let (a, bb) = (
                        task_footprint(n, b, tasks[i].0, tasks[i].1),
                        task_footprint(n, b, tasks[j].0, tasks[j].1),
                    );
                    if overlaps(&a, &bb) && !anc[i][j] && !anc[j][i] {
                        bad += 1;
                    }
                }
            }
            if expect_ok {
                assert_eq!(
                    bad, 0,
                    "n {n} b {b}: lag 3 leaves overlapping tasks unordered"
                );
            } else {
                assert!(bad > 0, "n {n} b {b}: lag 2 should leave a race");
            }
        }
    }
}

/// Negative control: with a lag of 2, some topological order of the fine
/// DAG (G = C = 1) and of a grouped DAG gives a different result, and some
/// unordered pair of super-tasks overlaps.
#[test]
fn lag_two_is_caught() {
    let mut rng = StdRng::seed_from_u64(7);
    for (n, b, gs, cs) in [
        (40usize, 3usize, 1usize, 1usize),
        (45, 4, 2, 3),
        (50, 3, 3, 2),
    ] {
        let band = random_band::<f64>(n, b, 9);
        let mut seq = band.clone();
        sb2st_reference(&mut seq, b, None);
        let gr = SweepGrouping::with_lag(Sb2stShape { n, b }, gs, cs, 2);
        let (dag, nodes) = grouped_dag(&gr);
        let anc = dag.ancestors();
        let fps: Vec<_> = nodes.iter().map(|&(g, c)| gr.footprint(g, c)).collect();
        let mut overlap = false;
        for i in 0..nodes.len() {
            for j in 0..i {
                if !anc[i][j] && !anc[j][i] {
                    if let (Some(a), Some(bb)) = (&fps[i], &fps[j]) {
                        overlap |= overlaps(a, bb);
                    }
                }
            }
        }
        assert!(overlap, "lag 2, n {n}: no overlapping unordered pair");
        let mut differs = 0;
        for _ in 0..20 {
            let order = dag.topo(Some(&mut rng));
            let (got, _) = run_order(&band, &gr, &nodes, &order);
            if bits(got.as_slice()) != bits(seq.as_slice()) {
                differs += 1;
            }
        }
        assert!(
            differs > 0,
            "lag 2, n {n} G {gs} C {cs}: every random order matched"
        );
    }
}
