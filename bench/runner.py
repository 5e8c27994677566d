"""One benchmark run: pre-flight checks, then per cell: prompts, flush, warm-up, measure, record;
then the greedy-output check (bench/greedy.py)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import platform
import socket
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from bench import __version__, arrivals, greedy, objective, records
from bench.capacity import CAPACITY_FILE, DEFAULT_MAX_TRIALS, DEFAULT_PRECISION, Search, Slo, Trial
from bench.client import generate_payload, make_session, run_closed_loop, run_open_loop
from bench.conversation import Conversation
from bench.errors import BadArguments, ContextTooLong, ServerError
from bench.metrics import MAX_SEND_LAG_MS, open_loop_summary, summarize
from bench.more_repetitions import MORE_FILE, MoreRule, Step
from bench.progress import Progress
from bench.prompt_sets import CHAT_CATEGORIES, Prompt, PromptBuilder, chat_pool
from bench.server import Server, metrics_diff, redact
from bench.workload import NATURAL, Cell, build_matrix, num_label, open_loop_requests

RECORD_FORMAT = 1


@dataclass
class RunConfig:
    url: str
    out: Path
    contexts: list[int]
    concurrencies: list[int]  # closed-loop cells (may be empty beside request_rates)
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
    # output_len natural: the cap of a request without its own max_tokens
    natural_max_tokens: int = 1024
    # the greedy-output check: prompts answered at temperature 0 (0: none) and their cap
    greedy_prompts: int = 16
    greedy_max_tokens: int = 64
    greedy_concurrency: int = 1  # >1 only to measure the check's own noise floor
    # open-loop cells (bench/workload.py): requests per second, the gaps' gamma shape, the cap
    # on requests in flight, seconds of arrivals per cell, the p99 send lag of a valid cell
    request_rates: list[float] = field(default_factory=list)
    burstiness: float = 1.0
    max_concurrency: int | None = None
    open_loop_seconds: float = 60.0
    max_send_lag_ms: float = MAX_SEND_LAG_MS
    # capacity searches (bench/capacity.py): one per context x output x category x repetition
    slo: Slo | None = None
    capacity_start_rate: float = 1.0
    capacity_precision: float = DEFAULT_PRECISION
    capacity_max_trials: int = DEFAULT_MAX_TRIALS
    capacity_max_seconds: float = 3600.0
    # more repetitions while the point may be the best (bench/more_repetitions.py); None: none
    more: MoreRule | None = None

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
    line = (
        f"{s['completed']}/{s['requests']} ok, {s['failed']} failed, {s['incomplete']} incomplete; "
        f"{s['output_throughput']:.1f} out tok/s; TTFT {med('ttft_ms')} ms, "
        f"TPOT {med('tpot_ms')} ms, ITL {med('itl_ms')} ms"
        + (f"; accept length {al:.3f}" if al else "")
    )
    if "request_rate" in s:
        achieved = s["achieved_rate"]
        line += f"; {s['request_rate']:g} req/s offered, " + (
            "- achieved" if achieved is None else f"{achieved:.2f} achieved"
        )
        if not s["valid"]:
            line += f"; INVALID: {s['invalid_reason']}"
    return line


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

    # warm-up: closed loop, all at once (capped like the cell)
    warm_width = (cell.max_concurrency or cell.warmup) if cell.open_loop else cell.concurrency
    warm, _, _ = (
        await run_closed_loop(
            server.session,
            url,
            server.headers,
            payloads(0, cell.warmup, "w"),
            warm_width,
        )
        if cell.warmup
        else ([], 0.0, 0)
    )
    # the connections the cell starts with; an open-loop cell without a cap opens more as
    # needed (a connect to a local server costs a fraction of a millisecond of send lag)
    await server.open_connections(
        min(cell.num_requests, cell.max_concurrency or math.ceil(cell.request_rate or 0))
        if cell.open_loop
        else cell.concurrency
    )
    before = await server.scrape_metrics()
    progress.start_cell(cell.cell_id, cell.num_requests)
    cpu0 = time.process_time()
    if cell.request_rate is not None:
        offsets = arrivals.schedule(
            cell.num_requests,
            cell.request_rate,
            cell.burstiness or 1.0,
            cell.arrival_seed(cfg.seed),
        )
        results, duration, peak = await run_open_loop(
            server.session,
            url,
            server.headers,
            measured,
            offsets,
            cell.max_concurrency,
            progress.update,
        )
    else:
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
    if cell.request_rate is not None:
        summary.update(
            open_loop_summary(
                results,
                cell.request_rate,
                cell.burstiness or 1.0,
                cell.max_concurrency,
                cfg.max_send_lag_ms,
            )
        )
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


def capacity_templates(cfg: RunConfig) -> list[Cell]:
    """One open-loop cell per capacity search, at the search's start rate."""
    if cfg.slo is None:
        return []
    return _cells(cfg, cfg.repetitions, [], [cfg.capacity_start_rate])


def capacity_id(template: Cell) -> str:
    """The search's name: its cells' id with `capacity` for the rate."""
    return template.cell_id.replace(f"-rate{num_label(template.request_rate or 0)}", "-capacity", 1)


def _new_search(cfg: RunConfig) -> Search:
    return Search(cfg.capacity_start_rate, cfg.capacity_precision, cfg.capacity_max_trials)


def _judge(cfg: RunConfig, cell: Cell, summary: dict[str, Any]) -> Trial:
    assert cfg.slo is not None and cell.request_rate is not None
    valid = bool(summary.get("valid", True))
    attained = cfg.slo.attainment(records.load_requests(cfg.out, cell.cell_id))
    return Trial(
        cell.request_rate, cell.cell_id, attained, valid and attained >= cfg.slo.share, valid
    )


def _replay(cfg: RunConfig, template: Cell, search: Search, fresh: set[str]) -> Cell | None:
    """Advances `search` over the trials already recorded (all but `fresh` ones are rerun under
    --redo); returns the first trial cell left to measure, None when the search is over."""
    while (rate := search.next_rate()) is not None:
        # A rate measured again (after a trial the client fell behind in) is the search's next
        # repetition of that cell: its own id, clear of the other searches' (one a repetition).
        again = search.attempts(rate)
        cell = replace(
            template,
            request_rate=rate,
            num_requests=open_loop_requests(rate, cfg.open_loop_seconds, cfg.min_requests),
            repetition=template.repetition + again * cfg.repetitions,
        )
        redo = cfg.redo and cell.cell_id not in fresh
        if redo or not records.is_done(cfg.out, cell.cell_id, cfg.redo_failed):
            return cell
        recorded = json.loads(records.record_path(cfg.out, cell.cell_id).read_text())
        search.add(_judge(cfg, cell, recorded["summary"]))
    return None


def _result(cfg: RunConfig, template: Cell, search: Search) -> dict[str, Any]:
    assert cfg.slo is not None
    return {"capacity_id": capacity_id(template), "slo": cfg.slo.to_dict(), **search.result()}


async def run_capacity(
    server: Server,
    builder: PromptBuilder,
    cfg: RunConfig,
    progress: Progress,
    templates: list[Cell],
) -> list[dict[str, Any]]:
    """Every capacity search to its end; capacity.json in `cfg.out` after each trial."""
    assert cfg.slo is not None
    done: list[dict[str, Any]] = []
    for template in templates:
        search = _new_search(cfg)
        fresh: set[str] = set()
        start = time.monotonic()
        while (cell := _replay(cfg, template, search, fresh)) is not None:
            if time.monotonic() - start > cfg.capacity_max_seconds:
                search.stopped = f"stopped at the bound of {cfg.capacity_max_seconds:g} s"
                break
            # a search's trials are known one at a time
            progress.extend(1, cell.num_requests)
            record = await run_cell(
                server, builder, cell, cfg, progress, await server.server_info()
            )
            fresh.add(cell.cell_id)
            search.add(_judge(cfg, cell, record["summary"]))
            records.write_summaries(cfg.out)
        result = _result(cfg, template, search)
        done.append(result)
        progress.log(
            f"{result['capacity_id']}: capacity {result['capacity']} req/s; {result['reason']}"
        )
        records.write_json(cfg.out / CAPACITY_FILE, done)
    return done


def requests_digest(payloads: list[dict[str, Any]]) -> str:
    h = hashlib.sha256()
    for p in payloads:
        body = {k: v for k, v in p.items() if k != "rid"}
        h.update(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())
    return h.hexdigest()


def greedy_pool(cfg: RunConfig) -> list[Conversation]:
    """The greedy set's conversations: the user's when the run has a dataset, else built-in."""
    return cfg.dataset if cfg.dataset else chat_pool("chat", [])


def _matrix(cfg: RunConfig, repetitions: int) -> list[Cell]:
    if cfg.slo is not None and not cfg.concurrencies and not cfg.request_rates:
        return []
    return _cells(cfg, repetitions, cfg.concurrencies, cfg.request_rates)


def _cells(
    cfg: RunConfig, repetitions: int, concurrencies: list[int], rates: list[float]
) -> list[Cell]:
    """The run's matrix with these loads (build_matrix of the rest of `cfg`)."""
    return build_matrix(
        cfg.contexts,
        concurrencies,
        cfg.output_lens,
        cfg.categories,
        repetitions,
        cfg.requests_per_slot,
        cfg.min_requests,
        cfg.warmup,
        rates,
        cfg.burstiness,
        cfg.max_concurrency,
        cfg.open_loop_seconds,
    )


def _first_done(cfg: RunConfig) -> bool:
    """Whether every cell of the run's first repetition is recorded."""
    return all(records.is_done(cfg.out, c.cell_id) for c in _matrix(cfg, 1))


def _values(cfg: RunConfig) -> tuple[float, ...]:
    rule = cfg.more
    assert rule is not None
    recs = records.load_records(cfg.out)
    return objective.run_values(rule.objective, cfg.out, recs, rule.slo_ttft_ms, rule.slo_tpot_ms)


def _clearly_out(cfg: RunConfig, progress: Progress) -> bool:
    """MoreRule.first after the first repetition: True when the point is clearly out and the run
    stops there (no more repetitions on this server); the decision goes to more.json. Decided
    again from the records when a run resumes, so it decides the same."""
    rule = cfg.more
    assert rule is not None
    step = rule.first(_values(cfg))
    progress.log(f"after the first repetition, {step.mean:.4g}: {step.why}")
    if not step.more:
        records.write_json(cfg.out / MORE_FILE, rule.record([step]))
    return not step.more


async def run_more(
    server: Server, builder: PromptBuilder, cfg: RunConfig, progress: Progress
) -> list[dict[str, Any]]:
    """bench/more_repetitions.py: after the run's own repetitions, as many again while the rule
    says the point may still be the best, up to its cap; every decision in more.json."""
    rule = cfg.more
    assert rule is not None
    steps: list[Step] = []
    written: list[dict[str, Any]] = []
    while True:
        values = _values(cfg)
        step = rule.step(values)
        steps.append(step)
        records.write_json(cfg.out / MORE_FILE, rule.record(steps))
        progress.log(f"after {step.repetitions} repetition(s), {step.mean:.4g}: {step.why}")
        upto = min(len(values) + cfg.repetitions, rule.max_repetitions)
        new = [
            c
            for c in _matrix(cfg, upto)
            if c.repetition >= len(values) and not records.is_done(cfg.out, c.cell_id)
        ]
        if not step.more or not new:
            return written
        progress.extend(len(new), sum(c.num_requests for c in new))
        for cell in new:
            cell_info = await server.server_info()
            written.append(await run_cell(server, builder, cell, cfg, progress, cell_info))
            records.write_summaries(cfg.out)


async def run_benchmark(cfg: RunConfig) -> list[dict[str, Any]]:
    """Run every cell not yet recorded (all with `redo`); returns the records written."""
    cells = _matrix(cfg, cfg.repetitions)
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
    templates = capacity_templates(cfg)
    # each search replayed over its recorded trials; none due: all replayed to their end
    replayed = [(t, _new_search(cfg)) for t in templates]
    capacity_due = any(_replay(cfg, t, search, set()) is not None for t, search in replayed)
    if not pending and not greedy_due and not capacity_due:
        # nothing to measure: do not touch the server at all; the recorded trials of a capacity
        # search are judged against this run's SLO
        if templates:
            records.write_json(cfg.out / CAPACITY_FILE, [_result(cfg, *r) for r in replayed])
        for cell in cells:
            progress.skip(cell.cell_id, cell.num_requests)
        records.write_summaries(cfg.out)
        progress.finish()
        return written
    # an open-loop cell without a cap may have any number in flight: no pool limit then
    widest = max(c.concurrency for c in [*cells, *templates])
    uncapped = any(c.open_loop and not c.max_concurrency for c in [*cells, *templates])
    async with make_session(
        None if uncapped else widest, cfg.request_timeout, cfg.idle_timeout
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
        # the first repetition may put the point clearly out (MoreRule.first): judged once,
        # before the second repetition's first cell
        judged, out = cfg.more is None, False
        for cell in cells:
            if cell.repetition > 0 and not judged:
                judged = True
                out = _first_done(cfg) and _clearly_out(cfg, progress)
            if cell.cell_id not in pending or out:
                progress.skip(cell.cell_id, cell.num_requests)
                continue
            # server_info per cell: the configuration may have changed under a long run
            cell_info = await server.server_info()
            written.append(await run_cell(server, builder, cell, cfg, progress, cell_info))
            records.write_summaries(cfg.out)
        if cfg.more is not None and cells and not out:
            written += await run_more(server, builder, cfg, progress)
        if templates:
            await run_capacity(server, builder, cfg, progress, templates)
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
