"""What the drop-in interfaces (``eigenflow.numpy``, ``eigenflow.scipy``)
served and what they handed to the original numpy/scipy function, and why.

Every call of an interface function is counted once: *served* when eigenflow
computed the result (or raised its error for the input), *delegated* with a
reason when the original function was called instead. Delegation is how the
interfaces stay exact where eigenflow cannot serve (complex, stacked, ``b``,
float16, keyword combinations the original rejects): never a wrong answer.
``EIGENFLOW_PATCH_STRICT=1`` turns each delegation into a
:class:`DelegationError`, to find what a test suite would delegate.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from typing import Dict, Tuple

__all__ = ["DelegationError", "PatchReport", "patch_report", "reset_patch_report"]

_lock = threading.Lock()
_served: Counter = Counter()
_delegated: Counter = Counter()


class DelegationError(RuntimeError):
    """A call that eigenflow would have delegated to the original function,
    raised instead because ``EIGENFLOW_PATCH_STRICT=1`` is set."""


class PatchReport:
    """Counts since the start of the process (or the last
    :func:`reset_patch_report`): ``served[function]`` and
    ``delegated[(function, reason)]``. ``str()`` gives a table."""

    def __init__(self, served: Dict[str, int], delegated: Dict[Tuple[str, str], int]):
        self.served = served
        self.delegated = delegated

    @property
    def n_served(self) -> int:
        """Calls computed by eigenflow."""
        return sum(self.served.values())

    @property
    def n_delegated(self) -> int:
        """Calls handed to the original function."""
        return sum(self.delegated.values())

    def as_dict(self) -> dict:
        """Plain data (JSON-serialisable): totals, and per function/reason."""
        return {
            "served": self.n_served,
            "delegated": self.n_delegated,
            "served_by_function": dict(sorted(self.served.items())),
            "delegated_by_reason": [
                {"function": f, "reason": r, "calls": c}
                for (f, r), c in sorted(self.delegated.items())
            ],
        }

    def __str__(self) -> str:
        total = self.n_served + self.n_delegated
        share = f" ({100.0 * self.n_served / total:.1f}% served)" if total else ""
        lines = [f"eigenflow patch: {self.n_served} served, {self.n_delegated} delegated{share}"]
        for f, c in sorted(self.served.items()):
            lines.append(f"  served     {c:6d}  {f}")
        for (f, r), c in sorted(self.delegated.items()):
            lines.append(f"  delegated  {c:6d}  {f}: {r}")
        return "\n".join(lines)

    __repr__ = __str__


def patch_report() -> PatchReport:
    """How many calls of the drop-in functions eigenflow served and how many
    it delegated to numpy/scipy, with the reasons. Print it for a table."""
    with _lock:
        return PatchReport(dict(_served), dict(_delegated))


def reset_patch_report() -> None:
    """Sets every count back to zero."""
    with _lock:
        _served.clear()
        _delegated.clear()


def served(function: str) -> None:
    """Counts one call of ``function`` computed by eigenflow."""
    with _lock:
        _served[function] += 1


def strict() -> bool:
    """``EIGENFLOW_PATCH_STRICT`` set to anything but empty or ``0``: read at
    each call, so a test can switch it."""
    return os.environ.get("EIGENFLOW_PATCH_STRICT", "") not in ("", "0")


def delegated(function: str, reason: str) -> None:
    """Counts one call of ``function`` handed to the original for
    ``reason``, or raises :class:`DelegationError` in strict mode."""
    if strict():
        raise DelegationError(
            f"{function}: eigenflow would delegate this call to the original ({reason}); "
            "EIGENFLOW_PATCH_STRICT is set"
        )
    with _lock:
        _delegated[(function, reason)] += 1
