"""Pareto fronts of recall against speed, and the plot of them."""

from __future__ import annotations

from pathlib import Path


def pareto_front(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The (recall, qps) points that no other point beats on both, by recall ascending."""
    front, best_qps = [], float("-inf")
    for recall, qps in sorted(points, key=lambda p: (-p[0], -p[1])):
        if qps > best_qps:
            front.append((recall, qps))
            best_qps = qps
    return front[::-1]


def best_qps_at(rows: list[dict], family: str, qps_key: str, min_recall: float):
    """The highest QPS of a system among its points with recall >= min_recall (or None)."""
    qps = [r[qps_key] for r in rows if r["system"] == family and r["recall"] >= min_recall]
    return max(qps) if qps else None


def plot(rows: list[dict], path: Path, title: str) -> Path | None:
    """Recall@k vs QPS at batch 1 and batch 256, one Pareto front per system (PNG)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    families = list(dict.fromkeys(r["system"] for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.5))
    for ax, (key, label) in zip(axes, [("qps_b1", "batch 1"), ("qps_b256", "batch 256")]):
        for i, family in enumerate(families):
            pts = [(r["recall"], r[key]) for r in rows if r["system"] == family]
            colour = f"C{i % 10}"
            ax.scatter(*zip(*pts), s=12, alpha=0.35, color=colour)
            front = pareto_front(pts)
            ax.plot(*zip(*front), marker="o", ms=4, color=colour, label=family)
        ax.set_xlabel("recall@10 vs exact (FlatIndex)")
        ax.set_ylabel("queries per second")
        ax.set_yscale("log")
        ax.axvline(0.95, color="grey", lw=0.8, ls="--")
        ax.set_title(f"{title}, {label}")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
