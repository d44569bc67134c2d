"""The generalized problem on ill-conditioned ``b`` against LAPACK on the
same pencil (issue 65): the Cholesky method loses accuracy as ``cond(b)``
grows, LAPACK's ``sygvd`` as ours, so the bound is relative to LAPACK's own
figures, measured in the same run on the same pencil: each of our ratios at
most ``3 * LAPACK's + 30``.

The floor of 30 is the bound for a well-conditioned ``b`` (the scaled
ratios' usual threshold, LAPACK's testing included): where LAPACK's figure
is small (a few units of ``n eps``), three times it says nothing about
rounding noise, and any correct solver may differ from it by the ordinary
``O(n eps)`` of a different but backward stable summation order.

Run as a script (``python test_generalized_accuracy.py``) for the table of
figures that docs/generalized.md records.
"""

import numpy as np
import pytest
import scipy.linalg as sl

import eigenflow
from test_generalized import gen_ratios

N = 300
FLOOR = 30.0

# (name, b kind, cond(b)): the pencils in float64, and looser ones in
# float32 (eps 6e-8: cond 1e8 in f32 is already past the method's limit).
F64_PENCILS = [
    ("dense", 1e4),
    ("dense", 1e5),
    ("dense", 1e8),
    ("graded", 1e6),
    ("graded", 1e8),
    ("graded", 1e12),
]
F32_PENCILS = [
    ("dense", 1e2),
    ("dense", 1e3),
    ("dense", 1e4),
    ("graded", 1e3),
    ("graded", 1e4),
    ("graded", 1e6),
]


def pencil(kind, cond, n, seed):
    """A random symmetric ``a`` and an SPD ``b`` of condition ``cond``:
    dense (``Q diag(s) Q^T``, ``s`` geometric from 1 to ``1/cond``) or a
    graded diagonal (the same ``s`` in order), in float64."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n))
    a = (a + a.T) / 2
    s = np.geomspace(1.0, 1.0 / cond, n)
    if kind == "graded":
        return a, np.diag(s)
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    q = q * np.sign(np.diag(r))
    b = (q * s) @ q.T
    return a, (b + b.T) / 2


def figures(kind, cond, t, dtype, seed=0):
    """``(ours, lapack)``, each ``(backward error, orthogonality)``."""
    a64, b64 = pencil(kind, cond, N, seed)
    a, b = a64.astype(dtype), b64.astype(dtype)
    w, x = eigenflow.eigh(a, b, type=t)
    ours = gen_ratios(a, b, t, w, x, dtype)
    wl, xl = sl.eigh(a, b, type=t, driver="gvd")
    lapack = gen_ratios(a, b, t, wl, xl, dtype)
    return ours, lapack


CASES = [(k, c, t, np.float64) for k, c in F64_PENCILS for t in (1, 2, 3)] + [
    (k, c, t, np.float32) for k, c in F32_PENCILS for t in (1, 2, 3)
]


@pytest.mark.parametrize(
    "kind, cond, t, dtype",
    CASES,
    ids=[f"{k}-{c:.0e}-type{t}-{np.dtype(d).name}" for k, c, t, d in CASES],
)
def test_no_worse_than_three_times_lapack(kind, cond, t, dtype):
    ours, lapack = figures(kind, cond, t, dtype)
    for what, o, ref in zip(("backward error", "B-orthogonality"), ours, lapack):
        assert o <= 3 * ref + FLOOR, f"{what}: ours {o:.3g}, LAPACK {ref:.3g}"


def test_a_selection_is_no_worse_than_lapacks_gvx():
    a, b = pencil("dense", 1e5, N, 1)
    for t in (1, 2, 3):
        w, x = eigenflow.eigh(a, b, type=t, subset_by_index=(20, 59))
        wl, xl = sl.eigh(a, b, type=t, subset_by_index=(20, 59), driver="gvx")
        ours = gen_ratios(a, b, t, w, x, np.float64)
        lapack = gen_ratios(a, b, t, wl, xl, np.float64)
        for o, ref in zip(ours, lapack):
            assert o <= 3 * ref + FLOOR, (t, ours, lapack)


if __name__ == "__main__":
    print("| dtype | B | cond(B) | type | backward: ours | LAPACK | B-orth.: ours | LAPACK |")
    print("|---|---|---|---|---|---|---|---|")
    for kind, cond, t, dtype in CASES:
        (ob, oo), (lb, lo) = figures(kind, cond, t, dtype)
        name = np.dtype(dtype).name
        print(f"| {name} | {kind} | {cond:.0e} | {t} | {ob:.3g} | {lb:.3g} | {oo:.3g} | {lo:.3g} |")
