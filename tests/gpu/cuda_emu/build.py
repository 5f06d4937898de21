"""Builds tests/gpu/cuda_emu's runners: CUDA sources of cuda/ compiled as C++ for the CPU
emulation in emu.h. Used by tests/gpu/test_gpu_bm25_emulated.py (the GPU BM25 plans) and
tests/gpu/test_gpu_flat_emulated.py (DeviceCorpus::search with the scan and tiled kernels).

    python tests/gpu/cuda_emu/build.py OUT_DIR [bm25|flat]      (prints the runner's path)
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
# Each runner: its CUDA sources, and its own files here (main first).
RUNNERS = {
    "bm25": (("bm25_search.cu", "bm25_pruned.cu", "select.cu", "device_corpus.cu"),
             ("main.cpp",)),
    "flat": (("flat_search.cu", "select.cu", "device_corpus.cu", "inst_score_f32.cu"),
             ("flat_main.cpp", "inst_score_16bit.cpp")),
}
# kernel<<<grid, block[, smem[, stream]]>>>(args)  ->  emu::launch(kernel, grid, ...)(args)
LAUNCH = re.compile(r"([A-Za-z_][\w:<>, ]*?)<<<(.*?)>>>\(", re.S)
# extern __shared__ T name[];  ->  T* name = emu::dynamic_shared<T>();
DYNAMIC_SHARED = re.compile(r"extern\s+__shared__\s+(\w+)\s+(\w+)\[\];")


def cuda_include() -> Path | None:
    """The CUDA toolkit's include folder (for cuda_runtime.h), beside nvcc."""
    nvcc = shutil.which("nvcc")  # may be a wrapper script: also try the usual places
    roots = ([Path(nvcc).resolve().parent.parent] if nvcc else []) + [Path("/usr/local/cuda")]
    roots += sorted(Path("/usr/local").glob("cuda-*"))
    return next((r / "include" for r in roots if (r / "include" / "cuda_runtime.h").exists()), None)


def emulated_source(path: Path) -> str:
    """The file's text with launches, shared memory and launch bounds in emu.h's terms
    (one block runs at a time, so a block's __shared__ variables can be static)."""
    text = LAUNCH.sub(lambda m: f"emu::launch({m.group(1).strip()}, {m.group(2)})(", path.read_text())
    text = DYNAMIC_SHARED.sub(lambda m: f"{m.group(1)}* {m.group(2)} = emu::dynamic_shared<{m.group(1)}>();",
                              text)
    text = text.replace("__shared__", "static")
    return re.sub(r"__launch_bounds__\(\w+\)", "", text)


def build(out: Path, runner: str = "bm25") -> Path:
    include = cuda_include()
    if include is None:
        raise RuntimeError("no CUDA toolkit headers (nvcc) found")
    sources, own = RUNNERS[runner]
    headers = out / "include"  # the rewritten headers of cuda/, found before the originals
    headers.mkdir(parents=True, exist_ok=True)
    for header in [*CUDA_SOURCES.glob("*.cuh"), *CUDA_SOURCES.glob("*.h")]:
        (headers / header.name).write_text(emulated_source(header))
    units = []
    for name in sources:
        unit = out / (name + ".cpp")
        unit.write_text(emulated_source(CUDA_SOURCES / name))
        units.append(unit)
    path = out / f"{runner}_emulated"
    cmd = ["g++", "-std=c++17", "-O1", "-ffp-contract=off", "-Wall", "-Wno-unused-function",
           f"-I{headers}", f"-I{HERE}", f"-I{CUDA_SOURCES}", f"-I{CPP_INCLUDE}", f"-I{include}",
           "-include", str(HERE / "emu.h"), *map(str, units),
           *(str(HERE / name) for name in own), str(HERE / "runtime.cpp"), "-o", str(path)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return path


if __name__ == "__main__":
    print(build(Path(sys.argv[1]), *sys.argv[2:3]))
