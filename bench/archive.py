"""After the bench (`python -m bench run --archive`): pack what the controller keeps of one
point into one archive.

    records/            the bench records (JSON per cell, JSONL, summary.csv, aggregate.csv)
    server_info.json    /server_info of the verified server (API key redacted)
    <unit>.service      the rendered unit file that server was started from
    journal.log         journalctl _SYSTEMD_INVOCATION_ID=<invocation of that server run>

It first checks that the unit still runs the invocation the readiness module verified: a server
that restarted during the bench was not the one measured, and the point fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from bench.errors import BenchError
from bench.server import redact


class CollectError(BenchError):
    """The records cannot be trusted or packed; the point fails."""


def systemd_property(unit: str, prop: str) -> str:
    out = subprocess.run(
        ["systemctl", "show", "-p", prop, "--value", unit],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def server_info(url: str, api_key: str | None, timeout: float = 30.0) -> dict[str, Any]:
    last: Exception | None = None
    for path in ("/server_info", "/get_server_info"):
        req = urllib.request.Request(url.rstrip("/") + path)
        if api_key:
            req.add_header("Authorization", f"Bearer {api_key}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                data = json.loads(resp.read())
        except (urllib.error.URLError, ValueError, OSError) as e:
            last = e
            continue
        if isinstance(data, dict):
            return redact(data)
        last = ValueError(f"{path} answered {type(data).__name__}, not a JSON object")
    raise CollectError(f"/server_info did not answer: {last}")


def journal(invocation: str) -> str:
    out = subprocess.run(
        ["journalctl", f"_SYSTEMD_INVOCATION_ID={invocation}", "-o", "short-iso", "--no-pager"],
        check=False,
        capture_output=True,
        text=True,
    )
    return redact(out.stdout)


def collect(url: str, unit: str, invocation: str, records: Path, archive: Path) -> Path:
    if not (records / "summary.csv").is_file():
        raise CollectError(f"{records} holds no bench summary.csv")
    running = systemd_property(unit, "InvocationID")
    if running != invocation:
        raise CollectError(
            f"{unit} runs invocation {running or 'none'}, not the verified {invocation}: "
            "the server restarted during the point, its records are not trusted"
        )
    info = server_info(url, os.environ.get("SGLANG_API_KEY"))
    fragment = Path(systemd_property(unit, "FragmentPath"))
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "server_info.json").write_text(json.dumps(info, indent=1) + "\n")
        (t / "journal.log").write_text(journal(invocation))
        archive.parent.mkdir(parents=True, exist_ok=True)
        part = archive.with_name(archive.name + ".part")
        with tarfile.open(part, "w:gz") as tar:
            tar.add(records, arcname="records")
            tar.add(t / "server_info.json", arcname="server_info.json")
            tar.add(fragment, arcname=fragment.name)
            tar.add(t / "journal.log", arcname="journal.log")
        os.replace(part, archive)
    return archive
