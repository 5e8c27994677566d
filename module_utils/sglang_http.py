# A minimal JSON client for the SGLang server's HTTP API (GET, POST of JSON) whose answers and
# error texts never carry the request headers, so never the API key.
# Used by library/sglang_ready.py. Runs on the target host: standard library only.
from __future__ import annotations

import dataclasses
import json
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request
from http.client import HTTPException
from typing import Any

MAX_BODY = 8 * 1024 * 1024


def check_api_key(key: str, where: str) -> None:
    """Refuse a key that cannot be an HTTP header value before any request is made.

    http.client would raise ValueError("Invalid header value b'Bearer <key>\\n'"): the key, escaped
    so that no redaction of the raw key would match, in an exception text. This message never
    names the value.
    """
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in key):
        raise ValueError(
            f"{where} contains a control character (a stray newline?) and cannot be sent in an "
            "HTTP header"
        )
    try:
        key.encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError(
            f"{where} contains a character outside Latin-1 and cannot be sent in an HTTP header"
        ) from None


@dataclasses.dataclass(frozen=True)
class HttpResponse:
    status: int | None
    body: bytes = b""
    error: str | None = None

    def json(self) -> Any:
        try:
            return json.loads(self.body.decode("utf-8", "replace"))
        except ValueError:
            return None

    def describe(self) -> str:
        if self.status is None:
            return self.error or "no answer"
        snippet = self.body[:200].decode("utf-8", "replace").strip()
        return f"HTTP {self.status}" + (f": {snippet}" if snippet else "")


def _is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


class HttpClient:
    """Minimal JSON client; messages never carry request headers."""

    def __init__(self, base_url: str, api_key: str | None, validate_certs: bool) -> None:
        self.base_url = base_url.rstrip("/")
        self._headers = {"Accept": "application/json"}
        self.set_api_key(api_key)
        handlers: list[urllib.request.BaseHandler] = []
        if base_url.startswith("https") and not validate_certs:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            handlers.append(urllib.request.HTTPSHandler(context=context))
        host = urllib.parse.urlsplit(base_url).hostname or ""
        if _is_loopback(host):
            # A proxy cannot reach this host's loopback; an http_proxy in the environment would
            # turn every poll into a proxy error.
            handlers.append(urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)

    def set_api_key(self, api_key: str | None) -> None:
        """Use this key from now on (api_key_from_unit reads it after the client exists)."""
        self._headers.pop("Authorization", None)
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"

    def get(self, path: str, timeout: float) -> HttpResponse:
        return self._send(
            urllib.request.Request(self.base_url + path, headers=self._headers), timeout
        )

    def post_json(self, path: str, payload: Any, timeout: float) -> HttpResponse:
        headers = dict(self._headers, **{"Content-Type": "application/json"})
        data = json.dumps(payload).encode()
        request = urllib.request.Request(self.base_url + path, data=data, headers=headers)
        return self._send(request, timeout)

    def _send(self, request: urllib.request.Request, timeout: float) -> HttpResponse:
        try:
            with self._opener.open(request, timeout=timeout) as resp:
                return HttpResponse(resp.status, resp.read(MAX_BODY))
        except urllib.error.HTTPError as exc:
            try:
                body = exc.read(MAX_BODY)
            except (OSError, HTTPException):
                body = b""
            return HttpResponse(exc.code, body)
        except urllib.error.URLError as exc:
            return HttpResponse(None, error=_describe_network_error(exc.reason, timeout))
        except (OSError, HTTPException) as exc:
            return HttpResponse(None, error=_describe_network_error(exc, timeout))


def _describe_network_error(reason: Any, timeout: float) -> str:
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, (socket.timeout, TimeoutError)):
        return f"no answer within {timeout:.1f} s"
    if isinstance(reason, (ConnectionResetError, HTTPException, BrokenPipeError)):
        return f"connection dropped by the server ({type(reason).__name__})"
    return str(reason)
