"""Parameter masks: which entries of which weight matrices a method selected.

A ``ParameterMask`` maps parameter names (as in ``model.named_parameters()``) to boolean tensors
of the weight's shape (a fused expert weight's mask is 3-D, or holds its experts' matrices
stacked; ``experts`` says how many a parameter holds). Set algebra (``-``, ``&``, ``|``) works entry-wise on masks over the same
shapes. On disk a mask costs one bit per parameter: each matrix is bit-packed (numpy
``packbits``, big-endian bit order) into a uint8 safetensors entry; shapes and provenance live in
the safetensors metadata.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, safe_open, save_file
from torch import nn

from mathneuro import provenance

_SHAPES_KEY = "mathneuro.shapes"
_PROVENANCE_KEY = "mathneuro.provenance"
_EXPERTS_KEY = "mathneuro.experts"


class ParameterMask(Mapping[str, torch.Tensor]):
    """Read-only mapping from parameter name to a bool tensor of that parameter's shape."""

    def __init__(self, masks: Mapping[str, torch.Tensor], provenance: Mapping | None = None,
                 experts: Mapping[str, int] | None = None):
        for name, mask in masks.items():
            if mask.dtype != torch.bool:
                raise TypeError(f"mask for {name!r} has dtype {mask.dtype}, expected torch.bool")
        self._masks = dict(masks)
        self.provenance: dict = dict(provenance or {})
        # fused expert weights: parameter -> number of experts' matrices it holds (TopK units)
        self.experts: dict[str, int] = {n: int(e) for n, e in (experts or {}).items() if n in self._masks}

    # Mapping protocol -------------------------------------------------------------------------
    def __getitem__(self, name: str) -> torch.Tensor:
        return self._masks[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._masks)

    def __len__(self) -> int:
        return len(self._masks)

    def __repr__(self) -> str:
        return f"ParameterMask({len(self)} matrices, {self.count():,} of {self.numel():,} selected)"

    # Sizes ------------------------------------------------------------------------------------
    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {name: tuple(mask.shape) for name, mask in self._masks.items()}

    def counts(self) -> dict[str, int]:
        """Selected entries per matrix."""
        return {name: int(mask.count_nonzero()) for name, mask in self._masks.items()}

    def count(self) -> int:
        return sum(self.counts().values())

    def numel(self) -> int:
        return sum(mask.numel() for mask in self._masks.values())

    # Set algebra ------------------------------------------------------------------------------
    def _combine(self, other: ParameterMask, op: str, fn) -> ParameterMask:
        if not isinstance(other, ParameterMask):
            return NotImplemented
        self.check_shapes(other.shapes, what="the other mask")
        combined = {name: fn(mask, other[name].to(mask.device)) for name, mask in self.items()}
        return ParameterMask(combined, {"op": op, "left": self.provenance, "right": other.provenance}, self.experts)

    def __sub__(self, other: ParameterMask) -> ParameterMask:
        return self._combine(other, "difference", lambda a, b: a & ~b)

    def __and__(self, other: ParameterMask) -> ParameterMask:
        return self._combine(other, "intersection", torch.logical_and)

    def __or__(self, other: ParameterMask) -> ParameterMask:
        return self._combine(other, "union", torch.logical_or)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ParameterMask) or self.shapes != other.shapes:
            return False
        return all(torch.equal(mask, other[name]) for name, mask in self.items())

    __hash__ = None  # type: ignore[assignment]  # mutable container semantics, like dict

    # Compatibility ----------------------------------------------------------------------------
    def check_shapes(self, shapes: Mapping[str, tuple[int, ...]], what: str) -> None:
        """Raise ValueError naming the first parameters whose names or shapes differ."""
        missing = [n for n in self._masks if n not in shapes]
        extra = [n for n in shapes if n not in self._masks]
        wrong = [
            f"{n}: mask {tuple(self._masks[n].shape)} vs {tuple(shapes[n])}"
            for n in self._masks
            if n in shapes and tuple(self._masks[n].shape) != tuple(shapes[n])
        ]
        problems = []
        if missing:
            problems.append(f"not in {what}: {missing[:3]}{' ...' if len(missing) > 3 else ''}")
        if extra:
            problems.append(f"only in {what}: {extra[:3]}{' ...' if len(extra) > 3 else ''}")
        if wrong:
            problems.append(f"shape mismatch: {wrong[:3]}{' ...' if len(wrong) > 3 else ''}")
        if problems:
            raise ValueError(f"mask does not fit {what}; " + "; ".join(problems))

    def check_model(self, model: nn.Module) -> None:
        """Raise ValueError unless every masked parameter exists in ``model`` with its shape."""
        params = dict(model.named_parameters())
        shapes = {n: tuple(params[n].shape) for n in self._masks if n in params}
        missing = [n for n in self._masks if n not in params]
        if missing:
            raise ValueError(
                f"mask is for another model: {type(model).__name__} has no parameter(s) "
                f"{missing[:3]}{' ...' if len(missing) > 3 else ''}"
            )
        self.check_shapes(shapes, what=f"{type(model).__name__}'s parameters")

    # Disk format ------------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Write as safetensors, one bit per parameter."""
        packed = {
            name: torch.from_numpy(np.packbits(mask.cpu().numpy().reshape(-1)))
            for name, mask in self._masks.items()
        }
        metadata = {
            _SHAPES_KEY: json.dumps(self.shapes),
            _PROVENANCE_KEY: json.dumps(self.provenance, sort_keys=True, default=str),
            **({_EXPERTS_KEY: json.dumps(self.experts, sort_keys=True)} if self.experts else {}),
            provenance.KEY: json.dumps(provenance.fingerprint()),  # which code made it
        }
        save_file(packed, str(path), metadata=metadata)

    @classmethod
    def load(cls, path: str | Path) -> ParameterMask:
        """The mask saved at ``path``; a file cut short or not a mask raises
        mathneuro.intermediates.DamagedFile naming it and the rule that remakes it."""
        from mathneuro.intermediates import read

        return read(path, cls._load)

    @classmethod
    def _load(cls, path: str | Path) -> ParameterMask:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
        if _SHAPES_KEY not in metadata:
            raise ValueError(f"{path} is not a mathneuro mask (no {_SHAPES_KEY!r} in its metadata)")
        shapes = json.loads(metadata[_SHAPES_KEY])
        masks = {}
        for name, packed in load_file(str(path)).items():
            shape = tuple(shapes[name])
            numel = int(np.prod(shape, dtype=np.int64))
            bits = np.unpackbits(packed.numpy(), count=numel).astype(bool)
            masks[name] = torch.from_numpy(bits).reshape(shape)
        return cls(masks, json.loads(metadata.get(_PROVENANCE_KEY, "{}")), json.loads(metadata.get(_EXPERTS_KEY, "{}")))


def random_like(mask: ParameterMask, seed: int) -> ParameterMask:
    """Random baseline: in every matrix, exactly as many entries as ``mask``, placed uniformly.

    Each matrix draws from its own stream seeded by ``(seed, crc32(name))`` (an expert's matrix
    of a fused weight: ``(seed, crc32(name), expert)``), so the result does not depend on the
    order or the set of other matrices.
    """
    masks = {}
    for name, selected in mask.items():
        experts = mask.experts.get(name)
        units = [selected.reshape(-1)] if experts is None else list(selected.reshape(experts, -1))
        drawn = []
        for unit, matrix in enumerate(units):
            count, numel = int(matrix.sum()), matrix.numel()
            key = [seed, zlib.crc32(name.encode())] + ([] if experts is None else [unit])
            flat = np.zeros(numel, dtype=bool)
            flat[np.random.default_rng(key).choice(numel, size=count, replace=False)] = True
            drawn.append(flat)
        masks[name] = torch.from_numpy(np.concatenate(drawn)).reshape(selected.shape)
    return ParameterMask(masks, {"op": "random_like", "seed": seed, "like": mask.provenance}, mask.experts)


def overlap(a: ParameterMask, b: ParameterMask) -> dict[str, float]:
    """How much two selections agree.

    ``jaccard`` = |a∩b| / |a∪b|, ``overlap_coefficient`` = |a∩b| / min(|a|, |b|),
    ``overlap_rate`` = |a∩b| / |a| (the paper's share of a found again in b).
    """
    return overlap_measures(a.count(), b.count(), (a & b).count(), (a | b).count())


def overlap_measures(size_a: int, size_b: int, intersection: int, union: int) -> dict[str, float]:
    """:func:`overlap`'s measures from the four counts of two sets (whole masks, or the part of
    both in some matrices); a measure whose denominator is 0 (two empty sets) is 1.0."""
    return {
        "size_a": size_a,
        "size_b": size_b,
        "intersection": intersection,
        "union": union,
        "jaccard": intersection / union if union else 1.0,
        "overlap_coefficient": intersection / min(size_a, size_b) if min(size_a, size_b) else 1.0,
        "overlap_rate": intersection / size_a if size_a else 1.0,
    }
