#!/usr/bin/env bash
# Installs what eigenflow's `mpi` feature links against and runs with (issue 15):
# Open MPI (runtime, launcher, headers), ScaLAPACK built for Open MPI, ELPA, and
# the reference LAPACK/BLAS that ELPA's pkg-config file names (`-llapack -lblas`).
# Debian/Ubuntu only (apt). Idempotent: does nothing when every package is
# already installed, so CI pays for it once per machine.
set -euo pipefail
# libopenblas0-serial: an optimised BLAS/LAPACK (one thread per rank, the
# right choice under MPI) that apt selects over the reference libblas.so.3
# and liblapack.so.3 ELPA and ScaLAPACK were linked with.
PKGS=(openmpi-bin libopenmpi-dev libscalapack-openmpi-dev libelpa-dev liblapack-dev libblas-dev libopenblas0-serial pkg-config)
missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-mpi: all packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-mpi: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# The package lists may be missing on a fresh image; refresh them only when the
# first attempt cannot find a package.
if ! $SUDO apt-get install -y --no-install-recommends "${missing[@]}"; then
  $SUDO apt-get update
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
