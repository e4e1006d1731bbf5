"""Which weight matrices MathNeuro scores: every matrix inside the decoder blocks.

A *target* is one weight matrix, the paper's TopK unit, whose name places it inside a numbered
decoder block (``model.layers.3.mlp.up_proj``, ``transformer.h.0.attn.c_attn``). Four kinds:

* the weight of an ``nn.Linear`` or a transformers ``Conv1D`` (GPT-2 style, stored as
  ``(in_features, out_features)``): its input is read by a forward pre-hook;
* a 2-D ``weight`` parameter that a module applies with ``F.linear`` itself (the routers of
  transformers 5's mixture-of-experts blocks, ``mlp.gate.weight``);
* one expert's slice of a fused expert weight (transformers 5: ``mlp.experts.gate_up_proj`` of
  shape ``(experts, 2·inter, hidden)``; DBRX: ``(experts·ffn, hidden)``): each expert's matrix
  is a target of its own, named ``<parameter>[<expert>]``;
* the weight of a depthwise ``nn.Conv1d`` (``groups == channels``, shape ``(channels, 1, kernel)``:
  the short convolution of state-space and linear-attention mixers, Mamba's ``mixer.conv1d``).
  Channel c reads only input channel c, so its input features are the channels: S[c, 0, t] =
  |W[c, 0, t]| · stat[c], every tap of a channel sharing the channel's statistic (each tap reads
  the same channel shifted in time; the causal padding adds zeros, nothing to a norm).

The last three are *functional*: ``collect`` observes their inputs in the ``F.linear``, matmul and
``F.conv1d`` calls that read them (transformers' state-space mixers call their convolution
through ``causal_conv1d_fn``, never the module). Experts (fused, or per-expert ``nn.Linear``
modules as in transformers 4) are *routed*: they see only the tokens routed to them.

Embeddings and ``lm_head`` are excluded by default. Name patterns (regular expressions,
``re.search``) select more or fewer. ``untied_lm_head=True`` adds the LM head when it is a matrix
of its own (Phi 1.5, Llama 3.1 8B), as the authors' code does; a head tied to the input
embeddings (Llama 3.2 1B, Gemma 2) is never scored. A weight shared by several modules is scored
once, under its first name. No weight is left out silently: every matrix (2 or more dimensions,
biases aside) inside a block that is not a target is either matched by an exclude pattern or
outside the include patterns, or ``find_targets`` fails naming it (``unscored``).

Left out by rule, as biases are: the state-space parameters of a mixer that holds a depthwise
convolution (``STATE_SPACE``: Mamba's ``A_log`` of shape (channels, state), ``D``, ``dt_bias``).
They are per-channel decays, skips and offsets applied elementwise in the recurrence, not maps
from input features, so the method's |W|·‖X‖ has no X for them (Mamba 2's are vectors anyway).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import nn

DEFAULT_INCLUDE: tuple[str, ...] = (r"\.\d+\.",)  # inside a numbered block
DEFAULT_EXCLUDE: tuple[str, ...] = (r"lm_head", r"embed", r"\bwte\b", r"\bwpe\b")
_IN_BLOCK = re.compile(DEFAULT_INCLUDE[0])
_PER_EXPERT_MODULE = re.compile(r"\.experts?\.\d+\.")  # transformers 4 style: experts.3.w1
_EXPERTS_OWNER = re.compile(r"experts?$|ExpertGLU$", re.IGNORECASE)
# Fused expert weights whose stored layout is (in, out) per expert although their owner does not
# say so (transformers 5 experts classes carry ``is_transposed``): DBRX's down projection.
_KNOWN_TRANSPOSED = {("DbrxExpertGLU", "w2")}
# The state-space parameters of a mixer with a depthwise convolution (module docstring): never targets.
STATE_SPACE = frozenset({"A_log", "D", "dt_bias"})


@dataclass(frozen=True)
class Target:
    """One scored weight matrix.

    ``name`` keys its activation statistics; ``param_name`` is its parameter in
    ``model.named_parameters()`` (keys of masks). ``transposed``: the matrix's rows, not its
    columns, index the input features (``Conv1D``, some fused experts). ``attr`` is the
    parameter's attribute on ``module``. ``expert``/``experts``: this target is slice ``expert``
    of a fused weight holding ``experts`` matrices (the parameter viewed as
    ``(experts, -1, last dim)``). ``functional``: its input is observed in torch function calls,
    not by a module hook; ``routed``: it sees only the tokens routed to it. ``depthwise``: the
    weight of a depthwise convolution, ``(channels, 1, kernel)``, whose input features are its
    channels (axis 0).
    """

    name: str
    param_name: str
    module: nn.Module
    transposed: bool
    attr: str = "weight"
    expert: int | None = None
    experts: int | None = None
    functional: bool = False
    routed: bool = False
    depthwise: bool = False

    @property
    def parameter(self) -> torch.Tensor:
        """The whole parameter (for an expert: all experts' matrices)."""
        return getattr(self.module, self.attr)

    @property
    def weight(self) -> torch.Tensor:
        """The target's matrix: the parameter, or this expert's slice of it (a view)."""
        param = self.parameter
        return param if self.expert is None else expert_view(param, self.experts)[self.expert]

    @property
    def in_features(self) -> int:
        return self.weight.shape[0] if self.inputs_first else self.weight.shape[1]

    @property
    def inputs_first(self) -> bool:
        """Whether the weight's first axis indexes the input features (else its last)."""
        return self.transposed or self.depthwise

    def importance(self, stat: torch.Tensor) -> torch.Tensor:
        return importance(self.weight, stat, transposed=self.inputs_first)

    def layout(self) -> dict:
        """What ``stored_targets`` needs to rebuild this target from a checkpoint."""
        return {"param": self.param_name, "transposed": self.transposed, "expert": self.expert,
                "experts": self.experts, "functional": self.functional, "routed": self.routed,
                "depthwise": self.depthwise}


def expert_view(param: torch.Tensor, experts: int) -> torch.Tensor:
    """A fused expert weight as ``(experts, rows, columns)`` (3-D weights are that already)."""
    return param.view(experts, -1, param.shape[-1])


def importance(weight: torch.Tensor, stat: torch.Tensor, *, transposed: bool = False) -> torch.Tensor:
    """S = |W| * stat, stat broadcast over every axis but the inputs'; float32, W's shape.

    The inputs index W's last axis, or with ``transposed`` its first (a ``Conv1D``'s (in, out); a
    depthwise convolution's (channels, 1, kernel), every tap of a channel sharing its stat)."""
    scores = weight.detach().to(torch.float32, copy=True).abs_()  # (out, in); transposed: (in, out), (in, 1, kernel)
    stat = stat.to(device=scores.device, dtype=torch.float32)  # (in,)
    return scores.mul_(stat.view(-1, *[1] * (scores.ndim - 1)) if transposed else stat)


def is_conv1d(module: nn.Module) -> bool:
    """transformers' ``Conv1D``, recognised without importing transformers (seconds per job)."""
    cls = type(module)
    return cls.__name__ == "Conv1D" and cls.__module__.startswith("transformers.") and hasattr(module, "nf")


def is_linear(module: nn.Module) -> bool:
    return isinstance(module, nn.Linear) or is_conv1d(module)


def is_depthwise(module: nn.Module) -> bool:
    """A depthwise ``nn.Conv1d``: each channel convolves itself alone (``groups == channels``),
    padded with zeros (other padding modes read positions that are no token)."""
    return (isinstance(module, nn.Conv1d) and module.groups == module.in_channels == module.out_channels
            and module.padding_mode == "zeros")


def _is_state_space(owner: nn.Module, attr: str) -> bool:
    """A state-space parameter (``STATE_SPACE``) of a mixer holding a depthwise convolution."""
    return attr in STATE_SPACE and any(is_depthwise(child) for child in owner.children())


def _matches(name: str, patterns: Sequence[re.Pattern]) -> bool:
    return any(p.search(f".{name}.") for p in patterns)


def _number_of_experts(owner: nn.Module, param: torch.Tensor) -> int:
    for attr in ("num_experts", "moe_num_experts", "num_local_experts", "n_routed_experts"):
        if isinstance(getattr(owner, attr, None), int):
            return getattr(owner, attr)
    if param.ndim == 3:
        return param.shape[0]
    raise ValueError(f"cannot tell how many experts {type(owner).__name__} holds (no num_experts attribute)")


def _functional_targets(owner_name: str, owner: nn.Module, attr: str, param_name: str,
                        param: torch.Tensor) -> list[Target] | None:
    """The targets a non-linear module's parameter holds, or None if it is no matrix MathNeuro
    knows how to read (an embedding, a convolution other than a depthwise one...)."""
    if is_depthwise(owner) and attr == "weight":
        return [Target(name=owner_name, param_name=param_name, module=owner, transposed=False, functional=True,
                       depthwise=True)]
    if isinstance(owner, (nn.Embedding, nn.EmbeddingBag)) or isinstance(owner, nn.modules.conv._ConvNd):
        return None
    if _EXPERTS_OWNER.search(type(owner).__name__) or _EXPERTS_OWNER.search(owner_name):
        experts = _number_of_experts(owner, param)
        if param.shape[0] % experts or (param.ndim == 3 and param.shape[0] != experts):
            raise ValueError(f"{param_name} of shape {tuple(param.shape)} does not hold {experts} experts' matrices")
        transposed = bool(getattr(owner, "is_transposed", False)) or (type(owner).__name__, attr) in _KNOWN_TRANSPOSED
        return [Target(name=f"{param_name}[{e}]", param_name=param_name, module=owner, transposed=transposed,
                       attr=attr, expert=e, experts=experts, functional=True, routed=True)
                for e in range(experts)]
    if param.ndim == 2 and attr == "weight":  # a router applied as F.linear(x, self.weight)
        return [Target(name=owner_name, param_name=param_name, module=owner, transposed=False, functional=True)]
    return None


def _block_matrices(model: nn.Module) -> dict[int, tuple[str, nn.Module, str, str]]:
    """Every matrix inside a numbered block, biases and state-space parameters aside:
    id -> (owner name, owner, attr, param name)."""
    found = {}
    for owner_name, owner in model.named_modules():
        for attr, param in owner.named_parameters(recurse=False):
            name = f"{owner_name}.{attr}" if owner_name else attr
            if (param.ndim >= 2 and not attr.endswith("bias") and not _is_state_space(owner, attr)
                    and _IN_BLOCK.search(f".{name}.") and id(param) not in found):
                found[id(param)] = (owner_name, owner, attr, name)
    return found


def find_targets(
    model: nn.Module,
    include: Sequence[str] | None = None,
    exclude: Sequence[str] | None = None,
    *,
    untied_lm_head: bool = False,
) -> list[Target]:
    """Every weight matrix of ``model`` whose name matches an ``include`` and no ``exclude``
    pattern (linear maps, routers, each expert of a fused expert weight, depthwise convolutions),
    and its LM head if ``untied_lm_head`` and the head is not tied to the input embeddings.

    ``None`` means the defaults (``DEFAULT_INCLUDE``, ``DEFAULT_EXCLUDE``). Raises ValueError
    when nothing matches, and when a block holds a matrix MathNeuro cannot read that no pattern
    explains (``unscored`` lists what is left out).
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
        if not _matches(name, includes) or _matches(name, excludes):
            continue
        seen.add(id(module.weight))
        targets.append(Target(name=name, param_name=param_names[id(module.weight)], module=module,
                              transposed=not isinstance(module, nn.Linear),
                              routed=bool(_PER_EXPERT_MODULE.search(f".{name}."))))
    unreadable = []
    for key, (owner_name, owner, attr, name) in _block_matrices(model).items():
        if key in seen or is_linear(owner) or not _matches(name, includes) or _matches(name, excludes):
            continue
        found = _functional_targets(owner_name, owner, attr, name, getattr(owner, attr))
        if found is None:
            unreadable.append(f"{name} {tuple(getattr(owner, attr).shape)} ({type(owner).__name__})")
        else:
            seen.add(key)
            targets += found
    if unreadable:
        raise ValueError(
            f"{type(model).__name__} has weights inside its decoder blocks that mathneuro cannot score: "
            f"{unreadable[:5]}{' ...' if len(unreadable) > 5 else ''}. Leave them out on purpose with an exclude "
            "pattern (the workflow config's identification.exclude), or narrow the include patterns."
        )
    head = untied_head(model) if untied_lm_head else None
    if head is not None and id(head.weight) not in seen:
        name = next(n for n, m in model.named_modules() if m is head)
        targets.append(Target(name=name, param_name=param_names[id(head.weight)], module=head,
                              transposed=not isinstance(head, nn.Linear)))
    if not targets:
        raise ValueError(
            f"{type(model).__name__} has no target layers: no weight matrix name matches "
            f"include={list(include)} and avoids exclude={list(exclude)}"
        )
    return targets


def unscored(model: nn.Module, targets: Sequence[Target]) -> dict[str, list[int]]:
    """Every matrix inside a decoder block (2 or more dimensions, biases and state-space
    parameters aside) that no target scores, by parameter name, with its shape: what the patterns
    leave out on purpose."""
    scored = {t.param_name for t in targets}
    return {name: list(getattr(owner, attr).shape) for owner_name, owner, attr, name in _block_matrices(model).values()
            if name not in scored}


def untied_head(model: nn.Module) -> nn.Module | None:
    """The LM head if it is a linear map with a weight of its own, else None (tied or absent)."""
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is None or not is_linear(head):
        return None
    embeddings = model.get_input_embeddings()
    return None if embeddings is not None and embeddings.weight is head.weight else head


class _StoredWeight:
    """Stands in for a module in a Target: its ``weight`` is read from a checkpoint at each access,
    so scoring holds one parameter at a time and the model is never built."""

    def __init__(self, read: Callable[[str], torch.Tensor], param_name: str):
        self._read, self._param_name = read, param_name

    @property
    def weight(self) -> torch.Tensor:
        return self._read(self._param_name)


def stored_targets(layout: Mapping[str, Mapping], read: Callable[[str], torch.Tensor]) -> list[Target]:
    """Targets whose weights ``read(param_name)`` returns (e.g. from a checkpoint's safetensors),
    laid out as recorded at collection (``ActivationStats.layout``). The last parameter read is
    kept: every expert of a fused weight reads the same tensor."""
    if not layout:
        raise ValueError("the activation statistics record no target layout (collected by an older mathneuro?)")
    last: dict[str, torch.Tensor] = {}

    def read_last(name: str) -> torch.Tensor:
        if name not in last:
            last.clear()
            last[name] = read(name)
        return last[name]

    return [Target(name=name, param_name=info["param"], module=_StoredWeight(read_last, info["param"]),
                   transposed=bool(info["transposed"]), expert=info.get("expert"), experts=info.get("experts"),
                   functional=bool(info.get("functional", False)), routed=bool(info.get("routed", False)),
                   depthwise=bool(info.get("depthwise", False)))
            for name, info in layout.items()]
