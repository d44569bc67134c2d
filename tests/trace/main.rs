//! The Chrome trace: the object form of the Trace Event Format, every task once
//! as a complete (`X`) event with `ts` and `dur`, expected tracks, no overlap,
//! numeric arguments, no absolute path; one file per run with `run_with`; the
//! caller's own `tracing` subscriber still sees task spans and events.

use eigenflow::graph::{Lane, Task, TaskGraph};
use eigenflow::runtime::{RunOptions, Runtime};
use eigenflow::trace::TraceLevel;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

mod form;
mod subscriber;

use form::*;

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
