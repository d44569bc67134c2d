//! Runtimes of the binding and the wait for a submitted graph: the GIL is
//! released while the graph runs, and Python signals (Ctrl-C) are checked
//! every [`SIGNAL_PERIOD`], cancelling the run on an exception.

use crate::errors::to_py;
use eigenflow::graph::TaskGraph;
use eigenflow::runtime::{RunHandle, RunOptions, Runtime};
use eigenflow::trace::TraceLevel;
use pyo3::prelude::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// How often the waiting call takes the GIL back to run Python's signal
/// handlers: well under the one second the issue allows for Ctrl-C.
const SIGNAL_PERIOD: Duration = Duration::from_millis(50);

/// The runtime of a call: the crate's process-wide default for
/// `threads=None`, else one runtime per thread count, made on first use and
/// kept for the life of the process (no thread start per call). The count
/// is checked by the crate's one rule ([`eigenflow::runtime::check_threads`]:
/// 1 to 1024, the same message as every other path), a `ValueError` when
/// out of range; the Python side has refused non-integers and booleans.
pub fn runtime(py: Python<'_>, threads: Option<i64>) -> PyResult<&'static Runtime> {
    let Some(t) = threads else {
        return Ok(eigenflow::default_runtime());
    };
    let t = eigenflow::runtime::check_threads(t).map_err(|e| to_py(py, e))?;
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

/// `f` with the crate's phase trace open at `trace`
/// ([`eigenflow::trace::record_phases`]: the one-stage paths write their
/// phases there), or `f` alone without a path.
pub fn traced<R>(
    trace: Option<&Path>,
    f: impl FnOnce() -> eigenflow::Result<R>,
) -> eigenflow::Result<R> {
    match trace {
        Some(path) => eigenflow::trace::record_phases(path, f),
        None => f(),
    }
}

/// Runs `job` (a one-stage solve, which builds no graph) as the one task of
/// a graph submitted to `rt`, and waits for its result with the GIL
/// released, checking Python signals every [`SIGNAL_PERIOD`]. On an
/// exception (Ctrl-C) the run is cancelled without waiting and the call
/// returns at once: the solve notices the cancel between its phases and
/// stops there with `Cancelled` (its result dropped), instead of computing
/// to the end in the background. `job` owns everything it uses.
pub fn run_stoppable<R: Send + 'static>(
    py: Python<'_>,
    rt: &'static Runtime,
    job: impl FnOnce() -> eigenflow::Result<R> + Send + 'static,
) -> PyResult<R> {
    let slot: Arc<Mutex<Option<eigenflow::Result<R>>>> = Arc::default();
    let out = Arc::clone(&slot);
    let mut graph = TaskGraph::new();
    graph.task("one-stage", move |_| {
        let r = job();
        *out.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
        Ok(())
    });
    let handle = rt.submit(graph);
    loop {
        if py.detach(|| handle.wait_timeout(SIGNAL_PERIOD)) {
            py.detach(|| handle.wait()).map_err(|e| to_py(py, e))?;
            let r = slot.lock().unwrap_or_else(|p| p.into_inner()).take();
            return match r {
                Some(r) => r.map_err(|e| to_py(py, e)),
                None => Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "the eigenflow solve ended without a result",
                )),
            };
        }
        if let Err(e) = py.check_signals() {
            // Detached: dropping the handle leaves the run to stop by itself.
            handle.request_cancel();
            return Err(e);
        }
    }
}
