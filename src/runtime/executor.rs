//! The scheduler proper: flat counters, CPU workers with work-stealing deques,
//! stream-lane threads (of a persistent crew, see `super::pool`), parking,
//! failure handling.

use super::pool::{Crew, Pool, Role};
use super::report::{RunReport, TaskRecord};
use super::wake::{self, Cancel, Wake};
use super::{RuntimeBuilder, MAX_STREAMS, MAX_THREADS};
use crate::error::short_name;
use crate::graph::plan::Plan;
use crate::graph::{Cost, DeviceSink, Footprint, Lane, TaskContext, TaskFn, TaskGraph, TaskId};
use crate::trace::{TraceLevel, TraceSession};
use crate::{Error, Result};
use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use parking_lot::Mutex;
use std::borrow::Cow;
use std::cell::UnsafeCell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Per-task data the workers read while running.
struct Meta {
    name: Cow<'static, str>,
    stage: Cow<'static, str>,
    lane: Lane,
    cost: Cost,
    footprint: Option<std::sync::Arc<Footprint>>,
}

/// Written once, by the one thread that runs the task (the one that took its
/// in-degree to zero), read after every crew thread has left the run.
struct Slot<'g> {
    body: UnsafeCell<Option<TaskFn<'g>>>,
    stamp: UnsafeCell<(u64, u64, u32)>,
}

struct Shared<'g> {
    plan: Plan,
    pending: Vec<AtomicU32>,
    slots: Vec<Slot<'g>>,
    meta: Vec<Meta>,
    injector: Injector<u32>,
    stealers: Vec<Stealer<u32>>,
    finished: AtomicUsize,
    error: Mutex<Option<Error>>,
    wake: Arc<Wake>,
    /// The graph's tag, for the task ids handed to bodies.
    graph: u64,
    running: Option<Mutex<Vec<u32>>>,
    progress: Option<&'g super::Progress>,
    trace: Option<TraceSession>,
    t0: Instant,
}

// SAFETY: the `UnsafeCell`s in `Slot` are touched by exactly one thread per task
// (the one whose decrement made the task ready) and read after every crew thread
// has left the run (`Crew::run_job` returns only then, with acquire ordering).
unsafe impl Sync for Shared<'_> {}

/// Runs `graph`, writing its trace to `trace` if given (the run's own path or
/// the runtime's default, chosen by the caller); `cancel`, if given, can stop
/// it from another thread. The graph's outcomes settle with the result once
/// every task body (and every reference to a result it held) is dropped.
pub(super) fn run<'g>(
    cfg: &'g RuntimeBuilder,
    pool: &Pool,
    mut graph: TaskGraph<'g>,
    trace: Option<&(PathBuf, TraceLevel)>,
    cancel: Option<&Cancel>,
) -> Result<RunReport> {
    let outcomes = graph.take_outcomes();
    let result = run_tasks(cfg, pool, graph, trace, cancel);
    let state = crate::graph::state_of(&result);
    for o in outcomes {
        o.settle(state);
    }
    result
}

/// [`run`] without the outcomes: the graph is consumed (and its bodies
/// dropped) before this returns.
fn run_tasks<'g>(
    cfg: &'g RuntimeBuilder,
    pool: &Pool,
    graph: TaskGraph<'g>,
    trace: Option<&(PathBuf, TraceLevel)>,
    cancel: Option<&Cancel>,
) -> Result<RunReport> {
    let t0 = Instant::now();
    check_counts(cfg)?;
    let plan = Plan::build(&graph, cfg.streams)?;
    let n = plan.len();
    let tasks = unpack(graph);
    if let Some(p) = &cfg.progress {
        let work: f64 = tasks.0.iter().map(|m| m.cost.seconds()).sum();
        p.start(n, (work * 1e9) as u64);
    }
    // The crew's threads run the graph; an empty graph needs none (so it does not
    // start them either).
    let crew = if n > 0 { Some(pool.checkout()?) } else { None };
    let shared = Shared::new(cfg, plan, tasks, crew.as_ref(), trace, t0)?;
    shared.push_roots();
    let _attached = cancel.map(|c| c.attach(&shared.wake));
    if let Some(crew) = &crew {
        shared.work(crew, cfg.shuffle_seed);
    }
    if let Some(crew) = crew {
        pool.give_back(crew);
    }
    let wall = t0.elapsed();
    shared.report(cfg, wall)
}

/// Refuses worker and lane counts beyond the runtime's limits, before anything
/// is allocated or spawned (the stream count is also checked by the plan, for
/// `TaskGraph::validate`).
fn check_counts(cfg: &RuntimeBuilder) -> Result<()> {
    if cfg.threads > MAX_THREADS || cfg.streams > MAX_STREAMS {
        return Err(Error::InvalidArgument(format!(
            "{} CPU worker(s) and {} stream lane(s) requested; the runtime supports at most \
             {MAX_THREADS} workers and {MAX_STREAMS} stream lanes",
            cfg.threads, cfg.streams
        )));
    }
    Ok(())
}

/// The graph's tasks as the workers hold them: what they read ([`Meta`]), the
/// bodies and stamps each is written by one thread ([`Slot`]), and the
/// graph's tag.
fn unpack(mut graph: TaskGraph<'_>) -> (Vec<Meta>, Vec<Slot<'_>>, u64) {
    let tag = graph.tag();
    let (nodes, _) = std::mem::take(&mut graph.g).into_nodes_edges();
    let mut meta = Vec::with_capacity(nodes.len());
    let mut slots = Vec::with_capacity(nodes.len());
    for node in nodes {
        let t = node.weight;
        meta.push(Meta {
            name: t.name,
            stage: t.stage,
            lane: t.lane,
            cost: t.cost,
            footprint: t.footprint,
        });
        slots.push(Slot {
            body: UnsafeCell::new(t.body),
            stamp: UnsafeCell::new((0, 0, 0)),
        });
    }
    (meta, slots, tag)
}

impl<'g> Shared<'g> {
    /// The state of one run of `plan`'s tasks on `crew` (none for an empty
    /// graph, which starts stopped), with its trace opened if asked for.
    fn new(
        cfg: &'g RuntimeBuilder,
        plan: Plan,
        (meta, slots, tag): (Vec<Meta>, Vec<Slot<'g>>, u64),
        crew: Option<&Crew>,
        trace: Option<&(PathBuf, TraceLevel)>,
        t0: Instant,
    ) -> Result<Self> {
        let n = plan.len();
        Ok(Shared {
            pending: plan.indeg.iter().map(|&d| AtomicU32::new(d)).collect(),
            stealers: crew.map_or_else(Vec::new, |c| c.stealers.clone()),
            plan,
            slots,
            meta,
            injector: Injector::new(),
            finished: AtomicUsize::new(0),
            error: Mutex::new(None),
            wake: Arc::new(Wake::new(
                cfg.streams,
                n == 0,
                crew.and_then(|c| c.helpers()),
            )),
            graph: tag,
            running: cfg.check_footprints.then(|| Mutex::new(Vec::new())),
            progress: cfg.progress.as_deref(),
            trace: match trace {
                Some((path, level)) => Some(TraceSession::start(
                    path,
                    *level,
                    (n, cfg.threads, cfg.streams),
                    t0,
                )?),
                None => None,
            },
            t0,
        })
    }

    /// Pushes the CPU roots to the injector, most urgent first.
    fn push_roots(&self) {
        let mut roots: Vec<u32> = (0..self.plan.len() as u32)
            .filter(|&v| {
                self.plan.indeg[v as usize] == 0 && self.meta[v as usize].lane == Lane::Cpu
            })
            .collect();
        roots.sort_by(|&a, &b| self.by_priority(a, b));
        for r in roots {
            self.injector.push(r);
        }
    }

    /// Runs the tasks on `crew` until the run stops: the calling thread works
    /// as CPU worker 0 (inline shape) or waits for the end.
    fn work(&self, crew: &Crew, seed: Option<u64>) {
        let job = move |role: Role<'_>| {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match role {
                Role::Cpu(w, local, helper) => self.cpu_worker(w, local, seed, helper),
                Role::Stream(s) => self.stream_lane(s),
            }));
            if outcome.is_err() {
                // A defect of the runtime itself (task panics are caught per task).
                self.fail(Error::TaskPanicked {
                    task: "(runtime)".into(),
                    message: "a runtime thread panicked outside any task".into(),
                });
            }
        };
        // Call the crew's threads in at once only for parallel work: several
        // ready tasks, or stream tasks (whose lanes must run them). Otherwise
        // the caller starts alone and calls helpers in when tasks are pushed.
        let parallel = self.injector.len() > 1 || self.plan.streams.iter().any(|l| !l.is_empty());
        let open = crew.open(&job, parallel);
        match crew.local0() {
            Some(local) => job(Role::Cpu(0, local, false)),
            None => self.wake.wait_stopped(),
        }
        drop(open);
    }

    /// The run's result once every thread has left it: its first error (or
    /// [`Error::Cancelled`]), else the report of every task, after the trace
    /// is closed.
    fn report(self, cfg: &RuntimeBuilder, wall: Duration) -> Result<RunReport> {
        let n = self.plan.len();
        // A run that stopped without an error before every task finished was cancelled.
        let unfinished = self.finished.load(Ordering::Acquire) < n;
        let error = self.error.lock().take();
        if let Some(e) = error.or(unfinished.then_some(Error::Cancelled)) {
            if let Some(s) = self.trace {
                s.abandon();
            }
            return Err(e);
        }
        debug_assert_eq!(self.finished.load(Ordering::Relaxed), n);
        // Close the trace before the report is built: the writer's buffers are gone
        // before the report's memory is allocated.
        if let Some(s) = self.trace {
            s.finish()?;
        }
        let tasks: Vec<TaskRecord> = self
            .meta
            .into_iter()
            .zip(self.slots)
            .map(|(m, slot)| {
                let (start, end, worker) = slot.stamp.into_inner();
                TaskRecord {
                    name: m.name,
                    stage: m.stage,
                    lane: m.lane,
                    worker: worker as usize,
                    start: Duration::from_nanos(start),
                    end: Duration::from_nanos(end),
                    cost: m.cost,
                }
            })
            .collect();
        Ok(RunReport {
            tasks,
            wall,
            threads: cfg.threads,
            streams: cfg.streams,
        })
    }
}

/// A small xorshift generator for the shuffled-schedule test mode.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, k: usize) -> usize {
        (self.next() % k as u64) as usize
    }
}

impl<'g> Shared<'g> {
    fn by_priority(&self, a: u32, b: u32) -> std::cmp::Ordering {
        let p = &self.plan.priority;
        p[b as usize].total_cmp(&p[a as usize]).then(a.cmp(&b))
    }

    fn done(&self) -> bool {
        self.wake.stopped()
    }

    /// CPU worker `w`'s loop. A `helper` leaves as soon as it finds no task (it
    /// is called in again when tasks are pushed); the others stay to the end.
    fn cpu_worker(&self, w: usize, local: &Worker<u32>, shuffle: Option<u64>, helper: bool) {
        let _current = wake::enter(&self.wake);
        let mut rng =
            shuffle.map(|s| Rng(s.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (w as u64 + 1) | 1));
        let mut next: Option<u32> = None;
        let mut ready = Vec::new();
        while !self.done() {
            // Random mode: sometimes leave the local work and steal instead.
            let detour = rng
                .as_mut()
                .map(|r| (r.below(4) == 0, r.below(self.stealers.len())));
            let task = match detour {
                Some((true, victim)) => {
                    if let Some(t) = next.take() {
                        local.push(t);
                    }
                    self.steal(w, victim).or_else(|| local.pop())
                }
                _ => next
                    .take()
                    .or_else(|| local.pop())
                    .or_else(|| self.steal(w, w)),
            };
            let Some(t) = task else {
                if helper {
                    break;
                }
                self.park();
                continue;
            };
            ready.clear();
            self.execute(t, Lane::Cpu, w, &mut ready);
            if ready.is_empty() {
                continue;
            }
            match rng.as_mut() {
                None => ready.sort_by(|&a, &b| self.by_priority(a, b)),
                Some(r) => {
                    for i in (1..ready.len()).rev() {
                        ready.swap(i, r.below(i + 1));
                    }
                }
            }
            next = Some(ready[0]);
            // LIFO deque: push the least urgent first so the most urgent pops next.
            for &t in ready[1..].iter().rev() {
                local.push(t);
            }
            if ready.len() > 1 {
                self.wake_workers(ready.len() - 1);
            }
        }
        // A stopped run may leave tasks here; they must not reach the next run
        // (the deques belong to the crew, which outlives the run).
        while local.pop().is_some() {}
    }

    fn steal(&self, me: usize, first: usize) -> Option<u32> {
        loop {
            let mut retry = false;
            match self.injector.steal() {
                Steal::Success(t) => return Some(t),
                Steal::Retry => retry = true,
                Steal::Empty => {}
            }
            let k = self.stealers.len();
            for i in 0..k {
                let victim = (first + i) % k;
                if victim == me {
                    continue;
                }
                match self.stealers[victim].steal() {
                    Steal::Success(t) => return Some(t),
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
        }
    }

    fn park(&self) {
        self.wake
            .park(|| !self.injector.is_empty() || self.stealers.iter().any(|s| !s.is_empty()));
    }

    fn wake_workers(&self, count: usize) {
        self.wake.wake_workers(count);
    }

    fn halt(&self) {
        self.wake.halt();
    }

    fn fail(&self, e: Error) {
        self.error.lock().get_or_insert(e);
        self.halt();
    }

    fn stream_lane(&self, s: usize) {
        let _current = wake::enter(&self.wake);
        let mut ready = Vec::new();
        for &t in &self.plan.streams[s] {
            self.wake
                .lane_wait(s, || self.pending[t as usize].load(Ordering::Acquire) == 0);
            if self.done() {
                return;
            }
            ready.clear();
            self.execute(t, Lane::Stream(s), s, &mut ready);
            for &r in &ready {
                self.injector.push(r);
            }
            if !ready.is_empty() {
                self.wake_workers(ready.len());
            }
        }
    }

    /// Runs task `t` and releases its successors: ready CPU tasks are appended to
    /// `ready`, ready stream tasks wake their lane.
    fn execute(&self, t: u32, lane: Lane, worker: usize, ready: &mut Vec<u32>) {
        // The last check before a task starts: after a failure or a cancel, a task
        // that was already handed out is dropped here instead of started.
        if self.done() {
            return;
        }
        let v = t as usize;
        let meta = &self.meta[v];
        if let Some(running) = &self.running {
            if let Err(e) = self.enter_live(running, t) {
                self.fail(e);
                return;
            }
        }
        // SAFETY: this thread made the task ready (or it was a root handed out once),
        // so no other thread touches its slot.
        let body = unsafe { (*self.slots[v].body.get()).take() };
        let ctx = TaskContext {
            task: TaskId::new(self.graph, t),
            lane,
            worker,
            footprint: meta.footprint.clone(),
            stop: &wake::CurrentRun,
            device: self
                .trace
                .as_ref()
                .map(|t| Arc::clone(t.device()) as Arc<dyn DeviceSink>),
        };
        let start = self.t0.elapsed().as_nanos() as u64;
        let outcome = {
            let span = tracing::info_span!(
                "task",
                name = %meta.name,
                stage = %meta.stage,
                lane = %meta.lane,
                flops = meta.cost.flops,
                bytes = meta.cost.bytes
            );
            let _enter = span.enter();
            match body {
                Some(body) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&ctx))),
                None => Ok(Ok(())),
            }
        };
        let end = self.t0.elapsed().as_nanos() as u64;
        // SAFETY: as above.
        unsafe { *self.slots[v].stamp.get() = (start, end, worker as u32) };
        if let Some(trace) = &self.trace {
            trace.record(lane, worker, &meta.name, &meta.stage, meta.cost, start, end);
        }
        if let Some(running) = &self.running {
            running.lock().retain(|&r| r != t);
        }
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return self.fail(surface(&meta.name, e)),
            Err(payload) => {
                return self.fail(Error::TaskPanicked {
                    task: short_name(&meta.name),
                    message: crate::error::panic_message(payload.as_ref()),
                });
            }
        }
        for &s in self.plan.successors(v) {
            if self.pending[s as usize].fetch_sub(1, Ordering::AcqRel) == 1 {
                match self.meta[s as usize].lane {
                    Lane::Cpu => ready.push(s),
                    Lane::Stream(i) => self.wake.wake_lane(i),
                }
            }
        }
        if let Some(p) = self.progress {
            p.task_done((meta.cost.seconds() * 1e9) as u64);
        }
        if self.finished.fetch_add(1, Ordering::AcqRel) + 1 == self.pending.len() {
            self.halt();
        }
    }

    fn enter_live(&self, running: &Mutex<Vec<u32>>, t: u32) -> Result<()> {
        let mut running = running.lock();
        if let Some(fp) = &self.meta[t as usize].footprint {
            for &r in running.iter() {
                if let Some(other) = &self.meta[r as usize].footprint {
                    if let Some(region) = fp.conflict(other) {
                        return Err(Error::LiveOverlap {
                            first: short_name(&self.meta[r as usize].name),
                            second: short_name(&self.meta[t as usize].name),
                            region: region.to_string(),
                        });
                    }
                }
            }
        }
        running.push(t);
        Ok(())
    }
}

/// What the caller sees when task `task`'s body returned `e` (the rule documented
/// on [`super::Runtime::run`]): an error that describes the computation or its data
/// already says what went wrong and is passed on as itself; anything else (graph
/// and runtime errors from a nested run, say) is wrapped in [`Error::TaskFailed`]
/// naming the task.
fn surface(task: &str, e: Error) -> Error {
    match e {
        Error::NoConvergence { .. }
        | Error::NonFinite { .. }
        | Error::Shape(_)
        | Error::OutOfMemory { .. }
        | Error::Npy { .. }
        | Error::Io { .. }
        | Error::InvalidArgument(_)
        | Error::NoGpu { .. } => e,
        e => Error::TaskFailed {
            task: short_name(task),
            source: Box::new(e),
        },
    }
}
