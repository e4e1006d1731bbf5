"""SNIP importance (mathneuro.snip) against a reference that takes one sample at a time through
the model, and its sets through the selection the activation statistics use."""

from __future__ import annotations

import pytest
import torch
from conftest import tiny_gpt2, tiny_llama

from mathneuro.select import top_k
from mathneuro.snip import snip_scores
from mathneuro.targets import find_targets

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = ["2 + 3 = 5", "The cat sat on the mat, then left.", "12 * 4 = 48; 48 - 8 = 40", "a", "Why? Because."]


def reference(model, tokenizer, texts) -> dict[str, torch.Tensor]:
    """Σ |W ⊙ ∇W L| with each text alone through the model (no padding), its loss the model's own
    language-modelling loss, every parameter's gradient from a fresh backward pass."""
    targets = find_targets(model)
    scores = {t.name: torch.zeros(t.weight.shape) for t in targets}
    for text in texts:
        ids = tokenizer(text, return_tensors="pt")["input_ids"]
        model.zero_grad(set_to_none=True)
        for p in model.parameters():
            p.requires_grad_(True)
        model(input_ids=ids, labels=ids).loss.backward()
        for t in targets:
            scores[t.name] += (t.weight.detach() * t.parameter.grad.view_as(t.parameter)).abs()
    for p in model.parameters():
        p.requires_grad_(False)
    return scores


@pytest.mark.parametrize("build", [tiny_llama, tiny_gpt2], ids=["llama", "gpt2 (Conv1D)"])
def test_snip_is_the_per_sample_sum(tokenizer, build):
    model = build(len(tokenizer))
    model.lm_head.weight.requires_grad_(False)  # a frozen parameter stays frozen, the others trainable
    model.train()
    flags = {name: p.requires_grad for name, p in model.named_parameters()}
    got = snip_scores(model, tokenizer, TEXTS)  # scored in eval mode (no dropout), then put back
    assert {name: p.requires_grad for name, p in model.named_parameters()} == flags  # left as it was found
    assert model.training and any(flags.values()) and not all(flags.values())
    expected = reference(model.eval(), tokenizer, TEXTS)
    assert got.statistic == "snip_scores" and got.n_samples == len(TEXTS)
    assert set(got.stats) == set(expected)
    for name, score in expected.items():
        assert torch.allclose(got.stats[name], score, rtol=1e-4, atol=1e-7), name


def test_the_per_sample_sum_is_not_the_batched_gradients_score(tokenizer):
    """|W ⊙ Σ ∇L| (one backward of the summed losses, as alignment-attribution-code per batch) is
    at most the per-sample sum everywhere, and smaller where samples pull a weight apart."""
    model = tiny_llama(len(tokenizer))
    per_sample = snip_scores(model, tokenizer, TEXTS).stats
    for p in model.parameters():
        p.requires_grad_(True)
    total = sum(model(input_ids=(ids := tokenizer(t, return_tensors="pt")["input_ids"]), labels=ids).loss for t in TEXTS)
    total.backward()
    targets = find_targets(model)
    smaller = 0
    for t in targets:
        batched = (t.weight.detach() * t.parameter.grad).abs()
        assert (batched <= per_sample[t.name] + 1e-6).all()
        smaller += int((batched < per_sample[t.name] - 1e-6).sum())
    assert smaller > 0


def test_top_k_selects_from_snip_scores_directly(tokenizer):
    model = tiny_llama(len(tokenizer))
    scores = snip_scores(model, tokenizer, TEXTS)
    mask = top_k(model, scores, 0.1)
    for t in find_targets(model):
        chosen = mask[t.param_name]
        k = int(t.weight.numel() * 0.1)
        assert int(chosen.sum()) == k
        threshold = scores.stats[t.name][chosen].min()
        assert (scores.stats[t.name][~chosen] <= threshold).all()  # the k largest scores, nothing else
