"""pytest plugin of ``scripts/patched-suites.py --timing`` (issue 66's
per-call rule: no patched call above 50 ms may be more than 10% slower than
the original function on the same arguments).

Loaded with ``-p patched_call_timing`` under ``python -m eigenflow.patch``,
it wraps the drop-ins' dispatcher (``eigenflow._dropin.call``, as bound in
``eigenflow.numpy`` and ``eigenflow.scipy``). Every call eigenflow serves
in more than :data:`THRESHOLD` seconds is timed again against the original
function on copies of the same arguments, alternated, :data:`SAMPLES` times
each; the minimum of each side is kept (the least disturbed run on a shared
machine; a first call that paid a one-off cost shows a much smaller
minimum, and the rule applies to the minimum). At exit the rows go, as JSON, to the path in
``EIGENFLOW_CALL_TIMING``. The extra calls do not enter the patch report.
"""

from __future__ import annotations

import atexit
import copy
import json
import os
import time

import numpy as np

import eigenflow.numpy as _enp
import eigenflow.scipy as _esp
from eigenflow import _dropin

#: Calls served in less than this many seconds are not timed again.
THRESHOLD = 0.05
#: Timed calls per side for a call above the threshold (the served side
#: counts its first call).
SAMPLES = 3

_rows: list = []


def _describe(args: tuple, kwargs: dict) -> str:
    """The call's arguments in a line: arrays by shape and dtype, the
    keywords that differ from ``None``/``False``."""

    def one(x):
        if isinstance(x, np.ndarray):
            return f"{x.dtype}{list(x.shape)}"
        return repr(x)

    parts = [one(a) for a in args]
    parts += [f"{k}={one(v)}" for k, v in kwargs.items() if v is not None and v is not False]
    return ", ".join(parts)


def _seconds(f) -> float:
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def _compare(function, original, serve, args, kwargs, first: float) -> None:
    """Times the served call and the original, alternated, and keeps a row."""

    def run_original():
        # Copies: the original may overwrite its input (overwrite_a=True).
        original(*copy.deepcopy(args), **copy.deepcopy(kwargs))

    ours, theirs = [first], []
    for _ in range(SAMPLES):
        theirs.append(_seconds(run_original))
        if len(ours) < SAMPLES:
            ours.append(_seconds(serve))
    _rows.append(
        {
            "function": function,
            "call": _describe(args, kwargs),
            "test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0],
            "first_s": first,
            "eigenflow_s": min(ours),
            "original_s": min(theirs),
        }
    )


def timed_call(function, original, serve, args, kwargs):
    """``eigenflow._dropin.call``, timing the served calls (see the module)."""
    served = []

    def serve_and_mark():
        result = serve()
        served.append(True)
        return result

    t = time.perf_counter()
    result = _dropin.call(function, original, serve_and_mark, args, kwargs)
    elapsed = time.perf_counter() - t
    if served and elapsed > THRESHOLD:
        _compare(function, original, serve, args, kwargs, elapsed)
    return result


def _write() -> None:
    path = os.environ.get("EIGENFLOW_CALL_TIMING")
    if path:
        with open(path, "w") as f:
            json.dump(_rows, f)


_enp.call = timed_call
_esp.call = timed_call
atexit.register(_write)
