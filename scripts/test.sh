#!/usr/bin/env bash
# The project's test command (README): formatting, lints, every test, the
# loom models of the ring protocol and the wake handshake, and the MPI
# mechanism (installing Open MPI first when it is missing). CI runs exactly
# this.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! dpkg -s openmpi-bin libopenmpi-dev libclang-dev >/dev/null 2>&1; then
  echo "== installing Open MPI (for the mpi feature)"
  bash scripts/install-mpi.sh
fi

if ! command -v chromium >/dev/null 2>&1; then
  echo "== installing Chromium (the HTML report is checked in a headless browser)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

if ! command -v c++ >/dev/null 2>&1 || ! command -v pkg-config >/dev/null 2>&1; then
  echo "== installing a C/C++ compiler and pkg-config (the C API's tests build C and C++ programs)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential pkg-config >/dev/null
fi

if ! command -v openssl >/dev/null 2>&1 || ! command -v ip >/dev/null 2>&1; then
  echo "== installing openssl and iproute2 (the bridge's tests make certificates and network namespaces)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl iproute2 >/dev/null
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (all targets, warnings are errors; without features, then with MPI and tokio)"
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy --workspace --all-targets --features corecast-bench/mpi,corecast-cli/mpi,corecast/tokio -- -D warnings

echo "== cargo test (the library with its tokio endpoints: tests/tokio.rs)"
cargo test --workspace --features corecast/tokio

echo "== documentation builds without a warning"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --lib --features corecast/tokio

echo "== the library's examples run (README lists them)"
for example in fanout zero_copy crash epoll; do
  timeout 300 cargo run -q -p corecast --example "$example"
done
timeout 300 cargo run -q -p corecast --features tokio --example tokio_channels

echo "== the Python binding: installed into a fresh virtual environment, tested with pytest"
bash scripts/test-python.sh

echo "== MPI mechanisms (mpirun launches the ranks)"
cargo test -p corecast-bench --features mpi --test mpi
cargo test -p corecast-cli --features mpi --test cli

echo "== loom models of the ring protocol (every interleaving) and the wake handshakes (to a preemption bound)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p corecast --lib --release loom_model

echo "== artifacts: the screenshots of the report and the history page are target/artifacts/report.png and history.png"
