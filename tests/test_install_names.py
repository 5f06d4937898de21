"""No install command in the project may name the distribution "ragcore": on PyPI that name is
an unrelated project, so such a command installs someone else's package. This project's
distribution is ragcore-engine (pyproject.toml); the import name stays ragcore."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ["README.md", "BENCHMARKS.md", "Makefile", "pyproject.toml", ".ci", "src", "bench", "tools"]
SUFFIXES = {".md", ".py", ".sh", ".txt", ".toml", ""}

# pip options that take a value (the value is not a requirement).
_VALUED = {"-r", "--requirement", "-c", "--constraint", "-C", "--config-settings", "-t", "--target",
           "-d", "--dest", "-f", "--find-links", "-i", "--index-url", "--extra-index-url",
           "--prefix", "--root", "--platform", "--python-version", "--implementation", "--abi",
           "--only-binary", "--no-binary", "--upgrade-strategy", "--progress-bar", "--log",
           "--src", "--report", "--cache-dir", "--timeout", "--retries"}
# A token: quoted without spaces, or bare up to a space, quote, backtick or parenthesis. A
# command may wrap onto the next line, but a blank line or a comment ends it.
_TOKEN = re.compile(r"""(?:[ \t]+|[ \t]*\\?\n[ \t]*)(?:'([^'\s]+)'|"([^"\s]+)"|([^\s'"`()#]+))""")
_COMMAND = re.compile(r"\bpip3?\s+install\b")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503


def requirement_names(text: str) -> list[str]:
    """The distribution names that the `pip install` commands in text ask for (not paths or URLs)."""
    names = []
    for command in _COMMAND.finditer(text):
        pos, skip = command.end(), False
        while (token := _TOKEN.match(text, pos)) is not None:
            pos = token.end()
            word = next(group for group in token.groups() if group is not None)
            if skip:
                skip = False
            elif word.startswith("-"):
                skip = word in _VALUED
            elif not re.match(r"[.~/$]|\w+://", word) and "/" not in word.split("[")[0]:
                name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", word)
                if name:
                    names.append(name.group(0).rstrip("._-"))
    return names


def scanned_files():
    for entry in SCANNED:
        path = ROOT / entry
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in files:
            if file.suffix in SUFFIXES and "results" not in file.relative_to(ROOT).parts:
                yield file


@pytest.mark.parametrize("text, names", [
    ("pip install 'ragcore[stem]'", ["ragcore"]),
    ('run `pip install -U "RagCore>=0.1"` first', ["RagCore"]),
    ("python -m pip install -q --no-deps ragcore_engine x==1", ["ragcore_engine", "x"]),
    ("``pip install\n'ragcore[dist]'``", ["ragcore"]),
    ("pip install 'ray>=2.9' (or ragcore)", ["ray"]),
    ('pip install ".[langchain]" dist/ragcore-0.1.0-py3-none-any.whl', []),
    ("pip install -C cmake.define.X=ON -r ragcore.txt -e ./ragcore", []),
    ('"needs lz4: pip install lz4")', ["lz4"]),
    ("pip install -q --upgrade pip\n\n# installed as 'ragcore' before", ["pip"]),
])
def test_requirement_names(text, names):
    assert requirement_names(text) == names


def test_distribution_is_not_named_ragcore():
    name = re.search(r'^name = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    assert _normalise(name) == "ragcore-engine"


def test_no_install_command_names_the_pypi_ragcore():
    files = list(scanned_files())
    assert any(f.name == "README.md" for f in files) and any(f.suffix == ".py" for f in files)
    found = [f"{file.relative_to(ROOT)}: pip install {name}"
             for file in files
             for name in requirement_names(file.read_text(errors="replace"))
             if _normalise(name) == "ragcore"]
    assert not found, "these install PyPI's unrelated 'ragcore':\n" + "\n".join(found)
