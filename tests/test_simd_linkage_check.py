"""tools/check_simd_linkage.py on tiny objects compiled here: it must flag an inline function
that a SIMD file and a baseline file both emit, and pass the same code once the SIMD file's
copy has internal linkage. (`make test` runs the tool on the real build's objects.)"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[1] / "tools" / "check_simd_linkage.py"

SHARED_HEADER = "inline int grow(std::vector<int>& v) { v.push_back(1); return (int)v.size(); }\n"
BASELINE = "#include <vector>\n" + SHARED_HEADER + "int scalar_path(std::vector<int>& v) { return grow(v); }\n"
SIMD_SHARED = "#include <vector>\n" + SHARED_HEADER + "int simd_path(std::vector<int>& v) { return grow(v) * 2; }\n"
HELPER = "inline int twice(int x) { return 2 * x + 1; }\n"
BASELINE_HELPER = HELPER + "int scalar_path(int x) { return twice(x); }\n"
SIMD_INTERNAL = "namespace {\n" + HELPER + "}\nint simd_path(int x) { return twice(x) * 3; }\n"

needs_toolchain = pytest.mark.skipif(not (shutil.which("g++") and shutil.which("nm")),
                                     reason="needs g++ and nm")


def compile_objects(tmp: Path, simd_source: str, baseline: str = BASELINE) -> Path:
    build = tmp / "build"
    build.mkdir(parents=True)
    for name, source, flags in (("scalar.cpp", baseline, []), ("kernel_avx2.cpp", simd_source, ["-mavx2"])):
        (tmp / name).write_text(source)
        # -O0 keeps the inline functions out of line, as a real build does for larger ones.
        subprocess.run(["g++", "-O0", "-c", *flags, str(tmp / name), "-o", str(build / (name + ".o"))],
                       check=True)
    return build


def run_tool(build: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), str(build)], capture_output=True, text=True)


@needs_toolchain
def test_flags_an_inline_function_shared_with_scalar_code(tmp_path):
    result = run_tool(compile_objects(tmp_path, SIMD_SHARED))
    assert result.returncode == 1, result.stderr
    assert "kernel_avx2.cpp.o: grow(std::vector<int, std::allocator<int> >&)" in result.stdout
    assert "scalar.cpp.o" in result.stdout


@needs_toolchain
def test_passes_when_the_simd_copy_is_internal(tmp_path):
    shared = run_tool(compile_objects(tmp_path / "a", "namespace {}\n" + BASELINE_HELPER.replace(
        "scalar_path", "simd_path"), BASELINE_HELPER))
    assert shared.returncode == 1 and "twice(int)" in shared.stdout  # the same helper, external
    result = run_tool(compile_objects(tmp_path / "b", SIMD_INTERNAL, BASELINE_HELPER))
    assert result.returncode == 0, result.stdout
    assert result.stdout == ""


def test_refuses_a_folder_without_simd_objects(tmp_path):
    result = run_tool(tmp_path)
    assert result.returncode == 2
    assert "no SIMD objects" in result.stderr


TABLE = "struct Table { int (*fn)(int); const char* name; };\nint twice(int x) { return 2 * x; }\n"
DYNAMIC_TABLE = TABLE + "Table make() { return Table{twice, \"avx2\"}; }\nextern const Table kTable = make();\n"
CONSTANT_TABLE = (TABLE + "constexpr Table make() { return Table{twice, \"avx2\"}; }\n"
                  "extern constexpr Table kTable = make();\n")


@needs_toolchain
def test_flags_a_static_initializer_in_a_simd_object(tmp_path):
    """A kernel table built at load time runs the SIMD file's code on every CPU."""
    result = run_tool(compile_objects(tmp_path / "a", DYNAMIC_TABLE, "int scalar_path() { return 0; }\n"))
    assert result.returncode == 1, result.stderr
    assert "kernel_avx2.cpp.o: has a static initializer" in result.stdout
    result = run_tool(compile_objects(tmp_path / "b", CONSTANT_TABLE, "int scalar_path() { return 0; }\n"))
    assert result.returncode == 0, result.stdout
