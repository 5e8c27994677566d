# Why a start failed, read from the new server's journal: one of five causes, the journal line that
# shows it and, for a rejected flag, the flags the build refused. The one classifier of the project:
# sglang_ready runs it on the target host (module_utils/sglang_journal.py; AnsiballZ ships this file
# with the module) and the sweep's controller loads this same file by path (sweep/store/record.py)
# for a failure that did not come from sglang_ready. Standard library only, no ansible import.
#
# The words are the real SGLang 0.5.23's (wheel paths under sglang/srt/) and its dependencies':
#   out of memory
#     model_executor/pool_configurator.py:96  "Not enough memory. Please try to increase
#         --mem-fraction-static." (the KV pool gets no token; --max-total-tokens 0 on CPU)
#     mem_cache/kv_cache_configurator.py:3051  "Loaded weights leave no GPU memory for the KV cache
#         under --mem-fraction-static=..." (a ValueError; the CPU path too, where "GPU memory" is
#         the host's free memory per NUMA node)
#     mem_cache/kv_cache_configurator.py:3394  "Not enough GPU memory for hybrid (mamba/linear-
#         attention) state cache"; model_executor/pool_configurator.py:1027 and :1681 "leaves no
#         room for the full KV pool"
#     model_executor/runner/decode_cuda_graph_runner.py:603 (and the speculative draft runners)
#         "Capture cuda graph failed: {e}", with torch's "CUDA out of memory. Tried to allocate ..."
#         as {e} and torch.OutOfMemoryError (torch/cuda/__init__.py:484) in the chained traceback
#     torch's CPU allocator (libc10.so) "DefaultCPUAllocator: can't allocate memory: you tried to
#         allocate ... bytes. Error code 12 (Cannot allocate memory)"; systemd's "A process of
#         this unit has been killed by the OOM killer." / "Failed with result 'oom-kill'."
#   rejected flag (Python's argparse, prog "sglang serve", exit 2; and SGLang's own check)
#     "sglang serve: error: unrecognized arguments: --no-such-flag 1 --bar"
#     "sglang serve: error: argument --attention-backend: invalid choice: 'nope' (choose from ...)"
#     "sglang serve: error: argument --tp-size/--tensor-parallel-size: invalid int value: 'x'"
#     "sglang serve: error: ambiguous option: --spec could match --speculative-algorithm, ..."
#     speculative/spec_info.py:65 "ValueError: Unknown speculative algorithm name: FOO" (the
#         algorithm is a free string since 0.5.12, checked after argparse)
#   crash: a traceback, a bind failure, or a unit that failed before the deadline
#   readiness timeout: the deadline passed and the journal shows none of the above
#   host lost: never read from a journal; the playbook that lost the host says so
from __future__ import annotations

import re
from typing import NamedTuple

OUT_OF_MEMORY = "out of memory"
REJECTED_FLAG = "rejected flag"
CRASH = "crash"
READINESS_TIMEOUT = "readiness timeout"
HOST_LOST = "host lost"
CAUSES = (OUT_OF_MEMORY, REJECTED_FLAG, CRASH, READINESS_TIMEOUT, HOST_LOST)

# Lower-cased needles, each with the words the failure message gives it (sglang_journal.py).
MEMORY_NEEDLES = (
    "out of memory",  # torch: "CUDA out of memory", "C10 Out of Memory", HIP's, XPU's
    "outofmemoryerror",  # torch.OutOfMemoryError, torch.cuda.OutOfMemoryError
    "not enough memory",  # pool_configurator.py:96
    "not enough gpu memory",  # kv_cache_configurator.py:3394
    "leave no gpu memory for the kv cache",  # kv_cache_configurator.py:3051
    "leaves no room for the full kv pool",  # pool_configurator.py:1027, :1681
    "can't allocate memory",  # torch's DefaultCPUAllocator
    "cannot allocate memory",  # ENOMEM (errno 12)
    "killed by the oom killer",  # systemd
    "'oom-kill'",  # systemd: "Failed with result 'oom-kill'."
)
MEMORY_MEANING = "out of memory"
FLAG_MEANING = "SGLang rejected a flag (wrong flag dialect for this SGLang build?)"
BIND_NEEDLE = "address already in use"
BIND_MEANING = "the port is already in use by another process (bind failed)"
EXCEPTION_MEANING = "the server raised an exception"
TRACEBACK = "Traceback (most recent call last)"

_UNRECOGNIZED = re.compile(r"unrecognized arguments:\s*(?P<args>.*)$")
_ARGUMENT = re.compile(r"error: argument (?P<names>[^:\s]+): ")
_AMBIGUOUS = re.compile(r"ambiguous option: (?P<option>\S+) could match")
_REQUIRED = re.compile(r"error: the following arguments are required:")
# the exception line, not the traceback's source line `raise ValueError(f"Unknown ...")`
_ALGORITHM = re.compile(r"Error: Unknown speculative algorithm name")
_FLAG = re.compile(r"^--?[A-Za-z]")
ALGORITHM_FLAG = "--speculative-algorithm"
# journalctl's own prefix (short, short-iso, short-precise): "<time> <host> <ident>[<pid>]: "
_JOURNAL_PREFIX = re.compile(
    r"^(?:\d{4}-\d\d-\d\dT\S+|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?) \S+ [^\s:]+: "
)


class Cause(NamedTuple):
    cause: str  # one of CAUSES
    detail: str  # the journal line that shows it ("" when none does)
    flags: tuple[str, ...] = ()  # for a rejected flag: the flags the build refused, when named

    def as_result(self) -> dict[str, object]:
        """sglang_ready's result fields."""
        return {"cause": self.cause, "cause_detail": self.detail, "cause_flags": list(self.flags)}


def message(line: str) -> str:
    """The logged text of a journal line, without journalctl's prefix (-o short-iso)."""
    return _JOURNAL_PREFIX.sub("", line, count=1)


def is_memory(line: str) -> bool:
    lowered = line.lower()
    return any(needle in lowered for needle in MEMORY_NEEDLES)


def _names(option: str) -> list[str]:
    return [option.split("=", 1)[0]] if _FLAG.match(option) else []


def rejected_flags(line: str) -> tuple[str, ...] | None:
    """The flags a line says the build refused ((): refused, none named); None: not a refusal."""
    found = _UNRECOGNIZED.search(line)
    if found:
        names = [n for token in found.group("args").split() for n in _names(token)]
        return tuple(dict.fromkeys(names))
    found = _ARGUMENT.search(line)
    if found:  # invalid choice, invalid int value, expected one argument, not allowed with ...
        names = [n for alias in found.group("names").split("/") for n in _names(alias)]
        return tuple(dict.fromkeys(names))
    found = _AMBIGUOUS.search(line)
    if found:
        return tuple(_names(found.group("option")))
    if _REQUIRED.search(line):
        return ()
    if _ALGORITHM.search(line):
        return (ALGORITHM_FLAG,)
    return None


def exceptions(lines: list[str]) -> list[str]:
    """The exception line of every traceback in the journal, in order."""
    texts = [message(line) for line in lines]
    found: list[str] = []
    for index, text in enumerate(texts):
        if TRACEBACK not in text:
            continue
        found.append(
            next(
                (
                    later.strip()
                    for later in texts[index + 1 :]
                    if later.strip() and not later[:1].isspace() and TRACEBACK not in later
                ),
                "(exception line not in the journal excerpt)",
            )
        )
    return found


def evidence(lines: list[str]) -> list[tuple[str, str, str]]:
    """(cause, meaning, line) for every line that names a likely cause, in journal order, then
    the exception of every traceback: what the failure message prints above the journal."""
    found: list[tuple[str, str, str]] = []
    for line in lines:
        text = message(line).strip()
        lowered = text.lower()
        if BIND_NEEDLE in lowered:
            found.append((CRASH, BIND_MEANING, text))
        if rejected_flags(text) is not None:
            found.append((REJECTED_FLAG, FLAG_MEANING, text))
        if is_memory(text):
            found.append((OUT_OF_MEMORY, MEMORY_MEANING, text))
    found += [(CRASH, EXCEPTION_MEANING, exc) for exc in exceptions(lines)]
    return found


def classify(lines: list[str], deadline_passed: bool) -> Cause:
    """The cause of a failed start from the new invocation's journal (oldest line first).
    Out of memory, then a rejected flag, beat a crash (both end in a traceback or an exit); a
    crash (a traceback, a bind failure, or, before the deadline, a unit that failed) beats a
    readiness timeout."""
    raw = [message(line) for line in lines]
    texts = [text.strip() for text in raw]
    # the last memory line, one not indented (an exception, not a traceback's source line) first
    memory = sorted(
        (not raw[i][:1].isspace(), i) for i, text in enumerate(texts) if is_memory(text)
    )
    if memory:
        return Cause(OUT_OF_MEMORY, texts[memory[-1][1]])
    for text in texts:
        flags = rejected_flags(text)
        if flags is not None:
            return Cause(REJECTED_FLAG, text, flags)
    raised = exceptions(lines)
    if raised:
        return Cause(CRASH, raised[-1])
    bind = next((t for t in texts if BIND_NEEDLE in t.lower()), None)
    if bind is not None:
        return Cause(CRASH, bind)
    if deadline_passed:
        return Cause(READINESS_TIMEOUT, "")
    return Cause(CRASH, "")
