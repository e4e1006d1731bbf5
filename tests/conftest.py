"""Shared fixtures: tiny randomly initialised models and a character-level tokenizer, in-process."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

TEXTS = [
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May.",
    "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of babysitting.",
    "The mitochondria is the powerhouse of the cell.",
    "Betty is saving money for a new wallet which costs $100.",
    "A short one.",
    "James writes a 3-page letter to 2 different friends twice a week. How many pages a year?",
    "Albert is wondering how much pizza he can eat in one day. He buys 2 large pizzas and 2 small.",
    "Reading is a fine way to spend an afternoon by the river.",
    "x",
    "Mark has a garden with flowers. He planted plants of three different colors in it.",
    "Ken created a care package to send to his brother, who was away at boarding school.",
    "In the story, the fox hides under the old bridge until the rain stops.",
]


# The modules with the longest runs, longest first (the whole suite's --durations, 2 cores): under
# pytest-xdist's --dist loadscope each module is one unit, handed out in collection order
# (pyproject.toml: --no-loadscope-reorder; xdist's default order, most tests first, left the two
# longest runs, which have few tests, for last), so starting these first keeps both workers busy
# to the end, and the tiny run (built by test_workflow) is done before the modules that copy it.
LONGEST_FIRST = ["test_paper_offline", "test_workflow", "test_real_model", "test_shipped_toy", "test_planted",
                 "test_reruns", "test_config_checks", "test_docs", "test_resume"]


def pytest_collection_modifyitems(config, items):
    """The modules of LONGEST_FIRST first, in its order; the others after them as collected."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(Path(str(item.fspath)).stem, len(rank)))


def char_tokenizer() -> PreTrainedTokenizerFast:
    """Character-level fast tokenizer over printable ASCII, with <pad>=0 and <s>/</s>."""
    specials = ["<pad>", "<s>", "</s>", "<unk>"]
    vocab = {tok: i for i, tok in enumerate(specials + sorted(set(string.printable)))}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    return PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )


@pytest.fixture(scope="session", autouse=True)
def hub_cache(tmp_path_factory):
    """A Hugging Face hub cache holding (empty) every hub model and data set the shipped configs
    name, as `snakemake prefetch` would leave it: the offline paper configs' dry runs pass the
    workflow's cache check against it, and no test reads the machine's own cache."""
    import os

    from dag import fake_hub_cache

    repo = Path(__file__).resolve().parents[1]
    configs = sorted((repo / "configs").rglob("*.yaml"))
    folder = fake_hub_cache(tmp_path_factory.mktemp("hub_cache"), [c for c in configs if c.name != "paper.yaml"])
    before = os.environ.get("HF_HUB_CACHE")
    os.environ["HF_HUB_CACHE"] = str(folder)
    yield folder
    if before is None:
        os.environ.pop("HF_HUB_CACHE", None)
    else:
        os.environ["HF_HUB_CACHE"] = before


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models train and run faster on one thread than on two busy shared cores."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tokenizer() -> PreTrainedTokenizerFast:
    return char_tokenizer()


def tiny_llama(vocab_size: int, seed: int = 0) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, tie_word_embeddings=False,
    )
    return LlamaForCausalLM(config).eval()


def tiny_gpt2(vocab_size: int, seed: int = 0) -> GPT2LMHeadModel:
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=vocab_size, n_embd=32, n_layer=2, n_head=4, n_positions=256)
    return GPT2LMHeadModel(config).eval()


@pytest.fixture(params=["llama", "gpt2"])
def model(request, tokenizer):
    build = tiny_llama if request.param == "llama" else tiny_gpt2
    return build(len(tokenizer))


def shared_folder(tmp_path_factory) -> Path:
    """A temporary folder every pytest-xdist worker of this session sees (the session's own
    folder when pytest runs alone)."""
    import os

    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    """The tiny workflow (tests/configs/tiny.yaml) run for real once, for every test that reads a
    finished run (tests/test_workflow.py, tests/test_resume.py, tests/test_config_checks.py); tests copy it
    before changing it.
    Under pytest-xdist (`-n`), the first worker to ask runs it and the others wait for it."""
    from dag import snakemake
    from filelock import FileLock

    workdir = shared_folder(tmp_path_factory) / "tiny_run"
    finished = workdir.with_suffix(".finished")
    with FileLock(workdir.with_suffix(".lock")):
        if not finished.is_file():
            workdir.mkdir(exist_ok=True)
            snakemake(workdir, REPO / "tests" / "configs" / "tiny.yaml", "--cores", "2")
            finished.touch()
    return workdir
