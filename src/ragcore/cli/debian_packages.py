"""A second real corpus without any download: the package descriptions a Debian-based machine holds.

Each package is a document (its name, then its long description); its short description (the
synopsis line, kept when it has at least four words and no other package has the same one) is
the question, and the package the one relevant document. Sources, read in this order, the first
holding a package winning:

- ``/var/lib/dpkg/status``: every installed package, with its full description;
- ``/var/lib/apt/lists``: ``*_Packages`` files (plain, .gz, .xz, .bz2 or .lz4) and
  ``*_Translation-en`` files, which hold the long descriptions when apt keeps them apart
  (joined on Description-md5). Debian's bookworm lists carry only the short descriptions in
  Packages, so without Translation files the lists add no document.

lz4 (apt's default compression) is not in the standard library: it is read with the ``lz4``
package when installed, else with the ``lz4cat`` or apt's ``apt-helper cat-file`` tool; a list
none of them can read is skipped with a warning.
"""

from __future__ import annotations

import bz2
import functools
import gzip
import lzma
import re
import shutil
import subprocess
import warnings
from pathlib import Path

STATUS = Path("/var/lib/dpkg/status")
LISTS = Path("/var/lib/apt/lists")
_APT_HELPER = Path("/usr/lib/apt/apt-helper")


def read_text(path: Path) -> str:
    """A Packages / Translation / status file, decompressed by its suffix."""
    opener = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}.get(path.suffix)
    if opener is not None:
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            return f.read()
    if path.suffix == ".lz4":
        return _read_lz4(path)
    return path.read_text(encoding="utf-8", errors="replace")


def _read_lz4(path: Path) -> str:
    try:
        import lz4.frame
    except ImportError:
        pass
    else:
        with lz4.frame.open(path, "rt", encoding="utf-8", errors="replace") as f:
            return f.read()
    for command in ([shutil.which("lz4cat"), str(path)],
                    [str(_APT_HELPER), "cat-file", str(path)] if _APT_HELPER.exists() else [None]):
        if command[0]:
            done = subprocess.run(command, capture_output=True, check=False)
            if done.returncode == 0:
                return done.stdout.decode("utf-8", errors="replace")
    raise OSError(f"{path} is lz4-compressed and nothing here reads lz4: pip install lz4, or "
                  "install the lz4 tool (apt-get install lz4)")


def records(text: str):
    """The fields of each deb822 record (continuation lines kept, without the newline before
    the first)."""
    for block in re.split(r"\n\s*\n", text):
        fields, name = {}, None
        for line in block.split("\n"):
            if line.startswith((" ", "\t")) and name is not None:
                fields[name] += "\n" + line
            elif ":" in line:
                name, _, value = line.partition(":")
                fields[name] = value.strip()
        if fields:
            yield fields


def long_text(description: str) -> str:
    """The long description of a Description field: its lines after the synopsis, unindented,
    a " ." line a paragraph break."""
    lines = description.split("\n")[1:]
    out = ["" if line.strip() == "." else line[1:] if line.startswith(" ") else line
           for line in lines]
    return "\n".join(out).strip()


def _described(fields: dict, translations: dict):
    """(synopsis, long description) of a record, the long one from translations if needed."""
    description = fields.get("Description", "")
    synopsis = description.split("\n", 1)[0].strip()
    body = long_text(description)
    if not body and fields.get("Description-md5") in translations:
        body = translations[fields["Description-md5"]]
    return synopsis, body


@functools.lru_cache(maxsize=4)
def packages(status: str | None, lists: str | None) -> tuple:
    """(name, synopsis, long description) of every package with a long description."""
    sources = []
    if status is not None and Path(status).is_file():
        sources.append(Path(status))
    list_files = sorted(Path(lists).glob("*_Packages*")) if lists and Path(lists).is_dir() else []
    translation_files = sorted(Path(lists).glob("*_Translation-en*")) if list_files else []
    if not sources and not list_files:
        raise FileNotFoundError(
            f"no package descriptions on this machine: neither {status} nor any *_Packages file "
            f"under {lists} exists (the debian_packages corpus needs a Debian-based system)")
    translations = {}
    for path in translation_files:
        for fields in _readable_records(path):
            md5, text = fields.get("Description-md5"), fields.get("Description-en", "")
            if md5 and text:
                translations.setdefault(md5, long_text(text))
    seen, out = set(), []
    for path in sources + list_files:
        for fields in _readable_records(path):
            name = fields.get("Package")
            if not name or name in seen:
                continue
            synopsis, body = _described(fields, translations)
            if synopsis and body:
                seen.add(name)
                out.append((name, synopsis, body))
    if not out:
        raise ValueError(f"the package lists read ({', '.join(map(str, sources + list_files))}) "
                         "hold no long description")
    return tuple(out)


def _readable_records(path: Path):
    try:
        text = read_text(path)
    except OSError as err:
        warnings.warn(f"skipping {path}: {err}", RuntimeWarning, stacklevel=3)
        return
    yield from records(text)
