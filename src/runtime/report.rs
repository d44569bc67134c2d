//! What a run returns: per-task timings and per-stage summaries.

use crate::graph::{Cost, Lane};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// When and where one task ran.
#[derive(Clone, Debug)]
pub struct TaskRecord {
    /// Task name.
    pub name: Cow<'static, str>,
    /// Stage.
    pub stage: Cow<'static, str>,
    /// Lane class.
    pub lane: Lane,
    /// CPU worker index, or stream index for stream lanes.
    pub worker: usize,
    /// Start, from the start of the run.
    pub start: Duration,
    /// End, from the start of the run.
    pub end: Duration,
    /// The task's cost hint.
    pub cost: Cost,
}

/// The result of a successful run.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// One record per task, indexed by `TaskId::index()`.
    pub tasks: Vec<TaskRecord>,
    /// Wall time of the run (validation included).
    pub wall: Duration,
    /// CPU worker threads used.
    pub threads: usize,
    /// Stream lanes used.
    pub streams: usize,
}

/// Time and throughput of one stage.
#[derive(Clone, Debug, PartialEq)]
pub struct StageSummary {
    /// Stage name.
    pub stage: String,
    /// Number of tasks.
    pub tasks: usize,
    /// From the first task's start to the last task's end.
    pub span: Duration,
    /// Sum of task durations (over all workers).
    pub busy: Duration,
    /// Share of the run's total busy time.
    pub share: f64,
    /// Total flops of the stage's cost hints.
    pub flops: f64,
    /// Total bytes of the stage's cost hints (for a stage of reads and
    /// writes, the bytes moved).
    pub bytes: f64,
}

impl StageSummary {
    /// Flops per second over the stage's span, in GFLOP/s.
    pub fn gflops(&self) -> f64 {
        let s = self.span.as_secs_f64();
        if s > 0.0 {
            self.flops / s / 1e9
        } else {
            0.0
        }
    }

    /// Bytes per busy second, in GB/s: the rate of a stage that only moves
    /// data (the reads and writes of an out-of-core run).
    pub fn gbytes_per_s(&self) -> f64 {
        let s = self.busy.as_secs_f64();
        if s > 0.0 {
            self.bytes / s / 1e9
        } else {
            0.0
        }
    }
}

impl RunReport {
    /// Per-stage summary, ordered by first start.
    pub fn stage_summary(&self) -> Vec<StageSummary> {
        let mut acc: BTreeMap<&str, (usize, Duration, Duration, Duration, f64, f64)> =
            BTreeMap::new();
        for t in &self.tasks {
            let e = acc.entry(&t.stage).or_insert((
                0,
                Duration::MAX,
                Duration::ZERO,
                Duration::ZERO,
                0.0,
                0.0,
            ));
            e.0 += 1;
            e.1 = e.1.min(t.start);
            e.2 = e.2.max(t.end);
            e.3 += t.end.saturating_sub(t.start);
            e.4 += t.cost.flops;
            e.5 += t.cost.bytes;
        }
        let total: f64 = acc.values().map(|e| e.3.as_secs_f64()).sum();
        let mut out: Vec<StageSummary> = acc
            .into_iter()
            .map(
                |(stage, (tasks, first, last, busy, flops, bytes))| StageSummary {
                    stage: stage.to_string(),
                    tasks,
                    span: last.saturating_sub(first),
                    busy,
                    share: if total > 0.0 {
                        busy.as_secs_f64() / total
                    } else {
                        0.0
                    },
                    flops,
                    bytes,
                },
            )
            .collect();
        let first = |s: &StageSummary| {
            self.tasks
                .iter()
                .filter(|t| t.stage == s.stage)
                .map(|t| t.start)
                .min()
        };
        out.sort_by_key(|s| first(s));
        out
    }

    /// Span of one stage (zero if it has no task).
    pub fn stage_span(&self, stage: &str) -> Duration {
        self.span_of(&[stage])
    }

    /// From the first start to the last end of the tasks of any of `stages`
    /// (stages may overlap in time, so this is not the sum of their spans).
    pub fn span_of(&self, stages: &[&str]) -> Duration {
        let mut first = Duration::MAX;
        let mut last = Duration::ZERO;
        for t in self
            .tasks
            .iter()
            .filter(|t| stages.contains(&t.stage.as_ref()))
        {
            first = first.min(t.start);
            last = last.max(t.end);
        }
        last.saturating_sub(first)
    }
}

impl fmt::Display for RunReport {
    /// The per-stage table printed after a traced run: the rate column is
    /// GFLOP/s over the span for a computing stage, GB/s over the busy time
    /// for a stage that only moves data (flops 0, bytes > 0: the reads and
    /// writes of an out-of-core run).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<16} {:>8} {:>11} {:>11} {:>7} {:>9}",
            "stage", "tasks", "span (s)", "busy (s)", "share", "GFLOP/s"
        )?;
        for s in self.stage_summary() {
            let rate = if s.flops == 0.0 && s.bytes > 0.0 {
                format!("{:.2} GB/s", s.gbytes_per_s())
            } else {
                format!("{:>9.2}", s.gflops())
            };
            writeln!(
                f,
                "{:<16} {:>8} {:>11.4} {:>11.4} {:>6.1}% {rate}",
                s.stage,
                s.tasks,
                s.span.as_secs_f64(),
                s.busy.as_secs_f64(),
                100.0 * s.share,
            )?;
        }
        write!(
            f,
            "total wall {:.4} s on {} thread(s), {} stream(s)",
            self.wall.as_secs_f64(),
            self.threads,
            self.streams
        )
    }
}
