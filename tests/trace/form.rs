//! The form every trace keeps (object form, complete events, tracks named,
//! no overlap on a track, no absolute path), checked by the tests of this
//! binary, and the small graph most of them trace.

use eigenflow::graph::{Lane, Task, TaskGraph};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub fn graph(n: usize) -> TaskGraph<'static> {
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

pub fn stage_of(i: usize, n: usize) -> &'static str {
    if i < n / 2 {
        "first"
    } else {
        "second"
    }
}

/// A fresh directory for a test's traces (a trace's directory must exist).
pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("eigenflow-trace-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The whole file as JSON, checked for the object form
/// `{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}` and,
/// event by event, for the rules every trace keeps (see `assert_event_form`).
pub fn load(path: &Path) -> Value {
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
pub fn assert_event_form(e: &Value) {
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

pub fn no_absolute_path(v: &Value, event: &Value) {
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

pub fn events(doc: &Value) -> &[Value] {
    doc["traceEvents"].as_array().unwrap()
}

/// A time in the file (microseconds, three decimals) as exact nanoseconds.
pub fn ns(v: &Value) -> u64 {
    (v.as_f64().expect("numeric time") * 1000.0).round() as u64
}

/// `X` events per (pid, tid) track: (start, end) in nanoseconds and the event.
pub type Tracks<'a> = BTreeMap<(u64, u64), Vec<(u64, u64, &'a Value)>>;

pub fn tracks(events: &[Value]) -> Tracks<'_> {
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

pub fn assert_no_overlap(tracks: &Tracks) {
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
pub fn names(events: &[Value]) -> (BTreeMap<(u64, u64), String>, BTreeMap<u64, String>) {
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
pub fn assert_named_tracks(events: &[Value], threads: usize, streams: usize) {
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
