"""Fails when a SIMD translation unit shares an inline or template function with another one,
or runs code when the module is loaded.

Why: the files compiled with -mavx2 / -mavx512* (cpp/src/**/*_avx2.cpp, *_avx512.cpp,
*_vnni.cpp, *_amx.cpp) may emit their own copy of any inline function they use (std::vector's growth,
std::sort, a helper defined in a header) as a weak symbol. The linker keeps one copy of each
weak symbol for the whole module, and may keep the SIMD file's: scalar code then runs AVX-512
instructions and dies with SIGILL on a CPU without them, on a path the run-time dispatch was
meant to keep safe. Nothing at run time on an AVX-512 machine shows it, so the build objects are
checked instead: a weak (or unique) symbol defined by a SIMD object must not be defined by any
other object of the module. Helpers a SIMD file needs go in an anonymous namespace (internal
linkage, one copy per file), or out of line in a baseline file.

A SIMD object must not have a static initializer either (an .init_array or .ctors section):
the loader runs it when Python imports the module, on every CPU, before any dispatch. A kernel
table built by a non-constexpr call is such an initializer, and the compiler may use the
file's SIMD instructions in it (it stored an AVX-512 table with zmm registers, so `import
ragcore` died with SIGILL on an AVX2-only CPU). Tables are constant-initialized (constexpr).

    python tools/check_simd_linkage.py BUILD_DIR

BUILD_DIR: the CMake build folder (scikit-build-core's build/<wheel tag>); every .o under it is
read with `nm`. Exit status 1 and one line per shared symbol when the rule is broken.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

SIMD_OBJECT = re.compile(r"_(avx2|avx512|vnni|amx)[^/]*\.o$")
WEAK_TYPES = {"W", "V", "u"}  # weak function / weak object / GNU unique (inline statics)


def defined_symbols(obj: Path) -> list[tuple[str, str]]:
    """(mangled name, nm type letter) of every symbol obj defines."""
    out = subprocess.run(["nm", "--defined-only", "-P", str(obj)], check=True,
                         capture_output=True, text=True).stdout
    return [(parts[0], parts[1]) for parts in (line.split() for line in out.splitlines())
            if len(parts) >= 2]


def shared_simd_symbols(objects: list[Path]) -> list[tuple[str, Path, list[Path]]]:
    """(symbol, SIMD object, other objects defining it) for every breach of the rule."""
    definers: dict[str, list[Path]] = defaultdict(list)
    weak_in_simd: list[tuple[str, Path]] = []
    for obj in objects:
        for name, kind in defined_symbols(obj):
            definers[name].append(obj)
            if kind in WEAK_TYPES and SIMD_OBJECT.search(obj.name):
                weak_in_simd.append((name, obj))
    return [(name, obj, [o for o in definers[name] if o != obj])
            for name, obj in weak_in_simd if len(definers[name]) > 1]


def has_static_initializer(obj: Path) -> bool:
    """Whether obj carries code the loader runs at load time (.init_array / .ctors)."""
    out = subprocess.run(["objdump", "-h", str(obj)], check=True, capture_output=True,
                         text=True).stdout
    return any(part in (".init_array", ".ctors") or part.startswith((".init_array.", ".ctors."))
               for line in out.splitlines() for part in line.split()[1:2])


def demangle(name: str) -> str:
    return subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip() or name


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-4], file=sys.stderr)
        return 2
    build = Path(argv[1])
    objects = sorted(build.rglob("*.o"))
    simd = [o for o in objects if SIMD_OBJECT.search(o.name)]
    if not simd:
        print(f"check_simd_linkage: no SIMD objects (*_avx2/_avx512/_vnni*.o) under {build}; "
              "pass the CMake build folder of the native module", file=sys.stderr)
        return 2
    breaches = shared_simd_symbols(objects)
    for name, obj, others in breaches:
        print(f"{obj.name}: {demangle(name)} is also defined by "
              f"{', '.join(o.name for o in others)}")
    initializers = [o for o in simd if has_static_initializer(o)]
    for obj in initializers:
        print(f"{obj.name}: has a static initializer (runs at import on every CPU); "
              "make its tables constexpr")
    print(f"check_simd_linkage: {len(objects)} objects, {len(simd)} SIMD, "
          f"{len(breaches)} shared inline symbols, {len(initializers)} static initializers",
          file=sys.stderr)
    return 1 if breaches or initializers else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
