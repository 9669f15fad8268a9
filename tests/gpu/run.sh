#!/usr/bin/env bash
# tests/gpu/run.sh -- the NCCL backend on a GPU machine, in one command:
#   tests/gpu/run.sh            (from anywhere; BUILD=dir and JOBS=n override the defaults)
# 1. builds from a clean directory with REDIST_WITH_NCCL=ON and REDIST_GPU_TESTS=ON (warnings
#    as errors);
# 2. runs the no-GPU NCCL tests, the memory-space and pack tests, and the one-rank GPU tests
#    (device pack/unpack, batched copies and converting copies against the host's, the
#    executor on device memory with simulated multi-rank meshes, every NCCL collective on a
#    one-rank communicator, the executor with the NCCL backend on one-device meshes);
# 3. runs the MPI bootstrap: one rank per GPU (mpirun -np <gpus>, random problems on
#    meshes of <gpus> devices when there are at least 2), and 2 ranks on 1 GPU must be
#    refused with a clear message;
# 4. prints the pack/unpack bandwidth table (vs a device-to-device copy, 256 MiB tiles), the
#    fused messages of the reshard executor (many arrays' pieces packed into one message
#    and unpacked by the batch kernel, vs a copy of the message's bytes), and the same
#    messages converted f32 -> bf16 -> f32 on the way (the converting kernel).
# Fails if there is no CUDA device or any step fails.
# On a GPU machine lent by the device tool, whose image lacks the Debian packages: run
# tests/gpu/prepare_device.sh here first, then tests/gpu/device_run.sh there (carrying .devdeps).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build-gpu}
JOBS=${JOBS:-$(nproc)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

echo "== build ($BUILD, clean, REDIST_WITH_NCCL=ON)"
rm -rf "$BUILD"
cmake -S . -B "$BUILD" -DREDIST_WITH_NCCL=ON -DREDIST_GPU_TESTS=ON -DREDIST_WERROR=ON -DCMAKE_BUILD_TYPE=Release
targets=(backends_nccl_test backends_nccl_gpu_test nccl_pack_bench runtime_tests)
have_mpi=0
if grep -q "^backends_nccl_mpi_test" <(cmake --build "$BUILD" --target help | sed 's/^\.\.\. //'); then
  targets+=(backends_nccl_mpi_test)
  have_mpi=1
fi
cmake --build "$BUILD" -j"$JOBS" --target "${targets[@]}"

bin=$BUILD/tests
gpus=$("$BUILD/tests/gpu/nccl_pack_bench" --count)
echo "== CUDA devices: $gpus"
if [ "$gpus" -lt 1 ]; then
  echo "tests/gpu/run.sh: no CUDA device on this machine" >&2
  exit 1
fi
command -v nvidia-smi >/dev/null && nvidia-smi -L || true

echo "== no-GPU parts and the executor's memory space"
"$bin/backends/backends_nccl_test"
"$bin/runtime/runtime_tests" --filenames-as-tags "[#memory_test],[#pack_test],[#executor_test]"

echo "== one rank on one GPU"
"$bin/backends/backends_nccl_gpu_test" --durations yes

if [ "$have_mpi" = 1 ]; then
  MPIRUN=$(command -v mpirun || command -v mpiexec)
  echo "== MPI bootstrap, one rank per GPU: $MPIRUN -np $gpus"
  timeout 300 "$MPIRUN" -np "$gpus" "$bin/backends/backends_nccl_mpi_test"
  if [ "$gpus" -eq 1 ]; then
    echo "== 2 ranks on 1 GPU: NCCL cannot, the backend must refuse clearly"
    timeout 120 "$MPIRUN" -np 2 "$bin/backends/backends_nccl_mpi_test"
  fi
else
  echo "== MPI not found: the MPI bootstrap test was not built"
fi

echo "== pack/unpack bandwidth"
"$BUILD/tests/gpu/nccl_pack_bench" 256 20
