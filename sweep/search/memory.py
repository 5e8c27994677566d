"""What a start that ran says about the points not started yet: how close it came to the edge.

SGLang logs the memory free before its CUDA graph capture and after it, and capture is where a
speculative configuration runs out (sweep/store/failures.py: the out-of-memory failure). The share a
run's captures used, 1 - free after / free before (memory_share, from the journal each point
keeps), rises with the budget, topk, window and largest batch as the failing memory does, and
reaches 1 where a start fails. The model search fits it over the runs so far and does not start
a point the fit puts over the limit (over_limit): on generated surfaces with an edge
(benchmarks/search_surfaces.py) that took its failed starts from a median of 5 a search to 2,
with the same answers. The fit assumes what the rule of domination assumes, memory that never
falls as an axis rises, and more: that log(share) is close to linear in log(1 + each axis); a
point it puts over is named in the report ("not started"), and `search=grid` starts it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection
from pathlib import Path

from sweep.search.grid_axes import Grid

# a point whose fitted share is this many of the fit's residual sds over 1 is not started
OVER_SDS = 2.0

# SGLang's capture lines: 0.5.23 "Capture target verify CUDA graph begin. backend=..., avail
# mem=X GB" / "... end. bs=[...], elapsed=..., mem usage=.. GB, avail mem=Y GB."; earlier
# releases and the emulator "Capture cuda graph begin. ... avail mem=X GB" / "Capture cuda graph
# end. Time elapsed: ... avail mem=Y GB."
_CAPTURE = re.compile(r"Capture [^\n]*?graph (begin|end)\.[^\n]*?avail mem=([0-9.]+) GB", re.I)


def memory_share(journal: str) -> float | None:
    """The share of the memory free before its first CUDA graph capture that a server run's
    captures used (1 - free after the last / free before the first), from its journal; None
    when the journal shows no complete capture (CPU, graphs disabled, a failed start)."""
    begin = end = None
    for m in _CAPTURE.finditer(journal):
        if m.group(1).lower() == "begin" and begin is None:
            begin = float(m.group(2))
        elif m.group(1).lower() == "end":
            end = float(m.group(2))
    if begin is None or end is None or begin <= 0:
        return None
    return max(1.0 - end / begin, 0.0)


READY = "The server is fired up and ready to roll!"  # SGLang's; every capture comes before it


def memory_share_of(journal: Path) -> float | None:
    """memory_share of a journal file, read up to the server's ready line only: the bench's
    requests log on after it, and the planner reads every run's journal at each host's ask."""
    if not journal.is_file():
        return None
    head = []
    with journal.open(errors="replace") as f:
        for line in f:
            if READY in line:
                break
            if "graph " in line:
                head.append(line)
    return memory_share("".join(head))


def over_limit(
    grid: Grid,
    ran: Collection[str],
    memory: Callable[[str], float | None],
    excluded: Collection[str],
) -> dict[str, float]:
    """The points of `grid` not run nor excluded that a fit of the shares the runs reported
    (`memory(point id)`, None: unknown) puts over the limit, with the fitted share:
    log(share) = b0 + sum b_i log(1 + axis value), every b_i >= 0 (memory never shrinks as an
    axis rises), least squares over the runs; over: the fit above 1 by more than OVER_SDS of
    its residual sds. Nothing before the runs outnumber the fit's terms by two, nor on an axis
    that is not a number."""
    import numpy as np  # controller only, as the model search's Gaussian process
    from scipy.optimize import nnls

    known = {pid: memory(pid) for pid in ran}
    shares = {pid: v for pid, v in known.items() if v is not None and v > 0}
    if len(shares) < len(grid.axes) + 2:
        return {}
    try:
        feats = {
            pid: [
                *(math.log1p(float(ax[i])) for i, ax in zip(pos, grid.axes, strict=True)),
                1.0,
                -1.0,  # the intercept, either sign, as two non-negative terms
            ]
            for pid, pos in grid.index.items()
        }
    except (TypeError, ValueError):
        return {}
    ids = sorted(shares)
    a = np.array([feats[pid] for pid in ids])
    beta, resid = nnls(a, np.array([math.log(shares[pid]) for pid in ids]))
    floor = OVER_SDS * resid / math.sqrt(len(ids))
    fit = {pid: float(np.dot(f, beta)) for pid, f in feats.items()}
    return {
        pid: math.exp(v)
        for pid, v in sorted(fit.items())
        if pid not in ran and pid not in excluded and v > floor
    }
