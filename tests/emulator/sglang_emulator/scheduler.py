"""Continuous batching loop: prefill batches interrupt decoding, decode steps serve the batch."""

from __future__ import annotations

import asyncio
import collections
import random
import time
import uuid
import zlib
from collections.abc import Callable
from typing import Any

from . import tokenizer
from .content import OutputStream, Plan, prompt_key
from .logs import log
from .perf_model import PerfModel, SpecShape
from .prefix_cache import PrefixCache
from .settings import Settings
from .stats import ServerStats

# Called after each chunk; returns False when the client went away (the request is aborted).
ChunkCallback = Callable[["GenRequest", str, bool], bool]
MAX_TOTAL_TOKENS = 1_000_000
RECORDS_KEPT = 4096
CATCH_UP_S = 0.005


class GenRequest:
    def __init__(
        self,
        prompt_ids: list[int],
        max_new_tokens: int,
        category: str,
        seed: int,
        rid: str | None = None,
        is_health: bool = False,
        ignore_eos: bool = False,
        diverge: float = 0.0,
        diverge_after: int = 4,
    ) -> None:
        self.arrival = time.time()
        self.arrival_loop = asyncio.get_running_loop().time()
        self.rid = rid or uuid.uuid4().hex
        self.prompt_ids = prompt_ids
        self.max_new = max_new_tokens
        self.category = category
        self.ignore_eos = ignore_eos
        # The output: a function of the seed and the prompt ids only (content.py).
        key = prompt_key(seed, prompt_ids)
        plan = Plan(key, category, diverge, diverge_after)
        self.natural_len = plan.natural_len
        self.out = OutputStream(category, plan.start, plan.natural_len - 1, plan.diverge_at)
        self.diverged = plan.diverge_at is not None
        # The last token: <|im_end|> ends the turn unless ignore_eos (SGLang's
        # Req._check_token_based_finish), max_new_tokens caps it either way.
        self.limit = max_new_tokens if ignore_eos else min(max_new_tokens, plan.natural_len)
        # Accepted drafts per verify step: deterministic given the request (not its id).
        self.rng = random.Random(zlib.crc32(b"%d" % max_new_tokens, key))
        self.is_health = is_health
        self.internal = False  # the server's own warm-up: not in /emulator/requests
        self.cached_tokens = 0
        self.first_token: float | None = None
        self.finish: float | None = None
        self.chunks: list[list[float]] = []
        self.verify_ct = 0
        self.correct_drafts = 0
        self.histogram: list[int] = []
        self.fixed_carry = 0.0
        self.on_chunk: ChunkCallback | None = None
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.aborted = False

    @property
    def completion_tokens(self) -> int:
        return len(self.out.ids)

    @property
    def context(self) -> int:
        return len(self.prompt_ids) + len(self.out.ids)

    @property
    def finished(self) -> bool:
        return self.finish is not None

    @property
    def stopped(self) -> bool:
        """Ended its turn: the last output token is the matched <|im_end|>."""
        return not self.ignore_eos and self.completion_tokens == self.natural_len

    @property
    def finish_reason(self) -> dict[str, Any] | None:
        """SGLang's meta_info finish_reason: FINISH_MATCHED_TOKEN or FINISH_LENGTH
        (managers/schedule_batch.py:284, update_finish_state)."""
        if self.finish is None:
            return None
        if self.stopped:
            return {"type": "stop", "matched": tokenizer.EOS}
        return {"type": "length", "length": self.max_new}

    def record(self) -> dict[str, Any]:
        return {
            "rid": self.rid,
            "arrival": self.arrival,
            "first_token": self.first_token,
            "chunks": self.chunks,
            "finish": self.finish,
            "prompt_tokens": len(self.prompt_ids),
            "completion_tokens": self.completion_tokens,
            "spec_verify_ct": self.verify_ct,
            "cached_tokens": self.cached_tokens,
            "category": self.category,
            "finish_reason": self.finish_reason,
        }


class Scheduler:
    def __init__(
        self,
        settings: Settings,
        spec: SpecShape,
        args: dict[str, Any],
        stats: ServerStats,
        cache: PrefixCache,
    ) -> None:
        self.settings = settings
        self.spec = spec
        self.model = PerfModel(settings, spec)
        self.max_running = int(args["max_running_requests"])
        self.prefill_budget = int(args["chunked_prefill_size"])
        self.stats = stats
        self.cache = cache
        self.waiting: collections.deque[GenRequest] = collections.deque()
        self.running: list[GenRequest] = []
        self.hung: list[GenRequest] = []
        self.records: collections.deque[GenRequest] = collections.deque(maxlen=RECORDS_KEPT)
        self.served = 0
        self._wake = asyncio.Event()
        self._clock = 0.0  # loop time when the last modelled step or prefill ends
        self._on_time = False
        self.last_output = 0.0  # like SGLang's last_receive_tstamp
        self._tp_window: collections.deque[tuple[float, int]] = collections.deque()

    # -- admission -------------------------------------------------------------------------
    def _hangs_now(self) -> bool:
        fault = self.settings.fault
        return fault.kind == "hang_after" and self.served >= fault.hang_after

    def submit(self, req: GenRequest) -> None:
        if self._hangs_now():
            self.hung.append(req)  # never scheduled: the server looks alive but serves nothing
            return
        if not req.is_health:
            self.served += 1
        self._record(req)
        self.waiting.append(req)
        self._wake.set()

    def _log_prefill(self, batch: list[GenRequest], new_tokens: int, cached: int) -> None:
        log(
            f"Prefill batch. #new-seq: {len(batch)}, #new-token: {new_tokens}, "
            f"#cached-token: {cached}, #running-req: {len(self.running)}, "
            f"#queue-req: {len(self.waiting)}"
        )

    def _record(self, req: GenRequest) -> None:
        if not (req.is_health or req.internal):
            self.records.append(req)

    @property
    def busy(self) -> bool:
        return bool(self.waiting or self.running)

    # -- loop ------------------------------------------------------------------------------
    async def _sleep(self, seconds: float, not_before: float | None = None) -> None:
        """Sleeps one modelled step or prefill batch. Back to back with the last one, which woke
        on time (under CATCH_UP_S late), it starts where that one ended: the emulator's own
        work in between (writing a step's chunks, reading new requests) costs no modelled time,
        as SGLang's overlap scheduler hides its CPU work, so the server's busy time is the sum
        of the model's step and prefill times. Never before `not_before` (loop time: a
        prefill's last arrival). After idling, or once behind, it starts now."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        start = now
        if self._on_time:
            start = self._clock if not_before is None else max(self._clock, not_before)
        self._clock = start + seconds
        delay = self._clock - now
        await asyncio.sleep(delay if delay > 0 else 0)
        self._on_time = loop.time() - self._clock < CATCH_UP_S

    async def run(self) -> None:
        while True:
            if not self.waiting and not self.running:
                self._on_time = False
                self._wake.clear()
                await self._wake.wait()
                continue
            if self.waiting and len(self.running) < self.max_running:
                await self._prefill()
            if self.running:
                await self._decode()

    async def _prefill(self) -> None:
        batch: list[GenRequest] = []
        new_tokens = cached_total = 0
        while self.waiting and len(self.running) + len(batch) < self.max_running:
            req = self.waiting[0]
            cached = self.cache.match(req.prompt_ids)
            need = len(req.prompt_ids) - cached
            if batch and new_tokens + need > self.prefill_budget:
                break
            self.waiting.popleft()
            if req.aborted:
                continue
            req.cached_tokens = cached
            new_tokens += need
            cached_total += cached
            batch.append(req)
        if not batch:
            return
        self._log_prefill(batch, new_tokens, cached_total)
        await self._sleep(
            self.model.prefill_seconds(new_tokens, cached_total),
            not_before=max(r.arrival_loop for r in batch),
        )
        now = time.time()
        for req in batch:
            self.cache.insert(req.prompt_ids)
            self.stats.prompt_tokens += len(req.prompt_ids)
            if req.limit <= 0:
                self._finish(req, now)
                continue
            self.running.append(req)
            self._emit(req, 1, now)

    async def _decode(self) -> None:
        running = self.running
        total_ctx = 0
        for r in running:
            total_ctx += r.context
        await self._sleep(self.model.step_seconds(len(running), total_ctx))
        now = time.time()
        spec = self.spec
        fixed = self.settings.fixed_accept
        emitted = 0
        for req in list(running):
            if req.aborted:
                running.remove(req)
                continue
            if not spec.enabled:
                n, correct = 1, 0
            elif fixed is not None:
                req.fixed_carry += fixed
                n = max(1, int(req.fixed_carry))
                req.fixed_carry -= n
                correct = n - 1
            else:
                correct = self.model.sample_step(req.rng, req.category, req.context)
                n = correct + 1
            n = min(n, req.limit - req.completion_tokens)  # max_new_tokens or end of turn
            if spec.enabled:
                correct = min(correct, n - 1) if n > 0 else 0
                req.verify_ct += 1
                req.correct_drafts += correct
                hist = req.histogram
                while len(hist) <= correct:
                    hist.append(0)
                hist[correct] += 1
                st = self.stats
                st.verify_calls += 1
                st.spec_verify_calls += 1
                st.spec_accepted_tokens += n
                st.spec_correct_drafts += correct
                st.spec_proposed_drafts += spec.proposed_per_step
            emitted += n
            self._emit(req, n, now)
        self._note_throughput(now, emitted)

    def _note_throughput(self, now: float, tokens: int) -> None:
        window = self._tp_window
        window.append((now, tokens))
        while window and now - window[0][0] > 2.0:
            window.popleft()
        span = now - window[0][0]
        if span > 0:
            self.stats.last_gen_throughput = sum(t for _, t in window) / span

    # -- output ----------------------------------------------------------------------------
    def _emit(self, req: GenRequest, n: int, now: float) -> None:
        self.last_output = now
        delta = req.out.extend(n)
        st = self.stats
        st.generation_tokens += n
        if req.first_token is None:
            req.first_token = now
            st.ttft.observe(now - req.arrival)
        else:
            st.itl.observe((now - req.chunks[-1][0]) / n, n)
        req.chunks.append([now, n])
        finished = req.completion_tokens >= req.limit
        if finished:
            self._finish(req, now)
        if req.on_chunk is not None and not req.on_chunk(req, delta, finished):
            self.abort(req)
        if (finished or req.aborted) and req in self.running:
            self.running.remove(req)

    def _finish(self, req: GenRequest, now: float) -> None:
        req.finish = now
        self.stats.e2e.observe(now - req.arrival)
        if not req.done.done():
            req.done.set_result(None)

    def abort(self, req: GenRequest) -> None:
        req.aborted = True
        if req in self.running:
            self.running.remove(req)
        if not req.done.done():
            req.done.set_result(None)

    def token_usage(self) -> float:
        return sum(r.context for r in self.running) / MAX_TOTAL_TOKENS
