//! A runtime's threads are persistent: they start at its first run, stay (and
//! are reused, not multiplied) across successful, failed and cancelled runs, and
//! are all joined when the last clone of the runtime is dropped. A run whose
//! threads cannot start leaves none behind. One `#[test]` alone in its binary,
//! so the process's thread count is not disturbed by other tests running at the
//! same time.

use eigenflow::graph::{Lane, Task, TaskGraph};
use eigenflow::runtime::Runtime;
use eigenflow::Error;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// The names of the process's threads, for failure messages.
fn thread_names() -> Vec<String> {
    std::fs::read_dir("/proc/self/task").map_or(Vec::new(), |d| {
        d.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
            .map(|s| s.trim().to_owned())
            .collect()
    })
}

fn threads_in_process() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

/// The thread count once it has settled to `want` (a joined thread can stay
/// listed in /proc for a moment while the kernel finishes its exit; a leaked
/// thread stays forever), or the last count seen after ten seconds (generous for
/// a loaded machine; the wait ends as soon as the count settles).
fn settled(want: usize) -> usize {
    let start = Instant::now();
    loop {
        let now = threads_in_process();
        if now == want || start.elapsed() > Duration::from_secs(10) {
            return now;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn runs_leave_no_thread_behind() {
    if threads_in_process() == 0 {
        eprintln!("/proc/self/task is not readable here; nothing to count");
        return;
    }
    let before = threads_in_process();
    failed_runs(before);
    cancelled_run(before);
    unstartable_threads(before);
    concurrent_runs(before);
}

fn failed_runs(before: usize) {
    for round in 0..5 {
        let mut g = TaskGraph::new();
        let mut prev = None;
        for i in 0..20_000 {
            let lane = if i % 3 == 0 {
                Lane::Stream(i % 2)
            } else {
                Lane::Cpu
            };
            let id = g.add(
                Task::new(format!("t{i}"), move |_| {
                    if i == 10_000 + round {
                        panic!("planted");
                    }
                    Ok(())
                })
                .lane(lane),
            );
            if let Some(p) = prev {
                if i % 4 != 0 {
                    g.edge(p, id);
                }
            }
            prev = Some(id);
        }
        let rt = Runtime::builder().threads(3).streams(2).build();
        assert_eq!(threads_in_process(), before, "build starts no thread");
        assert!(rt.run(g).is_err());
        // The runtime keeps its threads, and only those: workers 1 and 2 (the
        // calling thread is worker 0) and 2 lanes.
        let kept = before + 4;
        assert_eq!(settled(kept), kept, "round {round}: {:?}", thread_names());
        for _ in 0..20 {
            let mut g = TaskGraph::new();
            g.task("fails", |_| Err(Error::InvalidArgument("x".into())));
            assert!(rt.submit(g).wait().is_err());
            assert!(
                rt.run(small_graph()).is_ok(),
                "the runtime works after a failure"
            );
        }
        assert_eq!(settled(kept), kept, "submit round {round}");
        let clone = rt.clone();
        drop(rt);
        assert!(clone.run(small_graph()).is_ok());
        assert_eq!(settled(kept), kept, "a clone shares: {:?}", thread_names());
        drop(clone);
        assert_eq!(settled(before), before, "dropped runtime, round {round}");
    }
}

/// Four CPU tasks and a stream task.
fn small_graph() -> TaskGraph<'static> {
    let mut g = TaskGraph::new();
    let s = g.add(Task::new("s", |_| Ok(())).lane(Lane::Stream(1)));
    for i in 0..4 {
        let t = g.task(format!("t{i}"), |_| Ok(()));
        g.edge(t, s);
    }
    g
}

/// Runs from four threads at once on one runtime: each takes a set of threads
/// (at most four sets of 1 worker + 2 lanes), all joined when the runtime is
/// dropped.
fn concurrent_runs(before: usize) {
    let rt = Runtime::builder().threads(2).streams(2).build();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..50 {
                    rt.run(small_graph()).unwrap();
                }
            });
        }
    });
    let during = settled(before);
    assert!(
        during > before && during <= before + 4 * 3,
        "{during} threads after the runs, {before} before"
    );
    drop(rt);
    assert_eq!(settled(before), before, "after concurrent runs");
}

/// A long graph of small tasks on CPU workers and stream lanes, behind a gate
/// task that holds until the cancel has reached the run: after `cancel` returns,
/// none of the small tasks has run, and every thread is gone (the runtime was
/// moved into `submit`, so the run held its last clone).
fn cancelled_run(before: usize) {
    let n = 200_000;
    let ran = Arc::new(AtomicUsize::new(0));
    let (started, gate_open) = mpsc::channel();
    let mut g = TaskGraph::with_capacity(n + 1, n);
    let gate = g.task("gate", move |ctx| {
        started.send(()).unwrap();
        // A minute caps the wait so a cancel that never arrives fails the test
        // (small tasks then run) instead of hanging it.
        let t = Instant::now();
        while !ctx.is_stopping() && t.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    });
    let mut prev = gate;
    for i in 0..n {
        let ran = ran.clone();
        let lane = if i % 5 == 0 {
            Lane::Stream(i % 2)
        } else {
            Lane::Cpu
        };
        let t = g.add(
            Task::new("small", move |_| {
                ran.fetch_add(1, Ordering::Relaxed);
                Ok(())
            })
            .lane(lane),
        );
        // Chains of 16 hanging off the gate: wide and long.
        g.edge(if i % 16 == 0 { gate } else { prev }, t);
        prev = t;
    }
    let handle = Runtime::builder().threads(3).streams(2).build().submit(g);
    gate_open.recv().unwrap();
    let err = handle.cancel().unwrap_err();
    assert!(matches!(err, Error::Cancelled), "{err}");
    assert_eq!(
        ran.load(Ordering::Relaxed),
        0,
        "no task starts after a cancel"
    );
    assert_eq!(settled(before), before, "after a cancel");
}

/// A worker or lane that cannot start: the ones that did start are joined, at
/// once (the runtime is still alive).
fn unstartable_threads(before: usize) {
    let absurd = 1 << 60;
    for rt in [
        Runtime::builder()
            .threads(3)
            .streams(1)
            .stack_size(absurd)
            .build(),
        Runtime::builder()
            .threads(3)
            .streams(2)
            .stream_stack_size(absurd)
            .build(),
    ] {
        let mut g = TaskGraph::new();
        let a = g.task("a", |_| Ok(()));
        let s = g.add(Task::new("s", |_| Ok(())).lane(Lane::Stream(0)));
        g.edge(a, s);
        let err = rt.run(g).unwrap_err();
        assert!(matches!(err, Error::ThreadSpawn { .. }), "{err}");
        assert_eq!(settled(before), before, "after {err}");
    }
}
