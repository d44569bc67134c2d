"""svd / svdvals / batched_svd against numpy: shapes, dtypes, orders."""

import numpy as np
import pytest

import eigenflow
from conftest import LIMIT, svd_ratios, value_ratio

SHAPES = [(60, 60), (150, 40), (40, 150), (1, 1), (1, 7), (7, 1)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("order", ["C", "F"])
def test_svd(shape, dtype, order, rng):
    a64 = rng.standard_normal(shape)
    a = np.array(a64, dtype=dtype, order=order)
    m, n = shape
    k = min(shape)
    u, s, vh = eigenflow.svd(a)
    assert (u.shape, s.shape, vh.shape) == ((m, k), (k,), (k, n))
    assert u.dtype == s.dtype == vh.dtype == dtype
    assert np.all(np.diff(s) <= 0)
    res, orth = svd_ratios(a64, u, s, vh)
    assert res < LIMIT and orth < LIMIT, (res, orth)
    ref = np.linalg.svd(a64, compute_uv=False)
    assert value_ratio(a64, s, ref, dtype) < LIMIT
    assert value_ratio(a64, eigenflow.svdvals(a), ref, dtype) < LIMIT
    only = eigenflow.svd(a, compute_uv=False)
    assert isinstance(only, np.ndarray) and value_ratio(a64, only, ref, dtype) < LIMIT


@pytest.mark.parametrize("shape", [(50, 20), (20, 50), (30, 30)])
def test_full_matrices(shape, rng):
    a = rng.standard_normal(shape)
    m, n = shape
    u, s, vh = eigenflow.svd(a, full_matrices=True)
    assert u.shape == (m, m) and vh.shape == (n, n)
    k = min(m, n)
    res, orth = svd_ratios(a, u[:, :k], s, vh[:k, :])
    assert res < LIMIT
    assert np.linalg.norm(u.T @ u - np.eye(m)) / (m * np.finfo(float).eps) < LIMIT
    assert np.linalg.norm(vh @ vh.T - np.eye(n)) / (n * np.finfo(float).eps) < LIMIT


def test_svd_structured(rng):
    # Zero matrix, a rank-one matrix and graded columns.
    for a in [
        np.zeros((30, 20)),
        np.outer(rng.standard_normal(30), rng.standard_normal(20)),
        rng.standard_normal((30, 20)) * np.logspace(0, -8, 20),
    ]:
        u, s, vh = eigenflow.svd(a)
        res, orth = svd_ratios(a, u, s, vh)
        assert res < LIMIT and orth < LIMIT
        assert value_ratio(a, s, np.linalg.svd(a, compute_uv=False), np.float64) < LIMIT


@pytest.mark.parametrize("shape", [(0, 0), (0, 5), (4, 0)])
def test_svd_empty(shape):
    a = np.empty(shape)
    u, s, vh = eigenflow.svd(a)
    ru, rs, rvh = np.linalg.svd(a, full_matrices=False)
    assert (u.shape, s.shape, vh.shape) == (ru.shape, rs.shape, rvh.shape)
    assert eigenflow.svdvals(a).shape == (0,)


def test_svd_result_type(rng):
    r = eigenflow.svd(rng.standard_normal((5, 3)))
    assert isinstance(r, eigenflow.SVDResult)
    assert r.U is r[0] and r.S is r[1] and r.Vh is r[2]


def batch_layouts(x):
    """The same stack as C order, as per-matrix Fortran order (in place) and
    as a strided view (copied)."""
    f = np.ascontiguousarray(x.transpose(0, 2, 1)).transpose(0, 2, 1)
    big = np.zeros((x.shape[0] * 2,) + x.shape[1:], x.dtype)
    big[::2] = x
    return {"C": np.ascontiguousarray(x), "F": f, "strided": big[::2]}


@pytest.mark.parametrize("shape", [(12, 8, 5), (9, 5, 8), (3, 6, 6), (1, 1, 1)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_batched_svd(shape, dtype, rng):
    x64 = rng.standard_normal(shape)
    ref = np.linalg.svd(x64, compute_uv=False)
    b, m, n = shape
    k = min(m, n)
    for name, x in batch_layouts(x64.astype(dtype)).items():
        u, s, vh = eigenflow.batched_svd(x)
        assert (u.shape, s.shape, vh.shape) == ((b, m, k), (b, k), (b, k, n)), name
        assert u.dtype == s.dtype == vh.dtype == dtype
        for i in range(b):
            res, orth = svd_ratios(x64[i], u[i], s[i], vh[i])
            assert res < LIMIT and orth < LIMIT, (name, i, res, orth)
            assert value_ratio(x64[i], s[i], ref[i], dtype) < LIMIT
        s_only = eigenflow.batched_svd(x, compute_uv=False)
        assert s_only.shape == (b, k)
        for i in range(b):
            assert value_ratio(x64[i], s_only[i], ref[i], dtype) < LIMIT


def test_batched_empty():
    u, s, vh = eigenflow.batched_svd(np.empty((0, 3, 2)))
    assert (u.shape, s.shape, vh.shape) == ((0, 3, 2), (0, 2), (0, 2, 2))


def test_batched_errors():
    x = np.ones((2, 3, 3))
    x[1, 2, 0] = np.nan
    with pytest.raises(ValueError, match="matrix 1"):
        eigenflow.batched_svd(x)
    with pytest.raises(ValueError):
        eigenflow.batched_svd(np.ones((3, 3)))
