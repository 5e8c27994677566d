"""A real headless Chromium (Debian's), driven over the DevTools protocol, for tests that open a
page the project writes: what its console said, every request it made, what a script on it
returns, a screenshot. Standard library only: a WebSocket client of the few lines the protocol
needs (text frames, masked from the client, no extensions)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

BINARIES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str | None:
    for name in BINARIES:
        found = shutil.which(name)
        if found:
            return found
    return None


class _WebSocket:
    def __init__(self, url: str, timeout: float) -> None:
        rest = url.removeprefix("ws://")
        hostport, _, path = rest.partition("/")
        host, _, port = hostport.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the browser closed the DevTools connection")
            head += chunk
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status:
            raise ConnectionError(f"DevTools WebSocket refused: {status!r}")
        self.buffer = head.split(b"\r\n\r\n", 1)[1]

    def send(self, text: str) -> None:
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        if n < 126:
            header = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 1 << 16:
            header = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            header = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(header + mask + masked)

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("the browser closed the DevTools connection")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def receive(self) -> str:
        message = b""
        while True:
            first, second = self._read(2)
            n = second & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read(8))[0]
            payload = self._read(n)
            opcode = first & 0x0F
            if opcode == 0x8:
                raise ConnectionError("the browser closed the DevTools connection")
            if opcode in (0x0, 0x1, 0x2):
                message += payload
                if first & 0x80:
                    return message.decode()


class Browser:
    """One headless Chromium with one page. `events` holds every protocol event received."""

    def __init__(self, binary: str, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        self.proc = subprocess.Popen(
            [
                binary,
                "--headless=new",
                "--no-sandbox",  # CI runs the suite as root
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-port=0",
                f"--user-data-dir={self.profile}",
                "--window-size=1280,900",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not port_file.is_file() or not port_file.read_text().strip():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                self.close()
                raise RuntimeError(f"Chromium did not start: {err[-2000:]}")
            time.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout) as r:
            targets = json.load(r)
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = _WebSocket(page["webSocketDebuggerUrl"], timeout)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.receive())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result") or {})
            if "method" in message:
                self.events.append(message)

    def wait_for(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            for event in self.events:
                if event["method"] == method:
                    return event
            message = json.loads(self.ws.receive())
            if "method" in message:
                self.events.append(message)
        raise TimeoutError(f"no {method} within {self.timeout} s")

    def open(self, path: Path) -> None:
        self.call("Page.navigate", url=path.resolve().as_uri())
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def errors(self) -> list[str]:
        """The console's errors and the page's uncaught exceptions, and its warnings about a
        blocked resource (a Content-Security-Policy violation is one)."""
        out = []
        for e in self.events:
            p = e["params"]
            if e["method"] == "Runtime.exceptionThrown":
                out.append(json.dumps(p["exceptionDetails"])[:500])
            elif e["method"] == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
                out.append(json.dumps(p["args"])[:500])
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
                out.append(f"{p['entry']['source']}: {p['entry']['text']}"[:500])
        return out

    def requests(self) -> list[str]:
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e["method"] == "Network.requestWillBeSent"
        ]

    def sections(self) -> list[str]:
        """The page's second-level headings, in order."""
        return list(
            self.evaluate(
                "Array.from(document.querySelectorAll('main h2')).map(h => h.textContent)"
            )
        )

    def images(self) -> list[tuple[str, bool]]:
        """Each image's alt text and whether it decoded."""
        found = self.evaluate(
            "Array.from(document.images).map(i => [i.alt, i.complete && i.naturalWidth > 0])"
        )
        return [(str(alt), bool(ok)) for alt, ok in found]

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(data["data"]))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def check_page(page: Path, screenshot: Path | None = None) -> dict[str, Any]:
    """What a test asks of a report page, as one JSON-able answer: the console's errors, the
    requests beyond the file itself and data: URIs, the second-level headings, whether every
    image decoded."""
    binary = find_chromium()
    if binary is None:
        raise RuntimeError("no Chromium (make deps installs it)")
    b = Browser(binary)
    try:
        b.open(page)
        own = page.resolve().as_uri()
        out = {
            "errors": b.errors(),
            "requests": [u for u in b.requests() if u != own and not u.startswith("data:")],
            "sections": b.sections(),
            "images": b.images(),
        }
        if screenshot is not None:
            b.screenshot(screenshot)
        return out
    finally:
        b.close()


if __name__ == "__main__":
    # python tests/browser.py PAGE [SCREENSHOT]: check_page's answer as JSON (molecule scenarios
    # open the report.html a real sweep wrote with it)
    import sys

    shot = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    print(json.dumps(check_page(Path(sys.argv[1]), shot)))
