"""Everything the benchmark asks the server besides the measured requests: /server_info,
/flush_cache, /metrics (scrape and diff), token counting, and the pre-flight checks."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any, overload

import aiohttp

from bench.errors import AuthError, ServerError, ServerUnreachable

REDACTED = "<redacted>"
_API_KEY_FLAG = re.compile(r"(--(?:admin-)?api-key(?:=|\s+))(\"[^\"]*\"|'[^']*'|\S+)")
_METRIC_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


@overload
def redact(obj: str) -> str: ...
@overload
def redact(obj: dict[str, Any]) -> dict[str, Any]: ...
@overload
def redact(obj: list[Any]) -> list[Any]: ...
@overload
def redact(obj: Any) -> Any: ...
def redact(obj: Any) -> Any:
    """Copy of `obj` without secrets: any key containing "api_key" and `--api-key VALUE` in
    command lines (string or argv list)."""
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            if "api_key" in str(k).lower() and v is not None:
                out[k] = REDACTED
            else:
                out[k] = redact(v)
        return out
    if isinstance(obj, list):
        items = [redact(v) for v in obj]
        for i in range(len(items) - 1):
            if isinstance(items[i], str) and items[i] in ("--api-key", "--admin-api-key"):
                items[i + 1] = REDACTED
        return [
            re.sub(r"^(--(?:admin-)?api-key=).*", r"\1" + REDACTED, v) if isinstance(v, str) else v
            for v in items
        ]
    if isinstance(obj, str):
        return _API_KEY_FLAG.sub(lambda m: m.group(1) + REDACTED, obj)
    return obj


def parse_prometheus(text: str) -> dict[str, float]:
    """`name{labels}` -> value for every sample line of a Prometheus text exposition."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _METRIC_LINE.match(line)
        if not m:
            continue
        try:
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
        except ValueError:
            continue
    return out


def metrics_diff(before: dict[str, float], after: dict[str, float]) -> dict[str, Any]:
    """Server-side view of one cell: counters and histogram parts as after - before, gauges as
    their value after the cell. Only `sglang:` series; buckets left out to keep records small."""
    delta: dict[str, float] = {}
    gauges: dict[str, float] = {}
    for key, val in after.items():
        base = key.split("{", 1)[0]
        if not key.startswith("sglang:") or "_bucket" in base:
            continue
        if base.endswith(("_total", "_count", "_sum")):
            delta[key] = val - before.get(key, 0.0)
        else:
            gauges[key] = val
    derived: dict[str, float] = {}
    gen = _sum_prefix(delta, "sglang:generation_tokens_total")
    ver = _sum_prefix(delta, "sglang:spec_verify_calls_total")
    if gen is not None and ver:
        derived["accept_length"] = gen / ver
    for hist in ("time_to_first_token_seconds", "inter_token_latency_seconds"):
        s = _sum_prefix(delta, f"sglang:{hist}_sum")
        c = _sum_prefix(delta, f"sglang:{hist}_count")
        if s is not None and c:
            derived[f"{hist}_mean"] = s / c
    return {"delta": delta, "gauges_after": gauges, "derived": derived}


def _sum_prefix(d: dict[str, float], name: str) -> float | None:
    vals = [v for k, v in d.items() if k == name or k.startswith(name + "{")]
    return sum(vals) if vals else None


def config_vocab_size(cfg: Any) -> int | None:
    """vocab_size of a Hugging Face config.json (top level, or its language model's part)."""
    if not isinstance(cfg, dict):
        return None
    for part in (cfg, cfg.get("text_config"), cfg.get("llm_config"), cfg.get("language_config")):
        if isinstance(part, dict) and isinstance(part.get("vocab_size"), int):
            return int(part["vocab_size"])
    return None


GET_RETRY_PAUSES_S = (0.2, 1.0)  # a dropped GET is sent again after these pauses


class Server:
    """Control-plane calls to one SGLang server. `session` is shared with the load client."""

    def __init__(self, session: aiohttp.ClientSession, url: str, api_key: str | None) -> None:
        self.session = session
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    async def _request(self, method: str, path: str, **kw: Any) -> tuple[int, str]:
        # a GET the server dropped after it was sent (a keep-alive connection the server closed
        # as the request went out: SGLang's uvicorn closes idle ones after 5 s, and a burst of
        # load leaves many in the pool) is sent again after a pause, by which the pool has let
        # go of the closed connections; a refused or timed out one, and any other method, is not
        pauses = GET_RETRY_PAUSES_S if method == "GET" else ()
        for attempt in range(len(pauses) + 1):
            try:
                async with self.session.request(
                    method, self.url + path, headers=self.headers, **kw
                ) as resp:
                    return resp.status, await resp.text()
            except (aiohttp.ClientConnectionError, asyncio.TimeoutError, OSError) as e:
                dropped = isinstance(
                    e, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)
                ) and not isinstance(e, aiohttp.ClientConnectorError)
                if not dropped or attempt == len(pauses):
                    raise ServerUnreachable(
                        f"cannot reach {self.url}{path}: {e or type(e).__name__}"
                    ) from e
                await asyncio.sleep(pauses[attempt])
        raise AssertionError("unreachable")  # the loop returns or raises

    async def _json(self, method: str, path: str, **kw: Any) -> tuple[int, Any]:
        status, body = await self._request(method, path, **kw)
        if status in (401, 403):
            raise AuthError(
                f"{self.url}{path} answered {status}: wrong or missing API key (--api-key)"
            )
        try:
            return status, json.loads(body) if body else None
        except ValueError:
            return status, body

    async def server_info(self) -> dict[str, Any]:
        """/server_info (older servers: /get_server_info), secrets redacted."""
        for path in ("/server_info", "/get_server_info"):
            status, data = await self._json("GET", path)
            if status == 200 and isinstance(data, dict):
                return redact(data)
        raise ServerError(f"{self.url} has no usable /server_info (last status {status})")

    async def context_length(self, info: dict[str, Any]) -> int | None:
        """Longest prompt + output the server accepts, from the server itself: its /server_info
        (`info`), else the model cards of /v1/models."""
        for key in ("context_length", "max_model_len"):
            if isinstance(info.get(key), int):
                return int(info[key])
        status, data = await self._json("GET", "/v1/models")
        if status == 200 and isinstance(data, dict):
            for card in data.get("data") or []:
                if isinstance(card, dict) and isinstance(card.get("max_model_len"), int):
                    return int(card["max_model_len"])
        return None

    async def generate_once(
        self, payload: dict[str, Any], timeout_s: float | None = None
    ) -> dict[str, Any]:
        """Non-streaming /generate; raises on any non-200 or when it takes over `timeout_s`."""
        kw: dict[str, Any] = {"json": payload}
        if timeout_s is not None:
            kw["timeout"] = aiohttp.ClientTimeout(total=timeout_s)
        try:
            status, data = await self._json("POST", "/generate", **kw)
        except ServerUnreachable as e:
            raise ServerError(f"/generate did not answer: {e}") from e
        if status != 200 or not isinstance(data, dict):
            raise ServerError(f"/generate answered {status}: {str(data)[:300]}")
        return data

    async def count_prompt_tokens(self, text: str) -> int:
        """The server's own token count for `text` (a 1-token generation reports it)."""
        data = await self.generate_once(
            {"text": text, "sampling_params": {"max_new_tokens": 1, "temperature": 0}}
        )
        return int(data["meta_info"]["prompt_tokens"])

    async def tokenize(self, texts: list[str]) -> list[list[int]] | None:
        """Token ids from the server's /tokenize (SGLang >= 0.5.x); None when it has none."""
        status, data = await self._json(
            "POST", "/tokenize", json={"prompt": texts, "add_special_tokens": False}
        )
        if status != 200 or not isinstance(data, dict) or "tokens" not in data:
            return None
        tokens = data["tokens"]
        if len(texts) == 1 and tokens and isinstance(tokens[0], int):
            tokens = [tokens]
        return [list(map(int, t)) for t in tokens]

    async def render_chat(self, messages: list[dict[str, str]]) -> list[int]:
        """The ids the server's chat template gives `messages`, as /v1/chat/completions would
        feed the model (SGLang's /tokenize renders `messages` from 0.5.12 on)."""
        status, data = await self._json("POST", "/tokenize", json={"messages": messages})
        if status == 200 and isinstance(data, dict) and isinstance(data.get("tokens"), list):
            return [int(t) for t in data["tokens"]]
        raise ServerError(
            f"{self.url}/tokenize does not render chat messages (HTTP {status}: "
            f"{str(data)[:200]}); SGLang does from 0.5.12 on. The chat-shaped categories (chat, "
            "dataset) need it; the raw ones (random, code, prose, math) do not"
        )

    async def vocab_size(self) -> int:
        """The served model's vocabulary size, from the `config.json` in the `model_path` the
        server reports (/model_info, else /server_info), read on this host. The fallback of
        the random category when the server has no /tokenize; raises ServerError naming what
        is missing."""
        path: str | None = None
        for endpoint in ("/model_info", "/get_model_info"):
            status, data = await self._json("GET", endpoint)
            if status == 200 and isinstance(data, dict) and data.get("model_path"):
                path = str(data["model_path"])
                break
        if path is None:
            path = (await self.server_info()).get("model_path")
        why = "the server has no /tokenize, and the model's vocabulary size is unknown here"
        hint = "the random category needs one of them; the text categories do not"
        if not path:
            raise ServerError(f"{why}: the server reports no model_path ({hint})")
        cfg_file = Path(path) / "config.json"
        try:
            cfg = json.loads(cfg_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ServerError(f"{why}: cannot read {cfg_file}: {e} ({hint})") from e
        size = config_vocab_size(cfg)
        if size is None:
            raise ServerError(f"{why}: {cfg_file} has no vocab_size ({hint})")
        return size

    async def flush_cache(self, timeout_s: float = 60.0) -> bool:
        """POST /flush_cache. SGLang refuses (400) while requests are running: retry until idle."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            status, _ = await self._request("POST", "/flush_cache")
            if status in (401, 403):
                raise AuthError(f"/flush_cache answered {status}: wrong API key")
            if status == 200:
                return True
            if status == 404 or loop.time() > deadline:
                return False
            await asyncio.sleep(0.5)

    async def open_connections(self, n: int) -> None:
        """Fill the keep-alive pool with `n` connections (n requests in flight at once each take
        one), so the measured requests do not pay TCP set-up inside their TTFT."""
        await asyncio.gather(*(self._request("GET", "/v1/models") for _ in range(n)))

    async def scrape_metrics(self) -> dict[str, float] | None:
        """Parsed /metrics, or None when the server runs without --enable-metrics."""
        try:
            status, body = await self._request("GET", "/metrics")
        except ServerUnreachable:  # a server that died mid-cell: the cell is still recorded
            return None
        if status != 200:
            return None
        return parse_prometheus(body)
