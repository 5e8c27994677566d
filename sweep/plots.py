"""PNG plots of a sweep (matplotlib, headless): speed-up by budget and topk with one panel per
context length, and output throughput vs concurrency per point (one panel per context)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

SPEEDUP_PNG = "speedup_by_budget_topk.png"
THROUGHPUT_PNG = "throughput_vs_concurrency.png"


def _panels(n: int) -> tuple[Any, list[Any]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, n, figsize=(5.5 * n, 4.2), squeeze=False)
    return fig, list(axes[0])


def _save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)


def _series(
    rows: list[dict[str, Any]], context: Any, key: tuple[str, ...], x: str, y: str
) -> list[tuple[tuple[Any, ...], list[tuple[int, float]]]]:
    """One line per distinct `key` among the rows of one context, its points sorted by x."""
    lines: dict[tuple[Any, ...], list[tuple[int, float]]] = defaultdict(list)
    for r in rows:
        if r["context"] == context:
            lines[tuple(r[k] for k in key)].append((int(r[x]), float(r[y])))
    return [(k, sorted(pts)) for k, pts in sorted(lines.items())]


def _plot_per_context(
    rows: list[dict[str, Any]],
    path: Path,
    xlabel: str,
    ylabel: str,
    draw: Callable[[Any, Any], None],
) -> bool:
    """One panel per context length, `draw(ax, context)` filling each; False when no rows."""
    if not rows:
        return False
    contexts = sorted({r["context"] for r in rows})
    fig, axes = _panels(len(contexts))
    for ax, ctx in zip(axes, contexts, strict=True):
        draw(ax, ctx)
        ax.set_title(f"context {ctx}")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    _save(fig, path)
    return True


def speedup_plot(table: list[dict[str, Any]], path: Path) -> bool:
    rows = [r for r in table if r.get("speedup") is not None and r.get("algorithm") != "NONE"]

    def draw(ax: Any, ctx: Any) -> None:
        key = ("algorithm", "topk", "concurrency", "output_len", "category")
        for (alg, topk, conc, _out, cat), pts in _series(rows, ctx, key, "budget", "speedup"):
            ax.plot(
                [b for b, _ in pts],
                [s for _, s in pts],
                marker="o",
                label=f"{alg} topk={topk} c={conc} {cat}",
            )
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")

    return _plot_per_context(
        rows, path, "budget (draft tokens)", "speed-up vs baseline (output tok/s)", draw
    )


def throughput_plot(table: list[dict[str, Any]], path: Path) -> bool:
    rows = [r for r in table if r.get("output_throughput") is not None]

    def draw(ax: Any, ctx: Any) -> None:
        key = ("point", "output_len", "category")
        for (point, _out, cat), pts in _series(rows, ctx, key, "concurrency", "output_throughput"):
            ax.plot([c for c, _ in pts], [t for _, t in pts], marker="o", label=f"{point} {cat}")
        ax.set_xscale("log", base=2)

    return _plot_per_context(rows, path, "concurrency", "output tokens/s", draw)


def write_plots(sweep_dir: Path, table: list[dict[str, Any]]) -> list[str]:
    """Writes the plots that have data; returns their file names (relative to sweep_dir)."""
    out = []
    if speedup_plot(table, sweep_dir / SPEEDUP_PNG):
        out.append(SPEEDUP_PNG)
    if throughput_plot(table, sweep_dir / THROUGHPUT_PNG):
        out.append(THROUGHPUT_PNG)
    return out
