"""Tiny tokenizer + Llama model + CPU training loop for the embedded toy default.

The toy model is a small ``LlamaForCausalLM`` (untied LM head) trained from scratch on
a mix of the train splits of the synthetic tasks (``mathneuro.synthetic``). The
tokenizer is a small byte-level BPE that puts every digit into its own token (the
first digit of a number carries the leading space, ``"Ġ4"``), so numbers are spelled
digit by digit and digits stay exclusive to the math task.

Everything is seeded: the same data and seed give bit-identical weights on CPU. ``train_toy``'s
defaults are the embedded default's (docs/results.md: its measured time and accuracies). Use many
distinct math and reading texts: with a few thousand, the model memorises them. ``random_model``
builds an untrained model of any architecture with a tokenizer trained on given texts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import torch

from mathneuro import synthetic
from mathneuro.training import Log, train

SPECIAL_TOKENS = {"pad_token": "<pad>", "bos_token": "<s>", "eos_token": "</s>",
                  "unk_token": "<unk>"}


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


def token_ids(tokenizer) -> dict[str, int]:
    """The pad/bos/eos ids of ``tokenizer``, as config values (``pad_token_id``...)."""
    return {f"{kind}_token_id": tokenizer.convert_tokens_to_ids(SPECIAL_TOKENS[f"{kind}_token"])
            for kind in ("pad", "bos", "eos")}


def model_of(architecture: Mapping[str, Any], vocab_size: int, *, seed: int = 0, tokenizer=None):
    """A freshly initialised causal LM of any architecture transformers knows.

    ``architecture`` holds config values: ``model_type`` (``mamba2``, ``bamba``...) and sizes;
    ``tokenizer`` (optional) supplies the pad/bos/eos ids. Unlike :func:`make_model`, the LM head
    is tied or not as the architecture's config says unless ``tie_word_embeddings`` is given.
    """
    from transformers import AutoConfig, AutoModelForCausalLM

    values = dict(architecture)
    model_type = values.pop("model_type")
    ids = token_ids(tokenizer) if tokenizer is not None else {}
    config = AutoConfig.for_model(model_type, vocab_size=vocab_size, **{**ids, **values})
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(config)


# ---------------------------------------------------------------- training: mathneuro.training


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


def task_groups(by_task: Mapping[str, Sequence[Any]]) -> list[range]:
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
              architecture: Mapping[str, Any] | None = None, log: Log = print) -> None:
    """Build tokenizer + model, train on the tasks' train splits, save both to ``out_dir``.

    ``train_files`` maps task name to a train-split JSON-lines path (or a list of
    records). Each batch holds texts of one task, drawn with probability ``mix[task]``
    (default ``DEFAULT_MIX``, renormalised over the tasks given). ``loss_on="answer"``
    trains on the answer only (the prompt gets no loss), ``"all"`` on the whole text.
    ``num_threads`` sets ``torch.set_num_threads`` (``None`` leaves it alone).
    ``architecture`` (transformers config values: ``model_type`` and its sizes, e.g. a Bamba
    hybrid of Mamba2 and attention layers) builds that model instead of the Llama
    (:func:`model_of`); the Llama's sizes (``hidden_size``, ``num_layers``, ``num_heads``,
    ``intermediate_size``) are then not read, and ``max_position_embeddings`` is only the
    training's maximum length.
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
    if architecture is None:
        model = make_model(len(tokenizer), hidden_size=hidden_size, num_layers=num_layers,
                           num_heads=num_heads, intermediate_size=intermediate_size,
                           max_position_embeddings=max_position_embeddings, seed=seed,
                           tokenizer=tokenizer)
    else:
        model = model_of(architecture, len(tokenizer), seed=seed, tokenizer=tokenizer)
    log(f"model: {sum(p.numel() for p in model.parameters()):,} parameters")
    train(model, tokenizer, texts, steps=steps, batch_size=batch_size, lr=lr, seed=seed,
          warmup=warmup, weight_decay=weight_decay, max_length=max_position_embeddings,
          groups=task_groups(by_task), weights=weights,
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
    values = dict(architecture)
    tokenizer = build_tokenizer(texts, vocab_size=int(values.pop("vocab_size", 4096)))
    model = model_of(values, len(tokenizer), seed=seed, tokenizer=tokenizer)
    log(f"random {values['model_type']}: {sum(p.numel() for p in model.parameters()):,} parameters, "
        f"tokenizer of {len(tokenizer)} tokens trained on {len(texts)} texts")
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
