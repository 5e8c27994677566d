"""library/haproxy_server_stat.py against a UNIX socket that answers as HAProxy 2.6 did (its
recorded `show stat`)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sglang_host_loader import ROOT, load, run_module

m = load("haproxy_server_stat", ROOT / "library" / "haproxy_server_stat.py")
SHOW_STAT = (ROOT / "tests" / "fixtures" / "haproxy" / "show-stat.csv").read_bytes()


@pytest.fixture
def haproxy(tmp_path: Path) -> Iterator[tuple[Path, list[bytes]]]:
    """A runtime API socket answering every command with the recorded `show stat`; what it got."""
    path = tmp_path / "admin.sock"
    got: list[bytes] = []
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                got.append(conn.recv(4096))
                conn.sendall(SHOW_STAT)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path, got
    server.close()


def run(sock: Path, monkeypatch: pytest.MonkeyPatch, **args: Any) -> tuple[dict[str, Any], bool]:
    return run_module(m, {"socket": str(sock), **args}, monkeypatch)


def test_it_reads_the_servers_line_with_one_show_stat(
    haproxy: tuple[Path, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, got = haproxy
    result, failed = run(path, monkeypatch, backend="demo", server="gpu-02")
    assert not failed and not result["changed"]
    assert got == [b"show stat\n"]
    assert result["status"] == "DOWN" and result["scur"] == 0 and result["stot"] == 0
    assert result["weight"] == 1
    assert result["stat"]["addr"] == "127.0.0.1:30001"


def test_a_backend_haproxy_lacks_is_named_with_those_it_has(
    haproxy: tuple[Path, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the frontend `sglang` is not a backend
    result, failed = run(haproxy[0], monkeypatch, backend="sglang", server="gpu-01")
    assert failed
    assert result["msg"] == "HAProxy has no backend 'sglang' (it has: demo)"


def test_a_server_the_backend_lacks_is_named_with_those_it_has(
    haproxy: tuple[Path, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    result, failed = run(haproxy[0], monkeypatch, backend="demo", server="gpu-03")
    assert failed
    has = "(it has: gpu-01, gpu-02)"
    assert result["msg"] == f"HAProxy's backend 'demo' has no server 'gpu-03' {has}"


def test_a_socket_that_does_not_answer_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere.sock"
    result, failed = run(missing, monkeypatch, backend="demo", server="gpu-01")
    assert failed
    assert result["msg"].startswith(f"HAProxy's runtime API socket {missing} does not answer")


def test_it_runs_in_check_mode(
    haproxy: tuple[Path, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = {"backend": "demo", "server": "gpu-01", "_ansible_check_mode": True}
    result, failed = run(haproxy[0], monkeypatch, **args)
    assert not failed and result["status"] == "DOWN"
