"""The sweep's traffic on the controller (sweep/config/workload.py through `sweep plan`): a user's
dataset is validated and sampled before any host changes, only the sample is written for the hosts,
and its digest is part of every point's bench parameters (so of its identity)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from test_sweep_fakes import plan_input

from bench import datasets
from sweep.cli import plan
from sweep.config import workload
from sweep.config.params import SweepInputError


def chat_line(text: str, source: str = "support", **extra: Any) -> str:
    return json.dumps({"messages": [{"role": "user", "content": text}], "source": source, **extra})


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def traffic(tmp_path: Path) -> Path:
    lines = [
        chat_line(f"question {i} about the service " * 20, ["a", "b", "c"][i % 3]) for i in range(9)
    ]
    return write(tmp_path / "traffic.jsonl", lines)


def make(tmp: Path, **cli: Any) -> plan.Plan:
    return plan.make_plan(plan_input(tmp, budget="4", contexts="natural", **cli))


def test_a_dataset_is_the_traffic_and_its_digest_is_in_the_bench(
    tmp_path: Path, traffic: Path
) -> None:
    p = make(tmp_path, dataset=str(traffic))
    assert p.bench["categories"] == ["dataset"]
    assert p.bench["contexts"] == [0]
    ds = p.bench["dataset"]
    assert ds["requests"] == 9 and ds["sample"] is None and len(ds["digest"]) == 64
    sweep = p.to_dict()["sweep"]
    assert sweep["dataset_file"] == str(tmp_path / workload.WORKLOADS / f"{ds['digest']}.jsonl")
    sample = datasets.sample(Path(sweep["dataset_file"]), None)  # written when it was read
    assert [c.source for c in sample.conversations] == ["a", "b", "c"] * 3
    # identities carry the bench parameters, digest included
    assert all(i["bench"]["dataset"] == ds for i in p.identities.values())


def test_one_edited_line_changes_the_digest_an_unchanged_file_keeps_it(
    tmp_path: Path, traffic: Path
) -> None:
    first = make(tmp_path, dataset=str(traffic)).bench["dataset"]["digest"]
    assert make(tmp_path, dataset=str(traffic)).bench["dataset"]["digest"] == first
    lines = traffic.read_text().splitlines()
    lines[4] = chat_line("a different question", "b")
    write(traffic, lines)
    assert make(tmp_path, dataset=str(traffic)).bench["dataset"]["digest"] != first


def test_a_sample_is_deterministic_and_only_its_requests_count(
    tmp_path: Path, traffic: Path
) -> None:
    a = make(tmp_path, dataset=str(traffic), dataset_sample=4, dataset_seed=7).bench["dataset"]
    b = make(tmp_path, dataset=str(traffic), dataset_sample="4", dataset_seed="7").bench["dataset"]
    c = make(tmp_path, dataset=str(traffic), dataset_sample=4, dataset_seed=8).bench["dataset"]
    assert a == b and a["requests"] == 4 and a["digest"] != c["digest"]


def _bad(tmp: Path) -> dict[str, tuple[dict[str, Any], str]]:
    missing = tmp / "nope.jsonl"
    empty = write(tmp / "empty.jsonl", [""])
    unreadable = write(tmp / "locked.jsonl", [chat_line("x")])
    malformed = write(tmp / "bad.jsonl", [chat_line("fine"), "{not json", chat_line("fine")])
    not_messages = write(tmp / "msgs.jsonl", [json.dumps({"messages": "hello"})])
    roles = write(tmp / "roles.jsonl", [json.dumps({"messages": [{"role": "user"}]})])
    short = write(tmp / "short.jsonl", [chat_line("short question?")])
    return {
        "missing": ({"dataset": str(missing)}, f"dataset {missing}: no such file"),
        "empty": ({"dataset": str(empty)}, "empty"),
        "unreadable": ({"dataset": str(unreadable)}, "permission denied"),
        "malformed": ({"dataset": str(malformed)}, "line 2"),
        "format": ({"dataset": str(short), "dataset_format": "csv"}, "csv"),
        "messages": ({"dataset": str(not_messages)}, "line 1"),
        "roles": ({"dataset": str(roles)}, "line 1"),
        "too short": (
            {"dataset": str(short), "contexts": "2048"},
            "no request of the dataset is long enough",
        ),
        "sample": (
            {"dataset": str(short), "dataset_sample": 5},
            "dataset_sample=5 is larger than the file's 1 requests",
        ),
        "sample zero": ({"dataset": str(short), "dataset_sample": 0}, "dataset_sample=0"),
        "no dataset": ({"categories": "dataset"}, "categories=dataset needs a dataset"),
        "orphan sample": ({"dataset_sample": 3}, "need -e dataset=PATH"),
        "natural raw": ({"categories": "code"}, "contexts=natural needs chat-shaped categories"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "missing",
        "empty",
        "unreadable",
        "malformed",
        "format",
        "messages",
        "roles",
        "too short",
        "sample",
        "sample zero",
        "no dataset",
        "orphan sample",
        "natural raw",
    ],
)
def test_bad_input_is_named_before_anything_is_written(
    tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli, says = _bad(tmp_path)[case]
    if case == "unreadable":
        real_open = open

        def refuse(path: Any, *a: Any, **kw: Any) -> Any:
            if str(path).endswith("locked.jsonl"):
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *a, **kw)

        monkeypatch.setattr("builtins.open", refuse)
        os.chmod(tmp_path / "locked.jsonl", 0)
    results = tmp_path / "results"
    with pytest.raises(SweepInputError) as e:
        plan.make_plan(
            plan_input(results, budget="4", contexts=cli.pop("contexts", "natural"), **cli)
        )
    assert says.lower() in str(e.value).lower()
    # no sweep was started (a dataset read whole may leave its sample, a cache)
    left = sorted(p.name for p in results.iterdir()) if results.exists() else []
    assert left in ([], [".workloads"])


@pytest.mark.parametrize(
    ("cli", "says"),
    [
        ({"fresh": "maybe"}, "fresh=maybe"),
        ({"objective": "speed"}, "speed"),
        ({"greedy_match_min": "2"}, "greedy_match_min"),
        ({"search": "model", "max_restarts": "0"}, "max_restarts=0"),
        ({"concurrency": "0"}, "concurrency=0"),
        ({"categories": "dataset,poems"}, "categories=dataset,poems"),
    ],
)
def test_a_bad_value_that_needs_no_file_is_named_before_the_dataset_is_read(
    tmp_path: Path, traffic: Path, cli: dict[str, str], says: str
) -> None:
    results = tmp_path / "results"
    with pytest.raises(SweepInputError, match=says):
        plan.make_plan(plan_input(results, budget="4,8", dataset=str(traffic), **cli))
    assert not (results / workload.WORKLOADS).exists()  # the file was not sampled


def test_a_dataset_is_measured_as_sent_unless_lengths_are_given(
    tmp_path: Path, traffic: Path
) -> None:
    bench = plan.make_plan(plan_input(tmp_path, budget="4", dataset=str(traffic))).bench
    assert (bench["contexts"], bench["output_len"]) == ([0], [0])  # the inventory's are not
    given = plan_input(tmp_path, budget="4", dataset=str(traffic), contexts="64", output_len="32")
    bench = plan.make_plan(given).bench
    assert (bench["contexts"], bench["output_len"]) == ([64], [32])


def test_a_file_read_once_is_not_read_again_until_it_changes(
    tmp_path: Path, traffic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = make(tmp_path, dataset=str(traffic)).bench["dataset"]

    def no_reading(*a: Any, **kw: Any) -> Any:
        raise AssertionError("the dataset file was read again")

    with monkeypatch.context() as m:
        m.setattr(datasets, "sample", no_reading)
        assert make(tmp_path, dataset=str(traffic)).bench["dataset"] == first
        # the sample kept is held to the contexts asked, as the file read would be
        with pytest.raises(SweepInputError, match="contexts=65536: no request"):
            plan.make_plan(plan_input(tmp_path, budget="4", contexts="65536", dataset=str(traffic)))
    write(traffic, [*traffic.read_text().splitlines(), chat_line("one more request", "c")])
    again = make(tmp_path, dataset=str(traffic)).bench["dataset"]
    assert again["requests"] == 10 and again["digest"] != first["digest"]
