"""roles/sglang_host modules: model weights, free disk and port owner checks, without a host."""

from __future__ import annotations

import json
import os
import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ansible.module_utils.testing import patch_module_args
from project_module_utils import module_utils
from sglang_host_loader import library, make_model_dir

models = library("sglang_host_model_check")
disk = library("sglang_host_disk_check")
port = library("sglang_host_port_check")
fixture = make_model_dir()


class ModuleExit(Exception):
    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result


def run(module: Any, args: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    def exit_json(_self: Any, **result: Any) -> None:
        raise ModuleExit(result)

    monkeypatch.setattr(module.AnsibleModule, "exit_json", exit_json)
    with patch_module_args(args), pytest.raises(ModuleExit) as caught:
        module.main()
    return caught.value.result


def make(tmp_path: Path, name: str, **damage: Any) -> Path:
    path = tmp_path / name
    opts = {"missing": None, "empty": None, "truncate": None} | damage
    fixture.make(str(path), 4, name == "drafter", opts["missing"], opts["empty"], opts["truncate"])
    return path


def test_complete_sharded_and_single_file_models_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target, drafter = make(tmp_path, "target"), make(tmp_path, "drafter")
    result = run(
        models,
        {"models": [{"path": str(target), "label": "target"}, {"path": str(drafter)}]},
        monkeypatch,
    )
    assert result["problems"] == []
    assert result["changed"] is False
    assert result["models"][0]["weights"] == [
        f"model-0000{k}-of-00004.safetensors" for k in range(1, 5)
    ]
    assert result["models"][0]["bytes"] == sum(
        (target / n).stat().st_size for n in result["models"][0]["weights"]
    )
    assert result["models"][1]["weights"] == ["model.safetensors"]


def test_missing_shard_is_named(tmp_path: Path) -> None:
    target = make(tmp_path, "target", missing=2)
    result = models.check_model(str(target), "target model")
    assert result["problems"] == [
        f"target model {target}: 3 of 4 weight files listed in model.safetensors.index.json are"
        " usable, need all 4: model-00002-of-00004.safetensors is missing."
    ]


def test_empty_and_truncated_shards_are_named(tmp_path: Path) -> None:
    target = make(tmp_path, "target", empty=1, truncate=4)
    (problem,) = models.check_model(str(target), "")["problems"]
    assert "2 of 4 weight files" in problem
    assert "model-00001-of-00004.safetensors is empty (0 bytes)" in problem
    size = (target / "model-00004-of-00004.safetensors").stat().st_size
    assert f"model-00004-of-00004.safetensors is {size} bytes, its header needs {size + 100}" in (
        problem
    )


def test_garbage_shard_header(tmp_path: Path) -> None:
    target = make(tmp_path, "target")
    (target / "model-00003-of-00004.safetensors").write_bytes(struct.pack("<Q", 10) + b"not json!!")
    (problem,) = models.check_model(str(target), "")["problems"]
    assert "model-00003-of-00004.safetensors has no readable safetensors header" in problem


def test_missing_directory_config_and_weights(tmp_path: Path) -> None:
    assert models.check_model(str(tmp_path / "nope"), "drafter")["problems"] == [
        f"drafter {tmp_path / 'nope'}: found nothing, need a model directory."
    ]
    bare = tmp_path / "bare"
    bare.mkdir()
    assert models.check_model(str(bare), "")["problems"] == [
        f"{bare}: config.json not found, need the model's config.json.",
        f"{bare}: found no *.safetensors weights and no model.safetensors.index.json,"
        " need the weight files.",
    ]


def test_index_without_shards(tmp_path: Path) -> None:
    target = make(tmp_path, "target")
    (target / "model.safetensors.index.json").write_text(json.dumps({"weight_map": {}}))
    assert models.check_model(str(target), "")["problems"] == [
        f"{target}: model.safetensors.index.json lists no shard files, need at least one."
    ]


@pytest.fixture
def statvfs(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Free MiB reported for every filesystem (one filesystem: the test's tmp dir)."""
    free = {"mib": 100}

    class Result:
        f_frsize = 4096

        @property
        def f_bavail(self) -> int:
            return free["mib"] * 256

    monkeypatch.setattr(disk.os, "statvfs", lambda _path: Result())
    yield free


def test_requirements_on_one_filesystem_add_up(
    tmp_path: Path, statvfs: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    reqs = [
        {
            "path": str(tmp_path / "venv"),
            "min_free_mb": 60,
            "purpose": "venv",
            "only_if_missing": True,
        },
        {"path": str(tmp_path / "models/a/b"), "min_free_mb": 50, "purpose": "models"},
    ]
    result = run(disk, {"requirements": reqs}, monkeypatch)
    (problem,) = result["problems"]
    assert f"holding {tmp_path / 'venv'}, {tmp_path / 'models/a/b'}): found 100 MiB" in problem
    assert problem.endswith("need 110 MiB (venv 60 MiB; models 50 MiB) (sglang_host_free_disk).")
    statvfs["mib"] = 110
    assert run(disk, {"requirements": reqs}, monkeypatch)["problems"] == []


def test_install_space_is_not_needed_once_installed(
    tmp_path: Path, statvfs: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "venv").mkdir()
    reqs = [{"path": str(tmp_path / "venv"), "min_free_mb": 1000, "only_if_missing": True}]
    result = run(disk, {"requirements": reqs}, monkeypatch)
    assert result["problems"] == []
    assert result["filesystems"] == []


def test_real_statvfs_finds_a_mount_point(tmp_path: Path) -> None:
    filesystems, _ = disk.check([{"path": str(tmp_path / "x"), "min_free_mb": 0}])
    assert os.path.ismount(filesystems[0]["mount"])
    assert filesystems[0]["free_mb"] > 0


TCP_HEADER = (
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt"
    "   uid  timeout inode\n"
)


def fake_proc(tmp_path: Path, listeners: dict[int, tuple[int, str, str]]) -> Path:
    """A /proc with one LISTEN socket per pid: pid -> (port, cgroup unit path, cmdline)."""
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    rows = []
    for n, (pid, (lport, unit, cmd)) in enumerate(listeners.items()):
        inode = 4000 + n
        rows.append(
            f"   {n}: 0100007F:{lport:04X} 00000000:0000 0A 00000000:00000000 00:00000000"
            f" 00000000     0        0 {inode} 1 0000000000000000 100 0 0 10 0\n"
        )
        (proc / str(pid) / "fd").mkdir(parents=True)
        os.symlink(f"socket:[{inode}]", proc / str(pid) / "fd" / "3")
        os.symlink("/dev/null", proc / str(pid) / "fd" / "0")
        (proc / str(pid) / "cgroup").write_text(f"0::/system.slice/{unit}\n")
        (proc / str(pid) / "cmdline").write_bytes(cmd.replace(" ", "\0").encode() + b"\0")
    (proc / "net" / "tcp").write_text(TCP_HEADER + "".join(rows))
    return proc


def test_port_free_or_held_by_our_unit(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {41: (30000, "sglang.service", "sglang-launch --")})
    found, unreadable = port.holders(30000, str(proc))
    assert found == [{"pid": 41, "unit": "sglang.service", "command": "sglang-launch --"}]
    assert port.problems_for(30000, "sglang", found, unreadable) == []
    assert port.holders(30001, str(proc)) == ([], False)


def test_port_held_by_a_stranger_names_it(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {77: (30000, "other.service", "python3 -m http.server 30000")})
    found, unreadable = port.holders(30000, str(proc))
    assert port.problems_for(30000, "sglang.service", found, unreadable) == [
        "port 30000: held by pid 77 (python3 -m http.server 30000) in other.service,"
        " need it free or held by sglang.service (sglang_server_port)."
    ]


def test_a_strangers_api_key_is_never_shown(tmp_path: Path) -> None:
    cmd = "python3 -m sglang.launch_server --port 30000 --api-key sekrit-9"
    proc = fake_proc(tmp_path, {77: (30000, "impostor.service", cmd)})
    found, unreadable = port.holders(30000, str(proc))
    (problem,) = port.problems_for(30000, "sglang.service", found, unreadable)
    assert "--api-key ********" in found[0]["command"] and "--api-key ********" in problem
    assert "sekrit-9" not in repr(found) + problem


def test_port_held_by_an_invisible_process(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {77: (30000, "x.service", "x")})
    (proc / "77" / "fd" / "3").unlink()  # the socket exists but no visible process holds it
    found, unreadable = port.holders(30000, str(proc))
    assert (found, unreadable) == ([], True)
    (problem,) = port.problems_for(30000, "sglang", found, unreadable)
    assert "cannot be seen" in problem


def test_port_check_on_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        number = sock.getsockname()[1]
        result = run(port, {"port": number, "unit": "no-such-unit"}, monkeypatch)
    assert [h["pid"] for h in result["holders"]] == [os.getpid()]
    assert "need it free or held by no-such-unit.service" in result["problems"][0]


def test_unit_of_cgroup_lines() -> None:
    port_owner = module_utils("sglang_port_owner")
    assert port_owner.unit_of("0::/system.slice/sglang.service\n") == "sglang.service"
    assert port_owner.unit_of("12:pids:/user.slice/session-3.scope\n1:name=systemd:/x\n") == (
        "session-3.scope"
    )
    assert port_owner.unit_of("0::/\n") == ""
