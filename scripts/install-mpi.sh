#!/usr/bin/env bash
# Installs what the `mpi` cargo feature needs on Debian/Ubuntu: Open MPI
# (mpirun, headers, mpicc for the build probe) and libclang (bindgen in the
# `mpi-sys` crate generates the bindings from Open MPI's mpi.h).
# Needs root (CI containers run as root; otherwise run it with sudo).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends openmpi-bin libopenmpi-dev libclang-dev
mpirun --version | head -n 1
