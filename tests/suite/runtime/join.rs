//! `Runtime::join`: both halves run (in parallel when a helper is free), they
//! may borrow from the caller, errors and panics come back, and the runtime
//! serves graphs and joins alike afterwards, nested or from several threads.

use eigenflow::graph::TaskGraph;
use eigenflow::runtime::Runtime;
use eigenflow::Error;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Runtimes of every shape `join` distinguishes: one worker, the inline
/// crew, the dedicated crew (a stack size), and a stream lane beside it.
fn runtimes() -> Vec<Runtime> {
    vec![
        Runtime::builder().threads(1).build(),
        Runtime::builder().threads(2).build(),
        Runtime::builder().threads(3).build(),
        Runtime::builder().threads(2).stack_size(4 << 20).build(),
        Runtime::builder().threads(2).streams(1).build(),
    ]
}

#[test]
fn both_halves_run_and_write_their_borrowed_halves() {
    for rt in runtimes() {
        for round in 0..200usize {
            let mut v = vec![0usize; 64];
            let (lo, hi) = v.split_at_mut(32);
            rt.join(
                || {
                    lo.iter_mut().enumerate().for_each(|(i, x)| *x = i + round);
                    Ok(())
                },
                || {
                    hi.iter_mut()
                        .enumerate()
                        .for_each(|(i, x)| *x = 32 + i + round);
                    Ok(())
                },
            )
            .expect("join");
            assert!(v.iter().enumerate().all(|(i, &x)| x == i + round));
        }
    }
}

#[test]
fn the_halves_run_in_parallel_when_a_worker_is_free() {
    // Each half waits (at most 200 ms) until the other has started, so a
    // free worker takes the second half while the caller holds the first.
    let rt = Runtime::builder().threads(2).build();
    let mut apart = 0;
    for _ in 0..20 {
        let arrived = AtomicUsize::new(0);
        let ids = std::sync::Mutex::new(Vec::new());
        let meet = || {
            ids.lock().unwrap().push(std::thread::current().id());
            arrived.fetch_add(1, Ordering::SeqCst);
            let t = Instant::now();
            while arrived.load(Ordering::SeqCst) < 2 && t.elapsed() < Duration::from_millis(200) {
                std::hint::spin_loop();
            }
            Ok(())
        };
        rt.join(meet, meet).expect("join");
        let ids = ids.into_inner().unwrap();
        assert_eq!(ids.len(), 2);
        apart += usize::from(ids[0] != ids[1]);
    }
    assert!(apart > 0, "the two halves never ran on two threads");
}

#[test]
fn an_error_or_a_panic_of_either_half_is_returned_and_the_runtime_goes_on() {
    for rt in runtimes() {
        let other = AtomicUsize::new(0);
        let r = rt.join(
            || Err(Error::InvalidArgument("left".into())),
            || {
                other.fetch_add(1, Ordering::SeqCst);
                Ok(())
            },
        );
        assert!(
            matches!(r, Err(Error::InvalidArgument(ref m)) if m == "left"),
            "{r:?}"
        );
        let r = rt.join(|| Ok(()), || panic!("right half"));
        match r {
            Err(Error::TaskPanicked { message, .. }) => assert!(message.contains("right half")),
            other => panic!("expected TaskPanicked, got {other:?}"),
        }
        // The runtime still serves joins and graphs.
        let n = AtomicUsize::new(0);
        rt.join(
            || {
                n.fetch_add(1, Ordering::SeqCst);
                Ok(())
            },
            || {
                n.fetch_add(2, Ordering::SeqCst);
                Ok(())
            },
        )
        .expect("join after a failure");
        let mut g = TaskGraph::new();
        g.task("after", |_| {
            n.fetch_add(4, Ordering::SeqCst);
            Ok(())
        });
        rt.run(g).expect("run after a failure");
        assert_eq!(n.load(Ordering::SeqCst), 7);
    }
}

#[test]
fn joins_nested_in_tasks_and_from_several_threads_are_correct() {
    let rt = Runtime::builder().threads(2).build();
    let total = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                let mut g = TaskGraph::new();
                for _ in 0..4 {
                    g.task("outer", |_| {
                        for _ in 0..50 {
                            rt.join(
                                || {
                                    total.fetch_add(1, Ordering::SeqCst);
                                    Ok(())
                                },
                                || {
                                    total.fetch_add(1, Ordering::SeqCst);
                                    Ok(())
                                },
                            )?;
                        }
                        Ok(())
                    });
                }
                rt.run(g).expect("outer run");
            });
        }
    });
    assert_eq!(total.load(Ordering::SeqCst), 3 * 4 * 50 * 2);
}
