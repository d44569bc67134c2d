"""eigh / eigvalsh against numpy and scipy: families, dtypes, orders,
triangles, subsets, the graph path (forced by a trace) and the one-stage
path."""

import json

import numpy as np
import pytest
import scipy.linalg

import eigenflow
from conftest import LIMIT, eig_ratios, symmetric, value_ratio

KINDS = ["random", "clustered", "graded", "zero"]


def stored(a64, dtype, order, lower, rng):
    """`a64` in `dtype` and `order`, with NaN in the triangle not read (so a
    read of it would show)."""
    a = np.array(a64, dtype=dtype, order=order)
    junk = np.tril(np.ones(a.shape, bool), -1) if not lower else np.triu(np.ones(a.shape, bool), 1)
    a[junk] = np.nan
    return a


def check_eigh(a64, dtype, order, lower, trace=None):
    rng = np.random.default_rng(0)
    a = stored(a64, dtype, order, lower, rng)
    w, v = eigenflow.eigh(a, lower=lower, trace=trace)
    n = a.shape[0]
    assert w.dtype == dtype and v.dtype == dtype
    assert w.shape == (n,) and v.shape == (n, n)
    assert np.all(np.diff(w) >= 0)
    res, orth = eig_ratios(a64, w, v)
    assert res < LIMIT and orth < LIMIT, (res, orth)
    ref = np.linalg.eigvalsh(a64)
    assert value_ratio(a64, w, ref, dtype) < LIMIT
    vals = eigenflow.eigvalsh(a, lower=lower, trace=trace)
    assert vals.dtype == dtype
    assert value_ratio(a64, vals, ref, dtype) < LIMIT


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("lower", [True, False])
def test_eigh_families(kind, dtype, order, lower, rng):
    check_eigh(symmetric(kind, 90, rng), dtype, order, lower)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", ["C", "F"])
def test_eigh_graph_path(kind, dtype, order, rng, tmp_path):
    # A trace forces the two-stage task graph (the path of large orders).
    n = 300
    for lower in (True, False):
        t = tmp_path / f"t{lower}.json"
        check_eigh(symmetric(kind, n, rng), dtype, order, lower, trace=t)
        assert "traceEvents" in json.loads(t.read_text()) or isinstance(json.loads(t.read_text()), list)


@pytest.mark.parametrize("n", [300, 520])
def test_eigh_one_stage_threaded(n, rng):
    # Orders from 256 up to the crossover run on a thread of their own.
    check_eigh(symmetric("random", n, rng), np.float64, "C", True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_tiny(dtype):
    w, v = eigenflow.eigh(np.array([[3.0]], dtype=dtype))
    assert w.tolist() == [3.0] and v.tolist() == [[1.0]] and w.dtype == dtype
    w, v = eigenflow.eigh(np.empty((0, 0), dtype=dtype))
    assert w.shape == (0,) and v.shape == (0, 0) and v.dtype == dtype
    assert eigenflow.eigvalsh(np.empty((0, 0), dtype=dtype)).shape == (0,)


def test_strided_views(rng):
    # Any strided view is read in place: a transposed slice with steps.
    big = symmetric("random", 200, rng)
    a = big[::2, ::2]
    w, v = eigenflow.eigh(a[::-1, ::-1])
    ref = np.linalg.eigvalsh(a)
    assert value_ratio(a, w, ref, np.float64) < LIMIT
    res, orth = eig_ratios(a[::-1, ::-1].copy(), w, v)
    assert res < LIMIT and orth < LIMIT


def test_result_is_named_tuple_and_fortran(rng):
    r = eigenflow.eigh(symmetric("random", 40, rng))
    assert isinstance(r, eigenflow.EighResult)
    assert r.eigenvalues is r[0] and r.eigenvectors is r[1]
    assert r.eigenvectors.flags.f_contiguous


def test_readme_example():
    a = np.random.rand(500, 500)
    a = a + a.T
    w, v = eigenflow.eigh(a)
    assert np.allclose(a @ v, v * w)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("trace", [False, True])
def test_subset_by_index(dtype, trace, rng, tmp_path):
    n = 120
    a64 = symmetric("clustered", n, rng)
    a = a64.astype(dtype)
    t = tmp_path / "s.json" if trace else None
    for lo, hi in [(0, 0), (n - 1, n - 1), (0, n - 1), (10, 49), (39, 41)]:
        ref = scipy.linalg.eigh(a64, eigvals_only=True, subset_by_index=(lo, hi))
        assert ref.shape == (hi - lo + 1,)
        w, v = eigenflow.eigh(a, subset_by_index=(lo, hi), trace=t)
        assert w.shape == (hi - lo + 1,) and v.shape == (n, hi - lo + 1)
        assert value_ratio(a64, w, ref, dtype) < LIMIT
        res, orth = eig_ratios(a64, w, v)
        assert res < LIMIT and orth < LIMIT, (lo, hi, res, orth)
        vals = eigenflow.eigvalsh(a, subset_by_index=(lo, hi), trace=t)
        assert value_ratio(a64, vals, ref, dtype) < LIMIT


@pytest.mark.parametrize("bad", [(5, 4), (-1, 3), (0, 10), (3,), "ab", (1.5, 2)])
def test_subset_errors(bad, rng):
    with pytest.raises(ValueError):
        eigenflow.eigh(symmetric("random", 10, rng), subset_by_index=bad)


def test_threads_argument(rng):
    a = symmetric("random", 300, rng)
    w1 = eigenflow.eigvalsh(a, threads=1)
    w2 = eigenflow.eigvalsh(a, threads=2)
    assert value_ratio(a, w1, np.linalg.eigvalsh(a), np.float64) < LIMIT
    assert value_ratio(a, w2, np.linalg.eigvalsh(a), np.float64) < LIMIT
    with pytest.raises(ValueError):
        eigenflow.eigh(a, threads=0)
