"""Renders BENCHMARKS.md from bench/results/*.json (the ragcore-bench/1 schema, bench/README.md).

Every file that follows the schema becomes one section, in its `order`, then by name; the page
opens with the machine (bench/results/hw.json) and the summary table gathered from every
file's `summary` rows. A file that does not follow the schema is named at the end, not rendered.

Run:  python bench/report.py [--results DIR] [--out BENCHMARKS.md] [--plots DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_file import ROOT, SCHEMA  # noqa: E402

REQUIRED = ("task", "title", "command", "machine")


def load(results: Path) -> tuple[list[dict], list[str]]:
    """(documents that follow the schema, in page order; names of the other .json files)."""
    docs, skipped = [], []
    for path in sorted(results.glob("*.json")):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            skipped.append(f"{path.name} (not JSON)")
            continue
        missing = [k for k in REQUIRED if k not in doc] if isinstance(doc, dict) else ["all"]
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or missing:
            skipped.append(path.name)
            continue
        if "tables" not in doc:
            doc["tables"] = [{"title": "", "columns": doc.get("columns", []),
                              "rows": doc.get("rows", []), "notes": []}]
        docs.append(doc)
    docs.sort(key=lambda d: (d.get("order", 100), d["task"]))
    return docs, skipped


def _columns(columns: list) -> list[dict]:
    return [c if isinstance(c, dict) else {"key": c, "label": c} for c in columns]


def cell(value, spec: str | None) -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if spec and isinstance(value, (int, float)):
        try:
            return format(value, spec)
        except ValueError:
            pass
    if isinstance(value, float):
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(table: dict) -> str:
    cols = _columns(table.get("columns", []))
    if not cols:
        return ""
    lines = ["| " + " | ".join(c.get("label", c["key"]) for c in cols) + " |",
             "| " + " | ".join("---:" if c.get("format") else "---" for c in cols) + " |"]
    for row in table.get("rows", []):
        if isinstance(row, (list, tuple)):
            row = {c["key"]: v for c, v in zip(cols, row)}
        lines.append("| " + " | ".join(cell(row.get(c["key"]), c.get("format"))
                                       for c in cols) + " |")
    return "\n".join(lines)


def machine_line(doc: dict) -> str:
    m = doc["machine"]
    parts = [str(m.get("cpu") or "CPU not recorded")]
    if m.get("cores"):
        parts.append(f"{m['cores']} cores")
    if m.get("threads"):
        parts.append(f"{m['threads']} threads used")
    if m.get("flags"):
        parts.append(" ".join(m["flags"]))
    if m.get("openblas_coretype"):
        parts.append(f"OPENBLAS_CORETYPE={m['openblas_coretype']}")
    if m.get("gpu"):
        parts.append(f"GPU {m['gpu']}")
    if m.get("load"):
        parts.append(f"load: {m['load']}")
    return "; ".join(parts)


def versions_line(doc: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in (doc.get("versions") or {}).items() if v)


def plot(doc: dict, plots: Path) -> Path | None:
    """Draws doc's plot to plots/<task>.png (None without matplotlib or data)."""
    spec = doc.get("plot")
    if not spec:
        return None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    where = spec.get("where", {})
    rows = [r for r in doc["tables"][spec.get("table", 0)]["rows"]
            if isinstance(r, dict) and all(r.get(k) == v for k, v in where.items())]
    series: dict[str, list] = {}
    for r in rows:
        if r.get(spec["x"]) is not None and r.get(spec["y"]) is not None:
            series.setdefault(str(r.get(spec.get("series"), "")), []).append(
                (r[spec["x"]], r[spec["y"]]))
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for name, points in sorted(series.items()):
        points.sort()
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", ms=3, label=name)
    ax.set_xscale("log" if spec.get("logx") else "linear")
    ax.set_yscale("log" if spec.get("logy") else "linear")
    ax.set_xlabel(spec.get("xlabel", spec["x"]))
    ax.set_ylabel(spec.get("ylabel", spec["y"]))
    ax.set_title(doc["title"], fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    plots.mkdir(parents=True, exist_ok=True)
    path = plots / f"{doc['task']}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def summary_table(docs: list[dict]) -> str:
    lines = ["| task | measure | ragcore | best peer | ragcore / best peer | share of limit |",
             "| --- | --- | ---: | --- | ---: | ---: |"]
    for doc in docs:
        for s in doc.get("summary", []):
            mine, theirs = s.get("ragcore"), s.get("best_peer_value")
            ratio = None
            if mine and theirs:
                ratio = mine / theirs if s.get("higher_is_better", True) else theirs / mine
            share = s.get("share")
            share_text = "—" if share is None else f"{share:.0%} of {s.get('limit', 'limit')}"
            peer = s.get("best_peer") or "—"
            if theirs is not None:
                peer += f" ({cell(theirs, s.get('format'))})"
            lines.append(f"| [{s.get('row', doc['title'])}](#{doc['task']}) | "
                         f"{s.get('measure', '')} | {cell(mine, s.get('format'))} | {peer} | "
                         f"{cell(ratio, '.2f')} | {share_text} |")
    return "\n".join(lines) if len(lines) > 2 else ""


def section(doc: dict, home_cpu: str | None, page: Path, plots: Path) -> str:
    out = [f'<a id="{doc["task"]}"></a>', f"## {doc['title']}", ""]
    if doc["machine"].get("cpu") != home_cpu or doc["machine"].get("gpu"):
        out += [f"**Measured on another machine:** {machine_line(doc)}.", ""]
    if doc.get("intro"):
        out += [doc["intro"], ""]
    out += ["```", doc["command"], "```", ""]
    meta = [f"threads {doc['machine']['threads']}"] if doc["machine"].get("threads") else []
    if doc["machine"].get("load") and doc["machine"].get("cpu") == home_cpu:
        meta.append(f"load: {doc['machine']['load']}")
    if doc.get("date"):
        meta.append(f"run {doc['date'][:16].replace('T', ' ')} UTC")
    if doc.get("commit"):
        meta.append(f"commit {doc['commit']}")
    if doc.get("elapsed_s"):
        meta.append(f"took {doc['elapsed_s']:.0f} s")
    if versions_line(doc):
        meta.append(versions_line(doc))
    out += ["<sub>" + "; ".join(meta) + "</sub>", ""]
    image = plot(doc, plots)
    if image is not None:
        rel = image.resolve().relative_to(page.parent.resolve()) \
            if image.resolve().is_relative_to(page.parent.resolve()) else image
        out += [f"![{doc['title']}]({rel.as_posix()})", ""]
    for table in doc["tables"]:
        if table.get("title"):
            out += [f"### {table['title']}", ""]
        text = markdown_table(table)
        if text:
            out += [text, ""]
        out += [f"- {n}" for n in table.get("notes", [])]
        if table.get("notes"):
            out.append("")
    out += [f"- {n}" for n in doc.get("notes", [])]
    return "\n".join(out).rstrip() + "\n"


def render(results: Path, page: Path, plots: Path) -> str:
    docs, skipped = load(results)
    hw = next((d for d in docs if d["task"] == "hw"), None)
    home = hw["machine"]["cpu"] if hw else (docs[0]["machine"]["cpu"] if docs else None)
    head = ["# Benchmarks", "",
            "Generated by `bench/report.py` from `bench/results/*.json`; do not edit by hand. "
            "Re-run with `make bench QUICK=1` or `make bench` "
            "(the full grids); bench/README.md describes the suite and the results schema.", ""]
    if hw:
        head += [f"**Machine:** {machine_line(hw)}. Every section below was measured on it "
                 "unless it says otherwise.", ""]
    took = [d["elapsed_s"] for d in docs if d.get("elapsed_s")]
    if took:
        # one run of bench/run.py: one commit and one load line for all its tasks
        runs = len({(d.get("commit"), d["machine"].get("load")) for d in docs
                    if d.get("elapsed_s")})
        head += [f"The tasks of these results took {sum(took) / 60:.1f} minutes in all"
                 + (f", in {runs} runs at different loads" if runs > 1 else "")
                 + " (each section gives its own time and load); figures of a loaded machine "
                 "move with the load, ratios measured in turns less so.", ""]
    summary = summary_table(docs)
    if summary:
        head += ["## Summary", "",
                 "ragcore's figure, the best peer's, their ratio (above 1: ragcore is ahead) and "
                 "the share of the hardware limit it reaches (bench/hw.py).", "", summary, ""]
    head += ["Sections: " + " · ".join(f"[{d['title']}](#{d['task']})" for d in docs), ""]
    body = [section(d, home, page, plots) for d in docs]
    tail = []
    if skipped:
        tail = ["## Result files not rendered", "",
                "These files under bench/results/ do not follow the ragcore-bench/1 schema: "
                + ", ".join(f"`{s}`" for s in skipped) + ".", ""]
    return "\n".join(head) + "\n" + "\n".join(body) + "\n" + "\n".join(tail)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--out", type=Path, default=ROOT / "BENCHMARKS.md")
    parser.add_argument("--plots", type=Path, default=ROOT / "bench" / "plots")
    args = parser.parse_args()
    text = render(args.results, args.out, args.plots)
    args.out.write_text(text.rstrip() + "\n")
    print(f"{args.out}: {len(text.encode()):,} bytes")


if __name__ == "__main__":
    main()
