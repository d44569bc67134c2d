#!/usr/bin/env bash
# The output of the `evd`, `svd` and `batched_svd` examples, hashed file by
# file, so that a change meant to move code without changing a result can show
# that it did not (issue 59: every step of a structural pass reproduces these
# hashes exactly).
#
#   bash scripts/output-hashes.sh            # compare with scripts/output-hashes.txt
#   bash scripts/output-hashes.sh --record   # rewrite scripts/output-hashes.txt
#
# The examples are built with `cargo build --release --examples` first, unless
# EXAMPLES_DIR names a directory holding the three binaries already. The hashes
# are of the .npy files only: result.json holds timings. Every run uses two
# threads; the results do not depend on the thread count (the tests check that),
# so the hashes hold on any machine whose floating point is IEEE (the kernels
# choose their SIMD width at run time, so a machine without AVX-512 may differ
# in f32 reductions: record on the machine you compare on).
set -euo pipefail
cd "$(dirname "$0")/.."
record=0
[ "${1:-}" = "--record" ] && record=1
if [ -z "${EXAMPLES_DIR:-}" ]; then
  cargo build --release --quiet --example evd --example svd --example batched_svd
  EXAMPLES_DIR="${CARGO_TARGET_DIR:-target}/release/examples"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# run NAME EXAMPLE ARGS...: one example run writing its result set to $out/NAME.
run() {
  local name=$1 example=$2
  shift 2
  "$EXAMPLES_DIR/$example" --threads 2 --quiet --output "$out/$name" "$@" >/dev/null 2>"$out/$name.log" ||
    { echo "failed: $example $*" >&2; cat "$out/$name.log" >&2; exit 1; }
}

# The evd runs name the two-stage graph: `--path auto`, the default, takes the
# one-stage path below the crossover measured on each machine kind.
for p in f64 f32; do
  for n in 30 300 1000 3000; do
    run "evd-$p-n$n-values" evd --path two-stage --n "$n" --precision "$p" --values-only
    run "evd-$p-n$n-vectors" evd --path two-stage --n "$n" --precision "$p"
  done
  run "evd-$p-n1000-top10" evd --path two-stage --n 1000 --precision "$p" --top 10
  run "evd-$p-n700-index" evd --path two-stage --n 700 --precision "$p" --index 100:140 --values-only
  # Forced out of core: 1000^2 f64 words is 8 MB; a 48 MiB limit (the
  # process's own resident memory counts) leaves no room for the in-memory plan.
  # (In f32 the in-memory graph fits: that run stays in memory, on the graph.)
  run "evd-$p-n1000-ooc" evd --path two-stage --n 1000 --precision "$p" --memory-limit 48MiB
  for shape in "700 500" "500 700"; do
    set -- $shape
    run "svd-$p-$1x$2-values" svd --m "$1" --n "$2" --precision "$p" --values-only
    run "svd-$p-$1x$2-vectors" svd --m "$1" --n "$2" --precision "$p"
  done
  run "svd-$p-600x600-top8" svd --m 600 --n 600 --precision "$p" --top 8
  for method in jacobi gebrd; do
    run "batched-$p-$method-values" batched_svd --batch 50 --n 24 --m 30 --precision "$p" --method "$method" --values-only
    run "batched-$p-$method-vectors" batched_svd --batch 50 --n 24 --m 30 --precision "$p" --method "$method"
  done
done
grep -l "out of core" "$out"/evd-*-ooc.log >/dev/null ||
  { echo "the out-of-core runs did not go out of core: lower their --memory-limit" >&2; exit 1; }

hashes=$(cd "$out" && find . -mindepth 2 -maxdepth 2 -name '*.npy' | LC_ALL=C sort | xargs sha256sum)
if [ "$record" = 1 ]; then
  echo "$hashes" >scripts/output-hashes.txt
  echo "recorded $(echo "$hashes" | wc -l) hashes in scripts/output-hashes.txt"
elif diff <(echo "$hashes") scripts/output-hashes.txt; then
  echo "all $(echo "$hashes" | wc -l) output hashes identical"
else
  echo "output hashes differ (lines above: < now, > recorded)" >&2
  exit 1
fi
