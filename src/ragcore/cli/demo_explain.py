"""What the demo's tables mean: a legend of every column and term it prints, and a closing
summary read from the report's numbers (best system, by how much, the sign tests' verdicts).

Nothing here states a result: every figure and every verdict comes from the report, so the
text stays true for any corpus, seed or encoder.
"""

from __future__ import annotations

SIGNIFICANT = 0.05  # the sign test's p below which a difference is called significant

_STAGES = {
    "filter": "resolving a metadata filter",
    "encode": "the question into a vector (bi-encoder)",
    "dense": "the dense (vector) search",
    "sparse": "the BM25 search",
    "fuse": "fusing the two lists",
    "rerank": "reordering the fused candidates (late interaction)",
    "fetch": "reading the results' texts",
    "total": "the whole question, end to end",
}


def legend(report: dict, metrics: list, tuned: str) -> list[str]:
    """One line per column of the tables and per term of the header, as printed; tuned: the
    tuned hybrid's name."""
    spans = any(m.startswith("doc ") for m in metrics)
    lines = ["Legend", "", *_terms(report), "", "quality table (held-out questions; "
             "means from 0 to 1, higher is better):",
             _item("system", _systems_meaning(report, tuned))]
    lines += [_item(m, _metric_meaning(m, spans, report["k"])) for m in metrics]
    lines += ["", "sign-test table (each held-out question scored by both systems):",
              _item("per question", "the pair compared: the first system against the second"),
              _item("metric", "the per-question metric compared"),
              _item("gained", "questions where the first system scores higher"),
              _item("lost", "questions where it scores lower"),
              _item("tied", "questions where both score the same (left out of the test)"),
              _item("sign test p", "the chance of a gained/lost split at least this uneven if "
                    "each system were equally likely to win a question; below "
                    f"{SIGNIFICANT:g}: significant (even between equally good systems about 1 "
                    f"in 20 tests passes by chance; the table holds "
                    f"{len(report['sign_tests'])})"),
              "", "latency table (questions timed one at a time):",
              _item("stage", "; ".join(f"{s}: {_STAGES.get(s, 'time in this stage')}"
                                       for s in report["latency_ms_p50_p95"])),
              _item("p50 ms", "the median time, in milliseconds"),
              _item("p95 ms", "the time 95% of the questions stay under")]
    return lines


def _item(name: str, meaning: str) -> str:
    return f"  {name}: {meaning}"


def _terms(report: dict) -> list[str]:
    tc = report["tuning"]
    return [
        _item("k0", f"candidates each first stage (BM25 and dense) passes to fusion "
              f"({report['k0']}); the reranked systems take {report['rerank_k0']} from each "
              f"instead, and the reranker reorders the {report['rerank_k0']} fused ones"),
        _item("k", f"results kept per question ({report['k']})"),
        _item("r0", "RRF's constant: a result at rank r of a list scores 1 / (r0 + r), summed "
              "over the two lists; a small r0 favours the top of each list"),
        _item("alpha, norm", "convex fusion: alpha x dense score + (1 - alpha) x BM25 score, "
              "each list's scores first normalised by norm (theoretical: from the score's lower "
              "bound, minmax: to [0, 1], zscore: to mean 0 and standard deviation 1)"),
        _item(tc["metric"], "the tuning criterion: on each metric, the gain (on documents) of "
              "the fused list over the better of dense and BM25 alone; the smaller of those "
              "gains. Above 0: better than both lists on every metric"),
        _item(f"held-out {tc['metric']}", f"that criterion on the tuning questions, each "
              f"scored at the setting chosen without it ({tc['folds']}-fold cross-validation)"),
        _item("fold std", "its standard deviation over the folds"),
    ]


def _systems_meaning(report: dict, tuned: str) -> str:
    return ("BM25: keyword search; dense: the bi-encoder's vectors; hybrid RRF (r0 = 60): both "
            "fused by RRF with the common r0; hybrid default: the fusion HybridRetriever uses "
            f"unless told otherwise; {tuned}: the fusion tuned on the tuning questions; "
            f"+ rerank: the top {report['rerank_k0']} fused candidates reordered by late "
            "interaction")


def _metric_meaning(metric: str, spans: bool, k: int) -> str:
    on_docs = metric.startswith("doc ") or not spans
    name, _, depth = metric.removeprefix("doc ").partition("@")
    depth = int(depth or k)
    where = "the first result" if depth == 1 else f"the top {depth} results"
    target = "relevant documents" if on_docs else "evidence passages (gold text spans)"
    if name == "recall":
        return f"the share of the question's {target} found in {where}"
    if name == "mrr":
        return f"1 / the rank of the first of the question's {target} in {where}, 0 if none"
    if name == "ndcg":
        return f"graded ranking quality of the {target} in {where}, 1 = the ideal order"
    return f"{metric} of the {target}"


def summary(report: dict, metrics: list, tuned: str) -> list[str]:
    """What the numbers say, sentence by sentence, from the report alone."""
    n = report["held_out_questions"]
    lines = ["Summary", "", f"On {n} held-out questions (not used for tuning):"]
    lines += [f"- {_best_line(report, m, tuned)}" for m in metrics
              if m in ("recall@10", "mrr@10")]
    lines += [f"- {line}" for line in _sign_test_lines(report["sign_tests"])]
    total = report["latency_ms_p50_p95"].get("total")
    if total:
        lines.append(f"- speed: one question through {tuned} + rerank takes {total[0]:.1f} ms "
                     f"at the median, {total[1]:.1f} ms at p95")
    return lines


def _best_line(report: dict, metric: str, tuned: str) -> str:
    quality = report["quality"]
    ranked = sorted(quality, key=lambda s: quality[s][metric], reverse=True)
    best, second = ranked[0], ranked[1]
    top, runner = quality[best][metric], quality[second][metric]
    if top == runner:
        tied = [s for s in ranked if quality[s][metric] == top]
        return f"{metric}: {len(tied)} systems tie for best at {top:.3f} ({', '.join(tied)})"
    relative = f", {100 * (top - runner) / runner:+.1f}%" if runner > 0 else ""
    return (f"{metric}: best is {best} ({top:.3f}), {top - runner:+.3f}{relative} over the "
            f"runner-up {second} ({runner:.3f}); "
            f"{_verdict(report['sign_tests'], best, second, metric, tuned)}")


def _verdict(tests: list, best: str, second: str, metric: str, tuned: str) -> str:
    """The sign test of best against second on metric, in words, if the demo ran it."""
    for s in tests:
        if s["metric"] == metric and {s["system"], s["against"]} == {best, second}:
            wins, losses = (s["gained"], s["lost"]) if s["system"] == best else \
                (s["lost"], s["gained"])
            counts = f"wins {wins} questions, loses {losses}, p = {s['p_value']:.3g}"
            if s["p_value"] < SIGNIFICANT:
                return f"significant by the sign test ({counts})"
            return f"not significant by the sign test ({counts}): the two are level here"
    return (f"these two are not sign-tested (the demo tests {tuned} against dense, BM25 "
            "and RRF)")


def _sign_test_lines(tests: list) -> list[str]:
    better, worse, level = [], [], {}
    for s in tests:
        pair = f"{s['system']} vs {s['against']}"
        if s["p_value"] >= SIGNIFICANT:
            level.setdefault(pair, []).append(f"{s['metric']} p = {s['p_value']:.3g}")
        else:
            group = better if s["gained"] > s["lost"] else worse
            group.append(f"{pair} on {s['metric']} (gained {s['gained']}, lost {s['lost']}, "
                         f"p = {s['p_value']:.3g})")
    level_text = "; ".join(f"{pair} ({', '.join(v)})" for pair, v in level.items())
    return [f"sign tests, significantly better: {'; '.join(better) or 'none'}",
            f"sign tests, significantly worse: {'; '.join(worse) or 'none'}",
            f"sign tests, no significant difference: {level_text or 'none'}"]
