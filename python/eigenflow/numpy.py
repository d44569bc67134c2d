"""``numpy.linalg``'s ``eigh``, ``eigvalsh``, ``svd`` and ``svdvals`` served
by eigenflow, with numpy's signatures, defaults, dtype rules and result
types (numpy's own ``EighResult``/``SVDResult`` named tuples).

    >>> import eigenflow.numpy as enp
    >>> w, v = enp.eigh(a)            # as numpy.linalg.eigh(a)
    >>> u, s, vh = enp.svd(x)         # full_matrices=True, as numpy

eigenflow serves a plain ``ndarray`` (or anything ``np.asarray`` turns into
one) of float32 or float64 (integers and bool become float64, as in numpy) holding
one finite matrix or a stack ``(..., m, n)`` of them (solved by one call of
eigenflow's batched solvers, with numpy's stacked shapes), and, for ``eigh``
and ``eigvalsh``, one complex64/complex128 Hermitian matrix (eigenflow's
Hermitian EVD: real eigenvalues, complex eigenvectors); the result has
numpy's dtype. ndarray subclasses that leave numpy's functions to ndarray
(``np.matrix``, masked arrays) are served as numpy serves them: computed on
``np.asarray(a)``, the result matrices wrapped by the input's
``__array_wrap__``. Every other call goes to numpy's own function and is
counted with its reason (:func:`eigenflow.patch_report`): complex stacks
and complex ``svd``/``svdvals`` (issue 62), float16/object/longdouble (numpy raises), subclasses and other types with their
own ``__array_function__``, non-finite input (numpy's handling of NaN is its
own), an invalid ``UPLO``, and any eigenflow non-convergence.
``svd(..., hermitian=True)`` is served as numpy computes it, from the
eigendecomposition (eigenflow's; a stack by its batched solver). Results equal numpy's to rounding; eigenvector
and singular vector signs may differ, as between LAPACK builds.

``svd(..., full_matrices=True)`` (numpy's default) completes eigenflow's
thin factor of the longer side to a square orthogonal matrix by numpy's
complete QR of that factor (the extra columns are an orthonormal basis of
its complement, as LAPACK's are: any such basis is a valid answer).
"""

from __future__ import annotations

import numpy as _np

import eigenflow as _ef

from ._dropin import Delegate, call, matrix_or_reason

try:  # numpy 2 keeps the functions in numpy.linalg._linalg
    from numpy.linalg import _linalg as _defining
except ImportError:  # pragma: no cover - numpy 1.x
    from numpy.linalg import linalg as _defining

__all__ = ["eigh", "eigvalsh", "svd"] + (["svdvals"] if hasattr(_defining, "svdvals") else [])

#: numpy's own functions, from the module that defines them (which patch()
#: never rebinds): what a delegated call runs.
ORIGINALS = {name: getattr(_defining, name) for name in __all__}

_result_types: dict = {}


def _result_type(name: str):
    """numpy's result named tuple (``EighResult``/``SVDResult`` in numpy 2,
    a plain tuple before), as its own function returns it for a 1x1 input."""
    if name not in _result_types:
        probe = ORIGINALS[name](_np.ones((1, 1)))
        _result_types[name] = type(probe)
    return _result_types[name]


def _uplo_lower(UPLO) -> bool:
    try:
        u = UPLO.upper()
    except AttributeError:
        raise Delegate("UPLO that is not a string") from None
    if u not in ("L", "U"):
        raise Delegate("UPLO other than 'L' or 'U'")
    return u == "L"


def _matrix(a, square: bool, hermitian: bool = False):
    """``a`` as the matrix or stack of matrices eigenflow serves, else
    :class:`Delegate` with the reason (``hermitian``: complex matrices too,
    for the eigensolvers)."""
    x, reason = matrix_or_reason(
        _plain(a), square=square, finite=True, stacked=True, hermitian=hermitian
    )
    if x is None:
        raise Delegate(reason)
    return x


def _numpy_computes_on_ndarray(a) -> bool:
    """Whether ``a`` is an ndarray subclass that leaves numpy's functions to
    ndarray's dispatch (``np.matrix``, masked arrays, test subclasses): numpy
    computes on ``np.asarray(a)`` and wraps the result matrices with
    ``a.__array_wrap__`` (its ``_makearray``). Subclasses with their own
    ``__array_function__`` are not: they go to the original."""
    t = type(a)
    return (
        isinstance(a, _np.ndarray)
        and t is not _np.ndarray
        and getattr(t, "__array_function__", None) is _np.ndarray.__array_function__
    )


def _plain(a):
    """An ndarray subclass numpy computes on as an ndarray (see
    :func:`_numpy_computes_on_ndarray`) as that ndarray, its results wrapped
    back by :func:`_wrap`; anything else as it is."""
    return _np.asarray(a) if _numpy_computes_on_ndarray(a) else a


def _wrap(a, m):
    """A result matrix as numpy returns it: wrapped by ``a.__array_wrap__``
    for the subclasses :func:`_plain` unwraps (as numpy's ``wrap``), else as
    computed."""
    return a.__array_wrap__(m) if _numpy_computes_on_ndarray(a) else m


def eigh(a, UPLO="L"):
    """``numpy.linalg.eigh``: ``EighResult(eigenvalues, eigenvectors)`` of a
    real symmetric or complex Hermitian matrix, values ascending, from its
    ``UPLO`` triangle."""

    def serve():
        lower = _uplo_lower(UPLO)
        w, v = _ef.eigh(_matrix(a, True, hermitian=True), lower=lower)
        return _result_type("eigh")(w, _wrap(a, v))

    return call("numpy.linalg.eigh", ORIGINALS["eigh"], serve, (a,), {"UPLO": UPLO})


def eigvalsh(a, UPLO="L"):
    """``numpy.linalg.eigvalsh``: the eigenvalues, ascending."""

    def serve():
        lower = _uplo_lower(UPLO)
        return _ef.eigvalsh(_matrix(a, True, hermitian=True), lower=lower)

    return call("numpy.linalg.eigvalsh", ORIGINALS["eigvalsh"], serve, (a,), {"UPLO": UPLO})


def _hermitian_svd(x, compute_uv):
    """numpy's ``hermitian=True`` route on eigenflow's EVD, for one matrix
    or a stack (eigenflow's batched ``eigh``): the singular values of a
    symmetric matrix are its eigenvalues' magnitudes, ``U`` its eigenvectors
    and ``Vh`` their transpose with each eigenvalue's sign moved into its
    row (``+1`` for a zero, as numpy's ``copysign``), in numpy's order
    (``argsort`` of the magnitudes, reversed)."""
    if not compute_uv:
        return _np.sort(_np.abs(_ef.eigvalsh(x)), axis=-1)[..., ::-1]
    w, v = _ef.eigh(x)
    order = _np.argsort(_np.abs(w), axis=-1)[..., ::-1]
    w = _np.take_along_axis(w, order, axis=-1)
    v = _np.take_along_axis(v, order[..., None, :], axis=-1)
    sign = _np.copysign(1.0, w).astype(w.dtype)
    vh = _np.swapaxes(v * sign[..., None, :], -1, -2)
    return _result_type("svd")(v, _np.abs(w), vh)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """``numpy.linalg.svd``: ``SVDResult(U, S, Vh)`` (``S`` descending), or
    ``S`` alone for ``compute_uv=False``. ``full_matrices=True`` (numpy's
    default) gives square ``U`` and ``Vh`` (see the module's note)."""

    def serve():
        if hermitian:
            r = _hermitian_svd(_matrix(a, True), compute_uv)
        else:
            x = _matrix(a, False)
            if not compute_uv:
                return _ef.svd(x, compute_uv=False)
            r = _ef.svd(x, full_matrices=bool(full_matrices))
        if not compute_uv:
            return r
        return _result_type("svd")(_wrap(a, r[0]), r[1], _wrap(a, r[2]))

    kwargs = {"full_matrices": full_matrices, "compute_uv": compute_uv, "hermitian": hermitian}
    return call("numpy.linalg.svd", ORIGINALS["svd"], serve, (a,), kwargs)


if "svdvals" in ORIGINALS:

    def svdvals(x, /):
        """``numpy.linalg.svdvals``: the singular values, descending."""

        def serve():
            return _ef.svd(_matrix(x, False), compute_uv=False)

        return call("numpy.linalg.svdvals", ORIGINALS["svdvals"], serve, (x,), {})


#: eigenflow's replacement for each original, for eigenflow.patch().
REPLACEMENTS = {name: globals()[name] for name in __all__}
