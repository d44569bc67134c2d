//! `RunHandle`: the result of [`super::Runtime::submit`], waitable and awaitable.

use super::RunReport;
use crate::Result;
use parking_lot::{Condvar, Mutex};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

struct State {
    result: Option<Result<RunReport>>,
    waker: Option<Waker>,
}

/// A graph running in the background. Await it, or call [`RunHandle::wait`];
/// dropping it lets the run finish on its own thread, its result discarded.
pub struct RunHandle {
    shared: Arc<(Mutex<State>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RunHandle {
    pub(super) fn spawn(job: impl FnOnce() -> Result<RunReport> + Send + 'static) -> Self {
        let shared = Arc::new((
            Mutex::new(State {
                result: None,
                waker: None,
            }),
            Condvar::new(),
        ));
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("eigenflow-submit".into())
            .spawn(move || {
                let result = job();
                let mut state = s.0.lock();
                state.result = Some(result);
                if let Some(w) = state.waker.take() {
                    w.wake();
                }
                s.1.notify_all();
            })
            .expect("spawn the run thread");
        RunHandle {
            shared,
            thread: Some(thread),
        }
    }

    /// Whether the run has finished.
    pub fn is_finished(&self) -> bool {
        self.shared.0.lock().result.is_some()
    }

    /// Blocks until the run finishes and returns its result.
    pub fn wait(mut self) -> Result<RunReport> {
        let result = {
            let mut state = self.shared.0.lock();
            while state.result.is_none() {
                self.shared.1.wait(&mut state);
            }
            state.result.take().expect("result present")
        };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        result
    }
}

impl Future for RunHandle {
    type Output = Result<RunReport>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let taken = {
            let mut state = self.shared.0.lock();
            match state.result.take() {
                Some(r) => Some(r),
                None => {
                    state.waker = Some(cx.waker().clone());
                    None
                }
            }
        };
        match taken {
            Some(r) => {
                // The thread has stored the result; it exits right after.
                if let Some(t) = self.thread.take() {
                    let _ = t.join();
                }
                Poll::Ready(r)
            }
            None => Poll::Pending,
        }
    }
}
