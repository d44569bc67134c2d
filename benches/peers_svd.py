#!/usr/bin/env python3
"""LAPACK dgesdd/sgesdd through scipy (OpenBLAS in the scipy wheel) at the
sizes of benches/svd.rs: seconds of scipy.linalg.svd(a, lapack_driver="gesdd",
full_matrices=False) (vectors) and scipy.linalg.svdvals(a) (values), median
over repeats, on an n x n matrix of standard normal entries, with the GEMM
rate of the same BLAS (numpy's matmul at order 2048) and the times as
multiples of T_gemm = 2 n^3 / rate, the unit of benches/svd.rs.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 benches/peers_svd.py \\
        [--sizes 1024,2048,4096] [--reps 3] [--threads 1,2] [--precisions f64,f32] \\
        [--jobs values,vectors]

Prints which BLAS kernel ran (threadpoolctl) first. Not part of .ci/run: it
needs `pip install scipy threadpoolctl`.
"""
import statistics
import sys
import time

import peers_common


def main():
    args = peers_common.parse("1024,2048,4096", 3)
    loaded = peers_common.load()
    if loaded is None:
        return 0
    np, linalg, limits = loaded
    print("| n | job | precision | threads | GEMM (GF/s) | scipy gesdd (s) | T_gemm |")
    print("|---|---|---|---|---|---|---|")
    for prec, dtype, threads, rate in peers_common.settings(args, np, limits):
        for job in args.jobs.split(","):
            for n in [int(s) for s in args.sizes.split(",")]:
                a = np.asfortranarray(
                    np.random.default_rng(42).standard_normal((n, n)), dtype=dtype
                )

                def f():
                    if job == "values":
                        linalg.svdvals(a, check_finite=False)
                    else:
                        linalg.svd(
                            a, full_matrices=False, lapack_driver="gesdd", check_finite=False
                        )

                samples = []
                for _ in range(max(1, args.reps)):
                    t = time.perf_counter()
                    f()
                    samples.append(time.perf_counter() - t)
                med = statistics.median(samples)
                tg = 2.0 * n**3 / (rate * 1e9)
                print(
                    f"| {n} | {job} | {prec} | {threads} | {rate:.1f} "
                    f"| {med:.3f} | {med / tg:.2f} |"
                )
                sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
