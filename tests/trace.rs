//! The Chrome trace: valid JSON, every task once, expected tracks, no overlap.

use eigenflow::graph::{Lane, Task, TaskGraph};
use eigenflow::runtime::Runtime;
use eigenflow::trace::TraceLevel;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

fn graph(n: usize) -> TaskGraph<'static> {
    let mut g = TaskGraph::new();
    let mut prev = Vec::new();
    for i in 0..n {
        let lane = match i % 5 {
            0 => Lane::Stream(0),
            1 => Lane::Stream(1),
            _ => Lane::Cpu,
        };
        let stage = if i < n / 2 { "first" } else { "second" };
        let id = g.add(
            Task::new(format!("task{i}"), move |_| {
                std::hint::black_box((0..2000u64).sum::<u64>());
                Ok(())
            })
            .lane(lane)
            .stage(stage)
            .cost(1e4, 8e3),
        );
        if i >= 7 {
            g.edge(prev[i - 7], id);
        }
        prev.push(id);
    }
    g
}

fn load(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).expect("trace parses as a JSON array")
}

/// Spans per (pid, tid) track: (start, end) in microseconds and the name.
type Tracks = BTreeMap<(u64, u64), Vec<(f64, f64, String)>>;

/// Spans per track, from B/E pairs and X events.
fn intervals(events: &[Value]) -> Tracks {
    let mut open: BTreeMap<(u64, u64), Vec<(f64, String)>> = BTreeMap::new();
    let mut out: Tracks = BTreeMap::new();
    for e in events {
        let (Some(pid), Some(tid)) = (e["pid"].as_u64(), e["tid"].as_u64()) else {
            continue;
        };
        let name = e["name"].as_str().unwrap_or("").to_string();
        match e["ph"].as_str().unwrap() {
            "B" => open
                .entry((pid, tid))
                .or_default()
                .push((e["ts"].as_f64().unwrap(), name)),
            "E" => {
                let (ts, name) = open.get_mut(&(pid, tid)).unwrap().pop().expect("E after B");
                out.entry((pid, tid))
                    .or_default()
                    .push((ts, e["ts"].as_f64().unwrap(), name));
            }
            "X" => {
                let ts = e["ts"].as_f64().unwrap();
                out.entry((pid, tid)).or_default().push((
                    ts,
                    ts + e["dur"].as_f64().unwrap(),
                    name,
                ));
            }
            _ => {}
        }
    }
    out
}

#[test]
fn task_level_trace_names_every_task_once_on_expected_tracks() {
    let dir = std::env::temp_dir().join(format!("eigenflow-trace-{}", std::process::id()));
    let path = dir.join("run.json");
    let n = 600;
    let rt = Runtime::builder()
        .threads(2)
        .streams(2)
        .trace(&path, TraceLevel::Task)
        .build();
    let report = rt.run(graph(n)).unwrap();
    let events = load(&path);
    let spans = intervals(&events);

    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    for list in spans.values() {
        for (_, _, name) in list {
            *names.entry(name.clone()).or_default() += 1;
        }
    }
    let odd: Vec<_> = names
        .iter()
        .filter(|(k, v)| !k.starts_with("task") || **v != 1)
        .collect();
    for i in 0..n {
        assert_eq!(
            names.get(&format!("task{i}")),
            Some(&1),
            "task{i}; unexpected entries {odd:?}"
        );
    }
    assert_eq!(names.len(), n, "no other spans");

    // Tracks: stream lanes are process 2, tids 0 and 1; CPU workers process 1,
    // at most 2 of them, named cpu-0/cpu-1 by metadata.
    let tracks: BTreeSet<(u64, u64)> = spans.keys().copied().collect();
    assert!(
        tracks.contains(&(2, 0)) && tracks.contains(&(2, 1)),
        "{tracks:?}"
    );
    let cpu_tracks = tracks.iter().filter(|t| t.0 == 1).count();
    assert!((1..=2).contains(&cpu_tracks), "{tracks:?}");
    let thread_names: BTreeSet<String> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap().to_string())
        .collect();
    for want in ["stream-0", "stream-1"] {
        assert!(thread_names.contains(want), "{thread_names:?}");
    }
    assert!(
        thread_names.iter().any(|t| t.starts_with("cpu-")),
        "{thread_names:?}"
    );

    // Every task event carries its args.
    let x = events.iter().find(|e| e["ph"] == "X").unwrap();
    for key in ["stage", "name", "lane", "flops", "bytes"] {
        assert!(!x["args"][key].is_null(), "missing {key} in {x}");
    }
    let b = events.iter().find(|e| e["ph"] == "B").unwrap();
    for key in ["stage", "name", "lane", "flops", "bytes"] {
        assert!(!b["args"][key].is_null(), "missing {key} in {b}");
    }

    for (track, mut list) in spans {
        list.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in list.windows(2) {
            assert!(
                w[0].1 <= w[1].0,
                "overlap on {track:?}: {:?} and {:?}",
                w[0],
                w[1]
            );
        }
    }

    let summary = report.stage_summary();
    assert_eq!(summary.len(), 2);
    assert_eq!(summary[0].stage, "first");
    assert_eq!(summary.iter().map(|s| s.tasks).sum::<usize>(), n);
    assert!((summary.iter().map(|s| s.share).sum::<f64>() - 1.0).abs() < 1e-9);
    assert!((summary[0].flops - 1e4 * (n / 2) as f64).abs() < 1e-6);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn stage_level_trace_is_bounded_and_valid() {
    let dir = std::env::temp_dir().join(format!("eigenflow-trace-stage-{}", std::process::id()));
    let path = dir.join("run.json");
    let n = 2_000;
    Runtime::builder()
        .threads(2)
        .streams(2)
        .trace(&path, TraceLevel::Stage)
        .build()
        .run(graph(n))
        .unwrap();
    let events = load(&path);
    let spans = intervals(&events);
    let count: usize = spans.values().map(Vec::len).sum();
    assert!(
        count < n,
        "stage level merges runs of tasks ({count} events)"
    );
    for (track, mut list) in spans {
        list.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in list.windows(2) {
            assert!(w[0].1 <= w[1].0, "overlap on {track:?}");
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn unwritable_trace_path_is_an_error() {
    let mut g = TaskGraph::new();
    g.task("a", |_| Ok(()));
    let err = Runtime::builder()
        .trace("/proc/definitely/not/here.json", TraceLevel::Task)
        .build()
        .run(g)
        .unwrap_err();
    assert!(matches!(err, eigenflow::Error::Io { .. }), "{err}");
}

#[test]
fn every_traced_run_records_every_cpu_task() {
    // Traced and untraced runs alternate in one process; each trace must be
    // complete (see also tests/trace_first_run.rs).
    let dir = std::env::temp_dir().join(format!("eigenflow-trace-rep-{}", std::process::id()));
    for rep in 0..20 {
        Runtime::builder()
            .threads(2)
            .streams(2)
            .build()
            .run(graph(30))
            .unwrap();
        let path = dir.join(format!("run{rep}.json"));
        let n = 100;
        Runtime::builder()
            .threads(2)
            .streams(2)
            .trace(&path, TraceLevel::Task)
            .build()
            .run(graph(n))
            .unwrap();
        let spans = intervals(&load(&path));
        let count: usize = spans.values().map(Vec::len).sum();
        assert_eq!(count, n, "run {rep}: every task appears once");
    }
    std::fs::remove_dir_all(dir).ok();
}
