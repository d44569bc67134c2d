"""dtypes, errors, the GIL released, Ctrl-C, version."""

import _thread
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
    for f in (eigenflow.eigh, eigenflow.eigvalsh, eigenflow.svd, eigenflow.svdvals):
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
        eigenflow.svd(np.ones((2, 3, 4)))


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


@pytest.mark.parametrize("how", ["auto", "graph"])
def test_gil_released(how, rng, tmp_path):
    # With the GIL held for the whole call the counter would advance only in
    # the interpreter's switch intervals before the call took the GIL: a
    # handful of iterations. Released, it runs for the whole solve.
    a = symmetric("random", 1500, rng)
    trace = tmp_path / "t.json" if how == "graph" else None
    during = count_while(lambda: eigenflow.eigh(a, trace=trace))
    assert during > 100_000, during


def test_keyboard_interrupt(rng, tmp_path):
    # Ctrl-C (interrupt_main sets the same flag SIGINT does) during a long
    # graph run raises KeyboardInterrupt, and the runtime serves the next call.
    # n = 3000 (about 1.5 s on 2 cores): at n = 2000 (about 0.6 s) a timer
    # thread delayed on a loaded 2-core machine once fired after the run.
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
            eigenflow.eigh(a, trace=tmp_path / "t.json")
    finally:
        signal.signal(signal.SIGINT, previous)
    print(f"KeyboardInterrupt {time.perf_counter() - t0 - 0.3:.3f} s after the interrupt")
    timer.join()
    b = symmetric("random", 50, rng)
    assert value_ratio(b, eigenflow.eigvalsh(b), np.linalg.eigvalsh(b), np.float64) < LIMIT
