//! Fork-join without a graph ([`super::Runtime::join`]): two closures on a
//! crew's threads, for the kernels that split one product or update in two
//! fixed halves many times in a row (`dsymv` per column of `dsytrd`, the
//! `dgemv`s of `dgebrd`, the SYR2K of each panel).
//!
//! A two-task [`TaskGraph`](crate::graph::TaskGraph) does the same, but its
//! plan, metadata, report and wake-up structures cost several microseconds per
//! run, and a reduction of order 1024 forks about a thousand times. Here the
//! job is two claims on one counter: the calling thread (CPU worker 0 of the
//! inline crew shape) and every helper that enters take the next unclaimed
//! half and run it, so when no helper comes in time the caller runs both and
//! never waits for a thread to wake up. Which thread runs a half never changes
//! what it computes.

use super::pool::{Pool, Role};
use crate::linalg::par::run_caught;
use crate::{Error, Result};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One half of a join: taken (once) by the thread that claims it.
struct Half<F>(Mutex<Option<F>>);

impl<F: FnOnce() -> Result<()>> Half<F> {
    /// Runs the closure (if still there) with [`run_caught`].
    fn run(&self) -> Result<()> {
        match self.0.lock().take() {
            Some(f) => run_caught(f),
            None => Ok(()),
        }
    }
}

/// Runs `a` and `b` on a crew of the inline shape (the caller is worker 0),
/// in parallel when a helper enters in time; the first error (or panic) is
/// returned after both halves have finished or were never started.
///
/// # Errors
/// [`Error::ThreadSpawn`] when no idle crew exists and a new one cannot
/// start (nothing runs then); otherwise the halves' own errors.
pub(super) fn join_inline<'s>(
    pool: &Pool,
    a: impl FnOnce() -> Result<()> + Send + 's,
    b: impl FnOnce() -> Result<()> + Send + 's,
) -> Result<()> {
    let crew = pool.checkout()?;
    let (a, b) = (Half(Mutex::new(Some(a))), Half(Mutex::new(Some(b))));
    let next = AtomicUsize::new(0);
    let error: Mutex<Option<Error>> = Mutex::new(None);
    let claim = || loop {
        let outcome = match next.fetch_add(1, Ordering::AcqRel) {
            0 => a.run(),
            1 => b.run(),
            _ => break,
        };
        if let Err(e) = outcome {
            error.lock().get_or_insert(e);
        }
    };
    let job = |role: Role<'_>| {
        if let Role::Cpu(..) = role {
            claim();
        }
    };
    {
        // The guard waits, when dropped, for every helper that entered: the
        // halves borrow from this frame.
        let _open = crew.open(&job, true);
        claim();
    }
    pool.give_back(crew);
    error.into_inner().map_or(Ok(()), Err)
}
