"""The unit's launcher: the API key reaches the server but never its output."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

LAUNCHER = (
    Path(__file__).resolve().parents[2] / "roles" / "sglang_server" / "files" / "sglang-launch.py"
)
SECRET = "k3y-that-must-not-leak"


def launch(script: str, **kwargs: object) -> subprocess.Popen[bytes]:
    env = dict(os.environ, SGLANG_API_KEY=SECRET)
    return subprocess.Popen(
        [
            sys.executable,
            str(LAUNCHER),
            "--secret-env=SGLANG_API_KEY",
            "--secret-flag=--api-key",
            "--",
            sys.executable,
            "-c",
            script,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kwargs,  # type: ignore[arg-type]
    )


def test_key_is_passed_as_flag_and_redacted_from_both_streams() -> None:
    script = (
        "import os, sys\n"
        "print('argv', sys.argv[1:], flush=True)\n"
        "print('server_args=api_key=' + sys.argv[2], file=sys.stderr, flush=True)\n"
        "print('env has key:', 'SGLANG_API_KEY' in os.environ, flush=True)\n"
    )
    proc = launch(script)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert SECRET.encode() not in out + err
    assert b"argv ['--api-key', '<redacted>']" in out
    assert b"server_args=api_key=<redacted>" in err
    assert b"env has key: False" in out


def test_exit_status_of_the_server_is_kept() -> None:
    proc = launch("import sys; sys.exit(7)")
    proc.communicate(timeout=30)
    assert proc.returncode == 7


def test_sigterm_is_forwarded_so_the_server_can_drain() -> None:
    script = (
        "import signal, sys, time\n"
        "def drain(*_):\n"
        "    print('draining', flush=True); time.sleep(0.3); print('drained', flush=True)\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, drain)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = launch(script)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=30)
    assert rest == b"draining\ndrained\n"
    assert proc.returncode == 0
    assert time.monotonic() - started < 30
