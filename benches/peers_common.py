"""What benches/peers_evd.py and benches/peers_svd.py share: the command
line, loading scipy and threadpoolctl (and printing which BLAS kernel runs),
the GEMM rate for T_gemm, and the loop over precisions and
thread counts under threadpoolctl's limit."""
import argparse
import ctypes
import glob
import os
import sys
import time


def parse(sizes, reps):
    """The common flags, with this script's default sizes and repeats."""
    return parser(sizes, reps).parse_args()


def parser(sizes, reps):
    """The parser of the common flags (for scripts that add their own)."""
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default=sizes)
    p.add_argument("--reps", type=int, default=reps)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--precisions", default="f64,f32")
    p.add_argument("--jobs", default="values,vectors")
    return p


def load():
    """(numpy, scipy.linalg, threadpool_limits), after printing the BLAS
    libraries threadpoolctl sees; None (and a line saying why) without them."""
    try:
        import numpy as np
        import scipy.linalg
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError as e:
        print(f"scipy/threadpoolctl not available ({e}): no peer column")
        return None
    for info in threadpool_info():
        print(
            f"# {info.get('internal_api')} {info.get('version')} "
            f"kernel={info.get('architecture')} threads={info.get('num_threads')} "
            f"({info.get('filepath')})"
        )
    return np, scipy.linalg, threadpool_limits


def gemm_rate(np, dtype, n=2048):
    """GFLOP/s of numpy's matmul at order n, best of 3 (numpy's wheel bundles
    its own OpenBLAS build beside scipy's; threadpoolctl limits both)."""
    a = np.asfortranarray(np.random.default_rng(1).standard_normal((n, n)), dtype=dtype)
    b = np.asfortranarray(np.random.default_rng(2).standard_normal((n, n)), dtype=dtype)
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2.0 * n**3 / best / 1e9


def settings(args, np, threadpool_limits):
    """Yields (precision name, dtype, threads, GEMM GF/s) with the BLAS limited
    to that many threads while the caller times its cases."""
    for prec in args.precisions.split(","):
        dtype = {"f64": np.float64, "f32": np.float32}[prec]
        for threads in [int(t) for t in args.threads.split(",")]:
            with threadpool_limits(limits=threads):
                yield prec, dtype, threads, gemm_rate(np, dtype)


def mkl_library():
    """The `mkl` pip package's `libmkl_rt` (or the library named by
    $EIGENFLOW_MKL), loaded, after a line saying which; None (and a line
    saying why) when it is not installed."""
    names = [os.environ.get("EIGENFLOW_MKL", "")]
    for root in [sys.prefix, os.path.expanduser("~/.local")]:
        names += sorted(glob.glob(os.path.join(root, "lib", "libmkl_rt.so*")))
    for name in [n for n in names if n]:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        version = ctypes.create_string_buffer(256)
        lib.MKL_Get_Version_String(version, 256)
        print(f"# MKL: {version.value.decode(errors='replace')} ({name})")
        return lib
    print("# MKL: not available (pip install mkl, or set EIGENFLOW_MKL)")
    return None


def load_mkl(np):
    """A function `syevd(a, values_only, threads)` that runs MKL's LAPACKE
    `?syevd` (column-major, lower triangle) on a copy of the Fortran-ordered
    `a` and returns the eigenvalues, from :func:`mkl_library`; None when it
    is not installed."""
    lib = mkl_library()
    if lib is None:
        return None
    col_major, ptr = 102, ctypes.c_void_p
    fns = {np.dtype(np.float64): lib.LAPACKE_dsyevd, np.dtype(np.float32): lib.LAPACKE_ssyevd}
    for f in fns.values():
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_int, ctypes.c_char, ctypes.c_char, ctypes.c_int, ptr, ctypes.c_int, ptr]

    def syevd(a, values_only, threads):
        lib.MKL_Set_Num_Threads(ctypes.c_int(threads))
        n = a.shape[0]
        work = np.array(a, order="F", copy=True)
        w = np.empty(n, dtype=a.dtype)
        info = fns[a.dtype](
            col_major, b"N" if values_only else b"V", b"L", n,
            work.ctypes.data, max(1, n), w.ctypes.data,
        )
        if info != 0:
            raise RuntimeError(f"MKL ?syevd info = {info}")
        return w

    return syevd

def load_mkl_gesdd(np):
    """A function `gesdd(a, values_only, threads)` that runs MKL's LAPACKE
    `?gesdd` (column-major; jobz 'S' with vectors, the thin factors as
    scipy's `svd(full_matrices=False)`, else 'N') on a copy of the
    Fortran-ordered `a` and returns the singular values, from
    [`mkl_library`]; None when it is not installed. Its attribute
    `gemm_rate(dtype, threads)` is MKL's GEMM rate."""
    lib = mkl_library()
    if lib is None:
        return None
    col_major, ptr, i = 102, ctypes.c_void_p, ctypes.c_int
    fns = {np.dtype(np.float64): lib.LAPACKE_dgesdd, np.dtype(np.float32): lib.LAPACKE_sgesdd}
    for f in fns.values():
        f.restype = i
        f.argtypes = [i, ctypes.c_char, i, i, ptr, i, ptr, ptr, i, ptr, i]

    gemm = {np.dtype(np.float64): lib.cblas_dgemm, np.dtype(np.float32): lib.cblas_sgemm}

    def gemm_rate(dtype, threads, n=2048):
        """GFLOP/s of MKL's `cblas_?gemm` at order n on `threads` threads,
        best of 3 (the T_gemm of the MKL column)."""
        lib.MKL_Set_Num_Threads(ctypes.c_int(threads))
        dt = np.dtype(dtype)
        f = gemm[dt]
        scalar = ctypes.c_double if dt == np.float64 else ctypes.c_float
        f.restype = None
        f.argtypes = [i, i, i, i, i, i, scalar, ptr, i, ptr, i, scalar, ptr, i]
        x = np.asfortranarray(np.random.default_rng(1).standard_normal((n, n)), dtype=dt)
        y = np.asfortranarray(np.random.default_rng(2).standard_normal((n, n)), dtype=dt)
        z = np.zeros((n, n), dtype=dt, order="F")
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            f(col_major, 111, 111, n, n, n, 1.0, x.ctypes.data, n, y.ctypes.data, n, 0.0,
              z.ctypes.data, n)
            best = min(best, time.perf_counter() - t)
        return 2.0 * n**3 / best / 1e9

    def gesdd(a, values_only, threads):
        lib.MKL_Set_Num_Threads(ctypes.c_int(threads))
        m, n = a.shape
        k = min(m, n)
        work = np.array(a, order="F", copy=True)
        s = np.empty(k, dtype=a.dtype)
        u = np.empty((m, 1 if values_only else k), dtype=a.dtype, order="F")
        vt = np.empty((1 if values_only else k, n), dtype=a.dtype, order="F")
        info = fns[a.dtype](
            col_major, b"N" if values_only else b"S", m, n, work.ctypes.data, max(1, m),
            s.ctypes.data, u.ctypes.data, max(1, m), vt.ctypes.data, max(1, vt.shape[0]),
        )
        if info != 0:
            raise RuntimeError(f"MKL ?gesdd info = {info}")
        return s

    gesdd.gemm_rate = gemm_rate
    return gesdd
