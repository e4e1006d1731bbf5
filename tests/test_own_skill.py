"""configs/examples/own-skill.yaml: SmolLM2 on a skill the repository ships (data/, Python
functions from CPython's standard library) against MMLU; what it keeps of its base and what not."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from snakemake.utils import validate

from mathneuro.configs import compose
from mathneuro.data import load_texts
from mathneuro.evaluate import heldout_spec
from mathneuro.study import Study

REPO = Path(__file__).resolve().parents[1]
OWN = REPO / "configs" / "examples" / "own-skill.yaml"
BASE = REPO / "configs" / "examples" / "smollm2-135m-it-local.yaml"
DATA = REPO / "data" / "python_functions.jsonl"


def validated(config: dict) -> dict:
    config = copy.deepcopy(config)
    validate(config, str(REPO / "schemas" / "config.schema.yaml"))
    return config


def test_it_keeps_its_bases_model_and_mmlu_and_none_of_its_suites_data_sets_or_methods():
    own, base = validated(compose([OWN])), validated(compose([BASE]))
    assert own["models"] == base["models"] and own["local_data"] == base["local_data"]
    assert set(own["datasets"]) == {"python", "mmlu"}  # replace: [datasets]: GSM8K gone
    assert own["datasets"]["mmlu"] == base["datasets"]["mmlu"]  # the same spec: the same statistics
    assert list(own["evaluation"]["suites"]) == ["own"]  # replace: [evaluation.suites]
    assert own["methods"] == own["pruning"]["methods"] == ["mathneuro", "wanda", "random"]
    assert own["evaluation"]["skill_tasks"] == ["bpb_python"]
    assert own["study"] != base["study"]
    assert Study(own).problems() == []


def test_its_skill_tasks_deleted_are_the_default_the_tasks_named_after_the_skill():
    config = validated(compose([OWN], {"evaluation": {"skill_tasks": None}}))
    assert config["evaluation"]["skill_tasks"] is None
    assert Study(config).suites.skill_tasks == ["bpb_python"]


def test_the_held_out_functions_are_never_drawn_for_identification():
    spec = compose([OWN])["datasets"]["python"]
    identification = set(load_texts(spec).texts)
    held = load_texts(heldout_spec(spec, "test")).texts
    assert len(held) == round(0.25 * len(DATA.read_text().splitlines())) == 112
    assert not identification & set(held) and len(identification) + len(held) == 447


@pytest.mark.skipif(sys.version_info[:3] != (3, 11, 7), reason="the file was written from CPython 3.11.7's standard library")
def test_the_shipped_functions_are_what_the_script_writes():
    spec = importlib.util.spec_from_file_location("make_python_functions", REPO / "data" / "make_python_functions.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    written = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in script.records())
    assert written == DATA.read_text(encoding="utf-8")
    assert (REPO / "data" / "LICENSE-Python.txt").read_text().startswith("A. HISTORY OF THE SOFTWARE")
