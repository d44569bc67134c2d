"""Shared helpers: test matrices and the LAPACK-style scaled ratios of the
crate's Rust tests (tests/common/mod.rs), computed in float64."""

import numpy as np
import pytest

LIMIT = 30.0


def eps(dtype):
    return float(np.finfo(dtype).eps)


def orthonormal(n, rng):
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


def symmetric(kind, n, rng):
    """A symmetric float64 matrix of a family: random, clustered (eigenvalues
    in three tight clusters), graded (entries spanning 1e-12..1), zero."""
    if kind == "random":
        a = rng.standard_normal((n, n))
        return (a + a.T) / 2
    if kind == "clustered":
        q = orthonormal(n, rng)
        w = np.repeat([-1.0, 0.5, 2.0], (n + 2) // 3)[:n] + 1e-12 * rng.standard_normal(n)
        a = (q * w) @ q.T
        return (a + a.T) / 2
    if kind == "graded":
        d = np.logspace(0, -6, n)
        a = rng.standard_normal((n, n))
        return d[:, None] * (a + a.T) * d[None, :]
    if kind == "zero":
        return np.zeros((n, n))
    raise ValueError(kind)


def eig_ratios(a64, w, v):
    """(||A V - V W||_F / (n ||A||_F eps), ||V^T V - I||_F / (n eps)); an
    unscaled residual for the zero matrix (it must be exactly zero)."""
    n, k = v.shape
    if n == 0 or k == 0:
        return 0.0, 0.0
    e = eps(v.dtype)
    v64, w64 = v.astype(np.float64), w.astype(np.float64)
    r = np.linalg.norm(a64 @ v64 - v64 * w64)
    an = np.linalg.norm(a64)
    res = r / (n * an * e) if an > 0 else r
    orth = np.linalg.norm(v64.T @ v64 - np.eye(k)) / (n * e)
    return res, orth


def value_ratio(a64, w, ref, dtype):
    """max |w - ref| / (n ||A||_F eps): the eigenvalue (or singular value)
    agreement with the float64 reference, scaled like the Rust tests."""
    n = max(a64.shape) if a64.size else 1
    an = np.linalg.norm(a64)
    if w.size == 0:
        return 0.0
    d = np.max(np.abs(w.astype(np.float64) - ref))
    return d / (n * an * eps(dtype)) if an > 0 else d


def svd_ratios(a64, u, s, vh):
    """(||A - U S Vh||_F / (max(m, n) ||A||_F eps), orthogonality of U and Vh / (max(m, n) eps))."""
    m, n = a64.shape
    e = eps(u.dtype)
    mn = max(m, n)
    u64, s64, vh64 = u.astype(np.float64), s.astype(np.float64), vh.astype(np.float64)
    an = np.linalg.norm(a64)
    r = np.linalg.norm(a64 - (u64 * s64) @ vh64)
    res = r / (mn * an * e) if an > 0 else r
    ou = np.linalg.norm(u64.T @ u64 - np.eye(u.shape[1])) / (mn * e)
    ov = np.linalg.norm(vh64 @ vh64.T - np.eye(vh.shape[0])) / (mn * e)
    return res, max(ou, ov)


@pytest.fixture
def rng():
    return np.random.default_rng(20)
