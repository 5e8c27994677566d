#!/usr/bin/python3
"""Runs the SGLang server as a child process and keeps the API key out of sight.

SGLang logs its resolved ``server_args`` (API key included) at start-up, and systemd sends the
output to the journal; a key passed as ``--api-key`` would also sit in /proc/PID/cmdline, which
every local user can read. This launcher takes the key from an environment variable (set by the
unit's 0600 EnvironmentFile), hands it to SGLang in a 0600 ``--config`` YAML file inside the
unit's private runtime directory, and replaces it with ``<redacted>`` in every line the server
prints. Signals are forwarded so that SIGTERM still starts SGLang's graceful drain.

Usage: sglang-launch [--secret-env=NAME --secret-option=NAME --secret-dir=DIR] -- COMMAND [ARGS...]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading
from typing import BinaryIO

REDACTED = b"<redacted>"
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
PR_SET_PDEATHSIG = 1


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="sglang-launch")
    parser.add_argument("--secret-env", default="SGLANG_API_KEY")
    parser.add_argument("--secret-option", default="api-key")
    parser.add_argument("--secret-dir", default=os.environ.get("RUNTIME_DIRECTORY", ""))
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        parser.error("a command to run is required after --")
    return args


def die_with_parent() -> None:
    # The server must not outlive the launcher (e.g. if the launcher is SIGKILLed outside systemd).
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def write_secret_config(directory: str, option: str, secret: str) -> str:
    """Writes SGLang's --config YAML holding only the secret; JSON strings are valid YAML."""
    if not directory:
        raise SystemExit(
            "sglang-launch: --secret-dir (or RUNTIME_DIRECTORY) is required for a secret"
        )
    path = os.path.join(directory, "secret-args.yaml")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(f"{option}: {json.dumps(secret)}\n")
    return path


def pump(source: BinaryIO, sink: BinaryIO, secret: bytes) -> None:
    for line in iter(source.readline, b""):
        if secret:
            line = line.replace(secret, REDACTED)
        sink.write(line)
        sink.flush()


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    env = dict(os.environ)
    secret = env.pop(args.secret_env, "")
    command = list(args.command)
    if secret:
        if "--config" in command:
            raise SystemExit("sglang-launch: the server command must not carry its own --config")
        command += ["--config", write_secret_config(args.secret_dir, args.secret_option, secret)]

    child = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=die_with_parent,
    )

    def forward(signum: int, _frame: object) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, forward)

    secret_bytes = secret.encode()
    assert child.stdout is not None and child.stderr is not None
    pumps = [
        threading.Thread(target=pump, args=(child.stdout, sys.stdout.buffer, secret_bytes)),
        threading.Thread(target=pump, args=(child.stderr, sys.stderr.buffer, secret_bytes)),
    ]
    for thread in pumps:
        thread.start()
    code = child.wait()
    for thread in pumps:
        thread.join()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
