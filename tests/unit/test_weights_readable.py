"""library/sglang_weights_readable.py: what a service user can read, on real trees, as another uid.

Tests run as any uid (root in CI): the trees are owned by the test runner and checked for another
uid and arbitrary gids, which the module computes from owners and mode bits rather than asking the
kernel.
"""

from __future__ import annotations

import grp
import os
import shutil
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from sglang_host_loader import ROOT, load, run_module

m = load("sglang_weights_readable", ROOT / "library" / "sglang_weights_readable.py")

OTHER = 54321 if os.getuid() != 54321 else 54322  # a uid that owns nothing in the trees
NOBODY = "sglang-test-no-such-user"


def run(args: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], bool]:
    """The module's result and whether it failed."""
    return run_module(m, args, monkeypatch)


@pytest.fixture
def base() -> Iterator[Path]:
    """A 0755 directory every uid can reach (pytest's own tmp_path sits below a 0700 directory)."""
    path = Path(tempfile.mkdtemp(prefix="weights-readable-"))
    path.chmod(0o755)
    if m.scan([str(path)], OTHER, ()).problem is not None:
        shutil.rmtree(path)
        pytest.skip(f"{tempfile.gettempdir()} cannot be entered by every user on this machine")
    yield path
    for d, dirs, _ in os.walk(path):
        for name in dirs:
            os.chmod(os.path.join(d, name), 0o755)
    shutil.rmtree(path)


def model(path: Path, *, shards: int = 2, mode: int = 0o644) -> Path:
    """A model directory: config.json, shards and a subdirectory, every file with `mode`."""
    (path / "original").mkdir(parents=True)
    files = [path / "config.json", path / "original" / "params.json"]
    files += [path / f"model-{k:05d}.safetensors" for k in range(1, shards + 1)]
    for f in files:
        f.write_bytes(b"{}")
        f.chmod(mode)
    return path


def test_a_readable_tree_passes_and_counts_its_files(base: Path) -> None:
    target, drafter = model(base / "target"), model(base / "drafter", shards=1)
    assert m.scan([str(target), str(drafter)], OTHER, ()) == m.Scan(None, 7)


def test_fingerprints_change_with_a_file_and_not_without(base: Path) -> None:
    target, drafter = model(base / "target"), model(base / "drafter", shards=1)
    first = m.scan([str(target), str(drafter)], OTHER, ()).fingerprints
    assert set(first) == {str(target), str(drafter)}
    assert first[str(target)] != first[str(drafter)]
    assert m.scan([str(target), str(drafter)], OTHER, ()).fingerprints == first
    shard = target / "model-00001.safetensors"
    shard.write_bytes(b"{ }")  # same name, another size
    assert m.scan([str(target)], OTHER, ()).fingerprints[str(target)] != first[str(target)]
    (drafter / "extra.safetensors").write_bytes(b"{}")
    (drafter / "extra.safetensors").chmod(0o644)
    assert m.scan([str(drafter)], OTHER, ()).fingerprints[str(drafter)] != first[str(drafter)]


def test_an_unreadable_tree_has_no_fingerprint(base: Path) -> None:
    target = model(base / "target", mode=0o600)
    scan = m.scan([str(target)], OTHER, ())
    assert scan.problem is not None and scan.fingerprints == {}


def test_a_0700_ancestor_owned_by_another_uid_is_named(base: Path) -> None:
    home = base / "root"
    target = model(home / "models" / "Kimi-K2.6")
    home.chmod(0o700)
    scan = m.scan([str(target)], OTHER, ())
    assert scan.problem is not None
    assert (scan.problem.path, scan.problem.kind, scan.files_checked) == (str(home), "enter", 0)
    who = m.Identity("sglang", True, OTHER, frozenset())
    msg = m.message(scan.problem, who, scan.files_checked)
    owner = f"{m.user_name(os.getuid())}:{m.group_name(home.stat().st_gid)}"
    assert f"{home} is mode 0700 owner {owner}: user sglang (uid {OTHER}, groups none)" in msg
    assert "cannot enter it" in msg
    assert f"chmod o+x {home}" in msg
    assert f"setfacl -m u:sglang:x {home}" in msg
    assert "move the weights" in msg
    assert "sglang_server_user: root" in msg


def test_a_0600_file_owned_by_another_uid_is_named(base: Path) -> None:
    target = model(base / "target")
    shard = target / "model-00002.safetensors"
    shard.chmod(0o600)
    scan = m.scan([str(target)], OTHER, ())
    assert scan.problem is not None
    assert (scan.problem.path, scan.problem.kind) == (str(shard), "read")
    assert scan.files_checked == 2  # config.json and model-00001 come first (sorted)
    msg = m.message(scan.problem, m.Identity("sglang", True, OTHER), scan.files_checked)
    assert f"{shard} is mode 0600" in msg
    assert "cannot read it" in msg
    assert f"chmod -R o+rX {target}" in msg
    assert f"setfacl -R -m u:sglang:rX {target}" in msg
    assert "sglang_server_user: root" in msg


def test_an_unlistable_subdirectory_is_named(base: Path) -> None:
    target = model(base / "target")
    (target / "original").chmod(0o711)
    problem = m.scan([str(target)], OTHER, ()).problem
    assert problem is not None
    assert (problem.path, problem.kind) == (str(target / "original"), "list")


def test_group_permission_through_a_supplementary_gid(base: Path) -> None:
    target = model(base / "target", mode=0o640)
    for d in (target, target / "original"):
        d.chmod(0o750)
    gid = target.stat().st_gid
    assert m.scan([str(target)], OTHER, {OTHER, gid}).problem is None
    problem = m.scan([str(target)], OTHER, {OTHER}).problem
    assert problem is not None
    assert (problem.path, problem.kind) == (str(target), "list")


def test_the_owner_class_wins_over_group_and_other() -> None:
    st = os.stat_result((0o100044, 0, 0, 1, 7, 9, 0, 0, 0, 0))  # owner 7 denied, all others read
    assert not m.permits(st, None, 7, frozenset({9}), m.R)
    assert m.permits(st, None, 8, frozenset({9}), m.R)
    assert m.permits(st, None, 8, frozenset(), m.R)
    assert not m.permits(
        os.stat_result((0o100640, 0, 0, 1, 7, 9, 0, 0, 0, 0)), None, 8, frozenset(), m.R
    )


def test_uid_0_passes_everything(base: Path) -> None:
    home = base / "root"
    target = model(home / "models" / "m", mode=0o000)
    home.chmod(0o700)
    (target / "original").chmod(0o000)
    assert m.scan([str(target)], 0, ()) == m.Scan(None, 4)


def hf_cache(base: Path) -> tuple[Path, Path, Path]:
    """A Hugging Face cache (snapshots/<rev>/ links into blobs/): snapshot, blobs, one blob."""
    repo = base / "hub" / "models--org--name"
    blobs, snapshot = repo / "blobs", repo / "snapshots" / "abc123"
    blobs.mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for name, blob in (("config.json", "c0ffee"), ("model.safetensors", "deadbeef")):
        (blobs / blob).write_bytes(b"{}")
        (snapshot / name).symlink_to(f"../../blobs/{blob}")
    return snapshot, blobs, blobs / "deadbeef"


def test_symlinks_into_a_readable_cache_pass(base: Path) -> None:
    snapshot, _, _ = hf_cache(base)
    assert m.scan([str(snapshot)], OTHER, ()) == m.Scan(None, 2)


def test_a_symlink_into_an_unenterable_directory_names_the_target_side(base: Path) -> None:
    snapshot, blobs, _ = hf_cache(base)
    blobs.chmod(0o700)
    problem = m.scan([str(snapshot)], OTHER, ()).problem
    assert problem is not None
    assert (problem.path, problem.kind) == (str(blobs), "enter")
    assert problem.via == f"{snapshot / 'config.json'} -> ../../blobs/c0ffee"
    msg = m.message(problem, m.Identity("sglang", True, OTHER), 0)
    assert f"reached through the symlink {snapshot / 'config.json'} -> ../../blobs/c0ffee" in msg
    assert f"chmod o+x {blobs}" in msg


def test_an_unreadable_blob_suggests_fixing_the_blobs_directory(base: Path) -> None:
    snapshot, blobs, blob = hf_cache(base)
    blob.chmod(0o600)
    scan = m.scan([str(snapshot)], OTHER, ())
    assert scan.problem is not None
    assert (scan.problem.path, scan.problem.kind, scan.files_checked) == (str(blob), "read", 1)
    msg = m.message(scan.problem, m.Identity("sglang", True, OTHER), 1)
    assert f"chmod -R o+rX {blobs}" in msg


def test_a_symlinked_model_directory_checks_both_sides(base: Path) -> None:
    data = base / "data"
    model(data / "target")
    (base / "models").mkdir()
    (base / "models" / "target").symlink_to(data / "target")
    assert m.scan([str(base / "models" / "target")], OTHER, ()).problem is None
    data.chmod(0o700)
    problem = m.scan([str(base / "models" / "target")], OTHER, ()).problem
    assert problem is not None
    assert (problem.path, problem.kind) == (str(data), "enter")


def test_broken_symlinks_loops_and_cycles(base: Path) -> None:
    target = model(base / "target")
    (target / "up").symlink_to("..")  # a cycle back up the tree: visited once
    assert m.scan([str(target)], OTHER, ()).problem is None
    (target / "gone.safetensors").symlink_to("nowhere.safetensors")
    problem = m.scan([str(target)], OTHER, ()).problem
    assert problem is not None
    assert (problem.path, problem.kind) == (str(target / "nowhere.safetensors"), "missing")
    msg = m.message(problem, m.Identity("u", True, OTHER), 3)
    assert f"(reached through the symlink {target / 'gone.safetensors'} -> nowhere" in msg
    assert "does not exist. Fix one of: restore the file or repair the symlink" in msg
    (target / "gone.safetensors").unlink()
    (target / "loop").symlink_to("loop")
    problem = m.scan([str(target)], 0, ()).problem
    assert problem is not None
    assert problem.kind == "loop"
    assert m.scan([str(base / "nothing")], 0, ()).problem.kind == "missing"


def test_posix_acls_are_honoured(base: Path) -> None:
    target = model(base / "target")
    shard = target / "model-00001.safetensors"
    shard.chmod(0o640)
    acl = struct.pack("<I", 2) + b"".join(
        struct.pack("<HHI", tag, perm, ident)
        for tag, perm, ident in [
            (m.ACL_USER_OBJ, 6, 0xFFFFFFFF),
            (m.ACL_USER, 4, OTHER),
            (m.ACL_GROUP_OBJ, 4, 0xFFFFFFFF),
            (m.ACL_MASK, 4, 0xFFFFFFFF),
            (m.ACL_OTHER, 0, 0xFFFFFFFF),
        ]
    )
    try:
        os.setxattr(shard, m.ACL_XATTR, acl)
    except OSError as exc:
        pytest.skip(f"no POSIX ACLs here: {exc}")
    assert m.scan([str(target)], OTHER, ()).problem is None
    problem = m.scan([str(target)], OTHER + 1, ()).problem
    assert problem is not None
    assert problem.path == str(shard)
    assert problem.acl
    assert "mode 0640 with an ACL" in m.reason(problem, m.Identity("u", True, OTHER + 1))


def test_the_acl_mask_limits_named_entries() -> None:
    st = os.stat_result((0o100640, 0, 0, 1, 1000, 1000, 0, 0, 0, 0))
    acl = ((m.ACL_USER_OBJ, 6, 0), (m.ACL_USER, 6, 7), (m.ACL_GROUP, 4, 9), (m.ACL_MASK, 0, 0))
    assert not m.permits(st, acl, 7, frozenset(), m.R)
    assert not m.permits(st, acl, 8, frozenset({9}), m.R)
    unmasked = (*acl[:3], (m.ACL_MASK, 4, 0), (m.ACL_OTHER, 0, 0))
    assert m.permits(st, unmasked, 7, frozenset(), m.R)
    assert m.permits(st, unmasked, 8, frozenset({9}), m.R)
    assert not m.permits(st, unmasked, 8, frozenset({1000}), m.R)  # group_obj perm 0 via mode
    assert m.parse_acl(b"\x01\x00\x00\x00") is None


def group_of(path: Path) -> str:
    return grp.getgrgid(path.stat().st_gid).gr_name


def test_a_user_that_does_not_exist_yet_is_checked_with_group_and_groups(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = model(base / "target", mode=0o640)
    for d in (target, target / "original"):
        d.chmod(0o750)
    group = group_of(target)
    args = {"paths": [str(target)], "user": NOBODY}

    result, failed = run(args | {"group": group}, monkeypatch)
    assert not failed
    assert result["readable"] is True
    assert result["changed"] is False
    assert result["user"] == {
        "name": NOBODY,
        "exists": False,
        "uid": None,
        "gids": [target.stat().st_gid],
        "groups": [group],
    }
    assert "does not exist yet" in result["msg"]
    assert result["files_checked"] == 4

    result, failed = run(args | {"groups": ["sglang-test-no-such-group", group]}, monkeypatch)
    assert (failed, result["readable"]) == (False, True)

    result, failed = run(args | {"group": "sglang-test-no-such-group"}, monkeypatch)
    assert failed
    assert result["readable"] is False
    assert result["problem"]["path"] == str(target)
    assert result["problem"]["kind"] == "list"
    assert "does not exist yet: checked as a new user with groups none" in result["msg"]
    assert f"setfacl -R -m u:{NOBODY}:rX {target}" in result["msg"]
    assert "once the user exists" in result["msg"]


def test_an_existing_user_gets_its_uid_and_groups() -> None:
    who = m.identity("root")
    assert (who.exists, who.uid) == (True, 0)
    assert 0 in who.gids
    assert "user root (uid 0, groups root" in m.describe_user(who)


def test_the_module_fails_or_reports_the_problem(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = base / "root"
    target = model(home / "models" / "m")
    home.chmod(0o700)
    args = {"paths": [str(target)], "user": NOBODY}
    result, failed = run(args, monkeypatch)
    assert failed
    assert result["problems"] == [result["msg"]]
    assert result["problem"]["path"] == str(home)
    assert result["problem"]["mode"] == "0700"
    assert result["files_checked"] == 0

    result, failed = run(args | {"fail_on_unreadable": False}, monkeypatch)
    assert not failed
    assert result["readable"] is False
    assert len(result["problems"]) == 1

    result, failed = run(args | {"user": "root"}, monkeypatch)
    assert (failed, result["readable"], result["problems"]) == (False, True, [])
    assert result["user"]["uid"] == 0


def test_documentation_matches_the_argument_spec() -> None:
    options = yaml.safe_load(m.DOCUMENTATION)["options"]
    assert set(options) == set(m.ARGUMENT_SPEC)
    for name, entry in m.ARGUMENT_SPEC.items():
        for key in ("type", "elements", "default"):
            assert options[name].get(key) == entry.get(key), f"{name}.{key}"
        assert bool(options[name].get("required")) == bool(entry.get("required")), name
    for block in (m.EXAMPLES, m.RETURN):
        assert yaml.safe_load(block)
