#!/usr/bin/env python3
"""LAPACK dsyevd/ssyevd through scipy (OpenBLAS in the scipy wheel) at the
orders of benches/evd_small.rs, in the same table format: seconds per call of
scipy.linalg.eigh(a, driver="evd"), median over repeats of batches of about
2 ms, on a random symmetric matrix with uniform(-1, 1) entries, with the GEMM
rate of the same BLAS and the times as multiples of T_gemm = 2 n^3 / rate.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 benches/peers_evd.py \\
        [--sizes 2,8,32,...] [--reps 5] [--threads 1,2] [--precisions f64,f32] \\
        [--jobs values,vectors]

Prints which BLAS kernel ran (threadpoolctl) first. Not part of .ci/run: it
needs `pip install scipy threadpoolctl`.
"""
import statistics
import sys
import time

import peers_common


def main():
    args = peers_common.parse("2,8,32,64,128,256,512,1024", 5)
    loaded = peers_common.load()
    if loaded is None:
        return 0
    np, linalg, limits = loaded
    print("| n | job | precision | threads | GEMM (GF/s) | scipy evd (s) | T_gemm |")
    print("|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(42)
    for prec, dtype, threads, rate in peers_common.settings(args, np, limits):
        for job in args.jobs.split(","):
            for n in [int(s) for s in args.sizes.split(",")]:
                x = rng.uniform(-1, 1, (n, n))
                a = np.asfortranarray(np.tril(x) + np.tril(x, -1).T, dtype=dtype)
                values_only = job == "values"

                def f():
                    linalg.eigh(a, driver="evd", eigvals_only=values_only, check_finite=False)

                t = time.perf_counter()
                f()
                once = max(time.perf_counter() - t, 1e-7)
                batch = max(1, min(100000, int(2e-3 / once + 0.999)))
                samples = []
                for _ in range(max(1, args.reps)):
                    t = time.perf_counter()
                    for _ in range(batch):
                        f()
                    samples.append((time.perf_counter() - t) / batch)
                med = statistics.median(samples)
                tg = 2.0 * n**3 / (rate * 1e9)
                print(
                    f"| {n} | {job} | {prec} | {threads} | {rate:.1f} "
                    f"| {med:.3e} | {med / tg:.2f} |"
                )
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
