"""Stacked input (issue 61): eigh, eigvalsh, svd and svdvals on (..., n, n)
and (..., m, n) arrays against numpy's stacked results, matrix by matrix."""

import numpy as np
import pytest

import eigenflow
import eigenflow.numpy as enp
from conftest import LIMIT, eig_ratios, svd_ratios, symmetric, value_ratio

KINDS = ["random", "clustered", "graded", "zero"]


def sym_stack(lead, n, rng):
    """A float64 stack of symmetric n x n matrices of every family."""
    b = int(np.prod(lead))
    mats = [symmetric(KINDS[i % len(KINDS)], n, rng) for i in range(b)]
    return np.array(mats).reshape(tuple(lead) + (n, n))


def each(lead):
    return list(np.ndindex(*lead))


@pytest.mark.parametrize("lead, n", [((5,), 3), ((2, 3), 8), ((7,), 1), ((2, 2, 2), 33)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_eigh_stacked(lead, n, dtype, rng):
    a64 = sym_stack(lead, n, rng)
    a = a64.astype(dtype)
    w, v = eigenflow.eigh(a)
    assert w.shape == lead + (n,) and v.shape == lead + (n, n)
    assert w.dtype == v.dtype == dtype
    ref = np.linalg.eigvalsh(a.astype(np.float64))
    assert ref.shape == w.shape
    wo = eigenflow.eigvalsh(a)
    assert wo.shape == lead + (n,) and wo.dtype == dtype
    for i in each(lead):
        res, orth = eig_ratios(a64[i], w[i], v[i])
        assert res < LIMIT and orth < LIMIT, (i, res, orth)
        assert value_ratio(a64[i], w[i], ref[i], dtype) < LIMIT, i
        assert value_ratio(a64[i], wo[i], ref[i], dtype) < LIMIT, i


def test_eigh_stacked_reads_the_chosen_triangle(rng):
    a = sym_stack((4,), 6, rng)
    low = np.tril(a) + np.triu(rng.standard_normal(a.shape), 1)
    up = np.triu(a) + np.tril(rng.standard_normal(a.shape), -1)
    ref = np.linalg.eigvalsh(a)
    for x, lower in ((low, True), (up, False)):
        for order in ("C", "F"):
            y = np.array(x, order=order)
            w = eigenflow.eigvalsh(y, lower=lower)
            wn = np.linalg.eigvalsh(y, UPLO="L" if lower else "U")
            np.testing.assert_allclose(w, ref, atol=1e-12)
            np.testing.assert_allclose(wn, ref, atol=1e-12)


def test_eigh_stacked_layouts_give_the_same_bits(rng):
    a = sym_stack((6,), 5, rng)
    w, v = eigenflow.eigh(a)
    # Each matrix Fortran-ordered, one after another; and a strided view.
    f = np.swapaxes(np.ascontiguousarray(np.swapaxes(a, -1, -2)), -1, -2)
    assert not f.flags.c_contiguous
    big = np.zeros((12, 5, 5))
    big[::2] = a
    for x in (f, big[::2]):
        wx, vx = eigenflow.eigh(x)
        np.testing.assert_array_equal(wx, w)
        np.testing.assert_array_equal(vx, v)
    for t in (1, 2):
        wt, vt = eigenflow.eigh(a, threads=t)
        np.testing.assert_array_equal(wt, w)
        np.testing.assert_array_equal(vt, v)


@pytest.mark.parametrize("lead, shape", [((4,), (5, 3)), ((2, 3), (3, 6)), ((3,), (1, 1)),
                                         ((2, 1, 2), (40, 40))])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_svd_stacked(lead, shape, dtype, rng):
    m, n = shape
    k = min(m, n)
    a64 = rng.standard_normal(lead + shape)
    a = a64.astype(dtype)
    u, s, vh = eigenflow.svd(a)
    assert (u.shape, s.shape, vh.shape) == (lead + (m, k), lead + (k,), lead + (k, n))
    assert u.dtype == s.dtype == vh.dtype == dtype
    ref = np.linalg.svd(a.astype(np.float64), compute_uv=False)
    sv = eigenflow.svdvals(a)
    assert sv.shape == lead + (k,) and sv.dtype == dtype
    uf, sf, vhf = eigenflow.svd(a, full_matrices=True)
    assert (uf.shape, sf.shape, vhf.shape) == (lead + (m, m), lead + (k,), lead + (n, n))
    for i in each(lead):
        res, orth = svd_ratios(a64[i], u[i], s[i], vh[i])
        assert res < LIMIT and orth < LIMIT, (i, res, orth)
        assert value_ratio(a64[i], s[i], ref[i], dtype) < LIMIT, i
        assert value_ratio(a64[i], sv[i], ref[i], dtype) < LIMIT, i
        np.testing.assert_array_equal(sf[i], s[i])
        for q in (uf[i], vhf[i]):
            q64 = q.astype(np.float64)
            assert np.linalg.norm(q64.T @ q64 - np.eye(q.shape[0])) / (q.shape[0] * np.finfo(dtype).eps) < LIMIT
        res, _ = svd_ratios(a64[i], uf[i][:, :k], sf[i], vhf[i][:k, :])
        assert res < LIMIT, (i, res)


@pytest.mark.parametrize("lead", [(0,), (2, 0), (0, 3)])
def test_empty_stacks(lead):
    a = np.empty(lead + (3, 3), np.float32)
    w, v = eigenflow.eigh(a)
    ref_w, ref_v = np.linalg.eigh(a)
    assert (w.shape, v.shape) == (ref_w.shape, ref_v.shape) == (lead + (3,), lead + (3, 3))
    assert w.dtype == v.dtype == np.float32
    assert eigenflow.eigvalsh(a).shape == lead + (3,)
    x = np.empty(lead + (4, 2))
    for full in (False, True):
        got = eigenflow.svd(x, full_matrices=full)
        want = np.linalg.svd(x, full_matrices=full)
        assert [g.shape for g in got] == [r.shape for r in want]
    assert eigenflow.svdvals(x).shape == lead + (2,)


def test_stacks_of_empty_matrices():
    w, v = eigenflow.eigh(np.empty((3, 0, 0)))
    assert (w.shape, v.shape) == ((3, 0), (3, 0, 0))
    for full in (False, True):
        got = eigenflow.svd(np.empty((2, 3, 0)), full_matrices=full)
        want = np.linalg.svd(np.empty((2, 3, 0)), full_matrices=full)
        assert [g.shape for g in got] == [r.shape for r in want]
        for g, r in zip(got, want):
            np.testing.assert_array_equal(g, r)


def test_error_names_the_matrix():
    a = np.stack([np.eye(3)] * 5)
    a[3, 2, 1] = np.nan
    for f in (eigenflow.eigh, eigenflow.eigvalsh, eigenflow.svd, eigenflow.svdvals):
        with pytest.raises(ValueError, match="matrix 3 of the batch"):
            f(a)
    b = np.stack([np.eye(3)] * 6).reshape(2, 3, 3, 3)
    b[1, 2, 0, 0] = np.inf
    for f in (eigenflow.eigh, eigenflow.eigvalsh, eigenflow.svd, eigenflow.svdvals):
        with pytest.raises(ValueError, match=r"matrix \(1, 2\) of the stack"):
            f(b)
    # The entry above the diagonal is not read by eigh (lower triangle).
    c = np.stack([np.eye(3)] * 2)
    c[1, 0, 2] = np.nan
    assert np.all(eigenflow.eigvalsh(c) == 1.0)
    with pytest.raises(ValueError, match="matrix 1 of the batch"):
        eigenflow.eigvalsh(c, lower=False)


def test_stacked_argument_errors():
    with pytest.raises(ValueError, match="square"):
        eigenflow.eigh(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="stack"):
        eigenflow.eigh(np.stack([np.eye(3)] * 2), subset_by_index=(0, 1))


def test_dropin_serves_stacks(rng):
    a = sym_stack((2, 3), 4, rng)
    before = eigenflow.patch_report()
    w, v = enp.eigh(a)
    wr = np.linalg.eigvalsh(a)
    np.testing.assert_allclose(w, wr, atol=1e-12)
    np.testing.assert_allclose(enp.eigvalsh(a, UPLO="U"), wr, atol=1e-12)
    x = rng.standard_normal((3, 5, 2))
    u, s, vh = enp.svd(x)
    assert (u.shape, s.shape, vh.shape) == ((3, 5, 5), (3, 2), (3, 2, 2))
    np.testing.assert_allclose(s, np.linalg.svd(x, compute_uv=False), atol=1e-12)
    np.testing.assert_allclose(enp.svd(x, compute_uv=False), s, atol=0)
    after = eigenflow.patch_report()
    assert after.n_delegated == before.n_delegated
    assert after.n_served == before.n_served + 4
