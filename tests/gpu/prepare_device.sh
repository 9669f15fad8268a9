#!/usr/bin/env bash
# tests/gpu/prepare_device.sh -- on the development machine (Debian 12), before the device
# tool's run: downloads the Debian packages the build needs but the GPU machine's image lacks
# (fmt, Boost headers, Catch2, nlohmann-json, CLI11, rapidcheck; about 11 MB) into .devdeps/
# (ignored by git). Then run on the device, carrying .devdeps:
#   tests/gpu/device_run.sh        (carry: [".devdeps"])
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .devdeps
cd .devdeps
apt-get download libfmt-dev libfmt9 libboost1.74-dev catch2 nlohmann-json3-dev libcli11-dev librapidcheck-dev
ls -la
