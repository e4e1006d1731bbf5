"""Config files: composition (`base:`), one default per key (the schema's, matching the library's),
and one table of methods."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import yaml

from mathneuro import collect, evaluate, lape, models, select
from mathneuro.configs import compose
from mathneuro.methods import METHODS

REPO = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())


def write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_file_builds_on_its_bases_in_order_and_command_line_values_win(tmp_path):
    write(tmp_path / "a.yaml", {"x": {"p": 1, "q": [1, 2]}, "y": "a"})
    write(tmp_path / "b.yaml", {"x": {"q": [3]}, "z": "b"})
    (tmp_path / "sub").mkdir()
    top = write(tmp_path / "sub" / "c.yaml", {"base": ["../a.yaml", "../b.yaml"], "y": "c"})
    assert compose([top]) == {"x": {"p": 1, "q": [3]}, "y": "c", "z": "b"}
    assert compose([top], {"y": "cli"})["y"] == "cli"


@pytest.mark.parametrize("replace", ["x", "x.m", ["x.m", "y"]])
def test_a_file_replaces_the_mappings_it_names_instead_of_merging_into_them(tmp_path, replace):
    base = {"x": {"m": {"old": 1, "kept": 2}, "p": 1}, "y": {"a": 1}, "z": {"b": 2}}
    write(tmp_path / "base.yaml", base)
    mine = {"x": {"m": {"new": 3}}, "y": {"c": 4}}
    top = write(tmp_path / "top.yaml", {"base": "base.yaml", "replace": replace, **mine})
    got = compose([top])
    names = [replace] if isinstance(replace, str) else replace
    expected = {"x": {"m": {"old": 1, "kept": 2, "new": 3}, "p": 1}, "y": {"a": 1, "c": 4}, "z": {"b": 2}}
    for name in names:  # a replaced key holds the file's value alone; the rest merges as ever
        *parents, last = name.split(".")
        into, value = expected, mine
        for key in parents:
            into, value = into[key], value[key]
        into[last] = value[last]
    assert got == expected and "replace" not in got
    with pytest.raises(ValueError, match="replace names 'z'"):
        compose([write(tmp_path / "bad.yaml", {"base": "base.yaml", "replace": ["z"], **mine})])


def test_a_child_deletes_the_inherited_suites_methods_and_skill_tasks(tmp_path):
    """What a file leaves out of its base's: a mapping it names in `replace:` (the base's suites are
    gone, not merged with its own), a list it sets (methods: lists are never merged), a key it sets
    to null (skill_tasks: null, the default) and a top-level section set to null (gone)."""
    write(tmp_path / "base.yaml", {
        "methods": ["mathneuro", "wanda", "lape"], "subskills": {"skills": ["a", "b"]},
        "evaluation": {"suites": {"gsm8k": {"tasks": ["gsm8k_cot"], "limit": 20}, "mmlu": {"tasks": ["mmlu"]}},
                       "skill_tasks": ["gsm8k_cot"], "heldout_split": "test"}})
    child = {"base": "base.yaml", "replace": ["evaluation.suites"], "methods": ["mathneuro"], "subskills": None,
             "evaluation": {"suites": {"own": {"tasks": ["bpb_python"]}}, "skill_tasks": None}}
    assert compose([write(tmp_path / "child.yaml", child)]) == {
        "methods": ["mathneuro"],
        "evaluation": {"suites": {"own": {"tasks": ["bpb_python"]}}, "skill_tasks": None, "heldout_split": "test"}}
    del child["replace"]  # without it the suites merge: the base's stay beside the file's
    merged = compose([write(tmp_path / "merged.yaml", child)])
    assert list(merged["evaluation"]["suites"]) == ["gsm8k", "mmlu", "own"]


def test_a_base_that_builds_on_itself_or_is_missing_is_named(tmp_path):
    write(tmp_path / "a.yaml", {"base": "b.yaml"})
    write(tmp_path / "b.yaml", {"base": "a.yaml"})
    with pytest.raises(ValueError, match="builds on itself"):
        compose([tmp_path / "a.yaml"])
    with pytest.raises(ValueError, match="nope.yaml"):
        compose([write(tmp_path / "c.yaml", {"base": "nope.yaml"})])


def schema_default(path: str):
    node = SCHEMA
    for key in path.split("."):
        node = node["properties"][key] if key != "*" else node["additionalProperties"]
    return node["default"]


def default_of(function, name: str):
    return inspect.signature(function).parameters[name].default


# schema key (`*`: any label) -> the library function and argument it feeds
DEFAULTS = [
    ("models.*.dtype", models.load_model, "dtype"),
    ("models.*.device", models.load_model, "device"),
    ("models.*.revision", models.load_model, "revision"),
    ("models.*.gpus", models.load_model, "gpus"),
    ("models.*.collect_batch_size", collect.collect_statistics, "batch_size"),
    ("models.*.eval_batch_size", evaluate.run_lm_eval, "batch_size"),
    ("identification.statistic", collect.collect_statistics, "statistic"),
    ("identification.max_length", collect.collect_statistics, "max_length"),
    ("identification.scope", select.top_k, "scope"),
    ("lape.filter_rate", lape.lape_mask, "filter_rate"),
    ("lape.activation_bar_ratio", lape.lape_mask, "activation_bar_ratio"),
    ("evaluation.suites.*.limit", evaluate.run_lm_eval, "limit"),
    ("evaluation.suites.*.num_fewshot", evaluate.run_lm_eval, "num_fewshot"),
    ("evaluation.suites.*.max_gen_toks", evaluate.run_lm_eval, "max_gen_toks"),
    ("evaluation.suites.*.gen_kwargs", evaluate.run_lm_eval, "gen_kwargs"),
    ("evaluation.suites.*.apply_chat_template", evaluate.run_lm_eval, "apply_chat_template"),
    ("evaluation.suites.*.fewshot_as_multiturn", evaluate.run_lm_eval, "fewshot_as_multiturn"),
    ("evaluation.suites.*.system_instruction", evaluate.run_lm_eval, "system_instruction"),
]


@pytest.mark.parametrize(("key", "function", "argument"), DEFAULTS, ids=[d[0] for d in DEFAULTS])
def test_the_librarys_defaults_are_the_schemas(key, function, argument):
    assert default_of(function, argument) == schema_default(key)


def test_untied_lm_head_default_is_the_papers_choice():
    from mathneuro.targets import find_targets

    assert schema_default("identification.untied_lm_head") is False
    assert default_of(find_targets, "untied_lm_head") is False


# Quoted words that are method names but mean something else where they stand: (file, line text).
OTHER_MEANINGS = [
    ("mathneuro/collect.py", '"wanda"'),  # the statistic sqrt(Σ x²) (identification.statistic)
    ("rules/model.smk", 'models_built_as("random")'),  # a model of random weights (models.*.path)
    ("mathneuro/configs.py", '("toy", "random")'),
    ("mathneuro/study/models.py", '["path"] == "random"'),
    ("mathneuro/study/models.py", '("toy", "random", "planted")'),
    ("mathneuro/study/models.py", "path 'random'"),
    ("mathneuro/provenance.py", '"mathneuro"'),  # the package's name
    ("mathneuro/logs.py", '"mathneuro"'),
    ("mathneuro/configs.py", '/ "mathneuro"'),
    ("mathneuro/intermediates.py", '"topk": "top_k"'),  # the folder of the TopK sets (rules/common.smk's paths)
    ("mathneuro/intermediates.py", '"snip": "snip_scores"'),  # the folder of SNIP's scores
    ("mathneuro/intermediates.py", '"random": "planted_random"'),  # the folder of a planted model's random sets
    ("mathneuro/__init__.py", '"lape_mask": "lape"'),  # the module lape.py
    ("mathneuro/__init__.py", "module 'mathneuro'"),
]


def test_no_method_is_named_outside_its_table_and_the_functions_it_names():
    """Rules, scripts and library read methods from METHODS; only methods.py and the modules of
    the functions its entries name (they build the sets) spell a method's name."""
    import re

    from mathneuro.methods import TOP_K

    builders = {f"mathneuro/{m.make.split(':')[0].split('.')[-1]}.py" for m in METHODS.values() if m.make}
    quoted = re.compile("[\"']({})[\"']".format("|".join(map(re.escape, [*METHODS, TOP_K]))))
    files = [REPO / "Snakefile", *REPO.glob("rules/*.smk"), *REPO.glob("workflow_scripts/*.py"),
             *REPO.glob("mathneuro/**/*.py")]
    hits = []
    for path in files:
        name = str(path.relative_to(REPO))
        if name in builders | {"mathneuro/methods.py"}:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if quoted.search(line) and not any(name == f and text in line for f, text in OTHER_MEANINGS):
                hits.append(f"{name}:{number}: {line.strip()}")
    assert hits == []
    text = (REPO / "schemas" / "config.schema.yaml").read_text()
    assert not any(f"[{name}" in text or f" {name}," in text for name in METHODS)


@pytest.mark.parametrize("name", METHODS)
def test_a_methods_control_labels_name_the_controls_its_sets_are_made_against(name):
    import re

    from mathneuro.methods import JOIN, NO_CONTROL, control_sets, controls

    label = re.compile(SCHEMA["definitions"]["label"]["pattern"])
    assert not label.match(JOIN + "x") and not label.match("x" + JOIN + "y")  # a joined label is no data set's
    for given in (["race"], ["race", "mmlu"], ["mmlu", "race"]):
        labels = controls(name, given)
        mode = METHODS[name].controls
        if mode == "each":
            assert labels == given
        elif mode == "all":  # one set, the same label whatever the order of the controls
            assert len(labels) == 1 and sorted(control_sets(labels[0])) == sorted(given)
            assert labels == controls(name, sorted(given))
        else:
            assert mode == "none" and labels == [NO_CONTROL]


def test_lm_evals_own_defaults_for_the_suite_options():
    """Unset suite options mean what they mean to lm-eval (the paper's authors set none)."""
    from lm_eval import simple_evaluate

    for option in ("apply_chat_template", "fewshot_as_multiturn", "system_instruction", "gen_kwargs"):
        assert default_of(simple_evaluate, option) == schema_default(f"evaluation.suites.*.{option}"), option
