"""Progress: a live status line on a terminal, plain log lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO


def fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(seconds)
    return f"{s // 3600}h{s // 60 % 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


class Progress:
    """Tracks cells and requests; the ETA assumes remaining cells cost what finished ones did,
    weighted by their request counts."""

    def __init__(
        self,
        total_cells: int,
        total_requests: int,
        stream: TextIO | None = None,
        live: bool | None = None,
    ) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.total_cells = total_cells
        self.total_requests = max(total_requests, 1)
        self.cells_done = 0
        self.requests_done = 0  # finished cells' requests, plus the current cell's
        self.cell_requests = 0
        self.cell_done = 0
        self.in_flight = 0
        self.label = ""
        self.t0 = time.monotonic()
        self.busy_s = 0.0  # time spent in cells that ran (skipped cells cost nothing)
        self.busy_requests = 0
        self._cell_t0 = 0.0
        self._last_draw = 0.0

    def log(self, msg: str) -> None:
        if self.live:
            self.stream.write("\r\x1b[2K")
        self.stream.write(f"[{time.strftime('%H:%M:%S')}] {msg}\n")
        self.stream.flush()

    def extend(self, cells: int, requests: int) -> None:
        """Cells added to the run after it started (more repetitions, capacity trials)."""
        self.total_cells += cells
        self.total_requests += requests

    def skip(self, label: str, requests: int) -> None:
        self.cells_done += 1
        self.requests_done += requests
        self.log(f"cell {self.cells_done}/{self.total_cells} {label}: already recorded, skipped")

    def start_cell(self, label: str, requests: int) -> None:
        self.label, self.cell_requests, self.cell_done, self.in_flight = label, requests, 0, 0
        self._cell_t0 = time.monotonic()
        self.log(f"cell {self.cells_done + 1}/{self.total_cells} {label}: {requests} requests")

    def update(self, done: int, in_flight: int) -> None:
        self.cell_done, self.in_flight = done, in_flight
        if not self.live:
            return
        now = time.monotonic()
        if now - self._last_draw < 0.2 and done < self.cell_requests:
            return
        self._last_draw = now
        self.stream.write(
            f"\r\x1b[2Kcells {self.cells_done}/{self.total_cells} | {self.label} "
            f"requests {done}/{self.cell_requests} in flight {in_flight} | "
            f"ETA {fmt_duration(self.eta())}"
        )
        self.stream.flush()

    def end_cell(self, summary_line: str) -> None:
        self.busy_s += time.monotonic() - self._cell_t0
        self.busy_requests += self.cell_requests
        self.requests_done += self.cell_requests
        self.cells_done += 1
        self.log(f"cell {self.cells_done}/{self.total_cells} done: {summary_line}")

    def eta(self) -> float | None:
        elapsed_cell = time.monotonic() - self._cell_t0 if self._cell_t0 else 0.0
        done = self.busy_requests + self.cell_done
        if done == 0:
            return None
        per_request = (self.busy_s + elapsed_cell) / done
        return per_request * (self.total_requests - self.requests_done - self.cell_done)

    def finish(self) -> None:
        self.log(f"finished {self.cells_done} cells in {fmt_duration(time.monotonic() - self.t0)}")
