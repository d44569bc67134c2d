//! After a failed run every runtime thread is joined. Alone in its test binary so
//! the process's thread count is not disturbed by other tests.

use eigenflow::graph::{Lane, Task, TaskGraph};
use eigenflow::runtime::Runtime;

fn threads_in_process() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

/// The thread count once it has settled to `want` (a joined thread can stay
/// listed in /proc for a moment while the kernel finishes its exit; a leaked
/// thread stays forever), or the last count seen after a second.
fn settled(want: usize) -> usize {
    let start = std::time::Instant::now();
    loop {
        let now = threads_in_process();
        if now == want || start.elapsed() > std::time::Duration::from_secs(1) {
            return now;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn failed_runs_leave_no_thread_behind() {
    if threads_in_process() == 0 {
        eprintln!("/proc/self/task is not readable here; nothing to count");
        return;
    }
    let before = threads_in_process();
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
        assert!(rt.run(g).is_err());
        assert_eq!(settled(before), before, "round {round}");
        let mut g = TaskGraph::new();
        g.task("fails", |_| {
            Err(eigenflow::Error::InvalidArgument("x".into()))
        });
        assert!(rt.submit(g).wait().is_err());
        assert_eq!(settled(before), before, "submit round {round}");
    }
}
