#!/usr/bin/env bash
# make dist-check: the sdist in DIST holds what a build needs and nothing built, and the wheel
# in DIST installs into a fresh venv where any compile attempt fails (CC, CXX and CUDACXX are
# `false`, and pip may take only wheels), then imports and searches there.
#   usage: tools/check_wheel_install.sh [DIST] [PYTHON]   (defaults: dist, python3)
set -euo pipefail
DIST=${1:-dist}
PY=${2:-python3}
fail() { echo "dist-check: FAIL: $*" >&2; exit 1; }
step() { echo "dist-check: $(date +%T) $*"; }

shopt -s nullglob
sdists=("$DIST"/ragcore_engine-*.tar.gz)
wheels=("$DIST"/ragcore_engine-*.whl)
shopt -u nullglob
[ ${#sdists[@]} -eq 1 ] || fail "expected one sdist in $DIST, found ${#sdists[@]} (run make dist)"
[ ${#wheels[@]} -eq 1 ] || fail "expected one wheel in $DIST, found ${#wheels[@]} (run make dist)"
SDIST=${sdists[0]}
WHEEL=$(cd "$(dirname "${wheels[0]}")" && pwd)/$(basename "${wheels[0]}")

step "sdist $(basename "$SDIST") ($(du -k "$SDIST" | cut -f1) KiB)"
"$PY" - "$SDIST" <<'EOF'
import re, sys, tarfile
with tarfile.open(sys.argv[1]) as tar:
    names = [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]
need = ["pyproject.toml", "CMakeLists.txt", "README.md", "cuda/CMakeLists.txt",
        "cpp/bindings/module.cpp", "cpp/include/", "cpp/src/", "src/ragcore/__init__.py"]
missing = [p for p in need if not any(n == p or n.startswith(p) for n in names)]
# Build outputs, environments and compiled modules would make the sdist build something else.
stray = [n for n in names
         if re.match(r"(build|dist|\.venv|\.git)(/|$)", n) or re.search(r"\.(so|o|a|pyc)$", n)]
if missing or stray:
    sys.exit(f"dist-check: FAIL: sdist lacks {missing}, holds {stray[:10]}")
print(f"dist-check: sdist has {len(names)} entries, none built")
EOF

step "wheel $(basename "$WHEEL") ($(du -k "$WHEEL" | cut -f1) KiB)"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$PY" -m zipfile -e "$WHEEL" "$WORK/unpacked"
ls "$WORK"/unpacked/ragcore/_core*.so >/dev/null 2>&1 || fail "the wheel has no ragcore/_core module"
grep -qx "Name: ragcore-engine" "$WORK"/unpacked/ragcore_engine-*.dist-info/METADATA ||
  fail "the wheel's METADATA does not name ragcore-engine"
for extra in langchain llamaindex stem onnx dist; do
  grep -qx "Provides-Extra: $extra" "$WORK"/unpacked/ragcore_engine-*.dist-info/METADATA ||
    fail "the wheel's METADATA lacks the $extra extra"
done
# The native modules may need only the C/C++ runtime: _cuda links the CUDA runtime statically
# and finds the driver at run time, so a machine without CUDA still imports the package.
if command -v readelf >/dev/null; then
  for so in "$WORK"/unpacked/ragcore/*.so; do
    needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
    echo "dist-check: $(basename "$so") needs: $needed"
    for lib in $needed; do
      [[ $lib =~ ^(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux.*)\.so ]] ||
        fail "$(basename "$so") needs $lib, which a machine without a compiler or CUDA may lack"
    done
  done
else
  echo "dist-check: readelf not found, the modules' shared libraries are not checked"
fi

step "fresh venv ($("$PY" --version))"
"$PY" -m venv "$WORK/venv"
step "install the wheel with CC=false CXX=false CUDACXX=false, binaries only"
CC=false CXX=false CUDACXX=false "$WORK/venv/bin/python" -m pip install -q \
  --disable-pip-version-check --only-binary :all: "$WHEEL"

step "smoke test (outside the checkout)"
cd "$WORK"
env -u PYTHONPATH "$WORK/venv/bin/python" - "$WORK/venv" <<'EOF'
import importlib.metadata, os, sys
import numpy as np
import ragcore

venv = os.path.realpath(sys.argv[1])
assert os.path.realpath(ragcore.__file__).startswith(venv), ragcore.__file__
assert importlib.metadata.version("ragcore-engine") == ragcore.__version__

rng = np.random.default_rng(0)
vectors = rng.standard_normal((100, 16)).astype(np.float32)
flat = ragcore.FlatIndex(16, metric="ip")
flat.add(vectors)
hits = flat.search(vectors[[7, 42]], k=3)
assert hits.ids[:, 0].tolist() == np.argmax(vectors[[7, 42]] @ vectors.T, axis=1).tolist(), hits.ids

bm25 = ragcore.BM25Index()
bm25.add(["the cat sat on the mat", "dogs chase cats", "a bird in the hand"])
hits = bm25.search(["bird hand"], k=2)
assert hits.ids[0, 0] == 2, hits.ids

cuda = any(n.startswith("_cuda.") for n in os.listdir(os.path.dirname(ragcore.__file__)))
if cuda:
    import ragcore._cuda  # in the wheel: it must import here, GPU or not
print(f"dist-check: ragcore {ragcore.__version__} from {os.path.dirname(ragcore.__file__)}: "
      f"FlatIndex and BM25Index search OK; CUDA module {'in the wheel' if cuda else 'not built'}, "
      f"{ragcore.cuda_device_count()} device(s)")
EOF
"$WORK/venv/bin/ragcore" --help >/dev/null || fail "the ragcore command does not run"
step "OK"
