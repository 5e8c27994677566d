"""The settings of benchmarks/readiness_soak.py, shared by its controller and host sides (the
container and image, the unit and its URL, the files on the host, the server's fixed
configuration), and the restart plans: one RestartPlan a restart, drawn from the seed."""

from __future__ import annotations

import dataclasses
import os
import random
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONTAINER = "sglang-soak"
IMAGE = os.environ.get("TESTHOST_IMAGE", "localhost/sglang-testhost:bookworm")
UNIT = "sglang.service"
URL = "http://127.0.0.1:30000"
ENV_FILE = "/etc/sglang/sglang.env"
DROPIN = Path("/etc/systemd/system/sglang.service.d/soak.conf")
HOST_DIR = Path("/opt/soak")
HOST_SCRIPT = HOST_DIR / "readiness_soak.py"
# the script's modules: beside it on the host as here (it imports them all)
HOST_SCRIPT_MODULES = ("soak_plan.py", "soak_host.py", "soak_judge.py", "soak_controller.py")
HOST_MODULE = HOST_DIR / "sglang_ready.py"
HOST_LIB = HOST_DIR / "lib"
HOST_RUN = HOST_DIR / "run"
TRAFFIC_STATS = HOST_DIR / "traffic.json"
TRAFFIC_UNIT = "soak-traffic"
READY_LINE = "The server is fired up and ready to roll!"
# Fixed server configuration (benchmarks/soak_setup.yml); only the topk alternates.
ALGORITHM = "DDTREE"
BUDGET = 32
WINDOW = 1024
INITIAL_TOPK = 6
TOPKS = (4, 8)
TOPK_ENV = "SGLANG_DDTREE_MAX_TOPK"  # the DDTree fork reads topk from its environment only


@dataclasses.dataclass(frozen=True)
class RestartPlan:
    seq: int
    load_s: float
    warmup_s: float
    drain_s: float  # written now; the process started by THIS restart drains this long
    topk: int
    module_timeout: int
    naive_interval: float

    def expect(self) -> dict[str, Any]:
        return {
            "speculative_algorithm": ALGORITHM,
            "speculative_ddtree_budget": BUDGET,
            "speculative_draft_window_size": WINDOW,
        }

    def expect_env(self) -> dict[str, str]:
        return {TOPK_ENV: str(self.topk)}


def make_plans(n: int, seed: int, module_timeout: int, naive_interval: float) -> list[RestartPlan]:
    rng = random.Random(seed)
    return [
        RestartPlan(
            seq=i,
            load_s=round(rng.uniform(1.0, 5.0), 2),
            warmup_s=round(rng.uniform(0.5, 2.0), 2),
            drain_s=round(rng.uniform(0.5, 4.0), 2),
            topk=TOPKS[i % len(TOPKS)],
            module_timeout=module_timeout,
            naive_interval=naive_interval,
        )
        for i in range(n)
    ]
