//! `Runtime::team`: every split's halves run once, may borrow from the caller,
//! run on two threads when the runtime has them, return their errors and
//! panics, and the runtime serves graphs, joins and teams afterwards, also
//! with teams opened from several threads at once.

use eigenflow::graph::TaskGraph;
use eigenflow::runtime::{Runtime, Team};
use eigenflow::Error;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Runtimes of every shape `team` distinguishes: one worker, the inline crew
/// (two and three workers: only worker 1 serves), the dedicated crew (splits
/// through `join`), and a stream lane beside the inline crew.
fn runtimes() -> Vec<Runtime> {
    vec![
        Runtime::builder().threads(1).build(),
        Runtime::builder().threads(2).build(),
        Runtime::builder().threads(3).build(),
        Runtime::builder().threads(2).stack_size(4 << 20).build(),
        Runtime::builder().threads(2).streams(1).build(),
    ]
}

/// 500 splits in a row, each writing its two borrowed halves of a buffer.
fn many_splits(team: &Team<'_>) -> eigenflow::Result<Vec<usize>> {
    let mut v = vec![0usize; 64];
    let mut sum = Vec::new();
    for round in 0..500usize {
        let (lo, hi) = v.split_at_mut(24);
        team.join(
            || {
                lo.iter_mut().enumerate().for_each(|(i, x)| *x = i + round);
                Ok(())
            },
            || {
                hi.iter_mut()
                    .enumerate()
                    .for_each(|(i, x)| *x = 24 + i + round);
                Ok(())
            },
        )?;
        assert!(
            v.iter().enumerate().all(|(i, &x)| x == i + round),
            "round {round}: a half did not run"
        );
        sum.push(v.iter().sum());
    }
    Ok(sum)
}

#[test]
fn every_split_runs_both_halves_on_every_shape() {
    let want = many_splits(&Team::serial()).expect("serial team");
    for rt in runtimes() {
        for _ in 0..3 {
            let got = rt.team(many_splits).expect("team");
            assert_eq!(got, want, "{} threads", rt.threads());
        }
    }
}

#[test]
fn the_helper_takes_the_second_half_while_the_caller_runs_the_first() {
    // The first half waits (at most 2 s) until the second has started: only a
    // second thread can start it then. With one worker the wait times out and
    // the caller runs the second half itself, which the count tells apart.
    let rt = Runtime::builder().threads(2).build();
    let caller = std::thread::current().id();
    let elsewhere = AtomicUsize::new(0);
    rt.team(|team| {
        for _ in 0..50 {
            let started = AtomicUsize::new(0);
            team.join(
                || {
                    let t = Instant::now();
                    while started.load(Ordering::SeqCst) == 0
                        && t.elapsed() < Duration::from_secs(2)
                    {
                        std::hint::spin_loop();
                    }
                    Ok(())
                },
                || {
                    started.store(1, Ordering::SeqCst);
                    if std::thread::current().id() != caller {
                        elsewhere.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(())
                },
            )?;
        }
        Ok(())
    })
    .expect("team");
    assert_eq!(elsewhere.load(Ordering::SeqCst), 50);
}

#[test]
fn an_error_or_a_panic_of_either_half_is_returned_and_the_runtime_goes_on() {
    for rt in runtimes() {
        let n = AtomicUsize::new(0);
        rt.team(|team| {
            let r = team.join(
                || Err(Error::InvalidArgument("left".into())),
                || {
                    n.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                },
            );
            assert!(
                matches!(r, Err(Error::InvalidArgument(ref m)) if m == "left"),
                "{r:?}"
            );
            let r = team.join(|| Ok(()), || Err(Error::InvalidArgument("right".into())));
            assert!(
                matches!(r, Err(Error::InvalidArgument(ref m)) if m == "right"),
                "{r:?}"
            );
            for r in [
                team.join(|| Ok(()), || panic!("right half")),
                team.join(|| panic!("left half"), || Ok(())),
            ] {
                match r {
                    Err(Error::TaskPanicked { message, .. }) => {
                        assert!(message.contains("half"), "{message}")
                    }
                    other => panic!("expected TaskPanicked, got {other:?}"),
                }
            }
            // The same team still splits.
            team.join(
                || {
                    n.fetch_add(10, Ordering::SeqCst);
                    Ok(())
                },
                || {
                    n.fetch_add(100, Ordering::SeqCst);
                    Ok(())
                },
            )
        })
        .expect("a team after failed splits");
        // The last split ran both halves; the second half of the first split
        // runs beside a failing first half on a team with a helper, not after
        // it on a serial one.
        let n = n.load(Ordering::SeqCst);
        assert!(n == 110 || n == 111, "{n}");
        if rt.threads() == 1 {
            assert_eq!(n, 110);
        }
        // The team's error comes back as its own.
        let r: eigenflow::Result<()> = rt.team(|_| Err(Error::InvalidArgument("scope".into())));
        assert!(matches!(r, Err(Error::InvalidArgument(ref m)) if m == "scope"));
        // The runtime still serves joins, graphs and teams.
        rt.join(|| Ok(()), || Ok(())).expect("join after a team");
        let mut g = TaskGraph::new();
        g.task("after", |_| Ok(()));
        rt.run(g).expect("run after a team");
        rt.team(many_splits).expect("team after a team");
    }
}

#[test]
fn teams_from_several_threads_and_nested_in_tasks_are_correct() {
    let rt = Runtime::builder().threads(2).build();
    let want = many_splits(&Team::serial()).expect("serial team");
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                let mut g = TaskGraph::new();
                for _ in 0..2 {
                    g.task("outer", |_| {
                        assert_eq!(rt.team(many_splits)?, want);
                        Ok(())
                    });
                }
                rt.run(g).expect("outer run");
                assert_eq!(rt.team(many_splits).expect("team"), want);
            });
        }
    });
}
