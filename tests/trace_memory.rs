//! The trace writer's memory does not grow with the number of tasks.
//!
//! A counting global allocator records live and peak heap bytes. The writer's
//! share is the difference between the peak of a traced and of an untraced run
//! of the same graph, measured from the moment the graph's single root task runs
//! (the graph, its plan and the scheduler's per-task arrays are built by then, so
//! their build-time peak does not hide anything). The report the run returns, one
//! allocation of `n` [`TaskRecord`]s owned by the caller, is not counted: it is
//! built after the trace is closed and would otherwise hide the writer's final
//! phase under its own size.
//!
//! One test function, alone in its binary: a parallel test would add its own
//! allocations to the counts.

use eigenflow::graph::{Lane, Task, TaskGraph};
use eigenflow::runtime::{Runtime, TaskRecord};
use eigenflow::trace::{TraceLevel, AUTO_TASK_LIMIT, TRACK_BUFFER};
use serde_json::Value;
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Allocations of exactly this size (the returned report) are not counted.
static EXCLUDED_SIZE: AtomicUsize = AtomicUsize::new(usize::MAX);

fn counted(size: usize) -> bool {
    size != EXCLUDED_SIZE.load(SeqCst)
}

fn grow(size: usize) {
    if counted(size) {
        let live = LIVE.fetch_add(size, SeqCst) + size;
        PEAK.fetch_max(live, SeqCst);
    }
}

fn shrink(size: usize) {
    if counted(size) {
        LIVE.fetch_sub(size, SeqCst);
    }
}

// SAFETY: every call is forwarded to `System` unchanged; the counters only
// observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees (GlobalAlloc::alloc).
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grow(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees (GlobalAlloc::alloc_zeroed).
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grow(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` through this allocator, with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        shrink(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from `System` through this allocator, with `layout`;
        // the caller guarantees `new_size` (GlobalAlloc::realloc).
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // Counted as a new block before the old one goes, as a moving
            // realloc holds both.
            grow(new_size);
            shrink(layout.size());
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Peak from here on is measured relative to the current live bytes.
fn reset_peak() {
    PEAK.store(LIVE.load(SeqCst), SeqCst);
}

const CHAINS: usize = 8;
/// Tasks of one chain in a row with the same stage: at stage level a track
/// writes about one event per `RUN` tasks, so the 2M-task file still has tens of
/// thousands of events (a writer holding its output would show).
const RUN: usize = 32;

/// A root that resets the peak, then `CHAINS` chains of empty tasks (chain 0 on
/// stream lane 0, the others on the CPU workers) whose stage alternates every
/// `RUN` tasks. Chains keep the injector and deques small, so the scheduler's own
/// memory is flat while the tasks run.
fn graph(n: usize) -> TaskGraph<'static> {
    let mut g = TaskGraph::with_capacity(n, n);
    let root = g.add(Task::new("root", |_| {
        reset_peak();
        Ok(())
    }));
    let mut tails = [root; CHAINS];
    for i in 0..n - 1 {
        let (chain, k) = (i % CHAINS, i / CHAINS);
        let lane = if chain == 0 {
            Lane::Stream(0)
        } else {
            Lane::Cpu
        };
        let stage = if (k / RUN).is_multiple_of(2) {
            "even"
        } else {
            "odd"
        };
        let t = g.add(Task::new("t", |_| Ok(())).lane(lane).stage(stage));
        g.edge(tails[chain], t);
        tails[chain] = t;
    }
    g
}

/// Peak live heap bytes over the run of an `n`-task graph from the moment its
/// root task ran (the returned report excluded).
fn run_peak(n: usize, trace: Option<&Path>) -> usize {
    let mut rt = Runtime::builder().threads(2).streams(1);
    if let Some(path) = trace {
        rt = rt.trace(path, TraceLevel::Auto);
    }
    let g = graph(n);
    EXCLUDED_SIZE.store(n * std::mem::size_of::<TaskRecord>(), SeqCst);
    let report = rt.build().run(g).unwrap();
    let peak = PEAK.load(SeqCst);
    assert_eq!(report.tasks.len(), n);
    // Freed while still excluded, so the live count stays exact.
    drop(report);
    EXCLUDED_SIZE.store(usize::MAX, SeqCst);
    peak
}

/// The writer's share at `n` tasks, and the two peaks. Both runs reset the peak
/// at their root, after everything but the task bodies is built; the traced run's
/// live bytes then also hold the writer's buffers.
fn writer_share(n: usize, path: &Path) -> (usize, usize, usize) {
    let untraced = run_peak(n, None);
    let traced = run_peak(n, Some(path));
    (traced.saturating_sub(untraced), traced, untraced)
}

/// Per-file facts from a streaming read. The file must be one JSON document laid
/// out as the writer promises: `{"traceEvents":[` alone on the first line, one
/// event object per line with `,` separators, `],` alone, then one line with
/// `displayTimeUnit` and `otherData` closing the object. Events on each track are in time order and never
/// overlap.
struct Summary {
    level: String,
    tasks_in_footer: u64,
    /// Tasks covered by `X` events (the `tasks` argument at stage level).
    tasks: u64,
    events: u64,
    track_names: HashMap<(u64, u64), String>,
    tracks_with_events: Vec<(u64, u64)>,
}

fn ns(v: &Value) -> u64 {
    let us = v.as_f64().expect("numeric time");
    (us * 1000.0).round() as u64
}

fn read_trace(path: &Path) -> Summary {
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut lines = file.lines().map(Result::unwrap);
    assert_eq!(lines.next().expect("first line"), "{\"traceEvents\":[");
    let mut s = Summary {
        level: String::new(),
        tasks_in_footer: 0,
        tasks: 0,
        events: 0,
        track_names: HashMap::new(),
        tracks_with_events: Vec::new(),
    };
    let mut last_end: HashMap<(u64, u64), u64> = HashMap::new();
    let mut expect_more = true;
    for line in lines.by_ref() {
        if line == "]," {
            assert!(!expect_more, "separator before the end of the array");
            break;
        }
        assert!(expect_more, "missing `,` before {line}");
        let body = match line.strip_suffix(',') {
            Some(b) => b,
            None => {
                expect_more = false;
                &line
            }
        };
        let e: Value = serde_json::from_str(body).unwrap_or_else(|err| panic!("{err}: {body}"));
        assert!(e.is_object(), "{body}");
        match e["ph"].as_str().unwrap() {
            "M" => {
                if e["name"] == "thread_name" {
                    let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
                    let name = e["args"]["name"].as_str().unwrap().to_string();
                    s.track_names.insert(key, name);
                }
            }
            "X" => {
                let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
                let start = ns(&e["ts"]);
                let end = start + ns(&e["dur"]);
                let prev = last_end.entry(key).or_insert(0);
                assert!(*prev <= start, "overlap or disorder on {key:?}: {body}");
                *prev = end;
                for k in ["stage", "name", "lane", "flops", "bytes"] {
                    assert!(!e["args"][k].is_null(), "missing {k}: {body}");
                }
                s.tasks += e["args"]["tasks"].as_u64().unwrap_or(1);
                s.events += 1;
            }
            other => panic!("unexpected phase {other}"),
        }
    }
    assert!(!expect_more, "the event array is closed by `],`");
    let tail = lines.next().expect("otherData line");
    assert!(lines.next().is_none(), "nothing after the otherData line");
    // `{` + the tail parses exactly when the tail is members closing the object.
    let other: Value =
        serde_json::from_str(&format!("{{{tail}")).expect("otherData closes the file");
    assert_eq!(other["displayTimeUnit"], "ms", "{tail}");
    s.level = other["otherData"]["trace_level"]
        .as_str()
        .unwrap()
        .to_string();
    s.tasks_in_footer = other["otherData"]["tasks"].as_u64().unwrap();
    s.tracks_with_events = last_end.into_keys().collect();
    s
}

#[test]
fn trace_writer_memory_is_bounded_at_two_million_tasks() {
    let dir = std::env::temp_dir().join(format!("eigenflow-trace-mem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Warm-up: first-use allocations of the process (thread-locals, lazies).
    writer_share(10_000, &dir.join("warm.json"));

    let small = 200_000;
    let large = 2_000_000;
    assert!(small <= AUTO_TASK_LIMIT && large > AUTO_TASK_LIMIT);
    let (share_small, t_small, u_small) = writer_share(small, &dir.join("small.json"));
    let (share_large, t_large, u_large) = writer_share(large, &dir.join("large.json"));
    eprintln!(
        "writer share: {share_small} B at {small} tasks (peaks {t_small} / {u_small}), \
         {share_large} B at {large} tasks (peaks {t_large} / {u_large})"
    );
    // The writer holds one buffer per track (2 CPU workers + 1 stream lane) of
    // TRACK_BUFFER bytes plus room for one event, a few small structs, and a
    // pending run per track; allow 64 KiB for that and for scheduling noise
    // between the two runs (ready lists and deques differ slightly).
    let tracks = 3;
    let bound = tracks * (TRACK_BUFFER + 4096) + 64 * 1024;
    assert!(
        share_small <= bound && share_large <= bound,
        "writer share {share_small} B / {share_large} B above {bound} B"
    );
    // Ten times the tasks, not more memory (beyond noise).
    assert!(
        share_large <= share_small + 64 * 1024,
        "writer share grows with tasks: {share_small} B -> {share_large} B"
    );

    // Both files are valid, complete traces. Auto picks task level at 200k and
    // stage level at 2M.
    let s = read_trace(&dir.join("small.json"));
    assert_eq!(s.level, "task");
    assert_eq!(
        (s.tasks_in_footer, s.tasks, s.events),
        (small as u64, small as u64, small as u64)
    );
    let l = read_trace(&dir.join("large.json"));
    assert_eq!(l.level, "stage");
    assert_eq!((l.tasks_in_footer, l.tasks), (large as u64, large as u64));
    assert!(
        l.events > (large / RUN / 2) as u64 && l.events < large as u64 / 4,
        "{} stage events",
        l.events
    );
    for sum in [&s, &l] {
        let names: Vec<_> = [(1, 0), (1, 1), (2, 0)]
            .iter()
            .map(|k| sum.track_names.get(k).map(String::as_str))
            .collect();
        assert_eq!(names, [Some("cpu-0"), Some("cpu-1"), Some("stream-0")]);
        assert!(sum.tracks_with_events.contains(&(2, 0)));
        assert!(sum
            .tracks_with_events
            .iter()
            .all(|k| sum.track_names.contains_key(k)));
    }
    std::fs::remove_dir_all(dir).ok();
}
