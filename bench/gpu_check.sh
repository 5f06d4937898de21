#!/usr/bin/env bash
# One prepared run for a lent GPU machine: build ragcore with CUDA, run the GPU
# tests, then the GPU benchmarks, leaving logs and JSON in $OUT (default
# bench/results/gpu); the log stamps the start of each step, so it shows how
# long each one took. STEPS picks steps, e.g. to split the run over device calls
# or to rerun one on a warm machine (the build is then incremental):
#   STEPS="build bm25" bash bench/gpu_check.sh
# The machine has no registry: pytest and hypothesis come from build/gpu_wheels
# (filled beforehand with `pip download -d build/gpu_wheels pytest hypothesis`)
# when not installed.
#   usage: [STEPS="..."] bash bench/gpu_check.sh [--quick]
set -u
OUT=${OUT:-bench/results/gpu}
STEPS=${STEPS:-build tests bm25 encoders dense}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/gpu_check.log") 2>&1
step() { echo "=== $(date +%T) $*"; }
wanted() { [[ " $STEPS " == *" $1 "* ]]; }
quick() { [ "${1:-}" = --quick ] && echo --quick; }

step device
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
nvcc --version | tail -1
python3 --version

if wanted build; then
  step build
  # pip refuses a system Python marked externally managed (PEP 668) unless told.
  pip_install() { python3 -m pip install -q "$@" || python3 -m pip install -q --break-system-packages "$@"; }
  python3 -c "import pytest, hypothesis" 2>/dev/null ||
    pip_install --no-index --find-links build/gpu_wheels pytest hypothesis
  time pip_install --no-build-isolation --no-deps . \
    -C cmake.define.RAGCORE_CUDA=ON -C build-dir=build/gpu || { echo "BUILD FAILED"; exit 1; }
  python3 -c "import ragcore; print('cuda devices:', ragcore.cuda_device_count())"
fi

if wanted tests; then
  step tests
  timeout 300 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gpu_flat.py tests/gpu/test_gpu_bm25.py \
    tests/gpu/test_gpu_host.py tests/gpu/test_gpu_bm25_host.py --junitxml "$OUT/gpu_tests.xml"
  echo "tests exit code: $?"
fi

if wanted bm25; then
  step bm25 benchmark
  timeout 240 python3 bench/gpu_bm25.py --sweep $(quick "$@") \
    --json "$OUT/gpu_bm25.json" --markdown "$OUT/gpu_bm25.md"
  echo "bm25 benchmark exit code: $?"
fi

if wanted encoders; then
  step encoders
  timeout 120 python3 bench/gpu_encoders.py --out "$OUT/gpu_encoders.json"
  echo "encoders exit code: $?"
fi

if wanted dense; then
  step dense benchmark
  timeout 330 python3 bench/gpu_dense.py "$@" --json "$OUT/gpu_dense.json" --markdown "$OUT/gpu_dense.md"
  echo "dense benchmark exit code: $?"
fi
step done
