"""Builds tests/gpu/cuda_emu's runner: the GPU BM25 plans' CUDA sources compiled as C++ for
the CPU emulation in emu.h. Used by tests/gpu/test_gpu_bm25_emulated.py.

    python tests/gpu/cuda_emu/build.py OUT_DIR      (prints the runner's path)
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CUDA_SOURCES = HERE.parents[2] / "cuda"
CPP_INCLUDE = HERE.parents[2] / "cpp" / "include"  # the enumerations shared with the CPU code
SOURCES = ("bm25_search.cu", "bm25_pruned.cu", "select.cu")
# kernel<<<grid, block[, smem[, stream]]>>>(args)  ->  emu::launch(kernel, grid, ...)(args)
LAUNCH = re.compile(r"([A-Za-z_][\w:<>, ]*?)<<<(.*?)>>>\(", re.S)


def cuda_include() -> Path | None:
    """The CUDA toolkit's include folder (for cuda_runtime.h), beside nvcc."""
    nvcc = shutil.which("nvcc")  # may be a wrapper script: also try the usual places
    roots = ([Path(nvcc).resolve().parent.parent] if nvcc else []) + [Path("/usr/local/cuda")]
    roots += sorted(Path("/usr/local").glob("cuda-*"))
    return next((r / "include" for r in roots if (r / "include" / "cuda_runtime.h").exists()), None)


def emulated_source(path: Path) -> str:
    text = path.read_text()
    return LAUNCH.sub(lambda m: f"emu::launch({m.group(1).strip()}, {m.group(2)})(", text)


def build(out: Path) -> Path:
    include = cuda_include()
    if include is None:
        raise RuntimeError("no CUDA toolkit headers (nvcc) found")
    out.mkdir(parents=True, exist_ok=True)
    units = []
    for name in SOURCES:
        unit = out / (name + ".cpp")
        unit.write_text(emulated_source(CUDA_SOURCES / name))
        units.append(unit)
    runner = out / "bm25_emulated"
    cmd = ["g++", "-std=c++17", "-O1", "-ffp-contract=off", "-Wall", "-Wno-unused-function",
           f"-I{HERE}", f"-I{CUDA_SOURCES}", f"-I{CPP_INCLUDE}", f"-I{include}",
           "-include", str(HERE / "emu.h"),
           *map(str, units), str(HERE / "runtime.cpp"), str(HERE / "main.cpp"), "-o", str(runner)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return runner


if __name__ == "__main__":
    print(build(Path(sys.argv[1])))
