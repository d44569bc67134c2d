//! What validation refuses: ids of another graph, oversized thread counts, and
//! error messages that stay short however large the graph.

use eigenflow::graph::TaskGraph;
use eigenflow::runtime::Runtime;
use eigenflow::Error;
use std::sync::atomic::{AtomicUsize, Ordering};

/// An id of another graph must never be wired to whichever task of this graph
/// has the same index: the pipelines' shared tile access relies on edges.
#[test]
fn foreign_id_whose_index_exists_is_refused() {
    let ran = AtomicUsize::new(0);
    let mut other = TaskGraph::new();
    other.task("o0", |_| Ok(()));
    let foreign = other.task("o1", |_| Ok(()));
    let mut g = TaskGraph::new();
    let count = |_: &_| {
        ran.fetch_add(1, Ordering::SeqCst);
        Ok(())
    };
    let a = g.task("a", count);
    // Index 1 exists here too: the edge would order `b` after `a`.
    g.task("b", count);
    assert!(!g.owns(foreign));
    g.edge(a, foreign);
    assert_eq!(g.edge_count(), 0, "nothing was wired");
    let err = g.validate(0).unwrap_err();
    assert!(
        matches!(&err, Error::ForeignTask { from, to }
            if from == "task 0 `a`" && to == "task 1 of another graph"),
        "{err}"
    );
    let err = Runtime::builder().threads(2).build().run(g).unwrap_err();
    assert!(matches!(err, Error::ForeignTask { .. }), "{err}");
    assert_eq!(ran.load(Ordering::SeqCst), 0, "no task may run");
}

#[test]
fn foreign_id_whose_index_does_not_exist_is_refused() {
    let mut other = TaskGraph::new();
    let mut foreign = other.task("o0", |_| Ok(()));
    for i in 1..10 {
        foreign = other.task(format!("o{i}"), |_| Ok(()));
    }
    let mut g = TaskGraph::new();
    let a = g.task("a", |_| Ok(()));
    g.edge(foreign, a);
    let err = Runtime::builder().build().run(g).unwrap_err();
    assert!(
        matches!(&err, Error::ForeignTask { from, to }
            if from == "task 9 of another graph" && to == "task 0 `a`"),
        "{err}"
    );
    assert!(err.to_string().contains("another graph"), "{err}");
}

#[test]
fn ids_belong_to_their_graph() {
    let mut g = TaskGraph::new();
    let a = g.task("a", |_| Ok(()));
    assert!(g.owns(a));
    assert_eq!(g.task_id(0), Some(a));
    assert_eq!(g.task_id(1), None);
    // Same index, other graph: a different id.
    let mut h = TaskGraph::new();
    let b = h.task("b", |_| Ok(()));
    assert_eq!(a.index(), b.index());
    assert_ne!(a, b);
    assert!(!g.owns(b) && !h.owns(a));
}

#[test]
fn append_retags_the_appended_tasks() {
    let mut g = TaskGraph::new();
    let a = g.task("a", |_| Ok(()));
    let mut part = TaskGraph::new();
    let p0 = part.task("p0", |_| Ok(()));
    let p1 = part.task("p1", |_| Ok(()));
    part.edge(p0, p1);
    let sub = g.append(part);
    assert_eq!(sub.entries, [g.task_id(1).unwrap()]);
    assert_eq!(sub.exits, [g.task_id(2).unwrap()]);
    assert!(sub.entries.iter().chain(&sub.exits).all(|&t| g.owns(t)));
    // The part's own ids are foreign now: an edge through one is refused.
    assert!(!g.owns(p0));
    g.precede(a, &sub.entries);
    g.validate(0).unwrap();
    g.edge(a, p1);
    let err = g.validate(0).unwrap_err();
    assert!(matches!(err, Error::ForeignTask { .. }), "{err}");
}

#[test]
fn a_bad_edge_of_an_appended_graph_is_still_reported() {
    let mut stray = TaskGraph::new();
    let foreign = stray.task("stray", |_| Ok(()));
    let mut part = TaskGraph::new();
    let p = part.task("p", |_| Ok(()));
    part.edge(p, foreign);
    let mut g = TaskGraph::new();
    g.task("a", |_| Ok(()));
    g.append(part);
    let err = g.validate(0).unwrap_err();
    assert!(
        matches!(&err, Error::ForeignTask { from, to }
            if from == "task 1 `p`" && to == "task 0 of another graph"),
        "{err}"
    );
}

/// A cycle through a million tasks names a few of them, not all.
#[test]
fn a_million_task_cycle_gives_a_short_message() {
    let n = 1_000_000;
    let mut g = TaskGraph::with_capacity(n, n);
    let first = g.task("t0", |_| Ok(()));
    let mut prev = first;
    for i in 1..n {
        let t = g.task(format!("t{i}"), |_| Ok(()));
        g.edge(prev, t);
        prev = t;
    }
    g.edge(prev, first);
    let err = g.validate(0).unwrap_err();
    let msg = err.to_string();
    assert!(msg.len() < 1024, "{} characters", msg.len());
    match err {
        Error::Cycle { tasks, len } => {
            assert_eq!(len, n);
            assert_eq!(tasks.len(), 8);
            // Consecutive tasks of the cycle, in order.
            let at: Vec<usize> = tasks.iter().map(|t| t[1..].parse().unwrap()).collect();
            assert!(at.windows(2).all(|w| w[1] == (w[0] + 1) % n), "{tasks:?}");
        }
        other => panic!("expected a cycle, got {other}"),
    }
    assert!(msg.contains("and 999992 more"), "{msg}");
}

/// Long task names are cut in messages.
#[test]
fn long_names_are_cut_in_messages() {
    let long = "x".repeat(1_000_000);
    let mut g = TaskGraph::new();
    let a = g.task(long.clone(), |_| Ok(()));
    let b = g.task(long, |_| Ok(()));
    g.edge(a, b);
    g.edge(a, b);
    let err = g.validate(0).unwrap_err();
    assert!(matches!(err, Error::DuplicateEdge { .. }), "{err}");
    assert!(err.to_string().len() < 1024, "{}", err.to_string().len());
}

#[test]
fn thread_counts_above_the_maximum_are_refused() {
    use eigenflow::runtime::{MAX_STREAMS, MAX_THREADS};
    assert_eq!((MAX_THREADS, MAX_STREAMS), (1024, 1024), "as documented");
    for (threads, streams) in [(MAX_THREADS + 1, 0), (1, MAX_STREAMS + 1), (usize::MAX, 0)] {
        let err = Runtime::builder()
            .threads(threads)
            .streams(streams)
            .build()
            .run(TaskGraph::new())
            .unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument(m) if m.contains("1024")),
            "{threads} threads, {streams} streams: {err}"
        );
    }
    // Validation refuses an absurd lane count too, instead of allocating for it.
    let err = TaskGraph::new().validate(usize::MAX).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}
