"""eigenflow: the dense symmetric eigendecomposition and the SVD of the Rust
crate ``eigenflow`` (a task-graph runtime for the two-stage reductions), with
numpy's names and results.

    >>> import numpy as np, eigenflow
    >>> a = np.random.rand(500, 500); a = a + a.T
    >>> w, v = eigenflow.eigh(a)
    >>> np.allclose(a @ v, v * w)
    True

Every call takes float32 or float64 arrays (the result has the input's
dtype; integer and boolean arrays are converted to float64 as numpy.linalg
does; float16 and other dtypes raise ValueError; ``eigh`` and ``eigvalsh``
also take complex128 and complex64 matrices, Hermitian, with numpy's
conventions: real eigenvalues, complex eigenvectors; complex stacks and a
complex ``svd`` raise ValueError for now), in C or Fortran
order or any strided view (read in place, no copy), releases the GIL while it
computes, and answers Ctrl-C with KeyboardInterrupt (the run is cancelled).
Errors: ValueError (shape, dtype, non-finite entry, bad subset),
MemoryError (the problem does not fit; the message has the figures),
numpy.linalg.LinAlgError (no convergence).

``threads=None`` runs on one process-wide runtime using every core, started
at the first call and reused; ``threads=k`` (an integer, 1 to 1024: the
crate's one rule, ValueError outside it; TypeError for a bool or a
non-integer) on a runtime of k threads, also kept for the life of the
process. ``trace=path`` writes a Chrome trace of the call (the task graph's
tasks, or the one-stage path's phases below the crossovers) into an existing
directory, and changes nothing else: the same path, the same bits.

Drop-ins for existing code: ``eigenflow.numpy`` and ``eigenflow.scipy`` have
numpy's and scipy's ``eigh``, ``eigvalsh``, ``svd`` and ``svdvals`` with their
exact signatures (what eigenflow cannot serve goes to the original, counted);
:func:`patch` puts them in place of numpy's and scipy's own in-process
(:func:`unpatch`, :func:`patched`, :func:`patch_report`; ``python -m
eigenflow.patch script.py``).
"""

from __future__ import annotations

import operator
import os
import re
from typing import NamedTuple, Optional, Tuple

import numpy as np

from . import _eigenflow as _native

__version__: str = _native.__version__

__all__ = [
    "DelegationError",
    "EighResult",
    "PatchReport",
    "SVDResult",
    "eigh",
    "eigvalsh",
    "svd",
    "svdvals",
    "batched_svd",
    "patch",
    "unpatch",
    "patched",
    "is_patched",
    "patch_report",
    "__version__",
]


class EighResult(NamedTuple):
    """Eigenvalues (ascending) and eigenvectors (column ``j`` for value ``j``),
    as numpy 2's ``numpy.linalg.eigh`` returns them."""

    eigenvalues: np.ndarray
    eigenvectors: np.ndarray


class SVDResult(NamedTuple):
    """``a = U @ diag(S) @ Vh``, as numpy 2's ``numpy.linalg.svd`` returns it
    (``S`` descending)."""

    U: np.ndarray
    S: np.ndarray
    Vh: np.ndarray


def _float_array(a, ndim: Optional[int], what: str, complex_ok: bool = False) -> np.ndarray:
    """``a`` as a float32/float64 array of ``ndim`` dimensions (``None``: at
    least 2, a matrix or a stack of them): floats kept
    (native byte order, aligned), integers and booleans converted to float64
    like numpy.linalg, complex64/complex128 kept when ``complex_ok``,
    anything else a ValueError."""
    a = np.asarray(a)
    kind, size = a.dtype.kind, a.dtype.itemsize
    if (kind == "f" and size in (4, 8)) or (complex_ok and kind == "c" and size in (8, 16)):
        if not a.dtype.isnative or not a.flags.aligned:
            a = a.astype(a.dtype.newbyteorder("="))
    elif kind in "biu":
        a = a.astype(np.float64)
    else:
        raise ValueError(
            f"{what}: unsupported dtype {a.dtype}; eigenflow computes in float32 or "
            "float64 (integer and boolean arrays are converted to float64)"
        )
    if ndim is None and a.ndim < 2:
        raise ValueError(
            f"{what}: expected a matrix or a stack of matrices (at least 2-D), got {a.ndim}-D "
            f"of shape {a.shape}"
        )
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{what}: expected a {ndim}-D array, got {a.ndim}-D of shape {a.shape}")
    return a


def _square(a, what: str, complex_ok: bool = False) -> np.ndarray:
    a = _float_array(a, 2, what, complex_ok)
    if a.shape[0] != a.shape[1]:
        raise ValueError(f"{what}: expected a square matrix, got shape {a.shape}")
    return a


def _subset(subset_by_index, n: int) -> Optional[Tuple[int, int]]:
    """scipy's ``subset_by_index=(lo, hi)``: eigenvalues ``lo`` to ``hi``
    *inclusive* in ascending order, ``0 <= lo <= hi <= n - 1``."""
    if subset_by_index is None:
        return None
    try:
        lo, hi = (operator.index(x) for x in subset_by_index)
    except (TypeError, ValueError):
        raise ValueError(
            f"subset_by_index must be a pair of integers (lo, hi), got {subset_by_index!r}"
        ) from None
    if not 0 <= lo <= hi <= n - 1:
        raise ValueError(
            f"subset_by_index=({lo}, {hi}) needs 0 <= lo <= hi <= n - 1 = {n - 1}"
        )
    return lo, hi


def _value_range(subset_by_value, dtype) -> Optional[Tuple[float, float]]:
    """scipy's ``subset_by_value=(lo, hi)``: the eigenvalues in the half-open
    ``(lo, hi]``, ``-inf <= lo < hi <= inf``, as the crate's ``[lo', hi')``:
    each bound moved up by one unit in the last place of the input's dtype,
    so that a value exactly on a bound falls on scipy's side (values within
    rounding of a bound may fall on either side, as in LAPACK's bisection)."""
    if subset_by_value is None:
        return None
    try:
        lo, hi = (float(x) for x in subset_by_value)
    except (TypeError, ValueError):
        raise ValueError(
            f"subset_by_value must be a pair of numbers (lo, hi), got {subset_by_value!r}"
        ) from None
    if not -np.inf <= lo < hi <= np.inf:
        raise ValueError(f"subset_by_value=({lo}, {hi}) needs -inf <= lo < hi <= inf")
    up = np.asarray(np.inf, dtype)
    return (
        float(np.nextafter(np.asarray(lo, dtype), up)),
        float(np.nextafter(np.asarray(hi, dtype), up)),
    )


def _selection(subset_by_index, subset_by_value, a: np.ndarray):
    """The native side's ``(index range, value range)``: at most one given."""
    if subset_by_index is not None and subset_by_value is not None:
        raise ValueError("give subset_by_index or subset_by_value, not both")
    return _subset(subset_by_index, a.shape[0]), _value_range(subset_by_value, _real_dtype(a))


def _real_dtype(a: np.ndarray):
    """The dtype of the eigenvalues of ``a``: its own, or the real type of a
    complex one (float64 for complex128, float32 for complex64)."""
    return a.real.dtype


def _no_complex_stack(a: np.ndarray, what: str) -> None:
    if a.dtype.kind == "c":
        raise ValueError(
            f"{what}: complex stacks are not supported yet (one complex matrix at a time)"
        )


def _trace(trace) -> Optional[str]:
    return None if trace is None else os.fspath(trace)


# The native side takes the count as a signed 64-bit integer and applies the
# crate's rule (1 to 1024) with its message; larger magnitudes are out of
# range anyway and are sent as the nearest 64-bit value.
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def _threads(threads) -> Optional[int]:
    """``threads`` as an integer for the native side (which checks its
    range), or None. A bool is refused (``threads=True`` is not a count), as
    is anything that is not an integer."""
    if threads is None:
        return None
    if isinstance(threads, (bool, np.bool_)):
        raise TypeError(
            f"threads must be an integer thread count or None, got the bool {threads!r}"
        )
    try:
        t = operator.index(threads)
    except TypeError:
        raise TypeError(
            f"threads must be an integer thread count or None, got {type(threads).__name__} "
            f"{threads!r}"
        ) from None
    return min(max(t, _I64_MIN), _I64_MAX)


def _problem_type(t) -> int:
    """scipy's ``type`` of the generalized problem: 1, 2 or 3 (ValueError
    otherwise, as scipy)."""
    if isinstance(t, (bool, np.bool_)) or t not in (1, 2, 3):
        raise ValueError(f'"type" keyword only accepts 1, 2, and 3, got {t!r}')
    return int(t)


def _pencil(a, b, what: str) -> Tuple[np.ndarray, np.ndarray]:
    """``a`` and ``b`` as square matrices of one shape and one dtype (float32
    only when both are float32, as scipy's LAPACK call promotes)."""
    a = _square(a, what)
    b = _square(b, f"{what} (b)")
    if b.shape != a.shape:
        raise ValueError(f"{what}: wrong b dimensions {b.shape}, should be {a.shape}")
    dtype = np.result_type(a.dtype, b.dtype)
    return a.astype(dtype, copy=False), b.astype(dtype, copy=False)


def _generalized(a, b, lower, vectors: bool, type, subset_by_index, subset_by_value, threads,
                 trace, what: str):
    """``(w, v)`` of the generalized problem of ``a`` and ``b`` (``v`` None
    without vectors) by the crate's one graph (``pipeline::sygv``)."""
    if np.ndim(a) > 2 or np.ndim(b) > 2:
        raise ValueError(f"{what}: the generalized problem (b) takes one pair of matrices, "
                         "not a stack")
    t = _problem_type(type)
    a, b = _pencil(a, b, what)
    n = a.shape[0]
    sub, vr = _selection(subset_by_index, subset_by_value, a)
    if n == 0:
        return np.empty(0, a.dtype), np.empty((0, 0), a.dtype, order="F")
    w, v = _native.eigh_generalized(
        a, b, bool(lower), vectors, t, sub, _threads(threads), _trace(trace), vr
    )
    if not vectors:
        return w, None
    return w, v.reshape((n, w.shape[0]), order="F")


def eigh(
    a,
    b=None,
    *,
    lower: bool = True,
    type: int = 1,
    subset_by_index=None,
    subset_by_value=None,
    threads=None,
    trace=None,
) -> EighResult:
    """Eigenvalues and eigenvectors of the real symmetric matrix ``a``, or of
    the complex Hermitian one (complex128, complex64: real eigenvalues,
    complex eigenvectors; as numpy's and LAPACK's, only the real part of the
    diagonal is read), or
    the generalized problem of ``a`` and the symmetric positive definite
    ``b``.

    Like ``numpy.linalg.eigh(a, UPLO="L" if lower else "U")``: only the lower
    (``lower=True``) or upper triangle is read. Returns
    ``EighResult(eigenvalues, eigenvectors)``: values ascending, column ``j`` of
    the (Fortran-ordered) ``eigenvectors`` belongs to ``eigenvalues[j]``.

    ``subset_by_index=(lo, hi)`` computes eigenpairs ``lo`` to ``hi``
    inclusive (scipy's convention; 0-based, ascending order) at the cost of the
    eigenvalues plus the ``n x k`` back-transformation.
    ``subset_by_value=(lo, hi)`` computes the eigenpairs whose eigenvalues lie
    in ``(lo, hi]`` (scipy's convention; bounds may be infinite), found by
    Sturm counts on the tridiagonal (a value within rounding of a bound may
    fall on either side). ``threads``: ``None``
    for the process-wide runtime on every core, or a thread count.
    ``trace``: a path where a Chrome trace (``chrome://tracing``, Perfetto) of
    the call is written: the task graph's tasks, or below the one-stage
    crossover the phases of the one-stage path (``sytrd``, ``stedc``,
    ``ormtr``, ...). The call takes the same path and computes the same bits
    as without it. Its directory must exist (ValueError otherwise).

    A stack ``(..., n, n)`` of matrices (numpy's stacked ``eigh``) returns
    ``eigenvalues`` ``(..., n)`` and ``eigenvectors`` ``(..., n, n)``, all
    solved by one call of the crate's batched solver (``eigh_batched``:
    Jacobi in SIMD lanes for small orders, the one-stage path per matrix
    above); the subsets are not offered for stacks (ValueError). An error in
    one matrix names its index in the stack (a tuple for more than one
    stack dimension).

    With ``b`` (``scipy.linalg.eigh(a, b, type=...)``), the generalized
    problem of type 1 (``a x = w b x``), 2 (``a b x = w x``) or 3
    (``b a x = w x``), by the Cholesky method of LAPACK's ``sygvd`` as one
    task graph: the eigenvectors are ``b``-orthonormal (``v.T @ b @ v = I``;
    for type 3, ``v.T @ inv(b) @ v = I``), as scipy's. ``lower`` says which
    triangle of both is read; the subsets select eigenvalues of the pencil.
    The result is float32 only when both inputs are. A ``b`` that is not
    positive definite raises numpy.linalg.LinAlgError naming the leading
    minor that fails; shapes that differ, a ``type`` other than 1, 2 or 3,
    and stacks raise ValueError. The accuracy falls with ``cond(b)`` as
    LAPACK's does (the limit of the Cholesky method; ``docs/generalized.md``
    has the figures).
    """
    if b is not None:
        return EighResult(*_generalized(a, b, lower, True, type, subset_by_index,
                                        subset_by_value, threads, trace, "eigh"))
    a = _float_array(a, None, "eigh", complex_ok=True)
    if a.ndim > 2:
        _no_complex_stack(a, "eigh")
        _no_selection("eigh", subset_by_index, subset_by_value)
        w, v = _stacked_eigh(a, lower, True, threads, trace, "eigh")
        return EighResult(w, v)
    a = _square(a, "eigh", complex_ok=True)
    n = a.shape[0]
    sub, vr = _selection(subset_by_index, subset_by_value, a)
    if n == 0:
        return EighResult(np.empty(0, _real_dtype(a)), np.empty((0, 0), a.dtype, order="F"))
    w, v = _native.eigh(a, bool(lower), True, sub, _threads(threads), _trace(trace), vr)
    return EighResult(w, v.reshape((n, w.shape[0]), order="F"))


def eigvalsh(
    a,
    b=None,
    *,
    lower: bool = True,
    type: int = 1,
    subset_by_index=None,
    subset_by_value=None,
    threads=None,
    trace=None,
) -> np.ndarray:
    """Eigenvalues, ascending, of the real symmetric matrix ``a`` (its lower
    or upper triangle); ``numpy.linalg.eigvalsh``. With ``b``, those of the
    generalized problem (``scipy.linalg.eigvalsh(a, b, type=...)``).
    Arguments as :func:`eigh`; a stack ``(..., n, n)`` gives ``(..., n)``."""
    if b is not None:
        return _generalized(a, b, lower, False, type, subset_by_index, subset_by_value,
                            threads, trace, "eigvalsh")[0]
    a = _float_array(a, None, "eigvalsh", complex_ok=True)
    if a.ndim > 2:
        _no_complex_stack(a, "eigvalsh")
        _no_selection("eigvalsh", subset_by_index, subset_by_value)
        return _stacked_eigh(a, lower, False, threads, trace, "eigvalsh")[0]
    a = _square(a, "eigvalsh", complex_ok=True)
    n = a.shape[0]
    sub, vr = _selection(subset_by_index, subset_by_value, a)
    if n == 0:
        return np.empty(0, _real_dtype(a))
    w, _ = _native.eigh(a, bool(lower), False, sub, _threads(threads), _trace(trace), vr)
    return w


def _complete(q: np.ndarray) -> np.ndarray:
    """``q`` (``m x k``, orthonormal columns, or a stack of such) extended to
    an ``m x m`` orthogonal matrix: the complement is the trailing columns of
    the complete QR factor of ``q`` (numpy/LAPACK ``geqrf``/``orgqr``, which
    numpy loops over a stack itself)."""
    m, k = q.shape[-2:]
    if k == m:
        return q
    full, _ = np.linalg.qr(q, mode="complete")
    return np.concatenate([q, full[..., :, k:].astype(q.dtype, copy=False)], axis=-1)


def svd(a, full_matrices: bool = False, compute_uv: bool = True, *, threads=None, trace=None):
    """Singular value decomposition ``a = U @ diag(S) @ Vh`` of a real matrix
    of any shape; ``numpy.linalg.svd`` (note the default
    ``full_matrices=False``: the thin factors, ``U`` ``m x k`` and ``Vh``
    ``k x n`` with ``k = min(m, n)``, ``S`` descending).

    ``full_matrices=True`` completes the thin factor of the longer side to a
    square orthogonal matrix with numpy's QR (an extra ``O(m^2 k)``).
    ``compute_uv=False`` returns ``S`` only. ``threads`` and ``trace`` as in
    :func:`eigh`.

    A stack ``(..., m, n)`` (numpy's stacked ``svd``) gives ``U``
    ``(..., m, k)``, ``S`` ``(..., k)`` and ``Vh`` ``(..., k, n)`` (square
    factors with ``full_matrices=True``), all solved by one call of the
    crate's batched solver (``svd_batched``, as :func:`batched_svd`). An
    error in one matrix names its index in the stack.
    """
    a = _float_array(a, None, "svd")
    if a.ndim > 2:
        return _stacked_svd(a, full_matrices, compute_uv, threads, trace)
    m, n = a.shape
    k = min(m, n)
    if k == 0:
        s = np.empty(0, a.dtype)
        if not compute_uv:
            return s
        u = np.eye(m, dtype=a.dtype) if full_matrices else np.empty((m, 0), a.dtype)
        vh = np.eye(n, dtype=a.dtype) if full_matrices else np.empty((0, n), a.dtype)
        return SVDResult(u, s, vh)
    s, uv = _native.svd(a, bool(compute_uv), _threads(threads), _trace(trace))
    if not compute_uv:
        return s
    u = uv[0].reshape((m, k), order="F")
    vh = uv[1].reshape((k, n), order="F")
    if full_matrices:
        u = _complete(u)
        vh = _complete(np.ascontiguousarray(vh.T)).T
    return SVDResult(u, s, vh)


def svdvals(a, *, threads=None, trace=None) -> np.ndarray:
    """Singular values, descending, of a real matrix of any shape
    (``scipy.linalg.svdvals``, ``numpy.linalg.svd(a, compute_uv=False)``), or
    ``(..., k)`` for a stack ``(..., m, n)``."""
    return svd(a, compute_uv=False, threads=threads, trace=trace)


def _no_selection(what: str, subset_by_index, subset_by_value) -> None:
    if subset_by_index is not None or subset_by_value is not None:
        raise ValueError(
            f"{what}: subset_by_index and subset_by_value take one matrix, not a stack"
        )


def _flat_stack(x: np.ndarray):
    """The stack ``x`` (``(..., m, n)``, at least one matrix) as one flat
    buffer and whether each matrix in it is row-major: a C-ordered stack, or
    one whose matrices are each Fortran-ordered one after another, is read in
    place; any other layout is copied to C order first."""
    m, n = x.shape[-2:]
    b = x.size // (m * n)
    x3 = x.reshape((b, m, n)) if x.flags.c_contiguous else None
    if x3 is not None:
        return x3.reshape(-1), True
    t = np.swapaxes(x, -1, -2)
    if t.flags.c_contiguous:
        return t.reshape(-1), False
    return np.ascontiguousarray(x).reshape(-1), True


_BATCH_ITEM = re.compile(r"^matrix (\d+) of the batch: ")


def _name_item(e: BaseException, lead: Tuple[int, ...]) -> BaseException:
    """``e`` with the matrix it names given as its index in the stack
    (numpy's multi-index when the stack has more than one leading
    dimension), or ``e`` unchanged."""
    msg = str(e.args[0]) if e.args else ""
    hit = _BATCH_ITEM.match(msg)
    if hit is None or len(lead) == 1:
        return e
    idx = tuple(int(i) for i in np.unravel_index(int(hit.group(1)), lead))
    return type(e)(f"matrix {idx} of the stack: {msg[hit.end():]}")


def _native_stack(call, lead):
    """``call()``, with a batch item's error renamed by :func:`_name_item`."""
    try:
        return call()
    except (ValueError, np.linalg.LinAlgError) as e:
        named = _name_item(e, lead)
        if named is e:
            raise
        raise named from None


def _stacked_eigh(a: np.ndarray, lower, vectors: bool, threads, trace, what: str):
    """``(w, v)`` of the stack ``a`` (``(..., n, n)``; ``v`` None without
    vectors) by one native batched call."""
    *lead, m, n = a.shape
    if m != n:
        raise ValueError(f"{what}: expected a stack of square matrices, got shape {a.shape}")
    lead = tuple(lead)
    b = int(np.prod(lead))
    if b == 0 or n == 0:
        w = np.empty(lead + (n,), a.dtype)
        return w, (np.empty(lead + (n, n), a.dtype) if vectors else None)
    flat, row_major = _flat_stack(a)
    # The native side reads each matrix's lower triangle in the layout
    # given; the upper triangle is the lower one of the other layout.
    row_major = row_major == bool(lower)
    t, tr = _threads(threads), _trace(trace)
    w, v = _native_stack(
        lambda: _native.batched_eigh(flat, b, n, row_major, vectors, t, tr), lead
    )
    w = w.reshape(lead + (n,))
    if not vectors:
        return w, None
    # Each matrix column-major: the last two axes of a C-ordered stack
    # swapped (a view).
    return w, np.swapaxes(v.reshape(lead + (n, n)), -1, -2)


def _empty_svd(lead, m: int, n: int, dtype, full_matrices, compute_uv):
    """numpy's results for a stack with no matrix or of empty matrices."""
    k = min(m, n)
    s = np.empty(lead + (k,), dtype)
    if not compute_uv:
        return s
    if full_matrices:
        u = np.broadcast_to(np.eye(m, dtype=dtype), lead + (m, m)).copy()
        vh = np.broadcast_to(np.eye(n, dtype=dtype), lead + (n, n)).copy()
    else:
        u, vh = np.empty(lead + (m, k), dtype), np.empty(lead + (k, n), dtype)
    return SVDResult(u, s, vh)


def _stacked_svd(a: np.ndarray, full_matrices, compute_uv, threads, trace):
    """:func:`svd` of the stack ``a`` (``(..., m, n)``) by one native
    batched call."""
    *lead, m, n = a.shape
    lead = tuple(lead)
    k = min(m, n)
    b = int(np.prod(lead))
    if b == 0 or k == 0:
        return _empty_svd(lead, m, n, a.dtype, full_matrices, compute_uv)
    flat, row_major = _flat_stack(a)
    t, tr = _threads(threads), _trace(trace)
    s, uv = _native_stack(
        lambda: _native.batched_svd(flat, b, m, n, row_major, bool(compute_uv), t, tr), lead
    )
    s = s.reshape(lead + (k,))
    if not compute_uv:
        return s
    # Each matrix column-major, one after another (views).
    u = np.swapaxes(uv[0].reshape(lead + (k, m)), -1, -2)
    vh = np.swapaxes(uv[1].reshape(lead + (n, k)), -1, -2)
    if full_matrices:
        u = _complete(u)
        vh = np.swapaxes(_complete(np.swapaxes(vh, -1, -2)), -1, -2)
    return SVDResult(u, s, vh)


def batched_svd(stack, *, compute_uv: bool = True, threads=None):
    """Thin SVDs of a stack of small matrices (``batch x m x n``) by the
    crate's batched solver (``svd_batched``), all in one task graph: each
    matrix is bidiagonalised and its bidiagonal solved, LAPACK ``dgesdd``'s
    sequence (the crate's default route, faster than its blocked one-sided
    Jacobi at every shape measured).

    Returns ``SVDResult(U, S, Vh)`` with ``U`` ``batch x m x k``, ``S``
    ``batch x k`` (each row descending) and ``Vh`` ``batch x k x n``,
    ``k = min(m, n)``: ``numpy.linalg.svd(stack, full_matrices=False)``'s
    shapes; ``S`` only for ``compute_uv=False``. A C-ordered stack, or one
    whose matrices are each Fortran-ordered and stored one after another, is
    read in place; any other layout is copied to C order first. A matrix
    that does not converge raises numpy.linalg.LinAlgError naming it.
    """
    x = _float_array(stack, 3, "batched_svd")
    b, m, n = x.shape
    k = min(m, n)
    if b == 0 or k == 0:
        s = np.empty((b, k), x.dtype)
        if not compute_uv:
            return s
        return SVDResult(np.empty((b, m, k), x.dtype), s, np.empty((b, k, n), x.dtype))
    if x.flags.c_contiguous:
        flat, row_major = x.reshape(-1), True
    elif x.transpose(0, 2, 1).flags.c_contiguous:
        flat, row_major = x.transpose(0, 2, 1).reshape(-1), False
    else:
        flat, row_major = np.ascontiguousarray(x).reshape(-1), True
    s, uv = _native.batched_svd(flat, b, m, n, row_major, bool(compute_uv), _threads(threads))
    s = s.reshape(b, k)
    if not compute_uv:
        return s
    # Each matrix column-major, one after another: the transpose of a
    # C-ordered (batch, cols, rows) array, a view.
    u = uv[0].reshape(b, k, m).transpose(0, 2, 1)
    vh = uv[1].reshape(b, n, k).transpose(0, 2, 1)
    return SVDResult(u, s, vh)


# The drop-in (issue 66): eigenflow.numpy and eigenflow.scipy are imported on
# first use only (eigenflow.scipy imports scipy); the switch and its report
# are light.
from ._patching import is_patched, patch, patched, unpatch  # noqa: E402
from ._report import DelegationError, PatchReport, patch_report  # noqa: E402
