"""Fine-tuning as an edit: train only a set's entries, or every parameter (the reference).

Whether a skill's parameters are where the skill can be taught (relearning: prune the set, then
train only its entries) and whether training only there spares the rest (forgetting: train the
set against training everything) are questions of the same kind as pruning and scaling, and get
the same evaluations and paired statistics.

:func:`finetune` trains ``model`` on texts (mathneuro.training's loop) in one of two scopes:

* ``mask`` given: only the entries of the set. Each parameter the set touches is frozen, and its
  selected entries become one trainable vector (``values``, the entries in the mask's order);
  the forward pass runs the model on ``W.masked_scatter(mask, values)`` (``torch.func``'s
  ``functional_call``), so every entry outside the set is the original tensor's, bit for bit,
  and the optimizer (and its state: AdamW's two moments) holds the trained entries alone. Weight
  decay acts on the entries' values as it would in full training, pulling each towards zero.
* ``mask`` None: every parameter, with the same optimizer, learning rate and schedule.

``start_factor`` multiplies the set's entries first (0 prunes them: relearning starts from the
pruned model; in full training too). What a run trained is kept small: for a set, the trained
values of its entries (:func:`save_trained`; a sparse delta beside the set's own file), for full
training every parameter (a checkpoint's weights). :func:`apply_trained` puts them into a model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch
from torch import nn

from mathneuro.masks import ParameterMask
from mathneuro.training import Log, train

_KEY = "mathneuro.finetune"
SCOPES = ("set", "all")


def finetune(model: nn.Module, tokenizer, texts: Sequence[str], mask: ParameterMask | None = None, *,
             start_factor: float | None = None, start_mask: ParameterMask | None = None, log: Log = print,
             **training) -> dict[str, torch.Tensor]:
    """Train ``model`` on ``texts`` (keywords of mathneuro.training.train: steps, batch_size, lr,
    optimizer, weight_decay, seed, warmup, max_length) and leave the trained weights in it.

    ``mask``: train only its entries (module docstring), returning each parameter's trained
    values in the mask's order; None: every parameter, returning every parameter. Before
    training, ``start_factor`` multiplies the entries of ``start_mask`` (default ``mask``).
    """
    start_mask = start_mask if start_mask is not None else mask
    if start_factor is not None:
        if start_mask is None:
            raise ValueError("a start edit needs the set it edits")
        from mathneuro.edit import apply_mask

        apply_mask(model, start_mask, start_factor)  # kept: training starts from the edited model
    if mask is None:
        for param in model.parameters():
            param.requires_grad_(True)
        train(model, tokenizer, texts, log=log, **training)
        return {name: param.detach().clone() for name, param in model.named_parameters()}
    return _train_entries(model, tokenizer, texts, mask, log=log, **training)


def _train_entries(model: nn.Module, tokenizer, texts: Sequence[str], mask: ParameterMask, *, log: Log,
                   **training) -> dict[str, torch.Tensor]:
    from torch.func import functional_call

    mask.check_model(model)
    params = dict(model.named_parameters())
    for param in params.values():
        param.requires_grad_(False)
    chosen = {name: selected.to(params[name].device) for name, selected in mask.items() if selected.any()}
    values = {name: nn.Parameter(params[name].detach()[selected].clone()) for name, selected in chosen.items()}

    def weights() -> dict[str, torch.Tensor]:
        return {name: params[name].masked_scatter(chosen[name], values[name]) for name in chosen}

    def loss(batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        return functional_call(model, weights(), args=(), kwargs=dict(batch)).loss

    log(f"training {sum(v.numel() for v in values.values()):,} entries of {len(values)} parameters; "
        "every other entry frozen")
    train(model, tokenizer, texts, parameters=list(values.values()), loss=loss, log=log, **training)
    trained = {name: value.detach().clone() for name, value in values.items()}
    apply_trained(model, trained, mask)
    return trained


def apply_trained(model: nn.Module, trained: Mapping[str, torch.Tensor], mask: ParameterMask | None = None) -> None:
    """Put what :func:`finetune` trained into ``model``: a set's values into its entries
    (``mask``), or every parameter's tensor (``mask`` None)."""
    params = dict(model.named_parameters())
    missing = sorted(set(trained) - set(params))
    if missing:
        raise ValueError(f"the trained weights name parameters the model does not have: {missing[:5]}")
    with torch.no_grad():
        for name, value in trained.items():
            param = params[name]
            if mask is None:
                param.copy_(value.to(param.device, param.dtype))
            else:
                selected = mask[name].to(param.device)
                if int(selected.sum()) != value.numel():
                    raise ValueError(f"{name}: {value.numel()} trained values for {int(selected.sum())} entries")
                param[selected] = value.to(param.device, param.dtype)


def save_trained(trained: Mapping[str, torch.Tensor], path: str | Path, *, scope: str, **provenance) -> None:
    """What a fine-tuning run trained, as safetensors: a set's values (``scope`` "set"), or every
    parameter (``scope`` "all"); ``provenance`` (the run's settings, the set's) in the metadata."""
    from safetensors.torch import save_file

    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, not {scope!r}")
    from mathneuro.provenance import KEY, fingerprint

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    metadata = {_KEY: json.dumps({"scope": scope, **provenance}, default=str), KEY: json.dumps(fingerprint())}
    save_file({name: value.contiguous() for name, value in trained.items()}, str(path), metadata=metadata)


def load_trained(path: str | Path) -> tuple[dict[str, torch.Tensor], dict]:
    """(tensors, metadata) of :func:`save_trained`'s file; a damaged one raises
    mathneuro.intermediates.DamagedFile naming it and the rule that remakes it."""
    from mathneuro.intermediates import read

    def load(path):
        from safetensors import safe_open
        from safetensors.torch import load_file

        with safe_open(str(path), framework="pt") as handle:
            raw = (handle.metadata() or {}).get(_KEY)
        if raw is None:
            raise ValueError(f"{path} is not what a fine-tuning run trained (no {_KEY!r} in its metadata)")
        return load_file(str(path)), json.loads(raw)

    return read(path, load)
