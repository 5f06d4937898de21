"""The demo's legend and closing summary, on a small report (no corpus, no model)."""

from __future__ import annotations

import copy

import pytest

from ragcore.cli.demo_hybrid import format_report

SYSTEMS = ("BM25", "dense", "hybrid (tuned)", "BM25 + rerank", "dense + rerank",
           "hybrid (tuned) + rerank")
RECALL10 = dict(zip(SYSTEMS, (0.50, 0.70, 0.74, 0.60, 0.75, 0.78)))


def _report() -> dict:
    quality = {name: {"recall@1": r / 3, "recall@5": r - 0.1, "recall@10": r, "mrr@10": r - 0.3,
                      "doc ndcg@10": r - 0.2} for name, r in RECALL10.items()}
    tests = [{"system": "hybrid (tuned) + rerank", "against": "dense + rerank",
              "metric": "recall@10", "gained": 30, "lost": 10, "tied": 160, "p_value": 0.0022},
             {"system": "hybrid (tuned)", "against": "dense", "metric": "mrr@10",
              "gained": 40, "lost": 35, "tied": 125, "p_value": 0.64},
             {"system": "hybrid (tuned)", "against": "BM25", "metric": "recall@10",
              "gained": 5, "lost": 25, "tied": 170, "p_value": 0.0003}]
    return {"dataset": "stdlib_docs", "documents": 30, "chunks": 40, "questions": 300,
            "tuning_questions": 100, "held_out_questions": 200, "k0": 50, "rerank_k0": 20,
            "k": 10, "quality": quality, "sign_tests": tests,
            "tuning": {"setting": "convex(alpha=0.6, norm='minmax')", "metric":
                       "worst_gain(recall@10, mrr@10)", "queries": 100, "folds": 5,
                       "settings_searched": 72, "fold_settings": ["rrf(r0=2)"] * 5,
                       "cv_score": 0.012, "fold_scores": [0.01, 0.02, 0.0, 0.01, 0.02]},
            "latency_ms_p50_p95": {"encode": (4.0, 6.0), "rerank": (9.0, 12.0),
                                   "total": (15.8, 21.0)}}


def _section(text: str, title: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(title)
    end = next((i for i in range(start + 1, len(lines)) if lines[i] in ("Legend", "Summary")),
               len(lines))
    return lines[start + 1:end]


def test_every_column_printed_has_a_legend_entry():
    text = format_report(_report())
    lines = text.splitlines()
    headers = [cell.strip() for line, below in zip(lines, lines[1:]) if below.startswith("|---")
               for cell in line.strip("|").split("|")]
    assert {"system", "recall@10", "doc ndcg@10", "gained", "sign test p", "stage",
            "p95 ms"} <= set(headers)
    explained = {line.strip().split(": ", 1)[0] for line in _section(text, "Legend")
                 if line.startswith("  ")}
    assert set(headers) <= explained, set(headers) - explained
    # the header's terms too
    assert {"k0", "k", "r0", "alpha, norm", "worst_gain(recall@10, mrr@10)"} <= explained


def test_metric_meanings_follow_the_labels():
    text = format_report(_report())
    legend = _section(text, "Legend")
    assert "  recall@5: the share of the question's evidence passages (gold text spans) found " \
           "in the top 5 results" in legend
    assert any(line.startswith("  doc ndcg@10: graded ranking quality of the relevant documents")
               for line in legend)


def test_summary_is_read_from_the_numbers():
    summary = _section(format_report(_report()), "Summary")
    assert summary[1] == "On 200 held-out questions (not used for tuning):"
    assert ("- recall@10: best is hybrid (tuned) + rerank (0.780), +0.030, +4.0% over the "
            "runner-up dense + rerank (0.750); significant by the sign test (wins 30 questions, "
            "loses 10, p = 0.0022)") in summary
    assert ("- sign tests, significantly worse: hybrid (tuned) vs BM25 on recall@10 (gained 5, "
            "lost 25, p = 0.0003)") in summary
    assert ("- sign tests, no significant difference: hybrid (tuned) vs dense (mrr@10 "
            "p = 0.64)") in summary
    assert "- speed: one question through hybrid (tuned) + rerank takes 15.8 ms at the median, " \
           "21.0 ms at p95" in summary


def test_summary_changes_with_the_numbers():
    report = copy.deepcopy(_report())
    report["quality"]["BM25"]["mrr@10"] = 0.9
    summary = _section(format_report(report), "Summary")
    line = next(s for s in summary if s.startswith("- mrr@10:"))
    assert line.startswith("- mrr@10: best is BM25 (0.900), +0.420")
    assert line.endswith("these two are not sign-tested (the demo tests hybrid (tuned) against "
                         "dense, BM25 and RRF)")
    report["quality"]["dense + rerank"]["recall@10"] = 0.78
    line = next(s for s in _section(format_report(report), "Summary")
                if s.startswith("- recall@10:"))
    assert line == ("- recall@10: 2 systems tie for best at 0.780 (dense + rerank, "
                    "hybrid (tuned) + rerank)")


@pytest.mark.parametrize("p, word", [(0.2, "not significant"), (0.01, "significant")])
def test_the_best_pair_verdict_follows_its_p_value(p, word):
    report = _report()
    report["sign_tests"][0]["p_value"] = p
    line = next(s for s in _section(format_report(report), "Summary")
                if s.startswith("- recall@10:"))
    assert line.split("; ")[-1].startswith(f"{word} by the sign test")


def test_level_sign_tests_of_one_pair_are_grouped():
    report = _report()
    report["sign_tests"].append({"system": "hybrid (tuned)", "against": "dense",
                                 "metric": "recall@10", "gained": 9, "lost": 7, "tied": 184,
                                 "p_value": 0.8})
    summary = _section(format_report(report), "Summary")
    assert ("- sign tests, no significant difference: hybrid (tuned) vs dense (mrr@10 p = 0.64, "
            "recall@10 p = 0.8)") in summary
