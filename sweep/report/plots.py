"""PNG plots of a sweep (matplotlib, headless), error bars = 95% intervals across repetitions
(sweep.results.stats; none with a single repetition):

- speedup_by_budget_topk.png: speed-up by budget and topk, one panel per context length;
- throughput_vs_concurrency.png: mean output throughput vs concurrency per point, one panel per
  context length (closed-loop cells);
- throughput_vs_request_rate.png: the same against the offered request rate (open-loop cells);
- heatmap_budget_topk.png: one file, one panel per context x concurrency (x output length x
  category when several were run), budget x topk coloured by the speed-up; panel rows are the
  contexts, and each speculative algorithm x window swept gets its own rows.

A speed-up here is mean throughput / the baseline's mean throughput for the same cell, its
interval by the delta method (sweep.results.stats.ratio); with a single repetition it equals the
table's ratio of medians.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

SPEEDUP_PNG = "speedup_by_budget_topk.png"
THROUGHPUT_PNG = "throughput_vs_concurrency.png"
RATE_PNG = "throughput_vs_request_rate.png"
HEATMAP_PNG = "heatmap_budget_topk.png"

Point = tuple[float, float, float, float]  # x, y, and the error bar below and above y


def _grid(nrows: int, ncols: int, width: float, height: float) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # colours a reader with a colour-vision deficiency tells apart (Tableau's colour-blind 10)
    plt.style.use("tableau-colorblind10")

    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)


def _save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)


def _order(v: Any) -> tuple[bool, Any]:
    """Sort key that puts None last instead of failing to compare it."""
    return (v is None, v)


def _key(t: tuple[Any, ...]) -> tuple[tuple[bool, Any], ...]:
    return tuple(_order(v) for v in t)


def _sorted(values: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(set(values), key=_key)


def _err(r: dict[str, Any], y: float, low: str, high: str) -> tuple[float, float]:
    lo, hi = r.get(low), r.get(high)
    return (0.0, 0.0) if lo is None or hi is None else (y - float(lo), float(hi) - y)


def _series(
    rows: list[dict[str, Any]], context: Any, key: tuple[str, ...], x: str, y: str, ci: str
) -> list[tuple[tuple[Any, ...], list[Point]]]:
    """One line per distinct `key` among the rows of one context, its points sorted by x, with
    error bars from the row's `{ci}_ci_low` and `{ci}_ci_high`."""
    lines: dict[tuple[Any, ...], list[Point]] = defaultdict(list)
    for r in rows:
        if r["context"] == context:
            v = float(r[y])
            lo, hi = _err(r, v, f"{ci}_ci_low", f"{ci}_ci_high")
            lines[tuple(r[k] for k in key)].append((float(r[x]), v, lo, hi))
    return [(k, sorted(lines[k])) for k in _sorted(lines)]


def _errorbar(ax: Any, pts: list[Point], label: str) -> None:
    ax.errorbar(
        [p[0] for p in pts],
        [p[1] for p in pts],
        yerr=[[p[2] for p in pts], [p[3] for p in pts]],
        marker="o",
        capsize=3,
        label=label,
    )


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
    fig, axes = _grid(1, len(contexts), 5.5, 4.2)
    for ax, ctx in zip(axes[0], contexts, strict=True):
        draw(ax, ctx)
        ax.set_title(f"context {ctx}")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    _save(fig, path)
    return True


def _speculative(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        r
        for r in table
        if r.get("speedup_mean_ratio") is not None
        and r.get("algorithm") != "NONE"
        and r.get("budget") is not None
        and r.get("topk") is not None
    ]


def speedup_plot(table: list[dict[str, Any]], path: Path) -> bool:
    rows = _speculative(table)

    def draw(ax: Any, ctx: Any) -> None:
        key = ("algorithm", "topk", "window", "concurrency", "output_len", "category")
        for (alg, topk, window, conc, _out, cat), pts in _series(
            rows, ctx, key, "budget", "speedup_mean_ratio", "speedup"
        ):
            _errorbar(ax, pts, f"{alg} topk={topk} w={window} c={conc} {cat}")
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")

    return _plot_per_context(
        rows, path, "budget (draft tokens)", "speed-up vs baseline (mean tok/s, 95% CI)", draw
    )


def _throughput_against(table: list[dict[str, Any]], path: Path, open_loop: bool) -> bool:
    """Mean output throughput per point against the load: the offered request rate of the
    open-loop cells, or the concurrency of the closed-loop ones."""
    rows = [
        r
        for r in table
        if r.get("output_throughput_mean") is not None
        and (r.get("request_rate") is not None) == open_loop
    ]
    x = "request_rate" if open_loop else "concurrency"

    def draw(ax: Any, ctx: Any) -> None:
        key = ("point", "output_len", "category")
        for (point, _out, cat), pts in _series(
            rows, ctx, key, x, "output_throughput_mean", "output_throughput"
        ):
            _errorbar(ax, pts, f"{point} {cat}")
        if not open_loop:
            ax.set_xscale("log", base=2)

    label = "offered load (requests/s)" if open_loop else "concurrency"
    return _plot_per_context(rows, path, label, "output tokens/s (mean, 95% CI)", draw)


def throughput_plot(table: list[dict[str, Any]], path: Path) -> bool:
    return _throughput_against(table, path, open_loop=False)


def rate_plot(table: list[dict[str, Any]], path: Path) -> bool:
    return _throughput_against(table, path, open_loop=True)


def _annotation(r: dict[str, Any]) -> str:
    lo, hi = r.get("speedup_ci_low"), r.get("speedup_ci_high")
    ci = f"n={r.get('repetitions')}" if lo is None or hi is None else f"[{lo:.2f}, {hi:.2f}]"
    return f"{r['speedup_mean_ratio']:.2f}\n{ci}"


def _heat_panel(
    ax: Any, rows: list[dict[str, Any]], budgets: list[Any], topks: list[Any], norm: Any
) -> Any:
    """budget (y) x topk (x) coloured by the speed-up; an untested pair stays blank. When
    several rows share a pair (server settings other than budget and topk), the best shows."""
    import numpy as np

    grid = np.full((len(budgets), len(topks)), np.nan)
    shown: dict[tuple[int, int], dict[str, Any]] = {}
    for r in rows:
        i, j = budgets.index(r["budget"]), topks.index(r["topk"])
        if (i, j) not in shown or r["speedup_mean_ratio"] > shown[i, j]["speedup_mean_ratio"]:
            shown[i, j] = r
            grid[i, j] = r["speedup_mean_ratio"]
    # diverging around 1.0 and colour-blind safe (ColorBrewer's RdBu): blue is faster
    image = ax.imshow(
        np.ma.masked_invalid(grid), cmap="RdBu", norm=norm, origin="lower", aspect="auto"
    )
    for (i, j), r in shown.items():
        # white on the map's dark ends, black in between
        dark = abs(float(norm(grid[i, j])) - 0.5) > 0.3
        colour = "white" if dark else "black"
        ax.text(j, i, _annotation(r), ha="center", va="center", fontsize=7, color=colour)
    ax.set_xticks(range(len(topks)), [str(t) for t in topks])
    ax.set_yticks(range(len(budgets)), [str(b) for b in budgets])
    ax.set_xlabel("topk")
    ax.set_ylabel("budget (draft tokens)")
    return image


def heatmap_plot(table: list[dict[str, Any]], path: Path) -> bool:
    """Speed-up over budget x topk, one panel per cell; False (nothing written) without a
    speculative row that has a speed-up, e.g. with no baseline."""
    rows = _speculative(table)
    if not rows:
        return False
    from matplotlib.colors import TwoSlopeNorm

    facets = _sorted((r["algorithm"], r["window"], r["context"]) for r in rows)
    columns = _sorted((r["concurrency"], r["output_len"], r["category"]) for r in rows)
    budgets = sorted({r["budget"] for r in rows})
    topks = sorted({r["topk"] for r in rows})
    values = [r["speedup_mean_ratio"] for r in rows]
    # no speed-up (1.0) is the middle colour: red slower than the baseline, green faster
    norm = TwoSlopeNorm(1.0, min(*values, 0.95), max(*values, 1.05))
    several = len({c[1:] for c in columns}) > 1
    fig, axes = _grid(len(facets), len(columns), 3.8, 3.2)
    for row_axes, (alg, window, ctx) in zip(axes, facets, strict=True):
        for ax, (conc, out, cat) in zip(row_axes, columns, strict=True):
            panel = [
                r
                for r in rows
                if (r["algorithm"], r["window"], r["context"]) == (alg, window, ctx)
                and (r["concurrency"], r["output_len"], r["category"]) == (conc, out, cat)
            ]
            image = _heat_panel(ax, panel, budgets, topks, norm)
            extra = f" out {out} {cat}" if several else ""
            ax.set_title(f"{alg} w={window} ctx {ctx} c {conc}{extra}", fontsize=8)
            fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="speed-up")
    _save(fig, path)
    return True


def write_plots(sweep_dir: Path, table: list[dict[str, Any]]) -> list[str]:
    """Writes the plots that have data; returns their file names (relative to sweep_dir)."""
    out = []
    for name, plot in (
        (SPEEDUP_PNG, speedup_plot),
        (THROUGHPUT_PNG, throughput_plot),
        (RATE_PNG, rate_plot),
        (HEATMAP_PNG, heatmap_plot),
    ):
        if plot(table, sweep_dir / name):
            out.append(name)
    return out
