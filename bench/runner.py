"""One benchmark run: pre-flight checks, then per cell: prompts, flush, warm-up, measure, record."""

from __future__ import annotations

import datetime as dt
import os
import platform
import socket
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import __version__, records
from bench.client import generate_payload, make_session, run_closed_loop
from bench.errors import ContextTooLong, ServerError
from bench.metrics import summarize
from bench.progress import Progress
from bench.prompt_sets import PromptBuilder
from bench.server import Server, metrics_diff, redact
from bench.workload import Cell, build_matrix

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

    def public(self) -> dict[str, Any]:
        d = asdict(self)
        d["out"] = str(self.out)
        d["api_key"] = "<redacted>" if self.api_key else None
        return d


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
        worst = max(cfg.contexts) + max(cfg.output_lens)
        if worst > limit:
            raise ContextTooLong(
                f"context {max(cfg.contexts)} + output {max(cfg.output_lens)} = {worst} tokens "
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

    def payloads(start: int, n: int, tag: str) -> list[dict[str, Any]]:
        return [
            generate_payload(
                prompts[start + i].payload_part(),
                cell.output_len,
                cfg.temperature,
                f"{cell.cell_id}-{tag}{i}-{seed % 10**8}",
            )
            for i in range(n)
        ]

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
        payloads(cell.warmup, cell.num_requests, "m"),
        cell.concurrency,
        progress.update,
    )
    after = await server.scrape_metrics()
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
        "prompt_tokens_target": cell.context,
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
    pending = {
        c.cell_id
        for c in cells
        if cfg.redo or not records.is_done(cfg.out, c.cell_id, cfg.redo_failed)
    }
    progress = Progress(len(cells), sum(c.num_requests for c in cells), live=cfg.live)
    written: list[dict[str, Any]] = []
    if not pending:  # nothing to measure: do not touch the server at all
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
        builder = PromptBuilder(server, seed=cfg.seed)
        # fails here, before any load, when the random category cannot be built
        if any(c.category == "random" and c.cell_id in pending for c in cells):
            await builder.random_vocabulary()
        for cell in cells:
            if cell.cell_id not in pending:
                progress.skip(cell.cell_id, cell.num_requests)
                continue
            # server_info per cell: the configuration may have changed under a long run
            cell_info = await server.server_info()
            written.append(await run_cell(server, builder, cell, cfg, progress, cell_info))
            records.write_summaries(cfg.out)
    records.write_summaries(cfg.out)
    progress.finish()
    return written
