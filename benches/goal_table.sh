#!/usr/bin/env bash
# Issue 60's goal table in one run: eigenflow (the automatic plan: `eigh` /
# the `evd` example's `--path auto`, the `svd` bench's default options)
# against faer (benches/evd.rs and benches/svd.rs, same processes as
# eigenflow), OpenBLAS through scipy and MKL through its LAPACKE
# (benches/peers_evd.py, benches/peers_svd.py), EVD and SVD, values and
# vectors, f64, 2 threads. Each tool prints the GEMM rate it measured in the
# same run; the table's T_gemm is 2 n^3 over the fastest of them.
#
#   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE PYTHON=venv/bin/python \
#       bash benches/goal_table.sh [SIZES] [REPS]     # default 2048,4096 and 3
#
# Needs the release `evd` example and the `evd` and `svd` benches built
# (`cargo build --release --example evd && cargo bench --no-run --bench evd
# --bench svd`) and, for the peers, `pip install scipy threadpoolctl mkl`.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-2048,4096}
reps=${2:-3}
py=${PYTHON:-python3}
target=${CARGO_TARGET_DIR:-target}
bench() { ls -t "$target"/release/deps/"$1"-* | grep -v '\.d$' | head -1; }
evd_bench=$(bench evd)
svd_bench=$(bench svd)
evd_example=$target/release/examples/evd
common=(--sizes "$sizes" --threads 2 --precisions f64 --jobs values,vectors --reps "$reps")

echo "## eigenflow (auto plan, evd example --path auto): seconds of each run"
for n in ${sizes//,/ }; do
  for job in values vectors; do
    flag=$([ "$job" = values ] && echo --values-only || true)
    for _ in $(seq "$reps"); do
      "$evd_example" --n "$n" --threads 2 --quiet --json $flag |
        "$py" -c 'import json,sys; d=json.loads(sys.stdin.read()); print("AUTO", d["n"], d["job"], d["path"], d["seconds"])'
    done
  done
done
echo "## benches/evd.rs (eigenflow two-stage, faer)"
"$evd_bench" "${common[@]}"
echo "## benches/svd.rs (eigenflow auto plan, faer)"
"$svd_bench" "${common[@]}"
echo "## OpenBLAS (scipy) and MKL, EVD"
(cd benches && "$py" peers_evd.py "${common[@]}")
echo "## OpenBLAS (scipy), SVD"
(cd benches && "$py" peers_svd.py "${common[@]}")
echo "## MKL, SVD"
(cd benches && "$py" peers_svd.py "${common[@]}" --peer mkl)
