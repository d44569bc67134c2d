//! Stopping and waking the runtime's threads: from inside a run (completion,
//! failure, a thread that could not start) and from outside it (a cancel through
//! [`super::RunHandle`]).

use super::pool::Control;
use crate::graph::StopFlag;
use parking_lot::{Condvar, Mutex};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// The stop flag of one run and the places its threads wait. Shared by `Arc` so a
/// cancel request from another thread can reach a run that lives on a stack.
pub(super) struct Wake {
    stop: AtomicBool,
    /// Idle CPU workers park here. `epoch` changes on every push so a worker that
    /// looked for work and found none can tell, under the lock, whether it missed one.
    lock: Mutex<()>,
    cv: Condvar,
    sleepers: AtomicUsize,
    epoch: AtomicU64,
    /// One wait point per stream lane.
    lanes: Vec<(Mutex<()>, Condvar)>,
    /// A caller that does not work in the run waits here for its end.
    ended: Condvar,
    /// The crew's helpers (inline shape), called in when work is pushed.
    helpers: Option<Arc<Control>>,
}

impl Wake {
    /// Wait points for `streams` stream lanes; `stopped` for a run with nothing
    /// to do; `helpers` to poke when tasks are pushed.
    pub fn new(streams: usize, stopped: bool, helpers: Option<Arc<Control>>) -> Self {
        Wake {
            stop: AtomicBool::new(stopped),
            lock: Mutex::new(()),
            cv: Condvar::new(),
            sleepers: AtomicUsize::new(0),
            epoch: AtomicU64::new(0),
            lanes: (0..streams)
                .map(|_| (Mutex::new(()), Condvar::new()))
                .collect(),
            ended: Condvar::new(),
            helpers,
        }
    }

    /// Whether the run is over (finished, failed or cancelled): no task may start.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Parks a CPU worker unless `has_work()` or a push since it last looked.
    pub fn park(&self, has_work: impl Fn() -> bool) {
        let epoch = self.epoch.load(Ordering::SeqCst);
        if has_work() {
            return;
        }
        let mut guard = self.lock.lock();
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        if self.epoch.load(Ordering::SeqCst) == epoch && !self.stopped() {
            self.cv.wait(&mut guard);
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }

    /// Wakes parked CPU workers after `count` tasks were pushed, and calls
    /// helpers in for the ones no parked worker takes.
    pub fn wake_workers(&self, count: usize) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        let sleepers = self.sleepers.load(Ordering::SeqCst);
        if let Some(h) = self.helpers.as_ref().filter(|_| sleepers < count) {
            h.poke(count - sleepers);
        }
        if sleepers > 0 {
            let _guard = self.lock.lock();
            if count == 1 {
                self.cv.notify_one();
            } else {
                self.cv.notify_all();
            }
        }
    }

    /// Blocks the caller of a run it does not work in until the run stops.
    pub fn wait_stopped(&self) {
        let mut guard = self.lock.lock();
        while !self.stopped() {
            self.ended.wait(&mut guard);
        }
    }

    /// Blocks stream lane `s` until `ready()` or the run stops.
    pub fn lane_wait(&self, s: usize, ready: impl Fn() -> bool) {
        let (lock, cv) = &self.lanes[s];
        let mut guard = lock.lock();
        while !ready() && !self.stopped() {
            cv.wait(&mut guard);
        }
    }

    /// Wakes stream lane `s` (one of its tasks may have become ready).
    pub fn wake_lane(&self, s: usize) {
        let (lock, cv) = &self.lanes[s];
        let _guard = lock.lock();
        cv.notify_one();
    }

    /// Ends the run (success, failure or cancel) and wakes every thread.
    pub fn halt(&self) {
        self.stop.store(true, Ordering::Release);
        self.epoch.fetch_add(1, Ordering::SeqCst);
        {
            let _guard = self.lock.lock();
            self.cv.notify_all();
            self.ended.notify_all();
        }
        for (lock, cv) in &self.lanes {
            let _guard = lock.lock();
            cv.notify_all();
        }
    }
}

/// The link between a [`super::RunHandle`] and its run: a cancel request made
/// before the run starts, while it runs, or after it ended.
#[derive(Default)]
pub(super) struct Cancel {
    /// (requested, the running run's wake-up handle)
    state: Mutex<(bool, Option<Arc<Wake>>)>,
}

impl Cancel {
    /// Asks the run to stop starting tasks (now, or as soon as it starts).
    pub fn request(&self) {
        let mut state = self.state.lock();
        state.0 = true;
        if let Some(w) = &state.1 {
            w.halt();
        }
    }

    /// Connects a starting run (stopping it at once if a cancel came first) until
    /// the returned guard is dropped.
    pub fn attach(&self, wake: &Arc<Wake>) -> Attached<'_> {
        let mut state = self.state.lock();
        if state.0 {
            wake.halt();
        }
        state.1 = Some(wake.clone());
        Attached(self)
    }
}

/// Disconnects a run from its [`Cancel`] when the run ends.
pub(super) struct Attached<'c>(&'c Cancel);

impl Drop for Attached<'_> {
    fn drop(&mut self) {
        self.0.state.lock().1 = None;
    }
}

thread_local! {
    /// The run whose tasks this thread executes (set on runtime threads only).
    static CURRENT: RefCell<Option<Arc<Wake>>> = const { RefCell::new(None) };
}

/// Marks the calling thread as a thread of the run `wake` until the guard drops
/// (which restores the previous mark: the caller of a run nested in a task body
/// works in the inner run, then goes back to the outer one).
pub(super) fn enter(wake: &Arc<Wake>) -> Current {
    Current(CURRENT.with(|c| c.borrow_mut().replace(wake.clone())))
}

/// Restores the calling thread's previous run when dropped.
pub(super) struct Current(Option<Arc<Wake>>);

impl Drop for Current {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// Whether the run executing the calling thread's task has stopped (see
/// [`crate::graph::TaskContext::is_stopping`]).
pub(crate) fn current_stopping() -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(|w| w.stopped()))
}

/// The stop flag in every [`crate::graph::TaskContext`]: the run of the
/// calling thread ([`current_stopping`]). One static for all runs, so a
/// task's context takes no reference count on its run.
#[derive(Debug)]
pub(super) struct CurrentRun;

impl StopFlag for CurrentRun {
    fn stopped(&self) -> bool {
        current_stopping()
    }
}
