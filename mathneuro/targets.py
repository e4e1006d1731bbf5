"""Which weight matrices MathNeuro scores: every linear map inside the decoder blocks.

A *target* is an ``nn.Linear`` or a transformers ``Conv1D`` (GPT-2 style, weight stored as
``(in_features, out_features)``) whose module name places it inside a numbered decoder block
(``model.layers.3.mlp.up_proj``, ``transformer.h.0.attn.c_attn``). Embeddings and ``lm_head`` are
excluded by default. Name patterns (regular expressions, ``re.search``) select more or fewer.
A weight shared by several modules (tied weights) is scored once, under its first name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import nn

DEFAULT_INCLUDE: tuple[str, ...] = (r"\.\d+\.",)  # inside a numbered block
DEFAULT_EXCLUDE: tuple[str, ...] = (r"lm_head", r"embed", r"\bwte\b", r"\bwpe\b")
_LAYER_INDEX = re.compile(r"\.(\d+)\.")


@dataclass(frozen=True)
class Target:
    """One scored weight matrix.

    ``name`` is the module name (keys of activation statistics); ``param_name`` the weight's name
    in ``model.named_parameters()`` (keys of masks). ``transposed`` is True for ``Conv1D``, whose
    weight rows, not columns, index the input features.
    """

    name: str
    param_name: str
    module: nn.Module
    transposed: bool

    @property
    def weight(self) -> torch.Tensor:
        return self.module.weight

    @property
    def in_features(self) -> int:
        return self.weight.shape[0] if self.transposed else self.weight.shape[1]

    @property
    def layer(self) -> int | None:
        """Index of the decoder block, from the first number in the module name."""
        match = _LAYER_INDEX.search(f".{self.name}.")
        return int(match.group(1)) if match else None

    @property
    def kind(self) -> str:
        """Module type as named in the model, e.g. ``q_proj`` or ``c_fc``."""
        return self.name.rsplit(".", 1)[-1]

    def importance(self, stat: torch.Tensor) -> torch.Tensor:
        """S = |W| * stat, stat broadcast over the output dimension; float32, W's shape."""
        weight = self.weight.detach().abs().float()  # (out, in) or (in, out) for Conv1D
        stat = stat.to(device=weight.device, dtype=torch.float32)  # (in,)
        return weight * (stat[:, None] if self.transposed else stat[None, :])


def is_conv1d(module: nn.Module) -> bool:
    """transformers' ``Conv1D``, recognised without importing transformers (seconds per job)."""
    cls = type(module)
    return cls.__name__ == "Conv1D" and cls.__module__.startswith("transformers.") and hasattr(module, "nf")


def is_linear(module: nn.Module) -> bool:
    return isinstance(module, nn.Linear) or is_conv1d(module)


def find_targets(
    model: nn.Module,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
) -> list[Target]:
    """All linear maps of ``model`` whose name matches an ``include`` and no ``exclude`` pattern.

    ``None`` means the defaults (``DEFAULT_INCLUDE``, ``DEFAULT_EXCLUDE``). Raises ValueError
    when nothing matches: a model with no target layers cannot be scored.
    """
    include = DEFAULT_INCLUDE if include is None else include
    exclude = DEFAULT_EXCLUDE if exclude is None else exclude
    includes = [re.compile(p) for p in include]
    excludes = [re.compile(p) for p in exclude]
    param_names = {id(p): n for n, p in model.named_parameters()}  # shared weights appear once
    seen: set[int] = set()
    targets = []
    for name, module in model.named_modules():
        if not is_linear(module) or id(module.weight) in seen:
            continue
        dotted = f".{name}."
        if not any(p.search(dotted) for p in includes) or any(p.search(dotted) for p in excludes):
            continue
        seen.add(id(module.weight))
        targets.append(
            Target(
                name=name,
                param_name=param_names[id(module.weight)],
                module=module,
                transposed=not isinstance(module, nn.Linear),
            )
        )
    if not targets:
        raise ValueError(
            f"{type(model).__name__} has no target layers: no nn.Linear/Conv1D module name matches "
            f"include={list(include)} and avoids exclude={list(exclude)}"
        )
    return targets
