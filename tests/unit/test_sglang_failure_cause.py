"""module_utils/sglang_failure_cause.py: the cause of a failed start, on the host (sglang_ready)
and on the controller (sweep/store/record.py), from the real SGLang 0.5.23's own journal lines.

The excerpts in tests/fixtures/real_sglang/0.5.23/failures.json were recorded from the real server
on CPU (image localhost/sglang-realhost:cpu). No CUDA run is recorded: the CUDA graph capture
failure is composed from the wheel's format strings (decode_cuda_graph_runner.py:603 around
torch's CUDA allocator message)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from project_module_utils import MODULE_UTILS, module_utils
from test_sweep_fakes import info

from sweep.store import failures, record

fc = module_utils("sglang_failure_cause")
journal = module_utils("sglang_journal")

REAL = json.loads(
    (
        Path(__file__).parents[1] / "fixtures" / "real_sglang" / "0.5.23" / "failures.json"
    ).read_text()
)
NOT_ENOUGH = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
TORCH_CUDA_OOM = (
    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.81 GiB "
    "of which 1.06 GiB is free. Including non-PyTorch memory, this process has 138.7 GiB memory "
    "in use."
)
CAPTURE_OOM = [
    "Traceback (most recent call last):",
    '  File "/sgl/srt/model_executor/runner/decode_cuda_graph_runner.py", line 600, in __init__',
    "    self.capture()",
    f"torch.OutOfMemoryError: {TORCH_CUDA_OOM}",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    '  File "/sgl/srt/model_executor/runner/decode_cuda_graph_runner.py", line 603, in __init__',
    "    raise Exception(",
    f"Exception: Capture cuda graph failed: {TORCH_CUDA_OOM}",
    "Possible solutions:",
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
]


def short_iso(lines: list[str]) -> list[str]:
    """As `journalctl --output short-iso` prints them (playbooks/tasks/sweep_failed.yml)."""
    return [f"2026-12-05T07:24:15+0000 sglang-realhost python3[123]: {line}" for line in lines]


# ---------------------------------------------------------------------------------------------
# Each cause from the real server's words
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("deadline_passed", [False, True])
def test_the_real_cpu_server_out_of_memory_after_the_weights_load(deadline_passed: bool) -> None:
    lines = REAL["out_of_memory"]
    assert any("Load weight end" in line for line in lines)  # it failed after the weights loaded
    assert any("Traceback (most recent call last)" in line for line in lines)  # and raised

    got = fc.classify(lines, deadline_passed)

    assert got == fc.Cause(fc.OUT_OF_MEMORY, NOT_ENOUGH)  # beats the crash and the time-out
    assert got.as_result() == {
        "cause": "out of memory",
        "cause_detail": NOT_ENOUGH,
        "cause_flags": [],
    }


def test_the_module_s_journal_window_still_holds_the_memory_error() -> None:
    """sglang_ready reads the last 40 lines (sglang_systemd.JOURNAL_LINES)."""
    assert fc.classify(REAL["out_of_memory"][-40:], False).cause == fc.OUT_OF_MEMORY


@pytest.mark.parametrize(
    ("case", "flags"),
    [
        ("rejected_unrecognized", ("--no-such-flag", "--bar")),
        ("rejected_invalid_choice", ("--attention-backend",)),
        ("rejected_ambiguous", ("--spec",)),
        ("rejected_invalid_int", ("--tp-size", "--tensor-parallel-size")),
        ("rejected_algorithm", ("--speculative-algorithm",)),
    ],
)
def test_the_real_server_s_refusals_are_rejected_flags_with_their_names(
    case: str, flags: tuple[str, ...]
) -> None:
    got = fc.classify(REAL[case], False)
    assert got.cause == fc.REJECTED_FLAG
    assert got.flags == flags
    assert got.detail == next(line for line in REAL[case] if fc.rejected_flags(line) is not None)


def test_an_unknown_algorithm_names_the_exception_not_the_traceback_source_line() -> None:
    got = fc.classify(REAL["rejected_algorithm"], False)
    assert got.detail == "ValueError: Unknown speculative algorithm name: FOO"
    assert (
        fc.rejected_flags('    raise ValueError(f"Unknown speculative algorithm name: {name}")')
        is None
    )


def test_argparse_words_flag_names_only() -> None:
    line = "sglang serve: error: unrecognized arguments: --foo=1 2 -3 --bar --baz x"
    assert fc.rejected_flags(line) == ("--foo", "--bar", "--baz")
    required = "sglang serve: error: the following arguments are required: --model-path"
    assert fc.classify([required], False) == fc.Cause(fc.REJECTED_FLAG, required, ())
    assert fc.rejected_flags("Ignore import error when loading sglang.srt.models.grok") is None


def test_a_refused_algorithm_is_a_crash_with_its_exception() -> None:
    """The CPU build refuses DFLASH in SGLang's own argument checks, a ValueError: no flag."""
    got = fc.classify(REAL["refused_algorithm"], False)
    assert got == fc.Cause(
        fc.CRASH,
        "ValueError: DFLASH speculative decoding is not supported by CpuSRTPlatform "
        "on device 'cpu'.",
    )


def test_a_good_start_shows_no_cause_so_past_the_deadline_it_is_a_timeout() -> None:
    lines = REAL["start_until_ready"]
    assert "The server is fired up and ready to roll!" in lines[-1]
    assert fc.evidence(lines) == []
    assert fc.classify(lines, True) == fc.Cause(fc.READINESS_TIMEOUT, "")
    # before the deadline the unit failed (sglang_ready fails only then): the server exited
    assert fc.classify(lines, False) == fc.Cause(fc.CRASH, "")
    assert fc.classify([], True).cause == fc.READINESS_TIMEOUT


def test_cuda_graph_capture_out_of_memory_is_memory_not_a_crash() -> None:
    got = fc.classify(CAPTURE_OOM, False)
    assert got == fc.Cause(
        fc.OUT_OF_MEMORY, f"Exception: Capture cuda graph failed: {TORCH_CUDA_OOM}"
    )
    # a capture that fails for another reason is a crash; its hint names no memory failure
    other = [
        line.replace(
            TORCH_CUDA_OOM, "CUDA error: an illegal memory access was encountered"
        ).replace("torch.OutOfMemoryError", "torch.AcceleratorError")
        for line in CAPTURE_OOM
    ]
    assert fc.classify(other, False).cause == fc.CRASH


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: Loaded weights leave no GPU memory for the KV cache under "
        "--mem-fraction-static=0.88. Raise --mem-fraction-static above 0.901",
        "RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache.",
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1.00 GiB.",
        "RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate "
        "17179869184 bytes. Error code 12 (Cannot allocate memory)",
        "sglang.service: A process of this unit has been killed by the OOM killer.",
        "sglang.service: Failed with result 'oom-kill'.",
    ],
)
def test_other_memory_words(line: str) -> None:
    assert fc.classify(["[2026-12-05 07:24:15] Load weight end.", line], False).cause == (
        fc.OUT_OF_MEMORY
    )


def test_normal_lines_that_mention_memory_are_not_out_of_memory() -> None:
    lines = [
        "[2026-12-05 07:25:25] Load weight end. avail mem=21.72 GB, mem usage=0.00 GB.",
        "KV pool holds 16384 tokens, fewer than --context-length 32768. Lower --context-length, "
        "raise --mem-fraction-static, or free memory taken before the pool is sized.",
        "CUDA error: an illegal memory access was encountered",
    ]
    assert fc.classify(lines, True).cause == fc.READINESS_TIMEOUT


# ---------------------------------------------------------------------------------------------
# Precedence, journalctl's prefix, the failure message's lines
# ---------------------------------------------------------------------------------------------


def test_precedence() -> None:
    oom, flag = REAL["out_of_memory"], REAL["rejected_unrecognized"]
    crash = REAL["refused_algorithm"]
    bind = ["OSError: [Errno 98] error while attempting to bind: address already in use"]
    assert fc.classify(crash + oom, False).cause == fc.OUT_OF_MEMORY
    assert fc.classify(crash + flag, False).cause == fc.REJECTED_FLAG
    assert fc.classify(flag + oom, False).cause == fc.OUT_OF_MEMORY
    assert fc.classify(crash, True).cause == fc.CRASH  # a traceback beats the deadline
    assert fc.classify(bind, True) == fc.Cause(fc.CRASH, bind[0])


def test_journalctl_short_iso_lines_classify_the_same() -> None:
    for case in ("out_of_memory", "rejected_unrecognized", "refused_algorithm"):
        assert fc.classify(short_iso(REAL[case]), False) == fc.classify(REAL[case], False), case
    assert fc.message(short_iso(["  File x"])[0]) == "  File x"


def test_the_failure_message_reads_the_same_needles() -> None:
    lines = journal.explain_journal(REAL["out_of_memory"])
    assert lines == [
        f"likely cause: out of memory: {NOT_ENOUGH}",
        f"likely cause: the server raised an exception: {NOT_ENOUGH}",
    ]
    assert journal.explain_journal(REAL["rejected_unrecognized"]) == [
        "likely cause: SGLang rejected a flag (wrong flag dialect for this SGLang build?): "
        "sglang serve: error: unrecognized arguments: --no-such-flag 1 --bar"
    ]


def test_one_list_of_causes_and_no_ansible_import_so_the_controller_loads_it() -> None:
    assert fc.CAUSES == failures.CAUSES
    tree = ast.parse((MODULE_UTILS / "sglang_failure_cause.py").read_text())
    imported = [
        n.module if isinstance(n, ast.ImportFrom) else a.name
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    ]
    assert not [m for m in imported if m and m.split(".")[0] not in ("__future__", "re", "typing")]
    assert failures.classifier().CAUSES == failures.CAUSES == fc.CAUSES


# ---------------------------------------------------------------------------------------------
# failure.json carries the cause
# ---------------------------------------------------------------------------------------------

SERVER = {"algorithm": "DDTREE", "budget": 8, "topk": 4, "window": 2048, "env": {}}


def failed(tmp_path: Path, **extra: object) -> dict[str, object]:
    record.fail_point(tmp_path / "s", info("p", SERVER, 0.0, **{"reason": "it failed", **extra}))
    return json.loads((tmp_path / "s" / "p" / "failure.json").read_text())


def test_failure_json_carries_sglang_ready_s_cause(tmp_path: Path) -> None:
    got = failed(
        tmp_path,
        journal=REAL["rejected_unrecognized"],
        cause="rejected flag",
        cause_detail="sglang serve: error: unrecognized arguments: --no-such-flag 1 --bar",
        flags=["--no-such-flag", "--bar"],
    )
    assert got["cause"] == "rejected flag"
    assert got["flags"] == ["--no-such-flag", "--bar"]
    assert got["cause_detail"].endswith("--no-such-flag 1 --bar")
    assert got["reason"] == "it failed" and got["journal"] == REAL["rejected_unrecognized"]


def test_failure_json_passes_a_timeout_and_a_lost_host_through(tmp_path: Path) -> None:
    got = failed(tmp_path, journal=REAL["out_of_memory"], cause="readiness timeout")
    assert (got["cause"], got["cause_detail"]) == ("readiness timeout", "")
    assert "flags" not in got
    assert failed(tmp_path, cause="host lost", cause_detail="", flags=[])["cause"] == "host lost"


@pytest.mark.parametrize(
    ("journal_lines", "cause", "detail"),
    [
        (short_iso(REAL["out_of_memory"]), "out of memory", NOT_ENOUGH),
        ([], "crash", ""),  # a bench error after ready: nothing in the server's journal
        (REAL["refused_algorithm"], "crash", REAL["refused_algorithm"][-1]),
    ],
)
def test_without_sglang_ready_s_cause_the_journal_is_classified(
    tmp_path: Path, journal_lines: list[str], cause: str, detail: str
) -> None:
    got = failed(tmp_path, journal=journal_lines, cause=None)
    assert (got["cause"], got["cause_detail"]) == (cause, detail)


def test_a_rejected_flag_from_the_journal_names_its_flags(tmp_path: Path) -> None:
    got = failed(tmp_path, journal="\n".join(short_iso(REAL["rejected_unrecognized"])))
    assert (got["cause"], got["flags"]) == ("rejected flag", ["--no-such-flag", "--bar"])


def test_a_bench_that_refused_the_sweep_s_parameters_is_no_crash(tmp_path: Path) -> None:
    # sweep_failed.yml says so (bench_refused) when the served server's bench exited 2, 4 or 5
    why = "error: context 1000000 + output 48 = 1000048 tokens exceeds the server's context length"
    got = failed(tmp_path, journal=[], cause=None, bench_refused=True, reason=why)
    assert (got["cause"], got["cause_detail"], got["reason"]) == ("bench refused", why, why)
    assert failures.BENCH_REFUSED not in failures.CAUSES  # not a failed start: nothing reads it so
    # the flag false (every other failure): the journal's classification, as above
    assert failed(tmp_path, journal=[], cause=None, bench_refused=False)["cause"] == "crash"
