"""Server phases, as an outside observer sees them."""

from __future__ import annotations

import enum


class Phase(enum.Enum):
    LOADING = "loading"  # port not bound yet
    WARMUP = "warmup"  # port bound, /health* and /ready 503
    READY = "ready"
    DRAINING = "draining"  # after SIGTERM/SIGINT: /health* 503, generation still served
