//! Persistent worker crews: the threads a [`super::Runtime`] runs graphs on.
//!
//! A *crew* is one set of threads (one per CPU worker, one per stream lane), each
//! with its own work-stealing deque when it is a CPU worker. A crew runs one
//! graph at a time: [`Crew::run_job`] hands every thread of the crew the same job
//! (a borrowed closure), wakes them, and returns once every thread has left the
//! job. Between runs the threads spin for at most [`IDLE_SPIN`] (so a program
//! that runs many tiny graphs in a row does not pay a futex wake-up per run),
//! then park on a condition variable until the next job or shutdown.
//!
//! A runtime keeps its idle crews in a [`Pool`]. A run takes an idle crew, or
//! starts a new one when none is idle (the first run, concurrent runs from
//! several threads, and nested runs from inside a task body), and gives it back
//! afterwards, so concurrent runs on one runtime proceed side by side exactly as
//! they did when every run started its own threads, and the threads are started
//! once per crew, not once per run. The crews end (are joined) when the last
//! clone of the runtime is dropped.

use crate::{Error, Result};
use crossbeam_deque::{Stealer, Worker};
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
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

/// What one crew thread does in a job: CPU worker `w` (with its deque) or stream
/// lane `s`.
pub(super) enum Role<'a> {
    /// CPU worker index and its own deque.
    Cpu(usize, &'a Worker<u32>),
    /// Stream lane index.
    Stream(usize),
}

/// A job: called once by every thread of the crew with its role.
pub(super) type Job<'a> = dyn Fn(Role<'_>) + Sync + 'a;

/// A job with its lifetime erased, as stored for the crew's threads.
#[derive(Clone, Copy)]
struct JobPtr(*const Job<'static>);

// SAFETY: the pointee is `Sync` and outlives every use (see `Crew::run_job`).
unsafe impl Send for JobPtr {}

struct Slot {
    job: Option<JobPtr>,
    generation: u64,
    shutdown: bool,
}

/// What a crew's threads and the thread running a graph on it share.
struct Control {
    slot: Mutex<Slot>,
    /// Crew threads wait here for a job.
    start: Condvar,
    /// `slot.generation`, readable without the lock (for the idle spin).
    generation: AtomicU64,
    /// Threads that have not yet left the current job.
    busy: AtomicUsize,
    /// The caller waits here for `busy` to reach zero.
    done_lock: Mutex<()>,
    done: Condvar,
    /// A job itself panicked (a runtime defect; task panics are caught earlier).
    panicked: AtomicBool,
}

/// One set of running threads; joined when dropped.
pub(super) struct Crew {
    control: Arc<Control>,
    handles: Vec<JoinHandle<()>>,
    /// Stealers of the CPU workers' deques, by worker index.
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

impl Crew {
    /// Starts `shape.threads` CPU workers (`cpu-k`), then `shape.streams` lane
    /// threads (`stream-k`). A thread that cannot start is
    /// [`Error::ThreadSpawn`]; the threads that did start are joined first.
    fn start(shape: CrewShape) -> Result<Crew> {
        let control = Arc::new(Control {
            slot: Mutex::new(Slot {
                job: None,
                generation: 0,
                shutdown: false,
            }),
            start: Condvar::new(),
            generation: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
            done_lock: Mutex::new(()),
            done: Condvar::new(),
            panicked: AtomicBool::new(false),
        });
        let mut crew = Crew {
            control,
            handles: Vec::with_capacity(shape.threads + shape.streams),
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
            let control = crew.control.clone();
            let spawned = builder(format!("cpu-{w}"), shape.stack_size)
                .spawn(move || control.serve(|job| job(Role::Cpu(w, &local)), || drain(&local)));
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
                .spawn(move || control.serve(|job| job(Role::Stream(s)), || {}));
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

    /// Runs `job` on every thread of the crew and returns once all of them have
    /// left it. `Err(())` if the job itself panicked on some thread (the crew
    /// stays usable: the panic was caught there).
    pub(super) fn run_job(&self, job: &Job<'_>) -> std::result::Result<(), ()> {
        let c = &*self.control;
        c.busy.store(self.handles.len(), Ordering::Release);
        {
            let mut slot = c.slot.lock();
            // SAFETY (lifetime erasure): the threads call the job only between
            // this store and their decrement of `busy`, and this function does
            // not return before `busy` is zero (nothing between here and the
            // wait below can unwind), so the borrow outlives every call.
            let ptr: *const Job<'_> = job;
            slot.job = Some(JobPtr(unsafe {
                std::mem::transmute::<*const Job<'_>, *const Job<'static>>(ptr)
            }));
            slot.generation += 1;
            c.generation.store(slot.generation, Ordering::Release);
        }
        c.start.notify_all();
        // Short spin first: a tiny graph ends within microseconds.
        let t = Instant::now();
        let mut spins = 0u32;
        while c.busy.load(Ordering::Acquire) != 0 {
            spins += 1;
            if spins % 64 == 0 && t.elapsed() > IDLE_SPIN {
                let mut guard = c.done_lock.lock();
                while c.busy.load(Ordering::Acquire) != 0 {
                    c.done.wait(&mut guard);
                }
                break;
            }
            std::hint::spin_loop();
        }
        c.slot.lock().job = None;
        if c.panicked.swap(false, Ordering::AcqRel) {
            Err(())
        } else {
            Ok(())
        }
    }
}

impl Control {
    /// A crew thread's life: wait for a job, `call` it, `after` it, report done;
    /// until shutdown.
    fn serve(&self, call: impl Fn(&Job<'_>), after: impl Fn()) {
        let mut seen = 0u64;
        while let Some(job) = self.next_job(&mut seen) {
            // SAFETY: the job stays alive until this thread decrements `busy`
            // (see `Crew::run_job`).
            let job = unsafe { &*job.0 };
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| call(job))).is_err() {
                self.panicked.store(true, Ordering::Release);
            }
            after();
            if self.busy.fetch_sub(1, Ordering::AcqRel) == 1 {
                // Under the lock: the caller checks `busy` under it before waiting.
                let _guard = self.done_lock.lock();
                self.done.notify_one();
            }
        }
    }

    /// The next job after generation `seen` (updated), or `None` at shutdown.
    fn next_job(&self, seen: &mut u64) -> Option<JobPtr> {
        let t = Instant::now();
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == *seen {
            spins += 1;
            if spins % 64 == 0 && t.elapsed() > IDLE_SPIN {
                break;
            }
            std::hint::spin_loop();
        }
        let mut slot = self.slot.lock();
        loop {
            if slot.shutdown {
                return None;
            }
            if slot.generation != *seen {
                *seen = slot.generation;
                return slot.job;
            }
            self.start.wait(&mut slot);
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
        self.control.slot.lock().shutdown = true;
        self.control.start.notify_all();
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
