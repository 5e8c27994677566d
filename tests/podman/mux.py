"""One `podman exec` per container for every task, as SSH's ControlPersist keeps one connection
per host (tests/podman/connection/podman.py uses it).

Starting `podman exec` costs about 0.17 CPU-s (podman, conmon, the runtime's exec), more than the
module it runs: a no-change run of sglang_server makes 24 of them, about 4 CPU-s. Here one
long-lived `podman exec -i` runs a small agent inside the container, and a multiplexer on the
controller holds its pipes and listens on a Unix socket. A task's command goes over the socket, the
agent starts it with the same argv, stdin, environment and working directory that `podman exec`
would have given it, and sends back its status and output. Several commands may run at once (an
async task beside others).

    python3 mux.py SOCKET PODMAN [PODMAN-ARG ...]   the multiplexer (run_command starts it)

The multiplexer binds its socket only once the agent has answered, removes it when the agent ends
(the container stopped or was removed), and exits after IDLE_SECONDS without a command
(PODMAN_MUX_IDLE_SECONDS in its environment). Where no multiplexer can be reached or started,
run_command returns None and the caller runs `podman exec` itself (the multiplexer acknowledges a
command once the agent has it: one not acknowledged never ran); a command whose answer was lost
raises LostCommand (it may have run), as a container that vanished mid-task would have failed the
task.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import queue
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

AGENT_PYTHON = "/usr/bin/python3"  # the test images' (the inventory's ansible_python_interpreter)
IDLE_SECONDS = 600.0
START_SECONDS = 20.0
# After the command's own process ends, how long output may still arrive from a child that kept
# its pipes (podman exec answers when the process ends, too).
DRAIN_SECONDS = 2.0

# The agent, run by `python3 -u -c` inside the container: standard library only, any Python 3.
AGENT = r"""
import base64, json, os, struct, subprocess, sys, threading
src, dst, lock = sys.stdin.buffer, sys.stdout.buffer, threading.Lock()
def send(msg):
    data = json.dumps(msg).encode()
    with lock:
        dst.write(struct.pack(">I", len(data)) + data)
        dst.flush()
def pump(fd, buf):
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return
        buf.extend(chunk)
def run(req):
    ident, data = req["id"], req.get("stdin")
    try:
        # a session of its own: a command that signals its process group spares the agent
        proc = subprocess.Popen(req["argv"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL if data is None else subprocess.PIPE,
                                start_new_session=True)
    except OSError as exc:
        rc = 127 if isinstance(exc, FileNotFoundError) else 126
        why = base64.b64encode(str(exc).encode()).decode()
        send({"id": ident, "rc": rc, "out": "", "err": why})
        return
    out, err = bytearray(), bytearray()
    readers = [threading.Thread(target=pump, args=(f.fileno(), b), daemon=True)
               for f, b in ((proc.stdout, out), (proc.stderr, err))]
    for t in readers:
        t.start()
    if data is not None:
        try:
            proc.stdin.write(base64.b64decode(data))
        except BrokenPipeError:
            pass
        proc.stdin.close()
    rc = proc.wait()
    for t in readers:
        t.join(DRAIN)
    send({"id": ident, "rc": rc, "out": base64.b64encode(bytes(out)).decode(),
          "err": base64.b64encode(bytes(err)).decode()})
send({"id": 0, "hello": os.getpid()})
while True:
    head = src.read(4)
    if len(head) < 4:
        break
    req = json.loads(src.read(struct.unpack(">I", head)[0]))
    threading.Thread(target=run, args=(req,), daemon=True).start()
""".replace("DRAIN", repr(DRAIN_SECONDS))


class LostCommand(Exception):
    """The command went to the container, and its answer never came back."""


def _send(f: IO[bytes], msg: dict[str, Any]) -> None:
    data = json.dumps(msg).encode()
    f.write(struct.pack(">I", len(data)) + data)
    f.flush()


def _read(f: IO[bytes]) -> dict[str, Any] | None:
    head = f.read(4)
    if len(head) < 4:
        return None
    size = struct.unpack(">I", head)[0]
    data = f.read(size)
    if len(data) < size:
        return None
    msg: dict[str, Any] = json.loads(data)
    return msg


def socket_path(podman: list[str], container: str) -> Path:
    """Where the multiplexer of this podman command line and container listens."""
    key = json.dumps([podman, container, os.environ.get("CONTAINERS_CONF", "")])
    digest = hashlib.sha256(key.encode()).hexdigest()[:20]
    # A Unix socket's path must stay under 108 bytes: a short fixed directory, not the project's.
    return Path(tempfile.gettempdir()) / f"podman-mux-{os.getuid()}" / f"{digest}.sock"


def _connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        return None
    return sock


def _start(path: Path, podman: list[str], container: str) -> socket.socket | None:
    """Connects to the multiplexer, starting it first when none answers (one starter at a time)."""
    path.parent.mkdir(mode=0o700, exist_ok=True)
    with open(f"{path}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sock = _connect(path)
        if sock is not None:
            return sock
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        argv = [*podman, "exec", "-i", container, AGENT_PYTHON, "-u", "-c", AGENT]
        proc = subprocess.Popen(
            [sys.executable, __file__, str(path), *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline and proc.poll() is None:
            sock = _connect(path)
            if sock is not None:
                return sock
            time.sleep(0.02)
        if proc.poll() is None:
            proc.kill()
        return None


def run_command(
    podman: list[str], container: str, argv: list[str], in_data: bytes | None
) -> tuple[int, bytes, bytes] | None:
    """(rc, stdout, stderr) of `argv` in the container, or None where no multiplexer serves it."""
    path = socket_path(podman, container)
    sock = _connect(path) or _start(path, podman, container)
    if sock is None:
        return None
    request: dict[str, Any] = {"argv": argv, "stdin": None}
    if in_data is not None:
        request["stdin"] = base64.b64encode(in_data).decode()
    with sock, sock.makefile("rwb") as f:
        try:
            _send(f, request)
            ack = _read(f)
        except OSError:
            ack = None
        if ack is None or "ack" not in ack:
            return None  # not handed to the agent: it never ran
        reply = _read(f)
    if reply is None or "rc" not in reply:
        why = (reply or {}).get("error", "the multiplexer closed the connection")
        raise LostCommand(f"container {container}: no answer to the command ({why})")
    return reply["rc"], base64.b64decode(reply["out"]), base64.b64decode(reply["err"])


class _Mux:
    def __init__(self, path: Path, agent: subprocess.Popen[bytes]) -> None:
        self.path = path
        assert agent.stdin is not None and agent.stdout is not None
        self.to_agent, self.from_agent = agent.stdin, agent.stdout
        self.lock = threading.Lock()
        self.waiting: dict[int, queue.Queue[dict[str, Any] | None]] = {}
        self.next_id = 1
        self.busy = 0
        self.last = time.monotonic()

    def listen(self) -> socket.socket:
        # bound under a temporary name and renamed: a client never meets a socket that refuses it
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(tmp))
        server.listen(64)
        os.rename(tmp, self.path)
        self.inode = self.path.stat().st_ino
        return server

    def answers(self) -> None:
        """Hands each answer of the agent to the client waiting for it; ends the process with it."""
        while (msg := _read(self.from_agent)) is not None:
            with self.lock:
                waiter = self.waiting.pop(msg.get("id", -1), None)
            if waiter is not None:
                waiter.put(msg)
        self.close()
        with self.lock:
            for waiter in self.waiting.values():
                waiter.put(None)
        os._exit(0)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.path.stat().st_ino == self.inode:
                self.path.unlink()

    def serve(self, client: socket.socket) -> None:
        """One client's command (counted busy by the caller, from its accept)."""
        try:
            with client, client.makefile("rwb") as f:
                request = _read(f)
                if request is None:
                    return
                answer: queue.Queue[dict[str, Any] | None] = queue.Queue()
                with self.lock:
                    ident, self.next_id = self.next_id, self.next_id + 1
                    self.waiting[ident] = answer
                    try:
                        _send(self.to_agent, {**request, "id": ident})
                    except OSError:
                        self.waiting.pop(ident, None)
                        return
                with contextlib.suppress(OSError):
                    _send(f, {"ack": ident})
                reply = answer.get() or {"error": "the container's agent ended"}
                with contextlib.suppress(OSError):
                    _send(f, reply)
        finally:
            with self.lock:
                self.busy -= 1
                self.last = time.monotonic()


def serve(path: Path, argv: list[str]) -> int:
    idle_seconds = float(os.environ.get("PODMAN_MUX_IDLE_SECONDS", IDLE_SECONDS))
    agent = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    mux = _Mux(path, agent)
    if _read(mux.from_agent) is None:
        return 1
    server = mux.listen()
    threading.Thread(target=mux.answers, daemon=True).start()
    server.settimeout(min(5.0, idle_seconds))
    while True:
        try:
            client, _ = server.accept()
        except TimeoutError:
            with mux.lock:
                idle = mux.busy == 0 and time.monotonic() - mux.last > idle_seconds
            if idle:
                mux.close()
                agent.kill()
                return 0
            continue
        with mux.lock:
            mux.busy += 1
        threading.Thread(target=mux.serve, args=(client,), daemon=True).start()


if __name__ == "__main__":
    sys.exit(serve(Path(sys.argv[1]), sys.argv[2:]))
