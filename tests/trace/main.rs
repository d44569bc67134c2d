//! The Chrome trace: the object form of the Trace Event Format, every task once
//! as a complete (`X`) event with `ts` and `dur`, expected tracks, no overlap,
//! numeric arguments, no absolute path; one file per run with `run_with`; the
//! caller's own `tracing` subscriber still sees task spans and events.

use eigenflow::graph::{Lane, Task, TaskGraph};
use eigenflow::runtime::{RunOptions, Runtime};
use eigenflow::trace::TraceLevel;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn graph(n: usize) -> TaskGraph<'static> {
    let mut g = TaskGraph::new();
    let mut prev = Vec::new();
    for i in 0..n {
        let lane = match i % 5 {
            0 => Lane::Stream(0),
            1 => Lane::Stream(1),
            _ => Lane::Cpu,
        };
        let id = g.add(
            Task::new(format!("task{i}"), move |_| {
                std::hint::black_box((0..2000u64).sum::<u64>());
                Ok(())
            })
            .lane(lane)
            .stage(stage_of(i, n))
            .cost(1e4, 8e3),
        );
        if i >= 7 {
            g.edge(prev[i - 7], id);
        }
        prev.push(id);
    }
    g
}

fn stage_of(i: usize, n: usize) -> &'static str {
    if i < n / 2 {
        "first"
    } else {
        "second"
    }
}

/// A fresh directory for a test's traces (a trace's directory must exist).
fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("eigenflow-trace-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The whole file as JSON, checked for the object form
/// `{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}` and,
/// event by event, for the rules every trace keeps (see `assert_event_form`).
fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    // The build machine's paths never reach the file (traces used to carry
    // the absolute source paths of `tracing` callsites).
    let root = env!("CARGO_MANIFEST_DIR");
    assert!(!text.contains(root), "the crate's path is in the trace");
    let doc: Value = serde_json::from_str(&text).expect("trace parses as JSON");
    let keys: BTreeSet<&str> = doc
        .as_object()
        .expect("object form")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        BTreeSet::from(["traceEvents", "displayTimeUnit", "otherData"])
    );
    assert_eq!(doc["displayTimeUnit"], "ms");
    assert!(doc["otherData"]["tasks"].is_u64(), "{}", doc["otherData"]);
    for e in doc["traceEvents"].as_array().expect("traceEvents array") {
        assert_event_form(e);
    }
    doc
}

/// One event kind for tasks everywhere: a complete (`X`) event with numeric
/// `ts` and `dur` (no `B`/`E` pairs, no instant events), numeric `flops` and
/// `bytes`, and no string anywhere in the event that is an absolute path.
/// Metadata (`M`) events name processes and threads.
fn assert_event_form(e: &Value) {
    no_absolute_path(e, e);
    match e["ph"].as_str().expect("ph") {
        "M" => {
            let name = e["name"].as_str().unwrap();
            assert!(name == "process_name" || name == "thread_name", "{e}");
        }
        "X" => {
            for key in ["pid", "tid"] {
                assert!(e[key].is_u64(), "{key}: {e}");
            }
            for key in ["ts", "dur"] {
                let t = e[key]
                    .as_f64()
                    .unwrap_or_else(|| panic!("numeric {key}: {e}"));
                assert!(t >= 0.0, "{key}: {e}");
            }
            let args = &e["args"];
            for key in ["flops", "bytes"] {
                assert!(args[key].is_number(), "numeric {key}: {e}");
            }
            if !args["tasks"].is_null() {
                assert!(args["tasks"].is_u64(), "numeric tasks: {e}");
            }
            for key in ["stage", "name", "lane"] {
                assert!(args[key].is_string(), "{key}: {e}");
            }
        }
        other => panic!("only metadata and complete events, got {other}: {e}"),
    }
}

fn no_absolute_path(v: &Value, event: &Value) {
    match v {
        Value::String(s) => {
            let windows = s.as_bytes().get(1..3) == Some(b":\\".as_slice());
            assert!(
                !s.starts_with('/') && !windows && !s.contains(".rs:"),
                "a path in {event}"
            );
        }
        Value::Array(a) => a.iter().for_each(|x| no_absolute_path(x, event)),
        Value::Object(o) => o.values().for_each(|x| no_absolute_path(x, event)),
        _ => {}
    }
}

fn events(doc: &Value) -> &[Value] {
    doc["traceEvents"].as_array().unwrap()
}

/// A time in the file (microseconds, three decimals) as exact nanoseconds.
fn ns(v: &Value) -> u64 {
    (v.as_f64().expect("numeric time") * 1000.0).round() as u64
}

/// `X` events per (pid, tid) track: (start, end) in nanoseconds and the event.
type Tracks<'a> = BTreeMap<(u64, u64), Vec<(u64, u64, &'a Value)>>;

fn tracks(events: &[Value]) -> Tracks<'_> {
    let mut out: Tracks = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let start = ns(&e["ts"]);
        out.entry(key)
            .or_default()
            .push((start, start + ns(&e["dur"]), e));
    }
    out
}

fn assert_no_overlap(tracks: &Tracks) {
    for (track, list) in tracks {
        let mut list = list.clone();
        list.sort_by_key(|x| x.0);
        for w in list.windows(2) {
            assert!(
                w[0].1 <= w[1].0,
                "overlap on {track:?}: {} and {}",
                w[0].2,
                w[1].2
            );
        }
    }
}

/// Thread names by (pid, tid) and process names by pid, from the metadata.
fn names(events: &[Value]) -> (BTreeMap<(u64, u64), String>, BTreeMap<u64, String>) {
    let mut threads = BTreeMap::new();
    let mut processes = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "M") {
        let pid = e["pid"].as_u64().unwrap();
        let name = e["args"]["name"].as_str().unwrap().to_string();
        match e["name"].as_str().unwrap() {
            "thread_name" => {
                threads.insert((pid, e["tid"].as_u64().unwrap()), name);
            }
            "process_name" => {
                processes.insert(pid, name);
            }
            other => panic!("unexpected metadata {other}"),
        }
    }
    (threads, processes)
}

/// Track names: `cpu-N` in process 1 "cpu workers", `stream-N` in process 2.
fn assert_named_tracks(events: &[Value], threads: usize, streams: usize) {
    let (thread_names, process_names) = names(events);
    let mut want = BTreeMap::new();
    for w in 0..threads {
        want.insert((1, w as u64), format!("cpu-{w}"));
    }
    for s in 0..streams {
        want.insert((2, s as u64), format!("stream-{s}"));
    }
    assert_eq!(thread_names, want);
    // In a stable order too: the metadata lists `cpu-0`, `cpu-1`, ..., then
    // `stream-0`, ... (viewers keep the file's order for equal sort indices).
    let in_file: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    let in_order: Vec<&str> = want.values().map(String::as_str).collect();
    assert_eq!(in_file, in_order);
    assert_eq!(process_names[&1], "cpu workers");
    match streams {
        0 => assert!(!process_names.contains_key(&2), "{process_names:?}"),
        _ => assert_eq!(process_names[&2], "streams (host)"),
    }
}

#[test]
fn task_level_trace_names_every_task_once_on_expected_tracks() {
    let dir = temp_dir("task");
    let path = dir.join("run.json");
    let n = 600;
    let rt = Runtime::builder()
        .threads(2)
        .streams(2)
        .trace(&path, TraceLevel::Task)
        .build();
    let report = rt.run(graph(n)).unwrap();
    let doc = load(&path);
    assert_eq!(doc["otherData"]["trace_level"], "task");
    let events = events(&doc);
    let spans = tracks(events);

    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for ((pid, tid), list) in &spans {
        for (_, _, e) in list {
            let name = e["name"].as_str().unwrap();
            *seen.entry(name.to_string()).or_default() += 1;
            let i: usize = name.strip_prefix("task").unwrap().parse().unwrap();
            // Every task event carries its args, and they match the task.
            let args = &e["args"];
            assert_eq!(args["name"], name);
            assert_eq!(args["stage"], stage_of(i, n));
            assert_eq!(e["cat"], stage_of(i, n));
            assert_eq!(args["flops"], 1e4);
            assert_eq!(args["bytes"], 8e3);
            let lane = match i % 5 {
                0 => "stream-0",
                1 => "stream-1",
                _ => "cpu",
            };
            assert_eq!(args["lane"], lane, "{e}");
            // On the track of its lane: stream s is (2, s); CPU tasks are in
            // process 1 on their worker's track.
            match lane {
                "cpu" => assert!(*pid == 1 && *tid < 2, "{e}"),
                _ => assert_eq!(format!("stream-{tid}"), lane),
            }
        }
    }
    for i in 0..n {
        assert_eq!(seen.get(&format!("task{i}")), Some(&1), "task{i}");
    }
    assert_eq!(seen.len(), n, "no other events");

    // Events of both kinds of lane were checked by `load`: CPU workers
    // (process 1) and stream lanes (process 2).
    let keys: BTreeSet<(u64, u64)> = spans.keys().copied().collect();
    assert!(keys.contains(&(2, 0)) && keys.contains(&(2, 1)), "{keys:?}");
    assert!(keys.iter().any(|k| k.0 == 1), "{keys:?}");
    assert_named_tracks(events, 2, 2);
    assert_no_overlap(&spans);

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
    let dir = temp_dir("stage");
    let path = dir.join("run.json");
    let n = 2_000;
    Runtime::builder()
        .threads(2)
        .streams(2)
        .trace(&path, TraceLevel::Stage)
        .build()
        .run(graph(n))
        .unwrap();
    let doc = load(&path);
    assert_eq!(doc["otherData"]["trace_level"], "stage");
    let events = events(&doc);
    let spans = tracks(events);
    let count: usize = spans.values().map(Vec::len).sum();
    assert!(
        count < n,
        "stage level merges runs of tasks ({count} events)"
    );
    // Every task is counted once, in the `tasks` argument of its run, with the
    // run's flops summed.
    let mut tasks = 0;
    for (_, _, e) in spans.values().flatten() {
        let k = e["args"]["tasks"].as_u64().unwrap();
        assert_eq!(e["args"]["flops"], 1e4 * k as f64, "{e}");
        tasks += k;
    }
    assert_eq!(tasks, n as u64);
    assert_named_tracks(events, 2, 2);
    assert_no_overlap(&spans);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn default_level_is_auto_and_small_graphs_are_traced_by_task() {
    assert_eq!(TraceLevel::default(), TraceLevel::Auto);
    let dir = temp_dir("auto");
    let path = dir.join("run.json");
    let n = 300;
    Runtime::builder()
        .threads(2)
        .streams(2)
        .trace(&path, TraceLevel::default())
        .build()
        .run(graph(n))
        .unwrap();
    let doc = load(&path);
    assert_eq!(doc["otherData"]["trace_level"], "task");
    assert_eq!(doc["otherData"]["tasks"], n);
    let spans = tracks(events(&doc));
    let names: BTreeSet<&str> = spans
        .values()
        .flatten()
        .map(|(_, _, e)| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), n);
    assert_eq!(spans.values().map(Vec::len).sum::<usize>(), n);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn failed_run_still_closes_its_trace() {
    let dir = temp_dir("failed");
    let path = dir.join("run.json");
    let mut g = TaskGraph::new();
    let a = g.task("a", |_| Ok(()));
    let b = g.task("b", |_| {
        Err(eigenflow::Error::InvalidArgument("boom".into()))
    });
    g.edge(a, b);
    let err = Runtime::builder()
        .threads(2)
        .trace(&path, TraceLevel::Task)
        .build()
        .run(g)
        .unwrap_err();
    // Data errors of a task body reach the caller as themselves.
    assert!(matches!(err, eigenflow::Error::InvalidArgument(_)), "{err}");
    let doc = load(&path);
    let names: BTreeSet<&str> = events(&doc)
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, BTreeSet::from(["a", "b"]));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn unwritable_trace_path_is_an_error() {
    let mut g = TaskGraph::new();
    g.task("a", |_| Ok(()));
    let err = Runtime::builder()
        .trace("/proc/not-here.json", TraceLevel::Task)
        .build()
        .run(g)
        .unwrap_err();
    assert!(matches!(err, eigenflow::Error::Io { .. }), "{err}");
}

/// Issue 58: a trace path whose directory does not exist is refused, naming
/// the directory, and nothing is created (the trace used to make every
/// missing directory, `/nonexistent/dir` included); no task runs.
#[test]
fn trace_path_in_a_missing_directory_is_refused_not_created() {
    let dir = temp_dir("missing");
    let missing = dir.join("not").join("here");
    let path = missing.join("t.json");
    let ran = std::sync::atomic::AtomicBool::new(false);
    let mut g = TaskGraph::new();
    g.task("a", |_| {
        ran.store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    });
    let err = Runtime::builder()
        .build()
        .run_with(g, &RunOptions::new().trace(&path, TraceLevel::Task))
        .unwrap_err();
    assert!(
        matches!(&err, eigenflow::Error::InvalidArgument(m) if m.contains("does not exist")),
        "{err}"
    );
    assert!(
        err.to_string().contains(&missing.display().to_string()),
        "{err}"
    );
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst), "a task ran");
    assert!(!dir.join("not").exists(), "a directory was created");
    // The one-stage paths' phase trace follows the same rule.
    let err = eigenflow::trace::record_phases(&path, || Ok(())).unwrap_err();
    assert!(matches!(err, eigenflow::Error::InvalidArgument(_)), "{err}");
    assert!(!dir.join("not").exists(), "a directory was created");
    std::fs::remove_dir_all(dir).ok();
}

/// Issue 58: the one-stage EVD and SVD (no task graph) write a trace of
/// their phases, in the same form as a run's, with the same bits as an
/// untraced call.
#[test]
fn one_stage_paths_trace_their_phases() {
    use eigenflow::pipeline::{eigh, svd, EvdJob, EvdOptions, SvdJob, SvdOptions};
    let dir = temp_dir("phases");
    let rt = Runtime::builder().threads(2).build();
    let a = eigenflow::gallery::random_symmetric_uniform::<f64>(300, 5);
    let opts = EvdOptions::auto();
    assert!(opts.one_stage_for::<f64>(300, EvdJob::Vectors));
    let cases: [(&str, EvdJob, &[&str]); 2] = [
        ("evd-vectors", EvdJob::Vectors, &["sytrd", "stedc", "ormtr"]),
        ("evd-values", EvdJob::Values, &["sytrd", "sterf"]),
    ];
    for (tag, job, want) in cases {
        let path = dir.join(format!("{tag}.json"));
        let plain = eigh(a.as_ref(), job, &opts, &rt).unwrap();
        let traced =
            eigenflow::trace::record_phases(&path, || eigh(a.as_ref(), job, &opts, &rt)).unwrap();
        assert_eq!(plain.values, traced.values, "{tag}: same bits");
        let bits = |v: Option<faer::Mat<f64>>| {
            v.map(|v| {
                let (m, n) = (v.nrows(), v.ncols());
                (0..n)
                    .flat_map(|j| (0..m).map(move |i| (i, j)))
                    .map(|(i, j)| v[(i, j)].to_bits())
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(
            bits(plain.vectors),
            bits(traced.vectors),
            "{tag}: same bits"
        );
        check_phases(&load(&path), tag, want);
    }
    let b = eigenflow::gallery::random_uniform::<f64>(400, 300, 5);
    let sopts = SvdOptions::auto();
    let cases: [(&str, SvdJob, &[&str]); 2] = [
        (
            "svd-vectors",
            SvdJob::Vectors,
            &["gebrd", "bdsdc", "ormbr_q", "ormbr_p"],
        ),
        ("svd-values", SvdJob::Values, &["gebrd", "dqds"]),
    ];
    for (tag, job, want) in cases {
        assert!(sopts.one_stage_for::<f64>(400, 300, job));
        let path = dir.join(format!("{tag}.json"));
        let plain = svd(b.as_ref(), job, &sopts, &rt).unwrap();
        let traced =
            eigenflow::trace::record_phases(&path, || svd(b.as_ref(), job, &sopts, &rt)).unwrap();
        assert_eq!(plain.values, traced.values, "{tag}: same bits");
        check_phases(&load(&path), tag, want);
    }
    std::fs::remove_dir_all(dir).ok();
}

/// The phase events of `doc`, in time order on track cpu-0: the phases
/// `want` in that order, each with its stage and a duration.
fn check_phases(doc: &Value, tag: &str, want: &[&str]) {
    let spans = tracks(events(doc));
    assert_eq!(spans.len(), 1, "{tag}: one track");
    let (key, events) = spans.iter().next().unwrap();
    assert_eq!(*key, (1, 0), "{tag}: track cpu-0");
    let names: Vec<&str> = events
        .iter()
        .map(|(_, _, e)| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, want, "{tag}");
    for (_, _, e) in events {
        let stage = e["args"]["stage"].as_str().unwrap();
        assert!(
            ["reduce", "solve", "back_transform"].contains(&stage),
            "{tag}: {e}"
        );
    }
    assert_eq!(doc["otherData"]["trace_level"], "phase");
    assert_eq!(doc["otherData"]["tasks"], want.len());
    let total: f64 = events
        .iter()
        .map(|(_, _, e)| e["dur"].as_f64().unwrap())
        .sum();
    assert!(total > 0.0, "{tag}: timed");
}

#[test]
fn every_traced_run_records_every_cpu_task() {
    // Traced and untraced runs alternate in one process; each trace must be
    // complete (see also tests/trace_first_run.rs).
    let dir = temp_dir("rep");
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
        let doc = load(&path);
        let count: usize = tracks(events(&doc)).values().map(Vec::len).sum();
        assert_eq!(count, n, "run {rep}: every task appears once");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn two_runs_with_two_trace_paths_give_two_files() {
    let dir = temp_dir("per-run");
    let default = dir.join("default.json");
    // The runtime's own trace path is the fallback; each run below names its own.
    let rt = Runtime::builder()
        .threads(2)
        .streams(2)
        .trace(&default, TraceLevel::Task)
        .build();
    let run = |prefix: &'static str, n: usize| {
        let mut g = TaskGraph::new();
        for i in 0..n {
            let lane = match i % 3 {
                0 => Lane::Stream(i % 2),
                _ => Lane::Cpu,
            };
            g.add(
                Task::new(format!("{prefix}{i}"), |_| Ok(()))
                    .lane(lane)
                    .cost(1.0, 2.0),
            );
        }
        g
    };
    let first = dir.join("first.json");
    let second = dir.join("second.json");
    rt.run_with(
        run("a", 40),
        &RunOptions::new().trace(&first, TraceLevel::Task),
    )
    .unwrap();
    // A submitted run takes its own path too.
    rt.submit_with(
        run("b", 70),
        &RunOptions::new().trace(&second, TraceLevel::Task),
    )
    .wait()
    .unwrap();
    assert!(!default.exists(), "the runs' own paths replace the default");
    for (path, prefix, n) in [(&first, "a", 40), (&second, "b", 70)] {
        let doc = load(path);
        assert_eq!(doc["otherData"]["tasks"], n);
        let spans = tracks(events(&doc));
        let names: BTreeSet<String> = spans
            .values()
            .flatten()
            .map(|(_, _, e)| e["name"].as_str().unwrap().to_string())
            .collect();
        let want: BTreeSet<String> = (0..n).map(|i| format!("{prefix}{i}")).collect();
        assert_eq!(names, want, "{}: this run's tasks only", path.display());
        assert_eq!(spans.values().map(Vec::len).sum::<usize>(), n);
        assert!(spans.keys().any(|k| k.0 == 1) && spans.keys().any(|k| k.0 == 2));
    }
    // Without options, the runtime's default path is used.
    rt.run_with(run("c", 5), &RunOptions::new()).unwrap();
    let doc = load(&default);
    assert_eq!(doc["otherData"]["tasks"], 5);
    std::fs::remove_dir_all(dir).ok();
}

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

#[test]
fn eigensolver_trace_keeps_the_same_form() {
    // The pipeline's own tasks (names, stages, costs) through the same writer:
    // a two-stage EVD with vectors, forced below the one-stage crossover.
    let dir = temp_dir("evd");
    let path = dir.join("evd.json");
    let n = 160;
    let a = eigenflow::gallery::random_symmetric_uniform::<f64>(n, 5);
    let mut opts = eigenflow::EvdOptions::auto();
    opts.one_stage_below = 1;
    let rt = Runtime::builder()
        .threads(2)
        .trace(&path, TraceLevel::Task)
        .build();
    let eig =
        eigenflow::pipeline::eigh(a.as_ref(), eigenflow::pipeline::EvdJob::Vectors, &opts, &rt)
            .unwrap();
    let doc = load(&path);
    let spans = tracks(events(&doc));
    let count: usize = spans.values().map(Vec::len).sum();
    assert_eq!(count, eig.report.tasks.len(), "one event per task");
    assert_eq!(doc["otherData"]["tasks"], count);
    let stages: BTreeSet<&str> = spans
        .values()
        .flatten()
        .map(|(_, _, e)| e["args"]["stage"].as_str().unwrap())
        .collect();
    assert!(
        stages.len() >= 4,
        "the two-stage pipeline's stages: {stages:?}"
    );
    assert_named_tracks(events(&doc), 2, 0);
    assert_no_overlap(&spans);
    std::fs::remove_dir_all(dir).ok();
}
