#!/usr/bin/env python3
"""Test-only: writes a small Hugging Face style model directory with real safetensors files.

    make_model_dir.py DIR [--shards N] [--drafter] [--missing-shard K] [--empty-shard K]
                          [--truncate-shard K]

Sharded (default): config.json, model.safetensors.index.json and N shards
model-0000k-of-0000N.safetensors, each a valid safetensors file (8-byte little-endian header length,
JSON header, tensor bytes). --drafter writes one model.safetensors (no index) and a DFlash drafter
config with block_size 16. The damage options write the index as usual and then delete, empty or
cut short shard K (1-based). Stdlib only: it runs on the test host's /usr/bin/python3.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys

TARGET_CONFIG = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "max_position_embeddings": 40960,
    "vocab_size": 151936,
}
DRAFTER_CONFIG = {
    "architectures": ["DFlashDraftModel"],
    "model_type": "qwen3",
    "block_size": 16,
    "dflash_config": {"target_layer_ids": [1, 12, 23, 34, 45]},
}


def safetensors_bytes(tensors: dict[str, int]) -> bytes:
    """A safetensors file holding one F32 vector per name (name -> element count)."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, count in tensors.items():
        header[name] = {
            "dtype": "F32",
            "shape": [count],
            "data_offsets": [offset, offset + 4 * count],
        }
        offset += 4 * count
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the format pads the header to 8 bytes
    data = b"".join(struct.pack("<f", i / 1000.0) for i in range(offset // 4))
    return struct.pack("<Q", len(raw)) + raw + data


def write(path: str, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)


def make(
    directory: str,
    shards: int,
    drafter: bool,
    missing: int | None,
    empty: int | None,
    truncate: int | None,
) -> list[str]:
    os.makedirs(directory, exist_ok=True)
    config = DRAFTER_CONFIG if drafter else TARGET_CONFIG
    write(os.path.join(directory, "config.json"), (json.dumps(config, indent=2) + "\n").encode())
    if drafter:
        write(os.path.join(directory, "model.safetensors"), safetensors_bytes({"fc.weight": 256}))
        return ["model.safetensors"]
    names = [f"model-{k:05d}-of-{shards:05d}.safetensors" for k in range(1, shards + 1)]
    weight_map: dict[str, str] = {}
    total = 0
    for k, name in enumerate(names, start=1):
        tensors = {
            f"model.layers.{k - 1}.mlp.weight": 512,
            f"model.layers.{k - 1}.attn.weight": 256,
        }
        write(os.path.join(directory, name), safetensors_bytes(tensors))
        weight_map.update(dict.fromkeys(tensors, name))
        total += 4 * sum(tensors.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    write(
        os.path.join(directory, "model.safetensors.index.json"),
        (json.dumps(index, indent=2) + "\n").encode(),
    )
    if missing:
        os.remove(os.path.join(directory, names[missing - 1]))
    if empty:
        write(os.path.join(directory, names[empty - 1]), b"")
    if truncate:
        path = os.path.join(directory, names[truncate - 1])
        os.truncate(path, os.path.getsize(path) - 100)
    return names


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--drafter", action="store_true")
    parser.add_argument("--missing-shard", type=int)
    parser.add_argument("--empty-shard", type=int)
    parser.add_argument("--truncate-shard", type=int)
    args = parser.parse_args(argv)
    make(
        args.directory,
        args.shards,
        args.drafter,
        args.missing_shard,
        args.empty_shard,
        args.truncate_shard,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
