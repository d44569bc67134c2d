"""eigenflow.numpy and eigenflow.scipy against numpy and scipy themselves:
signatures, result types, values to rounding, and delegation (issue 66)."""

import inspect

import numpy as np
import pytest
import scipy.linalg as sl

import eigenflow
import eigenflow.numpy as enp
import eigenflow.scipy as esp
from eigenflow._report import reset_patch_report

from conftest import LIMIT, eig_ratios, eps, svd_ratios, symmetric, value_ratio

NUMPY_FUNCS = ["eigh", "eigvalsh", "svd"] + (["svdvals"] if hasattr(np.linalg, "svdvals") else [])
SCIPY_FUNCS = ["eigh", "eigvalsh", "svd", "svdvals"]


@pytest.fixture(autouse=True)
def fresh_report(monkeypatch):
    monkeypatch.delenv("EIGENFLOW_PATCH_STRICT", raising=False)
    reset_patch_report()


def counts():
    r = eigenflow.patch_report()
    return r.n_served, r.n_delegated


@pytest.mark.parametrize("name", NUMPY_FUNCS)
def test_numpy_signatures(name):
    assert inspect.signature(getattr(enp, name)) == inspect.signature(enp.ORIGINALS[name])


@pytest.mark.parametrize("name", SCIPY_FUNCS)
def test_scipy_signatures(name):
    assert inspect.signature(getattr(esp, name)) == inspect.signature(esp.ORIGINALS[name])


def close(x, y, dtype, scale=1.0):
    """Entries equal to rounding: within 30 * n * eps of the scale."""
    tol = LIMIT * max(x.shape + (1,)) * eps(dtype) * scale
    np.testing.assert_allclose(x, y, rtol=0, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["random", "clustered", "graded", "zero"])
@pytest.mark.parametrize("n", [1, 7, 40])
def test_numpy_eigh_values_match(kind, n, dtype):
    rng = np.random.default_rng(n)
    a = symmetric(kind, n, rng).astype(dtype)
    a64 = a.astype(np.float64)
    for uplo in ("L", "U", "u"):
        r, ref = enp.eigh(a, UPLO=uplo), np.linalg.eigh(a, UPLO=uplo)
        assert type(r) is type(ref) and r.eigenvalues.dtype == ref.eigenvalues.dtype
        assert r.eigenvectors.dtype == ref.eigenvectors.dtype
        ref64 = ref.eigenvalues.astype(np.float64)
        assert value_ratio(a64, r.eigenvalues, ref64, dtype) < LIMIT
        assert value_ratio(a64, enp.eigvalsh(a, uplo), ref64, dtype) < LIMIT
        assert max(eig_ratios(a64, r.eigenvalues, r.eigenvectors)) < LIMIT
    assert counts() == (6, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1), (9, 4), (4, 9), (30, 30), (0, 3), (3, 0)])
@pytest.mark.parametrize("full", [True, False])
def test_svd_matches(shape, full, dtype):
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal(shape).astype(dtype)
    pairs = ((enp.svd(a, full), np.linalg.svd(a, full)), (esp.svd(a, full), sl.svd(a, full)))
    for ours, ref in pairs:
        assert type(ours) is type(ref)
        for x, y in zip(ours, ref):
            assert x.shape == y.shape and x.dtype == y.dtype
        u, s, vh = ours
        a64 = a.astype(np.float64)
        assert value_ratio(a64, s, ref[1].astype(np.float64), dtype) < LIMIT
        k = min(shape)
        assert max(svd_ratios(a64, u[:, :k], s, vh[:k])) < LIMIT
        # The completed factors (full_matrices) are orthogonal too.
        close(u.T @ u, np.eye(u.shape[1]), dtype)
        close(vh @ vh.T, np.eye(vh.shape[0]), dtype)
    close(enp.svd(a, compute_uv=False), np.linalg.svd(a, compute_uv=False), dtype, 10)
    close(esp.svdvals(a), sl.svdvals(a), dtype, 10)
    assert counts()[1] == 0


def test_numpy_hermitian_svd_and_svdvals():
    rng = np.random.default_rng(3)
    a = symmetric("random", 20, rng)
    u, s, vh = enp.svd(a, hermitian=True)
    ref = np.linalg.svd(a, hermitian=True)
    close(s, ref.S, np.float64, 10)
    close(u * s @ vh, a, np.float64, 10)
    close(enp.svd(a, compute_uv=False, hermitian=True), ref.S, np.float64, 10)
    if "svdvals" in NUMPY_FUNCS:
        close(enp.svdvals(a), np.linalg.svdvals(a), np.float64, 10)
    assert counts()[1] == 0


def test_numpy_stacked_hermitian_svd():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 2, 6, 6))
    a = x + np.swapaxes(x, -1, -2)
    a[0, 0] = np.diag([3.0, -2.0, 0.0, 1.0, -5.0, 4.0])  # a zero and signs
    for dtype in (np.float32, np.float64):
        b = a.astype(dtype)
        u, s, vh = enp.svd(b, hermitian=True)
        ref = np.linalg.svd(b, hermitian=True)
        assert u.shape == vh.shape == (3, 2, 6, 6) and s.shape == (3, 2, 6)
        assert u.dtype == s.dtype == vh.dtype == ref.S.dtype
        close(s, ref.S, dtype, 10)
        close((u * s[..., None, :]) @ vh, b, dtype, 10)
        close(np.swapaxes(u, -1, -2) @ u, np.broadcast_to(np.eye(6), u.shape), dtype, 10)
        close(enp.svd(b, compute_uv=False, hermitian=True), ref.S, dtype, 10)
    np.testing.assert_array_equal(s[0, 0], [5.0, 4.0, 3.0, 2.0, 1.0, 0.0])
    assert counts() == (4, 0)


def test_ndarray_subclasses_are_served_as_numpy_serves_them():
    a = np.diag([2.0, 1.0, 3.0])
    for x in (a.view(Sub), np.ma.array(a, mask=np.eye(3, dtype=bool))):
        for ours, ref in (
            (enp.eigh(x), np.linalg.eigh(x)),
            (enp.svd(x), np.linalg.svd(x)),
            (enp.svd(x, hermitian=True), np.linalg.svd(x, hermitian=True)),
        ):
            assert [type(r) for r in ours] == [type(r) for r in ref]
            close(ours[1 if len(ours) == 3 else 0], ref[1 if len(ref) == 3 else 0], np.float64, 10)
        assert type(enp.eigvalsh(x)) is type(np.linalg.eigvalsh(x))
        np.testing.assert_array_equal(enp.eigvalsh(x), [1.0, 2.0, 3.0])
    assert counts() == (10, 0)


SMALL_REAL_DTYPES = [np.int8, np.int16, np.uint8, np.uint16, np.int32, np.uint64, np.float16, bool]


@pytest.mark.parametrize("dtype", SMALL_REAL_DTYPES)
def test_other_real_dtypes_are_served_in_the_originals_precision(dtype):
    a = np.array([[2, 1, 0], [1, 2, 1], [0, 1, 2]]).astype(dtype)
    for ours, ref in (
        (esp.eigh(a), sl.eigh(a)),
        (esp.eigvalsh(a), sl.eigvalsh(a)),
        (esp.svd(a), sl.svd(a)),
        (esp.svdvals(a), sl.svdvals(a)),
    ):
        ours, ref = (ours, ref) if isinstance(ref, tuple) else ((ours,), (ref,))
        assert [x.dtype for x in ours] == [x.dtype for x in ref]
        close(ours[-2 if len(ref) == 3 else 0], ref[-2 if len(ref) == 3 else 0], ref[0].dtype, 4)
    if np.dtype(dtype) != np.float16:  # numpy refuses float16: delegated
        w, v = enp.eigh(a)
        assert w.dtype == v.dtype == np.linalg.eigh(a).eigenvalues.dtype == np.float64
        close(w, np.linalg.eigvalsh(a), np.float64, 4)
    else:
        with pytest.raises(TypeError):
            enp.eigh(a)
    assert counts() == ((5, 0) if np.dtype(dtype) != np.float16 else (4, 1))


def test_integer_input_is_float64_as_in_numpy_and_scipy():
    a = np.array([[2, 1], [1, 2]])
    assert enp.eigh(a).eigenvalues.dtype == np.linalg.eigh(a).eigenvalues.dtype == np.float64
    assert esp.eigh(a)[0].dtype == sl.eigh(a)[0].dtype == np.float64
    np.testing.assert_allclose(esp.eigvalsh(a), [1, 3], rtol=1e-15)
    assert counts() == (3, 0)


@pytest.mark.parametrize("driver", [None, "ev", "evd", "evr", "evx"])
def test_scipy_eigh_drivers_and_subsets(driver):
    rng = np.random.default_rng(5)
    a = symmetric("random", 60, rng)
    w, v = esp.eigh(a, driver=driver, lower=False)
    wr = sl.eigh(a, driver=driver, lower=False, eigvals_only=True)
    close(w, wr, np.float64, 10)
    if driver not in ("ev", "evd"):
        w, v = esp.eigh(a, subset_by_index=(3, 9), driver=driver)
        close(w, wr[3:10], np.float64, 10)
        assert v.shape == (60, 7)
        close(a @ v, v * w, np.float64, 10)
        lo, hi = (wr[10] + wr[11]) / 2, (wr[20] + wr[21]) / 2
        w = esp.eigvalsh(a, subset_by_value=(lo, hi), driver=driver)
        close(w, wr[11:21], np.float64, 10)
        w = esp.eigh(a, subset_by_value=(-np.inf, lo), eigvals_only=True)
        close(w, wr[:11], np.float64, 10)
    assert counts()[1] == 0


def test_subset_by_value_is_half_open_like_scipy():
    a = np.diag([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(esp.eigvalsh(a, subset_by_value=(1.0, 3.0)), [2.0, 3.0])
    np.testing.assert_array_equal(sl.eigvalsh(a, subset_by_value=(1.0, 3.0)), [2.0, 3.0])
    w, v = esp.eigh(a, subset_by_value=(10.0, 20.0))
    assert w.shape == (0,) and v.shape == (4, 0)


class Sub(np.ndarray):
    pass


class Dispatching(np.ndarray):
    """A subclass with its own ``__array_function__``: numpy's functions
    are its own business, so the drop-ins delegate it."""

    def __array_function__(self, func, types, args, kwargs):
        return super().__array_function__(func, types, args, kwargs)


DELEGATED = [
    ("complex stack", lambda: enp.eigh(np.ones((2, 3, 3), dtype=complex)), "complex"),
    ("complex svd", lambda: enp.svd(np.eye(3, dtype=complex)), "complex"),
    ("longdouble", lambda: esp.eigh(np.eye(3, dtype=np.longdouble)), "dtype"),
    ("complex b", lambda: esp.eigh(np.eye(3), 2 * np.eye(3, dtype=complex)), "complex"),
    ("subclass", lambda: enp.eigvalsh(np.eye(3).view(Dispatching)), "subclass"),
    ("scipy subclass", lambda: esp.eigvalsh(np.eye(3).view(Sub)), "subclass"),
    ("nan", lambda: enp.eigh(np.full((2, 2), np.nan)), "non-finite"),
]


@pytest.mark.parametrize("case", DELEGATED, ids=[c[0] for c in DELEGATED])
def test_delegation_gives_the_originals_result_and_is_counted(case, monkeypatch):
    _, call, word = case
    call()
    r = eigenflow.patch_report()
    assert r.n_served == 0 and r.n_delegated == 1
    ((fn, reason),) = r.delegated
    assert word in reason
    assert word in str(r)
    monkeypatch.setenv("EIGENFLOW_PATCH_STRICT", "1")
    with pytest.raises(eigenflow.DelegationError, match=word):
        call()


def test_delegated_results_are_the_originals():
    a = np.array([[[2, 1j], [-1j, 2]]] * 2)
    w, v = enp.eigh(a)
    w0, v0 = np.linalg.eigh(a)
    np.testing.assert_array_equal(w, w0)
    np.testing.assert_array_equal(v, v0)
    b = np.diag([1.0, 2.0, 4.0]).astype(complex)
    np.testing.assert_array_equal(esp.eigvalsh(np.eye(3), b), sl.eigvalsh(np.eye(3), b))


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_hermitian_eigh_is_served(dtype):
    """One complex Hermitian matrix goes to eigenflow's Hermitian EVD in both
    drop-ins: numpy's and scipy's dtypes, their eigenvalues to rounding, and
    A V = V diag(w) with V unitary (vector phases may differ from LAPACK's)."""
    rng = np.random.default_rng(7)
    g = rng.standard_normal((30, 30)) + 1j * rng.standard_normal((30, 30))
    a = ((g + g.conj().T) / 2).astype(dtype)
    real = np.float32 if dtype == np.complex64 else np.float64
    tol = 30 * 30 * np.finfo(real).eps * np.linalg.norm(a)
    for eigh, eigvalsh, ref in [
        (enp.eigh, enp.eigvalsh, np.linalg.eigvalsh(a)),
        (esp.eigh, esp.eigvalsh, sl.eigvalsh(a)),
    ]:
        w, v = eigh(a)
        assert w.dtype == real and v.dtype == dtype
        assert np.max(np.abs(w - ref)) < tol
        assert np.linalg.norm(a @ v - v * w) < tol
        assert np.linalg.norm(v.conj().T @ v - np.eye(30)) < 30 * 30 * np.finfo(real).eps
        assert np.max(np.abs(eigvalsh(a) - ref)) < tol
    w, v = esp.eigh(a, subset_by_index=(27, 29))
    assert v.shape == (30, 3) and np.max(np.abs(w - sl.eigvalsh(a)[27:])) < tol
    r = eigenflow.patch_report()
    assert r.n_delegated == 0 and r.n_served == 5


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: enp.eigh(np.ones((2, 3))), np.linalg.LinAlgError),
        (lambda: enp.eigh(np.eye(2), UPLO="X"), ValueError),
        (lambda: esp.eigh(np.ones((2, 3))), ValueError),
        (lambda: esp.eigh(np.eye(3), subset_by_index=(2, 5)), ValueError),
        (lambda: esp.eigh(np.eye(3), subset_by_index=(0, 1), driver="evd"), ValueError),
        (lambda: esp.svd(np.eye(3), lapack_driver="gesxx"), ValueError),
        (lambda: esp.eigh(np.array([[1.0, np.inf], [np.inf, 1.0]])), ValueError),
        (lambda: np.linalg.svd(np.full((2, 2), np.nan)), np.linalg.LinAlgError),
        (lambda: enp.svd(np.full((2, 2), np.nan)), np.linalg.LinAlgError),
    ],
)
def test_errors_are_numpys_and_scipys_types(call, error):
    with pytest.raises(error):
        call()


def test_check_finite_false_keeps_the_safety():
    a = np.array([[1.0, np.nan], [np.nan, 1.0]])
    with pytest.raises(ValueError):
        esp.eigh(a, check_finite=False)
    with pytest.raises(ValueError):
        esp.svd(a, check_finite=False)
    assert counts() == (2, 0)


def test_input_is_not_written_even_with_overwrite_a():
    rng = np.random.default_rng(9)
    a = symmetric("random", 30, rng)
    keep = a.copy()
    esp.eigh(a, overwrite_a=True)
    esp.svd(a, overwrite_a=True)
    np.testing.assert_array_equal(a, keep)


def test_np_matrix_results_have_numpys_types():
    m = np.asmatrix(np.diag([2.0, 1.0, 3.0]))
    for ours, ref in (
        (enp.eigh(m), np.linalg.eigh(m)),
        (enp.svd(m), np.linalg.svd(m)),
        (enp.svd(m, hermitian=True), np.linalg.svd(m, hermitian=True)),
    ):
        assert [type(x) for x in ours] == [type(x) for x in ref]
    assert type(enp.eigvalsh(m)) is type(np.linalg.eigvalsh(m))
    assert type(enp.svd(m, compute_uv=False)) is np.ndarray
    np.testing.assert_array_equal(enp.eigvalsh(m), [1.0, 2.0, 3.0])
    assert counts() == (6, 0)
