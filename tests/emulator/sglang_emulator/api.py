"""Routes: SGLang's native and OpenAI-compatible endpoints, plus /emulator/requests."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from typing import Any

from . import category, chat_template, metrics, tokenizer
from .chat_template import TemplateError, ValidationFailure
from .http import Connection, Request, Response, bare_response, json_response
from .logs import log
from .perf_model import SpecShape
from .phases import Phase
from .prefix_cache import PrefixCache
from .scheduler import GenRequest, Scheduler
from .settings import Settings
from .stats import ServerStats

NOT_FOUND = json_response({"detail": "Not Found"}, 404)
WARMUP_HEADER = "x-sglang-emulator-warmup"
AUTH_FREE_PREFIXES = ("/health", "/ready", "/metrics", "/emulator/")
_dumps = json.dumps

# SGLang 0.5.23's /model_info "embedding" block for a generation model (recorded from the real
# server; tests/fixtures/real_sglang/0.5.23/requests.json).
_BCG_BATCH_SIZES = [4 * i for i in range(1, 9)] + list(range(48, 257, 16))
_BCG_BATCH_SIZES += list(range(288, 513, 32)) + list(range(576, 1025, 64))
_BCG_BATCH_SIZES += list(range(1280, 4097, 256))
EMBEDDING_INFO: dict[str, Any] = {
    "family": "none",
    "task": "none",
    "execution": "none",
    "attention": "none",
    "pooling": "model_defined",
    "normalize": False,
    "postprocessor": "none",
    "tokenizer_special_tokens": "model_default",
    "supports_dimensions": False,
    "supports_token_embeddings": False,
    "supports_multimodal": False,
    "requires_embedding_flag": False,
    "auto_enable_embedding": False,
    "bcg_eligibility": "disabled",
    "safe_disable_kv_cache": False,
    "safe_disable_radix_cache": False,
    "safe_disable_chunked_prefill": False,
    "enabled": False,
    "matryoshka_dimensions": [],
    "bcg": {
        "prefill_backend": "disabled",
        "enabled": False,
        "capture_token_budget": 4096,
        "capture_batch_sizes": _BCG_BATCH_SIZES,
    },
    "cache": {
        "kv_cache_disabled": False,
        "radix_cache_disabled": False,
        "chunked_prefill_disabled": False,
    },
}


# SGLang 0.5.23's scheduler_info "hicache_object_layout" without a hierarchical cache (recorded).
HICACHE_DISABLED: dict[str, Any] = {
    "enabled": False,
    "backend": None,
    "page_size": 1,
    "hicache_object_layout": {"pools": []},
    "reason": "Hierarchical cache is disabled",
}


# FastAPI's RequestValidationError names the endpoint: http_server.py's path and the line of the
# endpoint's first decorator, per release (0.5.23: the recording's generate_request at 928).
HTTP_SERVER_PY = (
    "/opt/sglang/venv/lib/python3.11/site-packages/sglang/srt/entrypoints/http_server.py"
)
ENDPOINT_LINES: dict[tuple[int, ...], dict[str, int]] = {
    (0, 5, 11): {"openai_v1_tokenize": 1524, "openai_v1_chat_completions": 1490},
    (0, 5, 15): {"openai_v1_tokenize": 1648, "openai_v1_chat_completions": 1614},
    (0, 5, 19): {"openai_v1_tokenize": 1768, "openai_v1_chat_completions": 1734},
    (0, 5, 23): {"openai_v1_tokenize": 1906, "openai_v1_chat_completions": 1870},
}


class RequestError(ValueError):
    pass


class Emulator:
    """The serving state of one emulated SGLang process."""

    def __init__(self, settings: Settings, args: dict[str, Any], launch_command: str) -> None:
        self.settings = settings
        self.args = args
        self.launch_command = launch_command
        self.phase = Phase.LOADING
        self.startup_time: dict[str, Any] = {}
        self.model_config: dict[str, Any] = {}
        self.model_context_length = 0  # from config.json; used when --context-length is unset
        self.spec = SpecShape.from_args(args, settings.ddtree_max_topk)
        self.stats = ServerStats()
        self.cache = PrefixCache(enabled=not args.get("disable_radix_cache"))
        self.scheduler: Scheduler | None = None
        self._scheduler_task: asyncio.Task[None] | None = None
        self._warned_health_env = False
        self.unhealthy = False  # a health check timed out (SGLang's ServerStatus.UnHealthy)
        self.roles = chat_template.generic_roles(settings.release)  # of chat messages

    def start_scheduler(self) -> None:
        self.scheduler = Scheduler(self.settings, self.spec, self.args, self.stats, self.cache)
        self._scheduler_task = asyncio.get_running_loop().create_task(self.scheduler.run())

    @property
    def sched(self) -> Scheduler:
        assert self.scheduler is not None
        return self.scheduler

    @property
    def context_len(self) -> int:
        return int(self.args["context_length"] or self.model_context_length)

    @property
    def model_name(self) -> str:
        return str(self.args["served_model_name"])

    # -- dispatch --------------------------------------------------------------------------
    async def handle(self, req: Request, conn: Connection) -> Response | None:
        api_key = self.args.get("api_key")
        if api_key and not req.path.startswith(AUTH_FREE_PREFIXES):
            auth = req.headers.get("authorization", "")
            scheme, _, token = auth.partition(" ")
            if scheme.lower() != "bearer" or not secrets.compare_digest(token, api_key):
                return json_response({"error": "Unauthorized"}, 401)
        route = ROUTES.get(req.path)
        if route is None:
            return NOT_FOUND
        methods, name = route
        if req.method not in methods:
            return json_response({"detail": "Method Not Allowed"}, 405)
        try:
            return await getattr(self, name)(req, conn)
        except RequestError as e:  # SGLang's /generate: {"error": {"message": ...}}
            return json_response({"error": {"message": str(e)}}, 400)
        except (ValueError, TypeError) as e:  # malformed JSON: FastAPI's validation error
            return self._openai_error(f"1 validation error: {e}", error_type="Bad Request")

    # -- health and readiness --------------------------------------------------------------
    def _starting_or_draining(self) -> bool:
        return self.phase in (Phase.WARMUP, Phase.DRAINING)

    async def health(self, req: Request, conn: Connection) -> Response:
        if self.phase == Phase.DRAINING:
            log("Health check request received during shutdown. Returning 503.")
            return bare_response(503)
        if self._starting_or_draining():
            return bare_response(503)
        if req.path == "/health":
            warning = self.settings.health_endpoint_generation_warning
            if warning and not self._warned_health_env:
                log(f"UserWarning: {warning}")  # Python shows a warning once per place
                self._warned_health_env = True
            if not self.settings.health_endpoint_generation:
                return bare_response(200)
        return await self._health_generate()

    async def _health_generate(self) -> Response:
        tic = time.time()
        probe = GenRequest([0], 1, "chat", self.settings.seed, is_health=True)
        probe.rid = f"HEALTH_CHECK_{probe.rid}"
        self.sched.submit(probe)
        timeout = self.settings.health_check_timeout
        # Like SGLang: poll once a second for any output newer than the start of the check.
        while time.time() < tic + timeout:
            await asyncio.sleep(min(1.0, timeout))
            if self.sched.last_output > tic or probe.finished:
                self.unhealthy = False  # SGLang sets ServerStatus.Up again (http_server.py:784)
                return bare_response(200)
        log(
            "Health check failed. Server couldn't get a response from detokenizer for last "
            f"{timeout} seconds."
        )
        self.unhealthy = True
        return bare_response(503)

    async def ready(self, req: Request, conn: Connection) -> Response:
        if not self.settings.has_ready_endpoint:
            return NOT_FOUND
        # TokenizerManager.is_ready (0.5.23 managers/tokenizer_manager.py:729-734): started, not
        # shutting down, and no failed health check since the last good one.
        ready = self.phase == Phase.READY and not self.unhealthy
        return bare_response(200 if ready else 503)

    # -- information -----------------------------------------------------------------------
    async def models(self, req: Request, conn: Connection) -> Response:
        card = {
            "id": self.model_name,
            "object": "model",
            "created": int(time.time()),
            "owned_by": "sglang",
            "root": self.model_name,
            "parent": None,
            "max_model_len": self.context_len,
        }
        return json_response({"object": "list", "data": [card]})

    async def model_info(self, req: Request, conn: Connection) -> Response:
        cfg = self.model_config
        return json_response(
            {
                "model_path": self.args["model_path"],
                "served_model_name": self.model_name,
                "tokenizer_path": self.args["tokenizer_path"],
                "is_generation": True,
                "preferred_sampling_params": None,
                "weight_version": "default",
                "load_format": "auto",
                "reasoning_parser": None,
                "tool_call_parser": None,
                "disaggregation_mode": "null",
                "has_image_understanding": False,
                "has_audio_understanding": False,
                "model_type": cfg.get("model_type"),
                "architectures": cfg.get("architectures"),
                **({"embedding": EMBEDDING_INFO} if self.settings.version_at_least_0_5_23 else {}),
            }
        )

    def internal_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "last_gen_throughput": self.stats.last_gen_throughput,
            "memory_usage": {
                "weight": 73.5,
                "kvcache": 40.2,
                "startup_available": 139.52,
                "token_capacity": 1_000_000,
                "token_capacity_swa": None,
                "graph": {
                    "prefill": 0.0,
                    "decode": 3.2,
                    "target_verify": 0.0,
                    "draft_prefill": 0.0,
                    "draft_decode": 0.0,
                    "draft_extend": 0.0,
                },
            },
        }
        avg = self.stats.avg_accept_length
        if self.spec.enabled and avg is not None:
            state["avg_spec_accept_length"] = avg
        return state

    async def server_info(self, req: Request, conn: Connection) -> Response:
        if req.path == "/get_server_info":
            log(
                "Endpoint '/get_server_info' is deprecated and will be removed in a future "
                "version. Please use '/server_info' instead."
            )
        return json_response(self.server_info_body())

    def server_info_body(self) -> dict[str, Any]:
        """The ServerArgs fields, then the keys the version's http_server `server_info` adds:
        0.5.11 (http_server.py:640) scheduler_info, internal_states, version; kv_events from
        0.5.13; startup_time from 0.5.17; launch_command from 0.5.20; frontend from 0.5.21;
        from 0.5.22 through build_server_info (utils/common.py), hicache_object_layout in
        0.5.23's scheduler_info (managers/scheduler.py:1950)."""
        r = self.settings.release
        info = dict(self.args)
        if r >= (0, 5, 20):
            info["launch_command"] = self.launch_command
        # The scheduler's get_init_info (managers/scheduler.py)
        info["status"] = "ready"
        info["max_total_num_tokens"] = 1_000_000
        info["max_req_input_len"] = self.context_len - 1
        if r >= (0, 5, 17):
            info["startup_time"] = self.startup_time
        if r >= (0, 5, 23):
            info["hicache_object_layout"] = HICACHE_DISABLED
        if r >= (0, 5, 22):
            info["kv_events"] = None
        info["internal_states"] = [self.internal_state()]
        info["version"] = self.settings.version_string
        if (0, 5, 13) <= r < (0, 5, 22):
            info["kv_events"] = None
        if r >= (0, 5, 21):
            info["frontend"] = "python"
        return info

    async def flush_cache(self, req: Request, conn: Connection) -> Response:
        if self.sched.busy:
            log("Cache not flushed because there are pending requests.")
            return bare_response(400, "Flush cache failed.\n")
        self.cache.flush()
        self.stats.reset_accept()
        log("Cache flushed successfully!")
        return bare_response(
            200,
            "Cache flushed.\nPlease check backend logs for more details. (When there are "
            "running or waiting requests, the operation will not be performed.)\n",
        )

    def _validation_error(
        self, req: Request, errors: list[dict[str, Any]], endpoint: str
    ) -> Response:
        """FastAPI's RequestValidationError as SGLang's validation_exception_handler answers it
        (0.5.11-0.5.23 http_server.py): 400, ErrorResponse type "Bad Request", the message
        str(exc) (pydantic's errors, then the endpoint) followed by str(exc.errors())."""
        n = len(errors)
        text = f"{n} validation error{'s' if n != 1 else ''}:\n"
        text += "".join(f"  {e!r}\n" for e in errors)
        line = ENDPOINT_LINES.get(self.settings.release, ENDPOINT_LINES[(0, 5, 23)])[endpoint]
        text += f'\n  File "{HTTP_SERVER_PY}", line {line}, in {endpoint}\n'
        text += f"    {req.method} {req.path}"
        return self._openai_error(f"{text} {errors!r}", error_type="Bad Request")

    async def tokenize(self, req: Request, conn: Connection) -> Response:
        """POST /tokenize and /v1/tokenize: {"tokens", "count", "max_model_len"} like SGLang's
        OpenAI-compatible tokenizer endpoint; a list of prompts gives lists. `messages` (0.5.13
        has them, 0.5.11's TokenizeRequest requires `prompt`) are rendered with the chat
        template exactly as for /v1/chat/completions (serving_tokenize._tokenize_chat_request);
        0.5.23 honours add_generation_prompt (earlier releases ignore the unknown field)."""
        body = req.json()
        endpoint = "openai_v1_tokenize"
        if not isinstance(body, dict):
            msg = "Input should be a valid dictionary or object to extract fields from"
            err = {"type": "model_attributes_type", "loc": ("body",), "msg": msg, "input": body}
            return self._validation_error(req, [err], endpoint)
        prompt, messages = body.get("prompt"), body.get("messages")
        rel = self.settings.release
        if rel < (0, 5, 12):  # 0.5.11 protocol.py:1118: prompt required, messages unknown
            messages = None
            if prompt is None:
                err = {"type": "missing", "loc": ("body", "prompt"), "msg": "Field required",
                       "input": body}  # fmt: skip
                return self._validation_error(req, [err], endpoint)
        elif (prompt is None) == (messages is None):  # TokenizeRequest.validate_tokenize_input
            why = "Exactly one of 'prompt' or 'messages' must be provided."
            err = {"type": "value_error", "loc": ("body",), "msg": f"Value error, {why}",
                   "input": body, "ctx": {"error": ValueError(why)}}  # fmt: skip
            return self._validation_error(req, [err], endpoint)
        if messages is not None:
            try:
                msgs = chat_template.parse_messages(messages, self.roles)
                add_gen = body.get("add_generation_prompt") if rel >= (0, 5, 23) else None
                add_gen = None if add_gen is None else bool(add_gen)
                cont = bool(body.get("continue_final_message"))
                if add_gen is False and cont:
                    raise TemplateError(
                        "continue_final_message needs add_generation_prompt to open the "
                        "assistant turn."
                    )
                ids = chat_template.render(msgs, add_gen, cont)
            except ValidationFailure as e:
                return self._validation_error(req, e.errors, endpoint)
            except TemplateError as e:
                return self._openai_error(str(e))
            return json_response(
                {"tokens": ids, "count": len(ids), "max_model_len": self.context_len}
            )
        if isinstance(prompt, str):
            ids = tokenizer.encode(prompt)
            return json_response(
                {"tokens": ids, "count": len(ids), "max_model_len": self.context_len}
            )
        if isinstance(prompt, list) and all(isinstance(p, str) for p in prompt):
            lists = [tokenizer.encode(p) for p in prompt]
            return json_response(
                {
                    "tokens": lists,
                    "count": [len(t) for t in lists],
                    "max_model_len": self.context_len,
                }
            )
        return self._openai_error("prompt must be a string or a list of strings")

    async def metrics(self, req: Request, conn: Connection) -> Response:
        if not self.args.get("enable_metrics"):
            return NOT_FOUND
        body = metrics.render(
            self.stats, self.sched, self.model_name, self.startup_time, self.settings.release
        )
        return Response(200, body.encode(), "text/plain; version=0.0.4; charset=utf-8")

    async def emulator_requests(self, req: Request, conn: Connection) -> Response:
        return json_response({"requests": [r.record() for r in self.sched.records]})

    # -- generation --------------------------------------------------------------------------
    def _new_request(
        self,
        ids: list[int],
        max_new: int,
        rid: str | None = None,
        ignore_eos: bool = False,
    ) -> GenRequest:
        if max_new < 0:
            raise RequestError("max_new_tokens must be at least 0")
        n = len(ids)
        ctx = self.context_len
        if n >= ctx:
            raise RequestError(
                f"The input ({n} tokens) is longer than the model's context length ({ctx} tokens)."
            )
        if n + max_new > ctx:
            raise RequestError(
                "Requested token count exceeds the model's maximum context length of "
                f"{ctx} tokens. You requested a total of {n + max_new} tokens: {n} tokens "
                f"from the input messages and {max_new} tokens for the completion. Please "
                "reduce the number of tokens in the input messages or the completion to fit "
                "within the limit."
            )
        s = self.settings
        return GenRequest(
            ids,
            max_new,
            category.detect(ids),
            s.seed,
            rid=rid,
            ignore_eos=ignore_eos,
            diverge=s.diverge if self.spec.enabled else 0.0,
            diverge_after=s.diverge_after,
        )

    @staticmethod
    def _client_ids(raw: Any) -> list[int]:
        if not isinstance(raw, list) or not all(
            isinstance(t, int) and not isinstance(t, bool) for t in raw
        ):
            raise RequestError("input_ids must be a list of integers")
        return list(raw)

    def meta_info(
        self, r: GenRequest, finished: bool, stream_first: bool = False
    ) -> dict[str, Any]:
        """SGLang's meta_info keys, in 0.5.23's order (managers/tokenizer_manager.py:2507-2620,
        observability/req_time_stats.py), named and present as in the emulated release: timing
        keys only in the last answer, `response_sent_to_client_ts` also in a stream's first
        chunk."""
        rel = self.settings.release
        n = r.completion_tokens
        first = r.first_token or time.time()
        meta: dict[str, Any] = {
            "id": r.rid,
            "finish_reason": r.finish_reason if finished else None,
            "prompt_tokens": len(r.prompt_ids),
            "weight_version": "default",
            # 0.5.11 tokenizer_manager.py:1666 "total_retractions"; renamed in 0.5.12
            ("num_retractions" if rel >= (0, 5, 12) else "total_retractions"): 0,
        }
        if rel >= (0, 5, 22):  # observability/req_time_stats.py:1218-1222
            meta["storage_prefetch_wait"] = 0.0
            meta["storage_staging_wait"] = 0.0
        meta["forward_entry_time"] = r.arrival
        meta["prefill_finished_time"] = first
        meta["queue_time"] = 0.0
        meta["reasoning_tokens"] = 0
        meta["completion_tokens"] = n
        meta["cached_tokens"] = r.cached_tokens
        if finished and rel >= (0, 5, 19):  # utils/weight_versions.py:99 (0.5.19 on)
            meta["weight_versions"] = [{"version": "default", "start": 0, "end": n}]
        meta["cached_tokens_details"] = (
            {"device": r.cached_tokens, "host": 0} if r.cached_tokens else None
        )
        meta["dp_rank"] = None
        if stream_first and not finished:
            meta["response_sent_to_client_ts"] = time.time()
        if finished:
            end = r.finish or time.time()
            meta["e2e_latency"] = end - r.arrival
            meta["request_received_ts"] = r.arrival
            if rel >= (0, 5, 21):
                meta["first_token_latency"] = first - r.arrival
            meta["api_server_dispatch_finish_ts"] = r.arrival
            meta["response_sent_to_client_ts"] = end
            meta["request_finished_ts"] = end
            decode_s = end - first
            meta["decode_throughput"] = (n - 1) / decode_s if n > 1 and decode_s > 0 else 0.0
            if self.spec.enabled and r.verify_ct > 0:
                meta.update(self._spec_meta(r, rel))
        return meta

    def _spec_meta(self, r: GenRequest, rel: tuple[int, ...]) -> dict[str, Any]:
        """TokenizerManager._calculate_spec_decoding_metrics: 0.5.11 names three keys
        differently (tokenizer_manager.py:2102-2118); 0.5.12-0.5.20 write both names (the old
        ones as "backward-compat aliases", 0.5.15 tokenizer_manager.py:2360-2386, 0.5.19
        :2811-2856); 0.5.21 on only the new ones (0.5.23 :3164-3202)."""
        proposed = r.verify_ct * self.spec.proposed_per_step
        correct = r.correct_drafts
        meta: dict[str, Any] = {
            "spec_accept_rate": correct / proposed if proposed else 0.0,
            "spec_accept_length": r.completion_tokens / r.verify_ct,
        }
        if rel < (0, 5, 12):
            meta["spec_accepted_drafts"] = correct
            meta["spec_proposed_drafts"] = proposed
            meta["spec_verify_ct"] = r.verify_ct
            meta["spec_accept_histogram"] = list(r.histogram)
            return meta
        meta["spec_num_correct_drafts"] = correct
        meta["spec_num_proposed_drafts"] = proposed
        meta["spec_verify_ct"] = r.verify_ct
        aliases = rel < (0, 5, 21)
        if aliases:
            meta["spec_accepted_drafts"] = correct
            meta["spec_proposed_drafts"] = proposed
        meta["spec_correct_drafts_histogram"] = list(r.histogram)
        if aliases:
            meta["spec_accept_histogram"] = list(r.histogram)
        return meta

    async def _run(self, r: GenRequest) -> None:
        self.sched.submit(r)
        await r.done

    async def generate(self, req: Request, conn: Connection) -> Response | None:
        body = req.json()
        if not isinstance(body, dict):
            raise RequestError("request body must be a JSON object")
        text, ids = body.get("text"), body.get("input_ids")
        if text is None and ids is None:
            raise RequestError("Either text or input_ids should be provided.")
        if isinstance(text, list) or (ids and isinstance(ids[0], list)):
            raise RequestError("batched /generate requests are not supported by the emulator")
        params = body.get("sampling_params") or {}
        prompt = tokenizer.encode(text or "") if ids is None else self._client_ids(ids)
        r = self._new_request(
            prompt,
            int(params.get("max_new_tokens", 128)),
            body.get("rid"),
            ignore_eos=bool(params.get("ignore_eos", False)),
        )
        r.internal = WARMUP_HEADER in req.headers
        if not body.get("stream"):
            await self._run(r)
            out = {
                "text": r.out.text,
                "output_ids": r.out.ids,
                "meta_info": self.meta_info(r, True),
            }
            return json_response(out)
        conn.start_stream()

        sent = [0]

        def on_chunk(g: GenRequest, delta: str, finished: bool) -> bool:
            chunk = {
                "text": g.out.text,
                "output_ids": g.out.ids,
                "meta_info": self.meta_info(g, finished, stream_first=not sent[0]),
            }
            sent[0] += 1
            return conn.send(b"data: " + _dumps(chunk).encode() + b"\n\n")

        r.on_chunk = on_chunk
        await self._run(r)
        conn.send(b"data: [DONE]\n\n")
        conn.end_stream()
        return None

    # -- OpenAI-compatible -------------------------------------------------------------------
    @staticmethod
    def _openai_error(
        message: str, status: int = 400, error_type: str = "BadRequestError"
    ) -> Response:
        err = {
            "object": "error",
            "message": message,
            "type": error_type,
            "param": None,
            "code": status,
        }
        return json_response(err, status)

    @staticmethod
    def _openai_finish(r: GenRequest) -> dict[str, Any]:
        """choices[].finish_reason and matched_stop: the meta_info finish_reason's type and its
        `matched` (the end-of-turn token id), as serving_chat/serving_completions map them."""
        reason = r.finish_reason or {"type": "length"}
        return {"finish_reason": reason["type"], "matched_stop": reason.get("matched")}

    @staticmethod
    def _usage(r: GenRequest, stream_completion: bool = False) -> dict[str, Any]:
        """SGLang 0.5.23's usage; a /v1/completions stream's usage chunk has no *_details."""
        p, c = len(r.prompt_ids), r.completion_tokens
        if stream_completion:
            return {
                "prompt_tokens": p,
                "total_tokens": p + c,
                "completion_tokens": c,
                "reasoning_tokens": 0,
            }
        return {
            "prompt_tokens": p,
            "total_tokens": p + c,
            "completion_tokens": c,
            "prompt_tokens_details": None,
            "reasoning_tokens": 0,
            "completion_tokens_details": None,
        }

    @staticmethod
    def _metadata(r: GenRequest) -> dict[str, Any]:
        n = r.completion_tokens
        return {
            "weight_version": "default",
            "weight_versions": [{"version": "default", "start": 0, "end": n}],
        }

    def _sglext(self, r: GenRequest, body: dict[str, Any]) -> dict[str, Any] | None:
        # return_spec_tokens_details: from 0.5.19 (entrypoints/openai/protocol.py:356)
        if not body.get("return_spec_tokens_details") or self.settings.release < (0, 5, 19):
            return None
        meta = self.meta_info(r, True)
        if "spec_verify_ct" not in meta:
            return None
        keys = (
            "spec_accept_rate",
            "spec_accept_length",
            "spec_num_correct_drafts",
            "spec_num_proposed_drafts",
            "spec_verify_ct",
            "spec_correct_drafts_histogram",
        )
        details = {k: meta[k] for k in keys}
        details.update(
            {"spec_cap_length": 0.0, "spec_block_accept_length": 0.0, "spec_cap_lens_histogram": []}
        )
        return {"spec_tokens_details": details}

    async def completions(self, req: Request, conn: Connection) -> Response | None:
        return await self._openai(req, conn, chat=False)

    async def chat_completions(self, req: Request, conn: Connection) -> Response | None:
        return await self._openai(req, conn, chat=True)

    async def _openai(self, req: Request, conn: Connection, chat: bool) -> Response | None:
        try:
            body = req.json()
            if not isinstance(body, dict):
                raise RequestError("request body must be a JSON object")
            ignore_eos = bool(body.get("ignore_eos", False))
            if chat:
                msgs = chat_template.parse_messages(body.get("messages"), self.roles)
                ids = chat_template.render(msgs, None, bool(body.get("continue_final_message")))
                max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
                r = self._new_request(ids, int(max_tokens or 128), ignore_eos=ignore_eos)
            else:
                raw = body.get("prompt")
                if isinstance(raw, list) and raw and isinstance(raw[0], int):
                    ids = self._client_ids(raw)
                elif isinstance(raw, str):
                    ids = tokenizer.encode(raw)
                else:
                    raise RequestError("prompt must be a string or a list of token ids")
                max_tokens = body.get("max_tokens")
                r = self._new_request(
                    ids, int(16 if max_tokens is None else max_tokens), ignore_eos=ignore_eos
                )
        except ValidationFailure as e:
            return self._validation_error(req, e.errors, "openai_v1_chat_completions")
        except (RequestError, ValueError, TypeError, AttributeError) as e:
            return self._openai_error(str(e))
        model = body.get("model") or self.model_name
        created = int(time.time())
        obj = "chat.completion" if chat else "text_completion"
        if not body.get("stream"):
            await self._run(r)
            if chat:
                choice: dict[str, Any] = {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": r.out.text,
                        "reasoning_content": None,
                    },
                    "logprobs": None,
                    **self._openai_finish(r),
                }
            else:
                choice = {
                    "index": 0,
                    "text": r.out.text,
                    "logprobs": None,
                    **self._openai_finish(r),
                }
            resp = {
                "id": r.rid,
                "object": obj,
                "created": created,
                "model": model,
                "choices": [choice],
                "usage": self._usage(r),
                "metadata": self._metadata(r),
            }
            ext = self._sglext(r, body)
            if ext:
                resp["sglext"] = ext
            return json_response(resp)

        chunk_obj = "chat.completion.chunk" if chat else "text_completion"
        head = {"id": r.rid, "object": chunk_obj, "created": created, "model": model}
        opts = body.get("stream_options") or {}
        conn.start_stream()

        def sse(payload: dict[str, Any]) -> bool:
            return conn.send(b"data: " + _dumps(payload).encode() + b"\n\n")

        def chat_chunk(delta: dict[str, Any], reason: str | None) -> dict[str, Any]:
            choice = {
                "index": 0,
                "delta": {"reasoning_content": None, **delta},
                "logprobs": None,
                "finish_reason": reason,
                "matched_stop": None,
            }
            return {**head, "choices": [choice]}

        if chat:  # SGLang 0.5.23: the role chunk first, its own content chunk
            sse(chat_chunk({"role": "assistant", "content": ""}, None))

        def on_chunk(g: GenRequest, delta: str, finished: bool) -> bool:
            # Chat: content chunks carry no finish_reason; a content-less chunk ends the choice.
            # Completions: the last text chunk carries the finish_reason, every chunk "usage".
            if chat:
                payload = chat_chunk({"content": delta}, None)
                if opts.get("continuous_usage_stats"):
                    payload["usage"] = self._usage(g)
                ok = sse(payload)
                if finished and ok:
                    end = chat_chunk({}, None)
                    end["choices"][0].update(self._openai_finish(g))
                    return sse(end)
                return ok
            choice = {
                "index": 0,
                "text": delta,
                "logprobs": None,
                **(self._openai_finish(g) if finished else NO_FINISH),
            }
            usage = self._usage(g) if opts.get("continuous_usage_stats") else None
            return sse({**head, "choices": [choice], "usage": usage})

        r.on_chunk = on_chunk
        await self._run(r)
        ext = self._sglext(r, body)
        if ext:
            sse({**head, "choices": [], "sglext": ext})
        if opts.get("include_usage"):
            sse({**head, "choices": [], "usage": self._usage(r, stream_completion=not chat)})
        conn.send(b"data: [DONE]\n\n")
        conn.end_stream()
        return None


NO_FINISH = {"finish_reason": None, "matched_stop": None}
GET, POST = ("GET",), ("POST", "PUT")
ROUTES: dict[str, tuple[tuple[str, ...], str]] = {
    "/health": (GET, "health"),
    "/health_generate": (GET, "health"),
    "/ready": (GET, "ready"),
    "/v1/models": (GET, "models"),
    "/model_info": (GET, "model_info"),
    "/get_model_info": (GET, "model_info"),
    "/server_info": (GET, "server_info"),
    "/get_server_info": (GET, "server_info"),
    "/flush_cache": (("GET", "POST"), "flush_cache"),
    "/metrics": (GET, "metrics"),
    "/tokenize": (("POST",), "tokenize"),
    "/v1/tokenize": (("POST",), "tokenize"),
    "/generate": (POST, "generate"),
    "/v1/completions": (("POST",), "completions"),
    "/v1/chat/completions": (("POST",), "chat_completions"),
    "/emulator/requests": (GET, "emulator_requests"),
}
