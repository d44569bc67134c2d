"""The generalized problem ``eigh(a, b, type=...)`` / ``eigvalsh(a, b)``
against scipy's ``eigh(a, b)`` (LAPACK ``sygvd``/``sygvx``) and against its
definition (issue 65's ratios, ``gen_ratios`` below), for types 1-3,
subsets, both triangles, both dtypes, and scipy's errors; and the scipy
drop-in serving ``b=`` and ``type=``."""

import numpy as np
import pytest
import scipy.linalg as sl

import eigenflow
import eigenflow.scipy as esp
from eigenflow._report import reset_patch_report
from conftest import LIMIT, eps, orthonormal, symmetric


def spd(kind, n, rng, cond=1e2):
    """A symmetric positive definite float64 ``b``: the identity, a diagonal
    or a dense matrix with eigenvalues geometric from 1 down to ``1/cond``."""
    s = np.geomspace(1.0, 1.0 / cond, n) if n > 1 else np.ones(1)
    if kind == "identity":
        return np.eye(n)
    if kind == "diagonal":
        return np.diag(rng.permutation(s))
    q = orthonormal(n, rng)
    b = (q * s) @ q.T
    return (b + b.T) / 2


def gen_ratios(a, b, t, w, x, dtype):
    """Issue 65's ratios, in float64, both divided by ``n eps``: the worst
    backward error over the pairs, ``||A x - w B x|| / ((||A|| + |w| ||B||)
    ||x||)`` for type 1 and ``||A B x - w x||`` (type 2), ``||B A x - w x||``
    (type 3) over ``(||A|| ||B|| + |w|) ||x||``; and the orthogonality
    ``||X^T B X - I|| / ||B||`` (types 1, 2) or ``||X^T B^{-1} X - I|| /
    ||B^{-1}||`` (type 3). Norms: 1-norms (LAPACK's dsgt01)."""
    a, b, x, w = (np.asarray(m, np.float64) for m in (a, b, x, w))
    n = a.shape[0]
    ne = n * eps(dtype)
    an, bn = np.linalg.norm(a, 1), np.linalg.norm(b, 1)
    if t == 1:
        r = a @ x - (b @ x) * w
        scale = an + np.abs(w) * bn
    else:
        m = b @ a if t == 3 else a @ b
        r = m @ x - x * w
        scale = an * bn + np.abs(w)
    back = np.abs(r).sum(0) / (scale * np.abs(x).sum(0)) / ne
    if t == 3:
        binv = np.linalg.inv(b)
        g = x.T @ binv @ x - np.eye(x.shape[1])
        orth = np.linalg.norm(g, 1) / (np.linalg.norm(binv, 1) * ne)
    else:
        g = x.T @ b @ x - np.eye(x.shape[1])
        orth = np.linalg.norm(g, 1) / (bn * ne)
    return float(back.max(initial=0.0)), float(orth)


def close_values(w, ref, a, b, t, dtype):
    """``w`` equals scipy's ``ref`` to a multiple of the pencil's
    eigenvalue scale times ``n eps``."""
    an, bn = np.linalg.norm(a, 1), np.linalg.norm(b, 1)
    binv = np.linalg.norm(np.linalg.inv(b), 1)
    scale = an * binv if t == 1 else an * bn
    n = a.shape[0]
    err = np.max(np.abs(np.asarray(w, np.float64) - ref), initial=0.0)
    assert err <= LIMIT * n * eps(dtype) * scale, (err, scale)


@pytest.mark.parametrize("t", [1, 2, 3])
@pytest.mark.parametrize("bkind", ["identity", "diagonal", "dense"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 7, 120])
def test_against_scipy_and_the_definition(t, bkind, dtype, n, rng):
    a64, b64 = symmetric("random", n, rng), spd(bkind, n, rng)
    a, b = a64.astype(dtype), b64.astype(dtype)
    w, x = eigenflow.eigh(a, b, type=t)
    assert w.dtype == dtype and x.dtype == dtype
    assert w.shape == (n,) and x.shape == (n, n)
    assert np.all(np.diff(w) >= 0)
    back, orth = gen_ratios(a, b, t, w, x, dtype)
    assert back < LIMIT and orth < LIMIT, (back, orth)
    ref = sl.eigh(a.astype(np.float64), b.astype(np.float64), type=t, eigvals_only=True)
    close_values(w, ref, a64, b64, t, dtype)
    vals = eigenflow.eigvalsh(a, b, type=t)
    assert vals.dtype == dtype
    close_values(vals, ref, a64, b64, t, dtype)


def test_identity_b_gives_the_standard_values(rng):
    a = symmetric("random", 80, rng)
    w = eigenflow.eigvalsh(a, np.eye(80))
    ref = eigenflow.eigvalsh(a)
    assert np.max(np.abs(w - ref)) <= LIMIT * 80 * eps(np.float64) * np.linalg.norm(a, 1)


@pytest.mark.parametrize("t", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_subsets_match_scipy(t, dtype, rng):
    n = 90
    a64, b64 = symmetric("random", n, rng), spd("dense", n, rng)
    a, b = a64.astype(dtype), b64.astype(dtype)
    full = sl.eigh(a64, b64, type=t, eigvals_only=True)
    w, x = eigenflow.eigh(a, b, type=t, subset_by_index=(10, 24))
    assert w.shape == (15,) and x.shape == (n, 15)
    close_values(w, full[10:25], a64, b64, t, dtype)
    back, orth = gen_ratios(a, b, t, w, x, dtype)
    assert back < LIMIT and orth < LIMIT, (back, orth)
    # scipy's half-open (lo, hi]: a bound between two eigenvalues.
    lo, hi = (full[30] + full[31]) / 2, (full[50] + full[51]) / 2
    w = eigenflow.eigvalsh(a, b, type=t, subset_by_value=(lo, hi))
    ref = sl.eigh(a64, b64, type=t, eigvals_only=True, subset_by_value=(lo, hi))
    assert w.shape == ref.shape == (20,)
    close_values(w, ref, a64, b64, t, dtype)


def test_value_subset_is_half_open_like_scipy():
    # B = 4 I: L = 2 I, so C = A / 4 exactly.
    a, b = np.diag([2.0, 4.0, 6.0, 8.0]), 4 * np.eye(4)
    np.testing.assert_array_equal(eigenflow.eigvalsh(a, b, subset_by_value=(0.5, 1.5)), [1.0, 1.5])
    np.testing.assert_array_equal(sl.eigvalsh(a, b, subset_by_value=(0.5, 1.5)), [1.0, 1.5])
    w, x = eigenflow.eigh(a, b, subset_by_value=(10.0, 20.0))
    assert w.shape == (0,) and x.shape == (4, 0)


@pytest.mark.parametrize("t", [1, 2, 3])
def test_upper_triangle_of_both_is_read(t, rng):
    n = 40
    a, b = symmetric("random", n, rng), spd("dense", n, rng)
    junk = np.tril(np.ones((n, n), bool), -1)
    au, bu = a.copy(), b.copy()
    au[junk], bu[junk] = np.nan, np.nan
    w, x = eigenflow.eigh(au, bu, lower=False, type=t)
    back, orth = gen_ratios(a, b, t, w, x, np.float64)
    assert back < LIMIT and orth < LIMIT
    close_values(w, sl.eigh(a, b, type=t, eigvals_only=True), a, b, t, np.float64)


def test_mixed_dtypes_compute_in_float64(rng):
    a, b = symmetric("random", 20, rng), spd("dense", 20, rng)
    w = eigenflow.eigvalsh(a.astype(np.float32), b)
    assert w.dtype == np.float64
    w = eigenflow.eigvalsh(np.eye(3, dtype=np.int64), np.eye(3, dtype=np.float32))
    assert w.dtype == np.float64


def test_inputs_are_not_written(rng):
    a, b = symmetric("random", 30, rng), spd("dense", 30, rng)
    a0, b0 = a.copy(), b.copy()
    eigenflow.eigh(a, b, type=2)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)
    with pytest.raises(np.linalg.LinAlgError):
        eigenflow.eigh(a, -b)
    np.testing.assert_array_equal(b, b0)


def test_b_not_positive_definite_is_linalgerror_naming_the_minor():
    b = np.diag([1.0, 2.0, -1.0, 4.0])
    with pytest.raises(np.linalg.LinAlgError, match="order 3"):
        eigenflow.eigh(np.eye(4), b)
    with pytest.raises(np.linalg.LinAlgError):
        sl.eigh(np.eye(4), b)
    with pytest.raises(np.linalg.LinAlgError, match="order 1"):
        eigenflow.eigvalsh(np.eye(4), np.zeros((4, 4)))


@pytest.mark.parametrize(
    "call",
    [
        lambda: eigenflow.eigh(np.eye(3), np.eye(4)),
        lambda: eigenflow.eigh(np.eye(3), np.ones((3, 2))),
        lambda: eigenflow.eigh(np.eye(3), np.eye(3), type=4),
        lambda: eigenflow.eigh(np.eye(3), np.eye(3), type=0),
        lambda: eigenflow.eigvalsh(np.ones((2, 3, 3)), np.eye(3)),
        lambda: eigenflow.eigh(np.eye(3), np.eye(3, dtype=complex)),
        lambda: eigenflow.eigh(np.eye(3), np.diag([1.0, np.nan, 1.0])),
        lambda: eigenflow.eigh(np.diag([1.0, np.inf, 1.0]), np.eye(3)),
        lambda: eigenflow.eigh(np.eye(3), np.eye(3), subset_by_index=(1, 3)),
    ],
)
def test_bad_arguments_are_valueerror(call):
    with pytest.raises(ValueError):
        call()


def test_empty_pencil():
    w, x = eigenflow.eigh(np.empty((0, 0)), np.empty((0, 0)))
    assert w.shape == (0,) and x.shape == (0, 0)


# The scipy drop-in.


def counts():
    r = eigenflow.patch_report()
    return r.n_served, r.n_delegated


@pytest.fixture(autouse=True)
def _fresh_report(monkeypatch):
    monkeypatch.delenv("EIGENFLOW_PATCH_STRICT", raising=False)
    reset_patch_report()


@pytest.mark.parametrize("t", [1, 2, 3])
@pytest.mark.parametrize("driver", [None, "gv", "gvd", "gvx"])
def test_dropin_serves_b_and_type(t, driver, rng):
    n = 50
    a, b = symmetric("random", n, rng), spd("dense", n, rng)
    w, x = esp.eigh(a, b, type=t, driver=driver)
    back, orth = gen_ratios(a, b, t, w, x, np.float64)
    assert back < LIMIT and orth < LIMIT
    ref = sl.eigh(a, b, type=t, driver=driver, eigvals_only=True)
    close_values(w, ref, a, b, t, np.float64)
    w2 = esp.eigvalsh(a, b, type=t, driver=driver)
    close_values(w2, ref, a, b, t, np.float64)
    assert counts() == (2, 0)
    if driver in (None, "gvx"):
        w = esp.eigh(a, b, type=t, driver=driver, subset_by_index=(3, 9), eigvals_only=True)
        close_values(w, ref[3:10], a, b, t, np.float64)
        assert counts() == (3, 0)


@pytest.mark.parametrize(
    "call",
    [
        lambda: esp.eigh(np.eye(3), np.eye(4)),
        lambda: esp.eigh(np.eye(3), np.eye(3), type=5),
        lambda: esp.eigh(np.eye(3), np.eye(3), driver="evr"),
        lambda: esp.eigh(np.eye(3), np.eye(3), driver="gvd", subset_by_index=(0, 1)),
        lambda: esp.eigh(np.eye(3), np.diag([1.0, np.nan, 1.0])),
    ],
)
def test_dropin_argument_errors_are_scipys(call):
    with pytest.raises(ValueError):
        call()
    assert counts() == (0, 1)


def test_dropin_b_not_positive_definite_raises_scipys_linalgerror():
    with pytest.raises(np.linalg.LinAlgError, match="leading minor of order 2"):
        esp.eigh(np.eye(3), np.diag([1.0, -1.0, 1.0]))
    ((_, reason),) = eigenflow.patch_report().delegated
    assert "not positive definite" in reason


def test_dropin_complex_b_is_delegated():
    w = esp.eigvalsh(np.eye(2), np.eye(2, dtype=complex))
    np.testing.assert_array_equal(w, sl.eigvalsh(np.eye(2), np.eye(2, dtype=complex)))
    assert counts() == (0, 1)
