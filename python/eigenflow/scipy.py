"""``scipy.linalg``'s ``eigh``, ``eigvalsh``, ``svd`` and ``svdvals`` served
by eigenflow, with scipy's signatures, defaults, dtype rules and return
types (plain tuples, as scipy returns).

eigenflow serves the standard problem (``b=None``) and the generalized one
(``b`` given, ``type`` 1, 2 or 3: eigenflow's one graph of Cholesky,
reduction, EVD and back-substitution, as LAPACK's ``sygvd``) of a plain real
matrix in scipy's precision (float32 and float64 as they are; float16, bool
and integers up to 16 bits in float32, wider integers in float64, as scipy
chooses its LAPACK routine), and every keyword:

- ``subset_by_index=(lo, hi)``: eigenflow's index selection (bisection on the
  tridiagonal and inverse iteration for the vectors, or the full solve and
  a slice, as eigenflow's plan decides);
- ``subset_by_value=(lo, hi)``: eigenflow's value-range selection, the
  eigenvalues in scipy's half-open ``(lo, hi]``;
- ``driver``: ``None``, ``"evr"`` and ``"evx"`` (LAPACK's subset drivers)
  are served by eigenflow's plan for the request (with a subset: the
  selection path; without: the full solve), ``"ev"`` and ``"evd"`` by the
  full solve (the crate's divide and conquer, as ``syevd``); the results
  equal LAPACK's to rounding whatever the driver; with ``b``, ``None``,
  ``"gv"``, ``"gvd"`` and ``"gvx"`` likewise (a subset: the selection path);
- ``lapack_driver``: ``"gesdd"`` and ``"gesvd"`` are both served by
  eigenflow's SVD (bidiagonal divide and conquer, as ``gesdd``);
- ``overwrite_a`` / ``overwrite_b`` are permissions: eigenflow reads the
  input in place and never writes it, so they save nothing and are ignored;
- ``check_finite``: ``True`` scans the input, and a non-finite entry goes to
  scipy, which raises its ValueError; ``False`` skips that scan, but
  eigenflow still refuses a non-finite entry with a ValueError (scipy would
  hand it to LAPACK): the safety is never skipped.

A complex Hermitian ``a`` of the standard problem (complex64, complex128)
is served by eigenflow's Hermitian EVD (real eigenvalues, complex
eigenvectors). Delegated to scipy's own function, counted with the reason:
complex ``a`` or ``b`` of the generalized problem and complex ``svd``
(issue 62), stacked input (issue 61), object and longdouble,
ndarray subclasses and ``__array_function__`` types, invalid argument
combinations (scipy raises its error: a ``b`` of another shape, a ``type``
other than 1, 2 or 3, a standard driver with ``b`` or a generalized one
without), empty matrices with ``b``, a ``b`` that is not positive definite
(scipy raises its LinAlgError with its message), and any eigenflow
non-convergence. ``type`` only matters with ``b``.
"""

from __future__ import annotations

import numpy as _np
from scipy.linalg import _decomp, _decomp_svd

import eigenflow as _ef

from ._dropin import Delegate, call, matrix_or_reason

__all__ = ["eigh", "eigvalsh", "svd", "svdvals"]

#: scipy's own functions, from the modules that define them (which patch()
#: never rebinds): what a delegated call runs.
ORIGINALS = {
    "eigh": _decomp.eigh,
    "eigvalsh": _decomp.eigvalsh,
    "svd": _decomp_svd.svd,
    "svdvals": _decomp_svd.svdvals,
}

_STANDARD_DRIVERS = (None, "ev", "evd", "evr", "evx")
_GENERALIZED_DRIVERS = (None, "gv", "gvd", "gvx")


def _matrix(a, square: bool, check_finite: bool, hermitian: bool = False):
    x, reason = matrix_or_reason(
        a, square=square, finite=bool(check_finite), scipy=True, hermitian=hermitian
    )
    if x is None:
        raise Delegate(reason)
    return x


def _index_subset(subset_by_index, n: int):
    """scipy's reading of ``subset_by_index``: ``int()`` of each bound, and
    ``0 <= lo <= hi < n`` (scipy raises otherwise: delegated)."""
    try:
        lo, hi = (int(x) for x in subset_by_index)
    except Exception:
        raise Delegate("subset_by_index scipy rejects") from None
    if not 0 <= lo <= hi < n:
        raise Delegate("subset_by_index scipy rejects")
    return lo, hi


def _value_subset(subset_by_value):
    """scipy's ``subset_by_value``: ``-inf <= lo < hi <= inf``."""
    try:
        lo, hi = subset_by_value
        ok = bool(-_np.inf <= lo < hi <= _np.inf)
    except Exception:
        ok = False
    if not ok:
        raise Delegate("subset_by_value scipy rejects")
    return float(lo), float(hi)


def _generalized(a, b, lower, eigvals_only, type, check_finite, subset_by_index,
                 subset_by_value, driver):
    """The generalized problem (``b`` given) as eigenflow computes it (one
    graph: Cholesky of ``b``, the reduction, the EVD, the back-substitution),
    with scipy's argument rules; anything else raises :class:`Delegate`."""
    if driver not in _GENERALIZED_DRIVERS:
        raise Delegate("driver of the standard problem with b, or unknown (scipy raises)")
    subset = subset_by_index is not None or subset_by_value is not None
    if subset and driver in ("gv", "gvd"):
        raise Delegate(f"driver={driver!r} with a subset (scipy raises)")
    if subset_by_index and subset_by_value:
        raise Delegate("both subsets (scipy raises)")
    x = _matrix(a, True, check_finite)
    y = _matrix(b, True, check_finite)
    if y.shape != x.shape:
        raise Delegate("b of another shape (scipy raises)")
    if isinstance(type, (bool, _np.bool_)) or type not in (1, 2, 3):
        raise Delegate("type other than 1, 2, 3 (scipy raises)")
    if x.shape[0] == 0:
        raise Delegate("empty matrices (scipy's dtype rules for them)")
    by_index = _index_subset(subset_by_index, x.shape[0]) if subset_by_index else None
    by_value = _value_subset(subset_by_value) if subset_by_value else None
    kw = {
        "lower": bool(lower),
        "type": int(type),
        "subset_by_index": by_index,
        "subset_by_value": by_value,
    }
    try:
        if eigvals_only:
            return _ef.eigvalsh(x, y, **kw)
        return tuple(_ef.eigh(x, y, **kw))
    except _np.linalg.LinAlgError as e:
        # scipy raises its own LinAlgError (the leading minor of order k of
        # B is not positive definite): the original gives its exact message.
        if "not positive definite" in str(e):
            raise Delegate("b not positive definite (scipy raises)") from None
        raise


def _standard(a, b, lower, eigvals_only, check_finite, subset_by_index, subset_by_value, driver):
    """The standard problem as eigenflow computes it, with scipy's argument
    rules; anything else raises :class:`Delegate`."""
    if driver not in _STANDARD_DRIVERS:
        raise Delegate("driver of the generalized problem or unknown")
    subset = subset_by_index is not None or subset_by_value is not None
    if subset and driver in ("ev", "evd"):
        raise Delegate(f"driver={driver!r} with a subset (scipy raises)")
    # scipy tests the subsets by truth value: an empty one means none.
    if subset_by_index and subset_by_value:
        raise Delegate("both subsets (scipy raises)")
    x = _matrix(a, True, check_finite, hermitian=True)
    by_index = _index_subset(subset_by_index, x.shape[0]) if subset_by_index else None
    by_value = _value_subset(subset_by_value) if subset_by_value else None
    kw = {"lower": bool(lower), "subset_by_index": by_index, "subset_by_value": by_value}
    if eigvals_only:
        return _ef.eigvalsh(x, **kw)
    return tuple(_ef.eigh(x, **kw))


def eigh(
    a,
    b=None,
    *,
    lower=True,
    eigvals_only=False,
    overwrite_a=False,
    overwrite_b=False,
    type=1,
    check_finite=True,
    subset_by_index=None,
    subset_by_value=None,
    driver=None,
):
    """``scipy.linalg.eigh``: ``(w, v)`` of a real symmetric matrix (values
    ascending), or ``w`` for ``eigvals_only=True``; keywords as the module
    says."""
    kwargs = dict(
        b=b,
        lower=lower,
        eigvals_only=eigvals_only,
        overwrite_a=overwrite_a,
        overwrite_b=overwrite_b,
        type=type,
        check_finite=check_finite,
        subset_by_index=subset_by_index,
        subset_by_value=subset_by_value,
        driver=driver,
    )

    def serve():
        if b is not None:
            return _generalized(
                a, b, lower, eigvals_only, type, check_finite, subset_by_index,
                subset_by_value, driver,
            )
        return _standard(
            a, b, lower, eigvals_only, check_finite, subset_by_index, subset_by_value, driver
        )

    return call("scipy.linalg.eigh", ORIGINALS["eigh"], serve, (a,), kwargs)


def eigvalsh(
    a,
    b=None,
    *,
    lower=True,
    overwrite_a=False,
    overwrite_b=False,
    type=1,
    check_finite=True,
    subset_by_index=None,
    subset_by_value=None,
    driver=None,
):
    """``scipy.linalg.eigvalsh``: the eigenvalues, ascending."""
    kwargs = dict(
        b=b,
        lower=lower,
        overwrite_a=overwrite_a,
        overwrite_b=overwrite_b,
        type=type,
        check_finite=check_finite,
        subset_by_index=subset_by_index,
        subset_by_value=subset_by_value,
        driver=driver,
    )

    def serve():
        if b is not None:
            return _generalized(
                a, b, lower, True, type, check_finite, subset_by_index, subset_by_value, driver
            )
        return _standard(a, b, lower, True, check_finite, subset_by_index, subset_by_value, driver)

    return call("scipy.linalg.eigvalsh", ORIGINALS["eigvalsh"], serve, (a,), kwargs)


def _svd(a, full_matrices, compute_uv, check_finite, lapack_driver):
    if not isinstance(lapack_driver, str) or lapack_driver not in ("gesdd", "gesvd"):
        raise Delegate("lapack_driver scipy rejects")
    x = _matrix(a, False, check_finite)
    if not compute_uv:
        return _ef.svd(x, compute_uv=False)
    return tuple(_ef.svd(x, full_matrices=bool(full_matrices)))


def svd(
    a,
    full_matrices=True,
    compute_uv=True,
    overwrite_a=False,
    check_finite=True,
    lapack_driver="gesdd",
):
    """``scipy.linalg.svd``: ``(U, s, Vh)`` (``s`` descending; square ``U``
    and ``Vh`` for ``full_matrices=True``), or ``s`` for
    ``compute_uv=False``."""
    kwargs = dict(
        full_matrices=full_matrices,
        compute_uv=compute_uv,
        overwrite_a=overwrite_a,
        check_finite=check_finite,
        lapack_driver=lapack_driver,
    )

    def serve():
        return _svd(a, full_matrices, compute_uv, check_finite, lapack_driver)

    return call("scipy.linalg.svd", ORIGINALS["svd"], serve, (a,), kwargs)


def svdvals(a, overwrite_a=False, check_finite=True):
    """``scipy.linalg.svdvals``: the singular values, descending."""
    kwargs = dict(overwrite_a=overwrite_a, check_finite=check_finite)

    def serve():
        return _svd(a, False, False, check_finite, "gesdd")

    return call("scipy.linalg.svdvals", ORIGINALS["svdvals"], serve, (a,), kwargs)


#: eigenflow's replacement for each original, for eigenflow.patch().
REPLACEMENTS = {name: globals()[name] for name in __all__}
