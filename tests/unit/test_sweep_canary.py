"""sweep.rollout.canary: the canary's verification bench against the sweep's figures for the
deployed point on the same hardware class: a shortfall beyond the tolerance, significant or not,
or a failed greedy-output check, fails it; a class the sweep never measured the point on is
refused unless allowed."""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

import pytest
from test_sweep_report import BASE, GREEDY_OUTPUTS, _rep_point

from sweep import layout
from sweep.config.params import SweepInputError
from sweep.rollout import canary, deploy

CELL = {"context": 512, "concurrency": 1, "output_len": 64, "category": "random"}
THROUGHPUT = {"objective": "throughput"}


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    s = tmp_path / "s"
    _rep_point(s, "baseline", [100.0, 101.0, 99.0], server=BASE)
    _rep_point(s, "spec", [150.0, 151.0, 149.0])
    layout.write_sweep(s, {"name": "s", "runs": [], "bench": {"contexts": [512], "repetitions": 3}})
    return s


def verification(
    tmp: Path, throughputs: list[float], outputs: list[list[int]] | None = None
) -> Path:
    """What bench.archive sends back from the canary: records/ of the cell, greedy.json."""
    _rep_point(tmp / "v", "canary", throughputs, greedy_outputs=outputs)
    path = tmp / "canary.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.add(tmp / "v" / "canary" / "records", arcname="records")
    return path


def check(sweep: Path, archive: Path, **kw: Any) -> dict[str, Any]:
    return canary.check(sweep, archive, "spec", CELL, "", THROUGHPUT, **kw)


def test_a_canary_that_reproduces_the_sweep_passes(sweep: Path, tmp_path: Path) -> None:
    out = check(sweep, verification(tmp_path, [147.0, 149.0]))
    assert out["ok"] and not out["shortfall"] and out["line"].startswith("canary OK: ")
    assert out["sweep"]["n"] == 3 and out["canary"]["n"] == 2
    assert out["ratio"] == pytest.approx(148.0 / 150.0)
    assert out["greedy"]["status"] == "pass"


def test_a_significant_shortfall_beyond_the_tolerance_fails(sweep: Path, tmp_path: Path) -> None:
    out = check(sweep, verification(tmp_path, [120.0, 121.0]))
    assert not out["ok"] and out["shortfall"]
    assert out["line"].startswith("canary FAILED: a significant shortfall beyond 5%")
    # within the tolerance it is no shortfall, however consistent
    assert check(sweep, verification(tmp_path, [144.0, 144.5]))["ok"]
    # a looser tolerance lets the slow one pass
    assert check(sweep, verification(tmp_path, [120.0, 121.0]), tolerance=0.25)["ok"]


def test_a_slowdown_too_noisy_to_be_significant_fails(sweep: Path, tmp_path: Path) -> None:
    # two sweep runs 20 % apart: Welch's test has ~1 degree of freedom and a x4 slowdown gets p ~0.1
    noisy = tmp_path / "noisy"
    _rep_point(noisy, "spec", [150.0, 120.0])
    out = canary.check(noisy, verification(tmp_path, [34.0, 33.0]), "spec", CELL, "", THROUGHPUT)
    assert out["p_value"] > 0.05 and not out["significant"]
    assert not out["ok"] and out["shortfall"] and out["ratio"] < 0.3
    assert out["line"].startswith("canary FAILED: a shortfall beyond 5%, not significant (")
    # the same canary against a consistent sweep: significant
    significant = check(sweep, verification(tmp_path, [34.0, 33.0]))
    assert significant["significant"] and "a significant shortfall" in significant["line"]


def test_outputs_that_differ_from_the_baseline_fail(sweep: Path, tmp_path: Path) -> None:
    broken = [[5, 5, 5, 5, 5] for _ in GREEDY_OUTPUTS]
    out = check(sweep, verification(tmp_path, [150.0, 151.0], broken))
    assert not out["ok"] and "greedy-output check: 0/16 outputs identical" in out["line"]


def test_a_class_the_sweep_never_measured_the_point_on(sweep: Path, tmp_path: Path) -> None:
    archive = verification(tmp_path, [150.0, 151.0])
    out = canary.check(sweep, archive, "spec", CELL, "8x H200", THROUGHPUT)
    assert not out["ok"] and out["unmeasured"] and out["line"].startswith("UNMEASURED: ")
    allowed = canary.check(sweep, archive, "spec", CELL, "8x H200", THROUGHPUT, unmeasured_ok=True)
    assert allowed["ok"] and "deploy_unmeasured=true" in allowed["line"]


def test_the_choice_carries_the_verification_bench(sweep: Path) -> None:
    chosen = deploy.choose(
        {"sweep": str(sweep), "context": 512, "concurrency": 1, "deploy_canary_repetitions": 2}
    )
    assert chosen["canary_bench"]["repetitions"] == 2
    assert chosen["canary_bench"]["categories"] == ["random"]
    assert chosen["tolerance"] == 0.05 and chosen["greedy_match_min"] == 0.75
    for bad in ({"deploy_canary_repetitions": 0}, {"deploy_tolerance": 1.5}):
        with pytest.raises(SweepInputError, match=next(iter(bad))):
            deploy.choose({"sweep": str(sweep), "context": 512, "concurrency": 1, **bad})
