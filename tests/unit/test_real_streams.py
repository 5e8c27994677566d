"""molecule/real-sglang/files/streams.py names a stream the server cut after its 200 (the real
SGLang 0.5.23 can exit with a stream it accepted during its drain begun, then unserved): its body
just ends, no exception, so without the check it would pass for a short but healthy stream."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STREAMS = ROOT / "molecule" / "real-sglang" / "files" / "streams.py"


class CutServer(BaseHTTPRequestHandler):
    """/generate: 200, SSE headers, one chunk, then the connection dropped mid-response;
    /v1/models: the new model's name, so the script's poll ends at once."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        line = b'data: {"meta_info": {"completion_tokens": 1}}\n\n'
        self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True

    def do_GET(self) -> None:
        body = json.dumps({"data": [{"id": "model-b"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[int]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), CutServer)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()


def test_a_stream_cut_after_its_200_is_recorded_with_its_error(server: int, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # the unit is already draining: each worker sends one stream, then stops
    (bin_dir / "systemctl").write_text("#!/bin/sh\necho deactivating\n")
    (bin_dir / "systemctl").chmod(0o755)
    out = tmp_path / "race.json"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SGLANG_API_KEY": "k"}
    argv = [sys.executable, str(STREAMS), "127.0.0.1", str(server), "2", "8", "0", "model-b"]
    subprocess.run([*argv, "20", str(out)], env=env, check=True, timeout=60)
    streams = json.loads(out.read_text())["streams"]
    assert len(streams) >= 2  # one a worker, at least (the poll may see the drain late)
    for s in streams:
        assert s["status"] == 200 and s["tokens"] == 1 and s["finish"] is None
        assert s["error"] == "cut: the stream ended after 1 token(s), no finish_reason"
