#!/usr/bin/env bash
# Which top-level module of src/ imports which (non-test code): one line per
# module, `module -> imported modules`, then the import circles between
# top-level modules (pairs that import each other). Reads `crate::<module>`
# paths and `use crate::{...}` groups as text; lines inside `#[cfg(test)]`
# modules and files named tests.rs / *_tests.rs / tests/ are skipped.
set -euo pipefail
cd "$(dirname "$0")/../src"
tops=$(ls | sed 's/\.rs$//' | grep -v '^lib$' | sort -u)
declare -A imports
for m in $tops; do
  files=$( { [ -d "$m" ] && find "$m" -name '*.rs'; [ -f "$m.rs" ] && echo "$m.rs"; } |
    grep -v -E '(^|/)tests(\.rs|/)|_tests\.rs$' || true)
  [ -z "$files" ] && continue
  # Text before the first `#[cfg(test)]` line of each file (the test modules sit at the end).
  used=$(for f in $files; do awk '/^\s*#\[cfg\(test\)\]/{exit} {print}' "$f"; done |
    grep -v '^\s*//' | grep -oE 'crate::(\{[^}]*|[a-z_]+)' | sed -E 's/crate::\{?//' |
    tr ',' '\n' | sed -E 's/^\s*//; s/::.*//' | grep -E '^[a-z_]+$' | sort -u || true)
  deps=""
  for d in $used; do
    [ "$d" != "$m" ] && echo "$tops" | grep -qx "$d" && deps="$deps $d"
  done
  imports[$m]="$deps"
  echo "$m ->$deps"
done
echo "circles (top-level pairs importing each other):"
found=0
for a in "${!imports[@]}"; do
  for b in ${imports[$a]}; do
    if [[ " ${imports[$b]:-} " == *" $a "* ]] && [[ "$a" < "$b" ]]; then
      echo "  $a <-> $b"; found=1
    fi
  done
done
[ "$found" = 0 ] && echo "  none"
exit 0
