"""The toy tasks (mathneuro/lm_tasks/toy) scored by lm-eval on synthetic records (mathneuro.synthetic)
in a suite folder as the workflow writes it, with a scripted model whose answers are known:

* toy_math and its variants (generate_until): the strict-match filter takes the first number
  after "#### " (regex ``#### (\\-?[0-9\\.\\,]+)``, else "[invalid]"), and exact_match compares it
  with the number after "####" in the record's worked answer, ignoring case, commas, "$" and a
  final "." (the YAML's regexes_to_ignore);
* toy_reading and toy_facts (multiple_choice): acc is 1 when the choice with the highest
  log-likelihood of " " + choice after the prompt is the record's label; each is a group of its
  items answered by a number (``toy_<task>_numbers``) and by a word (``toy_<task>_words``), whose
  value is the mean over all its items.

Each item's score must be what those definitions give for the scripted answer, and each task's
value the mean of its items'.
"""

from __future__ import annotations

import pytest

from mathneuro import synthetic
from mathneuro.tasks import project_configs, write_suite

GENERATIVE = ["math", "math_reworded", "math_add", "math_sub", "math_mul"]
CHOICE = ["reading", "facts"]
KINDS = {"numbers": True, "words": False}  # a choice group's leaves: items answered by a number, or not


def _wrong(record: dict) -> str:
    return str(int(record["target"]) + 1)


# the scripted model's answer to a math record -> whether the task's definition scores it correct
ANSWERS = [
    (lambda r: r["answer"], True),  # the worked answer, "#### <n>" on its last line
    (lambda r: f"#### {r['target']}", True),
    (lambda r: f"#### {r['target']}.", True),  # a final "." is ignored
    (lambda r: f"#### {r['target'][:1]},{r['target'][1:]}", True),  # commas are ignored
    (lambda r: f"#### {r['target']} {r['question'].split()[-2]}.\n\nQuestion: What next?", True),  # text after it
    (lambda r: f"#### {r['target']}\n#### {_wrong(r)}", True),  # the first "####" counts
    (lambda r: f"#### {_wrong(r)}", False),  # a wrong number
    (lambda r: f"#### {_wrong(r)}\n#### {r['target']}", False),  # the first "####" counts
    (lambda r: f"The answer is {r['target']}.", False),  # no "####": strict match reads nothing
    (lambda r: f"####{r['target']}", False),  # no space after "####"
    (lambda r: f"#### ${r['target']}", False),  # "$" is ignored only once read, and the regex stops at it
    (lambda r: f"#### -{r['target']}", False),
    (lambda r: f"#### {r['target']}.0", False),  # only a final "." is ignored
    (lambda r: f"#### 0{r['target']}", False),  # strings are compared, not numbers
    (lambda r: "", False),
]

# the choice the scripted model scores highest (from the record) -> whether acc counts it correct
CHOSEN = [
    (lambda r: r["label"], True),
    (lambda r: (r["label"] + 1) % len(r["choices"]), False),
    (lambda r: len(r["choices"]) - 1, None),  # the last choice: correct when it is the label
    (lambda r: 0, None),  # the first
]


def records(task: str, n: int) -> list[dict]:
    """The first n test records of ``task`` (operation subsets filter a larger draw)."""
    drawn = synthetic.generate(task, n_train=0, n_test=6 * n, seed=0)["test"][:n]
    assert len(drawn) == n
    return drawn


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("toy_tasks")
    data = {task: records(task, len(ANSWERS) if task in GENERATIVE else 4 * len(CHOSEN))
            for task in GENERATIVE + CHOICE}
    local = {f"mathneuro/toy_{task}": {"files": {"test": str(synthetic.write_jsonl(recs, folder / f"{task}.jsonl"))}}
             for task, recs in data.items()}
    write_suite([f"toy_{task}" for task in data], folder / "suite", local_data=local)
    return data, folder / "suite"


def expected_scores(task: str, recs: list[dict]) -> list[float]:
    """Each item's score by the definitions above, for the answer the scripted model gives it."""
    if task in GENERATIVE:
        return [float(ANSWERS[i][1]) for i in range(len(recs))]
    scores = []
    for i, record in enumerate(recs):
        pick, correct = CHOSEN[i % len(CHOSEN)]
        scores.append(float(correct if correct is not None else pick(record) == record["label"]))
    return scores


class Scripted:
    """An lm-eval model answering item i of each toy task with ANSWERS[i] (generation) or giving
    the highest log-likelihood to CHOSEN[i]'s choice; records every request it gets."""

    def __new__(cls, data: dict[str, list[dict]]):
        from lm_eval.api.model import LM

        def item(task_name: str, context: str) -> tuple[str, int]:
            task = task_name.removeprefix("toy_").removesuffix("_numbers").removesuffix("_words")
            found = [i for i, r in enumerate(data[task]) if synthetic.prompt_text(task, r) == context]
            assert len(found) == 1, (task_name, context)
            return task, found[0]

        class Model(LM):
            generations: dict[tuple[str, int], dict] = {}
            scored: dict[tuple[str, int], list[int]] = {}

            def generate_until(self, requests, disable_tqdm=False):
                out = []
                for request in requests:
                    context, kwargs = request.args
                    task, i = item(request.task_name, context)
                    assert (task, i) not in self.generations
                    self.generations[task, i] = kwargs
                    out.append(ANSWERS[i][0](data[task][i]))
                return out

            def loglikelihood(self, requests, disable_tqdm=False):
                out = []
                for request in requests:
                    context, continuation = request.args
                    task, i = item(request.task_name, context)
                    record = data[task][i]
                    choice = [" " + c for c in record["choices"]].index(continuation)
                    self.scored.setdefault((task, i), []).append(choice)
                    best = CHOSEN[i % len(CHOSEN)][0](record)
                    out.append((-1.0 if choice == best else -1.5 - choice, choice == best))
                return out

            def loglikelihood_rolling(self, requests, disable_tqdm=False):
                raise NotImplementedError

        return Model()


@pytest.fixture(scope="module")
def evaluated(data):
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    recs, suite = data
    model = Scripted(recs)
    results = simple_evaluate(model=model, tasks=[f"toy_{task}" for task in recs], log_samples=True,
                              task_manager=TaskManager(include_path=str(suite), include_defaults=False))
    return results, model


def test_the_answers_cover_both_verdicts():
    assert {correct for _, correct in ANSWERS} == {True, False}
    reading = records("reading", 4 * len(CHOSEN))
    assert set(expected_scores("reading", reading)) == {0.0, 1.0}


@pytest.mark.parametrize("task", GENERATIVE)
def test_math_items_score_the_first_number_after_the_hashes(evaluated, data, task):
    results, model = evaluated
    recs = data[0][task]
    samples = sorted(results["samples"][f"toy_{task}"], key=lambda s: s["doc_id"])
    assert [s["filter"] for s in samples] == ["strict-match"] * len(recs)
    assert [s["target"] for s in samples] == [r["target"] for r in recs]
    got = [s["exact_match"] for s in samples]
    want = expected_scores(task, recs)
    assert got == want, [(ANSWERS[i][0](recs[i]), g) for i, g in enumerate(got) if g != want[i]]
    value = results["results"][f"toy_{task}"]["exact_match,strict-match"]
    assert value == pytest.approx(sum(want) / len(want))
    generation = project_configs()["toy_math"]["generation_kwargs"]
    for i in range(len(recs)):  # every item asked once, with the YAML's stop strings and budget
        kwargs = model.generations[task, i]
        assert kwargs["until"] == generation["until"] and kwargs["max_gen_toks"] == generation["max_gen_toks"]


@pytest.mark.parametrize("task", CHOICE)
def test_choice_items_score_the_most_likely_choice_against_the_label(evaluated, data, task):
    results, model = evaluated
    recs = data[0][task]
    want = expected_scores(task, recs)
    for kind, numeric in KINDS.items():  # each leaf scores its kind's items, in the records' order
        mine = [i for i, r in enumerate(recs) if r["numeric"] == numeric]
        assert mine, kind
        samples = sorted(results["samples"][f"toy_{task}_{kind}"], key=lambda s: s["doc_id"])
        assert [s["target"] for s in samples] == [recs[i]["label"] for i in mine]
        assert [s["acc"] for s in samples] == [want[i] for i in mine]
        assert results["results"][f"toy_{task}_{kind}"]["acc,none"] == pytest.approx(sum(want[i] for i in mine) / len(mine))
    assert results["results"][f"toy_{task}"]["acc,none"] == pytest.approx(sum(want) / len(want))
    for i, record in enumerate(recs):  # every choice of every item scored once
        assert sorted(model.scored[task, i]) == list(range(len(record["choices"])))
