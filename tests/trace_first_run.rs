//! Alone in its binary: the first run of the process is traced.
//!
//! Regression: when the trace was written by a `tracing` subscriber installed on
//! the CPU workers only, tracing-core evaluated a callsite's interest on whichever
//! thread hit it first. When that was a stream-lane thread (which had no
//! subscriber), the task span was disabled for the whole run and the CPU tracks
//! came out empty, in about one process in three. The trace is now written by
//! the executor directly, so no callsite state can empty it; this test keeps
//! that scenario covered.

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
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.json");
    Runtime::builder()
        .threads(2)
        .streams(2)
        .trace(&path, TraceLevel::Task)
        .build()
        .run(g)
        .unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let slices = |pid: u64| {
        doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X" && e["pid"] == pid)
            .count()
    };
    assert_eq!(slices(1), n - 2 * n / 5, "one slice per CPU task");
    assert_eq!(slices(2), 2 * n / 5, "one slice per stream task");
    std::fs::remove_dir_all(dir).ok();
}
