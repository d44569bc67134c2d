//! Runtimes of the binding and the wait for a submitted graph: the GIL is
//! released while the graph runs, and Python signals (Ctrl-C) are checked
//! every [`SIGNAL_PERIOD`], cancelling the run on an exception.

use crate::errors::to_py;
use eigenflow::graph::TaskGraph;
use eigenflow::runtime::{RunHandle, RunOptions, Runtime};
use eigenflow::trace::TraceLevel;
use pyo3::prelude::*;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// How often the waiting call takes the GIL back to run Python's signal
/// handlers: well under the one second the issue allows for Ctrl-C.
const SIGNAL_PERIOD: Duration = Duration::from_millis(50);

/// The runtime of a call: the crate's process-wide default for
/// `threads=None`, else one runtime per thread count, made on first use and
/// kept for the life of the process (no thread start per call).
pub fn runtime(threads: Option<usize>) -> PyResult<&'static Runtime> {
    let Some(t) = threads else {
        return Ok(eigenflow::default_runtime());
    };
    if t == 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "threads must be at least 1 (or None for every core)",
        ));
    }
    static BY_COUNT: OnceLock<Mutex<HashMap<usize, &'static Runtime>>> = OnceLock::new();
    let mut map = BY_COUNT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    Ok(*map
        .entry(t)
        .or_insert_with(|| Box::leak(Box::new(Runtime::builder().threads(t).build()))))
}

/// Cancels and joins a run that is still owned when dropped (an early return
/// or a panic), so no task outlives the data the caller lent it.
struct Guard(Option<RunHandle>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            let _ = h.cancel();
        }
    }
}

/// Runs `graph` on `rt` (writing a Chrome trace to `trace` if given) and
/// waits for it with the GIL released. A pending Python exception from a
/// signal handler (KeyboardInterrupt on Ctrl-C) cancels the run, waits for
/// its running tasks, and is returned.
pub fn run_graph(
    py: Python<'_>,
    rt: &'static Runtime,
    graph: TaskGraph<'static>,
    trace: Option<PathBuf>,
) -> PyResult<()> {
    let handle = match trace {
        Some(p) => rt.submit_with(graph, &RunOptions::new().trace(p, TraceLevel::Auto)),
        None => rt.submit(graph),
    };
    let mut guard = Guard(Some(handle));
    loop {
        let done = {
            let h = guard.0.as_ref().expect("handle kept until the end");
            py.detach(|| h.wait_timeout(SIGNAL_PERIOD))
        };
        if done {
            let h = guard.0.take().expect("handle kept until the end");
            return py.detach(|| h.wait()).map(|_| ()).map_err(|e| to_py(py, e));
        }
        if let Err(e) = py.check_signals() {
            let h = guard.0.take().expect("handle kept until the end");
            let _ = py.detach(|| h.cancel());
            return Err(e);
        }
    }
}

/// Runs `job` on a thread of its own and waits for its result with the GIL
/// released, checking Python signals every [`SIGNAL_PERIOD`]. For work with
/// no graph to cancel (the one-stage EVD of a small order): on an exception
/// (Ctrl-C) the call returns at once and the thread finishes in the
/// background, its result dropped; `job` owns everything it uses.
pub fn run_detached<R: Send + 'static>(
    py: Python<'_>,
    job: impl FnOnce() -> eigenflow::Result<R> + Send + 'static,
) -> PyResult<R> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("eigenflow-py".into())
        .spawn(move || {
            let _ = tx.send(job());
        })
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))?;
    let mut rx = rx;
    loop {
        // The receiver is Send but not Sync: it travels into the closure and back.
        let (got, back) = py.detach(move || (rx.recv_timeout(SIGNAL_PERIOD), rx));
        rx = back;
        match got {
            Ok(r) => return r.map_err(|e| to_py(py, e)),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => py.check_signals()?,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "the eigenflow worker thread ended without a result",
                ))
            }
        }
    }
}
