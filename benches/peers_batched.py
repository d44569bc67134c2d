"""numpy's np.linalg.svd on a 3-D batch (a serial loop over LAPACK gesdd)
and np.linalg.eigh / eigvalsh on a 3-D batch of symmetric matrices (a loop
over LAPACK syevd), the peers of benches/batched.rs (issues 12 and 61). Same
shapes, values and vectors; median of --reps runs. Run with OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE unset, e.g.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 benches/peers_batched.py
"""
import argparse
import time

import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cases", default="10000x8,10000x32,1000x128,100x512")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--precision", default="f64")
    p.add_argument("--problems", default="svd,evd")
    a = p.parse_args()
    dtype = np.float64 if a.precision == "f64" else np.float32
    problems = a.problems.split(",")
    print(f"numpy {np.__version__} np.linalg.svd and eigh on a 3-D batch, {a.precision}, median of {a.reps}")
    for case in a.cases.split(","):
        batch, n = (int(x) for x in case.split("x"))
        x = np.random.default_rng(batch * 1000 + n).uniform(-1, 1, (batch, n, n)).astype(dtype)
        for job in ("values", "vectors") if "svd" in problems else ():
            times = []
            for _ in range(a.reps):
                t = time.perf_counter()
                if job == "values":
                    np.linalg.svd(x, compute_uv=False)
                else:
                    np.linalg.svd(x, full_matrices=False)
                times.append(time.perf_counter() - t)
            print(f"{batch:>6} x {n:>3}x{n:<3} {a.precision} {job:7}: numpy {sorted(times)[len(times) // 2]:8.3f} s")
        # Symmetric: numpy reads the lower triangle, as eigenflow does.
        sym = np.tril(x) + np.swapaxes(np.tril(x, -1), -1, -2)
        for job in ("values", "vectors") if "evd" in problems else ():
            times = []
            for _ in range(a.reps):
                t = time.perf_counter()
                if job == "values":
                    np.linalg.eigvalsh(sym)
                else:
                    np.linalg.eigh(sym)
                times.append(time.perf_counter() - t)
            print(f"{batch:>6} x {n:>3}x{n:<3} {a.precision} {job:7} evd: numpy {sorted(times)[len(times) // 2]:8.3f} s")


if __name__ == "__main__":
    main()
