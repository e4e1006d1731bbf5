"""Tests of the toy tokenizer, model and training loop (mathneuro.toy)."""

from __future__ import annotations

import math

import pytest
import torch
from safetensors.torch import load_file

from mathneuro import synthetic, toy, training
from mathneuro.tasks import project_configs

TINY = {"hidden_size": 32, "num_layers": 2, "num_heads": 2, "intermediate_size": 64,
        "max_position_embeddings": 128, "vocab_size": 300}


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def records() -> dict[str, list[dict]]:
    return {t: synthetic.generate(t, n_train=60, n_test=10, seed=3)["train"]
            for t in synthetic.TASKS}


@pytest.fixture(scope="module")
def texts(records) -> list[str]:
    return [synthetic.training_text(t, r) for t, rs in records.items() for r in rs]


@pytest.fixture(scope="module")
def tokenizer(texts):
    return toy.build_tokenizer(texts, vocab_size=300)


def test_tokenizer_round_trip(tokenizer, texts, tmp_path):
    tokenizer.save_pretrained(tmp_path)
    from transformers import AutoTokenizer
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    for tok in (tokenizer, loaded):
        for text in texts:
            ids = tok(text)["input_ids"]
            assert ids[0] == tok.bos_token_id
            assert tok.decode(ids, skip_special_tokens=True) == text
    assert loaded(texts[0])["input_ids"] == tokenizer(texts[0])["input_ids"]
    assert set(loaded(texts[0])) == {"input_ids", "attention_mask"}  # model(**tok(t)) works


def test_tokenizer_special_tokens_and_digits(tokenizer):
    for name in ("pad_token", "bos_token", "eos_token", "unk_token"):
        assert getattr(tokenizer, name) is not None
    assert len({tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id}) == 3
    pieces = tokenizer.tokenize("So 47 + 385 = 432.")
    digits = [p for p in pieces if any(c.isdigit() for c in p)]
    assert all(sum(c.isdigit() for c in p) == 1 for p in digits) and len(digits) == 8


def test_tokenizer_is_deterministic(texts, tokenizer):
    again = toy.build_tokenizer(list(reversed(texts)), vocab_size=300)
    assert again.get_vocab() == tokenizer.get_vocab()


def test_worked_math_answers_fit_the_toy_math_generation_budget(texts):
    tokenizer = toy.build_tokenizer(texts, vocab_size=512)  # the toy model's vocabulary size
    answers = [r["answer"] for r in synthetic.generate("math", n_train=5000, n_test=1, seed=0)["train"]]
    longest = max(len(tokenizer(" " + a, add_special_tokens=False).input_ids) for a in answers)
    budget = project_configs()["toy_math"]["generation_kwargs"]["max_gen_toks"]  # mathneuro/lm_tasks/toy
    assert 40 < longest < budget  # room for the stop sequence


def test_make_model_untied(tokenizer):
    model = toy.make_model(len(tokenizer), hidden_size=32, num_layers=2, num_heads=2,
                           intermediate_size=64, max_position_embeddings=128, seed=0)
    assert not model.config.tie_word_embeddings
    assert model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr()
    assert model.config.num_hidden_layers == 2 and model.config.vocab_size == len(tokenizer)


def test_training_lowers_loss(tokenizer, texts):
    model = toy.make_model(len(tokenizer), hidden_size=32, num_layers=2, num_heads=2,
                           intermediate_size=64, max_position_embeddings=128, seed=0,
                           tokenizer=tokenizer)
    messages: list[str] = []
    losses = training.train(model, tokenizer, texts, steps=40, batch_size=8, lr=1e-2, seed=0,
                       warmup=5, log_every=20, log=messages.append)
    assert len(losses) == 40
    assert sum(losses[-5:]) / 5 < 0.7 * sum(losses[:5]) / 5
    assert len(messages) == 2 and "step 40/40" in messages[-1] and "elapsed" in messages[-1]


def test_answer_only_loss_masks_the_prompt(tokenizer, records):
    record = records["math"][0]
    text = synthetic.training_text("math", record)
    prompt = synthetic.prompt_text("math", record)
    (ids, n_prompt), = training.encode(tokenizer, [text], 256, [len(prompt)])
    assert tokenizer.decode(ids[:n_prompt], skip_special_tokens=True) == prompt
    assert tokenizer.decode(ids[n_prompt:], skip_special_tokens=True) == " " + record["answer"]
    labels = training.collate([(ids, n_prompt), (ids[:5], 0)], tokenizer.pad_token_id)["labels"]
    assert (labels[0, :n_prompt] == -100).all() and (labels[0, n_prompt:] >= 0).all()
    assert (labels[1, :5] >= 0).all() and (labels[1, 5:] == -100).all()


def test_training_refuses_texts_whose_answer_max_length_cuts_off(tokenizer, records):
    """Such a text has no token to learn from: a batch of them would make the loss, and then every
    weight, NaN."""
    model = toy.make_model(len(tokenizer), hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, seed=0,
                           tokenizer=tokenizer)
    texts = [synthetic.training_text("math", r) for r in records["math"][:4]]
    prompts = [len(synthetic.prompt_text("math", r)) for r in records["math"][:4]]
    shortest = min(len(tokenizer(p)["input_ids"]) for p in texts)
    with pytest.raises(ValueError, match=r"4 of 4 texts keep no token of their answer within max_length=8"):
        training.train(model, tokenizer, texts, steps=1, max_length=8, prompt_chars=prompts, log=lambda _: None)
    assert shortest > 8
    losses = training.train(model, tokenizer, texts, steps=1, max_length=256, prompt_chars=prompts, log=lambda _: None)
    assert math.isfinite(losses[0])


def _train_toy(records, out_dir):
    toy.train_toy(records, out_dir, steps=8, batch_size=4, warmup=2, seed=5, num_threads=None,
                  log=lambda _: None, **TINY)
    return load_file(str(out_dir / "model.safetensors"))


def test_train_toy_same_seed_identical_weights(records, tmp_path):
    first = _train_toy(records, tmp_path / "a")
    second = _train_toy(records, tmp_path / "b")
    assert first.keys() == second.keys()
    assert all(torch.equal(first[k], second[k]) for k in first)
    model, tokenizer = toy.load_toy(tmp_path / "a")
    assert model.config.hidden_size == 32 and not model.config.tie_word_embeddings
    assert tokenizer.decode(tokenizer("Where does the zorbel live?")["input_ids"],
                            skip_special_tokens=True) == "Where does the zorbel live?"


def test_train_toy_from_files(records, tmp_path):
    files = {t: synthetic.write_jsonl(rs, tmp_path / t / "train.jsonl")
             for t, rs in records.items()}
    from_files = _train_toy(files, tmp_path / "files")
    from_records = _train_toy(records, tmp_path / "records")
    assert all(torch.equal(from_files[k], from_records[k]) for k in from_files)


def test_train_toy_rejects_bad_input(records, tmp_path):
    with pytest.raises(ValueError, match="unknown synthetic task"):
        toy.train_toy({"poetry": records["math"]}, tmp_path, steps=1, **TINY)
    with pytest.raises(ValueError, match="no weight"):
        toy.train_toy(records, tmp_path, steps=1, mix={"chess": 1.0}, **TINY)
    with pytest.raises(ValueError, match="loss_on"):
        toy.train_toy(records, tmp_path, steps=1, loss_on="prompt", **TINY)


def test_random_model_of_a_given_architecture_loads_as_a_checkpoint(tmp_path):
    from mathneuro.models import load_model

    texts = [f"Question: what is {i} + {i}?\nAnswer: {2 * i}" for i in range(200)]
    architecture = {"model_type": "llama", "vocab_size": 300, "hidden_size": 32, "intermediate_size": 64,
                    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                    "tie_word_embeddings": True}
    toy.random_model(texts, architecture, tmp_path, log=lambda *_: None)
    model, tokenizer = load_model(str(tmp_path), dtype="bfloat16", device="cpu")
    assert model.dtype == torch.bfloat16 and model.config.num_hidden_layers == 2
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    assert len(tokenizer) == model.config.vocab_size <= 300
    assert tokenizer.decode(tokenizer(texts[5])["input_ids"], skip_special_tokens=True) == texts[5]


HYBRID = {"model_type": "bamba", "hidden_size": 32, "num_hidden_layers": 2, "attn_layer_indices": [1],
          "num_attention_heads": 2, "num_key_value_heads": 2, "intermediate_size": 64, "mamba_n_heads": 4,
          "mamba_d_head": 16, "mamba_expand": 2, "mamba_d_state": 8, "mamba_n_groups": 1, "mamba_d_conv": 4,
          "mamba_chunk_size": 16, "tie_word_embeddings": False}


def test_train_toy_builds_and_trains_another_architecture(records, tmp_path):
    """``architecture`` makes train_toy build that model (here a Mamba2 + attention hybrid) in
    place of the Llama, train every parameter (convolution and state-space ones included) and
    save it as a checkpoint that loads back; the same seed gives the same initial weights."""
    toy.train_toy(records, tmp_path, steps=2, batch_size=4, warmup=1, seed=5, num_threads=None,
                  vocab_size=300, architecture=HYBRID, log=lambda _: None)
    model, tokenizer = toy.load_toy(tmp_path)
    assert model.config.model_type == "bamba" and not model.config.tie_word_embeddings
    assert model.config.layers_block_type == ["linear_attention", "full_attention"]  # transformers: Mamba2, attention
    assert (model.config.pad_token_id, model.config.eos_token_id) == (tokenizer.pad_token_id, tokenizer.eos_token_id)
    initial = toy.model_of(HYBRID, len(tokenizer), seed=5, tokenizer=tokenizer).state_dict()
    trained = load_file(str(tmp_path / "model.safetensors"))
    for name in ("model.layers.0.mamba.in_proj.weight", "model.layers.0.mamba.conv1d.weight",
                 "model.layers.0.mamba.A_log", "model.layers.1.self_attn.q_proj.weight",
                 "model.layers.0.feed_forward.up_proj.weight"):
        assert initial[name].shape == trained[name].shape and not torch.equal(initial[name], trained[name]), name


def test_model_of_without_architecture_keys_is_the_llama_toy(tokenizer):
    """The default (no ``architecture``) still builds make_model's Llama: model_of given the same
    config values builds the same weights, so the shipped toy's recipe reads as before."""
    sizes = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2,
             "intermediate_size": 64, "max_position_embeddings": 128, "tie_word_embeddings": False}
    llama = toy.make_model(len(tokenizer), hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64,
                           max_position_embeddings=128, seed=1, tokenizer=tokenizer).state_dict()
    other = toy.model_of({"model_type": "llama", **sizes}, len(tokenizer), seed=1, tokenizer=tokenizer).state_dict()
    assert llama.keys() == other.keys() and all(torch.equal(llama[k], other[k]) for k in llama)


def test_the_ssm_example_trains_its_own_toy_and_the_default_copies_the_shipped_one():
    from dag import REPO

    from mathneuro import shipped_toy
    from mathneuro.configs import compose

    assert shipped_toy.matches(compose([REPO / "config.yaml"], {}))
    ssm = compose([REPO / "configs/examples/toy-ssm.yaml"], {})
    assert ssm["toy_model"]["architecture"]["model_type"] == "bamba" and not shipped_toy.matches(ssm)
