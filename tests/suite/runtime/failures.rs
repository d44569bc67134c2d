//! How failures reach the caller: task errors as themselves, and a run handle
//! that always returns.

use eigenflow::graph::{Lane, Task, TaskGraph};
use eigenflow::runtime::{RunHandle, RunReport, Runtime};
use eigenflow::{Error, Result};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
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
    assert!(
        matches!(&err, Error::InvalidArgument(m) if m.contains("already")),
        "{err}"
    );
}

#[test]
fn polls_and_waits_after_ready_return_an_error() {
    let mut g = TaskGraph::new();
    g.task("t", |_| Ok(()));
    let mut h = Runtime::builder().threads(1).build().submit(g);
    returns("poll", move || {
        poll_until_ready(&mut h).unwrap();
        // A second poll after Ready, then a wait: both return at once.
        let again = poll_until_ready(&mut h).unwrap_err();
        assert!(matches!(&again, Error::InvalidArgument(m) if m.contains("already")));
        assert!(h.is_finished());
        let err = h.cancel().unwrap_err();
        assert!(matches!(&err, Error::InvalidArgument(m) if m.contains("already")));
    });
}

/// Far more stack than any system can map: `std::thread::Builder::spawn` fails
/// for real (EAGAIN/ENOMEM from `pthread_create`), no injected fault needed.
const ABSURD_STACK: usize = 1 << 60;

/// CPU roots, then a stream task, then a CPU task: if a lane fails to start and
/// the run does not stop, the CPU workers wait for the stream task forever.
fn graph_through_a_stream(ran_on_stream: Arc<AtomicUsize>) -> TaskGraph<'static> {
    let mut g = TaskGraph::new();
    let roots: Vec<_> = (0..4)
        .map(|i| g.task(format!("root{i}"), |_| Ok(())))
        .collect();
    let s = g.add(
        Task::new("on-stream", move |_| {
            ran_on_stream.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .lane(Lane::Stream(1)),
    );
    let after = g.task("after", |_| Ok(()));
    g.succeed(s, &roots);
    g.edge(s, after);
    g
}

/// The two ways a runtime's threads fail to start: a CPU worker, a stream lane
/// (with the CPU workers already running).
fn failing_runtimes() -> [(Runtime, &'static str); 2] {
    [
        (
            Runtime::builder()
                .threads(2)
                .streams(2)
                .stack_size(ABSURD_STACK)
                .build(),
            "CPU worker 0",
        ),
        (
            Runtime::builder()
                .threads(2)
                .streams(2)
                .stream_stack_size(ABSURD_STACK)
                .build(),
            "stream lane 0",
        ),
    ]
}

fn assert_spawn_error(err: &Error, what: &str) {
    assert!(
        matches!(err, Error::ThreadSpawn { what: w, .. } if w == what),
        "expected a spawn failure of {what}, got {err:?}"
    );
}

#[test]
fn a_thread_that_cannot_start_fails_run_and_wait() {
    for (rt, what) in failing_runtimes() {
        let ran = Arc::new(AtomicUsize::new(0));
        let g = graph_through_a_stream(ran.clone());
        let rt2 = rt.clone();
        let err = returns("run", move || rt2.run(g).unwrap_err());
        assert_spawn_error(&err, what);
        let g = graph_through_a_stream(ran.clone());
        let err = returns("submit().wait()", move || rt.submit(g).wait().unwrap_err());
        assert_spawn_error(&err, what);
        assert_eq!(ran.load(Ordering::SeqCst), 0, "the stream task never ran");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_that_cannot_start_fails_the_awaited_run() {
    for (rt, what) in failing_runtimes() {
        let ran = Arc::new(AtomicUsize::new(0));
        let handle = rt.submit(graph_through_a_stream(ran.clone()));
        // A minute: a hang guard, not a speed requirement.
        let err = tokio::time::timeout(Duration::from_secs(60), handle)
            .await
            .expect("the awaited run returned")
            .unwrap_err();
        assert_spawn_error(&err, what);
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    }
}

#[test]
fn a_working_stack_size_runs() {
    let report = Runtime::builder()
        .threads(2)
        .streams(2)
        .stack_size(8 << 20)
        .stream_stack_size(256 << 10)
        .build()
        .run(graph_through_a_stream(Arc::new(AtomicUsize::new(0))))
        .unwrap();
    assert_eq!(report.tasks.len(), 6);
}

#[test]
fn cancel_after_the_run_finished_returns_its_result() {
    let mut g = TaskGraph::new();
    g.task("t", |_| Ok(()));
    let h = Runtime::builder().threads(1).build().submit(g);
    let report = returns("cancel", move || {
        while !h.is_finished() {
            std::thread::sleep(Duration::from_millis(1));
        }
        h.cancel()
    })
    .unwrap();
    assert_eq!(report.tasks.len(), 1);
}

#[test]
fn cancel_requested_before_the_run_starts_runs_nothing_or_stops_it() {
    let ran = Arc::new(AtomicUsize::new(0));
    let mut g = TaskGraph::new();
    let mut prev = None;
    for i in 0..10_000 {
        let ran = ran.clone();
        let t = g.task(format!("t{i}"), move |ctx| {
            ran.fetch_add(1, Ordering::SeqCst);
            // Hold the run until the cancel has reached it.
            while !ctx.is_stopping() {
                std::thread::sleep(Duration::from_millis(1));
            }
            Ok(())
        });
        if let Some(p) = prev {
            g.edge(p, t);
        }
        prev = Some(t);
    }
    let h = Runtime::builder().threads(2).build().submit(g);
    h.request_cancel();
    let err = returns("cancelled wait", move || h.wait().unwrap_err());
    assert!(matches!(err, Error::Cancelled), "{err}");
    // The first task may have started before the request reached the run.
    assert!(ran.load(Ordering::SeqCst) <= 1);
}

#[test]
fn wait_timeout_says_whether_the_run_has_finished() {
    let release = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let r = release.clone();
    let mut g = TaskGraph::new();
    g.task("held", move |_| {
        while !r.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    });
    let h = Runtime::builder().threads(1).build().submit(g);
    returns("wait_timeout", move || {
        // The task cannot finish before it is released: the wait times out.
        assert!(!h.wait_timeout(Duration::from_millis(20)));
        assert!(!h.is_finished());
        release.store(true, Ordering::Release);
        // Released: the wait returns true as soon as the result is stored
        // (the minute is only a bound for a hang), and the result is still
        // there for `wait`.
        assert!(h.wait_timeout(Duration::from_secs(60)));
        assert!(h.wait_timeout(Duration::ZERO));
        h.wait().unwrap();
    });
}
