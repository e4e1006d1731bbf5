"""Collect per-input-feature activation statistics in batched forward passes.

For every target layer a forward pre-hook reduces its input ``x`` (batch, pos, d_in) to one
vector of length ``d_in`` and adds it to a float32 accumulator; nothing weight-sized is ever
built here (|W| · stat is formed once per matrix afterwards, in ``select``).

Statistics (per input feature j; sums run over non-padding tokens only):

* ``"norm"`` (the paper's): Σ_samples ‖x_j‖₂ over that sample's tokens.
* ``"wanda"`` (Wanda's): sqrt(Σ_samples Σ_tokens x_j²).

A layer input may come flattened to (batch·pos, d_in) (OPT) or with extra unit axes (multi-head
latent attention's (batch, 1, pos, d_in)); it is mapped back onto the batch's tokens. Routed
targets (experts) see only the tokens routed to them, as rows without their positions: a model
with experts is collected one sample per forward pass, so that every row an expert sees belongs
to that sample (and none is padding), and an expert's Σ x² over the pass is its per-sample
statistic. Functional targets (routers stored as parameters, fused expert weights, depthwise
convolutions) are observed in the ``F.linear``/matmul/``F.conv1d`` calls that read them
(``_FunctionalInputs``), with the experts run by transformers' eager (per-expert) implementation.
A convolution's input (batch, channels, pos) is its channels' sequences: channel c's statistic
is that of input feature c. A linear module that the model never calls (Mamba's ``dt_proj``,
whose weight the mixer multiplies directly: ``dt_proj.weight @ x``) is found by one forward pass
of the first text before the collection and observed the same way. A weight read where no torch
call shows it (a fused CUDA kernel, such as the causal-conv1d or mamba-ssm packages') stops the
collection after its first pass, naming it.

A matrix read several times in one pass (a block shared by several layers, Zamba 2's
``shared_transformer``) has one input per sample: its reads' tokens together, Σ over the pass's
reads of Σ x², square-rooted once per sample.

With ``lape=True`` the same pass also counts, per MLP neuron, the tokens on which the activation
function's output is > 0 (Tang et al. 2024), for ``lape.lape_mask``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, safe_open, save_file
from torch import nn
from torch.overrides import TorchFunctionMode

from mathneuro import provenance
from mathneuro.targets import Target, expert_view, find_targets, is_linear, unscored, untied_head

STATISTICS = ("norm", "wanda")
# Activation-function modules inside an MLP block (Llama/Gemma act_fn, GPT-2 act, Phi activation_fn).
_MLP_ACTIVATION = re.compile(r"\.\d+\.mlp\.(act_fn|act|activation_fn|activation)$")


@dataclass
class ActivationStats:
    """Per-layer float32 vectors of length ``in_features`` plus counts and provenance."""

    stats: dict[str, torch.Tensor]  # target module name -> (d_in,) float32
    statistic: str
    n_samples: int
    n_tokens: int
    n_truncated: int
    lape_counts: dict[str, torch.Tensor] = field(default_factory=dict)  # act module -> (d_mlp,)
    metadata: dict[str, str] = field(default_factory=dict)
    # target module name -> its weight's parameter name and layout, so that selection can read the
    # weights from the checkpoint without building the model (mathneuro.targets.stored_targets)
    layout: dict[str, dict] = field(default_factory=dict)

    def save(self, path: str | Path) -> None:
        tensors = {f"stat/{k}": v.contiguous() for k, v in self.stats.items()}
        tensors |= {f"lape/{k}": v.contiguous() for k, v in self.lape_counts.items()}
        header = {
            "statistic": self.statistic,
            "n_samples": self.n_samples,
            "n_tokens": self.n_tokens,
            "n_truncated": self.n_truncated,
            "metadata": self.metadata,
            "layout": self.layout,
        }
        metadata = {"mathneuro.stats": json.dumps(header), provenance.KEY: json.dumps(provenance.fingerprint())}
        save_file(tensors, str(path), metadata=metadata)

    @classmethod
    def load(cls, path: str | Path) -> ActivationStats:
        """The statistics saved at ``path``; a file cut short or of another kind raises
        mathneuro.intermediates.DamagedFile naming it and the rule that remakes it."""
        from mathneuro.intermediates import read

        return read(path, cls._load)

    @classmethod
    def _load(cls, path: str | Path) -> ActivationStats:
        with safe_open(str(path), framework="pt") as handle:
            raw = (handle.metadata() or {}).get("mathneuro.stats")
        if raw is None:
            raise ValueError(f"{path} is not a mathneuro activation-statistics file")
        header = json.loads(raw)
        tensors = load_file(str(path))
        pick = lambda prefix: {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)}  # noqa: E731
        return cls(stats=pick("stat/"), lape_counts=pick("lape/"), **header)


@contextmanager
def scoped_hooks(
    hooks: Sequence[tuple[nn.Module, str, Callable]],
) -> Iterator[None]:
    """Register ``(module, "pre" | "post", fn)`` hooks for the block; always removed on exit."""
    handles = []
    try:
        for module, kind, fn in hooks:
            register = module.register_forward_pre_hook if kind == "pre" else module.register_forward_hook
            handles.append(register(fn))
        yield
    finally:
        for handle in handles:
            handle.remove()


class _Accumulator:
    """Hook state for one collection: the current batch's token mask and running sums."""

    def __init__(self, targets: Sequence[Target], statistic: str, device_of: Callable):
        self.statistic = statistic
        self.token_mask: torch.Tensor | None = None  # (batch, pos) float32, 1 = real token
        self.sums = {t.name: torch.zeros(t.in_features, dtype=torch.float32, device=device_of(t)) for t in targets}
        self.lape_counts: dict[str, torch.Tensor] = {}
        self._last: tuple[torch.Tensor, torch.Tensor] | None = None  # (input, its reduction)
        self._pending: dict[str, torch.Tensor] = {}  # this pass's Σ x² per sample, (samples, d_in)

    def _aligned(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` as (batch, pos, d_in), from (batch, pos, d_in), (batch·pos, d_in) or (batch, 1.., pos, d_in)."""
        batch, pos = self.token_mask.shape
        lead = tuple(x.shape[:-1])
        if lead == (batch, pos):
            return x
        if math.prod(lead) == batch * pos and (lead[0] == batch * pos or (lead[0] == batch and lead[-1] == pos)):
            return x.reshape(batch, pos, x.shape[-1])
        raise RuntimeError(f"layer input of shape {tuple(x.shape)} does not match tokens {(batch, pos)}")

    def _per_sample_sumsq(self, x: torch.Tensor) -> torch.Tensor:
        """Σ_tokens x² per sample and feature: (batch, pos, d_in) -> (batch, d_in), float32."""
        if self._last is not None and self._last[0] is x:  # q/k/v and gate/up share one input
            return self._last[1]
        mask = self.token_mask.to(x.device)  # (batch, pos)
        sumsq = torch.bmm(mask[:, None, :], self._aligned(x).float().square()).squeeze(1)  # (batch, d_in)
        self._last = (x, sumsq)
        return sumsq

    def _add(self, name: str, sumsq: torch.Tensor) -> None:
        """Add per-sample Σ x² (samples, d_in) to a target's statistic."""
        if self.statistic == "norm":
            self.sums[name] += sumsq.sqrt().sum(0)
        else:  # "wanda": sqrt taken once, at the end
            self.sums[name] += sumsq.sum(0)

    def add(self, target: Target, x: torch.Tensor) -> None:
        """One input ``x`` (..., d_in) of ``target`` in the current batch; a target's inputs of one
        pass are summed per sample until ``end_batch`` (module docstring)."""
        if not target.routed:
            sumsq = self._per_sample_sumsq(x)  # (batch, d_in)
        elif self.token_mask.shape[0] != 1:
            raise RuntimeError(f"routed target {target.name} collected with {self.token_mask.shape[0]} samples per pass")
        else:
            sumsq = x.detach().reshape(-1, x.shape[-1]).float().square().sum(0)[None]  # (1, d_in): this sample's rows
        self._pending[target.name] = self._pending[target.name] + sumsq if target.name in self._pending else sumsq

    def input_hook(self, target: Target) -> Callable:
        def hook(module: nn.Module, args: tuple) -> None:
            self.add(target, args[0])

        return hook

    def activation_hook(self, name: str) -> Callable:
        def hook(module: nn.Module, args: tuple, out: torch.Tensor) -> None:
            real = self.token_mask.to(out.device).bool()[..., None]  # (batch, pos, 1)
            fired = ((out > 0) & real).sum((0, 1))  # (d_mlp,)
            if name not in self.lape_counts:
                self.lape_counts[name] = torch.zeros_like(fired)
            self.lape_counts[name] += fired

        return hook

    def end_batch(self) -> None:
        for name, sumsq in self._pending.items():  # each sample: all its reads of the pass
            self._add(name, sumsq)
        self._pending.clear()
        self._last = None


_LINEAR = {F.linear}
_MATMUL = {torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.mm, torch.Tensor.mm}
_CONV = {F.conv1d}
_COPIES = {torch.Tensor.to, torch.Tensor.type, torch.Tensor.float, torch.Tensor.bfloat16, torch.Tensor.half,
           torch.Tensor.contiguous}


class _FunctionalInputs(TorchFunctionMode):
    """Feeds ``add(target, x)`` the input of every ``F.linear(x, w)`` / ``x @ w`` / ``w @ y`` (x =
    yᵀ) whose ``w`` is a functional target's matrix: the parameter itself, an expert's slice of
    it, either transposed, or a dtype copy of the parameter; and of every ``F.conv1d(x, w)``
    whose ``w`` is a depthwise target's weight (x: (batch, channels, pos), fed as (batch, pos,
    channels)). Which expert: the slice's offset in the parameter's storage. The way a call reads
    ``w`` must agree with the target's layout (else RuntimeError: the statistic would index the
    wrong axis). ``observed`` collects the parameters seen."""

    def __init__(self, targets: Sequence[Target], add: Callable[[Target, torch.Tensor], None]):
        super().__init__()
        self._add = add
        self._groups: dict[str, list[Target]] = {}
        for t in targets:
            self._groups.setdefault(t.param_name, []).append(t)
        self._storages: dict[int, tuple[str, torch.Tensor]] = {}  # storage pointer -> (param name, its tensor)
        self._copies: dict[int, tuple[str, torch.Tensor]] = {}  # the same for this pass's copies (held alive)
        for name, group in self._groups.items():
            param = group[0].parameter
            if not param.is_contiguous():
                raise ValueError(f"{name} is not contiguous: its experts' slices cannot be told apart")
            self._storages[param.untyped_storage().data_ptr()] = (name, param)
        self.observed: set[str] = set()

    def _found(self, w: torch.Tensor) -> tuple[str, torch.Tensor] | None:
        """(parameter name, the parameter or this pass's copy of it) whose storage ``w`` views, or None."""
        if not isinstance(w, torch.Tensor):
            return None
        pointer = w.untyped_storage().data_ptr()
        return self._storages.get(pointer) or self._copies.get(pointer)

    def _target(self, w: torch.Tensor, reads_columns: bool) -> Target | None:
        """The target whose matrix ``w`` is, or None. ``reads_columns``: the call contracts ``x``
        with ``w``'s columns (F.linear, ``w @ y``) rather than its rows (``x @ w``)."""
        found = self._found(w) if isinstance(w, torch.Tensor) and w.ndim == 2 else None
        if found is None:
            return None
        name, param = found
        group = self._groups[name]
        first = group[0]
        if first.depthwise:
            raise RuntimeError(f"{name} is read as a matrix, not as a depthwise convolution's weight")
        rows, columns = (param.shape[0], param.shape[1]) if first.expert is None else expert_view(param, first.experts).shape[1:]
        if tuple(w.shape) == (rows, columns) and w.stride() == (columns, 1):
            transposed = not reads_columns  # as stored
        elif tuple(w.shape) == (columns, rows) and w.stride() == (1, columns):
            transposed = reads_columns  # a transposed view
        else:
            raise RuntimeError(f"{name} is read as a matrix of shape {tuple(w.shape)}, not one expert's {(rows, columns)}")
        index = (w.storage_offset() - param.storage_offset()) // (rows * columns)
        target = group[index] if first.expert is not None else first
        if transposed != target.transposed:
            raise RuntimeError(f"{target.name} is read with its {'rows' if transposed else 'columns'} as inputs, "
                               f"but mathneuro laid it out the other way: its statistics would index the wrong axis")
        self.observed.add(name)
        return target

    def _conv_target(self, w: torch.Tensor, groups: int) -> Target | None:
        """The depthwise target whose weight ``w`` (channels, 1, kernel) is, or None; RuntimeError
        if the call reads it otherwise than one channel per group (its inputs would not be its channels)."""
        found = self._found(w)
        if found is None or not self._groups[found[0]][0].depthwise:
            return None
        name, param = found
        if (tuple(w.shape), w.stride(), w.storage_offset(), groups) != (
                tuple(param.shape), param.stride(), param.storage_offset(), param.shape[0]):
            raise RuntimeError(f"{name} is read as a convolution weight of shape {tuple(w.shape)} in {groups} groups, "
                               f"not as its own {tuple(param.shape)} in {param.shape[0]}: its inputs are not its channels")
        self.observed.add(name)
        return self._groups[name][0]

    def _observe(self, func, args: tuple, kwargs: dict) -> None:
        """Feed the input of a linear, matmul or conv1d call that reads a target's weight."""
        if func in _LINEAR:
            x = args[0] if args else kwargs.get("input")
            target = self._target(args[1] if len(args) > 1 else kwargs.get("weight"), reads_columns=True)
        elif func in _MATMUL:
            x = args[0] if args else kwargs.get("input")
            y = args[1] if len(args) > 1 else kwargs.get("other")
            target = self._target(y, reads_columns=False)  # x @ w
            if target is None and isinstance(y, torch.Tensor) and y.ndim >= 2:
                target = self._target(x, reads_columns=True)  # w @ y: y's rows are w's inputs
                x = y.transpose(-1, -2)  # (..., pos, in)
        else:  # F.conv1d(input, weight, bias, stride, padding, dilation, groups)
            x = args[0] if args else kwargs.get("input")
            w = args[1] if len(args) > 1 else kwargs.get("weight")
            target = self._conv_target(w, args[6] if len(args) > 6 else kwargs.get("groups", 1))
            x = x.transpose(-1, -2) if target is not None else x  # (batch, channels, pos) -> (batch, pos, channels)
        if target is not None:
            self._add(target, x)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func in _LINEAR or func in _MATMUL or func in _CONV:
            self._observe(func, args, kwargs)
        elif func in _COPIES and args and isinstance(out, torch.Tensor) and out is not args[0]:
            source = self._storages.get(args[0].untyped_storage().data_ptr()) if isinstance(args[0], torch.Tensor) else None
            if source is not None and source[1] is args[0]:  # a dtype/device copy of the whole parameter
                self._copies[out.untyped_storage().data_ptr()] = (source[0], out)
        return out

    def end_pass(self) -> None:
        self._copies.clear()


@contextmanager
def eager_experts(model: nn.Module) -> Iterator[None]:
    """transformers 5 runs fused experts with grouped matmuls over all experts at once; for the
    block, its eager implementation, which reads one expert's matrix per call."""
    config = getattr(model, "config", None)
    before = getattr(config, "_experts_implementation", None)
    switch = hasattr(model, "set_experts_implementation") and before not in (None, "eager")
    if switch:
        model.set_experts_implementation("eager")
    try:
        yield
    finally:
        if switch:
            model.set_experts_implementation(before)


def _tokenize(tokenizer, texts: Sequence[str], max_length: int) -> tuple[list[list[int]], list[bool]]:
    """Token ids per text, truncated to ``max_length``; and whether each text was truncated."""
    ids = tokenizer(list(texts), add_special_tokens=True, verbose=False)["input_ids"]
    return [seq[:max_length] for seq in ids], [len(seq) > max_length for seq in ids]


def _batches(ids: list[list[int]], batch_size: int, pad_id: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Right-padded (input_ids, attention_mask) batches of similar lengths (sorted by length)."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    for start in range(0, len(order), batch_size):
        chunk = [ids[i] for i in order[start : start + batch_size]]
        width = max(len(seq) for seq in chunk)
        input_ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
        attention = torch.zeros((len(chunk), width), dtype=torch.long)
        for row, seq in enumerate(chunk):
            input_ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
            attention[row, : len(seq)] = 1
        yield input_ids, attention


def _check_inputs(texts: Sequence[str], batch_size: int, max_length: int, statistic: str) -> None:
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; choose one of {STATISTICS}")
    if len(texts) == 0:
        raise ValueError("no texts to collect statistics from (empty text list)")
    if not all(isinstance(t, str) and t for t in texts):
        raise ValueError("texts must be non-empty strings")
    if batch_size < 1 or max_length < 1:
        raise ValueError(f"batch_size and max_length must be >= 1, got {batch_size} and {max_length}")


def collect_statistics(
    model: nn.Module,
    tokenizer,
    texts: Sequence[str],
    *,
    batch_size: int = 8,
    max_length: int = 2048,
    statistic: str = "norm",
    targets: Sequence[Target] | None = None,
    lape: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ActivationStats:
    """Run ``texts`` through ``model`` and return per-feature input statistics of every target.

    Padding contributes nothing and batches are right-padded, so the result does not depend on
    ``batch_size`` (to float tolerance). ``progress(done, total)`` is called after each batch.
    Raises ValueError on bad arguments before any forward pass, and names the layer whose
    statistics are not finite.
    """
    return collect_prefix_statistics(
        model, tokenizer, texts, [len(texts)], batch_size=batch_size, max_length=max_length,
        statistic=statistic, targets=targets, lape=lape, progress=progress,
    )[len(texts)]


def _check_sizes(sizes: Sequence[int], n_texts: int) -> list[int]:
    if not sizes or not all(isinstance(n, int) and 1 <= n <= n_texts for n in sizes):
        raise ValueError(f"sizes must be sample counts between 1 and {n_texts} (the texts given), got {list(sizes)}")
    return sorted(set(sizes))


def collect_prefix_statistics(
    model: nn.Module,
    tokenizer,
    texts: Sequence[str],
    sizes: Sequence[int],
    *,
    batch_size: int = 8,
    max_length: int = 2048,
    statistic: str = "norm",
    targets: Sequence[Target] | None = None,
    lape: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict[int, ActivationStats]:
    """Statistics of the first ``n`` texts for every ``n`` in ``sizes``, in one pass.

    Identifications from growing samples (the consistency analysis: n = 1, 10, 100, ...) cost
    one forward pass over ``texts[:max(sizes)]`` instead of one per size: the texts run in
    segments between consecutive sizes, and the running sums are copied at each boundary.
    Each result equals ``collect_statistics(texts[:n])`` to float tolerance. Other arguments
    as in ``collect_statistics``; ``progress`` counts up to ``max(sizes)``.
    """
    _check_inputs(texts, batch_size, max_length, statistic)
    sizes = _check_sizes(sizes, len(texts))
    targets = list(targets) if targets is not None else find_targets(model)
    activations = mlp_activations(model) if lape else {}
    if lape and not activations:
        raise ValueError(f"lape=True but {type(model).__name__} has no MLP activation module")
    ids, truncated = _tokenize(tokenizer, texts[: sizes[-1]], max_length)
    # Any id pads: padded positions are masked out. Prefer the pad token, then eos, then 0.
    pad_id = next((i for i in (tokenizer.pad_token_id, tokenizer.eos_token_id) if i is not None), 0)
    body = getattr(model, "base_model", model)  # the decoder without the LM head: logits unused
    embed_device = model.get_input_embeddings().weight.device
    # The decoder runs without the LM head (its logits are never used): an untied head among the
    # targets reads the decoder's last hidden state, fed to its accumulator after each batch.
    head = next((t for t in targets if t.module is untied_head(model)), None)
    targets = _uncalled_made_functional(model, body, targets, head, torch.tensor([ids[0]], device=embed_device))
    acc = _Accumulator(targets, statistic, device_of=lambda t: t.weight.device)
    hooks = [(m, "pre", acc.input_hook(t)) for m, t in _readers(model, targets, head)]
    functional = [t for t in targets if t.functional]
    if any(t.routed for t in targets):
        batch_size = 1  # an expert's rows carry no sample: one sample per pass (module docstring)
    hooks += [(m, "post", acc.activation_hook(n)) for n, m in activations.items()]

    observer = _FunctionalInputs(functional, acc.add) if functional else None
    results, n_tokens, done = {}, 0, 0
    with ExitStack() as scope:
        scope.enter_context(scoped_hooks(hooks))
        scope.enter_context(torch.inference_mode())
        if observer is not None:
            scope.enter_context(eager_experts(model))
            scope.enter_context(observer)
        for start, stop in zip([0, *sizes[:-1]], sizes):
            for input_ids, attention in _batches(ids[start:stop], batch_size, pad_id):
                acc.token_mask = attention.float()
                out = body(input_ids=input_ids.to(embed_device), attention_mask=attention.to(embed_device),
                           use_cache=False)
                if head is not None:
                    acc.add(head, out[0])  # (batch, pos, hidden)
                acc.end_batch()
                if observer is not None:
                    observer.end_pass()
                    if done == 0:  # a weight no call showed in the first pass: fail now, not after all of them
                        _check_observed(observer, functional, routed=False)
                n_tokens += int(attention.sum())
                done += len(input_ids)
                if progress is not None:
                    progress(done, len(ids))
            results[stop] = _snapshot(acc, model, targets, stop, n_tokens, sum(truncated[:stop]), max_length)
    if observer is not None:
        _check_observed(observer, functional, routed=True)
    return results


def _uncalled_made_functional(model: nn.Module, body: nn.Module, targets: list[Target], head: Target | None,
                              input_ids: torch.Tensor) -> list[Target]:
    """``targets``, with each hooked one whose module a forward pass of ``input_ids`` (1, pos)
    never calls made functional: the model reads its weight directly (Mamba's ``dt_proj.weight @
    x``), where only ``_FunctionalInputs`` sees its input. Routed targets may not be called for
    every sample and stay as they are; the LM head is fed by hand."""
    hooked = [(m, t) for m, t in _readers(model, targets, head) if not t.routed]
    if not hooked:
        return targets
    called: set[str] = set()
    hooks = [(m, "pre", lambda module, args, name=t.name: called.add(name)) for m, t in hooked]
    with scoped_hooks(hooks), torch.inference_mode(), eager_experts(model):
        body(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), use_cache=False)
    uncalled = {t.name for _, t in hooked} - called
    return [replace(t, functional=True) if t.name in uncalled else t for t in targets]


def _readers(model: nn.Module, targets: Sequence[Target], head: Target | None) -> list[tuple[nn.Module, Target]]:
    """(module, target) for every module whose ``weight`` is a hooked target's (neither functional
    nor the LM head): a weight tied to several modules (Zamba 2's shared block, one module per
    hybrid layer) is read by each of them, and is scored once, under its first name."""
    hooked = {id(t.parameter): t for t in targets if t is not head and not t.functional}
    return [(m, hooked[id(m.weight)]) for m in model.modules() if is_linear(m) and id(m.weight) in hooked]


def _check_observed(observer: _FunctionalInputs, functional: Sequence[Target], *, routed: bool) -> None:
    """RuntimeError naming the functional targets (the routed ones only if ``routed``: an expert
    may see no token of a pass) whose weight no observed call has read."""
    missed = sorted({t.param_name for t in functional if routed or not t.routed} - observer.observed)
    if missed:
        raise RuntimeError(
            f"no linear map or convolution call read {missed[:3]} during collection: mathneuro cannot see their "
            "inputs. A fused kernel (the causal-conv1d or mamba-ssm packages', a hub kernel) reads them outside "
            "torch's calls; collect where transformers runs its PyTorch implementation (without those packages)")


def mlp_activations(model: nn.Module) -> dict[str, nn.Module]:
    """The activation-function modules inside the MLP blocks (what LAPE counts), by name."""
    return {n: m for n, m in model.named_modules() if _MLP_ACTIVATION.search(f".{n}")}


def _snapshot(acc: _Accumulator, model: nn.Module, targets: Sequence[Target], n_samples: int, n_tokens: int,
              n_truncated: int, max_length: int) -> ActivationStats:
    """The statistics of everything accumulated so far (copies: accumulation may go on)."""
    statistic = acc.statistic
    stats = {name: (vec.sqrt() if statistic == "wanda" else vec.clone()).cpu() for name, vec in acc.sums.items()}
    for name, vec in stats.items():
        if not torch.isfinite(vec).all():
            raise FloatingPointError(f"non-finite activations (NaN/inf) at the input of layer {name!r}")
    return ActivationStats(
        stats=stats,
        statistic=statistic,
        n_samples=n_samples,
        n_tokens=n_tokens,
        n_truncated=n_truncated,
        lape_counts={k: v.clone().cpu() for k, v in acc.lape_counts.items()},
        metadata={"model": type(model).__name__, "max_length": str(max_length),
                  "model_parameters": str(sum(p.numel() for p in model.parameters())),
                  "unscored": json.dumps(unscored(model, targets))},  # block matrices left out on purpose
        layout={t.name: t.layout() for t in targets},
    )
