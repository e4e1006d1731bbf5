"""The MathNeuro method on tiny random Llama and GPT-2 models, against plain references."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import TEXTS, tiny_gpt2, tiny_llama

import mathneuro
from mathneuro import ActivationStats, ParameterMask, find_targets
from mathneuro.lape import specific_neurons

FRACTIONS = [0.01, 0.05, 0.15]


def reference_scores(model, tokenizer, texts, targets=None) -> dict[str, torch.Tensor]:
    """The original code's way: one sample at a time, |W|·‖X_j‖ materialised and summed."""
    targets = targets or find_targets(model)
    totals = {t.param_name: torch.zeros(t.weight.shape, dtype=torch.float64) for t in targets}
    for text in texts:
        seen = {}
        hooks = [
            t.module.register_forward_pre_hook(lambda m, a, name=t.name: seen.__setitem__(name, a[0][0]))
            for t in targets
        ]
        ids = tokenizer(text, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            model(ids)
        for h in hooks:
            h.remove()
        for t in targets:
            norm = seen[t.name].double().norm(dim=0)  # (d_in,): L2 over this sample's tokens
            w = t.weight.detach().abs().double()
            totals[t.param_name] += w * (norm[:, None] if t.transposed else norm[None, :])
    return totals


def assert_masks_match_up_to_ties(mask: ParameterMask, scores: dict, fraction: float, rtol=1e-5):
    for name, selected in mask.items():
        s = scores[name].flatten()
        k = int(s.numel() * fraction)
        assert int(selected.sum()) == k, name
        if k == 0:
            continue
        kth = s.topk(k).values[-1]
        reference = s >= kth
        differ = selected.flatten() ^ reference
        # Any disagreement must sit at the threshold, where float rounding decides.
        assert torch.all((s[differ] - kth).abs() <= rtol * kth), f"{name}: {int(differ.sum())} real differences"


@pytest.mark.parametrize("fraction", FRACTIONS)
def test_batched_masks_equal_per_sample_reference(model, tokenizer, fraction):
    stats = mathneuro.collect_statistics(model, tokenizer, TEXTS, batch_size=5)
    mask = mathneuro.top_k(model, stats, fraction)
    assert_masks_match_up_to_ties(mask, reference_scores(model, tokenizer, TEXTS), fraction)


def test_an_untied_lm_head_is_scored_against_the_reference_and_a_tied_one_never(tokenizer):
    """The head reads the decoder's last hidden state, which collection feeds it without running
    the head; the reference runs the whole model and hooks the head itself."""
    model = tiny_llama(len(tokenizer))  # untied
    targets = find_targets(model, untied_lm_head=True)
    assert targets[-1].param_name == "lm_head.weight" and len(targets) == len(find_targets(model)) + 1
    stats = mathneuro.collect_statistics(model, tokenizer, TEXTS, batch_size=5, targets=targets)
    mask = mathneuro.top_k(model, stats, 0.05, targets=targets)
    assert_masks_match_up_to_ties(mask, reference_scores(model, tokenizer, TEXTS, targets), 0.05)
    gpt2 = tiny_gpt2(len(tokenizer))  # ties its head to the token embeddings
    assert [t.name for t in find_targets(gpt2, untied_lm_head=True)] == [t.name for t in find_targets(gpt2)]


def test_identify_is_top_k_of_each_data_set_and_the_skill_minus_each_control(tokenizer):
    model = tiny_llama(len(tokenizer))
    stats = {name: mathneuro.collect_statistics(model, tokenizer, texts)
             for name, texts in {"math": TEXTS[:4], "a": TEXTS[4:8], "b": TEXTS[8:]}.items()}
    top, specific = mathneuro.identify(model, stats, "math", 0.05)
    for name in stats:
        assert top[name] == mathneuro.top_k(model, stats[name], 0.05)
    assert set(specific) == {"a", "b"}
    for control in ("a", "b"):
        assert specific[control] == top["math"] - top[control]
        assert specific[control].count() <= top["math"].count()
    union = mathneuro.specific(top["math"], top["a"], top["b"])  # mathneuro_all: minus every control
    for name, chosen in union.items():
        assert torch.equal(chosen, top["math"][name] & ~top["a"][name] & ~top["b"][name]), name
    assert union == specific["a"] & specific["b"]


def test_selection_reads_weights_from_the_checkpoint_as_from_the_model(tokenizer, tmp_path):
    from mathneuro.models import stored_weights
    from mathneuro.targets import stored_targets

    model = tiny_llama(len(tokenizer))
    model.save_pretrained(tmp_path)
    stats = mathneuro.collect_statistics(model, tokenizer, TEXTS)
    names = [info["param"] for info in stats.layout.values()]
    for dtype in ("float32", "bfloat16"):
        loaded = model.to(getattr(torch, dtype))
        with stored_weights(str(tmp_path), names, dtype=dtype) as read:
            from_disk = mathneuro.top_k(None, stats, 0.05, targets=stored_targets(stats.layout, read))
        assert from_disk == mathneuro.top_k(loaded, stats, 0.05)
    assert int(stats.metadata["model_parameters"]) == sum(p.numel() for p in model.parameters())
    with pytest.raises(LookupError, match="no tensor"):
        with stored_weights(str(tmp_path), ["model.layers.0.renamed.weight"]):
            pass


def test_difference_matches_reference(tokenizer):
    model = tiny_llama(len(tokenizer))
    math_texts, other = TEXTS[:6], TEXTS[6:]
    got = mathneuro.top_k(model, mathneuro.collect_statistics(model, tokenizer, math_texts), 0.05) - mathneuro.top_k(
        model, mathneuro.collect_statistics(model, tokenizer, other), 0.05
    )
    ref_a, ref_b = reference_scores(model, tokenizer, math_texts), reference_scores(model, tokenizer, other)
    for name, selected in got.items():
        k = int(ref_a[name].numel() * 0.05)
        top_a = ref_a[name] >= ref_a[name].flatten().topk(k).values[-1]
        top_b = ref_b[name] >= ref_b[name].flatten().topk(k).values[-1]
        assert torch.equal(selected, top_a & ~top_b), name


def test_batch_size_does_not_change_statistics_or_masks(model, tokenizer):
    one = mathneuro.collect_statistics(model, tokenizer, TEXTS, batch_size=1)
    many = mathneuro.collect_statistics(model, tokenizer, TEXTS, batch_size=16)
    assert one.stats.keys() == many.stats.keys()
    for name in one.stats:
        torch.testing.assert_close(one.stats[name], many.stats[name], rtol=1e-5, atol=1e-6)
    assert (one.n_tokens, one.n_samples) == (many.n_tokens, many.n_samples)
    for fraction in FRACTIONS:
        scores = {t.param_name: t.importance(one.stats[t.name]).double() for t in find_targets(model)}
        assert_masks_match_up_to_ties(mathneuro.top_k(model, many, fraction), scores, fraction)


@pytest.mark.parametrize("statistic", ["norm", "wanda"])
def test_prefix_statistics_equal_separate_collections(tokenizer, statistic):
    model = tiny_llama(len(tokenizer))
    sizes = [1, 4, len(TEXTS) - 1]
    seen = []
    prefixes = mathneuro.collect_prefix_statistics(
        model, tokenizer, TEXTS, [sizes[2], sizes[0], sizes[1], sizes[0]], batch_size=3, max_length=12,
        statistic=statistic, lape=True, progress=lambda done, total: seen.append((done, total)),
    )
    assert list(prefixes) == sizes and seen[-1] == (sizes[-1], sizes[-1])  # one pass, to the largest
    for n in sizes:
        alone = mathneuro.collect_statistics(model, tokenizer, TEXTS[:n], batch_size=3, max_length=12,
                                             statistic=statistic, lape=True)
        got = prefixes[n]
        assert (got.n_samples, got.n_tokens, got.n_truncated) == (alone.n_samples, alone.n_tokens, alone.n_truncated)
        assert got.n_truncated > 0 or n == 1  # max_length 12 truncates the longer texts
        for name in alone.stats:
            torch.testing.assert_close(got.stats[name], alone.stats[name], rtol=1e-5, atol=1e-6)
        for name in alone.lape_counts:
            assert torch.equal(got.lape_counts[name], alone.lape_counts[name])


@pytest.mark.parametrize("sizes", [[], [0], [len(TEXTS) + 1], [2.5]])
def test_prefix_sizes_must_be_counts_within_the_texts(model, tokenizer, sizes):
    with pytest.raises(ValueError, match="sizes must be sample counts"):
        mathneuro.collect_prefix_statistics(model, tokenizer, TEXTS, sizes)


def test_wanda_statistic_is_root_sum_of_squares_over_all_tokens(tokenizer):
    model = tiny_llama(len(tokenizer))
    stats = mathneuro.collect_statistics(model, tokenizer, TEXTS, batch_size=4, statistic="wanda")
    target = find_targets(model)[0]
    rows = []
    hook = target.module.register_forward_pre_hook(lambda m, a: rows.append(a[0][0]))
    with torch.no_grad():
        for text in TEXTS:
            model(tokenizer(text, return_tensors="pt")["input_ids"])
    hook.remove()
    expected = torch.cat(rows).double().square().sum(0).sqrt()
    torch.testing.assert_close(stats.stats[target.name].double(), expected, rtol=1e-5, atol=1e-6)


def test_same_input_gives_bit_identical_masks_and_exact_round_trip(model, tokenizer, tmp_path):
    masks = [mathneuro.top_k(model, mathneuro.collect_statistics(model, tokenizer, TEXTS), 0.05) for _ in range(2)]
    assert masks[0] == masks[1]
    masks[0].save(tmp_path / "mask.safetensors")
    loaded = ParameterMask.load(tmp_path / "mask.safetensors")
    assert loaded == masks[0] and loaded.provenance == masks[0].provenance
    stats = mathneuro.collect_statistics(model, tokenizer, TEXTS, lape=True)
    stats.save(tmp_path / "stats.safetensors")
    back = ActivationStats.load(tmp_path / "stats.safetensors")
    assert all(torch.equal(back.stats[k], v) for k, v in stats.stats.items())
    assert all(torch.equal(back.lape_counts[k], v) for k, v in stats.lape_counts.items())
    assert (back.n_tokens, back.n_samples, back.statistic) == (stats.n_tokens, stats.n_samples, "norm")


def test_mask_costs_one_bit_per_parameter_on_disk(tokenizer, tmp_path):
    model = tiny_llama(len(tokenizer))
    mask = mathneuro.top_k(model, mathneuro.collect_statistics(model, tokenizer, TEXTS), 0.05)
    mask.save(tmp_path / "mask.safetensors")
    payload = sum(math.ceil(m.numel() / 8) for m in mask.values())
    size = (tmp_path / "mask.safetensors").stat().st_size
    assert payload <= size < payload + 8192  # header: names, shapes, provenance


def test_row_and_global_scopes(model, tokenizer):
    stats = mathneuro.collect_statistics(model, tokenizer, TEXTS)
    targets = find_targets(model)
    rows = mathneuro.top_k(model, stats, 0.15, scope="row")
    for t in targets:
        per_unit = rows[t.param_name].sum(0 if t.transposed else 1)  # per output unit
        assert torch.all(per_unit == int(t.in_features * 0.15)), t.name
    glob = mathneuro.top_k(model, stats, 0.05, scope="global")
    total = sum(t.weight.numel() for t in targets)
    assert glob.count() == int(total * 0.05)
    scores = {t.param_name: t.importance(stats.stats[t.name]) for t in targets}
    chosen = torch.cat([scores[n][m] for n, m in glob.items()])
    rest = torch.cat([scores[n][~m] for n, m in glob.items()])
    assert chosen.min() >= rest.max()


def test_global_scope_breaks_ties_by_order(tokenizer):
    model = tiny_llama(len(tokenizer))
    with torch.no_grad():
        for t in find_targets(model):
            t.weight.fill_(1.0)  # every score in a matrix equal: only tie-breaking decides
    stats = mathneuro.collect_statistics(model, tokenizer, TEXTS)
    for name in stats.stats:
        stats.stats[name] = torch.ones_like(stats.stats[name])
    mask = mathneuro.top_k(model, stats, 0.05, scope="global")
    first = next(iter(mask.values())).flatten()
    k = int(mask.numel() * 0.05)
    assert mask.count() == k and bool(first[: min(k, first.numel())].all())
    matrix = mathneuro.top_k(model, stats, 0.05)
    for m in matrix.values():
        flat = m.flatten()
        assert bool(flat[: int(flat.numel() * 0.05)].all()) and not bool(flat[int(flat.numel() * 0.05) :].any())


def test_set_algebra_and_overlap(tokenizer):
    model = tiny_llama(len(tokenizer))
    a = mathneuro.top_k(model, mathneuro.collect_statistics(model, tokenizer, TEXTS[:6]), 0.15)
    b = mathneuro.top_k(model, mathneuro.collect_statistics(model, tokenizer, TEXTS[6:]), 0.15)
    assert (a - b).count() + (a & b).count() == a.count()
    assert (a | b).count() == a.count() + b.count() - (a & b).count()
    stats = mathneuro.overlap(a, b)
    assert stats["jaccard"] == pytest.approx((a & b).count() / (a | b).count())
    assert stats["overlap_rate"] == pytest.approx((a & b).count() / a.count())
    assert mathneuro.overlap(a, a)["jaccard"] == 1.0


def test_random_baseline_has_exact_per_matrix_counts(tokenizer):
    model = tiny_llama(len(tokenizer))
    a = mathneuro.top_k(model, mathneuro.collect_statistics(model, tokenizer, TEXTS[:6]), 0.15)
    b = mathneuro.top_k(model, mathneuro.collect_statistics(model, tokenizer, TEXTS[6:]), 0.15)
    specific = a - b
    rand = mathneuro.random_like(specific, seed=3)
    assert rand.counts() == specific.counts()
    assert rand == mathneuro.random_like(specific, seed=3)
    assert rand != mathneuro.random_like(specific, seed=4)
    assert mathneuro.overlap(rand, specific)["jaccard"] < 0.5


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("factor", [0.0, 1.1])
def test_apply_and_restore_is_exact(model, tokenizer, dtype, factor):
    model = model.to(dtype)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    mask = mathneuro.top_k(model, mathneuro.collect_statistics(model, tokenizer, TEXTS), 0.05)
    with mathneuro.apply_mask(model, mask, factor) as edit:
        params = dict(model.named_parameters())
        for name, selected in mask.items():
            expected = (before[name][selected] * factor).to(dtype)
            assert torch.equal(params[name][selected], expected), name
            assert torch.equal(params[name][~selected], before[name][~selected]), name
    assert edit.restored
    for name, param in model.named_parameters():
        assert torch.equal(param, before[name]), name


def test_lape_selects_low_entropy_neurons_and_masks_their_output_weights(tokenizer):
    probs = torch.full((2, 10, 2), 0.5, dtype=torch.float64)
    probs[0, 3] = torch.tensor([0.9, 0.0])  # fires on set 0 only: specific to it
    probs[1, 7] = torch.tensor([0.0, 0.95])  # specific to set 1
    specific = specific_neurons(probs, top_rate=0.1, filter_rate=0.9, activation_bar_ratio=0.9)
    assert specific[0, 3, 0] and specific[1, 7, 1]
    assert int(specific.sum()) == 2

    model = tiny_llama(len(tokenizer))
    stats = {
        "math": mathneuro.collect_statistics(model, tokenizer, TEXTS[:6], lape=True),
        "other": mathneuro.collect_statistics(model, tokenizer, TEXTS[6:], lape=True),
    }
    mask = mathneuro.lape_mask(model, stats, "math", top_rate=0.2)
    for layer in range(2):
        down = mask[f"model.layers.{layer}.mlp.down_proj.weight"]
        assert torch.equal(down.all(0), down.any(0))  # whole columns: one per neuron, its output
        for other in ("mlp.gate_proj", "mlp.up_proj", "self_attn.q_proj"):
            assert not mask[f"model.layers.{layer}.{other}.weight"].any()
    assert mask.count() > 0 and mask.count() % model.config.hidden_size == 0


@pytest.mark.parametrize("factor", [0.0, 1.1, 2.0])
def test_editing_a_lape_set_multiplies_each_neurons_output_by_the_factor_once(tokenizer, factor):
    """The MLP's output with a LAPE set edited equals the unedited MLP's with the selected neurons'
    activations multiplied by the factor (hooked), for pruning and scaling alike."""
    model = tiny_llama(len(tokenizer)).eval()
    stats = {name: mathneuro.collect_statistics(model, tokenizer, texts, lape=True)
             for name, texts in (("math", TEXTS[:6]), ("other", TEXTS[6:]))}
    mask = mathneuro.lape_mask(model, stats, "math", top_rate=0.3, filter_rate=0.5, activation_bar_ratio=0.5)
    mlp = model.model.layers[0].mlp
    neurons = mask["model.layers.0.mlp.down_proj.weight"].any(0)
    assert neurons.any()
    x = torch.randn(3, model.config.hidden_size)
    with torch.no_grad():
        scale = torch.where(neurons, factor, 1.0)
        expected = mlp.down_proj(mlp.act_fn(mlp.gate_proj(x)) * mlp.up_proj(x) * scale)
        with mathneuro.apply_mask(model, mask, factor):
            got = mlp(x)
    torch.testing.assert_close(got, expected)


def test_truncation_is_counted(tokenizer):
    model = tiny_llama(len(tokenizer))
    stats = mathneuro.collect_statistics(model, tokenizer, TEXTS, max_length=20)
    assert stats.n_truncated == sum(len(t) > 20 for t in TEXTS)
    assert stats.n_tokens == sum(min(len(t), 20) for t in TEXTS)


def test_hooks_are_removed_even_when_collection_fails(tokenizer):
    model = tiny_llama(len(tokenizer))
    with torch.no_grad():
        model.model.layers[1].self_attn.o_proj.weight[0, 0] = float("nan")
    with pytest.raises(FloatingPointError, match=r"model\.layers\.1\.mlp"):
        mathneuro.collect_statistics(model, tokenizer, TEXTS)
    assert all(not m._forward_pre_hooks and not m._forward_hooks for m in model.modules())


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m, t, s: mathneuro.top_k(m, s, 0.0), r"\(0, 1\]"),
        (lambda m, t, s: mathneuro.top_k(m, s, 1.5), r"\(0, 1\]"),
        (lambda m, t, s: mathneuro.top_k(m, s, 0.05, scope="column"), "unknown scope"),
        (lambda m, t, s: mathneuro.collect_statistics(m, t, []), "empty text list"),
        (lambda m, t, s: mathneuro.collect_statistics(m, t, TEXTS, statistic="mean"), "unknown statistic"),
        (lambda m, t, s: mathneuro.find_targets(torch.nn.ModuleDict({"conv": torch.nn.Conv2d(1, 1, 1)})), "no target layers"),
        (lambda m, t, s: mathneuro.find_targets(torch.nn.Sequential(torch.nn.Conv2d(1, 1, 1))), r"cannot score: \['0\.weight"),
        (lambda m, t, s: mathneuro.find_targets(m, include=[r"nothing"]), "no target layers"),
        (lambda m, t, s: mathneuro.apply_mask(tiny_gpt2(len(t)), mathneuro.top_k(m, s, 0.05), 0.0), "another model"),
    ],
)
def test_bad_input_gets_a_clear_error(tokenizer, call, message):
    model = tiny_llama(len(tokenizer))
    stats = mathneuro.collect_statistics(model, tokenizer, TEXTS[:2])
    with pytest.raises(ValueError, match=message):
        call(model, tokenizer, stats)


def test_mask_for_other_shapes_is_rejected_before_editing(tokenizer):
    small, wide = tiny_llama(len(tokenizer)), tiny_llama(len(tokenizer))
    wide.model.layers[0].mlp.gate_proj = torch.nn.Linear(32, 64, bias=False)
    wide.model.layers[0].mlp.up_proj = torch.nn.Linear(32, 64, bias=False)
    wide.model.layers[0].mlp.down_proj = torch.nn.Linear(64, 32, bias=False)
    mask = mathneuro.top_k(small, mathneuro.collect_statistics(small, tokenizer, TEXTS[:3]), 0.05)
    before = {n: p.detach().clone() for n, p in wide.named_parameters()}
    with pytest.raises(ValueError, match="shape mismatch"):
        mathneuro.apply_mask(wide, mask, 0.0)
    assert all(torch.equal(p, before[n]) for n, p in wide.named_parameters())
    with pytest.raises(ValueError, match="shape mismatch"):
        _ = mask - mathneuro.top_k(wide, mathneuro.collect_statistics(wide, tokenizer, TEXTS[:3]), 0.05)


def test_tied_weights_are_counted_once(tokenizer):
    model = tiny_llama(len(tokenizer))
    layer = model.model.layers[0]
    layer.mlp.up_proj.weight = layer.mlp.gate_proj.weight  # same shape: a tied pair
    names = [t.param_name for t in find_targets(model)]
    assert len(names) == len(set(names))
    assert "model.layers.0.mlp.gate_proj.weight" in names
    assert "model.layers.0.mlp.up_proj.weight" not in names
