"""One benchmark run: pre-flight checks, then per cell: prompts, flush, warm-up, measure, record;
then the greedy-output check (bench/greedy.py)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import platform
import socket
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import __version__, greedy, records
from bench.client import generate_payload, make_session, run_closed_loop
from bench.conversation import Conversation
from bench.errors import BadArguments, ContextTooLong, ServerError
from bench.metrics import summarize
from bench.progress import Progress
from bench.prompt_sets import CHAT_CATEGORIES, Prompt, PromptBuilder, chat_pool
from bench.server import Server, metrics_diff, redact
from bench.workload import NATURAL, Cell, build_matrix

RECORD_FORMAT = 1


@dataclass
class RunConfig:
    url: str
    out: Path
    contexts: list[int]
    concurrencies: list[int]
    output_lens: list[int] = field(default_factory=lambda: [256])
    categories: list[str] = field(default_factory=lambda: ["random"])
    repetitions: int = 1
    requests_per_slot: int = 4
    min_requests: int = 8
    warmup: int = 1
    temperature: float = 0.0
    seed: int = 0
    api_key: str | None = None
    redo: bool = False
    redo_failed: bool = False
    request_timeout: float = 1800.0
    idle_timeout: float = 300.0
    live: bool | None = None
    # The user's conversations (category dataset, and the greedy set when given).
    dataset: list[Conversation] = field(default_factory=list)
    dataset_digest: str | None = None
    # output_len natural: the cap of a request without its own max_tokens
    natural_max_tokens: int = 1024
    # the greedy-output check: prompts answered at temperature 0 (0: none) and their cap
    greedy_prompts: int = 16
    greedy_max_tokens: int = 64
    greedy_concurrency: int = 1  # >1 only to measure the check's own noise floor

    def public(self) -> dict[str, Any]:
        d = asdict(self)
        d["out"] = str(self.out)
        d["api_key"] = "<redacted>" if self.api_key else None
        d["dataset"] = len(self.dataset)
        return d

    def max_new_tokens(self, output_len: int, prompt: Prompt) -> int:
        if output_len != NATURAL:
            return output_len
        return prompt.max_tokens or self.natural_max_tokens

    @property
    def longest_output(self) -> int:
        """The most tokens a request may generate: a fixed length, or a natural output's cap
        (its conversation's max_tokens, else natural_max_tokens)."""
        caps = [o for o in self.output_lens if o != NATURAL]
        if NATURAL in self.output_lens:
            for category in self.categories:
                if category in CHAT_CATEGORIES:
                    pool = chat_pool(category, self.dataset)
                    caps += [c.max_tokens or self.natural_max_tokens for c in pool]
                else:
                    caps.append(self.natural_max_tokens)
        return max(caps)


def host_facts() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "bench_version": __version__,
        "argv": redact(list(sys.argv)),
    }


async def preflight(server: Server, cfg: RunConfig) -> dict[str, Any]:
    """Every check that can fail before load: reachability, API key, context length, a working
    /generate. Returns the (redacted) /server_info."""
    info = await server.server_info()
    limit = await server.context_length(info)
    if limit is not None:
        # a natural context is checked per request when it is rendered (requests_for)
        worst = max(cfg.contexts) + cfg.longest_output
        if worst > limit:
            raise ContextTooLong(
                f"context {max(cfg.contexts)} + output {cfg.longest_output} = {worst} tokens "
                f"exceeds the server's context length {limit}"
            )
    probe = await server.generate_once(
        {"text": "The capital city of France is", "sampling_params": {"max_new_tokens": 1}},
        timeout_s=cfg.idle_timeout,
    )
    if "meta_info" not in probe:
        raise ServerError(f"/generate answered without meta_info: {str(probe)[:200]}")
    return info


def _short(s: dict[str, Any]) -> str:
    def med(k: str) -> str:
        v = (s.get(k) or {}).get("median")
        return "-" if v is None else f"{v:.1f}"

    al = s.get("accept_length")
    return (
        f"{s['completed']}/{s['requests']} ok, {s['failed']} failed, {s['incomplete']} incomplete; "
        f"{s['output_throughput']:.1f} out tok/s; TTFT {med('ttft_ms')} ms, "
        f"TPOT {med('tpot_ms')} ms, ITL {med('itl_ms')} ms"
        + (f"; accept length {al:.3f}" if al else "")
    )


async def run_cell(
    server: Server,
    builder: PromptBuilder,
    cell: Cell,
    cfg: RunConfig,
    progress: Progress,
    server_info: dict[str, Any],
) -> dict[str, Any]:
    seed = cell.seed(cfg.seed)
    prompts = await builder.build(
        cell.category, cell.context, cell.warmup + cell.num_requests, seed
    )
    # Counting and tokenizing requests fill the prefix cache; flush after building prompts.
    flushed = await server.flush_cache()
    url = server.url + "/generate"
    natural = cell.output_len == NATURAL

    def payloads(start: int, n: int, tag: str) -> list[dict[str, Any]]:
        return [
            generate_payload(
                prompts[start + i].payload_part(),
                cfg.max_new_tokens(cell.output_len, prompts[start + i]),
                cfg.temperature,
                f"{cell.cell_id}-{tag}{i}-{seed % 10**8}",
                ignore_eos=not natural,
            )
            for i in range(n)
        ]

    measured = payloads(cell.warmup, cell.num_requests, "m")

    warm, _, _ = (
        await run_closed_loop(
            server.session,
            url,
            server.headers,
            payloads(0, cell.warmup, "w"),
            cell.concurrency,
        )
        if cell.warmup
        else ([], 0.0, 0)
    )
    await server.open_connections(cell.concurrency)
    before = await server.scrape_metrics()
    progress.start_cell(cell.cell_id, cell.num_requests)
    cpu0 = time.process_time()
    results, duration, peak = await run_closed_loop(
        server.session,
        url,
        server.headers,
        measured,
        cell.concurrency,
        progress.update,
    )
    after = await server.scrape_metrics()
    for r, p in zip(results, prompts[cell.warmup :], strict=True):
        r.source = p.source
    summary = summarize(results, duration)
    summary["peak_in_flight"] = peak
    # client CPU seconds while measuring: near `duration_s` means the client was the limit
    summary["client_cpu_s"] = time.process_time() - cpu0
    summary["warmup_failed"] = sum(1 for r in warm if not r.ok)
    record = {
        "format": RECORD_FORMAT,
        "cell": cell.to_dict(),
        "params": cfg.public(),
        "prompt_method": builder.method.get(cell.category),
        "prompt_tokens_target": cell.context or None,
        # what was sent, but the request ids: equal digests, equal requests
        "requests_digest": requests_digest(measured),
        "cache_flushed": flushed,
        "time": dt.datetime.now(dt.timezone.utc).isoformat(),
        "host": host_facts(),
        "server_info": server_info,
        "summary": summary,
        "server_metrics": metrics_diff(before, after) if before and after else None,
    }
    records.write_cell(cfg.out, cell.cell_id, record, [r.to_dict() for r in results])
    progress.end_cell(_short(summary))
    return record


def requests_digest(payloads: list[dict[str, Any]]) -> str:
    h = hashlib.sha256()
    for p in payloads:
        body = {k: v for k, v in p.items() if k != "rid"}
        h.update(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())
    return h.hexdigest()


def greedy_pool(cfg: RunConfig) -> list[Conversation]:
    """The greedy set's conversations: the user's when the run has a dataset, else built-in."""
    return cfg.dataset if cfg.dataset else chat_pool("chat", [])


async def run_benchmark(cfg: RunConfig) -> list[dict[str, Any]]:
    """Run every cell not yet recorded (all with `redo`); returns the records written."""
    cells = build_matrix(
        cfg.contexts,
        cfg.concurrencies,
        cfg.output_lens,
        cfg.categories,
        cfg.repetitions,
        cfg.requests_per_slot,
        cfg.min_requests,
        cfg.warmup,
    )
    cfg.out.mkdir(parents=True, exist_ok=True)
    if "dataset" in cfg.categories and not cfg.dataset:
        raise BadArguments("category dataset needs --dataset FILE")
    pending = {
        c.cell_id
        for c in cells
        if cfg.redo or not records.is_done(cfg.out, c.cell_id, cfg.redo_failed)
    }
    progress = Progress(len(cells), sum(c.num_requests for c in cells), live=cfg.live)
    written: list[dict[str, Any]] = []
    greedy_params = (
        greedy.params_of(greedy_pool(cfg), cfg.greedy_prompts, cfg.greedy_max_tokens)
        if cfg.greedy_prompts
        else None
    )
    greedy_due = greedy_params is not None and (
        cfg.redo or not greedy.is_done(cfg.out, greedy_params)
    )
    if not pending and not greedy_due:  # nothing to measure: do not touch the server at all
        for cell in cells:
            progress.skip(cell.cell_id, cell.num_requests)
        records.write_summaries(cfg.out)
        progress.finish()
        return written
    async with make_session(
        max(cfg.concurrencies), cfg.request_timeout, cfg.idle_timeout
    ) as session:
        server = Server(session, cfg.url, cfg.api_key)
        await preflight(server, cfg)
        builder = PromptBuilder(server, seed=cfg.seed, dataset=cfg.dataset)
        # fails here, before any load, when the random category cannot be built
        if any(c.category == "random" and c.cell_id in pending for c in cells):
            await builder.random_vocabulary()
        # ... and when the server cannot render chat-shaped prompts
        if greedy_due or any(c.category in CHAT_CATEGORIES for c in cells if c.cell_id in pending):
            await builder.chat.natural(greedy_pool(cfg)[0])
        for cell in cells:
            if cell.cell_id not in pending:
                progress.skip(cell.cell_id, cell.num_requests)
                continue
            # server_info per cell: the configuration may have changed under a long run
            cell_info = await server.server_info()
            written.append(await run_cell(server, builder, cell, cfg, progress, cell_info))
            records.write_summaries(cfg.out)
        if greedy_due:
            await server.flush_cache()
            await greedy.run(
                server,
                builder.chat,
                greedy_pool(cfg),
                cfg.greedy_prompts,
                cfg.greedy_max_tokens,
                cfg.out,
                cfg.greedy_concurrency,
            )
    records.write_summaries(cfg.out)
    progress.finish()
    return written
