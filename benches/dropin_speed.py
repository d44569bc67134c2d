"""The speed table of issue 66: scipy's and scikit-learn's calls with
``eigenflow.patch()`` against the same calls unpatched, alternated in the
same process (the machine may be shared: only the ratios carry weight).
Prints the median seconds of each side, ``unpatched / patched`` and the
issue's goal; exits 0 whatever the ratios (a measurement, not a test).

    python benches/dropin_speed.py [--reps 3] [--threads 2] [--cases NAMES]

Run by hand with the Python that has eigenflow (built ``--release``),
numpy, scipy and scikit-learn. ``--threads`` sets ``OPENBLAS_NUM_THREADS``,
``MKL_NUM_THREADS`` and ``OMP_NUM_THREADS`` for the unpatched side (unless
already set) before numpy is imported; eigenflow's default runtime takes
every core, so give the machine's core count. Cases: ``top100`` (``scipy.linalg.eigh(a,
subset_by_index=(n-100, n-1))`` with vectors, n = 4096, against scipy's
default driver ``evr``), ``top10`` (the same, top 10 at n = 3000), ``pca``
(``PCA(svd_solver="full").fit`` on 5000x1000), ``kpca``
(``KernelPCA(n_components=10, eigen_solver="dense").fit`` on 3000 samples).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def _args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=3, help="timed calls per side (median)")
    p.add_argument("--threads", type=int, default=2, help="BLAS threads of the unpatched side")
    p.add_argument("--cases", default="top100,top10,pca,kpca", help="comma-separated")
    return p.parse_args()


def _cases(np):
    """name -> (description, goal, function of no argument to time)."""
    import scipy.linalg as sl
    from sklearn.decomposition import PCA, KernelPCA

    rng = np.random.default_rng(66)

    def symmetric(n):
        x = rng.standard_normal((n, n))
        return x + x.T

    a4096, a3000 = symmetric(4096), symmetric(3000)
    x_pca = rng.standard_normal((5000, 1000))
    x_kpca = rng.standard_normal((3000, 20))
    # Looked up at call time, so that the patched scipy.linalg.eigh serves.
    return {
        "top100": (
            "eigh(a, subset_by_index=(n-100, n-1)), vectors, n = 4096",
            1.8,
            lambda: sl.eigh(a4096, subset_by_index=(4096 - 100, 4095)),
        ),
        "top10": (
            "eigh(a, subset_by_index=(n-10, n-1)), vectors, n = 3000",
            1.8,
            lambda: sl.eigh(a3000, subset_by_index=(3000 - 10, 2999)),
        ),
        "pca": (
            'PCA(svd_solver="full").fit, 5000x1000',
            1.5,
            lambda: PCA(svd_solver="full").fit(x_pca),
        ),
        "kpca": (
            'KernelPCA(n_components=10, eigen_solver="dense").fit, 3000 samples',
            1.8,
            lambda: KernelPCA(n_components=10, eigen_solver="dense").fit(x_kpca),
        ),
    }


def _timed(f) -> float:
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def main() -> int:
    opts = _args()
    for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ.setdefault(var, str(opts.threads))
    import numpy as np
    import scipy

    import eigenflow

    cases = _cases(np)
    print(
        f"numpy {np.__version__}, scipy {scipy.__version__}, {opts.threads} threads, "
        f"median of {opts.reps}, unpatched and patched alternated"
    )
    print("| case | unpatched s | patched s | unpatched / patched | goal |")
    print("|---|---|---|---|---|")
    for name in opts.cases.split(","):
        what, goal, f = cases[name]
        f()  # warm-up of both sides: first-call costs are not the call's
        with eigenflow.patched():
            f()
        plain, fast = [], []
        for r in range(opts.reps):
            # Alternate the order, so that neither side always runs first.
            if r % 2 == 0:
                plain.append(_timed(f))
            with eigenflow.patched():
                fast.append(_timed(f))
            if r % 2 == 1:
                plain.append(_timed(f))
        p, q = statistics.median(plain), statistics.median(fast)
        print(f"| {what} | {p:.3f} | {q:.3f} | {p / q:.2f}x | {goal}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
