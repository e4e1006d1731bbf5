"""Edit a model in place: multiply the masked weights by a factor (0 prunes, 1.1 scales).

``apply_mask`` keeps only the original values of the edited entries, so ``restore()`` puts the
exact weights back whatever the device or dtype. Use it as a context manager to evaluate an
edited model and leave it untouched afterwards.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from mathneuro.masks import ParameterMask


class MaskEdit:
    """Handle on an applied edit; ``restore()`` (or leaving the ``with`` block) undoes it."""

    def __init__(self, saved: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]], factor: float):
        self._saved = saved  # (parameter, mask on its device, original values of masked entries)
        self.factor = factor

    @property
    def restored(self) -> bool:
        return not self._saved

    def restore(self) -> None:
        with torch.no_grad():
            for param, mask, original in self._saved:
                param[mask] = original
        self._saved = []

    def __enter__(self) -> MaskEdit:
        return self

    def __exit__(self, *exc) -> None:
        self.restore()


def apply_mask(model: nn.Module, mask: ParameterMask, factor: float) -> MaskEdit:
    """Multiply ``model``'s masked weights by ``factor`` in place; return a handle to restore them.

    The mask is checked against the model's parameter names and shapes before anything changes.
    """
    mask.check_model(model)
    params = dict(model.named_parameters())
    saved = []
    with torch.no_grad():
        for name, selected in mask.items():
            param = params[name]
            on_device = selected.to(param.device)
            original = param[on_device]  # advanced indexing copies
            param[on_device] = original * factor
            saved.append((param, on_device, original))
    return MaskEdit(saved, factor)


def export_model(model: nn.Module, tokenizer, out_dir: str | Path) -> Path:
    """Save ``model`` (edited or not) and its tokenizer as a Hugging Face checkpoint (safetensors)."""
    out_dir = Path(out_dir)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    return out_dir
