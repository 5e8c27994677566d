"""Greedy outputs: the same request gives the same output_ids whatever the speculative
configuration (speculation only changes how many tokens each step yields), unless
SGLANG_EMU_DIVERGE makes the drafter "broken" for some requests."""

from __future__ import annotations

import random
from typing import Any

import pytest
from conftest import EmulatorProcess, ModelDirs, StartEmulator
from sglang_emulator.tokenizer import EOS

CONVERSATIONS = {
    "code": [{"role": "user", "content": "Why does this fail?\n```python\ndef first(xs):\n"
                                         "    return xs[0]\n\nprint(first([]))\n```"}],
    "math": [{"role": "user", "content": "Solve 3x + 5 = 20 for x, then compute 2x^2 - 4."}],
    "json": [{"role": "system", "content": "Answer in JSON only."},
             {"role": "user", "content": "Ada Lovelace was born in 1815 in London."}],
    "document": [{"role": "user", "content": "Summarize the passage: the committee met on "
                                             "Tuesday and approved the budget."}],
    "chat": [{"role": "system", "content": "You are a helpful assistant."},
             {"role": "user", "content": "My team keeps missing deadlines. Where to start?"}],
}  # fmt: skip
SEED = {"SGLANG_EMU_TIME_SCALE": "0", "SGLANG_EMU_SEED": "11"}


def spec_flags(model_dirs: ModelDirs, algo: str, *extra: str) -> list[str]:
    return ["--model-path", str(model_dirs.model), "--speculative-algorithm", algo,
            "--speculative-draft-model-path", str(model_dirs.drafter), *extra]  # fmt: skip


@pytest.fixture(scope="module")
def servers(
    start_module_emulator: StartEmulator, model_dirs: ModelDirs
) -> dict[str, EmulatorProcess]:
    ddtree = {**SEED, "SGLANG_EMU_VERSION": "ddtree"}
    window = "--speculative-dflash-draft-window-size"
    return {
        "off": start_module_emulator(["--model-path", str(model_dirs.model)], env=SEED),
        "dflash": start_module_emulator(
            spec_flags(model_dirs, "DFLASH", "--speculative-draft-window-size", "2048"), env=SEED
        ),
        "dflash-w512": start_module_emulator(
            spec_flags(model_dirs, "DFLASH", "--speculative-draft-window-size", "512"), env=SEED
        ),
        "ddtree-b8": start_module_emulator(
            spec_flags(model_dirs, "DDTREE", "--speculative-ddtree-budget", "8", window, "1024"),
            env=ddtree,
        ),
        "ddtree-b64": start_module_emulator(
            spec_flags(model_dirs, "DDTREE", "--speculative-ddtree-budget", "64"), env=ddtree
        ),
    }


def prompts(emu: EmulatorProcess) -> dict[str, list[int]]:
    out = {
        name: emu.post("/tokenize", {"messages": msgs}).json()["tokens"]
        for name, msgs in CONVERSATIONS.items()
    }
    out["random"] = random.Random(3).choices(range(1000, 120_000), k=300)
    return out


def generate(emu: EmulatorProcess, ids: list[int], max_new: int, **params: Any) -> dict[str, Any]:
    body = {"input_ids": ids, "sampling_params": {"max_new_tokens": max_new, "temperature": 0,
                                                  **params}}  # fmt: skip
    res = emu.post("/generate", body)
    assert res.status == 200, res.body
    return dict(res.json())


@pytest.mark.parametrize("ignore_eos", [False, True], ids=["natural", "fixed"])
def test_same_greedy_output_in_every_configuration(
    servers: dict[str, EmulatorProcess], ignore_eos: bool
):
    for name, ids in prompts(servers["off"]).items():
        outs = {cfg: generate(emu, ids, 240, ignore_eos=ignore_eos) for cfg, emu in servers.items()}
        base = outs["off"]["output_ids"]
        assert (base[-1] == EOS) is not ignore_eos, name  # every natural answer fits in 240
        for cfg, out in outs.items():
            assert out["output_ids"] == base, (name, cfg)
            assert out["text"] == outs["off"]["text"], (name, cfg)
            meta = out["meta_info"]
            if cfg != "off" and name != "random":  # speculation did run: several tokens a step
                assert meta["spec_verify_ct"] < meta["completion_tokens"], (name, cfg)


def test_outputs_depend_on_the_seed(start_emulator: StartEmulator, model_dirs: ModelDirs):
    flags = ["--model-path", str(model_dirs.model)]
    other = start_emulator(flags, env={**SEED, "SGLANG_EMU_SEED": "12"})
    same = start_emulator(flags, env=SEED)
    ids = prompts(same)["chat"]
    assert generate(same, ids, 300)["output_ids"] != generate(other, ids, 300)["output_ids"]


@pytest.fixture(scope="module")
def broken(start_module_emulator: StartEmulator, model_dirs: ModelDirs) -> EmulatorProcess:
    """Every request's drafter is broken: outputs diverge from token 4 on."""
    env = {**SEED, "SGLANG_EMU_DIVERGE": "1"}
    return start_module_emulator(spec_flags(model_dirs, "DFLASH"), env=env)


@pytest.mark.parametrize("ignore_eos", [False, True], ids=["natural", "fixed"])
def test_diverging_requests_differ_from_token_diverge_after_on(
    servers: dict[str, EmulatorProcess], broken: EmulatorProcess, ignore_eos: bool
):
    for name, ids in prompts(servers["off"]).items():
        base = generate(servers["off"], ids, 240, ignore_eos=ignore_eos)["output_ids"]
        out = generate(broken, ids, 240, ignore_eos=ignore_eos)["output_ids"]
        assert out[:4] == base[:4], name
        n = min(len(out), len(base))
        assert all(out[i] != base[i] for i in range(4, n)), name
        if not ignore_eos:  # the other path ends its turn elsewhere
            assert out[-1] == EOS and len(out) != len(base), name


def test_diverge_picks_requests_by_their_prompt(
    start_emulator: StartEmulator, model_dirs: ModelDirs, servers: dict[str, EmulatorProcess]
):
    env = {**SEED, "SGLANG_EMU_DIVERGE": "0.5", "SGLANG_EMU_DIVERGE_AFTER": "10"}
    half = start_emulator(spec_flags(model_dirs, "DFLASH"), env=env)
    off_env = {**SEED, "SGLANG_EMU_DIVERGE": "1"}  # no speculation: no drafter to break
    plain = start_emulator(["--model-path", str(model_dirs.model)], env=off_env)
    base_ids = prompts(servers["off"])["chat"]
    diverged = []
    for i in range(24):
        ids = [*base_ids[:-2], 1000 + i, *base_ids[-2:]]
        base = generate(servers["off"], ids, 60, ignore_eos=True)["output_ids"]
        out = generate(half, ids, 60, ignore_eos=True)["output_ids"]
        assert generate(half, ids, 60, ignore_eos=True)["output_ids"] == out  # deterministic
        assert generate(plain, ids, 60, ignore_eos=True)["output_ids"] == base
        assert out[:10] == base[:10]
        diverged.append(out != base)
    assert 4 <= sum(diverged) <= 20  # about half, chosen per prompt
