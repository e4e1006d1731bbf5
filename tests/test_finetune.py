"""Fine-tuning a set's entries (mathneuro.finetune): every other entry bit-identical whatever the
optimizer does (weight decay included), the optimizer's state for the trained entries alone, the
same updates as full training with the other entries' gradients masked, and what was trained
put back exactly."""

from __future__ import annotations

import copy

import pytest
import torch
from conftest import tiny_gpt2, tiny_llama

from mathneuro import training
from mathneuro.finetune import apply_trained, finetune, load_trained, save_trained
from mathneuro.masks import ParameterMask
from mathneuro.targets import find_targets

pytestmark = pytest.mark.usefixtures("one_thread")

TEXTS = [f"{a} + {b} = {a + b}" for a in range(7) for b in range(5)]
RUN = {"steps": 6, "batch_size": 4, "lr": 0.05, "warmup": 2, "max_length": 32, "seed": 3}


def some_entries(model, share: float = 0.1, seed: int = 0) -> ParameterMask:
    """A set over the model's target matrices: a random ``share`` of each."""
    generator = torch.Generator().manual_seed(seed)
    masks = {}
    for t in find_targets(model):
        masks[t.param_name] = torch.rand(t.parameter.shape, generator=generator) < share
    return ParameterMask(masks)


@pytest.mark.parametrize("build", [tiny_llama, tiny_gpt2], ids=["llama", "gpt2 (Conv1D)"])
@pytest.mark.parametrize("optimizer, weight_decay", [("adamw", 0.1), ("sgd", 0.1), ("adamw", 0.0)])
def test_only_the_sets_entries_change_and_the_optimizer_holds_only_them(tokenizer, monkeypatch, build, optimizer,
                                                                        weight_decay):
    model = build(len(tokenizer))
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    mask = some_entries(model)
    made = []
    real = training.make_optimizer
    monkeypatch.setattr(training, "make_optimizer", lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    trained = finetune(model, tokenizer, TEXTS, mask, optimizer=optimizer, weight_decay=weight_decay, log=lambda _: None,
                       **RUN)
    after = dict(model.named_parameters())
    for name, original in before.items():
        chosen = mask[name] if name in mask.counts() else torch.zeros_like(original, dtype=torch.bool)
        assert torch.equal(after[name][~chosen], original[~chosen]), name  # bit for bit
        if chosen.any():
            assert not torch.equal(after[name][chosen], original[chosen]), name
    # What finetune returns is the whole of what it trained: put into an untouched copy of the
    # model, it gives the trained model bit for bit.
    fresh = build(len(tokenizer))
    apply_trained(fresh, trained, mask)
    assert sorted(trained) == sorted(name for name in before if name in mask.counts() and mask[name].any())
    for name, param in fresh.named_parameters():
        assert torch.equal(param, after[name]), name
    state = made[0].state
    held = sum(t.numel() for s in state.values() for key, t in s.items() if key != "step")
    per_entry = {"adamw": 2, "sgd": 0}[optimizer]  # AdamW's two moments; plain SGD keeps none
    assert held == per_entry * mask.count()
    assert sum(p.numel() for group in made[0].param_groups for p in group["params"]) == mask.count()


def test_the_sets_updates_are_full_training_with_the_other_gradients_masked(tokenizer):
    """Plain SGD without weight decay: training only the entries is training everything with
    every other entry's gradient set to zero (the clipping's norm is the same: theirs is zero)."""
    model = tiny_llama(len(tokenizer))
    reference = copy.deepcopy(model)
    mask = some_entries(model, 0.3)
    finetune(model, tokenizer, TEXTS, mask, optimizer="sgd", weight_decay=0.0, log=lambda _: None, **RUN)
    chosen = {name: mask[name] if name in mask.counts() else torch.zeros_like(p, dtype=torch.bool)
              for name, p in reference.named_parameters()}
    for name, param in reference.named_parameters():
        param.register_hook(lambda grad, keep=chosen[name]: grad * keep)
    training.train(reference, tokenizer, TEXTS, optimizer="sgd", weight_decay=0.0, log=lambda _: None, **RUN)
    for (name, mine), theirs in zip(model.named_parameters(), reference.parameters()):
        assert torch.allclose(mine, theirs, atol=1e-6), name


def test_relearning_starts_from_the_pruned_set_and_full_training_from_the_pruned_model(tokenizer):
    model = tiny_llama(len(tokenizer))
    original = {name: p.detach().clone() for name, p in model.named_parameters()}
    mask = some_entries(model)
    trained = finetune(copy.deepcopy(model), tokenizer, TEXTS, mask, start_factor=0.0, log=lambda _: None,
                       **{**RUN, "steps": 0})
    assert all(torch.count_nonzero(values) == 0 for values in trained.values())  # no step yet: the pruned entries
    everything = finetune(model, tokenizer, TEXTS, None, start_factor=0.0, start_mask=mask, log=lambda _: None, **RUN)
    assert set(everything) == set(original)
    changed = [name for name, value in everything.items() if not torch.equal(value, original[name])]
    assert len(changed) == len(original)  # every parameter trained, not only the set's


def test_what_was_trained_is_saved_and_put_back_exactly(tokenizer, tmp_path):
    model = tiny_llama(len(tokenizer))
    fresh = copy.deepcopy(model)
    mask = some_entries(model)
    trained = finetune(model, tokenizer, TEXTS, mask, log=lambda _: None, **RUN)
    save_trained(trained, tmp_path / "set.safetensors", scope="set", note="x")
    values, meta = load_trained(tmp_path / "set.safetensors")
    assert meta["scope"] == "set" and meta["note"] == "x"
    assert sum(v.numel() for v in values.values()) == mask.count()  # a sparse delta, not a checkpoint
    apply_trained(fresh, values, mask)
    for (name, a), b in zip(model.named_parameters(), fresh.parameters()):
        assert torch.equal(a, b), name
    with pytest.raises(ValueError, match="trained values for"):
        apply_trained(fresh, {n: v[:-1] for n, v in values.items()}, mask)


# template -> the prompt of the record {"question": "2+3?", "answer": "5", "x": 1.5}
PROMPTS = {
    "Question: {question}\nAnswer: {answer}": "Question: 2+3?\nAnswer: ",
    "{question} => {answer!r} done": "2+3? => ",
    "{x:.2f} and {answer}": "1.50 and ",
    "{answer}": "",
    "no fields": "no fields",
}


@pytest.mark.parametrize("template", PROMPTS)
def test_a_texts_prompt_is_its_template_up_to_the_last_field(tmp_path, template):
    """Training on the answers only (finetune's loss_on: answer) leaves out each text's prompt:
    the template rendered up to its last field."""
    import json

    from mathneuro.data import load_texts

    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"question": "2+3?", "answer": "5", "x": 1.5}) + "\n")
    texts = load_texts({"source": "json", "path": str(path), "template": template}, prompts=True)
    assert texts[0][: texts.prompt_chars[0]] == PROMPTS[template]
    assert load_texts({"source": "json", "path": str(path), "template": template}).prompt_chars is None


def test_a_synthetic_texts_prompt_is_the_tasks_prompt():
    from mathneuro import synthetic
    from mathneuro.data import load_texts

    texts = load_texts({"source": "synthetic", "task": "math", "n_train": 4, "n_test": 0}, prompts=True)
    records = synthetic.generate("math", n_train=4, n_test=0, seed=0)["train"]
    for text, chars, record in zip(texts, texts.prompt_chars, records):
        assert text[:chars] == synthetic.prompt_text("math", record) + " "
        assert text[chars:] == synthetic.target_text("math", record)
