"""Which weight matrices MathNeuro scores: every linear map inside the decoder blocks.

A *target* is an ``nn.Linear`` or a transformers ``Conv1D`` (GPT-2 style, weight stored as
``(in_features, out_features)``) whose module name places it inside a numbered decoder block
(``model.layers.3.mlp.up_proj``, ``transformer.h.0.attn.c_attn``), as in the paper. Embeddings and
``lm_head`` are excluded by default. Name patterns (regular expressions, ``re.search``) select more
or fewer. ``untied_lm_head=True`` adds the LM head when it is a matrix of its own (Phi 1.5,
Llama 3.1 8B), as the authors' code does; a head tied to the input embeddings (Llama 3.2 1B,
Gemma 2) is never scored, since editing it would edit the embeddings. A weight shared by several
modules is scored once, under its first name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from collections.abc import Callable, Mapping, Sequence

import torch
from torch import nn

DEFAULT_INCLUDE: tuple[str, ...] = (r"\.\d+\.",)  # inside a numbered block
DEFAULT_EXCLUDE: tuple[str, ...] = (r"lm_head", r"embed", r"\bwte\b", r"\bwpe\b")


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

    def importance(self, stat: torch.Tensor) -> torch.Tensor:
        return importance(self.weight, stat, transposed=self.transposed)


def importance(weight: torch.Tensor, stat: torch.Tensor, *, transposed: bool = False) -> torch.Tensor:
    """S = |W| * stat, stat broadcast over the output dimension; float32, W's shape."""
    scores = weight.detach().to(torch.float32, copy=True).abs_()  # (out, in); (in, out) for Conv1D
    stat = stat.to(device=scores.device, dtype=torch.float32)  # (in,)
    return scores.mul_(stat[:, None] if transposed else stat[None, :])


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
    *,
    untied_lm_head: bool = False,
) -> list[Target]:
    """All linear maps of ``model`` whose name matches an ``include`` and no ``exclude`` pattern,
    and its LM head if ``untied_lm_head`` and the head is not tied to the input embeddings.

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
    head = untied_head(model) if untied_lm_head else None
    if head is not None and id(head.weight) not in seen:
        name = next(n for n, m in model.named_modules() if m is head)
        targets.append(Target(name=name, param_name=param_names[id(head.weight)], module=head,
                              transposed=not isinstance(head, nn.Linear)))
    if not targets:
        raise ValueError(
            f"{type(model).__name__} has no target layers: no nn.Linear/Conv1D module name matches "
            f"include={list(include)} and avoids exclude={list(exclude)}"
        )
    return targets


def untied_head(model: nn.Module) -> nn.Module | None:
    """The LM head if it is a linear map with a weight of its own, else None (tied or absent)."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is None or not is_linear(head):
        return None
    embeddings = model.get_input_embeddings()
    return None if embeddings is not None and embeddings.weight is head.weight else head


class _StoredWeight:
    """Stands in for a module in a Target: its ``weight`` is read from a checkpoint at each access,
    so scoring holds one matrix at a time and the model is never built."""

    def __init__(self, read: Callable[[str], torch.Tensor], param_name: str):
        self._read, self._param_name = read, param_name

    @property
    def weight(self) -> torch.Tensor:
        return self._read(self._param_name)


def stored_targets(layout: Mapping[str, Mapping], read: Callable[[str], torch.Tensor]) -> list[Target]:
    """Targets whose weights ``read(param_name)`` returns (e.g. from a checkpoint's safetensors),
    laid out as recorded at collection (``ActivationStats.layout``)."""
    if not layout:
        raise ValueError("the activation statistics record no target layout (collected by an older mathneuro?)")
    return [Target(name=name, param_name=info["param"], module=_StoredWeight(read, info["param"]),
                   transposed=bool(info["transposed"])) for name, info in layout.items()]
