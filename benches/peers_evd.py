#!/usr/bin/env python3
"""LAPACK dsyevd/ssyevd through scipy (OpenBLAS in the scipy wheel) at the
orders of benches/evd_small.rs, in the same table format: seconds per call of
scipy.linalg.eigh(a, driver="evd"), median over repeats of batches of about
10 ms (each after one call untimed), on a random symmetric matrix with
uniform(-1, 1) entries, with the GEMM rate of the same BLAS and the times as multiples of T_gemm = 2 n^3 / rate.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 benches/peers_evd.py \\
        [--sizes 2,8,32,...] [--reps 5] [--threads 1,2] [--precisions f64,f32] \\
        [--jobs values,vectors]

Prints which BLAS kernel ran (threadpoolctl) first. With the `mkl` pip
package installed (or $EIGENFLOW_MKL naming libmkl_rt), MKL's LAPACKE
`?syevd` is timed on the same matrix, its own copy per call as scipy makes
one, with MKL_Set_Num_Threads; otherwise its column says "not available".
Not part of .ci/run: it needs `pip install scipy threadpoolctl [mkl]`.
"""
import statistics
import subprocess
import sys
import time

import peers_common


def median_seconds(f, reps):
    """Seconds per call of f: the median over `reps` batches of calls, each
    batch about 10 ms long (at least one call), sized from the fastest of
    three first calls, and each preceded by one call untimed, as
    benches/evd_small.rs does."""
    once = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        f()
        once = min(once, max(time.perf_counter() - t, 1e-7))
    batch = max(1, min(100000, int(1e-2 / once + 0.999)))
    samples = []
    for _ in range(max(1, reps)):
        f()
        t = time.perf_counter()
        for _ in range(batch):
            f()
        samples.append((time.perf_counter() - t) / batch)
    return statistics.median(samples)


def child(args, peer):
    """Times one peer (`openblas`: scipy's eigh(driver="evd"); `mkl`: MKL's
    LAPACKE ?syevd) and prints one machine-readable line per case:
    `ROW n job precision threads gemm_rate seconds` (seconds `-` when the
    peer is not available)."""
    loaded = peers_common.load()
    if loaded is None:
        return 0
    np, linalg, limits = loaded
    mkl = peers_common.load_mkl(np) if peer == "mkl" else None
    rng = np.random.default_rng(42)
    for prec, dtype, threads, rate in peers_common.settings(args, np, limits):
        for job in args.jobs.split(","):
            values_only = job == "values"
            for n in [int(s) for s in args.sizes.split(",")]:
                x = rng.uniform(-1, 1, (n, n))
                a = np.asfortranarray(np.tril(x) + np.tril(x, -1).T, dtype=dtype)
                if peer == "openblas":
                    med = median_seconds(
                        lambda: linalg.eigh(
                            a, driver="evd", eigvals_only=values_only, check_finite=False
                        ),
                        args.reps,
                    )
                elif mkl is None:
                    med = None
                else:
                    # The binding is checked against scipy once per matrix.
                    want = linalg.eigh(a, eigvals_only=True, check_finite=False)
                    got = mkl(a, values_only, threads)
                    scale = max(1.0, float(np.abs(want).max()))
                    tol = 1e3 * n * np.finfo(dtype).eps * scale
                    assert np.abs(got - want).max() <= tol, "MKL ?syevd disagrees with scipy"
                    med = median_seconds(lambda: mkl(a, values_only, threads), args.reps)
                secs = "-" if med is None else f"{med:.6e}"
                print(f"ROW {n} {job} {prec} {threads} {rate:.3f} {secs}")
                sys.stdout.flush()
    return 0


def main():
    p = peers_common.parser("2,8,32,64,128,256,512,1024", 5)
    p.add_argument(
        "--peer",
        default="both",
        choices=["both", "openblas", "mkl"],
        help="both (default) runs each peer in a child process of its own and "
        "prints one table; the others print raw rows",
    )
    args = p.parse_args()
    if args.peer != "both":
        return child(args, args.peer)
    # One process per peer: OpenBLAS's and MKL's idle worker threads spin
    # after a call, so in one process each slows the other down (seen: MKL
    # 10x slower at n = 128 on 2 threads). Same seed, so the same matrices.
    rows = {}
    for peer in ["openblas", "mkl"]:
        cmd = [sys.executable, __file__, "--peer", peer] + sys.argv[1:]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("ROW "):
                _, n, job, prec, threads, rate, secs = line.split()
                key = (n, job, prec, threads)
                rows.setdefault(key, {})[peer] = (float(rate), secs)
            elif (
                line.startswith("#") and peer == "openblas"
                or "MKL" in line
                or "not available" in line
            ):
                # The BLAS that ran, and why a peer is missing (a missing
                # module would otherwise leave an empty table unexplained).
                print(line)
    print(
        "| n | job | precision | threads | GEMM (GF/s) | scipy evd (s) | T_gemm "
        "| MKL syevd (s) | T_gemm |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for (n, job, prec, threads), got in rows.items():
        rate, ob = got["openblas"]
        tg = 2.0 * int(n) ** 3 / (rate * 1e9)
        cols = []
        for peer in ["openblas", "mkl"]:
            secs = got.get(peer, (rate, "-"))[1]
            cols.append("not available | |" if secs == "-" else f"{float(secs):.3e} | {float(secs) / tg:.2f} |")
        print(f"| {n} | {job} | {prec} | {threads} | {rate:.1f} | {cols[0]} {cols[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
