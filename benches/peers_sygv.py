#!/usr/bin/env python3
"""LAPACK peers of benches/sygv.rs (issue 65): the generalized problem
A x = λ B x with vectors by eigenflow's Python binding (and, alternately, its
standard EVD of A, for the extra cost in T_gemm) and by LAPACK's dsygvd, through scipy
(`eigh(a, b, driver="gvd")`, OpenBLAS in the scipy wheel) and, with the `mkl`
pip package installed (or $EIGENFLOW_MKL naming libmkl_rt), MKL's LAPACKE
`dsygvd`, each in a process of its own, on pencils made as benches/sygv.rs
makes them (A symmetric uniform(-1, 1), B = M M^T / n + I), with the GEMM rate
of the same BLAS and the times as multiples of T_gemm = 2 n^3 / rate.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 benches/peers_sygv.py \\
        [--sizes 2048,4096] [--reps 3] [--threads 2] [--type 1]

Not part of .ci/run: it needs `pip install scipy threadpoolctl [mkl]`.
"""
import ctypes
import statistics
import subprocess
import sys
import time

import peers_common


def pencil(np, n):
    rng = np.random.default_rng(42)
    x = rng.uniform(-1, 1, (n, n))
    a = np.asfortranarray(np.tril(x) + np.tril(x, -1).T)
    m = rng.uniform(-1, 1, (n, n))
    b = np.asfortranarray(m @ m.T / n + np.eye(n))
    return a, b


def mkl_sygvd(np):
    """`sygvd(a, b, itype, threads)` by MKL's LAPACKE_dsygvd (column-major,
    lower triangles, vectors) on copies, returning the eigenvalues; None
    without MKL."""
    lib = peers_common.mkl_library()
    if lib is None:
        return None
    f = lib.LAPACKE_dsygvd
    f.restype = ctypes.c_int
    p = ctypes.c_void_p
    f.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char, ctypes.c_char, ctypes.c_int,
                  p, ctypes.c_int, p, ctypes.c_int, p]

    def sygvd(a, b, itype, threads):
        lib.MKL_Set_Num_Threads(ctypes.c_int(threads))
        n = a.shape[0]
        wa, wb = np.array(a, order="F", copy=True), np.array(b, order="F", copy=True)
        w = np.empty(n)
        info = f(102, itype, b"V", b"L", n, wa.ctypes.data, n, wb.ctypes.data, n, w.ctypes.data)
        if info != 0:
            raise RuntimeError(f"MKL dsygvd info = {info}")
        return w

    return sygvd


def median_of(run, reps):
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        run()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def child(args, peer):
    """Prints `ROW n threads gemm_rate median_seconds` per case (`-` when
    the peer is missing; for eigenflow a second figure, its standard EVD of
    `a` alone, timed alternately with the generalized problem)."""
    loaded = peers_common.load()
    if loaded is None:
        return 0
    np, linalg, limits = loaded
    mkl = mkl_sygvd(np) if peer == "mkl" else None
    args.precisions = "f64"
    for _, _, threads, rate in peers_common.settings(args, np, limits):
        for n in [int(s) for s in args.sizes.split(",")]:
            a, b = pencil(np, n)
            if peer == "eigenflow":
                import eigenflow

                gen, std = [], []
                for _ in range(args.reps):
                    std.append(median_of(lambda: eigenflow.eigh(a, threads=threads), 1))
                    gen.append(median_of(
                        lambda: eigenflow.eigh(a, b, type=args.type, threads=threads), 1))
                print(f"ROW {n} {threads} {rate:.3f} {statistics.median(gen):.6e} "
                      f"{statistics.median(std):.6e}")
                sys.stdout.flush()
                continue
            if peer == "openblas":
                run = lambda: linalg.eigh(a, b, type=args.type, driver="gvd", check_finite=False)
            elif mkl is None:
                print(f"ROW {n} {threads} {rate:.3f} -")
                continue
            else:
                want = linalg.eigh(a, b, type=args.type, eigvals_only=True, check_finite=False)
                got = mkl(a, b, args.type, threads)
                tol = 1e3 * n * np.finfo(np.float64).eps * max(1.0, float(np.abs(want).max()))
                assert np.abs(got - want).max() <= tol, "MKL dsygvd disagrees with scipy"
                run = lambda: mkl(a, b, args.type, threads)
            print(f"ROW {n} {threads} {rate:.3f} {median_of(run, args.reps):.6e}")
            sys.stdout.flush()
    return 0


def main():
    p = peers_common.parser("2048,4096", 3)
    p.set_defaults(threads="2")
    p.add_argument("--type", type=int, default=1)
    p.add_argument(
        "--peer", default="all", choices=["all", "eigenflow", "openblas", "mkl"],
        help="all (default) runs eigenflow (its Python binding: the generalized "
        "problem and, alternately, its standard EVD) and each peer in a process "
        "of its own and prints one table; the others print raw rows",
    )
    args = p.parse_args()
    if args.peer != "all":
        return child(args, args.peer)
    # One process per peer (their idle BLAS threads spin: see peers_evd.py).
    rows = {}
    for peer in ["eigenflow", "openblas", "mkl"]:
        cmd = [sys.executable, __file__, "--peer", peer] + sys.argv[1:]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("ROW "):
                _, n, threads, rate, *secs = line.split()
                rows.setdefault((n, threads), {})[peer] = (float(rate), secs)
            elif line.startswith("#") and peer != "eigenflow":
                print(line)
    print(f"type {args.type}, f64, with vectors; T_gemm from each process's own GEMM rate")
    print("| n | threads | GEMM (GF/s) | eigenflow (s) | T_gemm | its EVD (s) | extra (T_gemm) "
          "| scipy gvd (s) | T_gemm | MKL sygvd (s) | T_gemm |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (n, threads), got in rows.items():
        rate = got["openblas"][0]
        cols = []
        for peer in ["eigenflow", "openblas", "mkl"]:
            prate, secs = got.get(peer, (rate, ["-"]))
            tg = 2.0 * int(n) ** 3 / (prate * 1e9)
            if secs[0] == "-":
                cols.append("not available | |")
                continue
            cols.append(f"{float(secs[0]):.3f} | {float(secs[0]) / tg:.2f} |")
            if peer == "eigenflow":
                extra = (float(secs[0]) - float(secs[1])) / tg
                cols.append(f"{float(secs[1]):.3f} | {extra:.2f} |")
        print(f"| {n} | {threads} | {rate:.1f} | {' '.join(cols)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
