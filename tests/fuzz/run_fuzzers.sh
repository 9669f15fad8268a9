#!/usr/bin/env bash
# Run every libFuzzer fuzzer of a build configured with -DREDIST_FUZZ=ON for SECONDS each,
# two at a time, starting from a copy of its seed corpus (tests/fuzz/corpus/<name>) with its
# dictionary, and print a table of executions. A crash, a sanitizer report, a hang (one input
# over 10 s) or a run over 2 GiB fails the script; the input is kept under
# BUILD/fuzz-work/<name>/ and printed.
#
#   tests/fuzz/run_fuzzers.sh BUILD [SECONDS=60] [FUZZERS...]
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:?usage: run_fuzzers.sh BUILD [SECONDS] [FUZZERS...]}" && pwd)"
seconds="${2:-60}"
shift $(( $# >= 2 ? 2 : 1 ))
fuzzers=("$@")
[ ${#fuzzers[@]} -gt 0 ] || fuzzers=(parse_mesh parse_type jax dtensor xla shardy program_json synthesize reshard_manifest between)

dict_of() {
  case "$1" in
    parse_mesh|parse_type) echo "$here/dict/types.dict" ;;
    jax|dtensor|xla|shardy) echo "$here/dict/notations.dict" ;;
    program_json) echo "$here/dict/program_json.dict" ;;
    reshard_manifest) echo "$here/dict/reshard_manifest.dict" ;;
    *) echo "" ;;
  esac
}

run_one() {
  local name="$1" bin="$build/tests/fuzz/fuzz_$1" work="$build/fuzz-work/$1"
  rm -rf "$work" && mkdir -p "$work/corpus"
  cp "$here/corpus/$name/"* "$work/corpus/"
  local dict; dict="$(dict_of "$name")"
  (cd "$work" && "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
     ${dict:+-dict="$dict"} corpus > log 2>&1; echo $? > rc)
}

pids=()
for name in "${fuzzers[@]}"; do
  [ -x "$build/tests/fuzz/fuzz_$name" ] || { echo "run_fuzzers: $build/tests/fuzz/fuzz_$name not built (-DREDIST_FUZZ=ON)"; exit 2; }
  run_one "$name" &
  pids+=($!)
  if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
wait

status=0
total=0
printf '%-14s %12s %10s %10s  %s\n' fuzzer executions "exec/s" "corpus" result
for name in "${fuzzers[@]}"; do
  work="$build/fuzz-work/$name"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log")
  corpus=$(ls "$work/corpus" | wc -l)
  rc=$(cat "$work/rc")
  result=ok
  if [ "$rc" != 0 ]; then
    result="FAILED (exit $rc)"
    status=1
  fi
  printf '%-14s %12s %10s %10s  %s\n' "$name" "${execs:-?}" "${rate:-?}" "$corpus" "$result"
  total=$((total + ${execs:-0}))
  if [ "$rc" != 0 ]; then
    grep -E 'ERROR|fuzz finding|runtime error|SUMMARY|Test unit written' "$work/log" | head -20 | sed 's/^/    /'
    for f in "$work"/crash-* "$work"/timeout-* "$work"/oom-* "$work"/leak-*; do
      [ -f "$f" ] && { echo "    input $f (first 256 bytes):"; head -c 256 "$f" | od -c | head -12 | sed 's/^/      /'; }
    done
  fi
done
echo "fuzzers: $total executions in total, ${seconds} s each"
exit $status
