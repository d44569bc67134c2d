"""dtypes, errors, the GIL released, Ctrl-C, version."""

import _thread
import json
import signal
import threading
import time

import numpy as np
import pytest

import eigenflow
from conftest import LIMIT, symmetric, value_ratio


def test_version():
    assert isinstance(eigenflow.__version__, str) and eigenflow.__version__.count(".") == 2


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.bool_])
def test_integer_input_becomes_float64(dtype):
    a = (np.arange(16).reshape(4, 4) % 3).astype(dtype)
    a = a + a.T if dtype != np.bool_ else a | a.T
    w, v = eigenflow.eigh(a)
    assert w.dtype == np.float64
    a64 = a.astype(np.float64)
    assert value_ratio(a64, w, np.linalg.eigvalsh(a64), np.float64) < LIMIT
    assert eigenflow.svd(a).S.dtype == np.float64


@pytest.mark.parametrize("dtype", [np.float16, np.complex128, np.complex64, object, "U3"])
def test_unsupported_dtypes(dtype):
    a = np.eye(3).astype(dtype)
    # eigh and eigvalsh take complex (Hermitian) input: tests/test_complex.py.
    complex_ok = np.dtype(dtype).kind == "c"
    for f in (eigenflow.eigh, eigenflow.eigvalsh, eigenflow.svd, eigenflow.svdvals):
        if complex_ok and f in (eigenflow.eigh, eigenflow.eigvalsh):
            continue
        with pytest.raises(ValueError, match="dtype"):
            f(a)


def test_non_native_byte_order():
    a = np.diag([3.0, 1.0, 2.0]).astype(">f8")
    assert eigenflow.eigvalsh(a).tolist() == [1.0, 2.0, 3.0]


def test_shape_errors():
    for f in (eigenflow.eigh, eigenflow.eigvalsh):
        with pytest.raises(ValueError, match="square"):
            f(np.ones((3, 4)))
        with pytest.raises(ValueError, match="2-D"):
            f(np.ones(3))
    with pytest.raises(ValueError, match="2-D"):
        eigenflow.svd(np.ones(3))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("n", [5, 300])
def test_non_finite(bad, n, tmp_path):
    a = np.eye(n)
    a[n - 1, 1] = bad
    with pytest.raises(ValueError, match="non-finite"):
        eigenflow.eigh(a)
    with pytest.raises(ValueError, match="non-finite"):
        eigenflow.eigh(a, trace=tmp_path / "t.json")
    with pytest.raises(ValueError, match="non-finite"):
        eigenflow.svd(a)
    # Only the triangle read is checked (numpy's UPLO semantics).
    w = eigenflow.eigvalsh(a, lower=False)
    assert np.allclose(w, 1.0)


def test_memory_error():
    # A 1e6 x 1e6 matrix as a zero-stride view: no memory behind it, refused
    # before anything is allocated, with the figures in the message.
    a = np.broadcast_to(np.float64(1.0), (1_000_000, 1_000_000))
    with pytest.raises(MemoryError, match="GiB"):
        eigenflow.eigh(a)
    with pytest.raises(MemoryError, match="GiB"):
        eigenflow.svd(a)


def count_while(call):
    """Runs `call` on this thread while another Python thread counts; returns
    the count reached while the call ran."""
    stop = threading.Event()
    started = threading.Event()
    count = [0]

    def counter():
        started.set()
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=counter)
    t.start()
    started.wait()
    before = count[0]
    try:
        call()
    finally:
        during = count[0] - before
        stop.set()
        t.join()
    return during


@pytest.mark.parametrize("how", ["one-stage", "graph"])
def test_gil_released(how, rng):
    # With the GIL held for the whole call the counter would advance only in
    # the interpreter's switch intervals before the call took the GIL: a
    # handful of iterations. Released, it runs for the whole solve. Vectors
    # at 1500 take the one-stage path, eigenvalues at 2000 the task graph
    # (trace= no longer changes the path, issue 58).
    if how == "one-stage":
        a = symmetric("random", 1500, rng)
        during = count_while(lambda: eigenflow.eigh(a))
    else:
        a = symmetric("random", 2000, rng)
        during = count_while(lambda: eigenflow.eigvalsh(a))
    assert during > 100_000, during


def test_keyboard_interrupt(rng):
    # Ctrl-C (interrupt_main sets the same flag SIGINT does) during a long
    # graph run raises KeyboardInterrupt, and the runtime serves the next call.
    # Eigenvalues at n = 3000 (the task graph, about 1.1 s on 2 cores): at
    # n = 2000 (about 0.5 s) a timer thread delayed on a loaded 2-core
    # machine once fired after the run.
    # interrupt_main does nothing while SIGINT is ignored, as it is for a
    # command started in the background by a non-interactive shell: the test
    # installs Python's own handler for its duration.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    a = symmetric("random", 3000, rng)
    timer = threading.Timer(0.3, _thread.interrupt_main)
    t0 = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            eigenflow.eigvalsh(a)
    finally:
        signal.signal(signal.SIGINT, previous)
    print(f"KeyboardInterrupt {time.perf_counter() - t0 - 0.3:.3f} s after the interrupt")
    timer.join()
    b = symmetric("random", 50, rng)
    assert value_ratio(b, eigenflow.eigvalsh(b), np.linalg.eigvalsh(b), np.float64) < LIMIT


def _phase_names(path):
    """The phase events of a one-stage trace, in file order (json.load
    checks that the file is valid JSON)."""
    with open(path) as f:
        doc = json.load(f)
    assert doc["displayTimeUnit"] == "ms"
    assert doc["otherData"]["trace_level"] == "phase", doc["otherData"]
    events = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    for e in events:
        assert e["dur"] >= 0 and e["args"]["stage"] in ("reduce", "solve", "back_transform"), e
    return [e["name"] for e in events]


@pytest.mark.parametrize("n", [300, 700])
def test_trace_changes_nothing_but_the_trace(n, rng, tmp_path):
    # Issue 58: a traced call took the two-stage graph where the untraced one
    # took the one-stage path, so the bits differed. Both orders are below the
    # one-stage crossover (300: inline; 700: as a stoppable task).
    a = symmetric("random", n, rng)
    w, v = eigenflow.eigh(a)
    tw, tv = eigenflow.eigh(a, trace=tmp_path / "eigh.json")
    assert w.tobytes() == tw.tobytes() and v.tobytes() == tv.tobytes()
    assert _phase_names(tmp_path / "eigh.json") == ["sytrd", "stedc", "ormtr"]
    w = eigenflow.eigvalsh(a)
    assert w.tobytes() == eigenflow.eigvalsh(a, trace=tmp_path / "values.json").tobytes()
    assert _phase_names(tmp_path / "values.json") == ["sytrd", "sterf"]
    b = rng.standard_normal((n + 100, n))
    u, s, vh = eigenflow.svd(b)
    tu, ts, tvh = eigenflow.svd(b, trace=tmp_path / "svd.json")
    assert u.tobytes() == tu.tobytes() and s.tobytes() == ts.tobytes()
    assert vh.tobytes() == tvh.tobytes()
    assert _phase_names(tmp_path / "svd.json") == ["gebrd", "bdsdc", "ormbr_q", "ormbr_p"]


def test_trace_refuses_a_missing_directory(rng, tmp_path):
    # Issue 58: trace= made every missing directory; now a missing one is a
    # ValueError naming it, on both paths, and nothing is created.
    missing = tmp_path / "no" / "such"
    for n, f in [(50, eigenflow.eigh), (1600, eigenflow.eigvalsh), (300, eigenflow.svd)]:
        a = symmetric("random", n, rng)
        with pytest.raises(ValueError, match="does not exist"):
            f(a, trace=missing / "t.json")
        assert not (tmp_path / "no").exists(), f"{f.__name__} at {n} created it"


THREADS_MESSAGE = "the runtime runs 1 to 1024 CPU worker threads"


def test_threads_one_rule_one_message(rng):
    # Issue 58: 1025 threads ran on the one-stage path but were refused on the
    # graph path; 100000 threads on a 10 x 10 were a MemoryError ("does not
    # fit (195 GiB)"); -1 was an OverflowError; True was accepted.
    small = symmetric("random", 10, rng)
    graph_sized = symmetric("random", 1600, rng)  # eigenvalues: the graph path
    stack = rng.standard_normal((3, 4, 4))
    calls = [
        lambda t: eigenflow.eigh(small, threads=t),
        lambda t: eigenflow.eigvalsh(graph_sized, threads=t),
        lambda t: eigenflow.svd(small, threads=t),
        lambda t: eigenflow.batched_svd(stack, threads=t),
    ]
    for call in calls:
        for t in (1025, 100_000, 0, -1, 2**70, -(2**70)):
            with pytest.raises(ValueError, match=THREADS_MESSAGE) as e:
                call(t)
            if abs(t) < 2**63:
                assert f"threads = {t}:" in str(e.value), e.value
        for t in (True, False, np.bool_(True), 2.0, "2"):
            with pytest.raises(TypeError, match="threads must be an integer"):
                call(t)
        call(1)
        call(np.int64(2))


def _quiet_after(t0, limit):
    """Seconds from ``t0`` until this process stops using the CPU (under
    20 ms of CPU time in the last 250 ms, looked at every 50 ms: long enough
    that a busy thread descheduled by other load on the machine does not
    pass for a stopped one), or None within ``limit`` seconds."""
    samples = [(time.perf_counter(), time.process_time())]
    while samples[-1][0] - t0 < limit:
        time.sleep(0.05)
        now = (time.perf_counter(), time.process_time())
        samples.append(now)
        old = [s for s in samples if now[0] - s[0] >= 0.25]
        if old and now[1] - old[-1][1] < 0.02:
            return old[-1][0] - t0
    return None


def test_keyboard_interrupt_stops_a_one_stage_solve(rng, tmp_path):
    # Issue 58: a one-stage eigh abandoned on Ctrl-C kept burning a core until
    # it finished. Now it stops at the end of its current phase. With vectors
    # at n = 2500 (one-stage), the reduction (sytrd) is most of the time: the
    # call is interrupted during it, and the process must go quiet about when
    # sytrd ends, well before the whole solve would have ended.
    a = symmetric("random", 2500, rng)
    eigenflow.eigh(a, trace=tmp_path / "t.json")  # the phases' times, uninterrupted
    with open(tmp_path / "t.json") as f:
        phases = {e["name"]: e for e in json.load(f)["traceEvents"] if e["ph"] == "X"}
    assert list(phases) == ["sytrd", "stedc", "ormtr"], list(phases)
    sytrd_end = (phases["sytrd"]["ts"] + phases["sytrd"]["dur"]) / 1e6
    total = (phases["ormtr"]["ts"] + phases["ormtr"]["dur"]) / 1e6
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(min(0.3, sytrd_end / 3), _thread.interrupt_main)
    t0 = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            eigenflow.eigh(a)
    finally:
        signal.signal(signal.SIGINT, previous)
    raised = time.perf_counter() - t0
    timer.join()
    quiet = _quiet_after(t0, 3 * total + 2)
    print(f"sytrd ends {sytrd_end:.2f} s, solve {total:.2f} s; raised at {raised:.2f} s, quiet at {quiet} s")
    assert raised < sytrd_end, "KeyboardInterrupt waited for the phase"
    assert quiet is not None, "the abandoned solve kept the CPU busy"
    assert quiet < (sytrd_end + total) / 2 + 0.1, (quiet, sytrd_end, total)
    b = symmetric("random", 50, rng)
    assert value_ratio(b, eigenflow.eigvalsh(b), np.linalg.eigvalsh(b), np.float64) < LIMIT
