"""sweep.store.claims: the work queue - one host per point, a lost host's point taken over once."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

from sweep import layout
from sweep.store import claims


def sweep(tmp: Path, started: float = 100.0) -> Path:
    d = tmp / "s"
    d.mkdir()
    layout.write_sweep(d, {"name": "s", "runs": [{"started": started}]})
    return d


def test_the_first_host_gets_the_point_the_other_skips_it(tmp_path: Path) -> None:
    d = sweep(tmp_path)
    assert claims.claim(d, "p", "a") == {"mine": True, "state": "claimed"}
    assert claims.claim(d, "p", "b") == {"mine": False, "state": "taken", "by": "a"}
    assert claims.claim(d, "p", "a") == {"mine": True, "state": "held"}


def _race(args: tuple[str, str]) -> bool:
    return bool(claims.claim(Path(args[0]), "p", args[1])["mine"])


def test_racing_hosts_get_the_point_exactly_once(tmp_path: Path) -> None:
    d = sweep(tmp_path)
    with multiprocessing.get_context("fork").Pool(4) as pool:
        won = pool.map(_race, [(str(d), f"h{i}") for i in range(16)])
    assert sum(won) == 1


def test_a_lost_hosts_point_is_taken_over_once(tmp_path: Path) -> None:
    d = sweep(tmp_path)
    claims.claim(d, "p", "lost")
    # the first pass never takes over; nor does the take-over pass while the holder is alive
    assert claims.claim(d, "p", "a")["state"] == "taken"
    assert claims.claim(d, "p", "a", alive=["a", "lost"])["state"] == "taken"
    assert claims.claim(d, "p", "a", alive=["a", "c"]) == {
        "mine": True,
        "state": "taken_over",
        "from": "lost",
    }
    assert claims.claim(d, "p", "c", alive=["a", "c"]) == {
        "mine": False,
        "state": "taken",
        "by": "a",
    }


def test_complete_and_failed_points_are_not_run_again(tmp_path: Path) -> None:
    d = sweep(tmp_path, started=100.0)
    (d / "done").mkdir()
    (d / "done" / layout.POINT_FILE).write_text(json.dumps({"status": "complete"}))
    assert claims.claim(d, "done", "a") == {"mine": False, "state": "done"}
    claims.claim(d, "bad", "lost")
    (d / "bad").mkdir()
    (d / "bad" / layout.FAILURE_FILE).write_text(json.dumps({"timings": {"finished": 150.0}}))
    assert claims.claim(d, "bad", "a", alive=["a"])["state"] == "failed"
    # a failure of an earlier run does not stop the take-over
    (d / "bad" / layout.FAILURE_FILE).write_text(json.dumps({"timings": {"finished": 50.0}}))
    assert claims.claim(d, "bad", "a", alive=["a"])["state"] == "taken_over"


def test_a_new_run_starts_with_no_claims(tmp_path: Path) -> None:
    d = sweep(tmp_path)
    claims.claim(d, "p", "a")
    claims.clear(d)
    assert claims.claim(d, "p", "b")["state"] == "claimed"


def test_peek_tells_what_a_claim_would_find_without_claiming(tmp_path: Path) -> None:
    d = sweep(tmp_path)
    assert claims.peek(d, "p", "a", ["a", "b"]) == "free"
    assert not (d / claims.CLAIMS).exists() or not list((d / claims.CLAIMS).iterdir())
    assert claims.claim(d, "p", "a", ["a", "b"])["mine"]
    assert claims.peek(d, "p", "a", ["a", "b"]) == "held"
    assert claims.peek(d, "p", "b", ["a", "b"]) == "taken"
    assert claims.peek(d, "p", "b", ["b"]) == "lost"  # its holder is no longer alive
