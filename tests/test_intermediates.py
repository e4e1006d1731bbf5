"""A damaged file of the workflow's is named with the rule that remakes it (mathneuro.intermediates),
not a library's traceback; the rule named for every kind of output is the one the DAG says."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch
from dag import planned

from mathneuro import ParameterMask
from mathneuro.collect import ActivationStats
from mathneuro.intermediates import DamagedFile, producer
from mathneuro.tables import read_tables

REPO = Path(__file__).resolve().parents[1]


def mask(tmp_path: Path) -> Path:
    path = tmp_path / "results" / "toy" / "masks" / "math" / "m" / "c" / "n2" / "seed0" / "k5pct.safetensors"
    path.parent.mkdir(parents=True)
    ParameterMask({"a.weight": torch.rand(8, 16) > 0.5}).save(path)
    return path


def stats(tmp_path: Path) -> Path:
    path = tmp_path / "results" / "toy" / "stats" / "math" / "n2" / "seed0.safetensors"
    path.parent.mkdir(parents=True)
    ActivationStats(stats={"a.weight": torch.rand(16)}, statistic="norm", n_samples=2, n_tokens=9, n_truncated=0).save(path)
    return path


def table(tmp_path: Path) -> Path:
    path = tmp_path / "results" / "toy" / "eval" / "base" / "toy.parquet"
    path.parent.mkdir(parents=True)
    pd.DataFrame({"value": [0.5]}).to_parquet(path)
    return path


# kind -> (writer, reader, the rule that writes it)
KINDS = {
    "mask": (mask, ParameterMask.load, "select_set"),
    "statistics": (stats, ActivationStats.load, "collect_activations"),
    "evaluation table": (table, lambda p: read_tables([p]), "evaluate_base"),
}
DAMAGE = {
    "cut short": lambda path: path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2]),
    "empty": lambda path: path.write_bytes(b""),
    "another kind of file": lambda path: path.write_text("{}"),
}


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_file_is_named_with_the_rule_that_remakes_it(tmp_path, monkeypatch, kind, damage):
    write, load, rule = KINDS[kind]
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path).relative_to(tmp_path)
    load(path)  # whole, it reads
    DAMAGE[damage](path)
    with pytest.raises(DamagedFile) as err:
        load(path)
    message = str(err.value)
    assert str(path) in message and f"rule {rule}" in message and "delete it" in message
    path.unlink()
    with pytest.raises(FileNotFoundError):  # a missing file is not called damaged
        load(path)


def test_the_rule_named_for_every_output_is_the_one_that_writes_it(tmp_path):
    """Every output of the tiny study's DAG, the toy's and the planted one's: producer() names its
    job's rule."""
    for config in (REPO / "tests" / "configs" / "tiny.yaml", REPO / "config.yaml",
                   REPO / "tests" / "configs" / "planted-tiny.yaml"):
        for job in planned(tmp_path / config.stem, config, "--forceall"):
            for output in job.outputs:
                named = producer(output)
                if named is not None and job.rule != "all":
                    assert job.rule in named, (output, job.rule, named)
                elif output.startswith("results/"):
                    raise AssertionError(f"no rule named for {output} ({job.rule})")
