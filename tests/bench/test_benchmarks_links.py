"""Every link into BENCHMARKS.md from the README and the other guides has a target there."""

from __future__ import annotations

import re

from _bench_path import ROOT

GUIDES = ["README.md", "bench/README.md", "bench/calibrate/README.md"]
LINK = re.compile(r"BENCHMARKS\.md#([A-Za-z0-9_\-]+)")


def _targets(page: str) -> set[str]:
    ids = set(re.findall(r'<a id="([^"]+)"></a>', page))
    for heading in re.findall(r"(?m)^#+ (.+)$", page):  # GitHub's heading anchors
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        ids.add(slug)
    return ids


def test_every_link_into_benchmarks_md_has_a_target():
    targets = _targets((ROOT / "BENCHMARKS.md").read_text())
    missing = [(guide, anchor) for guide in GUIDES
               for anchor in LINK.findall((ROOT / guide).read_text())
               if anchor not in targets]
    assert missing == []


def test_the_readme_links_the_results_page():
    assert LINK.search((ROOT / "README.md").read_text())
