#!/usr/bin/env bash
# "Hosts" on one machine, for the cross-host tests and benchmarks: network
# namespaces joined by veth pairs to a Linux bridge that lives in a switch
# namespace of its own, so nothing touches the machine's own network.
#
#   scripts/hosts.sh up PREFIX N [DELAY_MS]   create PREFIX-sw and PREFIX-h1..hN,
#                                             host k at 10.213.0.k/24 (optional
#                                             netem delay on every host's link)
#   scripts/hosts.sh down PREFIX              remove them (safe to repeat, also
#                                             after a crash half-way through up)
#   scripts/hosts.sh link PREFIX K up|down    take host K's link down or up
#   scripts/hosts.sh addr K                   print host K's address
#
# PREFIX: at most 6 characters (interface names are limited to 15). Needs
# root and iproute2 (and the sch_netem module for a delay).
set -euo pipefail

addr() { echo "10.213.0.$1"; }

need_prefix() {
  if [[ -z "${1:-}" || ${#1} -gt 6 || ! "$1" =~ ^[a-z0-9]+$ ]]; then
    echo "hosts.sh: PREFIX must be 1-6 characters [a-z0-9]" >&2
    exit 2
  fi
}

down() {
  local p=$1
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^${p}-(sw|h[0-9]+)$" || true); do
    ip netns delete "$ns" 2>/dev/null || true
  done
}

up() {
  local p=$1 n=$2 delay=${3:-0}
  if ! [[ "$n" =~ ^[0-9]+$ ]] || ((n < 1 || n > 16)); then
    echo "hosts.sh: N must be 1 to 16" >&2
    exit 2
  fi
  down "$p"
  # Half-built hosts are removed if anything below fails.
  trap 'down "$p"' ERR
  ip netns add "$p-sw"
  ip -n "$p-sw" link add br0 type bridge
  ip -n "$p-sw" link set br0 up
  ip -n "$p-sw" link set lo up
  for k in $(seq 1 "$n"); do
    local ns="$p-h$k"
    ip netns add "$ns"
    ip -n "$p-sw" link add "$p-p$k" type veth peer name eth0 netns "$ns"
    ip -n "$p-sw" link set "$p-p$k" master br0 up
    ip -n "$ns" addr add "$(addr "$k")/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    if [[ "$delay" != 0 ]] && ! ip netns exec "$ns" tc qdisc add dev eth0 root netem delay "${delay}ms" 2>/dev/null; then
      trap - ERR
      down "$p"
      echo "hosts.sh: this kernel has no netem qdisc (sch_netem): no delay can be set" >&2
      exit 3
    fi
  done
  trap - ERR
}

link() {
  local p=$1 k=$2 state=$3
  ip -n "$p-sw" link set "$p-p$k" "$state"
}

case "${1:-}" in
  up) need_prefix "${2:-}"; up "$2" "${3:-}" "${4:-0}" ;;
  down) need_prefix "${2:-}"; down "$2" ;;
  link) need_prefix "${2:-}"; link "$2" "$3" "$4" ;;
  addr) addr "$2" ;;
  *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
