"""``eigenflow.patch()``: numpy's and scipy's ``eigh``, ``eigvalsh``, ``svd``
and ``svdvals`` replaced in-process by :mod:`eigenflow.numpy` and
:mod:`eigenflow.scipy`, so that libraries built on them (scikit-learn,
statsmodels, user scripts) run on eigenflow with one line.

What ``patch()`` reaches: every module-level name, in every module imported
so far, that is bound to one of the original function objects, among them
the attributes of ``numpy.linalg`` and ``scipy.linalg`` and the names that
``from scipy.linalg import eigh`` bound in a library imported before the
call (scikit-learn's KernelPCA does this at import); and every module
imported later, since it finds the replacements in ``numpy.linalg`` and
``scipy.linalg``. ``scipy.linalg`` is imported by ``patch()`` when scipy is
installed, so that a later ``import scipy.linalg`` cannot bring back an
original.

What it does not reach: the defining modules ``numpy.linalg._linalg``,
``scipy.linalg._decomp`` and ``scipy.linalg._decomp_svd`` themselves (their
own internal calls, and imports from them, keep the originals, which is
also what the delegated calls run), references held anywhere but a module's
global namespace (a class attribute, a default argument, a closure, a list
or dict), numpy's ``ndarray`` methods and the ``numpy.linalg.linalg``
deprecation alias, and code that calls LAPACK directly
(``scipy.linalg.lapack``, compiled extensions).

``patch()`` is idempotent and thread-safe; ``unpatch()`` puts the original
function objects back (identity) by the same scan: every module-level name
holding a replacement, whether ``patch()`` rebound it or a module imported
while patched bound it; a name rebound since by someone else is left alone.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import threading
from typing import Dict, Iterator, Tuple

__all__ = ["patch", "unpatch", "patched", "is_patched"]

_lock = threading.RLock()
_active = False
# Open patched() blocks, and whether the patch is theirs (made by the first
# of them) rather than an explicit patch()'s: the last to close undoes it.
_contexts = 0
_by_contexts = False

# Modules never rebound: the ones defining the originals, and eigenflow's
# own (which keep the originals to delegate to).
_SKIP_PREFIXES = ("eigenflow.", "numpy.linalg._linalg", "scipy.linalg._decomp")
_SKIP = {"eigenflow", "numpy.linalg.linalg"}


def _pairs() -> Dict[int, Tuple[object, object]]:
    """``id(original) -> (original, replacement)`` for numpy, and scipy
    when it is installed (imported here)."""
    from . import numpy as enp

    pairs = [(enp.ORIGINALS[k], enp.REPLACEMENTS[k]) for k in enp.ORIGINALS]
    if importlib.util.find_spec("scipy") is not None:
        from . import scipy as esp

        pairs += [(esp.ORIGINALS[k], esp.REPLACEMENTS[k]) for k in esp.ORIGINALS]
    return {id(o): (o, r) for o, r in pairs}


def _skipped(name: str) -> bool:
    return name in _SKIP or name.startswith(_SKIP_PREFIXES)


def _rebind_all(pairs: Dict[int, Tuple[object, object]]) -> None:
    """Rebinds, in every imported module's namespace, each name bound to the
    first of a pair to the second: the scan that reaches ``from scipy.linalg
    import eigh`` (and, with the pairs swapped, undoes it)."""
    for mod_name, module in list(sys.modules.items()):
        if _skipped(mod_name):
            continue
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for name, value in list(namespace.items()):
            pair = pairs.get(id(value))
            if pair is not None and pair[0] is value:
                namespace[name] = pair[1]


def patch() -> None:
    """Replaces ``numpy.linalg``'s and ``scipy.linalg``'s ``eigh``,
    ``eigvalsh``, ``svd`` and ``svdvals`` by eigenflow's drop-ins everywhere
    the module docstring says (calls eigenflow cannot serve still go to the
    originals, counted in :func:`eigenflow.patch_report`). A second call
    while patched does nothing."""
    global _by_contexts
    with _lock:
        _by_contexts = False
        _apply()


def _apply() -> None:
    global _active
    with _lock:
        if not _active:
            _rebind_all(_pairs())
            _active = True


def unpatch() -> None:
    """Puts the original function objects back wherever a module-level name
    holds a replacement. Does nothing when not patched."""
    global _active
    with _lock:
        if not _active:
            return
        back = {id(r): (r, o) for o, r in _pairs().values()}
        _rebind_all(back)
        _active = False


def is_patched() -> bool:
    """Whether :func:`patch` is in effect."""
    return _active


@contextlib.contextmanager
def patched() -> Iterator[None]:
    """``with eigenflow.patched(): ...`` runs the block patched. Blocks may
    nest and overlap across threads: the patch made by the first block to
    open is undone when the last one closes, and a patch made by
    :func:`patch` is left in place."""
    global _contexts, _by_contexts
    with _lock:
        if _contexts == 0:
            _by_contexts = not _active
        _contexts += 1
        _apply()
    try:
        yield
    finally:
        with _lock:
            _contexts -= 1
            if _contexts == 0 and _by_contexts:
                unpatch()
