//! The phases of the graph-free solves (the one-stage paths of
//! [`super::eigh()`] and [`super::svd()`]): each phase runs through [`phase`],
//! which is where such a solve can be stopped and where it is traced.
//!
//! * Stopping: a graph run stops by starting no new task; a graph-free solve
//!   runs on one thread, so it looks between its phases. When the calling
//!   thread is a task of a run that has been stopped (cancelled through
//!   [`crate::runtime::RunHandle::cancel`] or `request_cancel`, or failed
//!   elsewhere), the next phase does not start and the solve returns
//!   [`Error::Cancelled`], as the graph path does. This is how a caller
//!   stops a one-stage solve: run it as a task of a submitted graph, and
//!   cancel that run (the Python binding does this on Ctrl-C).
//! * Tracing: each phase is one event of the phase trace open on the calling
//!   thread, if any ([`crate::trace::record_phases`]).

use crate::{Error, Result};
use std::time::Instant;

/// Stage of the reduction phases (`sytrd`, `gebrd`).
pub(crate) const REDUCE: &str = "reduce";
/// Stage of the tridiagonal or bidiagonal solve (`sterf`, `stedc`, `stebz`,
/// `stein`, `dqds`, `bdsdc`; the serial small SVD as a whole).
pub(crate) const SOLVE: &str = "solve";
/// Stage of the back-transformations (`ormtr`, `ormbr_q`, `ormbr_p`).
pub(crate) const BACK_TRANSFORM: &str = "back_transform";

/// Runs phase `name` of stage `stage`: [`Error::Cancelled`] without running
/// it if the run executing the calling thread has stopped, else `f`, timed
/// into the calling thread's phase trace.
pub(crate) fn phase<R>(name: &str, stage: &str, f: impl FnOnce() -> Result<R>) -> Result<R> {
    if crate::runtime::current_stopping() {
        return Err(Error::Cancelled);
    }
    let start = Instant::now();
    let r = f();
    crate::trace::record_phase(name, stage, start);
    r
}
