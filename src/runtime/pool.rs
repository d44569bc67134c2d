//! Persistent worker crews: the threads a [`super::Runtime`] runs graphs on.
//!
//! A *crew* is one set of threads: CPU workers (each with its own work-stealing
//! deque) and one thread per stream lane. A crew serves one run at a time. The
//! run *opens* a job (a borrowed closure), its threads *enter* it, and the run
//! *closes* it and waits until every thread that entered has left (the drop
//! of the guard [`Open`] that [`Crew::open`] returns); only then may the
//! job's borrows end.
//!
//! Two shapes, fixed per runtime:
//! * **Inline** (no [`super::RuntimeBuilder::stack_size`] set, the default): the
//!   calling thread is CPU worker 0 and the crew holds workers 1.. as *helpers*.
//!   A helper enters when the run has parallel work for it (several ready
//!   tasks: it is poked, see [`Control::poke`]) and leaves as soon as it finds
//!   none, so a run of one chain of tasks never hands work between threads and
//!   never waits for a sleeping thread to wake up.
//! * **Dedicated** (a stack size set): every CPU worker is a crew thread, so
//!   every task body runs on a stack of that size; all of them enter every run
//!   and stay until it ends, and the caller waits.
//!
//! Stream-lane threads enter every run that has a stream task and stay until
//! their lane's list is done or the run stops.
//!
//! Between runs the threads spin for at most [`IDLE_SPIN`] (back-to-back runs
//! need no futex wake-up), then park on a condition variable until the next
//! signal or shutdown.
//!
//! A runtime keeps its idle crews in a [`Pool`]. A run takes an idle crew, or
//! starts a new one when none is idle (the first run, concurrent runs from
//! several threads, a run nested in a task body), and gives it back afterwards:
//! concurrent runs on one runtime proceed side by side, and threads start once
//! per crew, not once per run. The crews end (are joined) when the last clone of
//! the runtime is dropped.

use crate::{Error, Result};
use crossbeam_deque::{Stealer, Worker};
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long an idle crew thread (and a caller waiting for its crew) spins before
/// it parks. Short enough that an idle runtime costs no CPU, long enough to
/// bridge the gap between two back-to-back small runs (building the next graph
/// and its plan takes a few microseconds).
pub(super) const IDLE_SPIN: Duration = Duration::from_micros(50);

/// Idle crews a runtime keeps; one beyond this (left over from a burst of
/// concurrent runs) is shut down when its run ends.
const MAX_IDLE_CREWS: usize = 4;

/// Spins until `ready()` or for about [`IDLE_SPIN`]; whether `ready()` held.
fn spin_until(ready: impl Fn() -> bool) -> bool {
    let t = Instant::now();
    let mut spins = 0u32;
    while !ready() {
        spins += 1;
        if spins.is_multiple_of(64) {
            if t.elapsed() > IDLE_SPIN {
                return false;
            }
            // On an oversubscribed machine the thread we wait for may need
            // this core.
            std::thread::yield_now();
        }
        std::hint::spin_loop();
    }
    true
}

/// What one crew thread does in a job: CPU worker `w` (with its deque) or stream
/// lane `s`.
pub(super) enum Role<'a> {
    /// CPU worker index, its own deque, and whether it is a helper (leaves the
    /// run when it finds no work) rather than a worker that stays to the end.
    Cpu(usize, &'a Worker<u32>, bool),
    /// Stream lane index.
    Stream(usize),
}

/// A job: called once by every thread of the crew with its role.
pub(super) type Job<'a> = dyn Fn(Role<'_>) + Sync + 'a;

/// A job with its lifetime erased, as stored for the crew's threads.
#[derive(Clone, Copy)]
struct JobPtr(*const Job<'static>);

// SAFETY: the pointee is `Sync` and outlives every use (see `Crew::open`).
unsafe impl Send for JobPtr {}

struct Slot {
    /// The open job, if any.
    job: Option<JobPtr>,
    /// Counts the jobs opened, so a thread can tell a new job from one it
    /// already served.
    generation: u64,
    shutdown: bool,
}

/// What a crew's threads and the thread running a graph on it share.
pub(super) struct Control {
    slot: Mutex<Slot>,
    /// Helpers wait here for a signal (a poke wakes only them).
    start: Condvar,
    /// The other crew threads (lanes, dedicated workers) wait here for a job.
    lane_start: Condvar,
    /// Bumped to call threads into the open job (a new job, or more work).
    signal: AtomicU64,
    /// Helpers parked on `start`.
    sleepers: AtomicUsize,
    /// Threads inside the open job.
    busy: AtomicUsize,
    /// The caller waits here for `busy` to reach zero.
    done_lock: Mutex<()>,
    done: Condvar,
    /// Whether CPU workers are helpers (inline shape).
    helpers: bool,
}

/// One set of running threads; joined when dropped.
pub(super) struct Crew {
    control: Arc<Control>,
    handles: Vec<JoinHandle<()>>,
    /// Worker 0's deque in the inline shape (the calling thread's).
    local0: Option<Worker<u32>>,
    /// Stealers of every CPU worker's deque, by worker index.
    pub(super) stealers: Vec<Stealer<u32>>,
}

/// Thread counts and stack sizes of a crew.
#[derive(Clone, Copy, Debug)]
pub(super) struct CrewShape {
    pub threads: usize,
    pub streams: usize,
    pub stack_size: Option<usize>,
    pub stream_stack_size: Option<usize>,
}

impl CrewShape {
    /// The inline shape: the caller is worker 0 (no stack size requested).
    pub fn inline(&self) -> bool {
        self.stack_size.is_none()
    }
}

impl Crew {
    /// Starts the crew's CPU workers (`cpu-k`; from 1 in the inline shape),
    /// then its lane threads (`stream-k`). A thread that cannot start is
    /// [`Error::ThreadSpawn`]; the threads that did start are joined first.
    fn start(shape: CrewShape) -> Result<Crew> {
        let inline = shape.inline();
        let control = Arc::new(Control {
            slot: Mutex::new(Slot {
                job: None,
                generation: 0,
                shutdown: false,
            }),
            start: Condvar::new(),
            lane_start: Condvar::new(),
            signal: AtomicU64::new(0),
            sleepers: AtomicUsize::new(0),
            busy: AtomicUsize::new(0),
            done_lock: Mutex::new(()),
            done: Condvar::new(),
            helpers: inline,
        });
        let mut crew = Crew {
            control,
            handles: Vec::with_capacity(shape.threads + shape.streams),
            local0: None,
            stealers: Vec::with_capacity(shape.threads),
        };
        let builder = |name: String, stack: Option<usize>| {
            let b = std::thread::Builder::new().name(name);
            match stack {
                Some(bytes) => b.stack_size(bytes),
                None => b,
            }
        };
        for w in 0..shape.threads {
            let local = Worker::new_lifo();
            crew.stealers.push(local.stealer());
            if inline && w == 0 {
                crew.local0 = Some(local);
                continue;
            }
            let control = crew.control.clone();
            let spawned = builder(format!("cpu-{w}"), shape.stack_size).spawn(move || {
                control.serve(
                    inline,
                    |job| job(Role::Cpu(w, &local, inline)),
                    || drain(&local),
                )
            });
            match spawned {
                Ok(h) => crew.handles.push(h),
                // `crew` drops here: the started threads are shut down and joined.
                Err(source) => {
                    return Err(Error::ThreadSpawn {
                        what: format!("CPU worker {w}"),
                        source,
                    })
                }
            }
        }
        for s in 0..shape.streams {
            let control = crew.control.clone();
            let spawned = builder(format!("stream-{s}"), shape.stream_stack_size)
                .spawn(move || control.serve(false, |job| job(Role::Stream(s)), || {}));
            match spawned {
                Ok(h) => crew.handles.push(h),
                Err(source) => {
                    return Err(Error::ThreadSpawn {
                        what: format!("stream lane {s}"),
                        source,
                    })
                }
            }
        }
        Ok(crew)
    }

    /// The shared control, for pokes from inside the run (inline shape only).
    pub(super) fn helpers(&self) -> Option<Arc<Control>> {
        self.control.helpers.then(|| self.control.clone())
    }

    /// Worker 0's deque when the caller is worker 0 (inline shape).
    pub(super) fn local0(&self) -> Option<&Worker<u32>> {
        self.local0.as_ref()
    }

    /// Opens `job` for the crew's threads; `call` says whether to call them in
    /// now (the dedicated shape always does). The returned guard closes the job
    /// and waits for every thread that entered it to leave, when dropped (also
    /// on unwinding), which is what makes lending the borrowed job sound.
    /// Contract (crate-internal, `pub(super)`): the guard must be dropped, never
    /// leaked with `mem::forget`; the callers (`executor`, `fork`, `team`) bind it to a local.
    pub(super) fn open<'j>(&'j self, job: &'j Job<'_>, call: bool) -> Open<'j> {
        let c = &*self.control;
        {
            let mut slot = c.slot.lock();
            // SAFETY (lifetime erasure): threads call the job only between
            // entering it (under this lock, while it is open) and decrementing
            // `busy`; `Open::drop` closes it under this lock and then waits for
            // `busy` to reach zero, and the guard borrows `job`.
            let ptr: *const Job<'_> = job;
            slot.job = Some(JobPtr(unsafe {
                std::mem::transmute::<*const Job<'_>, *const Job<'static>>(ptr)
            }));
            slot.generation += 1;
            if call || !c.helpers {
                // Under the lock: a thread about to wait checks the signal
                // under it.
                c.signal.fetch_add(1, Ordering::SeqCst);
                c.start.notify_all();
                c.lane_start.notify_all();
            }
        }
        Open(self)
    }
}

/// An open job; closed (and its threads waited for) on drop.
pub(super) struct Open<'j>(&'j Crew);

impl Drop for Open<'_> {
    fn drop(&mut self) {
        let c = &*self.0.control;
        c.slot.lock().job = None;
        // No thread enters after the close; wait for those inside.
        if !spin_until(|| c.busy.load(Ordering::Acquire) == 0) {
            let mut guard = c.done_lock.lock();
            while c.busy.load(Ordering::Acquire) != 0 {
                c.done.wait(&mut guard);
            }
        }
    }
}

impl Control {
    /// Calls up to `count` parked helpers (and every spinning crew thread) into
    /// the open job: new ready work they may take.
    pub(super) fn poke(&self, count: usize) {
        self.signal.fetch_add(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _slot = self.slot.lock();
            if count == 1 {
                self.start.notify_one();
            } else {
                self.start.notify_all();
            }
        }
    }

    /// A crew thread's life: wait for a signal while a job is open, `call` the
    /// job, `after` it, leave; until shutdown. A thread that may `reenter`
    /// (a helper) serves the same job again when called in again; the others
    /// (a lane runs its list once per run) serve each job at most once.
    fn serve(&self, reenter: bool, call: impl Fn(&Job<'_>), after: impl Fn()) {
        let (mut seen, mut served) = (0u64, 0u64);
        while let Some(job) = self.enter(&mut seen, &mut served, reenter) {
            // SAFETY: the job stays alive until this thread decrements `busy`
            // (see `Crew::open`).
            let job = unsafe { &*job.0 };
            // Task panics are caught per task and runtime panics by the job; this
            // is a last guard so that `busy` always comes down.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| call(job)));
            after();
            if self.busy.fetch_sub(1, Ordering::AcqRel) == 1 {
                // Under the lock: the caller checks `busy` under it before waiting.
                let _guard = self.done_lock.lock();
                self.done.notify_one();
            }
        }
    }

    /// Waits for a signal newer than `seen` (updated) while a job is open (one
    /// newer than `served`, updated, unless `reenter`), and enters that job;
    /// `None` at shutdown.
    fn enter(&self, seen: &mut u64, served: &mut u64, reenter: bool) -> Option<JobPtr> {
        spin_until(|| self.signal.load(Ordering::Acquire) != *seen);
        let mut slot = self.slot.lock();
        loop {
            if slot.shutdown {
                return None;
            }
            let signal = self.signal.load(Ordering::SeqCst);
            if signal != *seen {
                *seen = signal;
                if let Some(job) = slot.job.filter(|_| reenter || slot.generation != *served) {
                    *served = slot.generation;
                    // Under the lock, so a close sees this thread as inside.
                    self.busy.fetch_add(1, Ordering::AcqRel);
                    return Some(job);
                }
                continue;
            }
            if !reenter {
                // Only a new job (signalled under this lock) concerns this thread.
                self.lane_start.wait(&mut slot);
                continue;
            }
            // Announce the sleep, then look once more: a poke either sees this
            // sleeper (and notifies under the lock) or is seen here.
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            if self.signal.load(Ordering::SeqCst) == *seen && !slot.shutdown {
                self.start.wait(&mut slot);
            }
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Empties a CPU worker's deque after a job: a run stopped by a failure or a
/// cancel leaves tasks there that must not reach the next run.
fn drain(local: &Worker<u32>) {
    while local.pop().is_some() {}
}

impl Drop for Crew {
    fn drop(&mut self) {
        let c = &*self.control;
        {
            let mut slot = c.slot.lock();
            slot.shutdown = true;
            c.signal.fetch_add(1, Ordering::SeqCst);
            c.start.notify_all();
            c.lane_start.notify_all();
        }
        for h in self.handles.drain(..) {
            // A crew thread catches every panic of its jobs, so it ends normally.
            let _ = h.join();
        }
    }
}

/// The idle crews of one runtime.
pub(super) struct Pool {
    shape: CrewShape,
    idle: Mutex<Vec<Crew>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("shape", &self.shape)
            .field("idle_crews", &self.idle.lock().len())
            .finish()
    }
}

impl Pool {
    /// A pool with no crew yet (the first run starts one).
    pub fn new(shape: CrewShape) -> Self {
        Pool {
            shape,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Whether the caller of a run is CPU worker 0 ([`CrewShape::inline`]).
    pub fn inline(&self) -> bool {
        self.shape.inline()
    }

    /// An idle crew, or a new one.
    pub fn checkout(&self) -> Result<Crew> {
        let crew = self.idle.lock().pop();
        match crew {
            Some(c) => Ok(c),
            None => Crew::start(self.shape),
        }
    }

    /// Returns a crew after its run (shut down if enough are idle already).
    pub fn give_back(&self, crew: Crew) {
        let mut idle = self.idle.lock();
        if idle.len() < MAX_IDLE_CREWS {
            idle.push(crew);
        } else {
            drop(idle);
            drop(crew);
        }
    }
}
