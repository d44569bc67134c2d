//! The grouped grain of gb2bd ([`super::grouping`]) against the fine DAG it
//! coarsens: every fine edge is kept, unordered super-tasks touch disjoint
//! entries, and random topological orders give bitwise the serial result.

use super::grouping::{cross_pass_preds, PassGrouping};
use super::*;
use std::collections::HashMap;
use std::ops::Range;

fn overlaps(a: &(Range<usize>, Range<usize>), b: &(Range<usize>, Range<usize>)) -> bool {
    a.0.start < b.0.end && b.0.start < a.0.end && a.1.start < b.1.end && b.1.start < a.1.end
}

/// The grouped multi-pass DAG: nodes `(p, g, c)`, in-pass edges of the
/// grouping, cross-pass edges of [`cross_pass_preds`] to every earlier pass.
struct Grouped {
    nodes: Vec<(usize, usize, usize)>,
    groupings: Vec<PassGrouping>,
    dag: Dag,
}

fn grouped(n: usize, passes: &[Pass], group: usize, chunk: usize) -> Grouped {
    grouped_lag(n, passes, group, chunk, 3)
}

fn grouped_lag(n: usize, passes: &[Pass], group: usize, chunk: usize, lag: usize) -> Grouped {
    let groupings: Vec<PassGrouping> = passes
        .iter()
        .map(|&p| PassGrouping::new_with_lag(n, p, group, chunk, lag))
        .collect();
    let mut ids = HashMap::new();
    let mut nodes = Vec::new();
    for (p, gr) in groupings.iter().enumerate() {
        for g in 0..gr.num_groups() {
            for c in 0..gr.num_chunks(g) {
                ids.insert((p, g, c), nodes.len());
                nodes.push((p, g, c));
            }
        }
    }
    let preds = nodes
        .iter()
        .map(|&(p, g, c)| {
            let gr = &groupings[p];
            let mut v: Vec<usize> = gr
                .preds(g, c)
                .into_iter()
                .flatten()
                .map(|(pg, pc)| ids[&(p, pg, pc)])
                .collect();
            for (q, earlier) in groupings[..p].iter().enumerate() {
                for (qg, qc) in cross_pass_preds(earlier, gr, g, c) {
                    v.push(ids[&(q, qg, qc)]);
                }
            }
            v
        })
        .collect();
    Grouped {
        nodes,
        groupings,
        dag: Dag { preds },
    }
}

const CASES: [(usize, usize, usize, usize, usize); 7] = [
    // (n, b, tw, G, C)
    (40, 8, 3, 2, 3),
    (45, 6, 2, 3, 2),
    (60, 8, 8, 4, 5),
    (37, 4, 1, 1, 1),
    (50, 12, 4, 5, 8),
    (33, 5, 2, 2, 1),
    (70, 16, 16, 3, 4),
];

/// Every edge of the fine multi-pass DAG runs inside one super-task in
/// execution order or along super-task edges.
#[test]
fn grouping_keeps_every_fine_edge() {
    for (n, b, tw, group, chunk) in CASES {
        let passes = schedule(b, tw);
        let gd = grouped(n, &passes, group, chunk);
        let anc = gd.dag.ancestors();
        // Where fine task (p, r, s) runs: (node, position in its super-task).
        let mut place = HashMap::new();
        for (i, &(p, g, c)) in gd.nodes.iter().enumerate() {
            for (k, (r, s)) in gd.groupings[p].tasks(g, c).enumerate() {
                assert!(place.insert((p, r, s), (i, k)).is_none(), "task run twice");
            }
        }
        let mut fine = 0;
        for (p, &pass) in passes.iter().enumerate() {
            for r in 0..num_sweeps(n, pass) {
                for s in 0..steps(n, pass, r) {
                    fine += 1;
                    let (v, kv) = place[&(p, r, s)];
                    assert_eq!(gd.groupings[p].locate(r, s), {
                        let (_, g, c) = gd.nodes[v];
                        (g, c)
                    });
                    let mut preds: Vec<(usize, usize, usize)> = fine_preds(n, pass, r, s)
                        .into_iter()
                        .flatten()
                        .map(|(pr, ps)| (p, pr, ps))
                        .collect();
                    for (q, &earlier) in passes[..p].iter().enumerate() {
                        if let Some((qr, qs)) = pass_pred(n, earlier, pass, r, s) {
                            preds.push((q, qr, qs));
                        }
                    }
                    for u in preds {
                        let (iu, ku) = place[&u];
                        assert!(
                            (iu == v && ku < kv) || anc[v][iu],
                            "n {n} b {b} tw {tw} G {group} C {chunk}: fine edge {u:?} -> ({p}, {r}, {s}) lost"
                        );
                    }
                }
            }
        }
        assert_eq!(place.len(), fine, "every fine task runs once");
    }
}

/// Super-tasks the grouped DAG leaves unordered touch disjoint entries (their
/// fine footprints are pairwise disjoint), and passes still overlap.
#[test]
fn unordered_super_tasks_are_disjoint() {
    for (n, b, tw, group, chunk) in CASES {
        let passes = schedule(b, tw);
        let gd = grouped(n, &passes, group, chunk);
        let anc = gd.dag.ancestors();
        let fps: Vec<Vec<_>> = gd
            .nodes
            .iter()
            .map(|&(p, g, c)| gd.groupings[p].regions(g, c).map(|(_, f)| f).collect())
            .collect();
        let mut cross = 0;
        for i in 0..gd.nodes.len() {
            for j in 0..i {
                if anc[i][j] || anc[j][i] {
                    continue;
                }
                cross += (gd.nodes[i].0 != gd.nodes[j].0) as usize;
                for a in &fps[i] {
                    for bb in &fps[j] {
                        assert!(
                            !overlaps(a, bb),
                            "n {n} b {b} tw {tw} G {group} C {chunk}: {:?} and {:?} race",
                            gd.nodes[i],
                            gd.nodes[j]
                        );
                    }
                }
            }
        }
        if passes.len() > 1 && n >= 40 {
            assert!(
                cross > 0,
                "n {n} b {b} tw {tw}: grouped passes never overlap"
            );
        }
    }
}

fn bits(x: &[f64]) -> Vec<u64> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// Random topological orders of the grouped DAG, each super-task running its
/// fine tasks in order, give the band and reflectors of the serial driver bit
/// for bit.
#[test]
fn grouped_random_orders_match_serial() {
    let mut rng = Rng::new(77);
    for (k, (n, b, tw, group, chunk)) in CASES.into_iter().enumerate() {
        let passes = schedule(b, tw);
        let band0 = random_upper_band::<f64>(n, b, &passes, &mut Rng::new(300 + k as u64));
        let mut seq = band0.clone();
        let mut seq_refl = Gb2bdReflectors::new(n, &passes);
        gb2bd_serial(&mut seq, &passes, Some(&mut seq_refl));
        let gd = grouped(n, &passes, group, chunk);
        for _ in 0..8 {
            let mut band = band0.clone();
            let mut refl = Gb2bdReflectors::new(n, &passes);
            let mut view = band.view();
            for i in gd.dag.topo(Some(&mut rng)) {
                let (p, g, c) = gd.nodes[i];
                let mut slots = refl.pass_mut(p).slots();
                for (r, s) in gd.groupings[p].tasks(g, c) {
                    chase_step(&mut view, passes[p], r, s, Some(slots.slot_mut(r, s)));
                }
            }
            assert!(
                bits(band.as_slice()) == bits(seq.as_slice()),
                "case {k}: band differs"
            );
            for (p, &pass) in passes.iter().enumerate() {
                for r in 0..num_sweeps(n, pass) {
                    for s in 0..steps(n, pass, r) {
                        assert!(
                            bits(refl.pass(p).right(r, s)) == bits(seq_refl.pass(p).right(r, s))
                                && bits(refl.pass(p).left(r, s))
                                    == bits(seq_refl.pass(p).left(r, s)),
                            "case {k}: reflector ({p}, {r}, {s}) differs"
                        );
                    }
                }
            }
        }
    }
}

/// Negative control: with the cross-group edge of lag 1 instead of 3, some
/// unordered pair of super-tasks touches the same entries.
#[test]
fn weaker_cross_group_edge_races() {
    let mut races = 0;
    for (n, b, tw, group, chunk) in CASES {
        let passes = schedule(b, tw);
        let gd = grouped_lag(n, &passes, group, chunk, 1);
        let anc = gd.dag.ancestors();
        let fps: Vec<Vec<_>> = gd
            .nodes
            .iter()
            .map(|&(p, g, c)| gd.groupings[p].regions(g, c).map(|(_, f)| f).collect())
            .collect();
        for i in 0..gd.nodes.len() {
            for j in 0..i {
                if !anc[i][j] && !anc[j][i] {
                    races += fps[i]
                        .iter()
                        .any(|a| fps[j].iter().any(|bb| overlaps(a, bb)))
                        as usize;
                }
            }
        }
    }
    assert!(
        races > 0,
        "lag 1 should leave overlapping super-tasks unordered"
    );
}

/// Super-tasks the grouped DAG leaves unordered have disjoint bounding boxes
/// ([`PassGrouping::footprint`]), so one rectangle per super-task is a valid
/// footprint (the pipeline declares it and takes one view of it).
#[test]
fn unordered_super_task_boxes_are_disjoint() {
    for (n, b, tw, group, chunk) in CASES {
        let passes = schedule(b, tw);
        let gd = grouped(n, &passes, group, chunk);
        let anc = gd.dag.ancestors();
        let boxes: Vec<_> = gd
            .nodes
            .iter()
            .map(|&(p, g, c)| gd.groupings[p].footprint(g, c))
            .collect();
        for i in 0..gd.nodes.len() {
            for j in 0..i {
                if anc[i][j] || anc[j][i] {
                    continue;
                }
                if let (Some(a), Some(bb)) = (&boxes[i], &boxes[j]) {
                    assert!(
                        !overlaps(a, bb),
                        "n {n} b {b} tw {tw} G {group} C {chunk}: boxes of {:?} and {:?} overlap",
                        gd.nodes[i],
                        gd.nodes[j]
                    );
                }
            }
        }
    }
}
