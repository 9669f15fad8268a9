#!/usr/bin/env bash
# benchmarks/run.sh -- the benchmark report in one command: plan quality and synthesis time
# on the paper / mixed / scale workloads, execution on the host backend against memcpy
# (before and after issue 13), execution on the MPI backend with 8 ranks, and a figure (SVG). Prints the tables and writes them, the per-problem CSVs and the figure to
# the output folder.
#
#   benchmarks/run.sh                 configure and build (Release) in build-bench/, full report
#   benchmarks/run.sh --quick         a few problems of each; asserts validity only (CI)
#   options: --build DIR   build folder (default: <repo>/build-bench)
#            --out DIR     output folder (default: <build>/report)
#            --no-build    use the binaries already in --build (ctest does this)
#            --problems N  problems for the MPI execution benchmark (default 50)
#   environment: JOBS=n      parallel build jobs (default 2)
#
# Exit status: non-zero if any program of any system is invalid (box checker) or leaves a
# wrong element on a rank, or if a step crashes. Nothing is asserted about time.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build-bench"
out=""
quick=0
no_build=0
problems=50
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1 ;;
    --no-build) no_build=1 ;;
    --build) build=$(realpath -m "$2"); shift ;;
    --out) out=$(realpath -m "$2"); shift ;;
    --problems) problems="$2"; shift ;;
    -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
out=${out:-$build/report}
mkdir -p "$out"

if [[ $no_build -eq 0 ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DREDIST_BUILD_TESTS=OFF -DREDIST_BUILD_EXAMPLES=OFF \
    -DREDIST_BUILD_TOOLS=OFF >"$out/configure.log"
  cmake --build "$build" --target plan_quality host_execution -j "${JOBS:-2}"
  cmake --build "$build" --target mpi_execution -j "${JOBS:-2}" 2>/dev/null || echo "run.sh: no MPI: the execution benchmark is skipped"
fi

bin="$build/benchmarks"
quick_flag=()
[[ $quick -eq 1 ]] && quick_flag=(--quick)
report="$out/report.md"
status=0

{
  echo "# redist benchmark report"
  echo
  echo "Command: \`benchmarks/run.sh$([[ $quick -eq 1 ]] && echo ' --quick')\`, $(date -u +%Y-%m-%d), $(uname -m), $(nproc) cores,"
  cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
  echo "$("${cxx:-c++}" --version 2>/dev/null | head -n1 || true), git $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')."
  echo
} >"$report"

echo "== plan quality and synthesis time" >&2
if "$bin/plan_quality" "${quick_flag[@]}" --csv "$out" >"$out/quality.md"; then :; else status=1; fi
cat "$out/quality.md" >>"$report"

echo "== execution on the host backend against memcpy" >&2
if "$bin/host_execution" "${quick_flag[@]}" --problems "$problems" --calibrate --csv "$out/host_execution.csv" \
    >"$out/host_execution.md"; then :; else status=1; fi
{ echo; cat "$out/host_execution.md"; } >>"$report"

if [[ -x "$bin/mpi_execution" ]]; then
  echo "== execution on MPI, 8 ranks" >&2
  mpi_flags=()
  if mpirun --version 2>/dev/null | grep -q "Open MPI"; then
    mpi_flags=(--oversubscribe)
    export OMPI_MCA_rmaps_base_oversubscribe=1
    if [[ $(id -u) -eq 0 ]]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
  fi
  if mpirun "${mpi_flags[@]}" -np 8 "$bin/mpi_execution" "${quick_flag[@]}" --problems "$problems" \
      --csv "$out/execution.csv" >"$out/execution.md"; then :; else status=1; fi
  { echo; cat "$out/execution.md"; } >>"$report"
  if command -v python3 >/dev/null && [[ -s "$out/execution.csv" ]]; then
    python3 "$root/benchmarks/figure.py" --execution "$out/execution.csv" --quality "$out/quality_paper.csv" \
      --out "$out/figure.svg"
    { echo; echo "![benchmark figure](figure.svg)"; } >>"$report"
  fi
else
  { echo; echo "(MPI execution benchmark not built: no MPI found.)"; } >>"$report"
fi

cat "$report"
echo >&2
echo "report: $report" >&2
[[ $status -eq 0 ]] || echo "run.sh: INVALID PROGRAMS OR WRONG DATA (see above)" >&2
exit $status
