#!/usr/bin/env python3
"""LAPACK dgesdd/sgesdd through scipy (OpenBLAS in the scipy wheel) at the
sizes of benches/svd.rs: seconds of scipy.linalg.svd(a, lapack_driver="gesdd",
full_matrices=False) (vectors) and scipy.linalg.svdvals(a) (values), median
over repeats, on an n x n matrix of standard normal entries, with the GEMM
rate of the same BLAS (numpy's matmul at order 2048) and the times as
multiples of T_gemm = 2 n^3 / rate, the unit of benches/svd.rs.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 benches/peers_svd.py \\
        [--sizes 1024,2048,4096] [--reps 3] [--threads 1,2] [--precisions f64,f32] \\
        [--jobs values,vectors] [--peer openblas|mkl]

`--peer mkl` times MKL's LAPACKE `?gesdd` instead (jobz 'S' or 'N', from the
`mkl` pip package, on a copy of the same matrix, with MKL_Set_Num_Threads;
the GEMM column is then MKL's `cblas_?gemm` at order 2048). Run each peer in a process of its own: the
idle worker threads of one BLAS spin and slow the other down.

Prints which BLAS kernel ran (threadpoolctl) first. Not part of .ci/run: it
needs `pip install scipy threadpoolctl [mkl]`.
"""
import statistics
import sys
import time

import peers_common


def main():
    p = peers_common.parser("1024,2048,4096", 3)
    p.add_argument("--peer", default="openblas", choices=["openblas", "mkl"])
    args = p.parse_args()
    loaded = peers_common.load()
    if loaded is None:
        return 0
    np, linalg, limits = loaded
    mkl = peers_common.load_mkl_gesdd(np) if args.peer == "mkl" else None
    if args.peer == "mkl" and mkl is None:
        return 0
    name = "MKL gesdd" if mkl else "scipy gesdd"
    print(f"| n | job | precision | threads | GEMM (GF/s) | {name} (s) | T_gemm |")
    print("|---|---|---|---|---|---|---|")
    for prec, dtype, threads, rate in peers_common.settings(args, np, limits):
        if mkl is not None:
            rate = mkl.gemm_rate(dtype, threads)
        for job in args.jobs.split(","):
            for n in [int(s) for s in args.sizes.split(",")]:
                a = np.asfortranarray(
                    np.random.default_rng(42).standard_normal((n, n)), dtype=dtype
                )

                def f():
                    if mkl is not None:
                        mkl(a, job == "values", threads)
                    elif job == "values":
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
