//! The negative controls of stage 2's explicit edges (gb2bd keeps the lag
//! rule and the pass rule explicit, `gb2bd.rs` says why) and of the tasks
//! around it: each kind of edge, dropped, is a race `check_races` reports.

use super::super::gb2bd_half::gb2bd_stored;
use super::super::*;
use crate::gallery;
use crate::pipeline::ChaseGrain;

/// `(pass, sweep, step)` of a fine chase task, from its name.
fn chase(name: &str) -> Option<(usize, usize, usize)> {
    let rest = name.strip_prefix("gb2bd.pass[")?;
    let mut at = rest.split(['[', ']']).filter_map(|x| x.parse().ok());
    Some((at.next()?, at.next()?, at.next()?))
}

/// Stage 1 (bandwidth 6, tile width 2: passes 6 -> 4 -> 2 -> 1), stage 2 at
/// the fine grain (with the band stored in `f32` when `half`) and dqds on a
/// 50 x 40 matrix; every edge whose tasks' names `pick` accepts dropped.
/// Returns how many were dropped and the race check.
fn drop_edges(half: bool, pick: impl Fn(&str, &str) -> bool) -> (usize, Result<()>) {
    let a = gallery::random_gaussian::<f64>(50, 40, 8);
    let mut g = TaskGraph::new();
    let s1 = ge2gb(&mut g, a, 6, 12, 2).unwrap();
    assert_eq!(s1.band.passes().len(), 3);
    let bd = if half {
        gb2bd_stored::<f64, f32>(&mut g, s1.band, ChaseGrain::Fine).unwrap()
    } else {
        gb2bd(&mut g, s1.band).unwrap().bidiagonal
    };
    singular_values(&mut g, bd).unwrap();
    let id = |g: &TaskGraph<'static>, i: usize| g.task_id(i).expect("a task");
    let doomed: Vec<(TaskId, TaskId)> = g
        .edges()
        .map(|(u, v)| (id(&g, u), id(&g, v)))
        .filter(|&(u, v)| pick(g.name(u), g.name(v)))
        .collect();
    for &(u, v) in &doomed {
        assert!(g.remove_edge(u, v));
    }
    (doomed.len(), g.check_races())
}

fn expect_race(half: bool, what: &str, pick: impl Fn(&str, &str) -> bool) {
    let (dropped, r) = drop_edges(half, pick);
    assert!(dropped > 0, "no edge is {what}");
    assert!(
        matches!(r, Err(Error::Race { .. })),
        "dropping {what} ({dropped} edges) was not caught: {r:?}"
    );
}

#[test]
fn every_kind_of_chase_edge_is_needed() {
    for half in [false, true] {
        drop_edges(half, |_, _| false).1.unwrap();
        let both = |u: &str, v: &str| chase(u).zip(chase(v));
        expect_race(half, "the step before in the same sweep", |u, v| {
            both(u, v).is_some_and(|(a, b)| a.0 == b.0 && a.1 == b.1 && a.2 + 1 == b.2)
        });
        expect_race(half, "the lag edges from the sweep before", |u, v| {
            both(u, v).is_some_and(|(a, b)| a.0 == b.0 && a.1 + 1 == b.1)
        });
        expect_race(half, "the edges from earlier passes", |u, v| {
            both(u, v).is_some_and(|(a, b)| a.0 < b.0)
        });
        expect_race(half, "the edges into dqds", |_, v| v == "dqds");
    }
    expect_race(false, "the band copies before the chase", |u, v| {
        u.starts_with("ge2gb.copy") && chase(v).is_some()
    });
    expect_race(true, "the band copies before the conversions", |u, v| {
        u.starts_with("ge2gb.copy") && v.starts_with("gb2bd.f32[")
    });
    expect_race(true, "the conversions before the chase", |u, v| {
        u.starts_with("gb2bd.f32[") && chase(v).is_some()
    });
    expect_race(true, "the edges into the widening", |_, v| {
        v == "gb2bd.f32.bidiagonal"
    });
}
