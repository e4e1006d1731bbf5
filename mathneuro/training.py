"""One training loop for every model the project trains: the toy from scratch (mathneuro.toy) and
the fine-tuning edits (mathneuro.finetune), which train a set's entries only or every parameter.

Texts become ``<s> text </s>`` rows (:func:`encode`, with the tokens of a prompt left out of the
loss when asked), batches are drawn at random under a seed (uniformly, or a group by weight and
then texts within it, :func:`batch_sampler`), the learning rate warms up linearly and decays by
a cosine to 10 % (:func:`lr_at`), gradients are clipped to norm 1, and the optimizer is AdamW
(betas 0.9, 0.98) or SGD. The same data, seed and machine give bit-identical results.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterable, Sequence

import torch

Log = Callable[[str], None]
Row = tuple[list[int], int]  # token ids, number of leading tokens without loss
OPTIMIZERS = ("adamw", "sgd")


def encode(tokenizer, texts: Sequence[str], max_length: int, prompt_chars: Sequence[int] | None = None) -> list[Row]:
    """Tokenize ``texts`` as ``<s> text </s>`` (truncated to ``max_length`` tokens).

    With ``prompt_chars``, the tokens lying within the first ``prompt_chars[i]`` characters of
    text ``i`` (and ``<s>``) are marked as prompt: they get no loss.
    """
    enc = tokenizer(list(texts), add_special_tokens=True, return_offsets_mapping=True)
    rows = []
    for i, (ids, offsets) in enumerate(zip(enc["input_ids"], enc["offset_mapping"])):
        n_prompt = 0
        if prompt_chars is not None:
            n_prompt = 1 + sum(1 for start, end in offsets[1:] if end <= prompt_chars[i])
        rows.append(((ids + [tokenizer.eos_token_id])[:max_length], n_prompt))
    return rows


def collate(rows: list[Row], pad_id: int) -> dict[str, torch.Tensor]:
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


def lr_at(step: int, steps: int, lr: float, warmup: int) -> float:
    """Linear warm-up then cosine decay to 10% of ``lr``."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def batch_sampler(groups: Sequence[Sequence[int]], weights: Sequence[float], batch_size: int,
                  rng: random.Random) -> Callable[[], list[int]]:
    """A function drawing one batch of text indices.

    Each batch comes from a single group (chosen by ``weights``), so texts of similar length
    share a batch and little compute is spent on padding.
    """
    if any(len(g) == 0 for g, w in zip(groups, weights) if w > 0):
        raise ValueError("every group with a positive weight needs at least one text")

    def draw() -> list[int]:
        group = rng.choices(groups, weights=weights)[0]
        return [group[rng.randrange(len(group))] for _ in range(batch_size)]
    return draw


def make_optimizer(name: str, parameters: list[torch.Tensor], lr: float, weight_decay: float) -> torch.optim.Optimizer:
    """AdamW (betas 0.9, 0.98; decoupled weight decay) or SGD (weight decay as L2), over
    ``parameters`` only: an optimizer's state exists for what it trains, nothing else."""
    if name == "adamw":
        return torch.optim.AdamW(parameters, lr=lr, weight_decay=weight_decay, betas=(0.9, 0.98))
    if name == "sgd":
        return torch.optim.SGD(parameters, lr=lr, weight_decay=weight_decay)
    raise ValueError(f"unknown optimizer {name!r}; choose one of {OPTIMIZERS}")


def train(model, tokenizer, texts: Sequence[str], *, steps: int = 1000, batch_size: int = 32,
          lr: float = 3e-3, seed: int = 0, warmup: int = 100, weight_decay: float = 0.01,
          max_length: int = 256, groups: Sequence[Sequence[int]] | None = None,
          weights: Sequence[float] | None = None, prompt_chars: Sequence[int] | None = None,
          parameters: Iterable[torch.Tensor] | None = None,
          loss: Callable[[dict[str, torch.Tensor]], torch.Tensor] | None = None, optimizer: str = "adamw",
          log_every: int = 100, log: Log = print) -> list[float]:
    """Train on ``texts``; return the loss of every step.

    Batches draw texts at random (seeded): uniformly, or, given ``groups`` (lists of indices
    into ``texts``) and ``weights``, a group by weight and then ``batch_size`` texts within
    that group. With ``prompt_chars`` (per text: how many leading characters are prompt) the
    loss covers only the rest of each text (the answer). ``parameters`` (default: the model's)
    are what the optimizer updates and the gradient clipping measures; ``loss(batch)`` (default:
    the model's language-modelling loss on the batch) is what it minimises. Progress goes to
    ``log`` every ``log_every`` steps.
    """
    if not texts:
        raise ValueError("train() needs at least one text")
    rows = encode(tokenizer, texts, max_length, prompt_chars)
    cut = sum(1 for ids, n_prompt in rows if n_prompt >= len(ids))
    if cut:  # a batch of such rows has no token to learn from: its loss is NaN, and so the weights after it
        raise ValueError(f"{cut} of {len(rows)} texts keep no token of their answer within max_length={max_length}: "
                         "raise max_length, or train on every token")
    groups = groups or [range(len(texts))]
    weights = weights or [1.0] * len(groups)
    draw = batch_sampler(groups, weights, batch_size, random.Random(seed))
    torch.manual_seed(seed)
    parameters = list(model.parameters() if parameters is None else parameters)
    opt = make_optimizer(optimizer, parameters, lr, weight_decay)
    loss = loss or (lambda batch: model(**batch).loss)
    model.train()
    losses: list[float] = []
    start, cpu_start = time.perf_counter(), time.process_time()
    try:
        for step in range(steps):
            for group in opt.param_groups:
                group["lr"] = lr_at(step, steps, lr, warmup)
            value = loss(collate([rows[i] for i in draw()], tokenizer.pad_token_id))
            opt.zero_grad(set_to_none=True)
            value.backward()
            torch.nn.utils.clip_grad_norm_(parameters, 1.0)
            opt.step()
            losses.append(value.item())
            if (step + 1) % log_every == 0 or step + 1 == steps:
                window = losses[-log_every:]
                log(f"step {step + 1}/{steps} loss {sum(window) / len(window):.4f} "
                    f"elapsed {time.perf_counter() - start:.1f}s (cpu {time.process_time() - cpu_start:.1f}s)")
    finally:
        model.eval()
    return losses
