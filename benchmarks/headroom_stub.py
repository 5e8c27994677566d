"""The stub server of benchmarks/client_headroom.py (its `--serve` process): a raw asyncio HTTP
server that answers SGLang's streaming /generate and the OpenAI-style streaming /v1/completions
with a few tiny SSE chunks, almost at once, and GET /v1/models."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any


class _StubProtocol(asyncio.Protocol):
    """HTTP/1.1 keep-alive, chunked streaming answers; one request at a time per connection."""

    def __init__(self, chunks: int, gap_s: float) -> None:
        self.chunks = chunks
        self.gap_s = gap_s
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end].decode("latin-1").split("\r\n")
            length = 0
            for line in head[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if len(self.buf) < end + 4 + length:
                return
            body = self.buf[end + 4 : end + 4 + length]
            self.buf = self.buf[end + 4 + length :]
            method, path = head[0].split(" ")[:2]
            self.answer(method, path, body)

    def answer(self, method: str, path: str, body: bytes) -> None:
        if method == "GET" and path == "/v1/models":
            return self.json({"object": "list", "data": [{"id": "stub", "object": "model"}]})
        if method == "POST" and path in ("/generate", "/v1/completions"):
            req = json.loads(body)
            events = (_generate_events if path == "/generate" else _completion_events)(
                req, self.chunks
            )
            return self.stream(events)
        return self.json({"error": f"no {method} {path} here"}, 404)

    def json(self, obj: Any, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        reason = "OK" if status == 200 else "Not Found"
        head = f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
        self.write(head.encode() + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)

    def stream(self, events: list[bytes]) -> None:
        self.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        loop = asyncio.get_running_loop()
        for i, event in enumerate(events):
            loop.call_later(self.gap_s * i, self.write, b"%x\r\n%s\r\n" % (len(event), event))
        loop.call_later(self.gap_s * len(events), self.write, b"0\r\n\r\n")

    def write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)


def _sse(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _split(total: int, chunks: int) -> list[int]:
    """Cumulative token counts of `chunks` events that end at `total`."""
    n = max(1, min(chunks, total))
    return [math.ceil(total * (i + 1) / n) for i in range(n)]


def _generate_events(req: dict[str, Any], chunks: int) -> list[bytes]:
    total = int(req["sampling_params"]["max_new_tokens"])
    prompt = len(req.get("input_ids") or []) or 1
    out = []
    for ct in _split(total, chunks):
        finish = {"type": "length", "length": total} if ct == total else None
        meta = {
            "id": req.get("rid") or "stub",
            "prompt_tokens": prompt,
            "completion_tokens": ct,
            "cached_tokens": 0,
            "finish_reason": finish,
        }
        out.append(_sse({"text": " tok" * ct, "output_ids": [7] * ct, "meta_info": meta}))
    return [*out, b"data: [DONE]\n\n"]


def _completion_events(req: dict[str, Any], chunks: int) -> list[bytes]:
    total = int(req.get("max_tokens") or 1)
    out, last = [], 0
    for ct in _split(total, chunks):
        done = ct == total
        usage = {"prompt_tokens": 1, "completion_tokens": ct, "total_tokens": ct + 1}
        choice = {
            "index": 0,
            "text": " tok" * (ct - last),
            "finish_reason": "length" if done else None,
        }
        event = {"id": "cmpl-stub", "object": "text_completion", "model": "stub"}
        out.append(_sse({**event, "choices": [choice], "usage": usage if done else None}))
        last = ct
    return [*out, b"data: [DONE]\n\n"]


def serve(port: int, chunks: int, gap_ms: float) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: _StubProtocol(chunks, gap_ms / 1000), "127.0.0.1", port, backlog=4096
        )
        async with server:
            await server.serve_forever()

    asyncio.run(main())
