#!/usr/bin/env bash
# The project's test command (README): formatting, lints, every test, and
# the loom model of the ring protocol. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets -- -D warnings

echo "== cargo test"
cargo test --workspace

echo "== loom model of the ring protocol (exhaustive interleavings)"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p corecast --lib --release loom_model
