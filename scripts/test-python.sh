#!/usr/bin/env bash
# The Python binding as a user installs it: a fresh virtual environment,
# `pip install ./corecast-py` (maturin builds the wheel), then its pytest
# suite (real processes; a Rust peer for the mixed-language tests) and the
# examples in examples/python.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="$(mktemp -d -t corecast-venv.XXXXXX)"
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
"$venv/bin/pip" install -q "./corecast-py[test]"
cargo build -q -p corecast --example stream
CORECAST_STREAM_EXAMPLE="${CARGO_TARGET_DIR:-$PWD/target}/debug/examples/stream" \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider --durations=5 corecast-py/tests
