#!/usr/bin/env python3
"""LAPACK dsyevd/ssyevd through scipy (OpenBLAS in the scipy wheel) at the
orders of benches/evd_small.rs, in the same table format: seconds per call of
scipy.linalg.eigh(a, driver="evd"), median over repeats of batches of about
2 ms, on a random symmetric matrix with uniform(-1, 1) entries.

    OPENBLAS_CORETYPE= OPENBLAS_L2_SIZE= python3 benches/peers_evd.py \
        [--sizes 2,8,32,...] [--reps 5] [--threads 1,2] [--precisions f64,f32]

Prints which BLAS kernel ran (threadpoolctl) first. Not part of .ci/run: it
needs `pip install scipy threadpoolctl`.
"""
import argparse
import statistics
import sys
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="2,8,32,64,128,256,512,1024")
    p.add_argument("--reps", type=int, default=5)
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
    print("| n | job | precision | threads | scipy evd (s) |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(42)
    for prec in args.precisions.split(","):
        dtype = {"f64": np.float64, "f32": np.float32}[prec]
        for threads in [int(t) for t in args.threads.split(",")]:
            with threadpool_limits(limits=threads):
                for job in args.jobs.split(","):
                    for n in [int(s) for s in args.sizes.split(",")]:
                        x = rng.uniform(-1, 1, (n, n))
                        a = np.asfortranarray(np.tril(x) + np.tril(x, -1).T, dtype=dtype)
                        values_only = job == "values"

                        def f():
                            scipy.linalg.eigh(
                                a,
                                driver="evd",
                                eigvals_only=values_only,
                                check_finite=False,
                            )

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
                        print(f"| {n} | {job} | {prec} | {threads} | {med:.3e} |")
                        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
