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
    g.edge(a, foreign);
    let err = g.validate(0).unwrap_err();
    assert!(err.to_string().contains("another graph"), "{err}");
    let err = Runtime::builder().threads(2).build().run(g).unwrap_err();
    assert!(err.to_string().contains("another graph"), "{err}");
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
    assert!(err.to_string().contains("another graph"), "{err}");
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
    assert!(matches!(err, Error::Cycle { .. }), "{msg}");
    assert!(msg.len() < 1024, "{} characters", msg.len());
    assert!(msg.contains("and 999992 more"), "{msg}");
}

#[test]
fn thread_counts_above_the_maximum_are_refused() {
    for (threads, streams) in [(1025, 0), (1, 1025)] {
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
}
