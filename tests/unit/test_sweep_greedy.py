"""sweep.store.greedy: a point whose temperature-0 outputs differ from the baseline's is reported
with its figures, never called a winner, and refused by `sweep winner` (deploy.yml)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_sweep_report import BASE, GREEDY_OUTPUTS, _rep_point, write_greedy

from bench.records import write_json
from sweep import layout
from sweep.config.params import SweepInputError
from sweep.report.report import write_report
from sweep.results.results import load_points
from sweep.rollout import deploy
from sweep.store import greedy

# The first 4 answers diverge after 2 tokens, the rest are the baseline's: 12/16 identical.
DIVERGING = [[*o[:2], 99, 99, 99] if i < 4 else o for i, o in enumerate(GREEDY_OUTPUTS)]
# Every answer diverges at once: a broken drafter/verify path.
BROKEN = [[5, 5, 5, 5, 5] for _ in GREEDY_OUTPUTS]


def sweep_with(tmp: Path, spec_outputs: list[list[int]], spec_fast: bool = True) -> Path:
    s = tmp / "s"
    _rep_point(s, "baseline", [100.0, 101.0, 99.0], server=BASE)
    fast = [150.0, 151.0, 149.0] if spec_fast else [100.5, 99.5, 100.0]
    _rep_point(s, "spec", fast, greedy_outputs=spec_outputs)
    _rep_point(s, "other", [120.0, 121.0, 119.0], server={**BASE, "algorithm": "DDTREE"})
    layout.write_sweep(s, {"name": "s", "runs": []})
    return s


def verdict(sweep: Path, point: str, minimum: float = greedy.MATCH_MIN) -> greedy.Verdict:
    return greedy.verdicts(sweep, load_points(sweep), minimum)[point]


def test_identical_outputs_pass_and_the_baseline_is_the_reference(tmp_path: Path) -> None:
    s = sweep_with(tmp_path, GREEDY_OUTPUTS)
    v = verdict(s, "spec")
    assert (v.status, v.identical, v.compared, v.baseline) == ("pass", 16, 16, "baseline")
    assert v.mean_common_prefix == 5.0 and v.mean_prefix_share == 1.0
    assert verdict(s, "baseline").status == "reference"


def test_figures_of_a_partly_diverging_point(tmp_path: Path) -> None:
    s = sweep_with(tmp_path, DIVERGING)
    v = verdict(s, "spec")
    assert (v.identical, v.compared) == (12, 16)
    assert v.identical_share == pytest.approx(0.75)
    assert v.mean_common_prefix == pytest.approx((4 * 2 + 12 * 5) / 16)
    assert v.mean_prefix_share == pytest.approx((4 * 2 / 5 + 12) / 16)
    assert v.status == "pass"  # 0.75 is the default minimum: at it passes
    assert verdict(s, "spec", minimum=0.8).status == "fail"


def test_a_broken_point_is_reported_not_a_winner_and_refused_by_deploy(tmp_path: Path) -> None:
    s = sweep_with(tmp_path, BROKEN)
    out = write_report(s, with_plots=False)
    assert out["greedy"]["spec"]["status"] == "fail"
    assert out["greedy"]["spec"]["identical"] == 0
    [cell] = out["cells"]
    assert cell["winner"] == "other"  # the fastest point's outputs differ: it takes no part
    md = Path(out["report"]).read_text()
    assert "## Greedy-output check" in md
    assert "| spec | REFUSED | 0/16 (0%) | 0.0 tokens | 0% |" in md
    assert "Not winners, whatever their speed: spec (0/16 outputs identical" in md
    assert any("spec: greedy-output check REFUSED" in line for line in out["best"])
    with pytest.raises(SweepInputError) as e:
        deploy.choose({"sweep": str(s), "context": 512, "concurrency": 1, "point": "spec"})
    assert "0/16 outputs identical to baseline's" in str(e.value)
    assert "greedy_match_min 0.75" in str(e.value)
    # the cell's winner itself deploys
    chosen = deploy.choose({"sweep": str(s), "context": 512, "concurrency": 1})
    assert chosen["point"] == "other"


def test_a_normal_point_wins_and_deploys(tmp_path: Path) -> None:
    s = sweep_with(tmp_path, GREEDY_OUTPUTS)
    out = write_report(s, with_plots=False)
    assert out["cells"][0]["winner"] == "spec"
    assert deploy.choose({"sweep": str(s), "context": 512, "concurrency": 1})["point"] == "spec"


def test_unchecked_points_are_refused_unless_the_minimum_is_zero(tmp_path: Path) -> None:
    s = sweep_with(tmp_path, GREEDY_OUTPUTS)
    (s / "spec" / "records" / "greedy.json").unlink()
    assert verdict(s, "spec").status == "unchecked"
    with pytest.raises(SweepInputError, match=r"could not compare it.*spec has no greedy\.json"):
        deploy.choose({"sweep": str(s), "context": 512, "concurrency": 1, "point": "spec"})
    named = {"sweep": str(s), "context": 512, "concurrency": 1, "point": "spec"}
    assert deploy.choose({**named, "greedy_match_min": "0"})["point"] == "spec"


def test_another_prompt_set_cannot_be_compared(tmp_path: Path) -> None:
    s = sweep_with(tmp_path, GREEDY_OUTPUTS)
    write_greedy(s / "spec" / "records", GREEDY_OUTPUTS[:8])
    assert verdict(s, "spec").status == "unchecked"


def test_a_failed_greedy_request_matches_nothing(tmp_path: Path) -> None:
    s = sweep_with(tmp_path, GREEDY_OUTPUTS)
    path = s / "spec" / "records" / "greedy.json"
    rec = layout.read_json(path) or {}
    rec["answers"][0] = {k: v for k, v in rec["answers"][0].items() if k != "output_ids"}
    rec["answers"][0]["error"] = "HTTP 500"
    write_json(path, rec)
    v = verdict(s, "spec")
    assert (v.identical, v.compared) == (15, 16)


@pytest.mark.parametrize("bad", ["-0.1", "1.5", "most"])
def test_a_bad_minimum_is_named(tmp_path: Path, bad: str) -> None:
    s = sweep_with(tmp_path, GREEDY_OUTPUTS)
    with pytest.raises(SweepInputError, match=f"greedy_match_min={bad}"):
        deploy.choose({"sweep": str(s), "context": 512, "concurrency": 1, "greedy_match_min": bad})
    with pytest.raises(ValueError, match=f"greedy_match_min={bad}"):
        write_report(s, with_plots=False, greedy_match_min=bad)  # type: ignore[arg-type]
