#!/usr/bin/env bash
# benchmarks/emulated_nodes.sh -- run an MPI benchmark of 8 ranks as 2 nodes of 4 joined by
# a rate-limited link, on one Linux machine (root: it adds a veth pair and a traffic control
# qdisc on lo, and removes them when it ends).
#
# Ranks 0-3 send and receive TCP from 10.77.1.1 (interface rnode1, node 0), ranks 4-7 from
# 10.77.2.1 (rnode2, node 1): Open MPI's tcp BTL binds its sockets to the address of the
# interface it is given (btl_tcp_if_include; an alias of lo would not do, it binds lo's first
# address). Both addresses are local, so their traffic goes through lo, where an HTB qdisc
# holds what goes from one node's address to the other's to GBPS Gbit/s each way and lets
# the rest (inside a node) through unlimited. Shared memory (vader) is off, so what crosses
# the link goes through TCP; inside a node redist's single copy (cross-memory attach) and
# TCP over loopback move the bytes.
#
# Usage: benchmarks/emulated_nodes.sh [--gbps G] BENCHMARK [ARGS...]
#   e.g. benchmarks/emulated_nodes.sh --gbps 2 build/benchmarks/cross_mesh 10 --nodes 4 --link-gbps 2
# GBPS defaults to 2. Prints the qdisc's counters after the run (bytes that crossed).
set -euo pipefail

gbps=2
if [[ ${1:-} == --gbps ]]; then
  gbps=$2
  shift 2
fi
[[ $# -ge 1 ]] || { echo "usage: $0 [--gbps G] BENCHMARK [ARGS...]" >&2; exit 2; }
command -v tc > /dev/null || { echo "$0: needs tc (iproute2)" >&2; exit 2; }

cleanup() {
  tc qdisc del dev lo root 2> /dev/null || true
  ip link del rnode1 2> /dev/null || true
}
trap cleanup EXIT
cleanup
ip link add rnode1 type veth peer name rnode2
ip addr add 10.77.1.1/24 dev rnode1
ip addr add 10.77.2.1/24 dev rnode2
ip link set rnode1 up
ip link set rnode2 up
tc qdisc add dev lo root handle 1: htb default 30 r2q 1000
# (tc warns that the quanta of these rates are large; its exit status still counts)
tc class add dev lo parent 1: classid 1:1 htb rate 200gbit burst 4m cburst 4m 2> /dev/null
tc class add dev lo parent 1:1 classid 1:10 htb rate "${gbps}gbit" ceil "${gbps}gbit" burst 256k cburst 256k 2> /dev/null
tc class add dev lo parent 1:1 classid 1:20 htb rate "${gbps}gbit" ceil "${gbps}gbit" burst 256k cburst 256k 2> /dev/null
tc class add dev lo parent 1:1 classid 1:30 htb rate 200gbit burst 4m cburst 4m 2> /dev/null
tc filter add dev lo protocol ip parent 1: prio 1 u32 match ip src 10.77.1.0/24 match ip dst 10.77.2.0/24 flowid 1:10
tc filter add dev lo protocol ip parent 1: prio 1 u32 match ip src 10.77.2.0/24 match ip dst 10.77.1.0/24 flowid 1:20

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Each rank's address by its rank: node 0 for ranks 0-3, node 1 for 4-7.
mpirun --oversubscribe -np 8 --mca btl self,tcp --mca btl_tcp_disable_family 6 \
  sh -c 'if [ "$OMPI_COMM_WORLD_RANK" -lt 4 ]; then n=1; else n=2; fi
         OMPI_MCA_btl_tcp_if_include=rnode$n exec "$@"' sh "$@"
echo "link counters (class 1:10 node 0 -> 1, 1:20 node 1 -> 0):"
tc -s class show dev lo | grep -A1 -E "class htb 1:(10|20) " | grep -E "class|Sent"
