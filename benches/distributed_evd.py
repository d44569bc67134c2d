"""One bench row of issue 15: the n x n f64 symmetric EVD with vectors, ELPA2
over MPI on 2 ranks (`evd --distributed`) against the single-node eigenflow on
2 threads, in the same run, in seconds and in T_gemm = 2 n^3 / (the machine's
GEMM rate on all cores, numpy's matmul).

Needs the examples built with the feature and the MPI stack installed:
    bash scripts/install-mpi.sh
    cargo build --release --features mpi --examples
    python3 benches/distributed_evd.py [--n 4096] [--ranks 2]
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from peers_common import gemm_rate  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=4096)
p.add_argument("--ranks", type=int, default=2)
p.add_argument("--job", default="vectors", choices=["values", "vectors"])
args = p.parse_args()
root = os.path.join(os.path.dirname(__file__), "..")
evd = os.path.join(root, "target", "release", "examples", "evd")
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
extra = ["--values-only"] if args.job == "values" else []


def run(cmd):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


import numpy as np  # noqa: E402

rate = gemm_rate(np, np.float64)
t_gemm = 2.0 * args.n**3 / (rate * 1e9)
single = run([evd, "--n", str(args.n), "--threads", str(args.ranks), "--json", "--quiet"] + extra)
dist = run(["mpirun", "--oversubscribe", "-np", str(args.ranks), evd, "--distributed",
            "--n", str(args.n), "--json"] + extra)
print(f"# GEMM {rate:.1f} GFLOP/s (numpy, all cores); T_gemm = {t_gemm:.3f} s at n = {args.n}")
print("| n | job | engine | ranks x threads | seconds | T_gemm |")
print("|---|---|---|---|---|---|")
print(f"| {args.n} | {args.job} | eigenflow single node | 1 x {args.ranks} | "
      f"{single['seconds']:.2f} | {single['seconds'] / t_gemm:.1f} |")
print(f"| {args.n} | {args.job} | ELPA2 (grid {dist['grid']}, solve only) | {dist['ranks']} x 1 | "
      f"{dist['solve_s']:.2f} | {dist['solve_s'] / t_gemm:.1f} |")
print(f"| {args.n} | {args.job} | ELPA2 (whole run: generate + solve) | {dist['ranks']} x 1 | "
      f"{dist['seconds']:.2f} | {dist['seconds'] / t_gemm:.1f} |")
