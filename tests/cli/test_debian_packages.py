"""The Debian package-description corpus: parsing dpkg's status and apt's lists, compressed or
not, Translation files, and a machine without any of them."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from ragcore.cli import debian_packages as source
from ragcore.cli.datasets import debian_packages, load

STATUS = """Package: alpha
Status: install ok installed
Description: tool that parses alpha files quickly
 Alpha reads files in the alpha format.
 .
 It is fast.

Package: beta
Description: library for beta numbers and more
 Beta computes things.

Package: gamma
Description: no long description here
"""

PACKAGES = """Package: alpha
Description: another alpha, ignored: status came first
 Other text.

Package: delta
Description: delta compression of many big files
Description-md5: 0123

Package: epsilon
Description: short
Description-md5: 4567
"""

TRANSLATION = """Package: delta
Description-md5: 0123
Description-en: delta compression of many big files
 Delta stores differences between files.

Package: epsilon
Description-md5: 4567
Description-en: short
 Epsilon is small.
"""


def machine(tmp_path: Path) -> tuple:
    status = tmp_path / "status"
    status.write_text(STATUS)
    lists = tmp_path / "lists"
    lists.mkdir()
    for name, text in (("x_main_binary-amd64_Packages", PACKAGES),
                       ("x_main_i18n_Translation-en", TRANSLATION)):
        with gzip.open(lists / f"{name}.gz", "wt") as f:
            f.write(text)
    return str(status), str(lists)


def test_documents_questions_and_qrels(tmp_path):
    status, lists = machine(tmp_path)
    data = debian_packages(status=status, lists=lists)
    docs = {d.doc_id: d.text for d in data.documents}
    assert docs == {"alpha": "alpha\n\nAlpha reads files in the alpha format.\n\nIt is fast.",
                    "beta": "beta\n\nBeta computes things.",
                    "delta": "delta\n\nDelta stores differences between files.",
                    "epsilon": "epsilon\n\nEpsilon is small."}
    # "short" has fewer than four words: its package is a document but asks nothing.
    assert data.questions == ["tool that parses alpha files quickly",
                              "library for beta numbers and more",
                              "delta compression of many big files"]
    assert [data.qrels[q] for q in data.qids] == [{"alpha": 1}, {"beta": 1}, {"delta": 1}]
    assert data.evidence is None and data.name == "debian_packages"


def test_lz4_lists_are_read(tmp_path):
    status, lists = machine(tmp_path)
    lz4 = pytest.importorskip("lz4.frame")
    packages = Path(lists) / "x_main_binary-amd64_Packages.gz"
    with gzip.open(packages, "rb") as f:
        raw = f.read()
    packages.unlink()
    (Path(lists) / "x_main_binary-amd64_Packages.lz4").write_bytes(lz4.compress(raw))
    assert source.read_text(Path(lists) / "x_main_binary-amd64_Packages.lz4") == PACKAGES
    data = debian_packages(status=False, lists=lists)
    assert {d.doc_id for d in data.documents} == {"alpha", "delta", "epsilon"}


def test_lz4_without_any_reader_is_a_clear_error(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_lz4(name, *args, **kw):
        if name.startswith("lz4"):
            raise ImportError(name)
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_lz4)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(source, "_APT_HELPER", tmp_path / "no-apt-helper")
    path = tmp_path / "x_Packages.lz4"
    path.write_bytes(b"\x04\x22\x4d\x18")
    with pytest.raises(OSError, match="lz4-compressed and nothing here reads lz4: pip install lz4"):
        source.read_text(path)


def test_a_machine_without_package_lists_is_told_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="no package descriptions on this machine"):
        debian_packages(status=tmp_path / "none", lists=tmp_path / "none")
    with pytest.raises(FileNotFoundError, match="neither a BEIR folder nor a built-in corpus"):
        load("debian_pkgs")


@pytest.mark.skipif(not source.STATUS.is_file(), reason="not a Debian-based machine")
def test_this_machines_corpus_loads_by_name():
    data = load("debian_packages", max_docs=200, seed=0)
    assert len(data.documents) == 200 and len(data.questions) > 50
    assert len(set(data.questions)) == len(data.questions)
    names = {d.doc_id for d in data.documents}
    assert all(next(iter(data.qrels[q])) in names for q in data.qids)
