"""Writes a tiny Qwen2 model directory that the real SGLang serves on CPU.

Test set-up only: run with the real-SGLang venv's python (it has torch, transformers and
tokenizers). No download: the byte-level BPE tokenizer is trained here on a few sentences, so every
text tokenizes (bytes are the fallback) and the vocabulary is small and known.

The weights are random but for one design: a random model never ends its turn, and a chat-shaped
benchmark must see outputs end where the model emits its end-of-turn token. So the model is a
deterministic bigram machine: its transformer layers are scaled down to near nothing, so the last
hidden state is the last token's embedding, and the untied output head maps each token to one
successor. The chat template's generation prompt ends with a newline, whose successors spell
REPLY and then `<|im_end|>`: every chat answer at temperature 0 is REPLY and the end of turn
(completion_tokens = len(REPLY) + 1); with ignore_eos the answer goes on past it (the end of turn
is followed by REPLY again). Any other token leads to a fixed random successor.

    python make_tiny_model.py DEST [--seed 0]
"""

from __future__ import annotations

import argparse
import itertools
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
# The answer to every chat prompt, then <|im_end|>: its tokens are distinct (one successor each).
REPLY = "The server restarts, loads its weights and answers again."
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


def successors(tokenizer: PreTrainedTokenizerFast, seed: int) -> dict[int, int]:
    """Each token's successor: the generation prompt's last token leads through REPLY to the end
    of turn, which leads back to REPLY's first token; the rest form a random permutation."""
    import random

    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=True
    )
    ids = prompt["input_ids"] if isinstance(prompt, dict) or hasattr(prompt, "keys") else prompt
    last = int(list(ids)[-1])
    reply = tokenizer.encode(REPLY, add_special_tokens=False)
    eos = int(tokenizer.convert_tokens_to_ids("<|im_end|>"))
    chain = [last, *reply, eos]
    assert len(set(chain)) == len(chain), f"REPLY must tokenize to distinct tokens: {reply}"
    nxt = dict(itertools.pairwise(chain))
    nxt[eos] = reply[0]
    rest = [t for t in range(len(tokenizer)) if t not in nxt]
    targets = [t for t in rest if t != eos]
    random.Random(seed).shuffle(targets)
    nxt.update(zip(rest, targets, strict=True))
    return nxt


def build_model(
    dest: Path, vocab: int, eos_id: int, pad_id: int, seed: int, nxt: dict[int, int]
) -> None:
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
        tie_word_embeddings=False,
        bos_token_id=pad_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        torch_dtype="float32",
    )
    model = Qwen2ForCausalLM(config).to(torch.float32)
    with torch.no_grad():
        # The layers add next to nothing: the last hidden state is the last token's embedding.
        for layer in model.model.layers:
            for name, param in layer.named_parameters():
                if "norm" not in name:
                    param.mul_(0.01)
        emb = torch.randn(vocab, config.hidden_size)
        model.model.embed_tokens.weight.copy_(emb)
        unit = emb / emb.norm(dim=1, keepdim=True)
        head = torch.zeros(vocab, config.hidden_size)
        for token, successor in nxt.items():
            head[successor] += 10.0 * unit[token]
        model.lm_head.weight.copy_(head)
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
    nxt = successors(tokenizer, args.seed)
    build_model(args.dest, vocab, eos_id=eos_id, pad_id=pad_id, seed=args.seed, nxt=nxt)
    print(json.dumps({"dest": str(args.dest), "vocab_size": vocab}))


if __name__ == "__main__":
    main()
