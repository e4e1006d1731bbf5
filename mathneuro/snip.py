"""SNIP importance (gradient-based, for comparison): S_ij = Σ_samples |W_ij · ∂L_sample/∂W_ij|.

The paper's case for forward passes is that gradient-based importance (Panigrahi et al. 2023;
SNIP in boyiwei/alignment-attribution-code) costs too much for large models. This module computes
it on the same samples and target matrices as the activation statistics, so its sets can be made
the way MathNeuro's are (top-K per matrix, the skill's minus the controls') and compared with them,
and its cost measured (benchmarks/bench_snip.py).

**Which sum.** Each sample's loss is its own language-modelling loss (the mean over its
tokens), and the absolute value is taken per sample before summing:
Σ_s |W ⊙ ∇W L_s|. A batched backward, as alignment-attribution-code runs it, gives
|W ⊙ Σ_s ∇W L_s| per batch instead, where gradients of different samples cancel before the
absolute value; the two differ whenever samples pull a weight in opposite directions. Here each
sample goes through the model alone (no padding), forward and back: one forward and one backward
pass per sample, the least a per-sample gradient costs without holding a weight-sized gradient
per sample. (A batched forward with one backward per sample through the shared graph is exact
too, but each of those backward passes costs a whole batch's: 15.4x the forward-only collection
at 8 texts per batch on the toy, against 3.0x one at a time on the toy of then; one at a time
costs 4.3x on today's toy and 4.2x on SmolLM2-135M, ``benchmarks/README.md``.)

The scores are an :class:`~mathneuro.collect.ActivationStats` with ``statistic="snip_scores"`` whose
``stats`` hold one full score matrix per target (not a vector per input feature), so
``mathneuro.select.top_k`` selects from them directly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import torch
from torch import nn

from mathneuro.collect import ActivationStats
from mathneuro.select import SCORES
from mathneuro.targets import Target, expert_view, find_targets, unscored

STATISTIC = SCORES  # the statistic mathneuro.select reads as scores already


def _loss(model: nn.Module, input_ids: torch.Tensor) -> torch.Tensor:
    """One sample's mean next-token loss over its tokens; ``input_ids`` has shape (1, pos)."""
    logits = model(input_ids=input_ids).logits[0, :-1].float()  # (pos - 1, vocab)
    return torch.nn.functional.cross_entropy(logits, input_ids[0, 1:])


def snip_scores(model: nn.Module, tokenizer, texts: Sequence[str], *, max_length: int = 256,
                targets: Sequence[Target] | None = None) -> ActivationStats:
    """Σ over ``texts`` of |W ⊙ ∇W L_text| for every target matrix (module docstring): one
    forward and one backward pass per text. Texts are tokenized with the tokenizer's special
    tokens and truncated to ``max_length`` tokens."""
    from mathneuro.collect import _tokenize

    targets = list(targets) if targets is not None else find_targets(model)
    params = {t.param_name: t.parameter for t in targets}
    # put back at the end: the model as it was found
    trainable, training = {param: param.requires_grad for param in model.parameters()}, model.training
    for param in model.parameters():
        param.requires_grad_(False)
    for param in params.values():
        param.requires_grad_(True)
    device = next(model.parameters()).device
    ids, truncated = _tokenize(tokenizer, texts, max_length)
    scores = {t.name: torch.zeros(t.weight.shape, dtype=torch.float32, device=device) for t in targets}
    names = list(params)
    model.eval()  # no dropout: the gradient of the model that is scored
    try:
        for seq in ids:
            if len(seq) < 2:
                continue  # no next token to predict: no loss, no gradient
            loss = _loss(model, torch.tensor([seq], dtype=torch.long, device=device))
            grads = dict(zip(names, torch.autograd.grad(loss, [params[n] for n in names])))
            with torch.no_grad():
                for t in targets:
                    grad = grads[t.param_name]
                    if t.expert is not None:
                        grad = expert_view(grad, t.experts)[t.expert]
                    scores[t.name] += (t.weight.detach().float() * grad.float()).abs_()
    finally:  # the model as it was found
        for param, flag in trainable.items():
            param.requires_grad_(flag)
        model.train(training)
    return ActivationStats(
        stats={name: s.cpu() for name, s in scores.items()}, statistic=STATISTIC, n_samples=len(ids),
        n_tokens=sum(map(len, ids)), n_truncated=int(sum(truncated)),
        layout={t.name: t.layout() for t in targets},
        metadata={"model": type(model).__name__, "max_length": str(max_length),
                  "model_parameters": str(sum(p.numel() for p in model.parameters())),
                  "unscored": json.dumps(unscored(model, targets))},
    )
