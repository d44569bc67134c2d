//! The caller's own `tracing` subscriber still sees the task spans and the
//! events of a traced run.

use super::form::{events, load, temp_dir, tracks};
use eigenflow::graph::{Lane, Task, TaskGraph};
use eigenflow::runtime::{RunOptions, Runtime};
use eigenflow::trace::TraceLevel;

/// Names of the `task` spans a global subscriber saw, for names starting `sub`.
static SEEN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Messages of the events a global subscriber saw, for messages starting
/// `user event`.
static EVENTS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// A minimal subscriber recording task span names and user event messages.
struct SpanNames;

impl tracing::Subscriber for SpanNames {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        struct Visit(Option<String>);
        impl tracing::field::Visit for Visit {
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                if f.name() == "name" {
                    self.0 = Some(format!("{v:?}"));
                }
            }
        }
        if attrs.metadata().name() == "task" {
            let mut visit = Visit(None);
            attrs.record(&mut visit);
            if let Some(name) = visit.0.filter(|n| n.starts_with("sub")) {
                SEEN.lock().unwrap().push(name);
            }
        }
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Visit(Option<String>);
        impl tracing::field::Visit for Visit {
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                if f.name() == "message" {
                    self.0 = Some(format!("{v:?}"));
                }
            }
        }
        let mut visit = Visit(None);
        event.record(&mut visit);
        if let Some(msg) = visit.0.filter(|m| m.starts_with("user event")) {
            EVENTS.lock().unwrap().push(msg);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn own_subscriber_sees_task_spans_and_events_of_a_traced_run() {
    // The only test of this binary that sets a subscriber; the others do not
    // depend on one (the trace file is written without `tracing`).
    tracing::subscriber::set_global_default(SpanNames).expect("first global subscriber");
    let dir = temp_dir("subscriber");
    let n = 50;
    let mut g = TaskGraph::new();
    for i in 0..n {
        let lane = if i % 2 == 0 {
            Lane::Cpu
        } else {
            Lane::Stream(0)
        };
        g.add(
            Task::new(format!("sub{i}"), move |_| {
                // The caller's own logging inside a task body.
                tracing::info!("user event {i}");
                Ok(())
            })
            .lane(lane),
        );
    }
    let path = dir.join("run.json");
    Runtime::builder()
        .threads(2)
        .streams(1)
        .build()
        .run_with(g, &RunOptions::new().trace(&path, TraceLevel::Task))
        .unwrap();
    let mut seen = SEEN.lock().unwrap().clone();
    seen.sort();
    let mut want: Vec<String> = (0..n).map(|i| format!("sub{i}")).collect();
    want.sort();
    assert_eq!(seen, want, "every task span, CPU and stream, exactly once");
    let mut messages = EVENTS.lock().unwrap().clone();
    messages.sort();
    let mut want: Vec<String> = (0..n).map(|i| format!("user event {i}")).collect();
    want.sort();
    assert_eq!(messages, want, "every event of a task body, CPU and stream");
    // The trace was written all the same, and holds only the tasks.
    let doc = load(&path);
    assert_eq!(
        tracks(events(&doc)).values().map(Vec::len).sum::<usize>(),
        n
    );
    std::fs::remove_dir_all(dir).ok();
}
