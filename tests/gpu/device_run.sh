#!/usr/bin/env bash
# tests/gpu/device_run.sh -- on the GPU machine lent by the device tool (its image has CUDA,
# nvcc, CMake, g++ and Open MPI, but not the Debian packages): unpacks the packages that
# tests/gpu/prepare_device.sh put in .devdeps/ under /tmp/deps, finds NCCL (next to CUDA, or
# the image's Python package nvidia-nccl-cu13), prints the machine, then runs tests/gpu/run.sh
# with a build in /tmp and every core.
set -uo pipefail
cd "$(dirname "$0")/../.."
echo "== machine"
nvidia-smi -L; g++ --version | head -1; cmake --version | head -1; nvcc --version | tail -1
mkdir -p /tmp/deps
for d in .devdeps/*.deb; do dpkg -x "$d" /tmp/deps; done
export CMAKE_PREFIX_PATH=/tmp/deps/usr:/tmp/deps/usr/lib/x86_64-linux-gnu/cmake
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ ! -e /usr/local/cuda/include/nccl.h ]; then
  n=$(python3 -c "import nvidia.nccl as m; print(list(m.__path__)[0])")
  echo "NCCL from the Python package: $n"
  mkdir -p /tmp/nccl/lib
  ln -sfn "$n/include" /tmp/nccl/include
  ln -sf "$n"/lib/libnccl.so* /tmp/nccl/lib/
  ln -sf "$n/lib/libnccl.so.2" /tmp/nccl/lib/libnccl.so
  export NCCL_HOME=/tmp/nccl LD_LIBRARY_PATH=/tmp/nccl/lib:$LD_LIBRARY_PATH
fi
BUILD=${BUILD:-/tmp/build-gpu} JOBS=${JOBS:-$(nproc)} tests/gpu/run.sh
