"""``python -m eigenflow.bench``: eigenflow against scipy and numpy in one
process.

For each n (256, 512, ... up to ``--max-n``, default 4096) and a random
symmetric float64 matrix: ``eigenflow.eigh`` against
``scipy.linalg.eigh(driver="evd")`` (LAPACK ``dsyevd``), and on a random
square matrix ``eigenflow.svd`` against ``numpy.linalg.svd(full_matrices=False)``
(LAPACK ``dgesdd``). Each time is the best of ``--repeat`` runs after one
untimed warm-up call at the smallest n; the ratio column is the peer's time
over eigenflow's (above 1: eigenflow is faster). The BLAS under numpy/scipy
and its thread count are printed (they decide the peers' speed).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import eigenflow


def best_of(f, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


def blas_info() -> str:
    try:
        from threadpoolctl import threadpool_info  # optional

        return ", ".join(f"{i['internal_api']} {i.get('num_threads')} threads" for i in threadpool_info())
    except Exception:
        cfg = np.show_config(mode="dicts") if hasattr(np, "show_config") else None
        try:
            return str(cfg["Build Dependencies"]["blas"]["name"])
        except Exception:
            return "unknown"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m eigenflow.bench", description=__doc__.splitlines()[0])
    p.add_argument("--max-n", type=int, default=4096, help="largest order (default 4096)")
    p.add_argument("--min-n", type=int, default=256, help="smallest order (default 256)")
    p.add_argument("--repeat", type=int, default=1, help="runs per entry, best kept (default 1)")
    p.add_argument("--threads", type=int, default=None, help="eigenflow threads (default: every core)")
    p.add_argument("--only", choices=["evd", "svd"], default=None, help="one table only")
    args = p.parse_args(argv)
    import scipy
    import scipy.linalg

    rng = np.random.default_rng(0)
    sizes = []
    n = args.min_n
    while n <= args.max_n:
        sizes.append(n)
        n *= 2
    print(
        f"eigenflow {eigenflow.__version__}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"BLAS: {blas_info()}; float64, best of {args.repeat}"
    )
    # Warm-up: the runtime's threads and the peers' BLAS start once.
    w = rng.standard_normal((64, 64))
    w = w + w.T
    eigenflow.eigh(w, threads=args.threads)
    scipy.linalg.eigh(w, driver="evd")
    eigenflow.svd(w, threads=args.threads)
    np.linalg.svd(w, full_matrices=False)
    if args.only in (None, "evd"):
        print(f"\n{'n':>6} {'eigenflow.eigh s':>17} {'scipy eigh evd s':>17} {'scipy/ef':>9}")
        for n in sizes:
            a = rng.standard_normal((n, n))
            a = a + a.T
            te = best_of(lambda: eigenflow.eigh(a, threads=args.threads), args.repeat)
            ts = best_of(lambda: scipy.linalg.eigh(a, driver="evd"), args.repeat)
            print(f"{n:>6} {te:>17.3f} {ts:>17.3f} {ts / te:>9.2f}", flush=True)
    if args.only in (None, "svd"):
        print(f"\n{'n':>6} {'eigenflow.svd s':>17} {'numpy svd s':>17} {'numpy/ef':>9}")
        for n in sizes:
            a = rng.standard_normal((n, n))
            te = best_of(lambda: eigenflow.svd(a, threads=args.threads), args.repeat)
            tn = best_of(lambda: np.linalg.svd(a, full_matrices=False), args.repeat)
            print(f"{n:>6} {te:>17.3f} {tn:>17.3f} {tn / te:>9.2f}", flush=True)


if __name__ == "__main__":
    main()
