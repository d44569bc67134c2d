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
import argparse
import statistics
import sys
import time


def gemm_rate(np, dtype, n=2048):
    a = np.asfortranarray(np.random.default_rng(1).standard_normal((n, n)), dtype=dtype)
    b = np.asfortranarray(np.random.default_rng(2).standard_normal((n, n)), dtype=dtype)
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2.0 * n**3 / best / 1e9


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="1024,2048,4096")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--precisions", default="f64,f32")
    p.add_argument("--jobs", default="values,vectors")
    args = p.parse_args()
    try:
        import numpy as np
        import scipy.linalg
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError as e:
        print(f"scipy/threadpoolctl not available ({e}): no peer column")
        return 0
    for info in threadpool_info():
        print(
            f"# {info.get('internal_api')} {info.get('version')} "
            f"kernel={info.get('architecture')} threads={info.get('num_threads')} "
            f"({info.get('filepath')})"
        )
    print("| n | job | precision | threads | GEMM (GF/s) | scipy gesdd (s) | T_gemm |")
    print("|---|---|---|---|---|---|---|")
    for prec in args.precisions.split(","):
        dtype = {"f64": np.float64, "f32": np.float32}[prec]
        for threads in [int(t) for t in args.threads.split(",")]:
            with threadpool_limits(limits=threads):
                rate = gemm_rate(np, dtype)
                for job in args.jobs.split(","):
                    for n in [int(s) for s in args.sizes.split(",")]:
                        a = np.asfortranarray(
                            np.random.default_rng(42).standard_normal((n, n)), dtype=dtype
                        )

                        def f():
                            if job == "values":
                                scipy.linalg.svdvals(a, check_finite=False)
                            else:
                                scipy.linalg.svd(
                                    a,
                                    full_matrices=False,
                                    lapack_driver="gesdd",
                                    check_finite=False,
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
