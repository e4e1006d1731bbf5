"""Tests of the lm-eval wiring (mathneuro.evaluate): the toy tasks in a suite folder and a
tiny-model run."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mathneuro import evaluate, synthetic, toy
from mathneuro.tasks import write_suite

GSM8K_TEST = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "gsm8k" / "test.jsonl"


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def test_files(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("data")
    return {t: synthetic.write_task(t, root, n_train=30, n_test=6, seed=0)["test"]
            for t in synthetic.TASKS}


def toy_task(task: str) -> str:
    """The project's lm-eval task on synthetic ``task`` (mathneuro/lm_tasks/toy)."""
    return f"toy_{task}"


def toy_local_data(test_files: dict[str, Path]) -> dict:
    """local_data serving each toy task's data set (mathneuro/toy_<task>) from ``test_files``."""
    return {f"mathneuro/toy_{t}": {"files": {"test": str(p)}} for t, p in test_files.items()}


@pytest.fixture(scope="module")
def yaml_dir(test_files, tmp_path_factory) -> Path:
    """A suite folder of the four toy tasks, as rule suite_tasks writes it."""
    out = tmp_path_factory.mktemp("tasks")
    write_suite([toy_task(t) for t in test_files], out, local_data=toy_local_data(test_files))
    return out


@pytest.fixture(scope="module")
def tiny(test_files):
    """An untrained tiny toy model: checks the wiring, not accuracy."""
    texts = [synthetic.training_text(t, r) for t, p in test_files.items()
             for r in synthetic.read_jsonl(p)]
    tokenizer = toy.build_tokenizer(texts, vocab_size=300)
    model = toy.make_model(len(tokenizer), hidden_size=32, num_layers=2, num_heads=2,
                           intermediate_size=64, max_position_embeddings=512, seed=0,
                           tokenizer=tokenizer)
    return model.eval(), tokenizer


def test_prompts_match_training_format(test_files, yaml_dir):
    """lm-eval renders exactly the prompt and gold answer the toy model is trained on."""
    names = [toy_task(t) for t in test_files]
    tasks = evaluate.task_manager(names, yaml_dir).load(names)["tasks"]
    for task, path in test_files.items():
        lm_task = tasks[toy_task(task)]
        generates = lm_task.config.output_type == "generate_until"
        assert generates == (task in ("math", "math_reworded", *synthetic.OPERATIONS))
        for record in synthetic.read_jsonl(path):
            assert lm_task.doc_to_text(record) == synthetic.prompt_text(task, record)
            assert lm_task.doc_to_target(record) == (record["target"] if generates else record["label"])


def test_evaluate_tiny_model(tiny, yaml_dir):
    model, tokenizer = tiny
    table = evaluate.evaluate(model, tokenizer, ["toy_math", "toy_reading", "toy_facts"],
                              include_path=yaml_dir, limit=3, batch_size=4, max_gen_toks=8)
    assert list(table.columns) == evaluate.COLUMNS
    assert set(table["task"]) == {"toy_math", "toy_reading", "toy_facts"}
    assert set(table["metric"]) >= {"exact_match,strict-match", "acc,none"}
    assert table["value"].between(0, 1).all() and (table["n"] == 3).all()


def test_task_manager_skips_builtins_for_local_tasks(yaml_dir):
    """The toy tasks do not pay for indexing lm-eval's built-in tasks (tens of seconds)."""
    manager = evaluate.task_manager(["toy_math"], yaml_dir)
    assert "gsm8k" not in manager.all_tasks and "toy_math" in manager.all_tasks


@pytest.mark.skipif(not GSM8K_TEST.is_file(),
                    reason=f"real GSM8K test file absent ({GSM8K_TEST}); see ../shared/data")
def test_toy_math_scores_real_gsm8k_records(tiny, tmp_path):
    """toy_math reads any records with ``question`` and an ``answer`` ending in "#### <number>"."""
    write_suite(["toy_math"], tmp_path, local_data={"mathneuro/toy_math": {"files": {"test": str(GSM8K_TEST)}}})
    table = evaluate.evaluate(*tiny, ["toy_math"], include_path=tmp_path, limit=2, batch_size=2,
                              max_gen_toks=16)
    row = table[table["metric"] == "exact_match,strict-match"].iloc[0]
    assert row["n"] == 2 and 0 <= row["value"] <= 1


def test_batch_size_auto_on_the_cpu_skips_lm_evals_gpu_memory_search(tiny, yaml_dir, monkeypatch):
    """lm-eval's "auto" probes CUDA memory with a forward of 64 maximum-length sequences; on the
    CPU nothing runs out, so it always returns its starting size, after minutes. The paper configs
    ask for "auto": on the CPU the evaluation uses that size directly."""
    import inspect

    from lm_eval.models.huggingface import HFLM

    assert inspect.signature(HFLM.__init__).parameters["max_batch_size"].default == evaluate.AUTO_MAX_BATCH_SIZE

    def no_search(*args, **kwargs):
        raise AssertionError("lm-eval searched for a batch size on the CPU")

    monkeypatch.setattr(HFLM, "_detect_batch_size", no_search)
    table = evaluate.evaluate(*tiny, ["toy_math"], include_path=yaml_dir, limit=2, batch_size="auto", max_gen_toks=4)
    assert (table["n"] == 2).all()


def test_suite_options_reach_lm_eval_and_the_samples_show_what_the_model_saw_and_said(tiny, yaml_dir):
    import copy

    model, tokenizer = tiny
    tokenizer = copy.deepcopy(tokenizer)
    tokenizer.chat_template = "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}<|assistant|>"
    results = evaluate.run_lm_eval(model, tokenizer, ["toy_math", "toy_reading"], include_path=yaml_dir, limit=2,
                                   batch_size=2, max_gen_toks=4, apply_chat_template=True,
                                   system_instruction="Be brief.", log_samples=True)
    samples = evaluate.samples_frame(results)
    assert list(samples.columns) == evaluate.SAMPLE_COLUMNS
    assert set(samples["task"]) == {"toy_math", "toy_reading"} and len(samples) == 4
    assert samples["prompt"].str.startswith("<|system|>Be brief.").all()
    math = samples[samples["task"] == "toy_math"]
    assert (math["metric"] == "exact_match,strict-match").all() and math["correct"].isin([0.0, 1.0]).all()
    reading = samples[samples["task"] == "toy_reading"]
    record = synthetic.read_jsonl(next(p for t, p in _files(yaml_dir).items() if t == "reading"))[0]
    assert reading["response"].iloc[0].strip() in record["choices"]
    import json

    written = json.loads(evaluate.results_json(results))
    assert written["versions"] == {"toy_math": 1.0, "toy_reading": 1.0} and "samples" not in written


def _files(yaml_dir):
    """task -> its test file, as written into the suite's task YAMLs."""
    written = {task: yaml.safe_load((yaml_dir / f"{toy_task(task)}.yaml").read_text()) for task in ("math", "reading")}
    return {task: Path(config["dataset_kwargs"]["data_files"]["test"][0]) for task, config in written.items()}
