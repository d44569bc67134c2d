//! The persistent pool: threads are reused across runs, survive failures and
//! panics, and serve concurrent and nested runs on one runtime.

use super::failures::returns;
use eigenflow::graph::{Lane, Task, TaskGraph};
use eigenflow::runtime::Runtime;
use eigenflow::Error;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread::ThreadId;

/// Which OS thread ran each worker index and lane, and under which name.
type Seen = Mutex<BTreeMap<String, (ThreadId, Option<String>)>>;

fn record(seen: &Seen, key: String) {
    let me = std::thread::current();
    let old = seen
        .lock()
        .unwrap()
        .insert(key.clone(), (me.id(), me.name().map(str::to_owned)));
    if let Some((id, _)) = old {
        assert_eq!(id, me.id(), "{key} ran on two threads in one run");
    }
}

/// Enough independent tasks that every worker gets some (each one waits until
/// all workers have started a task, with a cap so a lost worker cannot hang).
fn graph_on_every_thread<'a>(seen: &'a Seen, threads: usize, streams: usize) -> TaskGraph<'a> {
    let arrived = std::sync::Arc::new(AtomicUsize::new(0));
    let mut g = TaskGraph::new();
    for i in 0..threads {
        let arrived = arrived.clone();
        g.task(format!("cpu{i}"), move |ctx| {
            record(seen, format!("cpu-{}", ctx.worker));
            arrived.fetch_add(1, Ordering::SeqCst);
            let t = std::time::Instant::now();
            while arrived.load(Ordering::SeqCst) < threads
                && t.elapsed() < std::time::Duration::from_secs(10)
            {
                std::thread::yield_now();
            }
            Ok(())
        });
    }
    for s in 0..streams {
        g.add(
            Task::new(format!("s{s}"), move |ctx| {
                record(seen, format!("stream-{}", ctx.worker));
                Ok(())
            })
            .lane(Lane::Stream(s)),
        );
    }
    g
}

#[test]
fn the_same_threads_run_every_run_under_their_track_names() {
    for dedicated in [false, true] {
        let mut rt = Runtime::builder().threads(3).streams(2);
        if dedicated {
            rt = rt.stack_size(4 << 20);
        }
        let rt = rt.build();
        let caller = std::thread::current().id();
        let mut first: Option<BTreeMap<String, (ThreadId, Option<String>)>> = None;
        for _ in 0..5 {
            let seen = Seen::default();
            rt.run(graph_on_every_thread(&seen, 3, 2)).unwrap();
            let seen = seen.into_inner().unwrap();
            let keys: Vec<&str> = seen.keys().map(String::as_str).collect();
            assert_eq!(keys, ["cpu-0", "cpu-1", "cpu-2", "stream-0", "stream-1"]);
            for (key, (id, name)) in &seen {
                if key == "cpu-0" && !dedicated {
                    // Without a stack size the calling thread is worker 0.
                    assert_eq!(*id, caller, "worker 0 runs on the caller");
                } else {
                    assert_ne!(*id, caller, "{key} on the caller (dedicated {dedicated})");
                    assert_eq!(name.as_deref(), Some(key.as_str()), "thread name of {key}");
                }
            }
            match &first {
                None => first = Some(seen),
                // Thread ids are never reused within a process: equal ids mean
                // the very same threads, not new ones.
                Some(f) => assert_eq!(f, &seen, "a run started new threads"),
            }
        }
    }
}

/// A wide graph whose first fan task `t0` panics while its siblings (slow, so
/// that most of them are still queued) wait in the workers' deques.
fn panicking_graph(ran: &AtomicUsize) -> TaskGraph<'_> {
    let mut g = TaskGraph::new();
    let root = g.task("root", |_| Ok(()));
    let s = g.add(Task::new("lane", |_| Ok(())).lane(Lane::Stream(0)));
    g.edge(root, s);
    for i in 0..2000 {
        let t = g.task(format!("t{i}"), move |_| {
            ran.fetch_add(1, Ordering::Relaxed);
            if i == 0 {
                panic!("planted");
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
            Ok(())
        });
        g.edge(root, t);
    }
    g
}

/// A graph that checks its own order: a chain that must run in sequence and a
/// fan of independent tasks, each counted once.
fn checking_graph<'a>(order: &'a Mutex<Vec<usize>>, count: &'a AtomicUsize) -> TaskGraph<'a> {
    let mut g = TaskGraph::new();
    let mut prev = None;
    for i in 0..40 {
        let lane = if i % 5 == 4 {
            Lane::Stream(0)
        } else {
            Lane::Cpu
        };
        let t = g.add(
            Task::new(format!("c{i}"), move |_| {
                order.lock().unwrap().push(i);
                Ok(())
            })
            .lane(lane),
        );
        if let Some(p) = prev {
            g.edge(p, t);
        }
        prev = Some(t);
    }
    for i in 0..200 {
        g.task(format!("f{i}"), move |_| {
            count.fetch_add(1, Ordering::Relaxed);
            Ok(())
        });
    }
    g
}

fn assert_checking_graph_ran(order: Mutex<Vec<usize>>, count: AtomicUsize) {
    assert_eq!(order.into_inner().unwrap(), (0..40).collect::<Vec<_>>());
    assert_eq!(count.into_inner(), 200);
}

#[test]
fn a_panic_does_not_break_the_runtime() {
    let rt = Runtime::builder().threads(2).streams(1).build();
    for round in 0..5 {
        let ran = AtomicUsize::new(0);
        let err = rt.run(panicking_graph(&ran)).unwrap_err();
        assert!(
            matches!(&err, Error::TaskPanicked { task, .. } if task == "t0"),
            "round {round}: {err}"
        );
        // Left-over tasks of the failed run must not leak into this one: each
        // task runs once, in order.
        let (order, count) = (Mutex::new(Vec::new()), AtomicUsize::new(0));
        let report = rt.run(checking_graph(&order, &count)).unwrap();
        assert_eq!(report.tasks.len(), 240);
        assert_checking_graph_ran(order, count);
    }
}

#[test]
fn concurrent_runs_on_one_runtime_are_correct() {
    let rt = Runtime::builder().threads(2).streams(1).build();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..25 {
                    // The bodies borrow from this thread's stack.
                    let (order, count) = (Mutex::new(Vec::new()), AtomicUsize::new(0));
                    rt.run(checking_graph(&order, &count)).unwrap();
                    assert_checking_graph_ran(order, count);
                }
            });
        }
    });
}

#[test]
fn a_run_nested_in_a_task_on_the_same_runtime_returns() {
    let rt = Runtime::builder().threads(2).build();
    let inner_ran = returns("nested run", move || {
        let inner_ran = AtomicUsize::new(0);
        let mut g = TaskGraph::new();
        for _ in 0..4 {
            g.task("outer", |_| {
                let mut inner = TaskGraph::new();
                for _ in 0..3 {
                    inner.task("inner", |_| {
                        inner_ran.fetch_add(1, Ordering::SeqCst);
                        Ok(())
                    });
                }
                rt.run(inner).map(|_| ())
            });
        }
        rt.run(g).unwrap();
        inner_ran.into_inner()
    });
    assert_eq!(inner_ran, 12);
}

/// After a run nested in a task body, the task still sees its own run's stop
/// (the nested run must restore the thread's link to the outer run).
#[test]
fn a_task_sees_its_run_stop_after_a_nested_run() {
    let rt = Runtime::builder().threads(2).build();
    let saw_stop = returns("outer run", move || {
        let saw_stop = std::sync::atomic::AtomicBool::new(false);
        let (nested_done, wait_nested) = std::sync::mpsc::channel();
        let wait_nested = Mutex::new(wait_nested);
        let cap = std::time::Duration::from_secs(10);
        let mut g = TaskGraph::new();
        g.task("nests", |ctx| {
            let mut inner = TaskGraph::new();
            inner.task("inner", |_| Ok(()));
            rt.run(inner)?;
            nested_done.send(()).unwrap();
            // A hang guard, not a speed requirement: the stop comes at once.
            let t = std::time::Instant::now();
            while !ctx.is_stopping() && t.elapsed() < cap {
                std::thread::yield_now();
            }
            saw_stop.store(ctx.is_stopping(), Ordering::SeqCst);
            Ok(())
        });
        g.task("fails", |_| {
            let _ = wait_nested.lock().unwrap().recv_timeout(cap);
            Err(Error::InvalidArgument("planted".into()))
        });
        let err = rt.run(g).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        saw_stop.into_inner()
    });
    assert!(
        saw_stop,
        "the task lost sight of its run after the nested run"
    );
}
