"""Bits-per-byte tasks of data sets' held-out texts (mathneuro.evaluate: is_bpb_task, heldout_spec,
bpb_task_config, write_bpb_tasks), and lm-eval's bits_per_byte on such a task checked against the
definition computed here from the model's own logits."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest
import torch
import yaml
from conftest import tiny_llama

from mathneuro import evaluate, synthetic

pytestmark = pytest.mark.usefixtures("one_thread")

TEMPLATE = "Q: {q}\nA: {a}"
# Non-ASCII records: their UTF-8 bytes outnumber their characters (and the char tokenizer's tokens),
# so a bits-per-byte that divided by characters or tokens would not match.
RECORDS = [{"q": f"note {i}: what is {i} + {i}?", "a": str(2 * i)} for i in range(18)] + [
    {"q": "Où est le café?", "a": "à côté"},
    {"q": "Grüße aus Köln", "a": "naïve — ok"},
]


def jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def read_texts(path: Path) -> list[str]:
    return [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines()]


def rendered(records=RECORDS) -> list[str]:
    return [TEMPLATE.format(**r) for r in records]


# --- is_bpb_task, heldout_spec -----------------------------------------------------------------------


@pytest.mark.parametrize("task, expected", [("bpb_math", True), ("bpb_", True), ("toy_math", False),
                                            ("gsm8k_cot", False), ("mmlu_bpb", False), ("bp_math", False)])
def test_is_bpb_task_is_the_bpb_prefix(task, expected):
    assert evaluate.is_bpb_task(task) is expected


HF = {"source": "hf", "path": "openai/gsm8k", "name": "main", "split": "train", "template": TEMPLATE,
      "n": 50, "seed": 3, "replace": False}
SYNTHETIC = {"source": "synthetic", "task": "math", "split": "train", "n_train": 10, "n_test": 4,
             "data_seed": 1, "n": 5, "seed": 2, "replace": True}

# (spec, held-out split) -> the spec heldout_spec returns
HELDOUT = {
    "hub": (HF, "test", {"source": "hf", "path": "openai/gsm8k", "name": "main", "split": "test",
                         "template": TEMPLATE}),
    "hub without a split reads train: test is held out": (
        {"source": "hf", "path": "x/y", "template": "{t}"}, "test",
        {"source": "hf", "path": "x/y", "template": "{t}", "split": "test"}),
    "hub with a combined split": ({**HF, "split": "train+validation"}, "test",
                                  {**{k: v for k, v in HF.items() if k not in ("n", "seed", "replace")},
                                   "split": "test"}),
    "synthetic": (SYNTHETIC, "test", {"source": "synthetic", "task": "math", "split": "test", "n_train": 10,
                                      "n_test": 4, "data_seed": 1}),
    "synthetic without a split": ({"source": "synthetic", "task": "facts", "n_train": 3, "n_test": 2}, "test",
                                  {"source": "synthetic", "task": "facts", "n_train": 3, "n_test": 2,
                                   "split": "test"}),
    "file with a file of held-out texts": (
        {"source": "json", "path": "a.jsonl", "heldout": {"path": "held/out.jsonl"}, "template": TEMPLATE, "n": 7,
         "seed": 1}, "test",
        {"source": "json", "path": "held/out.jsonl", "template": TEMPLATE}),  # that file alone
    "file with a held-out share of its records, the held-out split not read": (
        {"source": "csv", "path": "a.csv", "columns": ["q", "a"], "heldout": {"fraction": 0.2, "seed": 3},
         "template": TEMPLATE, "n": 7, "seed": 1, "replace": False}, "train",
        {"source": "csv", "path": "a.csv", "columns": ["q", "a"], "heldout": {"fraction": 0.2, "seed": 3},
         "template": TEMPLATE, "part": "heldout"}),
}


@pytest.mark.parametrize("case", HELDOUT)
def test_heldout_spec_reads_the_heldout_split_and_every_record(case):
    spec, split, expected = HELDOUT[case]
    before = json.dumps(spec, sort_keys=True)
    assert evaluate.heldout_spec(spec, split) == expected
    assert json.dumps(spec, sort_keys=True) == before  # the config's spec is not changed


# (spec, held-out split) -> the identification split the message names
SAME_SPLIT = {
    "hub, same split": (HF, "train", "'train'"),
    "hub, no split (train)": ({"source": "hf", "path": "x/y"}, "train", "None"),
    "hub, part of a combined split": ({**HF, "split": "dev+validation"}, "validation", "'dev+validation'"),
    "hub, first part of a combined split": ({**HF, "split": "dev+validation"}, "dev", "'dev+validation'"),
    "hub, a combined held-out split holding it": (HF, "train+test", "'train'"),
    "hub, combined splits sharing a part": ({**HF, "split": "dev+validation"}, "validation[:50%]+test",
                                            "'dev+validation'"),
    "synthetic, same split": ({**SYNTHETIC, "split": "test"}, "test", "'test'"),
    "synthetic, no split (train)": ({"source": "synthetic", "task": "math", "n_train": 2, "n_test": 2}, "train",
                                    "None"),
}


@pytest.mark.parametrize("case", SAME_SPLIT)
def test_a_heldout_split_the_sets_are_identified_on_is_refused_naming_it(case):
    spec, split, named = SAME_SPLIT[case]
    with pytest.raises(ValueError) as err:
        evaluate.heldout_spec(spec, split)
    message = str(err.value)
    assert f"held-out split {split!r}" in message and f"({named})" in message, message


@pytest.mark.parametrize(("spec", "named"), [
    ({"source": "json", "path": "a.jsonl", "n": 5}, "names no held-out texts"),
    ({"source": "parquet", "path": "d/a.parquet", "heldout": {"path": "d/./a.parquet"}}, "its own path"),
], ids=["no heldout", "heldout.path is its path"])
def test_a_file_data_set_without_held_out_texts_of_its_own_is_refused(spec, named):
    with pytest.raises(ValueError, match=named):
        evaluate.heldout_spec(spec, "test")


# --- bpb_task_config, write_bpb_tasks ---------------------------------------------------------------


def test_bpb_task_config_is_a_rolling_loglikelihood_task_of_the_file(tmp_path):
    data = jsonl(tmp_path / "t.jsonl", [{"text": "abc"}])
    config = evaluate.bpb_task_config("bpb_x", data)
    assert config["task"] == "bpb_x" and config["output_type"] == "loglikelihood_rolling"
    assert config["dataset_path"] == "json"
    assert config["dataset_kwargs"]["data_files"]["test"] == str(data.resolve())
    assert config["test_split"] == "test" and config["doc_to_target"] == "{{text}}"
    assert [(m["metric"], m["aggregation"], m["higher_is_better"]) for m in config["metric_list"]] == \
        [("bits_per_byte", "bits_per_byte", False)]
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        evaluate.bpb_task_config("bpb_x", tmp_path / "missing.jsonl")


@pytest.fixture
def notes(tmp_path) -> dict:
    """A file data set whose held-out texts are another file: every record of RECORDS."""
    return {"source": "json", "path": str(jsonl(tmp_path / "train.jsonl", RECORDS[:3])),
            "heldout": {"path": str(jsonl(tmp_path / "notes.jsonl", RECORDS))}, "template": TEMPLATE,
            "n": 3, "seed": 5, "replace": True}


def test_write_bpb_tasks_writes_every_heldout_text_shuffled_under_the_seed(tmp_path, notes):
    counts = evaluate.write_bpb_tasks({"notes": evaluate.heldout_spec(notes, "test")}, tmp_path / "a", seed=7)
    assert counts == {"bpb_notes": len(RECORDS)}  # every held-out record, not the spec's n=3
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["bpb_notes.jsonl", "bpb_notes.yaml"]
    texts = read_texts(tmp_path / "a" / "bpb_notes.jsonl")
    assert Counter(texts) == Counter(rendered())
    assert texts != rendered()  # shuffled, not in file order

    config = yaml.safe_load((tmp_path / "a" / "bpb_notes.yaml").read_text())
    assert config == evaluate.bpb_task_config("bpb_notes", tmp_path / "a" / "bpb_notes.jsonl")

    again = evaluate.write_bpb_tasks({"notes": evaluate.heldout_spec(notes, "test")}, tmp_path / "b", seed=7)
    assert again == counts and read_texts(tmp_path / "b" / "bpb_notes.jsonl") == texts
    evaluate.write_bpb_tasks({"notes": evaluate.heldout_spec(notes, "test")}, tmp_path / "c", seed=8)
    other = read_texts(tmp_path / "c" / "bpb_notes.jsonl")
    assert Counter(other) == Counter(texts) and other != texts


@pytest.mark.parametrize("fraction", [0.1, 0.25, 0.5, 0.9])
@pytest.mark.parametrize("held_seed", [0, 4])
def test_a_held_out_share_of_a_file_is_never_drawn_by_the_identification(tmp_path, fraction, held_seed):
    """The identification draws (with replacement, many times the file's size) only records the
    held-out share leaves; the bpb task reads exactly those held out, and together they are the
    file."""
    from mathneuro.data import heldout_rows, load_texts

    records = [{"q": f"question {i}", "a": str(i)} for i in range(40)]
    spec = {"source": "json", "path": str(jsonl(tmp_path / "all.jsonl", records)), "template": TEMPLATE,
            "id_field": "a", "heldout": {"fraction": fraction, "seed": held_seed}}
    held = heldout_rows(len(records), fraction, held_seed)
    assert len(held) == round(fraction * len(records)) and held == sorted(set(held))
    drawn = load_texts({**spec, "n": 2000, "seed": 1})
    assert drawn.ids and not set(drawn.ids) & {str(i) for i in held}
    assert set(drawn.ids) == {str(i) for i in range(len(records)) if i not in held}  # 2000 draws see all
    counts = evaluate.write_bpb_tasks({"all": evaluate.heldout_spec(spec, "test")}, tmp_path / "bpb", seed=0)
    assert counts == {"bpb_all": len(held)}
    assert Counter(read_texts(tmp_path / "bpb" / "bpb_all.jsonl")) == Counter(rendered([records[i] for i in held]))
    first = load_texts({**spec, "n": 10, "seed": 2})
    assert list(first) == list(load_texts({**spec, "n": 30, "seed": 2}))[:10]  # draws stay prefix-stable


def test_write_bpb_tasks_of_several_data_sets_reads_each_ones_heldout_split(tmp_path, notes):
    toy = {"source": "synthetic", "task": "facts", "split": "train", "n_train": 6, "n_test": 4, "data_seed": 2,
           "n": 2}
    held = {label: evaluate.heldout_spec(spec, "test") for label, spec in {"notes": notes, "toy": toy}.items()}
    counts = evaluate.write_bpb_tasks(held, tmp_path)
    assert counts == {"bpb_notes": len(RECORDS), "bpb_toy": 4}
    test = synthetic.generate("facts", n_train=6, n_test=4, seed=2)["test"]
    assert Counter(read_texts(tmp_path / "bpb_toy.jsonl")) == Counter(synthetic.training_text("facts", r)
                                                                     for r in test)
    with pytest.raises(ValueError, match="held-out split 'train'"):
        evaluate.heldout_spec(toy, "train")


# --- lm-eval's bits per byte against the definition -------------------------------------------------


def nll(model, ids: list[int]) -> float:
    """-sum_i log p(ids[i] | ids[:i]) over i >= 1, natural log."""
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].double()
    logp = torch.log_softmax(logits, dim=-1)
    return -float(sum(logp[i - 1, ids[i]] for i in range(1, len(ids))))


def bits_per_byte(model, tokenizer, texts: list[str], prefix: int | None, skip_first: bool = False) -> float:
    """The definition: every token of each text scored given the previous ones, the first given
    `prefix` (lm-eval's prefix token); summed over texts and divided by ln 2 x their UTF-8 bytes."""
    total = 0.0
    for text in texts:
        tokens = tokenizer(text, add_special_tokens=False)["input_ids"]
        total += nll(model, tokens if skip_first else [prefix, *tokens])
    return total / (math.log(2) * sum(len(t.encode("utf-8")) for t in texts))


@pytest.fixture(scope="module")
def sharp(tokenizer):
    """A tiny llama whose predictions depend strongly on the context: a random one predicts nearly
    uniformly, and its bits per byte would hardly tell which token the first is conditioned on."""
    model = tiny_llama(len(tokenizer), seed=5)
    with torch.no_grad():
        model.lm_head.weight.mul_(10)
        model.model.embed_tokens.weight[[tokenizer.bos_token_id, tokenizer.eos_token_id]] *= 10
    return model


def test_lm_evals_bits_per_byte_of_a_written_task_is_the_definitions(tmp_path, notes, sharp, tokenizer):
    counts = evaluate.write_bpb_tasks({"notes": evaluate.heldout_spec(notes, "test")}, tmp_path, seed=1)
    texts = read_texts(tmp_path / "bpb_notes.jsonl")
    assert max(len(tokenizer(t)["input_ids"]) for t in texts) < sharp.config.max_position_embeddings - 1
    # lm-eval conditions a text's first token on the tokenizer's BOS (its EOS when there is no BOS)
    assert tokenizer.bos_token_id is not None and tokenizer.bos_token_id != tokenizer.eos_token_id

    results = evaluate.run_lm_eval(sharp, tokenizer, ["bpb_notes"], include_path=tmp_path, batch_size=3)
    table = evaluate.results_frame(results)
    row = table[table.metric == "bits_per_byte,none"]
    assert len(row) == 1 and row.task.item() == "bpb_notes" and row.n.item() == counts["bpb_notes"]
    got = row.value.item()
    # the per-text records: each text's log-likelihood and bytes, whose corpus ratio is the value
    items = evaluate.samples_frame(results).set_index("doc_id").sort_index()
    assert (items["metric"] == "bits_per_byte,none").all() and items["score"].isna().all()
    assert list(items["weight"]) == [len(t.encode("utf-8")) for t in texts]
    assert -items["loglikelihood"].sum() / (math.log(2) * items["weight"].sum()) == pytest.approx(got, rel=1e-12)

    expected = bits_per_byte(sharp, tokenizer, texts, tokenizer.bos_token_id)
    assert got == pytest.approx(expected, rel=1e-4)
    # the reference tells the alternatives apart: first token given EOS, first token not scored, and
    # dividing by characters instead of bytes all miss by ten times the tolerance or more
    for wrong in (bits_per_byte(sharp, tokenizer, texts, tokenizer.eos_token_id),
                  bits_per_byte(sharp, tokenizer, texts, None, skip_first=True),
                  expected * sum(len(t.encode("utf-8")) for t in texts) / sum(len(t) for t in texts)):
        assert abs(wrong - got) > 1e-3 * got, (wrong, got)
