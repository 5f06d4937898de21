#!/usr/bin/env bash
# One prepared run for a lent GPU machine: build ragcore with CUDA, run the GPU
# tests, then the GPU benchmarks (BM25, encoders, dense), leaving logs and JSON
# in $OUT (default bench/results/gpu). About 10 minutes on an H200: build 2,
# tests 2, BM25 2, dense 5; SKIP_DENSE=1 leaves out the dense benchmark and
# SKIP_BENCH=1 every benchmark, to stay under one call's 10-minute limit.
# The machine has no registry: pytest and hypothesis come from build/gpu_wheels
# (filled beforehand with `pip download -d build/gpu_wheels pytest hypothesis`)
# when not installed.
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
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_gpu_flat.py tests/test_gpu_bm25.py \
  tests/test_gpu_host.py tests/test_gpu_bm25_host.py --junitxml "$OUT/gpu_tests.xml"
echo "tests exit code: $?"

[ "${SKIP_BENCH:-0}" = 1 ] && exit 0
step bm25 benchmark
timeout 240 python3 bench/gpu_bm25.py $([ "${1:-}" = --quick ] && echo --quick) \
  --json "$OUT/gpu_bm25.json" --markdown "$OUT/gpu_bm25.md"
echo "bm25 benchmark exit code: $?"

step encoders
if [ -f bench/gpu_encoders.py ]; then
  timeout 120 python3 bench/gpu_encoders.py --out "$OUT/gpu_encoders.json"
  echo "encoders exit code: $?"
fi

[ "${SKIP_DENSE:-0}" = 1 ] && exit 0
step dense benchmark
timeout 330 python3 bench/gpu_dense.py "$@" --json "$OUT/gpu_dense.json" --markdown "$OUT/gpu_dense.md"
echo "dense benchmark exit code: $?"
step done
