"""The table of methods: every entry is well formed, make_set builds each method's set from its
input files as the method's library function does, and a method defined only here (one entry plus
its function) gets its selection jobs and evaluations from the workflow without another edit."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from conftest import TEXTS, tiny_llama
from dag import REPO, parse_jobs, write_config
from transformers import LlamaForCausalLM

import mathneuro
from mathneuro.configs import compose
from mathneuro.methods import METHODS, NO_CONTROL, TOP_K_METHOD, Method, check, control_sets, controls, make_set, sources

K = 0.15


def reverse_difference(skill_top, *control_tops):
    """A method that exists only in this test: the controls' TopK sets minus the skill's."""
    import functools
    import operator

    return functools.reduce(operator.or_, control_tops) - skill_top


ANTI = Method("anti", "anti", "anti ({control} − {skill})", controls="each", make="test_methods:reverse_difference")


@pytest.fixture(scope="module")
def files(tmp_path_factory, tokenizer):
    """A tiny model saved as a checkpoint, statistics of three data sets and their TopK sets."""
    folder = tmp_path_factory.mktemp("methods")
    model = tiny_llama(len(tokenizer))
    model.save_pretrained(folder / "model")
    tokenizer.save_pretrained(folder / "model")
    parameters = sum(p.numel() for p in model.parameters())
    texts = {"math": TEXTS[:4], "race": TEXTS[4:8], "mmlu": TEXTS[8:]}
    out = {"model": folder / "model", "stats": {}, "top_k": {}, "parameters": parameters}
    for name, chunk in texts.items():
        stats = mathneuro.collect_statistics(model, tokenizer, chunk, lape=True)
        stats.metadata["dataset"] = name
        stats.save(folder / f"{name}.stats")
        top = mathneuro.top_k(model, stats, K)
        top.provenance["model_parameters"] = parameters  # as the top_k job records it
        top.save(folder / f"{name}.topk")
        out["stats"][name], out["top_k"][name] = folder / f"{name}.stats", folder / f"{name}.topk"
    return out


def inputs_of(name: str, files: dict, control: str, made: dict) -> dict[str, list[str]]:
    """The files of what ``sources`` names, as the workflow's set_inputs maps them."""
    path = {"top_k": lambda d: str(files["top_k"][d]), "statistics": lambda d: str(files["stats"][d]),
            "set": lambda m: str(made[m])}
    return {kind: [path[kind](x) for x in names] for kind, names in sources(name, "math", control).items()}


def test_the_table_is_checked_and_names_each_method_once():
    check(METHODS)
    assert all(name == m.name for name, m in METHODS.items())
    assert sum(m.top_k_set for m in METHODS.values()) == 1 and METHODS[TOP_K_METHOD].top_k_set
    bad = [replace(METHODS["mathneuro"], reads="set"),  # a set without a reference
           replace(METHODS["mathneuro"], controls="some"),
           replace(METHODS[TOP_K_METHOD], controls="each")]
    for method in bad:
        with pytest.raises(ValueError, match=method.name):
            check({**METHODS, method.name: method})


def test_make_set_builds_every_method_as_its_library_function_does(files, tmp_path):
    """Each method's set from its files equals its function called directly on the same inputs; a
    same-count baseline is made from the set it pairs with, read from that set's file."""
    load = mathneuro.ParameterMask.load
    loaded = LlamaForCausalLM.from_pretrained(files["model"]).eval()
    stats = {d: mathneuro.ActivationStats.load(p) for d, p in files["stats"].items()}
    made: dict[str, Path] = {}
    built = [m for m in METHODS.values() if not m.top_k_set]
    for method in sorted(built, key=lambda m: m.reads == "set"):  # references first
        control = controls(method.name, ["race", "mmlu"])[0]
        mask = make_set(method.name, inputs_of(method.name, files, control, made), skill="math", seed=3,
                        k_fraction=K, settings={"filter_rate": 0.5, "activation_bar_ratio": 0.5},
                        model={"path": str(files["model"]), "dtype": "float32"}, targets={})
        datasets = ["math", *control_sets(control)]
        if method.reads == "top_k":
            expected = method.function()(*(load(files["top_k"][d]) for d in datasets))
        elif method.reads == "set":
            expected = method.function()(load(made[method.same_count_as]), seed=3)
            assert mask.counts() == load(made[method.same_count_as]).counts()  # the pairing is real
        else:
            expected = method.function()(loaded, {d: stats[d] for d in datasets}, "math", top_rate=K,
                                         filter_rate=0.5, activation_bar_ratio=0.5)
        assert mask == expected, method.name
        assert mask.provenance["model_parameters"] == files["parameters"]
        made[method.name] = tmp_path / f"{method.name}.mask"
        mask.save(made[method.name])


def test_a_method_defined_here_is_built_from_its_entry(files, monkeypatch):
    monkeypatch.setitem(METHODS, "anti", ANTI)
    check(METHODS)
    mask = make_set("anti", inputs_of("anti", files, "race", {}), skill="math", seed=0, k_fraction=K)
    load = mathneuro.ParameterMask.load
    want = {n: load(files["top_k"]["race"])[n] & ~load(files["top_k"]["math"])[n] for n in mask}
    assert all(torch.equal(mask[n], want[n]) for n in mask) and mask.count() > 0


# Registers ANTI, then runs Snakemake's command line in the same interpreter (the workflow reads
# METHODS when it is parsed).
DRY_RUN = ("import sys; sys.path.insert(0, {tests!r}); import test_methods, mathneuro.methods as m; "
           "m.METHODS['anti'] = test_methods.ANTI; from snakemake.cli import main; sys.argv[0] = 'snakemake'; main()")


@pytest.mark.workflow
def test_a_method_defined_here_gets_its_jobs_from_the_workflow(tmp_path):
    """Listed in a config's methods, the test's method gets a selection job per control, seed and
    K that reads the skill's and the control's TopK sets, and is evaluated in each analysis."""
    config = compose([REPO / "tests" / "configs" / "tiny.yaml"])
    config["methods"] = [*config["methods"], "anti"]
    config["pruning"]["methods"] = [*config["pruning"]["methods"], "anti"]
    configfile = write_config(tmp_path / "anti.yaml", config)
    command = [sys.executable, "-c", DRY_RUN.format(tests=str(REPO / "tests")), "-s", str(REPO / "Snakefile"),
               "--directory", str(tmp_path), "--configfile", str(configfile), "-n", "--cores", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    jobs = parse_jobs(done.stdout + done.stderr)
    ident = config["identification"]
    made = [j for j in jobs if j.rule == "select_set" and j.wc["method"] == "anti"]
    expected = {(c, str(s), k) for c in ident["controls"] for s in ident["seeds"] for k in config["pruning"]["k"]}
    assert {(j.wc["control"], j.wc["seed"], j.wc["k"]) for j in made} >= expected
    for job in made:
        assert {Path(f).parts[-4] for f in job.inputs} == {"math", job.wc["control"]}  # topk/<data set>/n/seed/k
        assert all("/topk/" in f for f in job.inputs)
    evaluated = {(j.wc["control"], j.wc["k"]) for j in jobs if j.rule == "evaluate" and j.wc["method"] == "anti"}
    assert evaluated == {(c, k) for c in ident["controls"] for k in config["pruning"]["k"]}


def test_sources_name_the_skill_first_then_the_controls_of_the_label():
    for name, method in METHODS.items():
        for label in controls(name, ["race", "mmlu"]):
            got = sources(name, "math", label)
            if method.reads == "set":
                assert got == {"set": [method.same_count_as]}
            else:
                datasets = [] if label == NO_CONTROL else control_sets(label)
                assert got == {method.reads: ["math", *datasets]}
