"""The input check shared by ``eigenflow.numpy`` and ``eigenflow.scipy``:
whether eigenflow can serve an array exactly as numpy/scipy would, and if
not, the reason it goes to the original function."""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from . import _report

__all__ = ["matrix_or_reason", "Delegate"]


class Delegate(Exception):
    """Raised inside an interface function to hand the call to the original;
    its argument is the reason counted in the report."""


def _computed_dtype(dtype: np.dtype, scipy: bool) -> Optional[np.dtype]:
    """The real dtype the original computes ``dtype`` in, or None for one
    eigenflow does not serve. numpy (``_commonType``): float32 and float64 as
    they are, integers and bool in float64, float16 refused (numpy raises).
    scipy (its LAPACK type choice, ``np.promote_types(dtype, float32)``):
    float16, bool and integers up to 16 bits in float32, wider integers in
    float64."""
    kind, size = dtype.kind, dtype.itemsize
    if kind == "f" and size in (4, 8):
        return dtype
    if scipy and (kind in "iub" or (kind == "f" and size == 2)):
        return np.promote_types(dtype, np.float32)
    if not scipy and kind in "iub":
        return np.dtype(np.float64)
    return None


def _dtype_reason(dtype: np.dtype) -> str:
    if dtype.kind == "c":
        return "complex input (issue 62)"
    return f"dtype {dtype} (eigenflow computes float32 and float64)"


def matrix_or_reason(
    a,
    *,
    square: bool,
    finite: bool,
    stacked: bool = False,
    scipy: bool = False,
    hermitian: bool = False,
) -> Tuple[Optional[np.ndarray], str]:
    """``(x, "")`` with ``x`` a plain float32/float64 matrix (or, with
    ``stacked``, a stack ``(..., m, n)`` of them) eigenflow serves (other
    real dtypes converted as numpy, or with ``scipy`` as scipy, converts
    them: :func:`_computed_dtype`), or ``(None, reason)``. Delegated: ndarray
    subclasses and objects that dispatch numpy functions themselves (masked
    arrays, dask, ...: the original knows their rules; the numpy drop-in
    unwraps the subclasses numpy itself computes on as ndarrays first),
    other dtypes (complex, object, longdouble; float16 for numpy), stacked
    input unless ``stacked``, 1-D input,
    non-square input to an
    eigensolver (the original raises its error), and, with ``finite``,
    non-finite entries (numpy's own handling: NaN results or its error;
    scipy's ``check_finite`` error). With ``hermitian`` (the eigensolvers),
    a complex64/complex128 matrix is served as it is (eigenflow's Hermitian
    EVD); a stack of them is delegated (the batched routes are real)."""
    if isinstance(a, np.ndarray):
        if type(a) is not np.ndarray:
            return None, f"ndarray subclass {type(a).__name__}"
    elif hasattr(type(a), "__array_function__"):
        return None, f"array type {type(a).__name__} with its own dispatch"
    try:
        x = np.asarray(a)
    except Exception:  # the original raises its own error for it
        return None, "input numpy cannot convert"
    complex_matrix = hermitian and x.dtype.kind == "c" and x.dtype.itemsize in (8, 16)
    dtype = x.dtype if complex_matrix else _computed_dtype(x.dtype, scipy)
    if dtype is None:
        return None, _dtype_reason(x.dtype)
    if complex_matrix and x.ndim > 2:
        return None, "complex stack (issue 62: the batched routes are real)"
    if x.ndim > 2 and not stacked:
        return None, "stacked input (issue 61)"
    if x.ndim < 2:
        return None, f"{x.ndim}-D input"
    if square and x.shape[-2] != x.shape[-1]:
        return None, "non-square input"
    if x.dtype != dtype:
        x = x.astype(dtype)
    if finite and not np.isfinite(x).all():
        return None, "non-finite entries"
    return x, ""


def call(function: str, original, serve, args: tuple, kwargs: dict):
    """Runs ``serve()`` and counts it served; on :class:`Delegate` (or
    eigenflow's non-convergence, which LAPACK may not share) counts the
    delegation and returns ``original(*args, **kwargs)``."""
    try:
        result = serve()
    except Delegate as d:
        reason = str(d)
    except np.linalg.LinAlgError:
        reason = "eigenflow did not converge"
    except BaseException:
        # eigenflow's own error for this input (ValueError, MemoryError,
        # KeyboardInterrupt): served, by an error.
        _report.served(function)
        raise
    else:
        _report.served(function)
        return result
    _report.delegated(function, reason)
    return original(*args, **kwargs)
