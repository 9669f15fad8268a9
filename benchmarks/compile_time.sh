#!/usr/bin/env bash
# benchmarks/compile_time.sh -- build time added by redist::plan_for (issue: goal <= 2 s).
# Compiles benchmarks/compile_time/plan_for_tu.cpp without a plan (types parsed only),
# with the plan of seed 000 Listing 3, with a 3-axis 6-D plan and with Fig. 12 (a plan that
# needs the alternative-path search), under the default objective (predicted time), and
# Fig. 12 under objective::bytes, with g++ and clang++;
# prints the median of N runs of each and the difference to the baseline.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
runs=${RUNS:-5}
tu=$here/compile_time/plan_for_tu.cpp
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_one() {  # compiler, define
  local t0 t1
  t0=$(date +%s.%N)
  local budget=-fconstexpr-ops-limit=4294967296  # the flags redist::redist gives (CMakeLists.txt)
  case "$1" in *clang*) budget=-fconstexpr-steps=268435456 ;; esac
  "$1" -std=c++20 -O2 -fsyntax-only "$budget" -I"$root/include" $2 "$tu"
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}
printf "%-10s %-22s %10s %12s\n" compiler variant "median s" "added s"
for cxx in ${CXXS:-g++ clang++}; do
  command -v "$cxx" >/dev/null || continue
  base=""
  for variant in "types only:-DNONE" "Listing 3:-DWITH_LISTING3" "3 axes, 6-D:-DWITH_6D" "Fig. 12:-DWITH_FIG12" "Fig. 12, bytes:-DWITH_FIG12_BYTES"; do
    name=${variant%%:*}; def=${variant#*:}
    m=$(for _ in $(seq "$runs"); do time_one "$cxx" "$def"; done | median)
    [ -z "$base" ] && base=$m
    printf "%-10s %-22s %10.3f %12.3f\n" "$cxx" "$name" "$m" "$(awk -v a="$base" -v b="$m" 'BEGIN { print b - a }')"
  done
done
