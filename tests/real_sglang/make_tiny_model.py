"""Writes a tiny random-weight Qwen2 model directory that the real SGLang serves on CPU.

Test set-up only: run with the real-SGLang venv's python (it has torch, transformers and
tokenizers). No download: the byte-level BPE tokenizer is trained here on a few sentences, so every
text tokenizes (bytes are the fallback) and the vocabulary is small and known.

    python make_tiny_model.py DEST [--seed 0]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "def add(a, b):\n    return a + b\n",
    "for i in range(10):\n    print(i * i)\n",
    "Speculative decoding drafts several tokens and verifies them in one step.",
    "The server restarts, loads its weights and answers again.",
    "12 + 30 = 42; 7 * 6 = 42; 84 / 2 = 42.",
    "Operations engineers measure latency, throughput and accept length.",
]
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tokenizer(dest: Path, vocab_size: int) -> PreTrainedTokenizerFast:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(SENTENCES * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(dest)
    return fast


def build_model(dest: Path, vocab: int, eos_id: int, pad_id: int, seed: int) -> None:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        max_window_layers=2,
        tie_word_embeddings=True,
        bos_token_id=pad_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        torch_dtype="float32",
    )
    model = Qwen2ForCausalLM(config).to(torch.float32)
    model.save_pretrained(dest, safe_serialization=True)
    gen = {"eos_token_id": eos_id, "pad_token_id": pad_id, "do_sample": False}
    (dest / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vocab-size", type=int, default=512)
    args = parser.parse_args()
    args.dest.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(args.dest, args.vocab_size)
    vocab = len(tokenizer)
    eos_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    pad_id = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    build_model(args.dest, vocab, eos_id=eos_id, pad_id=pad_id, seed=args.seed)
    print(json.dumps({"dest": str(args.dest), "vocab_size": vocab}))


if __name__ == "__main__":
    main()
