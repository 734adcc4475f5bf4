#!/usr/bin/env bash
# Regenerates results/reference/: the comparison table of `bench quick`
# (quick.jsonl records, quick.txt printed table), its HTML report
# (quick.html) and a screenshot of it (quick.png), a screenshot of the
# history page over every run under results/ (history.png), crash and stall
# detection beside the kernel's notice (detect.jsonl, detect.txt), measured
# on this machine from the current commit. Refuses a tree with changes, so
# every reference record names a commit that can be rebuilt. Takes about 4
# minutes; run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "$(git status --porcelain)" ]; then
  echo "reference.sh: the tree has uncommitted changes; commit or stash them first:" >&2
  git status --short >&2
  exit 1
fi

out=results/reference
cargo build --release -q -p corecast-cli
bin="${CARGO_TARGET_DIR:-target}/release/corecast"
rm -rf "$out.new"
mkdir -p "$out.new"
# The table on stdout; the report (quick.html) is written beside the records.
"$bin" bench quick --out "$out.new/quick.jsonl" | tee "$out.new/quick.txt"
# Crash and stall detection, beside the kernel's own notice of a death.
"$bin" bench detect --trials 100 --out "$out.new/detect.jsonl" | tee "$out.new/detect.txt"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,2400 \
  --screenshot="$PWD/$out.new/quick.png" "file://$PWD/$out.new/quick.html" 2>/dev/null
# The history page: every point of every run under results/ (the archive
# and this new reference) across the commits measured, a line per machine.
# (The page itself, a few MB, is not kept: `corecast report --history
# results` draws it again.)
runs="$(mktemp -d -t corecast-runs.XXXXXX)"
cp -r results/archive results/reference "$runs/" 2>/dev/null || true
cp -r "$out.new" "$runs/new"
"$bin" report --history "$runs" --html "$runs/history.html"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,2400 \
  --screenshot="$PWD/$out.new/history.png" "file://$runs/history.html" 2>/dev/null
rm -rf "$runs"
{
  echo "commit $(git rev-parse HEAD)"
  echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  "$bin" machine | tr -d '\n' | head -c 2000
  echo
} > "$out.new/provenance.txt"
rm -rf "$out"
mv "$out.new" "$out"
# README.md's reference figures follow the new records.
CORECAST_BLESS_README=1 cargo test -q -p corecast-cli --test readme_figures >/dev/null
echo "reference.sh: $out regenerated from $(git rev-parse --short HEAD), README.md's figures rewritten; commit both"
