"""A small HTTP/1.1 server on asyncio streams: keep-alive, JSON bodies, chunked streaming."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, urlsplit

MAX_BODY = 64 * 1024 * 1024


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else {}


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    content_type: str | None = "application/json"  # None: no header (Starlette's bare Response)
    headers: dict[str, str] = field(default_factory=dict)


def json_response(obj: Any, status: int = 200) -> Response:
    return Response(status, json.dumps(obj).encode())


def text_response(text: str, status: int = 200) -> Response:
    return Response(status, text.encode(), "text/plain; charset=utf-8")


def bare_response(status: int = 200, text: str = "") -> Response:
    """Like Starlette's `Response(content, status_code)` without a media type: no content-type
    header (SGLang's /health, /ready and /flush_cache answer so)."""
    return Response(status, text.encode(), None)


class Connection:
    """One client connection; handlers stream through it with start_stream/send/end_stream."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.keep_alive = True

    @property
    def closed(self) -> bool:
        return self.writer.transport.is_closing()

    def _head(self, status: int, headers: dict[str, str]) -> bytes:
        lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        if not self.keep_alive:
            lines.append("connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    def send_response(self, resp: Response) -> None:
        headers = {"content-length": str(len(resp.body))}
        if resp.content_type is not None:
            headers["content-type"] = resp.content_type
        headers.update(resp.headers)
        self.writer.write(self._head(resp.status, headers) + resp.body)

    def start_stream(self, status: int = 200, content_type: str = "text/event-stream") -> None:
        headers = {
            "content-type": f"{content_type}; charset=utf-8",
            "transfer-encoding": "chunked",
            "cache-control": "no-cache",
        }
        self.writer.write(self._head(status, headers))

    def send(self, data: bytes) -> bool:
        """Writes one chunk; False when the client has gone."""
        if self.writer.transport.is_closing():
            return False
        self.writer.write(b"%x\r\n%b\r\n" % (len(data), data))
        return True

    def end_stream(self) -> None:
        if not self.writer.transport.is_closing():
            self.writer.write(b"0\r\n\r\n")


# A handler either returns a Response or streams through the Connection and returns None.
Handler = Callable[[Request, Connection], Awaitable[Response | None]]


async def _read_request(reader: asyncio.StreamReader) -> tuple[Request, str] | None:
    line = await reader.readline()
    if not line:
        return None
    try:
        method, target, version = line.decode("latin-1").strip().split(" ", 2)
    except ValueError:
        raise ValueError("bad request line") from None
    headers: dict[str, str] = {}
    while True:
        h = await reader.readline()
        if h in (b"\r\n", b"\n", b""):
            break
        name, _, value = h.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    body = b""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readline()
                break
            parts.append(await reader.readexactly(size))
            await reader.readline()
        body = b"".join(parts)
    elif "content-length" in headers:
        length = int(headers["content-length"])
        if length > MAX_BODY:
            raise ValueError("body too large")
        body = await reader.readexactly(length)
    url = urlsplit(target)
    query = dict(parse_qsl(url.query))
    return Request(method.upper(), url.path, query, headers, body), version


async def serve_connection(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, handler: Handler
) -> None:
    conn = Connection(writer)
    try:
        while conn.keep_alive:
            try:
                parsed = await _read_request(reader)
            except (ValueError, asyncio.IncompleteReadError):
                conn.keep_alive = False
                conn.send_response(json_response({"detail": "Bad Request"}, 400))
                break
            if parsed is None:
                break
            req, version = parsed
            connection = req.headers.get("connection", "").lower()
            conn.keep_alive = connection != "close" and not (
                version == "HTTP/1.0" and connection != "keep-alive"
            )
            resp = await handler(req, conn)
            if resp is not None:
                conn.send_response(resp)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


def bind_socket(host: str, port: int) -> socket.socket:
    """Binds like uvicorn (SO_REUSEADDR); raises OSError [Errno 98] when the port is taken."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, _, _, _, addr = infos[0]
    # An explicit IPPROTO_TCP makes asyncio set TCP_NODELAY on accepted connections, as uvicorn on
    # uvloop does for SGLang; without it Nagle holds the first streamed chunk for milliseconds.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(addr)
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.setblocking(False)
    return sock
