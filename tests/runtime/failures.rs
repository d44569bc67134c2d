//! How failures reach the caller: task errors as themselves, and a run handle
//! that always returns.

use eigenflow::graph::TaskGraph;
use eigenflow::runtime::{RunHandle, RunReport, Runtime};
use eigenflow::{Error, Result};
use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// Runs `f` on its own thread and returns its value, or fails the test if it has
/// not returned after a minute: a hang is a defect, and this turns it into a
/// failure instead of a stuck test binary (a minute is far beyond any honest
/// duration here, so a slow machine cannot trip it).
pub fn returns<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what} did not return (hang)"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what} panicked"),
    }
}

struct Unpark(std::thread::Thread);
impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `h` until it is ready, parking between polls (a minimal `block_on`).
fn poll_until_ready(h: &mut RunHandle) -> Result<RunReport> {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(r) = Pin::new(&mut *h).poll(&mut cx) {
            return r;
        }
        std::thread::park();
    }
}

#[test]
fn no_convergence_reaches_the_caller_as_itself() {
    let mut g = TaskGraph::new();
    g.task("solver", |_| {
        Err(Error::NoConvergence {
            stage: "test solver",
            detail: "planted".into(),
        })
    });
    let err = Runtime::builder().threads(2).build().run(g).unwrap_err();
    assert!(
        matches!(&err, Error::NoConvergence { stage: "test solver", detail } if detail == "planted"),
        "{err:?}"
    );
}

#[test]
fn wait_after_a_ready_poll_returns() {
    let err = returns("wait after Ready", || {
        let mut g = TaskGraph::new();
        g.task("t", |_| Ok(()));
        let mut h = Runtime::builder().threads(1).build().submit(g);
        poll_until_ready(&mut h).unwrap();
        h.wait().unwrap_err()
    });
    assert!(matches!(&err, Error::InvalidArgument(m) if m.contains("already")), "{err}");
}
