#!/usr/bin/env bash
# One prepared run for a lent GPU machine: build ragcore with CUDA, run the GPU
# tests, run the GPU benchmark, and leave logs and JSON in $OUT (default
# bench/results/gpu). About 8 minutes on an H200. The machine has no registry:
# pytest and hypothesis come from build/gpu_wheels (filled beforehand with
# `pip download -d build/gpu_wheels pytest hypothesis`) when not installed.
#   usage: bash bench/gpu_check.sh [--quick]
set -u
OUT=${OUT:-bench/results/gpu}
mkdir -p "$OUT"
exec > >(tee "$OUT/gpu_check.log") 2>&1
step() { echo "=== $(date +%T) $*"; }

step device
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
nvcc --version | tail -1
python3 --version

step build
# pip refuses a system Python marked externally managed (PEP 668) unless told.
pip_install() { python3 -m pip install -q "$@" || python3 -m pip install -q --break-system-packages "$@"; }
python3 -c "import pytest, hypothesis" 2>/dev/null ||
  pip_install --no-index --find-links build/gpu_wheels pytest hypothesis
time pip_install --no-build-isolation --no-deps . \
  -C cmake.define.RAGCORE_CUDA=ON -C build-dir=build/gpu || { echo "BUILD FAILED"; exit 1; }
python3 -c "import ragcore; print('cuda devices:', ragcore.cuda_device_count())"

step tests
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_flat.py tests/test_gpu_host.py \
  --junitxml "$OUT/gpu_tests.xml" -x
echo "tests exit code: $?"

[ "${SKIP_BENCH:-0}" = 1 ] && exit 0
step benchmark
timeout 330 python3 bench/gpu_dense.py "$@" --json "$OUT/gpu_dense.json" --markdown "$OUT/gpu_dense.md"
echo "benchmark exit code: $?"
step done
