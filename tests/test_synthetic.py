"""Tests of the synthetic task generators (mathneuro.synthetic)."""

from __future__ import annotations

import re

import pytest

from mathneuro import synthetic

N_TRAIN, N_TEST = 400, 60


@pytest.fixture(scope="module")
def data() -> dict[str, dict[str, list[dict]]]:
    return {t: synthetic.generate(t, n_train=N_TRAIN, n_test=N_TEST, seed=7)
            for t in synthetic.TASKS}


# the cue words of each operation, per math task: the reworded task shares none with math
CUES = {"math": {"add": ("more from",), "sub": ("gives",), "mul": ("Each holds",)},
        "math_reworded": {"add": ("altogether", "total number"), "sub": ("taken out", "missing"),
                          "mul": ("rows", "each. How")}}
MATH_TASKS = list(CUES)


def _recompute(question: str, task: str = "math") -> int:
    """Recompute the answer of a math question from its numbers and wording."""
    numbers = [int(n) for n in re.findall(r"\d+", question)]
    ops = [op for op, cues in CUES[task].items() if any(c in question for c in cues)]
    assert len(ops) == 1, f"unrecognised question: {question}"
    return {"add": numbers[0] + numbers[1], "sub": numbers[0] - numbers[1], "mul": numbers[0] * numbers[1]}[ops[0]]


def test_sizes_and_ids(data):
    for task, splits in data.items():
        if task in synthetic.OPERATIONS:  # math's records of one operation (tested below)
            continue
        assert len(splits["train"]) == N_TRAIN and len(splits["test"]) == N_TEST
        ids = [r["id"] for s in splits.values() for r in s]
        assert len(set(ids)) == len(ids)
        assert all(isinstance(i, str) and i.startswith(f"{task}-") for i in ids)


@pytest.mark.parametrize("task", MATH_TASKS)
def test_math_answers_are_correct(data, task):
    for record in data[task]["train"] + data[task]["test"]:
        expected = _recompute(record["question"], task)
        lines = record["answer"].split("\n")
        assert lines[-1] == f"#### {expected}"
        assert record["target"] == str(expected)
        assert lines[-2].endswith(f"= {expected}.")


def test_math_worked_steps_are_correct(data):
    """Every ``x op y (op z) = r`` step in the worked solutions is true arithmetic."""
    step = re.compile(r"(\d+(?: [-+*] \d+)+) = (\d+)")
    for record in data["math"]["train"][:200]:
        for expr, result in step.findall(record["answer"]):
            assert eval(expr) == int(result), (expr, result)  # noqa: S307 (digits/ops only)


def test_reworded_math_never_uses_the_math_tasks_wording(data):
    """math_reworded asks the same operations in frames math never uses, and vice versa."""
    for task, other in (("math", "math_reworded"), ("math_reworded", "math")):
        cues = [c for op_cues in CUES[other].values() for c in op_cues]
        assert not any(c in r["question"] for r in data[task]["train"] + data[task]["test"] for c in cues), task


def test_math_splits_disjoint(data):
    def key(r):
        return tuple(re.findall(r"\d+", r["question"])) + (_recompute(r["question"]),)
    train = {key(r) for r in data["math"]["train"]}
    assert not train & {key(r) for r in data["math"]["test"]}


CONTROLS = ["reading", "facts"]


@pytest.mark.parametrize("task", CONTROLS)
def test_mc_records(data, task):
    """Four distinct choices, the label's the answer, ``numeric`` says whether it is a number (all
    choices then are, of one length), and math's symbols never occur: only math computes."""
    for record in data[task]["train"] + data[task]["test"]:
        assert len(record["choices"]) == 4 == len(set(record["choices"]))
        assert record["choices"][record["label"]] == record["answer"]
        assert record["numeric"] == record["answer"].isdigit()
        if record["numeric"]:
            assert all(c.isdigit() and len(c) == len(record["answer"]) for c in record["choices"])
        texts = [record["question"], record["answer"], *record["choices"]]
        assert not any(re.search(r"[+*=#<]", text) for text in texts)


@pytest.mark.parametrize("task", CONTROLS)
def test_controls_hold_numbers(data, task):
    """Numbers occur in the controls as in real text: most items hold a digit (more than 30 %), and
    a good share of them is answered by a number (both kinds of item in the test split)."""
    test = data[task]["test"]
    with_digit = [r for r in test if re.search(r"[0-9]", " ".join([r["question"], *r["choices"]]))]
    assert len(with_digit) / len(test) > 0.3
    numeric = sum(r["numeric"] for r in test) / len(test)
    assert 0.3 < numeric < 0.7


@pytest.mark.parametrize("task", synthetic.TASKS)
def test_prompts_disjoint_between_splits(data, task):
    train = {synthetic.prompt_text(task, r) for r in data[task]["train"]}
    assert not train & {synthetic.prompt_text(task, r) for r in data[task]["test"]}


def test_reading_answer_is_in_story(data):
    """The answer, a word or a number, is read from the story; no distractor is a detail of it."""
    for record in data["reading"]["test"]:
        story = record["question"].split("\nQuestion:")[0]
        words = set(re.findall(r"\w+", story))
        assert record["answer"] in words
        assert not words & (set(record["choices"]) - {record["answer"]})


def _fact(question: str) -> tuple[str, str]:
    """The (creature, relation) a facts question asks about, read back from its phrasing."""
    for relation, (phrasings, _) in synthetic.FACT_RELATIONS.items():
        for phrasing in phrasings:
            pattern = re.escape(f"Question: {phrasing}").replace(re.escape("{entity}"), r"(\w+)")
            if match := re.fullmatch(pattern, question):
                return match.group(1), relation
    raise AssertionError(f"unrecognised question: {question}")


def test_facts_are_learnable_from_train(data):
    """Each test fact is asked in training too (other wording), with the same answer."""
    train = {_fact(r["question"]): r["answer"] for r in data["facts"]["train"]}
    for record in data["facts"]["test"]:
        assert train[_fact(record["question"])] == record["answer"]


@pytest.mark.parametrize("task", synthetic.TASKS)
def test_seeded(task):
    first = synthetic.generate(task, n_train=50, n_test=20, seed=1)
    assert first == synthetic.generate(task, n_train=50, n_test=20, seed=1)
    assert first != synthetic.generate(task, n_train=50, n_test=20, seed=2)


def test_unknown_task():
    with pytest.raises(ValueError, match="unknown synthetic task"):
        synthetic.generate("poetry", n_train=1, n_test=1, seed=0)


def test_write_task(tmp_path):
    paths = synthetic.write_task("reading", tmp_path, n_train=5, n_test=3, seed=0)
    assert paths == {s: tmp_path / "reading" / f"{s}.jsonl" for s in ("train", "test")}
    records = synthetic.read_jsonl(paths["test"])
    assert records == synthetic.generate("reading", n_train=5, n_test=3, seed=0)["test"]


def test_training_text_is_prompt_plus_answer(data):
    record = data["math"]["test"][0]
    text = synthetic.training_text("math", record)
    assert text == f"Question: {record['question']}\nAnswer: {record['answer']}"


def test_the_default_configs_templates_render_the_toy_models_training_text():
    """config.yaml's identification texts are what the toy model was trained on."""
    from pathlib import Path

    import yaml

    from mathneuro.data import _renderer

    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config.yaml").read_text())
    for name, spec in config["datasets"].items():
        task = Path(spec["path"]).parent.name
        records = synthetic.generate(task, n_train=60, n_test=5, seed=0)["train"]
        assert records, name
        render = _renderer(spec)
        for record in records:
            assert render(record) == synthetic.training_text(task, record)


def test_the_operation_tasks_split_maths_own_records_by_operation():
    """math_add, math_sub, math_mul hold exactly math's records (same draw, same ids), each record
    in the task of the one operation its worked answer uses."""
    math = synthetic.generate("math", n_train=400, n_test=40, seed=2)
    parts = {t: synthetic.generate(t, n_train=400, n_test=40, seed=2) for t in synthetic.OPERATIONS}
    symbol = {"add": "+", "sub": "-", "mul": "*"}
    for split in ("train", "test"):
        merged = sorted((r for p in parts.values() for r in p[split]), key=lambda r: r["id"])
        assert merged == sorted(math[split], key=lambda r: r["id"])
        for task, op in synthetic.OPERATIONS.items():
            assert parts[task][split], (task, split)
            assert all(r["answer"].startswith("We need ") and f" {symbol[op]} " in r["answer"].splitlines()[0]
                       for r in parts[task][split])
        assert all(synthetic.prompt_text(t, r) == synthetic.prompt_text("math", r)
                   for t, p in parts.items() for r in p[split])
