//! `RunHandle`: the result of [`super::Runtime::submit`], waitable, awaitable and
//! cancellable.

use super::wake::Cancel;
use super::RunReport;
use crate::{Error, Result};
use parking_lot::{Condvar, Mutex};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

struct State {
    result: Option<Result<RunReport>>,
    /// The result was handed out (by a `Ready` poll or a wait).
    taken: bool,
    waker: Option<Waker>,
}

impl State {
    /// The result, once; afterwards an error saying it was already taken (so a
    /// second wait or poll returns instead of waiting for a result that never
    /// comes again).
    fn take(&mut self) -> Option<Result<RunReport>> {
        if let Some(r) = self.result.take() {
            self.taken = true;
            return Some(r);
        }
        self.taken.then(|| {
            Err(Error::InvalidArgument(
                "the run's result was already taken by an earlier poll".into(),
            ))
        })
    }
}

/// A graph running in the background. Await it, call [`RunHandle::wait`], or stop
/// it with [`RunHandle::cancel`]. Dropping the handle detaches the run: it
/// finishes on its own threads and its result is discarded.
///
/// `wait`, `cancel` and `.await` always return: with the result, with
/// [`Error::ThreadSpawn`] if the run's thread could not start, or with
/// [`Error::InvalidArgument`] if the result was already taken by an earlier poll.
pub struct RunHandle {
    shared: Arc<(Mutex<State>, Condvar)>,
    cancel: Arc<Cancel>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RunHandle {
    pub(super) fn spawn(job: impl FnOnce(&Cancel) -> Result<RunReport> + Send + 'static) -> Self {
        let shared = Arc::new((
            Mutex::new(State {
                result: None,
                taken: false,
                waker: None,
            }),
            Condvar::new(),
        ));
        let cancel = Arc::new(Cancel::default());
        let (s, c) = (shared.clone(), cancel.clone());
        let spawned = std::thread::Builder::new()
            .name("eigenflow-submit".into())
            .spawn(move || {
                // The result is always stored, even if the runtime itself panicked
                // (task panics are caught earlier), so waiters never wait forever.
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&c)))
                    .unwrap_or_else(|payload| {
                        Err(Error::TaskPanicked {
                            task: "(runtime)".into(),
                            message: crate::error::panic_message(payload.as_ref()),
                        })
                    });
                let mut state = s.0.lock();
                state.result = Some(result);
                if let Some(w) = state.waker.take() {
                    w.wake();
                }
                s.1.notify_all();
            });
        let thread = match spawned {
            Ok(t) => Some(t),
            Err(source) => {
                // The job (and the graph in it) was dropped with the closure.
                shared.0.lock().result = Some(Err(Error::ThreadSpawn {
                    what: "submit".into(),
                    source,
                }));
                None
            }
        };
        RunHandle {
            shared,
            cancel,
            thread,
        }
    }

    /// Whether the run has finished (or its result was already taken).
    pub fn is_finished(&self) -> bool {
        let state = self.shared.0.lock();
        state.result.is_some() || state.taken
    }

    /// Blocks until the run finishes and returns its result.
    pub fn wait(mut self) -> Result<RunReport> {
        let result = {
            let mut state = self.shared.0.lock();
            loop {
                if let Some(r) = state.take() {
                    break r;
                }
                self.shared.1.wait(&mut state);
            }
        };
        self.join();
        result
    }

    /// Blocks until the run finishes or `timeout` passes, whichever comes first,
    /// and says whether it has finished (the result stays in the handle for
    /// [`wait`](Self::wait)). For a caller that must do something else at
    /// intervals while it waits, such as a binding that checks for Ctrl-C,
    /// without polling [`is_finished`](Self::is_finished) in a sleep loop: the
    /// waiter sleeps on the run's condition variable and wakes when the result
    /// is stored.
    pub fn wait_timeout(&self, timeout: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let mut state = self.shared.0.lock();
        while state.result.is_none() && !state.taken {
            if self.shared.1.wait_until(&mut state, deadline).timed_out() {
                break;
            }
        }
        state.result.is_some() || state.taken
    }

    /// Asks the run to stop without waiting: no task starts after this call (the
    /// running ones finish). Then await the handle or [`wait`](Self::wait) for it;
    /// the result is [`Error::Cancelled`] unless the run had already finished.
    pub fn request_cancel(&self) {
        self.cancel.request();
    }

    /// Stops the run and waits for it: no new task starts, running tasks finish,
    /// every thread of the run is joined. Returns [`Error::Cancelled`], or the
    /// run's own result if it had already finished (or failed) before.
    pub fn cancel(self) -> Result<RunReport> {
        self.request_cancel();
        self.wait()
    }

    /// Joins the background thread (which has stored the result and exits).
    fn join(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Future for RunHandle {
    type Output = Result<RunReport>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let taken = {
            let mut state = self.shared.0.lock();
            let r = state.take();
            if r.is_none() {
                state.waker = Some(cx.waker().clone());
            }
            r
        };
        match taken {
            Some(r) => {
                self.join();
                Poll::Ready(r)
            }
            None => Poll::Pending,
        }
    }
}
