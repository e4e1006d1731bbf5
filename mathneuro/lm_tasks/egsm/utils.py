"""Helpers of the EGSM task YAMLs (loaded by lm-eval's ``!function``)."""

from __future__ import annotations

from pathlib import Path


def gsm8k_cot_exemplars() -> list[dict]:
    """The eight chain-of-thought exemplars of lm-eval's installed ``gsm8k_cot`` task (records
    with ``question`` and ``target``), so that EGSM's few-shot prompt is GSM8K's."""
    import lm_eval
    import yaml

    path = Path(lm_eval.__file__).parent / "tasks" / "gsm8k" / "gsm8k-cot.yaml"
    samples = yaml.safe_load(path.read_text(encoding="utf-8"))["fewshot_config"]["samples"]
    if len(samples) != 8:
        raise ValueError(f"{path}: expected GSM8K's 8 chain-of-thought exemplars, found {len(samples)}")
    return samples
