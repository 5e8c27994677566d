"""sweep.store.store through the planner: a point measured under the same identity is copied, not
measured again; anything that changes the identity, a stale entry or fresh=true measures again."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from test_sglang_server_filters import config
from test_sweep_fakes import archive, plan_input

from sweep import layout
from sweep.cli import plan
from sweep.config import points
from sweep.store import record, store

PROJECT = Path(__file__).resolve().parents[2]
DIALECTS = yaml.safe_load(points.DIALECTS_FILE.read_text())["sglang_server_dialects_builtin"]
CAPABILITIES: dict[str, Any] = {
    "dialect": DIALECTS["ddtree"],
    "block_size": 16,
    # the role's launch config as preflight publishes it (the filter tests' own example)
    "config": config(enable_metrics=True, speculative_algorithm="DDTREE", topk=4, block_size=16),
    "identity": {
        "hardware": "8x NVIDIA RTX PRO 6000 Blackwell Server Edition",
        "build": "0123abcd",
        "command": ["/opt/sglang/venv/bin/python3", "-m", "sglang.launch_server"],
        "model": {"path": "/srv/models/target", "fingerprint": "aa"},
        "drafter": {"path": "/srv/models/drafter", "fingerprint": "bb"},
        "env": "cc",
    },
}


def planned(tmp: Path, capabilities: dict[str, Any] = CAPABILITIES, **cli: Any) -> plan.Plan:
    inp = plan_input(tmp, **cli)
    inp["server"] = capabilities
    p = plan.make_plan(inp)
    plan.record_run(p)
    return p


def measure(tmp: Path, p: plan.Plan) -> None:
    """Every pending point of the plan, recorded complete as finish-point does."""
    out = p.to_dict()
    for point in out["points"]:
        if point["status"] in ("complete", "reused"):
            continue
        info = {"point": point, "host": "h1", "started": 0.0, "restarted": True}
        record.finish_point(p.sweep_dir, archive(tmp, 100.0, 3.0, f"{point['id']}.tgz"), info)


def test_identities_are_stable_and_differ_per_point(tmp_path: Path) -> None:
    a = planned(tmp_path, budget="8,12", sweep_name="a")
    b = plan.make_plan(
        {**plan_input(tmp_path, budget="8,12", sweep_name="a"), "server": CAPABILITIES}
    )
    digests = {pid: i["digest"] for pid, i in a.identities.items()}
    assert digests == {pid: i["digest"] for pid, i in b.identities.items()}
    assert len(set(digests.values())) == len(a.points) == 3
    launch = a.identities["ddtree-b12-k4-w2048"]["launch"]
    assert ["--speculative-ddtree-budget", "12"] in launch["flags"]
    assert launch["env"] == {"SGLANG_DDTREE_MAX_TOPK": "4"}  # the fork's env-only topk


def test_a_second_sweep_reuses_the_points_already_measured(tmp_path: Path) -> None:
    first = planned(tmp_path, budget="8", sweep_name="first")
    measure(tmp_path, first)
    before = {
        p.name: (p / layout.POINT_FILE).read_text() for p in layout.point_dirs(first.sweep_dir)
    }

    second = planned(tmp_path, budget="8,12", sweep_name="second")
    statuses = {p["id"]: p["status"] for p in second.to_dict()["points"]}
    assert statuses == {
        "baseline": "reused",
        "ddtree-b8-k4-w2048": "reused",
        "ddtree-b12-k4-w2048": "pending",
    }
    assert [p.point_id for p in second.pending] == ["ddtree-b12-k4-w2048"]
    assert "2 reused" in second.summary()
    copied = layout.read_json(second.sweep_dir / "ddtree-b8-k4-w2048" / layout.POINT_FILE) or {}
    assert copied["reused_from"]["sweep"] == "first"
    assert copied["reused_from"]["point"] == "ddtree-b8-k4-w2048"
    assert copied["sweep"] == "second" and copied["status"] == "complete"
    assert layout.point_status(second.sweep_dir, "baseline") == "complete"
    # The earlier sweep is untouched.
    after = {
        p.name: (p / layout.POINT_FILE).read_text() for p in layout.point_dirs(first.sweep_dir)
    }
    assert after == before

    # A third sweep over the same points measures nothing.
    measure(tmp_path, second)
    third = planned(tmp_path, budget="12,8", sweep_name="third")
    assert third.pending == []


def test_fresh_measures_again(tmp_path: Path) -> None:
    measure(tmp_path, first := planned(tmp_path, budget="8", sweep_name="first"))
    assert first.reuse == {}
    again = planned(tmp_path, budget="8", sweep_name="again", fresh="true")
    assert again.reuse == {} and len(again.pending) == 2


def test_anything_in_the_identity_measures_again(tmp_path: Path) -> None:
    measure(tmp_path, planned(tmp_path, budget="8", sweep_name="first"))
    other_gpu = copy.deepcopy(CAPABILITIES)
    other_gpu["identity"]["hardware"] = "1x NVIDIA H200"
    assert planned(tmp_path, other_gpu, budget="8", sweep_name="gpu").reuse == {}
    other_model = copy.deepcopy(CAPABILITIES)
    other_model["identity"]["model"]["fingerprint"] = "changed"
    assert planned(tmp_path, other_model, budget="8", sweep_name="model").reuse == {}
    other_flags = copy.deepcopy(CAPABILITIES)
    other_flags["config"]["mem_fraction_static"] = 0.8
    assert planned(tmp_path, other_flags, budget="8", sweep_name="flags").reuse == {}
    other_bench = planned(tmp_path, budget="8", sweep_name="bench", output_len="32")
    assert other_bench.reuse == {}
    # No identity published (an older preflight): nothing is reused, nothing breaks.
    bare = {k: v for k, v in CAPABILITIES.items() if k != "identity"}
    assert planned(tmp_path, bare, budget="8", sweep_name="bare").reuse == {}


def test_stale_or_incomplete_entries_are_never_reused(tmp_path: Path) -> None:
    first = planned(tmp_path, budget="8", sweep_name="first")
    measure(tmp_path, first)
    point_json = first.sweep_dir / "ddtree-b8-k4-w2048" / layout.POINT_FILE
    meta = json.loads(point_json.read_text())
    meta["identity"]["digest"] = "edited"
    point_json.write_text(json.dumps(meta))
    (first.sweep_dir / "baseline" / layout.POINT_FILE).unlink()
    second = planned(tmp_path, budget="8", sweep_name="second")
    assert second.reuse == {}
    assert len(second.pending) == 2
    # The entries are still listed in the store; the directories they name decide.
    key = first.identities["baseline"]["digest"]
    assert store.lookup(tmp_path, key) is None
    assert json.loads((tmp_path / store.STORE / f"{key}.json").read_text())


def test_hosts_registering_at_once_lose_no_entry(tmp_path: Path) -> None:
    """Parallel hosts finish their points at once: every `python -m sweep finish-point` reads,
    extends and rewrites the same index; the store's lock keeps each one's entry."""
    workers, each = 4, 40
    code = (
        "import sys; from pathlib import Path; from sweep.store import store\n"
        "root, w = Path(sys.argv[1]), sys.argv[2]\n"
        f"for i in range({each}):\n"
        "    store.register(root, 'k', root / 'sweep' / f'p{w}-{i}')\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path), str(w)], cwd=PROJECT)
        for w in range(workers)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0] * workers
    entries = json.loads((tmp_path / store.STORE / "k.json").read_text())
    assert sorted(e["dir"] for e in entries) == sorted(
        f"sweep/p{w}-{i}" for w in range(workers) for i in range(each)
    )
    # registering again is idempotent: one entry per directory
    store.register(tmp_path, "k", tmp_path / "sweep" / "p0-0")
    assert len(json.loads((tmp_path / store.STORE / "k.json").read_text())) == workers * each
