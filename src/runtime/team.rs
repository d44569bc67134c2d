//! A fork-join scope with one helper engaged for its whole length
//! ([`super::Runtime::team`]): for kernels that split a product in two fixed
//! halves hundreds of times in a row, with short serial steps between the
//! splits (`dsytrd`'s symmetric product per column, its SYR2K per panel).
//!
//! [`super::Runtime::join`] opens a job on an idle crew for every split: a
//! helper must notice it, enter, and leave again, a microsecond or more each
//! time, and the helper that takes a half is not always the same, so the half's
//! data is not in its cache. Here one helper enters once and waits for the
//! scope's splits in a spin loop; each split is posted by the calling thread
//! and costs a few cache-line transfers. The helper always takes the second
//! half when it can, so each half's operands stay in one core's cache from one
//! split to the next (two L2 caches hold twice the trailing matrix one does).
//!
//! # Protocol
//! Split `g` (counting from 1) is published as a pointer to its second half's
//! closure, then `posted = g`. Whoever moves `claimed` from `g - 1` to `g`
//! runs the second half and then sets `finished = g`; the caller runs the
//! first half, tries the claim itself (so a late or absent helper never makes
//! it wait), and does not leave the split before `finished == g`. The counters
//! only grow, so a helper that saw an older split cannot claim a newer one.

use super::pool::{Pool, Role};
use super::Runtime;
use crate::linalg::par::{run_caught, Fork, ForkJoin, Half, SplitJoin, Splits};
use crate::Result;
use parking_lot::Mutex;
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a wait spins before it starts yielding the core between looks:
/// the gaps between a scope's splits are microseconds, and a `sched_yield`
/// at the moment a split is posted would delay the helper's half by about as
/// much as the half takes at small orders.
const SPIN_BEFORE_YIELD: Duration = Duration::from_micros(50);

/// Waits until `ready()`: spins (the `pause` hint), and after
/// [`SPIN_BEFORE_YIELD`] yields between looks (on an oversubscribed machine
/// the thread waited for may need this core).
fn wait_until(ready: impl Fn() -> bool) {
    let mut spins = 0u32;
    let mut start: Option<Instant> = None;
    let mut yielding = false;
    while !ready() {
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(64) {
            if yielding {
                std::thread::yield_now();
            } else {
                let t0 = *start.get_or_insert_with(Instant::now);
                yielding = t0.elapsed() > SPIN_BEFORE_YIELD;
            }
        }
        std::hint::spin_loop();
    }
}

/// The second half of a split, as the helper calls it.
type Task<'a> = dyn Fn() + Sync + 'a;

/// What the calling thread and the helper share (module docs).
struct Shared {
    posted: AtomicU64,
    claimed: AtomicU64,
    finished: AtomicU64,
    /// Points to a `&Task` in the poster's frame, valid while split `posted`
    /// is unfinished.
    task: AtomicPtr<()>,
    closing: AtomicBool,
}

impl Shared {
    /// Takes the second half of split `g` if nobody has.
    fn claim(&self, g: u64) -> bool {
        self.claimed
            .compare_exchange(g - 1, g, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The helper's loop: take each posted split's second half until the scope
    /// closes.
    fn serve(&self) {
        let mut seen = 0;
        loop {
            wait_until(|| {
                self.posted.load(Ordering::Acquire) != seen || self.closing.load(Ordering::Acquire)
            });
            let g = self.posted.load(Ordering::Acquire);
            if g == seen {
                return; // closing, and nothing new was posted
            }
            seen = g;
            if self.claim(g) {
                let ptr = self.task.load(Ordering::Acquire) as *const &Task<'_>;
                // SAFETY: the claim of split `g` succeeded, so its poster is
                // inside `Team::join` for `g` (it posted `task` before `posted =
                // g`, and cannot leave or post again before `finished == g`,
                // set below after the call): the pointee lives.
                let task = unsafe { *ptr };
                task();
                self.finished.store(g, Ordering::Release);
            }
        }
    }
}

/// How a [`Team`] runs the two halves of a split.
enum Mode<'t> {
    /// In turn on the calling thread.
    Serial,
    /// Through [`Runtime::join`] (dedicated stacks, GPU lanes: the halves must
    /// run as the runtime's tasks).
    Join(&'t Runtime),
    /// With the helper engaged for the scope.
    Engaged(&'t Shared),
}

/// A fork-join scope ([`Runtime::team`], or [`Team::serial`] without a
/// runtime): [`Team::join`] runs two closures, in parallel when a helper is
/// engaged. Which thread runs a half never changes what it computes.
///
/// A `Team` is used by the thread that opened it only (it is neither `Send` nor
/// `Sync`), so a half can never post a split to the helper running it.
pub struct Team<'t> {
    mode: Mode<'t>,
    /// Splits posted so far.
    generation: Cell<u64>,
    _not_sync: PhantomData<*const ()>,
}

impl<'t> Team<'t> {
    fn new(mode: Mode<'t>) -> Self {
        Team {
            mode,
            generation: Cell::new(0),
            _not_sync: PhantomData,
        }
    }

    /// A team without threads: [`Team::join`] runs its halves in turn.
    pub fn serial() -> Team<'static> {
        Team::new(Mode::Serial)
    }

    /// A team whose splits go through [`Runtime::join`].
    pub(super) fn through_join(rt: &'t Runtime) -> Self {
        Team::new(Mode::Join(rt))
    }

    /// Runs `a` and `b`, `b` on the engaged helper when it takes it in time,
    /// otherwise both on the calling thread; both have finished (or `b` never
    /// started: a serial team after an error in `a`) when it returns.
    ///
    /// # Errors
    /// The first error of `a`, else `b`'s; a panic in a half becomes
    /// [`Error::TaskPanicked`](crate::Error::TaskPanicked) (task `join`).
    pub fn join<'s>(
        &self,
        a: impl FnOnce() -> Result<()> + Send + 's,
        b: impl FnOnce() -> Result<()> + Send + 's,
    ) -> Result<()> {
        let shared = match self.mode {
            Mode::Serial => {
                run_caught(a)?;
                return run_caught(b);
            }
            Mode::Join(rt) => return rt.join(a, b),
            Mode::Engaged(shared) => shared,
        };
        let g = self.generation.get() + 1;
        self.generation.set(g);
        let b = Mutex::new(Some(b));
        let b_result: Mutex<Result<()>> = Mutex::new(Ok(()));
        let task = || {
            if let Some(b) = b.lock().take() {
                *b_result.lock() = run_caught(b);
            }
        };
        let task_ref: &Task<'_> = &task;
        // Waits, also if anything below unwound, until the second half has
        // finished or can no longer start: the helper may hold `task_ref`.
        struct Settle<'a>(&'a Shared, u64);
        impl Drop for Settle<'_> {
            fn drop(&mut self) {
                let (shared, g) = (self.0, self.1);
                if !shared.claim(g) {
                    wait_until(|| shared.finished.load(Ordering::Acquire) == g);
                }
            }
        }
        shared
            .task
            .store(&task_ref as *const &Task<'_> as *mut (), Ordering::Release);
        shared.posted.store(g, Ordering::Release);
        let settle = Settle(shared, g);
        let a_result = run_caught(a);
        if shared.claim(g) {
            task();
            shared.finished.store(g, Ordering::Release);
        }
        drop(settle);
        a_result?;
        b_result.into_inner()
    }
}

/// The runtime as the kernels see it: a [`Fork`] whose halves run through
/// [`Runtime::join`], and whose scopes are [`Runtime::team`]s.
impl ForkJoin for Runtime {
    fn threads(&self) -> usize {
        Runtime::threads(self)
    }

    fn join(&self, a: &mut Half<'_>, b: &mut Half<'_>) -> Result<()> {
        Runtime::join(self, a, b)
    }

    fn scope(&self, f: &mut dyn FnMut(Splits<'_>) -> Result<()>) -> Result<()> {
        self.team(|team| f(Splits::Engaged(team)))
    }
}

/// A team's splits as the kernels see them ([`Splits::Engaged`]).
impl SplitJoin for Team<'_> {
    fn join(&self, a: &mut Half<'_>, b: &mut Half<'_>) -> Result<()> {
        Team::join(self, a, b)
    }
}

impl Runtime {
    /// This runtime as a kernel's parallelism ([`Fork::Join`]): the kernels
    /// of [`crate::linalg`] that split in two halves take a [`Fork`].
    pub fn fork(&self) -> Fork<'_> {
        Fork::Join(self)
    }
}

impl<'a> From<Option<&'a Runtime>> for Fork<'a> {
    /// [`Runtime::fork`], or [`Fork::Seq`] without a runtime.
    fn from(rt: Option<&'a Runtime>) -> Self {
        rt.map_or(Fork::Seq, Runtime::fork)
    }
}

/// [`Runtime::team`] on an inline crew: the first CPU helper to enter serves
/// the scope's splits (the others leave at once). Only one parked helper is
/// woken: on a many-core runtime, waking all of them per call would cost more
/// than the scope saves.
pub(super) fn team_inline<R>(pool: &Pool, f: impl FnOnce(&Team<'_>) -> Result<R>) -> Result<R> {
    let crew = pool.checkout()?;
    let shared = Shared {
        posted: AtomicU64::new(0),
        claimed: AtomicU64::new(0),
        finished: AtomicU64::new(0),
        task: AtomicPtr::new(std::ptr::null_mut()),
        closing: AtomicBool::new(false),
    };
    let server = AtomicBool::new(false);
    let job = |role: Role<'_>| {
        if let Role::Cpu(..) = role {
            if !server.swap(true, Ordering::AcqRel) {
                shared.serve();
            }
        }
    };
    let out = {
        // Closes the scope (the helper leaves at its next look) before the
        // guard below waits for it, also when `f` unwinds.
        struct Close<'a>(&'a AtomicBool);
        impl Drop for Close<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Release);
            }
        }
        // Dropped in reverse order: `Close` first, then the job guard, which
        // waits for every thread that entered.
        let _open = crew.open(&job, false);
        if let Some(helpers) = crew.helpers() {
            helpers.poke(1);
        }
        let _close = Close(&shared.closing);
        f(&Team::new(Mode::Engaged(&shared)))
    };
    pool.give_back(crew);
    out
}
