#!/usr/bin/env bash
# Measures, in one sitting, everything SPEC's performance targets (P1-P5,
# P7) are judged on: fan-out of every mechanism at 64 B-1 MiB to 1-8
# receivers (in place and with copies; sender CPU per message comes with
# it), ping-pong on two CPUs and with both processes on one, the 1 MiB
# memcpy reference, the snapshot gather at 8 nodes and PaxosInside at 64 B.
# Each workload runs its whole grid `ROUNDS` times in turn, so ratios are
# read round by round. Takes about 12 minutes with 3 rounds (18 with 5)
# on a 2-CPU machine; run nothing else meanwhile (a second load spoils the
# numbers).
#
#   bash scripts/ceiling-targets.sh OUT_DIR [ROUNDS]
#
# Writes OUT_DIR/<workload>.jsonl (records) and .txt (the tables).
set -euo pipefail
out=${1:?usage: bash scripts/ceiling-targets.sh OUT_DIR [ROUNDS]}
rounds=${2:-3}
cd "$(dirname "$0")/.."

# MPI's mechanisms are measured when Open MPI is installed
# (scripts/install-mpi.sh); otherwise the tables say they are absent.
features=()
if command -v mpirun >/dev/null; then features=(--features corecast-cli/mpi); fi
cargo build --release -p corecast-cli "${features[@]}"
corecast=target/release/corecast
mkdir -p "$out"

run() {
    local name=$1
    shift
    echo "== $name: corecast bench $*" >&2
    "$corecast" bench "$@" --rounds "$rounds" --out "$out/$name.jsonl" 2>&1 | grep -v '^\(round [0-9]*/[0-9]* \)\?\[ *[0-9]*/[0-9]*\]' > "$out/$name.txt"
}

run fanout fanout --mechanisms all,corecast+copy,iceoryx2+copy \
    --receivers 1,2,4,8 --sizes 64,4K,64K,1M --duration 300ms --repetitions 1
run pingpong pingpong --mechanisms all --sizes 64 --duration 300ms --repetitions 1
run pingpong-one-cpu pingpong --cpus 0 --sizes 64 --duration 300ms --repetitions 1 \
    --mechanisms corecast-sleep,limit-futex,mempipe-futex,iceoryx2-event,pipe
run bandwidth bandwidth --mechanisms corecast,limit --sizes 1M --duration 300ms --repetitions 1
run snapshot snapshot --mechanisms all --nodes 8 --duration 300ms --repetitions 1
run paxos paxos --mechanisms all --sizes 64 --duration 300ms --repetitions 1
echo "records and tables in $out" >&2
