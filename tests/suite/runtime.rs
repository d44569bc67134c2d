//! The runtime's contract: edges, stream order, concurrency, errors, async submit.

use eigenflow::graph::{Footprint, Lane, Region, Task, TaskGraph, TaskId};
use eigenflow::matrix::MatrixId;
use eigenflow::runtime::Runtime;
use eigenflow::Error;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

#[path = "runtime/failures.rs"]
mod failures;
#[path = "runtime/join.rs"]
mod join;
#[path = "runtime/pool.rs"]
mod pool;
#[path = "runtime/team.rs"]
mod team;
#[path = "runtime/validation.rs"]
mod validation;

/// Deterministic xorshift for building random graphs.
struct Rng(u64);
impl Rng {
    fn below(&mut self, k: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % k
    }
}

/// How a [`Meet::arrive`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Met {
    /// Every party arrived.
    All,
    /// The caller's stop condition became true first.
    Stopped,
    /// A minute passed without either: the scheduler never ran the other parties
    /// alongside this one (a defect; a minute is far beyond any scheduling delay).
    TimedOut,
}

/// A meeting point for tasks that must run at the same time: a barrier that
/// cannot hang the test.
struct Meet {
    arrived: Mutex<usize>,
    cv: Condvar,
    parties: usize,
}

impl Meet {
    fn new(parties: usize) -> Self {
        Meet {
            arrived: Mutex::new(0),
            cv: Condvar::new(),
            parties,
        }
    }

    /// Arrives and waits until every party has arrived or `stop()` holds (checked
    /// every few milliseconds, for conditions nobody notifies).
    fn arrive(&self, stop: impl Fn() -> bool) -> Met {
        let start = Instant::now();
        let mut arrived = self.arrived.lock().unwrap();
        *arrived += 1;
        self.cv.notify_all();
        loop {
            if *arrived >= self.parties {
                return Met::All;
            }
            if stop() {
                return Met::Stopped;
            }
            if start.elapsed() > Duration::from_secs(60) {
                return Met::TimedOut;
            }
            arrived = self
                .cv
                .wait_timeout(arrived, Duration::from_millis(5))
                .unwrap()
                .0;
        }
    }
}

/// A random DAG: each task gets up to 4 predecessors among earlier tasks, and a
/// random lane among the CPU pool and `streams` stream lanes.
fn random_dag(n: usize, streams: usize, seed: u64) -> (TaskGraph<'static>, Vec<(usize, usize)>) {
    let mut rng = Rng(seed | 1);
    let mut g = TaskGraph::with_capacity(n, 4 * n);
    let mut edges = Vec::new();
    for i in 0..n {
        let lane = match rng.below(streams as u64 + 2) as usize {
            k if k < streams => Lane::Stream(k),
            _ => Lane::Cpu,
        };
        let spin = rng.below(200);
        let id = g.add(
            Task::new(format!("t{i}"), move |_| {
                std::hint::black_box((0..spin).sum::<u64>());
                Ok(())
            })
            .lane(lane),
        );
        let mut preds: Vec<usize> = (0..rng.below(5))
            .filter(|_| i > 0)
            .map(|_| {
                // Mostly near predecessors, sometimes far ones.
                let back = if rng.below(4) == 0 {
                    i as u64
                } else {
                    64.min(i as u64)
                };
                i - 1 - rng.below(back) as usize
            })
            .collect();
        preds.sort_unstable();
        preds.dedup();
        for p in preds {
            g.edge(g.task_id(p).unwrap(), id);
            edges.push((p, i));
        }
    }
    (g, edges)
}

#[test]
fn every_edge_and_stream_order_respected_on_random_dags() {
    for threads in 1..=4 {
        for streams in 0..=3 {
            let n = 12_000;
            let (g, edges) = random_dag(n, streams, 7 + threads as u64 * 10 + streams as u64);
            let lanes: Vec<Lane> = (0..n).map(|i| g.lane_of(g.task_id(i).unwrap())).collect();
            let rt = Runtime::builder().threads(threads).streams(streams).build();
            let report = rt.run(g).unwrap();
            assert_eq!(report.tasks.len(), n);
            for &(u, v) in &edges {
                assert!(
                    report.tasks[u].end <= report.tasks[v].start,
                    "edge t{u} -> t{v} violated ({threads} threads, {streams} streams)"
                );
            }
            for s in 0..streams {
                let mut last = Duration::ZERO;
                for i in (0..n).filter(|&i| lanes[i] == Lane::Stream(s)) {
                    let t = &report.tasks[i];
                    assert_eq!(t.lane, Lane::Stream(s));
                    assert_eq!(t.worker, s);
                    assert!(t.start >= last, "stream {s} ran t{i} out of order");
                    last = t.end;
                }
            }
            for t in &report.tasks {
                if t.lane == Lane::Cpu {
                    assert!(t.worker < threads);
                }
            }
        }
    }
}

#[test]
fn shuffled_schedules_respect_edges() {
    for seed in 1..4 {
        let (g, edges) = random_dag(5_000, 2, seed);
        let rt = Runtime::builder()
            .threads(2)
            .streams(2)
            .shuffle(Some(seed))
            .build();
        let report = rt.run(g).unwrap();
        for &(u, v) in &edges {
            assert!(report.tasks[u].end <= report.tasks[v].start);
        }
    }
}

#[test]
fn independent_tasks_run_concurrently_on_two_threads() {
    // Each of two independent tasks waits at a barrier for the other: both get
    // there only if the two workers run them at the same time.
    let meet = Meet::new(2);
    let outcomes = parking_lot::Mutex::new(Vec::new());
    let mut g = TaskGraph::new();
    for i in 0..2 {
        let (meet, outcomes) = (&meet, &outcomes);
        g.task(format!("meet{i}"), move |_| {
            // Not inside `outcomes.lock()`: the lock would be held while waiting.
            let met = meet.arrive(|| false);
            outcomes.lock().push(met);
            Ok(())
        });
    }
    Runtime::builder().threads(2).build().run(g).unwrap();
    assert_eq!(*outcomes.lock(), [Met::All, Met::All]);
}

#[test]
fn cycle_is_reported_with_its_tasks() {
    let mut g = TaskGraph::new();
    let a = g.task("a", |_| Ok(()));
    let b = g.task("b", |_| Ok(()));
    let c = g.task("c", |_| Ok(()));
    let d = g.task("d", |_| Ok(()));
    g.edge(d, a);
    g.edge(a, b);
    g.edge(b, c);
    g.edge(c, a);
    match Runtime::builder().threads(2).build().run(g) {
        Err(Error::Cycle { tasks, len }) => {
            let mut sorted = tasks.clone();
            sorted.sort();
            assert_eq!(sorted, ["a", "b", "c"], "cycle reported as {tasks:?}");
            assert_eq!(len, 3);
        }
        other => panic!("expected a cycle error, got {other:?}"),
    }
}

#[test]
fn stream_order_against_an_edge_is_a_cycle() {
    // On one in-order stream, `first` runs before `second`; an edge second -> first
    // can never be satisfied (a CUDA stream would deadlock).
    let mut g = TaskGraph::new();
    let first = g.add(Task::new("first", |_| Ok(())).lane(Lane::Stream(0)));
    let second = g.add(Task::new("second", |_| Ok(())).lane(Lane::Stream(0)));
    g.edge(second, first);
    let err = Runtime::builder().streams(1).build().run(g).unwrap_err();
    assert!(matches!(err, Error::Cycle { .. }), "{err}");
}

#[test]
fn stream_beyond_configured_is_an_error() {
    let mut g = TaskGraph::new();
    g.add(Task::new("on-s2", |_| Ok(())).lane(Lane::Stream(2)));
    let err = Runtime::builder().streams(2).build().run(g).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidLane { task, stream: 2, streams: 2 } if task == "on-s2"),
        "{err}"
    );
}

#[test]
fn duplicate_edge_is_an_error() {
    let mut g = TaskGraph::new();
    let a = g.task("a", |_| Ok(()));
    let b = g.task("b", |_| Ok(()));
    g.edge(a, b);
    g.edge(a, b);
    let err = Runtime::builder().build().run(g).unwrap_err();
    assert!(
        matches!(&err, Error::DuplicateEdge { from, to } if from == "a" && to == "b"),
        "{err}"
    );
}

#[test]
fn failing_task_stops_the_run_and_names_itself() {
    let ran_after = AtomicUsize::new(0);
    let mut g = TaskGraph::new();
    // A task whose nested run is refused: a graph error, not about this task's
    // data, so the outer run names the task that failed.
    let bad = g.task("bad", |_| {
        let mut inner = TaskGraph::new();
        let x = inner.task("x", |_| Ok(()));
        inner.edge(x, x);
        Runtime::builder().threads(1).build().run(inner).map(|_| ())
    });
    let after = g.task("after", |_| {
        ran_after.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    g.edge(bad, after);
    let err = Runtime::builder().threads(2).build().run(g).unwrap_err();
    match &err {
        Error::TaskFailed { task, source } => {
            assert_eq!(task, "bad");
            assert!(matches!(**source, Error::Cycle { len: 1, .. }), "{source}");
        }
        other => panic!("unexpected {other}"),
    }
    assert_eq!(ran_after.load(Ordering::SeqCst), 0);
}

#[test]
fn panic_in_a_huge_graph_stops_the_run() {
    let n = 100_000;
    let started = AtomicUsize::new(0);
    let mut g = TaskGraph::with_capacity(n, 2 * n);
    let mut prev: Option<TaskId> = None;
    for i in 0..n {
        let started = &started;
        let id = g.task(format!("t{i}"), move |_| {
            started.fetch_add(1, Ordering::Relaxed);
            if i == 500 {
                panic!("planted panic at 500");
            }
            Ok(())
        });
        // A wide graph: chains of 8 so both workers stay busy.
        if let Some(p) = prev.filter(|_| i % 8 != 0) {
            g.edge(p, id);
        }
        prev = Some(id);
    }
    let err = Runtime::builder().threads(2).build().run(g).unwrap_err();
    match err {
        Error::TaskPanicked { task, message } => {
            assert_eq!(task, "t500");
            assert!(message.contains("planted panic"));
        }
        other => panic!("unexpected {other}"),
    }
    // The run stopped: not every task ran.
    assert!(started.load(Ordering::Relaxed) < n);
}

#[test]
fn no_new_task_starts_after_a_failure() {
    let n = 100_000;
    let late = AtomicUsize::new(0);
    let mut g = TaskGraph::with_capacity(n, n);
    let mut prev: Option<TaskId> = None;
    for i in 0..n {
        let late = &late;
        let id = g.task(format!("t{i}"), move |ctx| {
            // The run already stopped when this body began.
            if ctx.is_stopping() {
                late.fetch_add(1, Ordering::SeqCst);
            }
            if i == 5_000 {
                return Err(Error::InvalidArgument("planted".into()));
            }
            Ok(())
        });
        if let Some(p) = prev.filter(|_| i % 8 != 0) {
            g.edge(p, id);
        }
        prev = Some(id);
    }
    let err = Runtime::builder().threads(2).build().run(g).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m == "planted"),
        "{err}"
    );
    // A worker checks the stop flag right before it starts a task, so only a task
    // that passed that check as the flag was raised can begin after it: at most
    // one on the other worker, however the threads were preempted.
    assert!(
        late.load(Ordering::SeqCst) <= 1,
        "{} tasks started after the stop",
        late.load(Ordering::SeqCst)
    );
}

#[test]
fn empty_graph_runs() {
    let report = Runtime::builder()
        .threads(3)
        .streams(1)
        .build()
        .run(TaskGraph::new())
        .unwrap();
    assert!(report.tasks.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_is_awaitable_from_tokio() {
    let rt = Runtime::builder().threads(2).streams(1).build();
    let handles: Vec<_> = (0..3)
        .map(|k| {
            let (g, _) = random_dag(2_000, 1, 100 + k);
            rt.submit(g)
        })
        .collect();
    for h in handles {
        let report = h.await.unwrap();
        assert_eq!(report.tasks.len(), 2_000);
    }
    // Also waitable without an async runtime.
    let (g, _) = random_dag(100, 1, 5);
    assert_eq!(rt.submit(g).wait().unwrap().tasks.len(), 100);
}

#[test]
fn submitted_failure_is_reported() {
    let mut g = TaskGraph::new();
    g.task("fails", |_| Err(Error::InvalidArgument("no".into())));
    let err = Runtime::builder().build().submit(g).wait().unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m == "no"),
        "{err}"
    );
}

fn region(m: MatrixId, r: std::ops::Range<usize>, c: std::ops::Range<usize>) -> Region {
    Region::new(m, r, c)
}

#[test]
fn check_races_catches_a_planted_race_and_passes_a_correct_graph() {
    let m = MatrixId::fresh();
    let build = |ordered: bool| {
        let mut g = TaskGraph::new();
        let w = g.add(
            Task::new("writer", |_| Ok(())).footprint(Footprint::new().write(region(
                m,
                0..10,
                0..10,
            ))),
        );
        let mid = g.add(
            Task::new("disjoint", |_| Ok(())).footprint(Footprint::new().write(region(
                m,
                10..20,
                0..10,
            ))),
        );
        let r = g.add(
            Task::new("reader", |_| Ok(())).footprint(Footprint::new().read(region(
                m,
                5..15,
                5..6,
            ))),
        );
        // reader overlaps both writers; it is ordered after `disjoint` always, and
        // after `writer` only in the correct graph (transitively through `disjoint`).
        g.edge(mid, r);
        if ordered {
            g.edge(w, mid);
        }
        g
    };
    build(true).check_races().unwrap();
    match build(false).check_races() {
        Err(Error::Race {
            first,
            second,
            region,
        }) => {
            assert_eq!((first.as_str(), second.as_str()), ("writer", "reader"));
            assert!(region.contains("rows 5..10 cols 5..6"), "{region}");
        }
        other => panic!("expected a race, got {other:?}"),
    }
    // Two readers never race.
    let mut g = TaskGraph::new();
    for i in 0..2 {
        g.add(
            Task::new(format!("r{i}"), |_| Ok(())).footprint(Footprint::new().read(region(
                m,
                0..4,
                0..4,
            ))),
        );
    }
    g.check_races().unwrap();
}

#[test]
fn stream_order_counts_as_ordering_for_races() {
    let m = MatrixId::fresh();
    let mut g = TaskGraph::new();
    for i in 0..2 {
        g.add(
            Task::new(format!("s{i}"), |_| Ok(()))
                .lane(Lane::Stream(0))
                .footprint(Footprint::new().write(region(m, 0..4, 0..4))),
        );
    }
    g.check_races().unwrap();
}

#[test]
fn live_checker_catches_an_overlap() {
    let m = MatrixId::fresh();
    let meet = Meet::new(2);
    let outcomes = parking_lot::Mutex::new(Vec::new());
    let mut g = TaskGraph::new();
    for i in 0..2 {
        let (meet, outcomes) = (&meet, &outcomes);
        g.add(
            Task::new(format!("w{i}"), move |ctx| {
                // Hold the region until the other task starts (the checker missed
                // the overlap) or the run stops (the checker refused the second
                // task before its body ran).
                let met = meet.arrive(|| ctx.is_stopping());
                outcomes.lock().push(met);
                Ok(())
            })
            .footprint(Footprint::new().write(region(m, 0..8, 0..8))),
        );
    }
    let err = Runtime::builder()
        .threads(2)
        .check_footprints(true)
        .build()
        .run(g)
        .unwrap_err();
    assert!(matches!(err, Error::LiveOverlap { .. }), "{err}");
    assert_eq!(*outcomes.lock(), [Met::Stopped], "only the first task ran");
}

#[test]
fn subgraphs_compose() {
    let order = parking_lot::Mutex::new(Vec::new());
    let stage = |name: &'static str| {
        let mut g = TaskGraph::new();
        let order = &order;
        let a = g.task(format!("{name}.a"), move |_| {
            order.lock().push(name);
            Ok(())
        });
        let b = g.task(format!("{name}.b"), move |_| {
            order.lock().push(name);
            Ok(())
        });
        let _ = (a, b);
        g
    };
    let mut g = TaskGraph::new();
    let first = g.append(stage("first"));
    let second = g.append(stage("second"));
    assert_eq!(first.entries.len(), 2);
    assert_eq!(second.entries[0].index(), 2);
    g.chain(&first, &second);
    Runtime::builder().threads(2).build().run(g).unwrap();
    assert_eq!(*order.lock(), ["first", "first", "second", "second"]);
}

#[test]
fn dot_export_names_tasks_and_edges() {
    let mut g = TaskGraph::new();
    let a = g.add(Task::new("first \"quoted\"", |_| Ok(())).stage("s1"));
    let b = g.add(
        Task::new("second", |_| Ok(()))
            .stage("s2")
            .lane(Lane::Stream(0)),
    );
    g.edge(a, b);
    let dot = g.to_dot();
    assert!(dot.starts_with("digraph"));
    assert!(dot.contains("first \\\"quoted\\\""));
    assert!(dot.contains("t0 -> t1;"));
    assert!(dot.contains("label=\"s2\""));
    assert!(dot.contains("shape=box"));
}
