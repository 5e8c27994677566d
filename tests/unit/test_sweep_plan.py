"""sweep.cli.plan: grid expansion, validation, ordering, ids, host split, resume."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_sweep_fakes import INVENTORY, plan_input

from sweep.cli import inputs, plan
from sweep.cli.plan import make_plan
from sweep.config.params import SweepInputError


def ids(p: plan.Plan) -> list[str]:
    return [x.point_id for x in p.points]


def test_one_budget_gives_that_point_and_the_baseline(tmp_path: Path) -> None:
    p = make_plan(plan_input(tmp_path, budget="8"))
    assert ids(p) == ["baseline", "ddtree-b8-k4-w2048"]
    assert p.points[0].algorithm == "NONE"


def test_baseline_can_be_turned_off(tmp_path: Path) -> None:
    p = make_plan(plan_input(tmp_path, budget=8, baseline="false"))
    assert ids(p) == ["ddtree-b8-k4-w2048"]


def test_lists_give_the_cartesian_product_in_restart_friendly_order(tmp_path: Path) -> None:
    p = make_plan(plan_input(tmp_path, budget=[16, 4, 8], topk="4,2"))
    assert ids(p) == [
        "baseline",
        "ddtree-b4-k2-w2048",
        "ddtree-b8-k2-w2048",
        "ddtree-b16-k2-w2048",
        "ddtree-b4-k4-w2048",
        "ddtree-b8-k4-w2048",
        "ddtree-b16-k4-w2048",
    ]


def test_json_list_string_and_k_suffix_are_accepted(tmp_path: Path) -> None:
    p = make_plan(plan_input(tmp_path, budget="[4, 8]", contexts="1k,2k", baseline=False))
    assert ids(p) == ["ddtree-b4-k4-w2048", "ddtree-b8-k4-w2048"]
    assert p.bench["contexts"] == [1024, 2048]


@pytest.mark.parametrize(
    ("cli", "named"),
    [
        ({"budget": "abc"}, "budget=abc"),
        ({"budget": "[8,16"}, "budget=[8,16: a bracket is not closed"),
        ({"topk": "4,8]"}, "topk=4,8]: a bracket is not closed"),
        ({"categories": "[code,prose"}, "categories=[code,prose: a bracket"),
        ({"load": "capacity", "request_rate": "[1,2"}, "request_rate=[1,2: a bracket"),
        ({"topk": "0"}, "topk=0"),
        ({"window": "-5"}, "window=-5"),
        ({"budget": True}, "budget=True"),
        ({"algorithm": "MEDUSA"}, "algorithm=MEDUSA"),
        ({"baseline": "maybe"}, "baseline=maybe"),
        ({"contexts": "512,x"}, "contexts=x"),
        ({"categories": "poetry"}, "categories=poetry"),
        ({"topk": 32}, "topk=32"),
        ({"sweep_name": "../up"}, "sweep_name=../up"),
        ({"points": [{"budget": 4, "color": "red"}]}, "color"),
        ({"repetitions": "0"}, "repetitions=0"),
        ({"search": "halving"}, "search=halving was retired"),
        ({"search": "model", "halving_eta": 1}, "halving_eta=1: a setting of search=halving"),
        ({"search": "model", "max_restarts": "none"}, "max_restarts=none"),
        ({"search": "random"}, "search=random"),
        ({"fresh": "perhaps"}, "fresh=perhaps"),
        ({"objective": "fastest"}, "fastest"),
        ({"objective": "goodput", "slo_ttft_ms": 500}, "slo_tpot_ms"),
        ({"objective": "goodput", "slo_ttft_ms": "soon", "slo_tpot_ms": 5}, "slo_ttft_ms=soon"),
    ],
)
def test_bad_values_are_named(tmp_path: Path, cli: dict, named: str) -> None:
    with pytest.raises(SweepInputError, match=named.replace("[", r"\[").replace(".", r"\.")):
        make_plan(plan_input(tmp_path, **cli))


def test_dflash_budget_must_equal_block_size(tmp_path: Path) -> None:
    inp = plan_input(tmp_path, budget=8, algorithm="DFLASH")
    with pytest.raises(SweepInputError, match="block size 16"):
        make_plan(inp)
    ok = make_plan(plan_input(tmp_path, budget=16, topk=1, algorithm="DFLASH"))
    assert ids(ok) == ["baseline", "dflash-b16-k1-w2048"]


def test_explicit_points_with_env_get_distinct_ids(tmp_path: Path) -> None:
    pts = [{"budget": 4}, {"budget": 4, "env": {"SGLANG_EMU_FAULT": "crash_loading"}}]
    p = make_plan(plan_input(tmp_path, points=pts, baseline=False))
    assert len(p.points) == 2
    crash = next(x for x in p.points if x.env)
    assert crash.point_id.startswith("ddtree-b4-k4-w2048-env")
    assert crash.server()["env"] == {"SGLANG_EMU_FAULT": "crash_loading"}


def test_duplicates_collapse(tmp_path: Path) -> None:
    p = make_plan(plan_input(tmp_path, budget="8,8", points=[{"budget": 8}]))
    assert ids(p) == ["baseline", "ddtree-b8-k4-w2048"]


def test_inventory_grid_is_used_when_nothing_is_given(tmp_path: Path) -> None:
    inp = plan_input(tmp_path)
    inp["inventory"] = {**INVENTORY, "grid": {"budget": [4, 8], "topk": [2]}}
    assert ids(make_plan(inp)) == ["baseline", "ddtree-b4-k2-w2048", "ddtree-b8-k2-w2048"]
    inp["inventory"] = dict(INVENTORY)
    assert ids(make_plan(inp)) == ["baseline", "ddtree-b16-k4-w2048"]


def test_ids_are_deterministic_and_default_name_follows_the_plan(tmp_path: Path) -> None:
    a = make_plan(plan_input(tmp_path, budget="4,8"))
    b = make_plan(plan_input(tmp_path, budget=[8, 4]))
    c = make_plan(plan_input(tmp_path, budget="4,16"))
    assert a.name == b.name and a.name.startswith("sweep-")
    assert c.name != a.name


def test_the_queue_keeps_run_order_and_needs_a_host(tmp_path: Path) -> None:
    out = make_plan(plan_input(tmp_path, budget="4,8,16", hosts=["a", "b"])).to_dict()
    assert [p["id"] for p in out["queue"]] == [p["id"] for p in out["points"]]
    assert out["hosts"] == ["a", "b"]
    with pytest.raises(SweepInputError, match="no hosts"):
        make_plan({**plan_input(tmp_path, budget="4"), "hosts": []})


def test_resume_skips_complete_and_retries_failed(tmp_path: Path) -> None:
    inp = plan_input(tmp_path, budget="4,8", sweep_name="s", hosts=["a", "b"])
    sweep = tmp_path / "s"
    (sweep / "baseline").mkdir(parents=True)
    (sweep / "baseline" / "point.json").write_text('{"status": "complete"}')
    (sweep / "ddtree-b4-k4-w2048").mkdir()
    (sweep / "ddtree-b4-k4-w2048" / "failure.json").write_text('{"status": "failed"}')
    p = make_plan(inp)
    assert p.status == {
        "baseline": "complete",
        "ddtree-b4-k4-w2048": "failed",
        "ddtree-b8-k4-w2048": "pending",
    }
    planned = [x["id"] for x in p.to_dict()["queue"]]
    assert planned == ["ddtree-b4-k4-w2048", "ddtree-b8-k4-w2048"]
    assert "1 retried" in p.summary()


def test_a_rerun_with_other_bench_parameters_is_refused(tmp_path: Path) -> None:
    first = make_plan(plan_input(tmp_path, budget=8, sweep_name="s"))
    plan.record_run(first)
    with pytest.raises(SweepInputError, match="another sweep_name"):
        make_plan(plan_input(tmp_path, budget=8, sweep_name="s", contexts="1024"))
    again = make_plan(plan_input(tmp_path, budget="8,16", sweep_name="s"))
    plan.record_run(again)
    sweep = plan.layout.read_sweep(tmp_path / "s")
    assert sweep is not None and len(sweep["runs"]) == 2
    assert [x["id"] for x in sweep["points"]] == [
        "baseline",
        "ddtree-b8-k4-w2048",
        "ddtree-b16-k4-w2048",
    ]


def test_the_planner_fills_what_the_host_leaves_unset_from_the_roles_defaults(
    tmp_path: Path,
) -> None:
    server = inputs.role_defaults("sglang_server")
    bench = inputs.role_defaults("sglang_bench")
    s = inputs.host_settings({})
    assert (s["budget"], s["topk"], s["window"]) == (
        server["sglang_server_budget"],
        server["sglang_server_topk"],
        server["sglang_server_window"],
    )
    assert s["algorithm"] == server["sglang_server_speculative_algorithm"]
    assert s["bench"]["contexts"] == bench["sglang_bench_contexts"]
    assert s["baseline"] is inputs.SWEEP_DEFAULTS["sglang_sweep_baseline"]


def test_sweep_defaults_beat_the_servers_own_and_the_host_beats_the_roles() -> None:
    s = inputs.host_settings(
        {
            "sglang_server_budget": 12,
            "sglang_server_topk": 3,
            "sglang_sweep_defaults": {"topk": 5},
            "sglang_bench_contexts": [99],
        }
    )
    assert (s["budget"], s["topk"]) == (12, 5)
    assert s["bench"]["contexts"] == [99]


def test_a_plan_from_host_variables_and_the_cli_results_dir(tmp_path: Path) -> None:
    p = make_plan(
        {
            "cli": {"budget": "8", "results_dir": str(tmp_path), "contexts": "", "topk": ""},
            "host": {
                "sglang_server_speculative_algorithm": "DDTREE",
                "sglang_server_dialect": "ddtree",
                "sglang_bench_contexts": [512],
                "sglang_bench_concurrency": [1],
                "sglang_bench_categories": ["random"],
            },
            "hosts": ["h1"],
        }
    )
    assert ids(p) == ["baseline", "ddtree-b8-k1-w2048"]
    assert p.sweep_dir.parent == tmp_path.resolve()
    assert p.bench["contexts"] == [512]


def test_a_rerun_clears_the_previous_runs_stop_marker(tmp_path: Path) -> None:
    first = make_plan(plan_input(tmp_path, budget=8, sweep_name="s"))
    plan.record_run(first)
    stop = tmp_path / "s" / plan.layout.STOP
    stop.write_text("ddtree-b8-k4-w2048 failed on h1\n")
    plan.record_run(make_plan(plan_input(tmp_path, budget=8, sweep_name="s")))
    assert not stop.exists()


def test_points_are_checked_against_what_the_hosts_build_allows(tmp_path: Path) -> None:
    # What preflight published for a build that has DFLASH only (a discovered dialect).
    server = {
        "dialect": {
            "version": "discovered from sglang 0.5.15 (build x)",
            "algorithms": {
                "DFLASH": {
                    "budget": {"flag": "--speculative-num-draft-tokens", "equals_block_size": True},
                    "topk": {"choices": [1]},
                    "window": {"flag": "--speculative-draft-window-size"},
                }
            },
        },
        "block_size": 8,
    }
    inp = {**plan_input(tmp_path, budget=8, algorithm="DFLASH", topk=1), "server": server}
    assert "dflash-b8-k1-w2048" in ids(make_plan(inp))
    bad = {**plan_input(tmp_path, budget=8, algorithm="DDTREE"), "server": server}
    with pytest.raises(SweepInputError, match="algorithm=DDTREE is not available in discovered"):
        make_plan(bad)


def test_a_plan_parses_its_inputs_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line is read into one Inputs; the objective and the search's settings are made
    there, once, and the plan reads them (it used to make the objective three times)."""
    from sweep.config import objectives, params

    calls = {"objective": 0, "strategy": 0}
    make, strategy = objectives.make, params.search_settings

    def counted_make(*a: object, **k: object) -> objectives.Objective:
        calls["objective"] += 1
        return make(*a, **k)  # type: ignore[arg-type]

    def counted_strategy(*a: object, **k: object) -> object:
        calls["strategy"] += 1
        return strategy(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(objectives, "make", counted_make)
    monkeypatch.setattr(inputs, "search_settings", counted_strategy)
    p = make_plan(plan_input(tmp_path, ["h1", "h2"], budget="4,8,16", topk="1,4", search="model"))
    assert calls == {"objective": 1, "strategy": 1}
    assert p.search is not None
    given = inputs.read_inputs(plan_input(tmp_path, ["h1", "h2"], budget="4,8", search="model"))
    assert given.strategy is not None and given.strategy.batch == 2  # a point a host each round
    assert not hasattr(given, "cli") and not hasattr(given, "inventory")


def test_a_search_plan_reads_each_point_once_and_checks_the_bench_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search's steps and the sweep's plan after them share one reading of every point's
    identity and twin; a rerun with other bench parameters is refused before the search replays."""
    from sweep.search import search_rounds

    calls = {"identities": 0, "same": 0}
    identities, same = plan.store.point_identities, plan.same_servers

    def counted(key: str, fn: object) -> object:
        def call(*a: object, **k: object) -> object:
            calls[key] += 1
            return fn(*a, **k)  # type: ignore[operator]

        return call

    monkeypatch.setattr(plan.store, "point_identities", counted("identities", identities))
    monkeypatch.setattr(plan, "same_servers", counted("same", same))
    cli = {"budget": "4,8,16", "topk": "1,4", "search": "model", "sweep_name": "s"}
    first = make_plan(plan_input(tmp_path, ["h1"], **cli))
    assert calls == {"identities": 1, "same": 1}
    assert first.points and first.search is not None
    plan.record_run(first)

    def replay(*a: object, **k: object) -> None:
        raise AssertionError("the search replayed before the bench parameters were checked")

    monkeypatch.setattr(search_rounds, "replay", replay)
    with pytest.raises(SweepInputError, match="another sweep_name"):
        make_plan(plan_input(tmp_path, ["h1"], **cli, contexts="1024"))
    # sweep.yml's first play (`sweep check`) refuses it before any host is contacted
    with pytest.raises(SweepInputError, match="was run with bench parameters"):
        inputs.read_inputs(plan_input(tmp_path, ["h1"], **cli, contexts="1024"))
