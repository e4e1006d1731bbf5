"""mathneuro.study without Snakemake: every config the project ships is consistent, every bad
cross-reference is named by its key, and the analyses' variants are the config's axes crossed."""

from __future__ import annotations

import copy
import itertools
from pathlib import Path

import pytest
from snakemake.utils import validate

from mathneuro.analyses import NO_SET
from mathneuro.configs import compose
from mathneuro.evaluate import heldout_spec
from mathneuro.methods import METHODS, TOP_K, control_sets, controls
from mathneuro.models import placement
from mathneuro.study import EDIT_ANALYSES, Analyses, Data, KLabels, Models, Study, Subskills, Suites, canonical
from mathneuro.tasks import PROJECT_TASKS, definition_files

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "schemas" / "config.schema.yaml"
TINY = REPO / "tests" / "configs" / "tiny.yaml"
SHIPPED = [REPO / "config.yaml", TINY, *sorted((REPO / "configs" / "models").glob("*.yaml")),
           *sorted((REPO / "configs" / "examples").glob("*.yaml"))]


def validated(config: dict) -> dict:
    """The config as the workflow holds it: schema-checked, with the schema's defaults."""
    config = copy.deepcopy(config)
    validate(config, str(SCHEMA))
    return config


def tiny() -> dict:
    return validated(compose([TINY]))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_shipped_config_is_consistent(path):
    assert Study(validated(compose([path]))).problems() == []


def label_cases(config: dict) -> list[tuple[str, callable]]:
    """(key, change) for every key that names a K, an edit or a method: set to an unknown label."""
    def setter(section, key, wrap=list):
        return lambda c: c[section].__setitem__(key, wrap(["nope"]) if wrap is list else "nope")

    cases = [(f"{s}.k", setter(s, "k")) for s in ("pruning", "scaling", "data_efficiency", "finetuning")]
    cases += [("consistency.k", setter("consistency", "k", wrap=str)), ("pruning.edit", setter("pruning", "edit", str))]
    cases += [(f"{s}.edits", setter(s, "edits")) for s in ("scaling", "data_efficiency")]
    cases += [("methods", lambda c: c.__setitem__("methods", [*c["methods"], "nope"]))]
    cases += [(f"{s}.methods", setter(s, "methods")) for s in ("pruning", "scaling", "data_efficiency", "finetuning")]
    cases += [("finetuning.edits", setter("finetuning", "edits"))]
    for label in config.get("finetune", {}):  # each fine-tuning edit's start edit and data set
        cases += [(f"finetune.{label}.start", lambda c, label=label: c["finetune"][label].update(start="nope")),
                  (f"finetune.{label}.data", lambda c, label=label: c["finetune"][label].update(data="nope")),
                  (f"finetune.{label}", lambda c, label=label: c["edits"].update({label: 1.0}))]
    return cases


CROSS_REFERENCES = [
    *label_cases(compose([TINY])),
    ("identification.skill", lambda c: c["identification"].update(skill="nope")),
    ("identification.controls", lambda c: c["identification"].update(controls=["nope"])),
    ("identification.controls", lambda c: c["identification"].update(controls=[c["identification"]["skill"]])),
    *[(f"datasets.{d}.{key}", lambda c, d=d, key=key: c["datasets"][d].update({key: 1}))
      for d in compose([TINY])["datasets"] for key in ("n", "seed")],
    ("datasets.math", lambda c: c["datasets"]["math"].update(columns=["a"])),  # columns: csv only
    ("models.toy", lambda c: c.pop("synthetic")),
    ("models.toy", lambda c: c["models"]["toy"].update(architecture={"model_type": "llama"})),
]


@pytest.mark.parametrize(("key", "change"), CROSS_REFERENCES, ids=[c[0] for c in CROSS_REFERENCES])
def test_every_bad_cross_reference_is_named_by_its_key(key, change):
    config = tiny()
    change(config)
    problems = Study(config).problems()
    assert problems and any(key in p for p in problems), problems


@pytest.mark.parametrize(("change", "named"), [
    (lambda c: c["identification"]["k"].update(big=1.5), "1.5"),
    (lambda c: c["datasets"]["math"].update(source="ftp"), "ftp"),
    (lambda c: c.update(identificaton={}), "identificaton"),
])
def test_the_schema_names_what_it_refuses(change, named):
    config = compose([TINY])
    change(config)
    with pytest.raises(Exception, match=named):
        validate(config, str(SCHEMA))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_an_analysis_evaluates_its_axes_crossed_with_each_methods_controls(path):
    study = Study(validated(compose([path])))
    config = study.config
    for analysis in EDIT_ANALYSES:
        axes = study.analyses.axes(analysis)
        edits = [e for e in axes["edit"] if analysis != "finetuning" or study.trains_per_set(e)]
        expected = [(m, c, n, seed, study.k.of_set(m, k), edit) for m in axes["method"] for c in controls(m, study.controls)
                    for n, seed, k, edit in itertools.product(axes["n_samples"], axes["seed"], axes["k"], edits)]
        assert study.analyses.variants(analysis) == expected
    # a fine-tuning run that needs no set (every parameter, from the unedited model): once per
    # repeat, whatever the methods and K, and its rows are the finetuning table's too
    unedited = [e for e in config["finetuning"]["edits"] if not study.trains_per_set(e)]
    assert study.analyses.unedited_runs() == [(seed, e) for e in unedited for seed in study.seeds]
    for e in unedited:
        assert config["finetune"][e]["train"] == "all" and config["finetune"][e]["start"] is None
    per_set, no_set = study.finetune_edits(per_set=True), study.finetune_edits(per_set=False)
    assert sorted(per_set + no_set) == sorted(config["finetune"]) and not set(per_set) & set(no_set)
    assert all(config["finetune"][e]["train"] == "set" or config["finetune"][e]["start"] for e in per_set)
    selection = study.analyses.selections(study.skill)["finetuning"]
    assert (NO_SET in selection["method"]) == bool(unedited) == (0 in selection["n_samples"])
    for analysis in EDIT_ANALYSES:
        axes = study.analyses.axes(analysis)
        assert set(axes["method"]) <= set(METHODS) and set(axes["k"]) <= set(study.k.fractions)
    everything = [v for a in EDIT_ANALYSES for v in study.analyses.variants(a)]
    assert study.analyses.evaluated_variants() == list(dict.fromkeys(everything))
    assert study.analyses.study_k() == sorted(study.analyses.study_k(), key=study.k.fractions.get)


def test_k_labels_are_ordered_by_fraction_and_defaults_fill_in():
    config = tiny()
    config["identification"]["k"] = {"b": 0.2, "a": 0.01, "c": 0.1}
    config["data_efficiency"].update(k=None, methods=None)
    k = KLabels(config["identification"])
    assert list(k.fractions) == ["a", "c", "b"]
    analyses = Analyses(config, k, controls=["reading"], n_samples=5, seeds=[0])
    assert analyses.data_efficiency_k == [config["consistency"]["k"]]
    assert analyses.data_efficiency_methods == config["pruning"]["methods"]


def test_local_copies_resolve_by_key_or_alias_and_a_release_reads_its_converted_files(tmp_path):
    config = tiny()
    (tmp_path / "a.jsonl").write_text('{"text": "x"}\n')
    (tmp_path / "b.jsonl").write_text('{"text": "y"}\n')
    config["local_data"] = {
        "org/set": {"aliases": ["set"], "files": {"train": str(tmp_path / "*.jsonl")}},
        "cais/mmlu": {"aliases": [], "mmlu_release": str(tmp_path / "release")},
    }
    data = Data(config, results="out")
    assert data.local_key("set") == data.local_key("org/set") == "org/set"
    assert data.local_key("other") is None
    hf = {"source": "hf", "path": "set", "split": "train"}
    assert data.spec_files(hf) == [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]
    assert data.spec_files({"source": "hf", "path": "cais/mmlu", "name": "all"}) == ["out/data/local/cais/mmlu"]
    assert data.local_data["cais/mmlu"]["files"]["test"] == "out/data/local/cais/mmlu/test/{name}.jsonl"
    assert data.spec_files({"source": "json", "path": str(tmp_path / "a.jsonl")}) == [str(tmp_path / "a.jsonl")]
    config["datasets"]["math"] = hf
    assert data.local_data_of("math") == {"org/set": canonical(config["local_data"]["org/set"])}
    assert data.files("math") == data.spec_files(hf)
    assert data.spec("math", 3, 1) == canonical({**hf, "n": 3, "seed": 1})
    assert data.hub(["math", "reading"]) == [] and data.hub([]) == []
    config["datasets"]["math"] = {"source": "hf", "path": "org/elsewhere", "name": "x", "split": "train"}
    assert data.hub(["math"]) == [{"path": "org/elsewhere", "name": "x"}]


CONTROL_K = [None, {"ratio": 1}, {"ratio": 2}, {"ratio": 50}, {"fractions": {"5pct": 0.2}}, {"fractions": {"5pct": 0.05}}]


@pytest.mark.parametrize("control_k", CONTROL_K, ids=str)
def test_a_set_carries_its_controls_k_in_its_label_only_where_it_differs(control_k):
    """q = p keeps every label (and so every finished file) as it was; q != p gives the sets that
    read control TopK sets, and their same-count baselines, a label of their own that names q,
    and their TopK jobs keep q."""
    config = tiny()
    config["identification"]["control_k"] = control_k
    assert Study(config).problems() == []
    labels = KLabels(config["identification"])
    for k, p in labels.fractions.items():
        q = labels.control[k]
        if control_k is None:
            assert q == p
        elif "ratio" in control_k:
            assert q == min(1.0, control_k["ratio"] * p)
        else:
            assert q == control_k["fractions"].get(k, p)
        for name, method in METHODS.items():
            label = labels.of_set(name, k)
            reads_control_top_k = (method.reads == "top_k" and method.controls != "none") or (
                method.reads == "set" and METHODS[method.same_count_as].reads == "top_k")
            assert (label != k) == (q != p and reads_control_top_k), (name, k)
            assert labels.skill(label) == k
            assert labels.labels(label) == {"k": k, "k_fraction": p} | (
                {"control_k_fraction": q} if label != k else {})
            assert labels.fraction(label) == (q if label != k else p)
            assert labels.set_labels("m", name, "c", "5", "1", label) == {
                "model": "m", "method": name, "control": "c", "n_samples": 5, "seed": 1} | labels.labels(label)
        # a data set's own TopK set at a composite label keeps q, labelled by its data set
        for label in [k, *[c for c, plain in labels.composite.items() if plain == k]]:
            assert labels.set_labels("m", None, "reading", 5, 0, label) == {
                "model": "m", "method": TOP_K, "control": "reading", "n_samples": 5, "seed": 0, "k": label,
                "k_fraction": q if label != k else p}


def test_control_k_names_known_k_labels_and_no_k_label_takes_a_sets_name():
    config = tiny()
    config["identification"]["control_k"] = {"fractions": {"3pct": 0.1}}
    assert any("identification.control_k.fractions" in p for p in KLabels(config["identification"]).problems())
    assert any("identification.control_k.fractions" in p for p in Study(config).problems())
    config["identification"]["control_k"] = {"ratio": 2}
    config["identification"]["k"]["5pct-c10pct"] = 0.3
    assert any("5pct-c10pct" in p for p in KLabels(config["identification"]).problems())
    assert any("5pct-c10pct" in p for p in Study(config).problems())


def default() -> dict:
    """The default with the sub-skill study of its example config."""
    return validated(compose([REPO / "configs" / "examples" / "subskills.yaml"]))


def test_the_example_sub_skill_study_prunes_each_operations_set_made_against_the_others_and_reading():
    config = default()
    study, sub = Study(config), config["subskills"]
    assert study.problems() == []
    method = METHODS[sub["method"]]
    expected = []
    for skill in sub["skills"]:
        against = [s for s in sub["skills"] if s != skill] + sub["controls"]
        for control in controls(sub["method"], against):
            if method.controls == "all":  # one set against the other skills and the controls at once
                assert sorted(control_sets(control)) == sorted(against)
            expected += [(skill, sub["method"], control, study.n_samples, seed, study.k.of_set(sub["method"], k),
                          study.subskills.edit()) for seed in study.seeds for k in study.subskills.k()]
    assert study.subskills.variants() == expected
    assert study.subskills.suites() == [*config["evaluation"]["suites"], *sub["suites"]]
    assert set(study.suites.specs) == set(config["evaluation"]["suites"]) | set(sub["suites"])
    pair = study.subskills.sets()
    assert set(pair) == set(sub["skills"]) and {c for _, c in pair.values()} == set(controls(sub["method"], sub["controls"]))
    assert set(study.all_datasets()) == {study.skill, *study.controls, *sub["skills"], *sub["controls"]}
    assert not set(sub["skills"]) & set(study.data.synthetic_tasks(trained=True))  # the toy learns math, not its parts again


SUBSKILL_PROBLEMS = [
    ("subskills.skills", lambda c: c["subskills"].update(skills=["math_add", "nope"])),
    ("subskills.controls", lambda c: c["subskills"].update(controls=["math_add"])),
    ("subskills.method", lambda c: c["subskills"].update(method="nope")),
    ("subskills.method", lambda c: c["subskills"].update(method=next(m for m in METHODS if METHODS[m].top_k_set))),
    ("subskills.k", lambda c: c["subskills"].update(k=["3pct"])),
    ("subskills.edit", lambda c: c["subskills"].update(edit="x9")),
    ("subskills.evaluate", lambda c: c["subskills"].update(evaluate=["nope"])),
    ("subskills.suites.toy", lambda c: c["subskills"]["suites"].update(toy=c["evaluation"]["suites"]["toy"])),
    ("synthetic.tasks.math_add", lambda c: c["synthetic"]["tasks"]["math_add"].update(n_test=10)),
]


@pytest.mark.parametrize(("key", "change"), SUBSKILL_PROBLEMS, ids=[c[0] for c in SUBSKILL_PROBLEMS])
def test_every_bad_sub_skill_setting_is_named_by_its_key(key, change):
    config = default()
    change(config)
    problems = Study(config).problems()
    assert any(key in p for p in problems), problems


def test_without_a_sub_skill_study_nothing_is_planned_for_one():
    config = tiny()
    config.pop("subskills", None)
    study = Study(config)
    assert study.subskills.variants() == study.subskills.overlaps() == study.subskills.suites() == []
    assert study.aggregate_params()["selections"]["subskills"]["skill"] == []


def test_prefetch_fetches_every_hub_data_set_a_set_is_made_from_the_sub_skills_included():
    """On a login node: the skill's, the controls' and the sub-skills' hub data sets (MATH's
    subjects in the example), none read from local files."""
    config = validated(compose([REPO / "configs" / "examples" / "math-subjects.yaml"]))
    study = Study(config)
    fetched = study.prefetch()["datasets"]
    for name in study.all_datasets():
        spec = config["datasets"][name]
        wanted = {k: v for k, v in spec.items() if k in ("path", "name", "revision")}
        assert (wanted in fetched) == (spec["source"] == "hf" and study.data.local_key(spec["path"]) is None), name
    assert any(d.get("name") == "geometry" for d in fetched)


# --- The parts on their own -----------------------------------------------------------------------


def test_models_say_where_each_is_loaded_from_and_what_its_jobs_ask_for(tmp_path):
    specs = {
        "toy": {"path": "toy"},
        "rand": {"path": "random", "architecture": {"model_type": "llama"}},
        "q": {"path": str(tmp_path), "gguf": "m.gguf"},
        "hub": {"path": "org/model"},
    }
    for spec in specs.values():
        spec.update(revision=None, dtype="bfloat16", device="auto", gpus=1, size_b=2.5, threads=4)
    models = Models(specs, offline=True, results="out")
    assert [models.folder(m) for m in specs] == ["out/models/toy", "out/models/rand", "out/models/q", None]
    assert (models.built_as("toy"), models.built_as("random"), models.built_as("gguf")) == (["toy"], ["rand"], ["q"])
    assert models.params("hub") == {"path": "org/model", "revision": None, "dtype": "bfloat16", "device": "auto"}
    specs["hub"]["gpus"] = 2  # where its jobs run: not a param (mathneuro.study.models.EXECUTION)
    assert models.params("hub") == {"path": "org/model", "revision": None, "dtype": "bfloat16", "device": "auto"}
    assert placement(2) == {"gpus": 2, "device_map": "auto"} and placement(1)["device_map"] is None
    assert models.params("q")["path"] == "out/models/q"
    assert models.hub() == [{"path": "org/model", "revision": None}]
    assert models.gguf_files("q") == [str(tmp_path / "m.gguf")]  # a local folder's file (a hub's: its job's)
    specs["q"]["path"] = "org/quantized"
    assert models.gguf_files("q") == []
    assert models.memory_mb("hub", 2, 3000) == 2 * (4000 + 3000 * 2.5)
    assert models.runtime_min("hub", 1, 3) == 10 and models.runtime_min("hub", 3, 30, floor=5) == 3 * 75
    assert models.problems(synthetic=True, datasets={}) == []
    assert [p.split(":")[0].split(".path")[0] for p in models.problems(synthetic=False, datasets={})] == ["models.toy"]
    specs["hub"]["architecture"] = {}
    assert any(p.startswith("models.hub:") for p in models.problems(synthetic=True, datasets={}))
    del specs["hub"]["architecture"]
    specs["hub"]["plant"] = {"data": "math"}  # a plant goes with path planted only, and the reverse
    specs["planted"] = {**specs["toy"], "path": "planted"}
    assert sorted(p.split(":")[0] for p in models.problems(synthetic=True, datasets={"math": {}})) == [
        "models.hub", "models.planted"]
    specs["planted"]["plant"] = specs["hub"].pop("plant")
    assert models.problems(synthetic=True, datasets={"math": {}}) == []
    assert models.folder("planted") == "out/models/planted"
    assert [p.split(":")[0] for p in models.problems(synthetic=True, datasets={})] == ["models.planted.plant.data"]
    specs["planted"]["plant"]["rehearse"] = ["facts"]
    assert [p.split(":")[0] for p in models.problems(synthetic=True, datasets={"math": {}})] == [
        "models.planted.plant.rehearse"]
    del specs["planted"]["plant"]["rehearse"]
    assert [p.split(":")[0].split(".path")[0] for p in models.problems(synthetic=False, datasets={"math": {}})] == [
        "models.toy", "models.planted"]
    with pytest.raises(ValueError, match="no model 'nope'"):
        models["nope"]


def test_suites_of_project_tasks_read_only_their_own_local_data_and_bpb_suites_read_no_task_files():
    config = default()
    data = Data(config)
    suites = Suites(config["evaluation"], data, "math", extra=config["subskills"]["suites"])
    assert list(suites) == [*config["evaluation"]["suites"], *config["subskills"]["suites"]]
    assert suites.evaluated == list(config["evaluation"]["suites"])
    assert suites.skill_tasks == [t for t in config["evaluation"]["suites"]["toy"]["tasks"] if "math" in t]
    for suite in suites:
        read = {f"mathneuro/{t}" for t in suites.tasks(suite)}
        assert set(suites.local_data(suite)) == read  # the toy tasks' data sets, no other
        assert suites.inputs(suite) == {"local_data": [data.local_data[hub]["files"][split] for hub in data.local_data
                                                       if hub in read for split in ("test", "train")]}
        assert suites.project_files(suite) == definition_files(suites.tasks(suite))  # the toy's: no user tasks
        defined = {Path(f).name for f in suites.project_files(suite)}
        assert {f"{t}.yaml" for t in suites.tasks(suite)} <= defined <= {p.name for p in PROJECT_TASKS.rglob("*")}
        assert suites.lm_eval(suite, "v")["local_data"] == suites.local_data(suite)
        assert suites.spec(suite) == canonical(suites.specs[suite]) and suites.bpb_files(suite) == []
    config["evaluation"]["suites"]["bpb"] = {"tasks": ["bpb_math"]}
    config["datasets"]["math"]["heldout"] = {"fraction": 0.2, "seed": 0}
    bpb = Suites(config["evaluation"], Data(config), "math")
    assert bpb.generated_only("bpb") and bpb.inputs("bpb") == {} and bpb.lm_eval("bpb", "v") == {}
    # what the job reads: the held-out records' spec, not the identification's
    assert bpb.bpb_params("bpb")["specs"] == {"math": canonical(heldout_spec(config["datasets"]["math"], "test"))}
    assert bpb.bpb_params("bpb")["specs"]["math"]["part"] == "heldout"
    assert bpb.hub_tasks() == []  # the toy's data no hub holds; bpb tasks are written


def test_without_a_sub_skill_section_the_part_is_false_and_plans_nothing():
    k = KLabels({"k": {"5pct": 0.05}})
    off = Subskills(None, k, n_samples=10, seeds=[0, 1], default_k="5pct", default_edit="x0",
                    evaluation_suites=["toy"])
    assert not off and off.skills == [] and off.datasets() == [] and off.own_suites == {}
    assert off.variants() == off.overlaps() == off.suites() == [] and off.problems({}, {}, {}) == []
    assert off.k() == ["5pct"] and off.edit() == "x0"
    section = {"skills": ["a", "b"], "controls": ["r"], "method": "mathneuro_all", "suites": {"own": {"tasks": []}}}
    on = Subskills(section, k, n_samples=10, seeds=[0], default_k="5pct", default_edit="x0", evaluation_suites=["toy"])
    assert on and on.controls("a") == ["b", "r"] and on.suites() == ["toy", "own"]
    assert on.variants() == [("a", "mathneuro_all", "b+r", 10, 0, "5pct", "x0"),
                             ("b", "mathneuro_all", "a+r", 10, 0, "5pct", "x0")]
    assert on.sets() == {"a": ("mathneuro_all", "r"), "b": ("mathneuro_all", "r")}
    assert on.problems({"a": {}, "b": {}, "r": {}}, k.fractions, {"x0": 0.0}) == []
    assert any("subskills.skills" in p for p in on.problems({"a": {}, "r": {}}, k.fractions, {"x0": 0.0}))


def test_no_class_in_the_library_holds_over_200_lines():
    """One concern a room: a class that grows past 200 lines is split by concern, as Study was."""
    import ast

    long = [f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for path in sorted((REPO / "mathneuro").rglob("*.py"))
            for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ClassDef)
            if node.end_lineno - node.lineno + 1 > 200]
    assert long == []
