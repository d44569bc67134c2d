//! Chrome traces (open in Perfetto, `ui.perfetto.dev`, or `chrome://tracing`).
//!
//! * CPU workers: every task is a `tracing` span (fields stage, name, lane, flops,
//!   bytes) on a named thread (`cpu-0`, ...); `tracing-chrome` writes them, one
//!   track per worker (process 1, "cpu workers").
//! * Stream lanes: `tracing-chrome` cannot choose a track or a timestamp, so each
//!   lane's tasks are written as our own complete (`X`) events, process 2
//!   ("streams"), thread id = stream index, with `M` metadata naming them.
//!
//! Events on one track never overlap: a worker or lane runs one task at a time.
//! [`TraceLevel::Stage`] bounds the volume for huge graphs: one event per run of
//! consecutive same-stage tasks on each track instead of one per task.

use crate::runtime::RunReport;
use crate::{Error, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Instant;
use tracing::span::{Attributes, Id};
use tracing::Subscriber;
use tracing_chrome::{ChromeLayerBuilder, EventOrSpan, FlushGuard};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// How much a trace records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TraceLevel {
    /// One event per task (default).
    #[default]
    Task,
    /// One event per run of consecutive tasks of the same stage on a track.
    Stage,
}

impl std::str::FromStr for TraceLevel {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "task" => Ok(TraceLevel::Task),
            "stage" => Ok(TraceLevel::Stage),
            _ => Err(Error::InvalidArgument(format!(
                "trace level `{s}`: expected `task` or `stage`"
            ))),
        }
    }
}

/// The task name, stored in the span so the Chrome event is titled by it.
struct TaskLabel(String);

/// Copies each task span's `name` field into the span's extensions.
struct LabelLayer;

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for LabelLayer {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        struct Visit(Option<String>);
        impl tracing::field::Visit for Visit {
            fn record_debug(&mut self, field: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                if field.name() == "name" {
                    self.0 = Some(format!("{v:?}"));
                }
            }
        }
        let mut visit = Visit(None);
        attrs.record(&mut visit);
        if let (Some(label), Some(span)) = (visit.0, ctx.span(id)) {
            span.extensions_mut().insert(TaskLabel(label));
        }
    }
}

/// Makes `tracing` compute callsite interest from every live dispatcher.
///
/// With a single registered dispatcher, tracing-core evaluates a callsite's
/// interest against the *calling thread's* default dispatcher. Our subscriber is
/// only the default on CPU worker threads, so a first hit from a stream-lane or
/// user thread would cache "never" and silently empty the trace. One extra,
/// permanently alive (no-op) dispatcher switches tracing-core to evaluating
/// against all registered dispatchers.
fn keep_interest_global() {
    static EXTRA: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();
    EXTRA.get_or_init(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));
}

/// A trace being recorded for one run.
pub(crate) struct TraceSession {
    path: PathBuf,
    level: TraceLevel,
    chrome: Option<(tracing::Dispatch, parking_lot::Mutex<FlushGuard>, Instant)>,
}

impl TraceSession {
    pub fn start(path: &Path, level: TraceLevel) -> Result<Self> {
        let io = |source| Error::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let file = std::fs::File::create(path).map_err(io)?;
        let chrome = match level {
            TraceLevel::Stage => None,
            TraceLevel::Task => {
                keep_interest_global();
                let (layer, guard) = ChromeLayerBuilder::new()
                    .writer(file)
                    .include_args(true)
                    .name_fn(Box::new(|e| match e {
                        EventOrSpan::Span(s) => s
                            .extensions()
                            .get::<TaskLabel>()
                            .map_or_else(|| s.name().to_string(), |l| l.0.clone()),
                        EventOrSpan::Event(ev) => ev.metadata().name().to_string(),
                    }))
                    .build();
                let t0 = Instant::now();
                let subscriber = tracing_subscriber::registry().with(LabelLayer).with(layer);
                Some((
                    tracing::Dispatch::new(subscriber),
                    parking_lot::Mutex::new(guard),
                    t0,
                ))
            }
        };
        Ok(TraceSession {
            path: path.to_path_buf(),
            level,
            chrome,
        })
    }

    /// Installs the trace's subscriber on the calling CPU worker thread.
    pub fn enter_worker(&self) -> Option<tracing::dispatcher::DefaultGuard> {
        self.chrome
            .as_ref()
            .map(|(d, _, _)| tracing::dispatcher::set_default(d))
    }

    /// The run failed: close the file as it is.
    pub fn abandon(self) {}

    /// Flushes the CPU tracks and merges in the stream tracks (and, at stage
    /// level, everything) from the report. `t0` is the run's time origin.
    pub fn finish(self, report: &RunReport, t0: Instant) -> Result<()> {
        let io = |source| Error::Io {
            path: self.path.clone(),
            source,
        };
        // Microseconds to add to a report time to land on the Chrome file's clock.
        let (mut events, shift) = match self.chrome {
            Some((dispatch, guard, chrome_t0)) => {
                drop(dispatch);
                drop(guard); // joins tracing-chrome's writer thread
                let text = std::fs::read_to_string(&self.path).map_err(io)?;
                let events: Vec<Value> = serde_json::from_str(&text).map_err(|e| Error::Io {
                    path: self.path.clone(),
                    source: std::io::Error::other(e),
                })?;
                let shift = if t0 >= chrome_t0 {
                    (t0 - chrome_t0).as_secs_f64() * 1e6
                } else {
                    -((chrome_t0 - t0).as_secs_f64() * 1e6)
                };
                (events, shift)
            }
            None => (Vec::new(), 0.0),
        };
        events.push(
            json!({"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "cpu workers"}}),
        );
        if report.streams > 0 {
            events.push(json!({"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "streams (host)"}}));
            for s in 0..report.streams {
                events.push(json!({"ph": "M", "pid": 2, "tid": s, "name": "thread_name", "args": {"name": format!("stream-{s}")}}));
            }
        }
        if self.level == TraceLevel::Stage {
            for w in 0..report.threads {
                events.push(json!({"ph": "M", "pid": 1, "tid": w, "name": "thread_name", "args": {"name": format!("cpu-{w}")}}));
            }
        }
        events.extend(track_events(report, self.level, shift));
        let text = serde_json::to_string(&events).expect("JSON of plain values");
        std::fs::write(&self.path, text).map_err(io)
    }
}

/// Our own `X` events: stream lanes always, CPU workers at stage level.
fn track_events(report: &RunReport, level: TraceLevel, shift: f64) -> Vec<Value> {
    use crate::graph::Lane;
    let us = |d: std::time::Duration| d.as_secs_f64() * 1e6 + shift;
    let mut per_track: std::collections::BTreeMap<(u32, usize), Vec<usize>> = Default::default();
    for (i, t) in report.tasks.iter().enumerate() {
        let pid = match t.lane {
            Lane::Cpu if level == TraceLevel::Task => continue,
            Lane::Cpu => 1,
            Lane::Stream(_) => 2,
        };
        per_track.entry((pid, t.worker)).or_default().push(i);
    }
    let mut out = Vec::new();
    for ((pid, tid), mut tasks) in per_track {
        tasks.sort_by_key(|&i| report.tasks[i].start);
        let mut k = 0;
        while k < tasks.len() {
            let first = &report.tasks[tasks[k]];
            // At stage level, merge the run of same-stage tasks starting here.
            let mut last = k;
            if level == TraceLevel::Stage {
                while last + 1 < tasks.len() && report.tasks[tasks[last + 1]].stage == first.stage {
                    last += 1;
                }
            }
            let end = report.tasks[tasks[last]].end;
            let name = if last > k {
                format!("{} x{}", first.stage, last - k + 1)
            } else {
                first.name.to_string()
            };
            let flops: f64 = tasks[k..=last]
                .iter()
                .map(|&i| report.tasks[i].cost.flops)
                .sum();
            let bytes: f64 = tasks[k..=last]
                .iter()
                .map(|&i| report.tasks[i].cost.bytes)
                .sum();
            out.push(json!({
                "ph": "X", "pid": pid, "tid": tid, "name": name, "cat": first.stage.as_ref(),
                "ts": us(first.start), "dur": (end.saturating_sub(first.start)).as_secs_f64() * 1e6,
                "args": {"stage": first.stage.as_ref(), "name": name, "lane": first.lane.to_string(),
                         "flops": flops, "bytes": bytes}
            }));
            k = last + 1;
        }
    }
    out
}
