//! How the run of a graph ended, shared with the result handles its builders
//! hand out, so that a result is readable only after a successful run.
//!
//! Every [`TaskGraph`](super::TaskGraph) owns one [`RunOutcome`]; a graph
//! [appended](super::TaskGraph::append) to another passes its own on, and
//! both are settled together. The runtime settles them when a run ends (after
//! every task body, and with it every reference a body held to a result, has
//! been dropped); a graph dropped without a run settles them as
//! [`RunState::NotRun`]. A handle then reads its data only in
//! [`RunState::Succeeded`], so nothing that a failed, cancelled or missing run
//! left behind (zeros, a partial matrix, the untouched input) can be read as
//! a result.

use crate::{Error, Result};
use parking_lot::{Condvar, Mutex};
use std::sync::Arc;

/// Where the run of a graph stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    /// Not run yet, or running.
    Pending,
    /// Every task ran and succeeded.
    Succeeded,
    /// A task failed (or panicked), or the run was refused at validation.
    Failed,
    /// The run was cancelled before it finished.
    Cancelled,
    /// The graph was dropped without being run.
    NotRun,
}

/// The shared end state of one graph's run: handles built from the graph
/// hold a clone and ask it before they give out data.
#[derive(Clone, Debug)]
pub struct RunOutcome(Arc<(Mutex<RunState>, Condvar)>);

impl RunOutcome {
    pub(crate) fn new() -> Self {
        RunOutcome(Arc::new((Mutex::new(RunState::Pending), Condvar::new())))
    }

    /// The current state (does not block).
    pub fn state(&self) -> RunState {
        *self.0 .0.lock()
    }

    /// Whether the run succeeded, so that the results can be read.
    pub fn is_ready(&self) -> bool {
        self.state() == RunState::Succeeded
    }

    /// `Ok` after a successful run, [`Error::NotRun`] otherwise (before the
    /// run, while it runs, after a failure, a cancel or a drop). Does not block.
    pub fn check(&self) -> Result<()> {
        if self.is_ready() {
            Ok(())
        } else {
            Err(Error::NotRun)
        }
    }

    /// Blocks until the run has ended (or the graph was dropped unrun), then
    /// answers as [`Self::check`]. For a run submitted with `Runtime::submit`
    /// whose handle was dropped, this is how to know when the results are
    /// there.
    ///
    /// Never call it from a task of the same graph: that task would wait for
    /// its own run to end.
    pub fn wait(&self) -> Result<()> {
        let (state, cond) = &*self.0;
        let mut s = state.lock();
        while *s == RunState::Pending {
            cond.wait(&mut s);
        }
        drop(s);
        self.check()
    }

    /// Settles a pending outcome (a settled one keeps its state) and wakes
    /// the waiters.
    pub(crate) fn settle(&self, to: RunState) {
        let (state, cond) = &*self.0;
        let mut s = state.lock();
        if *s == RunState::Pending {
            *s = to;
            cond.notify_all();
        }
    }
}

impl Default for RunOutcome {
    fn default() -> Self {
        Self::new()
    }
}

/// The state a run's result settles to.
pub(crate) fn state_of<T>(result: &Result<T>) -> RunState {
    match result {
        Ok(_) => RunState::Succeeded,
        Err(Error::Cancelled) => RunState::Cancelled,
        Err(_) => RunState::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settles_once_and_wakes_waiters() {
        let o = RunOutcome::new();
        assert!(matches!(o.check(), Err(Error::NotRun)));
        let o2 = o.clone();
        let waiter = std::thread::spawn(move || o2.wait());
        std::thread::sleep(std::time::Duration::from_millis(20));
        o.settle(RunState::Succeeded);
        assert!(waiter.join().unwrap().is_ok());
        o.settle(RunState::Failed);
        assert_eq!(o.state(), RunState::Succeeded);
        let f = RunOutcome::new();
        f.settle(RunState::Cancelled);
        assert!(matches!(f.wait(), Err(Error::NotRun)));
    }
}
