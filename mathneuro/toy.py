"""Tiny tokenizer + Llama model + CPU training loop for the embedded toy default.

The toy model is a small ``LlamaForCausalLM`` (untied LM head) trained from scratch on
a mix of the train splits of the synthetic tasks (``mathneuro.synthetic``). The
tokenizer is a small byte-level BPE that puts every digit into its own token (the
first digit of a number carries the leading space, ``"Ġ4"``), so numbers are spelled
digit by digit and digits stay exclusive to the math task.

Everything is seeded: the same data and seed give bit-identical weights on CPU. ``train_toy``'s
defaults are the embedded default's (README: its measured time and accuracies). Use many
distinct math and reading texts: with a few thousand, the model memorises them. ``random_model``
builds an untrained model of any architecture with a tokenizer trained on given texts.
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
Row = tuple[list[int], int]  # token ids, number of leading tokens without loss


def _encode(tokenizer, texts: Sequence[str], max_length: int,
            prompt_chars: Sequence[int] | None = None) -> list[Row]:
    """Tokenize ``texts`` as ``<s> text </s>`` (truncated to ``max_length`` tokens).

    With ``prompt_chars``, the tokens lying within the first ``prompt_chars[i]``
    characters of text ``i`` (and ``<s>``) are marked as prompt: they get no loss.
    """
    enc = tokenizer(list(texts), add_special_tokens=True, return_offsets_mapping=True)
    rows = []
    for i, (ids, offsets) in enumerate(zip(enc["input_ids"], enc["offset_mapping"])):
        n_prompt = 0
        if prompt_chars is not None:
            n_prompt = 1 + sum(1 for start, end in offsets[1:] if end <= prompt_chars[i])
        rows.append(((ids + [tokenizer.eos_token_id])[:max_length], n_prompt))
    return rows


def _collate(rows: list[Row], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad ``rows``; padding and prompt tokens are excluded from the loss."""
    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    for i, (ids, n_prompt) in enumerate(rows):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        mask[i, : len(ids)] = 1
        labels[i, n_prompt: len(ids)] = input_ids[i, n_prompt: len(ids)]
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
          weights: Sequence[float] | None = None, prompt_chars: Sequence[int] | None = None,
          log_every: int = 100, log: Log = print) -> list[float]:
    """Train ``model`` with AdamW on ``texts``; return the loss of every step.

    Batches draw texts at random (seeded): uniformly, or, given ``groups`` (lists of
    indices into ``texts``) and ``weights``, a group by weight and then ``batch_size``
    texts within that group. With ``prompt_chars`` (per text: how many leading
    characters are prompt) the loss covers only the rest of each text (the answer).
    Progress (step, mean loss, elapsed wall and CPU seconds) goes to ``log`` every
    ``log_every`` steps.
    """
    if not texts:
        raise ValueError("train() needs at least one text")
    rows = _encode(tokenizer, texts, max_length, prompt_chars)
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


def task_texts(train_files: Mapping[str, Any]) -> dict[str, list[tuple[str, int]]]:
    """Map task -> ``(training text, prompt length in characters)`` per train record.

    ``train_files`` maps task name to a train-split JSON-lines path or a list of records.
    """
    out = {}
    for task, source in train_files.items():
        synthetic.check_task(task)
        out[task] = [(synthetic.training_text(task, r), len(synthetic.prompt_text(task, r)))
                     for r in _load_records(source)]
    return out


DEFAULT_MIX = {"math": 0.6, "reading": 0.2, "facts": 0.2}
LOSS_ON = ("answer", "all")


def _task_groups(by_task: Mapping[str, Sequence[Any]]) -> list[range]:
    """Index ranges of each task's texts in the concatenation (tasks in given order)."""
    groups, start = [], 0
    for items in by_task.values():
        groups.append(range(start, start + len(items)))
        start += len(items)
    return groups


def train_toy(train_files: Mapping[str, Any], out_dir: str | Path, *,
              hidden_size: int = 128, num_layers: int = 3, num_heads: int = 4,
              intermediate_size: int = 256, max_position_embeddings: int = 256,
              vocab_size: int = 512, steps: int = 2400, batch_size: int = 32,
              lr: float = 3e-3, warmup: int = 100, weight_decay: float = 0.01,
              mix: Mapping[str, float] | None = None, loss_on: str = "answer",
              num_threads: int | None = 1, log_every: int = 100, seed: int = 0,
              log: Log = print) -> None:
    """Build tokenizer + model, train on the tasks' train splits, save both to ``out_dir``.

    ``train_files`` maps task name to a train-split JSON-lines path (or a list of
    records). Each batch holds texts of one task, drawn with probability ``mix[task]``
    (default ``DEFAULT_MIX``, renormalised over the tasks given). ``loss_on="answer"``
    trains on the answer only (the prompt gets no loss), ``"all"`` on the whole text.
    ``num_threads`` sets ``torch.set_num_threads`` (``None`` leaves it alone).
    """
    if loss_on not in LOSS_ON:
        raise ValueError(f"loss_on must be one of {LOSS_ON}, got {loss_on!r}")
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    by_task = dict(sorted(task_texts(train_files).items()))
    mix = dict(DEFAULT_MIX if mix is None else mix)
    weights = [float(mix.get(task, 0.0)) for task in by_task]
    if sum(weights) <= 0:
        raise ValueError(f"mix {mix} gives no weight to any of the tasks {list(by_task)}")
    examples = [e for items in by_task.values() for e in items]
    texts = [text for text, _ in examples]
    tokenizer = build_tokenizer(texts, vocab_size=vocab_size)
    log(f"tokenizer: {len(tokenizer)} tokens; texts: "
        + ", ".join(f"{t}={len(v)}" for t, v in by_task.items()))
    model = make_model(len(tokenizer), hidden_size=hidden_size, num_layers=num_layers,
                       num_heads=num_heads, intermediate_size=intermediate_size,
                       max_position_embeddings=max_position_embeddings, seed=seed,
                       tokenizer=tokenizer)
    log(f"model: {sum(p.numel() for p in model.parameters()):,} parameters")
    train(model, tokenizer, texts, steps=steps, batch_size=batch_size, lr=lr, seed=seed,
          warmup=warmup, weight_decay=weight_decay, max_length=max_position_embeddings,
          groups=_task_groups(by_task), weights=weights,
          prompt_chars=[n for _, n in examples] if loss_on == "answer" else None,
          log_every=log_every, log=log)
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


def random_model(texts: Sequence[str], architecture: Mapping[str, Any], out_dir: str | Path, *,
                 seed: int = 0, log: Log = print) -> None:
    """Save a randomly initialised causal LM and a byte-level BPE tokenizer trained on ``texts``.

    ``architecture`` holds transformers config values: ``model_type`` (e.g. ``llama``) and sizes
    (``hidden_size``, ``num_hidden_layers``...; ``vocab_size`` is the tokenizer's target size,
    default 4096). For checking a pipeline on real text without a real model, and for timing a
    real model's shape (e.g. Llama 3.2 1B's config values) without downloading it.
    """
    from transformers import AutoConfig, AutoModelForCausalLM

    values = dict(architecture)
    model_type = values.pop("model_type")
    tokenizer = build_tokenizer(texts, vocab_size=int(values.pop("vocab_size", 4096)))
    ids = {f"{kind}_token_id": tokenizer.convert_tokens_to_ids(SPECIAL_TOKENS[f"{kind}_token"])
           for kind in ("pad", "bos", "eos")}
    config = AutoConfig.for_model(model_type, vocab_size=len(tokenizer), **ids, **values)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    log(f"random {model_type}: {sum(p.numel() for p in model.parameters()):,} parameters, "
        f"tokenizer of {len(tokenizer)} tokens trained on {len(texts)} texts")
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
