"""Tiny tokenizer + Llama model + CPU training loop for the embedded toy default.

The toy model is a small ``LlamaForCausalLM`` (untied LM head) trained from scratch on
a mix of the train splits of the synthetic tasks (``mathneuro.synthetic``). The
tokenizer is a small byte-level BPE that puts every digit into its own token (the
first digit of a number carries the leading space, ``"Ġ4"``), so numbers are spelled
digit by digit and digits stay exclusive to the math task.

Everything is seeded: the same data and seed give bit-identical weights on CPU.
"""

from __future__ import annotations

import math
import random
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import torch

from mathneuro import synthetic

SPECIAL_TOKENS = {"pad_token": "<pad>", "bos_token": "<s>", "eos_token": "</s>",
                  "unk_token": "<unk>"}
Log = Callable[[str], None]


# ---------------------------------------------------------------- tokenizer
def build_tokenizer(texts: Iterable[str], *, vocab_size: int = 512):
    """Train a byte-level BPE (digits split individually) on ``texts``.

    Returns a ``transformers.PreTrainedTokenizerFast`` that prepends ``<s>`` when
    ``add_special_tokens=True`` (the default, as Llama does) and decodes exactly
    (``decode(encode(t), skip_special_tokens=True) == t``).
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = list(SPECIAL_TOKENS.values())
    tok = Tokenizer(models.BPE(unk_token=SPECIAL_TOKENS["unk_token"]))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r" ?[0-9]"), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(sorted(set(texts)), trainer=trainer)
    bos = SPECIAL_TOKENS["bos_token"]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.token_to_id(bos))])
    return PreTrainedTokenizerFast(tokenizer_object=tok, clean_up_tokenization_spaces=False,
                                   model_max_length=1 << 30,
                                   model_input_names=["input_ids", "attention_mask"],
                                   **SPECIAL_TOKENS)


# ---------------------------------------------------------------- model
def make_model(vocab_size: int, *, hidden_size: int = 128, num_layers: int = 4,
               num_heads: int = 4, intermediate_size: int = 512,
               max_position_embeddings: int = 256, seed: int = 0, tokenizer=None):
    """Return a freshly initialised ``LlamaForCausalLM`` with an untied LM head.

    ``tokenizer`` (optional) supplies the pad/bos/eos ids stored in the config.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    ids = {}
    if tokenizer is not None:
        ids = {"pad_token_id": tokenizer.pad_token_id, "bos_token_id": tokenizer.bos_token_id,
               "eos_token_id": tokenizer.eos_token_id}
    config = LlamaConfig(
        vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=num_layers,
        num_attention_heads=num_heads, num_key_value_heads=num_heads,
        intermediate_size=intermediate_size, max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=False, **ids)
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


# ---------------------------------------------------------------- training
def _encode(tokenizer, texts: Sequence[str], max_length: int) -> list[list[int]]:
    """Tokenize ``texts`` as ``<s> text </s>``, truncated to ``max_length`` tokens."""
    ids = tokenizer(list(texts), add_special_tokens=True)["input_ids"]
    return [(row + [tokenizer.eos_token_id])[:max_length] for row in ids]


def _collate(rows: list[list[int]], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad ``rows``; padded positions are masked out of attention and loss."""
    width = max(len(r) for r in rows)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        input_ids[i, : len(row)] = torch.tensor(row)
        mask[i, : len(row)] = 1
    labels = input_ids.masked_fill(mask == 0, -100)
    return {"input_ids": input_ids, "attention_mask": mask, "labels": labels}


def _lr_at(step: int, steps: int, lr: float, warmup: int) -> float:
    """Linear warm-up then cosine decay to 10% of ``lr``."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def _batch_sampler(groups: Sequence[Sequence[int]], weights: Sequence[float],
                   batch_size: int, rng: random.Random) -> Callable[[], list[int]]:
    """Return a function drawing one batch of text indices.

    Each batch comes from a single group (chosen by ``weights``), so texts of similar
    length share a batch and little compute is spent on padding.
    """
    if any(len(g) == 0 for g, w in zip(groups, weights) if w > 0):
        raise ValueError("every group with a positive weight needs at least one text")

    def draw() -> list[int]:
        group = rng.choices(groups, weights=weights)[0]
        return [group[rng.randrange(len(group))] for _ in range(batch_size)]
    return draw


def train(model, tokenizer, texts: Sequence[str], *, steps: int = 1000, batch_size: int = 32,
          lr: float = 3e-3, seed: int = 0, warmup: int = 100, weight_decay: float = 0.01,
          max_length: int = 256, groups: Sequence[Sequence[int]] | None = None,
          weights: Sequence[float] | None = None, log_every: int = 100,
          log: Log = print) -> list[float]:
    """Train ``model`` with AdamW on ``texts``; return the loss of every step.

    Batches draw texts at random (seeded): uniformly, or, given ``groups`` (lists of
    indices into ``texts``) and ``weights``, a group by weight and then ``batch_size``
    texts within that group.
    Progress (step, mean loss, elapsed wall and CPU seconds) goes to ``log`` every
    ``log_every`` steps.
    """
    if not texts:
        raise ValueError("train() needs at least one text")
    rows = _encode(tokenizer, texts, max_length)
    groups = groups or [range(len(texts))]
    weights = weights or [1.0] * len(groups)
    draw = _batch_sampler(groups, weights, batch_size, random.Random(seed))
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay,
                            betas=(0.9, 0.98))
    model.train()
    losses: list[float] = []
    start, cpu_start = time.perf_counter(), time.process_time()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = _lr_at(step, steps, lr, warmup)
        batch = _collate([rows[i] for i in draw()], tokenizer.pad_token_id)
        loss = model(**batch).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if (step + 1) % log_every == 0 or step + 1 == steps:
            window = losses[-log_every:]
            log(f"step {step + 1}/{steps} loss {sum(window) / len(window):.4f} "
                f"elapsed {time.perf_counter() - start:.1f}s "
                f"(cpu {time.process_time() - cpu_start:.1f}s)")
    model.eval()
    return losses


# ---------------------------------------------------------------- end to end
def _load_records(source: str | Path | Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Records from a JSON-lines path or an in-memory list."""
    if isinstance(source, (str, Path)):
        return synthetic.read_jsonl(source)
    return list(source)


def task_texts(train_files: Mapping[str, Any]) -> dict[str, list[str]]:
    """Map task -> training texts from ``{task: path or records}`` (train splits)."""
    out = {}
    for task, source in train_files.items():
        synthetic.check_task(task)
        out[task] = [synthetic.training_text(task, r) for r in _load_records(source)]
    return out


DEFAULT_MIX = {"math": 0.5, "reading": 0.25, "facts": 0.25}


def train_toy(train_files: Mapping[str, Any], out_dir: str | Path, *,
              hidden_size: int = 128, num_layers: int = 4, num_heads: int = 4,
              intermediate_size: int = 512, max_position_embeddings: int = 256,
              vocab_size: int = 512, steps: int = 3000, batch_size: int = 32,
              lr: float = 3e-3, warmup: int = 100, weight_decay: float = 0.01,
              mix: Mapping[str, float] | None = None, num_threads: int | None = 2,
              log_every: int = 100, seed: int = 0, log: Log = print) -> None:
    """Build tokenizer + model, train on the tasks' train splits, save both to ``out_dir``.

    ``train_files`` maps task name to a train-split JSON-lines path (or a list of
    records). ``mix`` gives each task's share of the sampled training texts (default
    ``DEFAULT_MIX``, renormalised over the tasks given). ``num_threads`` sets
    ``torch.set_num_threads`` (``None`` leaves it alone).
    """
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    by_task = task_texts(train_files)
    tasks = sorted(by_task)
    texts = [t for task in tasks for t in by_task[task]]
    offsets = [0]
    for task in tasks:
        offsets.append(offsets[-1] + len(by_task[task]))
    groups = [range(offsets[i], offsets[i + 1]) for i in range(len(tasks))]
    mix = dict(DEFAULT_MIX if mix is None else mix)
    weights = [float(mix.get(task, 0.0)) for task in tasks]
    if sum(weights) <= 0:
        raise ValueError(f"mix {mix} gives no weight to any of the tasks {tasks}")
    tokenizer = build_tokenizer(texts, vocab_size=vocab_size)
    log(f"tokenizer: {len(tokenizer)} tokens; texts: "
        + ", ".join(f"{t}={len(by_task[t])}" for t in tasks))
    model = make_model(len(tokenizer), hidden_size=hidden_size, num_layers=num_layers,
                       num_heads=num_heads, intermediate_size=intermediate_size,
                       max_position_embeddings=max_position_embeddings, seed=seed,
                       tokenizer=tokenizer)
    log(f"model: {sum(p.numel() for p in model.parameters()):,} parameters")
    train(model, tokenizer, texts, steps=steps, batch_size=batch_size, lr=lr, seed=seed,
          warmup=warmup, weight_decay=weight_decay, max_length=max_position_embeddings,
          groups=groups, weights=weights, log_every=log_every, log=log)
    out_dir = Path(out_dir)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    log(f"saved model and tokenizer to {out_dir}")


def load_toy(path: str | Path):
    """Load ``(model, tokenizer)`` saved by ``train_toy`` (model in eval mode, on CPU)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    model.eval()
    return model, tokenizer
