"""The project's EGSM tasks (mathneuro/lm_tasks/egsm): zero-shot and eight-shot, as the MathNeuro
authors ran EGSM, their data redirected by local_data, scored by lm-eval on a fixture in the hub's
record format with a scripted model whose answers are known."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from mathneuro.tasks import PROJECT_TASKS, project_task_names, task_paths, write_suite

FIXTURE = Path(__file__).parent / "fixtures" / "hub" / "bryanchrist" / "egsm_val" / "validation.jsonl"
RECORDS = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
LOCAL = {"bryanchrist/egsm_val": {"files": {"validation": str(FIXTURE)}}}

# the scripted model's answer to each fixture problem -> (strict-match, flexible-extract) correct
ANSWERS = [
    ("So there are 14,785 boxes. The answer is 14785.", True, True),  # flexible reads "14785.": "." ignored
    ("It fills 1,500 boxes in all. The answer is 1500.", True, True),  # the target is "1,500": commas ignored
    ("The answer is 10000.", False, False),
    ("In a year it pays $507,600", False, True),  # no "The answer is": only the flexible filter reads it
]


def test_the_project_task_names_are_lm_evals_index_of_the_folder():
    from lm_eval.tasks import TaskManager

    indexed = TaskManager(include_path=task_paths(), include_defaults=False).task_index
    assert project_task_names() == set(indexed) >= {"egsm", "egsm_fewshot"}


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    folder = tmp_path_factory.mktemp("egsm")
    manifest = write_suite(["egsm", "egsm_fewshot"], folder, local_data=LOCAL)
    return folder, manifest


def test_the_suite_includes_the_projects_yaml_and_redirects_only_the_data(suite):
    folder, manifest = suite
    for name in ("egsm", "egsm_fewshot"):
        written = yaml.safe_load((folder / f"{name}.yaml").read_text())
        assert written["include"] == str((PROJECT_TASKS / "egsm" / f"{name}.yaml").resolve())
        assert set(written) == {"include", "dataset_path", "dataset_name", "dataset_kwargs"}
        assert manifest["leaves"][name]["data_files"] == {"validation": [str(FIXTURE.resolve())]}


class Scripted:
    """An lm-eval model answering each fixture problem with its ANSWERS entry; keeps the prompts."""

    def __new__(cls):
        from lm_eval.api.model import LM

        class Model(LM):
            prompts: dict[str, tuple[str, dict]] = {}

            def generate_until(self, requests, disable_tqdm=False):
                out = []
                for request in requests:
                    context, kwargs = request.args
                    index = next(i for i, r in enumerate(RECORDS) if _question_line(r) in context)
                    self.prompts[request.task_name + str(index)] = (context, kwargs)
                    out.append(ANSWERS[index][0])
                return out

            def loglikelihood(self, requests, disable_tqdm=False):
                raise NotImplementedError

            def loglikelihood_rolling(self, requests, disable_tqdm=False):
                raise NotImplementedError

        return Model()


def _question_line(record: dict) -> str:
    return f"Q: {record['question']}\nA:"


@pytest.fixture(scope="module")
def evaluated(suite):
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    folder, _ = suite
    model = Scripted()
    results = simple_evaluate(model=model, tasks=["egsm", "egsm_fewshot"], log_samples=True,
                              task_manager=TaskManager(include_path=str(folder), include_defaults=False))
    return results, model.prompts


@pytest.mark.parametrize("task", ["egsm", "egsm_fewshot"])
def test_both_filters_score_the_final_number_as_the_authors_task_does(evaluated, task):
    results, _ = evaluated
    scores = results["results"][task]
    assert scores["exact_match,strict-match"] == pytest.approx(sum(a[1] for a in ANSWERS) / len(ANSWERS))
    assert scores["exact_match,flexible-extract"] == pytest.approx(sum(a[2] for a in ANSWERS) / len(ANSWERS))
    samples = [s for s in results["samples"][task] if s["filter"] == "strict-match"]
    targets = [sample["target"] for sample in sorted(samples, key=lambda s: s["doc_id"])]
    assert targets == [r["answer"].split("####")[-1].strip() for r in RECORDS]


def test_zero_shot_asks_for_steps_and_stops_at_the_next_question(evaluated):
    _, prompts = evaluated
    for index, record in enumerate(RECORDS):
        context, kwargs = prompts[f"egsm{index}"]
        assert context == f"Q: {record['question']}\nA: Let's think step by step."
        assert kwargs["until"] == ["Q:", "</s>", "<|im_end|>"] and kwargs["do_sample"] is False


def test_eight_shot_puts_gsm8k_cots_exemplars_first(evaluated):
    import lm_eval

    gsm8k_cot = yaml.safe_load((Path(lm_eval.__file__).parent / "tasks/gsm8k/gsm8k-cot.yaml").read_text())
    exemplars = gsm8k_cot["fewshot_config"]["samples"]
    _, prompts = evaluated
    for index, record in enumerate(RECORDS):
        context, _ = prompts[f"egsm_fewshot{index}"]
        shots = "".join(f"Q: {e['question']}\nA: {e['target']}\n\n" for e in exemplars)
        assert context == shots + _question_line(record)
