"""search_rounds.png: a model search's path on the grid. One panel per algorithm x window, budget
against topk: each point the search ran is marked with the round it ran in, a warm start (measured
before, under the same identity) with "w", a point that failed or that a failure ruled out with a
cross, a point it never ran with a grey dot; its answer is outlined. From search.json (sweep/search/
search_rounds.py search_info: `round_points`, `warm`, `failed`, `best`) and sweep.json's
`ruled_out`."""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path
from typing import Any

from sweep.report.plots import _grid, _save

SEARCH_PNG = "search_rounds.png"
_ID = re.compile(r"^(?P<alg>[a-z0-9]+)-b(?P<b>\d+)-k(?P<k>\d+)-w(?P<w>\d+)$")


def search_plot(search: dict[str, Any], ruled: Collection[str], path: Path) -> bool:
    """Draws it when the search recorded its rounds' points; False (nothing written) otherwise."""
    rounds = search.get("round_points")
    if search.get("search") != "model" or not rounds:
        return False
    coords = {
        pid: (m["alg"], int(m["w"]), int(m["b"]), int(m["k"]))
        for pid in search.get("points") or []
        if (m := _ID.match(pid))
    }
    if not coords:
        return False
    round_of = {pid: i for i, ids in enumerate(rounds) for pid in ids}
    warm = set(search.get("warm") or [])
    out = {str(f).rpartition("@L")[0] for f in search.get("failed") or []} | set(ruled)
    panels = sorted({(alg, w) for alg, w, _, _ in coords.values()})
    budgets = sorted({b for _, _, b, _ in coords.values()})
    topks = sorted({k for _, _, _, k in coords.values()})
    fig, axes = _grid(1, len(panels), 1.2 + 0.75 * len(topks), 1.4 + 0.5 * len(budgets))
    for ax, panel in zip(axes[0], panels, strict=True):
        for pid, (alg, w, b, k) in coords.items():
            if (alg, w) != panel:
                continue
            x, y = topks.index(k), budgets.index(b)
            if pid in out:
                ax.scatter([x], [y], marker="x", s=90, color="#C85200")
            elif pid in round_of or pid in warm:
                label = "w" if pid in warm else str(round_of[pid])
                ax.scatter([x], [y], s=260, color="#5F9ED1", zorder=2)
                ax.text(x, y, label, ha="center", va="center", fontsize=8, zorder=3)
            else:
                ax.scatter([x], [y], s=20, color="#ABABAB")
            if pid == search.get("best"):
                ax.scatter([x], [y], s=420, facecolors="none", edgecolors="black", linewidths=1.6)
        ax.set_title(f"{panel[0].upper()} w={panel[1]}", fontsize=9)
        ax.set_xticks(range(len(topks)), [str(t) for t in topks])
        ax.set_yticks(range(len(budgets)), [str(b) for b in budgets])
        ax.set_xlim(-0.6, len(topks) - 0.4)
        ax.set_ylim(-0.6, len(budgets) - 0.4)
        ax.set_xlabel("topk")
        ax.set_ylabel("budget (draft tokens)")
    fig.suptitle(
        "model search: the round each point ran in (w: warm start; x: failed or ruled out; "
        "grey: never run; outlined: the answer)",
        fontsize=8,
    )
    _save(fig, path)
    return True
