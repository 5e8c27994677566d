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


def launch(script: str, secret_dir: Path, **kwargs: object) -> subprocess.Popen[bytes]:
    env = dict(os.environ, SGLANG_API_KEY=SECRET)
    return subprocess.Popen(
        [
            sys.executable,
            str(LAUNCHER),
            "--secret-env=SGLANG_API_KEY",
            "--secret-option=api-key",
            f"--secret-dir={secret_dir}",
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


def test_key_reaches_the_server_in_a_private_config_file_never_in_argv_or_output(
    tmp_path: Path,
) -> None:
    script = (
        "import json, os, stat, sys\n"
        "path = sys.argv[sys.argv.index('--config') + 1]\n"
        "print('argv', sys.argv[1:], flush=True)\n"
        "print('mode', oct(stat.S_IMODE(os.stat(path).st_mode)), flush=True)\n"
        "option, value = open(path).read().split(': ', 1)\n"
        "print('server_args=' + option + '=' + json.loads(value), file=sys.stderr, flush=True)\n"
        "print('env has key:', 'SGLANG_API_KEY' in os.environ, flush=True)\n"
    )
    proc = launch(script, tmp_path)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    config = tmp_path / "secret-args.yaml"
    assert f"argv ['--config', '{config}']".encode() in out
    assert b"mode 0o600" in out
    assert b"server_args=api-key=<redacted>" in err
    assert b"env has key: False" in out
    assert SECRET.encode() not in out + err


def test_exit_status_of_the_server_is_kept(tmp_path: Path) -> None:
    proc = launch("import sys; sys.exit(7)", tmp_path)
    proc.communicate(timeout=30)
    assert proc.returncode == 7


def test_sigterm_is_forwarded_so_the_server_can_drain(tmp_path: Path) -> None:
    script = (
        "import signal, sys, time\n"
        "def drain(*_):\n"
        "    print('draining', flush=True); time.sleep(0.3); print('drained', flush=True)\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, drain)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = launch(script, tmp_path)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=30)
    assert rest == b"draining\ndrained\n"
    assert proc.returncode == 0
    assert time.monotonic() - started < 30
