"""Complex Hermitian input to eigenflow.eigh / eigvalsh (issue 62): numpy's
conventions (real eigenvalues of the real dtype, complex eigenvectors),
checked against numpy.linalg.eigh with LAPACK-style scaled ratios."""

import numpy as np
import pytest

import eigenflow

LIMIT = 30.0


def hermitian(n, dtype, seed):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    return ((g + g.conj().T) / 2).astype(dtype)


def real_of(dtype):
    return np.float32 if np.dtype(dtype) == np.complex64 else np.float64


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("n", [1, 2, 7, 64, 200])
def test_eigh_against_numpy(dtype, n):
    a = hermitian(n, dtype, n)
    w, v = eigenflow.eigh(a)
    assert w.dtype == real_of(dtype) and v.dtype == dtype and v.shape == (n, n)
    eps = np.finfo(real_of(dtype)).eps / 2
    a64 = a.astype(np.complex128)
    norm = np.linalg.norm(a64)
    ref = np.linalg.eigvalsh(a64)
    assert np.max(np.abs(w - ref)) / (n * norm * eps) < LIMIT
    v64, w64 = v.astype(np.complex128), w.astype(np.float64)
    assert np.linalg.norm(a64 @ v64 - v64 * w64) / (n * norm * eps) < LIMIT
    assert np.linalg.norm(v64.conj().T @ v64 - np.eye(n)) / (n * eps) < LIMIT
    w2 = eigenflow.eigvalsh(a)
    assert w2.dtype == real_of(dtype) and np.max(np.abs(w2 - ref)) / (n * norm * eps) < LIMIT


def test_upper_triangle_and_the_diagonal_imaginary_part():
    a = hermitian(40, np.complex128, 3)
    b = a.copy()
    b[np.tril_indices(40, -1)] = np.nan  # not read with lower=False
    b[np.diag_indices(40)] += 5j  # ignored, as LAPACK ignores it
    w, v = eigenflow.eigh(b, lower=False)
    assert np.allclose(w, np.linalg.eigvalsh(a), atol=1e-12)
    assert np.linalg.norm(a @ v - v * w) < 1e-11


def test_nan_in_the_imaginary_part_names_row_and_column():
    a = hermitian(6, np.complex128, 4)
    a[4, 1] = complex(0.5, np.nan)
    with pytest.raises(ValueError, match="row 4, column 1"):
        eigenflow.eigh(a)


def test_subset_and_empty():
    a = hermitian(50, np.complex128, 5)
    w, v = eigenflow.eigh(a, subset_by_index=(47, 49))
    ref = np.linalg.eigvalsh(a)
    assert np.allclose(w, ref[47:], atol=1e-12) and v.shape == (50, 3)
    w, v = eigenflow.eigh(np.zeros((0, 0), np.complex64))
    assert w.dtype == np.float32 and v.dtype == np.complex64


def test_complex_stacks_and_svd_still_refused():
    with pytest.raises(ValueError, match="complex"):
        eigenflow.eigh(np.zeros((2, 3, 3), np.complex128))
    with pytest.raises(ValueError, match="dtype"):
        eigenflow.svd(np.eye(3, dtype=np.complex128))
