//! Alone in its binary: the first run of the process is traced.
//!
//! Regression: with a single registered dispatcher, tracing-core evaluates a
//! callsite's interest on whichever thread hits it first. When that was a
//! stream-lane thread (which has no subscriber), the task span was disabled for
//! the whole run and the CPU tracks came out empty, in about one process in
//! three.

use eigenflow::graph::{Lane, Task, TaskGraph};
use eigenflow::runtime::Runtime;
use eigenflow::trace::TraceLevel;

#[test]
fn first_traced_run_of_a_process_has_every_cpu_task() {
    let n = 400;
    let mut g = TaskGraph::new();
    for i in 0..n {
        let lane = match i % 5 {
            0 => Lane::Stream(0),
            1 => Lane::Stream(1),
            _ => Lane::Cpu,
        };
        g.add(Task::new(format!("task{i}"), |_| Ok(())).lane(lane));
    }
    let dir = std::env::temp_dir().join(format!("eigenflow-first-{}", std::process::id()));
    let path = dir.join("run.json");
    Runtime::builder()
        .threads(2)
        .streams(2)
        .trace(&path, TraceLevel::Task)
        .build()
        .run(g)
        .unwrap();
    let events: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let cpu_begins = events
        .iter()
        .filter(|e| e["ph"] == "B" && e["pid"] == 1)
        .count();
    assert_eq!(cpu_begins, n - 2 * n / 5, "one slice per CPU task");
    std::fs::remove_dir_all(dir).ok();
}
