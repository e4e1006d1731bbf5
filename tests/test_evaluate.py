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
        leaves = [toy_task(task)] if toy_task(task) in tasks else [f"{toy_task(task)}_{kind}" for kind in ("numbers", "words")]
        for leaf in leaves:  # reading and facts: a group of their number and word items
            lm_task = tasks[leaf]
            generates = lm_task.config.output_type == "generate_until"
            assert generates == (task in ("math", "math_reworded", *synthetic.OPERATIONS))
            for record in synthetic.read_jsonl(path):
                assert lm_task.doc_to_text(record) == synthetic.prompt_text(task, record)
                assert lm_task.doc_to_target(record) == (record["target"] if generates else record["label"])


def test_templates_compiled_once_render_every_text_as_lm_eval_does(test_files, yaml_dir, monkeypatch):
    """Inside compiled_templates every document's text, target and choices are lm-eval's own, each
    template string is compiled once, and lm-eval's apply_template is back afterwards, also after
    an error."""
    import lm_eval.utils

    names = [toy_task(t) for t in test_files]
    tasks = evaluate.task_manager(names, yaml_dir).load(names)["tasks"]

    def rendered():
        return [(t.doc_to_text(d), t.doc_to_target(d), t.doc_to_choice(d) if t.config.doc_to_choice else None)
                for t in tasks.values() for d in t.eval_docs]

    plain = rendered()
    compiled = []
    monkeypatch.setattr(lm_eval.utils.env, "from_string", _counting(lm_eval.utils.env.from_string, compiled))
    original = lm_eval.utils.apply_template
    with evaluate.compiled_templates() as cache:
        assert rendered() == plain
        assert rendered() == plain
    assert len(compiled) == len(cache) == len(set(compiled)) > 0  # once per distinct template
    assert lm_eval.utils.apply_template is original
    with pytest.raises(RuntimeError), evaluate.compiled_templates():
        raise RuntimeError("stop")
    assert lm_eval.utils.apply_template is original


def _counting(function, calls: list):
    def counted(source, *args, **kwargs):
        calls.append(source)
        return function(source, *args, **kwargs)
    return counted


def test_evaluate_tiny_model(tiny, yaml_dir):
    model, tokenizer = tiny
    table = evaluate.evaluate(model, tokenizer, ["toy_math", "toy_reading", "toy_facts"],
                              include_path=yaml_dir, limit=3, batch_size=4, max_gen_toks=8)
    assert list(table.columns) == evaluate.COLUMNS
    groups = {"toy_reading": "reading", "toy_facts": "facts"}  # each of its number and its word items
    leaves = {f"{group}_{kind}": (task, kind == "numbers") for group, task in groups.items() for kind in ("numbers", "words")}
    assert set(table["task"]) == {"toy_math", *groups, *leaves}
    assert set(table["metric"]) >= {"exact_match,strict-match", "acc,none"}
    assert table["value"].between(0, 1).all()
    n = table.set_index("task")["n"]
    assert n["toy_math"] == 3 and n[list(groups)].isna().all()  # lm-eval counts a group's items nowhere
    files = _files(yaml_dir)
    for leaf, (task, numeric) in leaves.items():  # the first 3 items of each kind (limit is per leaf task)
        kind = [r for r in synthetic.read_jsonl(files[task]) if r["numeric"] == numeric]
        assert n[leaf] == min(3, len(kind))


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
    results = evaluate.run_lm_eval(model, tokenizer, ["toy_math", "toy_reading_words"], include_path=yaml_dir, limit=2,
                                   batch_size=2, max_gen_toks=4, apply_chat_template=True,
                                   system_instruction="Be brief.", log_samples=True)
    samples = evaluate.samples_frame(results)
    assert list(samples.columns) == evaluate.SAMPLE_COLUMNS
    assert set(samples["task"]) == {"toy_math", "toy_reading_words"} and len(samples) == 4
    assert samples["prompt"].str.startswith("<|system|>Be brief.").all()
    math = samples[samples["task"] == "toy_math"]
    assert (math["metric"] == "exact_match,strict-match").all() and math["score"].isin([0.0, 1.0]).all()
    assert math["chosen"].isna().all() and math["response"].notna().all()
    reading = samples[samples["task"] == "toy_reading_words"]
    records = [r for r in synthetic.read_jsonl(_files(yaml_dir)["reading"]) if not r["numeric"]]
    for _, item in reading.iterrows():  # the chosen answer, and whether it is the record's
        record = records[item["doc_id"]]
        assert item["response"].strip() == record["choices"][item["chosen"]].strip()
        assert item["score"] == float(item["chosen"] == record["label"])
    assert set(evaluate.samples_frame(results, text=False)[["prompt", "target"]].stack(future_stack=True)) == {None}
    import json

    written = json.loads(evaluate.results_json(results))
    assert written["versions"] == {"toy_math": 1.0, "toy_reading_words": 2.0} and "samples" not in written


def _files(yaml_dir):
    """task -> its test file, as written into the suite's task YAMLs (reading's and facts' by their
    word items' leaf task)."""
    leaves = {"math": "toy_math", "reading": "toy_reading_words", "facts": "toy_facts_words"}
    written = {task: yaml.safe_load((yaml_dir / f"{leaf}.yaml").read_text()) for task, leaf in leaves.items()}
    return {task: Path(config["dataset_kwargs"]["data_files"]["test"][0]) for task, config in written.items()}


# --- batch size "auto": a search at the longest request, not the model's whole context ------------


@pytest.fixture(scope="module")
def long_context(test_files, tmp_path_factory):
    """A tiny model whose config claims Llama 3's 131,072 positions, a suite of a generation task
    and a bits-per-byte task, and the longest input each kind of request gives it (computed here
    from the prompts and texts, as lm-eval tokenizes them)."""
    texts = [synthetic.training_text(t, r) for t, p in test_files.items() for r in synthetic.read_jsonl(p)]
    tokenizer = toy.build_tokenizer(texts, vocab_size=300)
    model = toy.make_model(len(tokenizer), hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32,
                           max_position_embeddings=131_072, seed=0, tokenizer=tokenizer).eval()
    folder = tmp_path_factory.mktemp("long")
    write_suite(["toy_math"], folder, local_data=toy_local_data(test_files))
    spec = {"source": "json", "path": str(test_files["reading"]), "template": "{question}",
            "heldout": {"path": str(test_files["reading"])}}
    evaluate.write_bpb_tasks({"reading": evaluate.heldout_spec({**spec, "path": str(test_files["facts"])}, "test")},
                             folder)
    return model, tokenizer, folder


def test_auto_searches_at_the_longest_request_and_records_the_batch_sizes(long_context, monkeypatch):
    """lm-eval would search with inputs of max_length = 131,072 tokens for generation and rolling
    requests; fitted_lm searches at the longest prompt plus its generation budget, and at the
    longest text. Every forward pass is intercepted: none is longer than the longest request."""
    from lm_eval.models.huggingface import HFLM

    model, tokenizer, folder = long_context
    monkeypatch.setattr(evaluate, "resolve_batch_size", lambda batch_size, model: batch_size)  # search on the CPU
    budget = 5
    manager = evaluate.task_manager(["toy_math", "bpb_reading"], folder)
    tasks = manager.load(["toy_math", "bpb_reading"])["tasks"]
    lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=1)
    assert lm.max_length == 131_072  # what lm-eval's own search would run at
    prompts = [tasks["toy_math"].fewshot_context(doc, num_fewshot=0) for doc in tasks["toy_math"].eval_docs]
    longest = {"generate_until": max(len(lm.tok_encode(p)) for p in prompts) + budget,
               "loglikelihood_rolling": max(len(lm.tok_encode(d["text"])) for d in tasks["bpb_reading"].eval_docs)}
    lengths = []
    forward = model.forward

    def recorded(*args, **kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        lengths.append(ids.shape[-1])
        if ids.shape[-1] > max(longest.values()):
            raise AssertionError(f"a forward pass of {ids.shape[-1]} tokens, longer than every request")
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", recorded)
    results = evaluate.run_lm_eval(model, tokenizer, ["toy_math", "bpb_reading"], include_path=folder,
                                   batch_size="auto", max_gen_toks=budget)
    assert lengths and max(lengths) <= max(longest.values())
    used = results["mathneuro_run"]["batch_sizes"]
    assert used == {"generate_until": evaluate.AUTO_MAX_BATCH_SIZE, "loglikelihood_rolling": evaluate.AUTO_MAX_BATCH_SIZE}
    table = evaluate.results_frame(results).set_index("task")
    assert table.loc["toy_math", "batch_size"] == used["generate_until"]
    assert table.loc["bpb_reading", "batch_size"] == used["loglikelihood_rolling"]


def test_a_fixed_batch_size_is_recorded_for_every_kind_of_request(tiny, yaml_dir):
    results = evaluate.run_lm_eval(*tiny, ["toy_math", "toy_reading_words"], include_path=yaml_dir, limit=2,
                                   batch_size=3, max_gen_toks=2)
    assert results["mathneuro_run"]["batch_sizes"] == {"generate_until": 3, "loglikelihood": 3}
    assert (evaluate.results_frame(results)["batch_size"] == 3).all()


# --- seeded item subsets -------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 3, 6, 50])
@pytest.mark.parametrize("seed", [0, 7])
def test_a_subset_is_n_items_per_task_drawn_under_the_seed_alone(n, seed):
    sizes = {"a": 6, "b": 40, "mmlu_anatomy": 135}
    drawn = evaluate.subset_indices(sizes, n, seed)
    for task, size in sizes.items():
        items = drawn[task]
        assert items == sorted(set(items)) and len(items) == min(n, size) and all(0 <= i < size for i in items)
    assert evaluate.subset_indices(dict(reversed(sizes.items())), n, seed) == drawn  # not by order or neighbours
    assert evaluate.subset_indices({"b": 40}, n, seed)["b"] == drawn["b"]
    if n < 40:
        assert evaluate.subset_indices(sizes, n, seed + 1)["b"] != drawn["b"]
    big = evaluate.subset_indices({"b": 40, "c": 40}, 20, seed)
    assert big["b"] != big["c"]  # each task its own draw, not the first items of every task


def test_lm_eval_evaluates_exactly_the_subsets_items_and_records_them(tiny, yaml_dir):
    results = evaluate.run_lm_eval(*tiny, ["toy_math", "toy_facts_numbers"], include_path=yaml_dir,
                                   subset={"n": 2, "seed": 5}, batch_size=8, max_gen_toks=2)
    chosen = results["mathneuro_run"]["subset"]
    numbers = sum(r["numeric"] for r in synthetic.read_jsonl(_files(yaml_dir)["facts"]))
    assert numbers > 2
    assert chosen == evaluate.subset_indices({"toy_math": 6, "toy_facts_numbers": numbers}, 2, 5)
    samples = evaluate.samples_frame(results)
    for task, items in chosen.items():
        assert sorted(samples.loc[samples["task"] == task, "doc_id"].unique()) == items
    assert (evaluate.results_frame(results)["n"] == 2).all()
    with pytest.raises(ValueError, match="not both"):
        evaluate.run_lm_eval(*tiny, ["toy_math"], include_path=yaml_dir, limit=2, subset={"n": 1, "seed": 0})
