"""GPU acceptance run: a real-shaped Llama 3.2 1B (random weights) through collection and generation.

One command, offline, meant to finish in under 4 minutes on one GPU. The model is built from
Llama-3.2-1B-Instruct's config (``tests/fixtures/llama-3.2-1b-config.json``) with random weights
in bf16, as the checkpoint stores them; the tokenizer is a word-level one built in-process with
the model's whole vocabulary (128,256 ids, Llama 3's special-token ids), since Llama 3's own is not
available offline. Texts are random token ids, seeded. It measures, and prints as one table:

* ``forward`` / ``collect``, in bf16 and in fp32 (the same weights: the bf16 model cast in place,
  an exact upcast): a plain forward over the same right-padded, length-sorted batches against
  ``mathneuro.collect_statistics`` (timed interleaved, median of ``--repeats``), tokens/s, and
  collect/plain ("vs plain"): is collection as cheap as a forward pass on a GPU?
* ``select``: ``mathneuro.top_k`` at ``--fraction`` per matrix on each dtype's statistics, and
  the Jaccard index of the two masks: does running in bf16 pick the same weights as fp32? The
  check fails below ``--jaccard-floor``.
* ``batch search`` / ``generate``: a gsm8k_cot-shaped workload (prompts of 800-1,000 tokens, the
  length of GSM8K's 8-shot chain-of-thought prompt; greedy, gsm8k_cot's stop strings, a budget of
  ``--max-gen-toks``) through ``mathneuro.evaluate.fitted_lm`` with batch size ``auto``: the
  batch size lm-eval's search chose, how long the search took, items/s and generated tokens/s.
  On the CPU ``auto`` resolves to 64 without a search (``mathneuro.evaluate.resolve_batch_size``).
* peak GPU memory of every phase (``torch.cuda.max_memory_allocated``, reset before each; the
  resident model included); "-" on the CPU.

``--cpu --tiny`` runs the same code on the CPU with the config shrunk (2 blocks, hidden 64) and
small sizes, in seconds: the tests run it (tests/test_gpu_check.py) so the script cannot rot.
Exit status 1 if a check fails (Jaccard under the floor, no generated tokens, no batch size,
a non-positive time, over ``--time-limit``); 2 if no GPU is visible without ``--cpu``.

Run from the repository root:  .venv/bin/python benchmarks/gpu_check.py  [--cpu --tiny] [--json PATH]
"""

from __future__ import annotations

import time

START = time.perf_counter()  # the time limit counts the imports too

import argparse  # noqa: E402
import contextlib  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable, Iterator, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "tests" / "fixtures" / "llama-3.2-1b-config.json"
JACCARD_FLOOR = 0.9  # bf16 vs fp32 top-5% masks; measured on the CPU (benchmarks/README.md): 0.9997 tiny, 0.995 1B shape
TIME_LIMIT_S = 240.0
GSM8K_COT_UNTIL = ["Q:", "</s>", "<|im_end|>"]  # lm-eval's gsm8k_cot generation_kwargs
# Llama 3's special tokens, by offset from <|begin_of_text|> (the first id after the 128,000 BPE ids)
SPECIALS = {0: "<|begin_of_text|>", 1: "<|end_of_text|>", 4: "<|finetune_right_pad_id|>", 8: "<|eom_id|>",
            9: "<|eot_id|>"}
TINY = {"hidden_size": 64, "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 1024}


@dataclasses.dataclass(frozen=True)
class Sizes:
    """How much work each phase does."""

    samples: int  # collection texts
    length: int  # collection tokens per text at most (lengths drawn in [length/2, length])
    batch_size: int  # collection batch size
    items: int  # generation requests
    prompt: tuple[int, int]  # generation prompt tokens, drawn in [low, high]
    max_gen_toks: int  # generation budget
    repeats: int  # interleaved timed repeats of forward / collect


FULL_SIZES = Sizes(samples=64, length=512, batch_size=8, items=32, prompt=(800, 1000), max_gen_toks=256, repeats=3)
TINY_SIZES = Sizes(samples=16, length=64, batch_size=8, items=8, prompt=(48, 96), max_gen_toks=32, repeats=3)


# --------------------------------------------------------------------------- model and inputs


def llama_config(tiny: bool):
    """Llama 3.2 1B's config from the fixture; ``tiny``: shrunk (``TINY``), special ids moved along
    with the vocabulary so that they keep their offsets from its end."""
    from transformers import AutoConfig

    fields = json.loads(CONFIG.read_text())
    if tiny:
        shift = fields["vocab_size"] - TINY["vocab_size"]
        fields |= TINY | {"bos_token_id": fields["bos_token_id"] - shift,
                          "eos_token_id": [i - shift for i in fields["eos_token_id"]]}
    return AutoConfig.for_model(fields.pop("model_type"), **fields)


def build_tokenizer(config):
    """A word-level tokenizer over the model's whole vocabulary: ids below ``bos_token_id`` are
    words ``t<id>`` (whitespace-separated, so random ids round-trip through text exactly), the
    rest Llama 3's special tokens; ``<|begin_of_text|>`` is prepended as Llama 3's tokenizer does."""
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    first = config.bos_token_id
    specials = [SPECIALS.get(i, f"<|reserved_special_token_{i}|>") for i in range(config.vocab_size - first)]
    vocab = {f"t{i}": i for i in range(first)} | {name: first + i for i, name in enumerate(specials)}
    core = Tokenizer(models.WordLevel(vocab, unk_token=specials[2]))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.add_special_tokens([AddedToken(name, special=True, normalized=False) for name in specials])
    core.post_processor = processors.TemplateProcessing(single=f"{specials[0]} $A",
                                                        special_tokens=[(specials[0], first)])
    return PreTrainedTokenizerFast(tokenizer_object=core, bos_token=specials[0], eos_token=SPECIALS[9],
                                   pad_token=SPECIALS[4], unk_token=specials[2],
                                   model_max_length=config.max_position_embeddings)


def build_model(config, device: str, seed: int):
    """Random weights in bf16 (the checkpoint's dtype), initialised on ``device``."""
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    with torch.device(device):  # initialised where it runs: 1.2B parameters take long on the CPU
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    return model.to(device).eval()


def random_texts(tokenizer, n: int, lengths: tuple[int, int], seed: int) -> list[str]:
    """``n`` texts of random word ids (no special tokens), each of a length drawn in ``lengths``."""
    rng = random.Random(seed)
    words = tokenizer.bos_token_id  # ids below it are words
    return [tokenizer.decode([rng.randrange(words) for _ in range(rng.randint(*lengths))]) for _ in range(n)]


# --------------------------------------------------------------------------- measuring


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def measured(fn: Callable[[], object], device: str) -> tuple[float, int | None, object]:
    """Run ``fn``: its wall seconds (the GPU's queue drained at both ends), peak GPU memory in
    bytes since the start (None on the CPU) and its result."""
    synchronize(device)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    result = fn()
    synchronize(device)
    seconds = time.perf_counter() - start
    return seconds, (torch.cuda.max_memory_allocated() if device == "cuda" else None), result


def batches(tokenizer, texts: Sequence[str], batch_size: int, max_length: int) -> Iterator[tuple]:
    """Right-padded (ids, mask) batches sorted by length, as ``collect_statistics`` forms them."""
    ids = [seq[:max_length] for seq in tokenizer(list(texts), add_special_tokens=True)["input_ids"]]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    for start in range(0, len(order), batch_size):
        chunk = [ids[i] for i in order[start : start + batch_size]]
        input_ids = torch.full((len(chunk), max(map(len, chunk))), tokenizer.pad_token_id, dtype=torch.long)
        attention = torch.zeros_like(input_ids)
        for row, seq in enumerate(chunk):
            input_ids[row, : len(seq)], attention[row, : len(seq)] = torch.tensor(seq), 1
        yield input_ids, attention


def plain_forward(model, tokenizer, texts: Sequence[str], sizes: Sizes) -> None:
    """The decoder body (no LM head, as collection runs it) over the same batches, no hooks."""
    device = model.get_input_embeddings().weight.device
    with torch.inference_mode():
        for input_ids, attention in batches(tokenizer, texts, sizes.batch_size, sizes.length):
            model.base_model(input_ids=input_ids.to(device), attention_mask=attention.to(device), use_cache=False)


def row(phase: str, dtype: str, device: str, seconds: float | None, **fields) -> dict:
    """One table row; absent fields are None (printed as "-")."""
    keys = ("tokens_per_s", "items_per_s", "params_per_s", "batch_size", "peak_bytes", "jaccard", "vs_plain", "note")
    return {"phase": phase, "dtype": dtype, "device": device, "seconds": seconds} | {k: fields.get(k) for k in keys}


# --------------------------------------------------------------------------- phases


def collection_phase(model, tokenizer, texts: Sequence[str], sizes: Sizes, device: str, dtype: str):
    """Plain forward and ``collect_statistics`` over the same texts, interleaved ``repeats`` times
    after an untimed warm-up of each: two rows (median seconds, highest peak) and the statistics."""
    import mathneuro

    collect = lambda: mathneuro.collect_statistics(  # noqa: E731
        model, tokenizer, texts, batch_size=sizes.batch_size, max_length=sizes.length)
    methods = {"forward": lambda: plain_forward(model, tokenizer, texts, sizes), "collect": collect}
    stats = collect()  # warm-up (kernels, allocator), and the statistics selection scores
    plain_forward(model, tokenizer, texts[: sizes.batch_size], sizes)
    times, peaks = {name: [] for name in methods}, {name: [] for name in methods}
    for repeat in range(sizes.repeats):
        for name in list(methods)[repeat % 2 :] + list(methods)[: repeat % 2]:
            seconds, peak, _ = measured(methods[name], device)
            times[name].append(seconds)
            peaks[name].append(peak)
    median = {name: statistics.median(ts) for name, ts in times.items()}
    rows = [row(name, dtype, device, median[name], tokens_per_s=stats.n_tokens / median[name],
                batch_size=sizes.batch_size, peak_bytes=None if device == "cpu" else max(peaks[name]),
                vs_plain=median[name] / median["forward"] if name == "collect" else None,
                note=f"{len(texts)} texts, {stats.n_tokens} tokens, median of {sizes.repeats}")
            for name in methods]
    return rows, stats


def selection(model, stats, fraction: float, device: str):
    """``top_k`` per matrix on one dtype's statistics: the mask, seconds, peak memory."""
    import mathneuro

    seconds, peak, mask = measured(lambda: mathneuro.top_k(model, stats, fraction, scope="matrix"), device)
    return mask, seconds, peak


def collect_both(model, tokenizer, texts, sizes: Sizes, device: str, fraction: float) -> list[dict]:
    """Collection and top-K in bf16, then in fp32 on the same weights (cast in place, exact), then
    back to bf16; the select row carries the Jaccard index of the two masks."""
    from mathneuro.masks import overlap

    rows, masks, select_s, select_peak = [], {}, 0.0, 0
    for dtype, torch_dtype in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        model.to(torch_dtype)
        phase_rows, stats = collection_phase(model, tokenizer, texts, sizes, device, dtype)
        masks[dtype], seconds, peak = selection(model, stats, fraction, device)
        rows += phase_rows
        select_s, select_peak = select_s + seconds, max(select_peak, peak or 0)
        del stats
    model.to(torch.bfloat16)
    agreement = overlap(masks["bf16"], masks["fp32"])
    rows.append(row(f"select top {fraction:.0%}", "bf16|fp32", device, select_s,
                    params_per_s=2 * masks["bf16"].numel() / select_s,
                    peak_bytes=None if device == "cpu" else select_peak, jaccard=agreement["jaccard"],
                    note=f"{agreement['size_a']:,} vs {agreement['size_b']:,} of {masks['bf16'].numel():,} "
                         f"weights, {agreement['intersection']:,} shared"))
    return rows


def gsm8k_cot_requests(tokenizer, sizes: Sizes, seed: int) -> list:
    """generate_until requests shaped like gsm8k_cot's: greedy, its stop strings, the budget."""
    from lm_eval.api.instance import Instance

    kwargs = {"until": list(GSM8K_COT_UNTIL), "do_sample": False, "max_gen_toks": sizes.max_gen_toks}
    prompts = random_texts(tokenizer, sizes.items, sizes.prompt, seed)
    return [Instance("generate_until", {}, (prompt, dict(kwargs)), i, ("gsm8k_cot_shaped", i, 1))
            for i, prompt in enumerate(prompts)]


def generation_phase(model, tokenizer, sizes: Sizes, device: str, seed: int, search: bool = False) -> list[dict]:
    """``fitted_lm`` with batch size ``auto`` on gsm8k_cot-shaped requests: the batch-size search
    (timed on its own) and the generation. On the CPU ``auto`` resolves to 64 without a search, as
    ``run_lm_eval`` does, unless ``search`` (lm-eval's search then finds 64: nothing runs out)."""
    from mathneuro.evaluate import fitted_lm, resolve_batch_size

    requests = gsm8k_cot_requests(tokenizer, sizes, seed)
    with contextlib.redirect_stdout(sys.stderr):  # lm-eval prints its search; stdout keeps the table
        lm = fitted_lm(model, tokenizer, "auto" if search else resolve_batch_size("auto", model))
        timing = {"seconds": None, "peak": None}  # of the search, where one runs
        detect = lm._detect_batch_size

        def timed_search(*args, **kwargs):
            timing["seconds"], timing["peak"], size = measured(lambda: detect(*args, **kwargs), device)
            if device == "cuda":
                torch.cuda.reset_peak_memory_stats()  # the generate row's peak: generation alone
            return size

        lm._detect_batch_size = timed_search  # an instance attribute: lm-eval calls self._detect_batch_size()
        seconds, peak, outputs = measured(lambda: lm.generate_until(requests, disable_tqdm=True), device)
    batch = lm.batch_sizes_used.get("generate_until")
    seconds -= timing["seconds"] or 0.0
    generated = sum(len(tokenizer.encode(text, add_special_tokens=False)) for text in outputs)
    searched = timing["seconds"] is not None
    longest = lm.longest_input("generate_until", requests)
    return [
        row("batch search", "bf16", device, timing["seconds"], batch_size=batch, peak_bytes=timing["peak"],
            note=f"auto at {longest} tokens" if searched else "none: auto resolves to 64 on the CPU"),
        row("generate", "bf16", device, seconds, items_per_s=len(requests) / seconds,
            tokens_per_s=generated / seconds, batch_size=batch, peak_bytes=peak,
            note=f"{len(requests)} items, prompts {sizes.prompt[0]}-{sizes.prompt[1]} tokens, "
                 f"{generated} tokens generated (budget {sizes.max_gen_toks} each)"),
    ]


# --------------------------------------------------------------------------- checks and output


def failures(rows: Sequence[dict], floor: float, time_limit: float) -> list[str]:
    """What the run got wrong: an empty list when every check passes."""
    by_phase = {r["phase"]: r for r in rows}
    select = next(r for r in rows if r["phase"].startswith("select"))
    timed = [r for r in rows if r["phase"] != "batch search"]  # the search: None where none ran
    problems = [f"{r['phase']} ({r['dtype']}): time {r['seconds']}" for r in timed
                if not (r["seconds"] and r["seconds"] > 0 and math.isfinite(r["seconds"]))]
    if not (floor <= select["jaccard"] <= 1):
        problems.append(f"Jaccard bf16 vs fp32 {select['jaccard']:.4f} is below the floor {floor}")
    if not by_phase["generate"]["tokens_per_s"]:
        problems.append("generation produced no tokens")
    if not (isinstance(by_phase["generate"]["batch_size"], int) and by_phase["generate"]["batch_size"] >= 1):
        problems.append(f"generation reported no batch size ({by_phase['generate']['batch_size']})")
    if by_phase["total"]["seconds"] > time_limit:
        problems.append(f"the run took {by_phase['total']['seconds']:.0f} s, over the limit of {time_limit:.0f} s")
    return problems


def _cell(value, kind: str) -> str:
    if value is None:
        return "-"
    formats = {"seconds": lambda v: f"{v:.3f}", "peak_bytes": lambda v: f"{v / 2**30:.2f} GiB",
               "jaccard": lambda v: f"{v:.4f}", "vs_plain": lambda v: f"{v:.2f}x"}
    return formats.get(kind, str)(value)


def _rate(r: dict) -> str:
    parts = [f"{r['items_per_s']:.2f} items/s" if r["items_per_s"] else None,
             f"{r['tokens_per_s']:,.0f} tok/s" if r["tokens_per_s"] else None,
             f"{r['params_per_s'] / 1e6:,.1f}M params/s" if r["params_per_s"] else None]
    return ", ".join(p for p in parts if p) or "-"


def table(rows: Sequence[dict]) -> str:
    """The rows as an aligned text table."""
    header = ["phase", "dtype", "device", "seconds", "rate", "batch", "peak mem", "Jaccard", "vs plain", "note"]
    cells = [[r["phase"], r["dtype"], r["device"], _cell(r["seconds"], "seconds"), _rate(r),
              _cell(r["batch_size"], "batch_size"), _cell(r["peak_bytes"], "peak_bytes"),
              _cell(r["jaccard"], "jaccard"), _cell(r["vs_plain"], "vs_plain"), r["note"] or ""] for r in rows]
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(header))]
    fmt = lambda line: "  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip()  # noqa: E731
    return "\n".join([fmt(header), fmt(["-" * w for w in widths]), *map(fmt, cells)])


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu", action="store_true", help="run on the CPU (default: the GPU; exit 2 if none)")
    parser.add_argument("--tiny", action="store_true", help="shrunk config (2 blocks, hidden 64) and small sizes")
    for name, help_text in (("samples", "collection texts"), ("length", "collection tokens per text at most"),
                            ("items", "generation requests"), ("max-gen-toks", "generation budget per request"),
                            ("repeats", "timed repeats of forward / collect")):
        parser.add_argument(f"--{name}", type=int, help=f"{help_text} (default: by mode, see FULL_SIZES / TINY_SIZES)")
    parser.add_argument("--prompt", type=int, nargs=2, metavar=("LOW", "HIGH"), help="generation prompt tokens")
    parser.add_argument("--fraction", type=float, default=0.05, help="top-K fraction per matrix (default 0.05)")
    parser.add_argument("--jaccard-floor", type=float, default=JACCARD_FLOOR,
                        help=f"fail if the bf16 and fp32 masks agree less (default {JACCARD_FLOOR})")
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT_S,
                        help=f"fail if the whole run takes longer, in seconds (default {TIME_LIMIT_S:.0f})")
    parser.add_argument("--cpu-search", action="store_true",
                        help="on the CPU, run lm-eval's batch-size search anyway (the GPU's code path; it finds 64)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads on the CPU (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the rows and checks to this JSON file")
    return parser.parse_args(argv)


def sizes_of(args: argparse.Namespace) -> Sizes:
    """The mode's sizes with the ones given on the command line."""
    given = {field: getattr(args, field) for field in Sizes.__dataclass_fields__ if getattr(args, field, None)}
    return dataclasses.replace(TINY_SIZES if args.tiny else FULL_SIZES, **given)


def run(args: argparse.Namespace, device: str) -> list[dict]:
    """Every phase; the rows of the table, the last one the whole run's wall time."""
    sizes = sizes_of(args)
    config = llama_config(args.tiny)
    tokenizer = build_tokenizer(config)
    model = build_model(config, device, args.seed)
    texts = random_texts(tokenizer, sizes.samples, (sizes.length // 2, sizes.length - 1), args.seed)
    rows = collect_both(model, tokenizer, texts, sizes, device, args.fraction)
    if device == "cuda":
        torch.cuda.empty_cache()
    rows += generation_phase(model, tokenizer, sizes, device, args.seed + 1, search=args.cpu_search)
    parameters = sum(p.numel() for p in model.parameters())
    rows.append(row("total", "-", device, time.perf_counter() - START,
                    note=f"{'tiny' if args.tiny else 'Llama 3.2 1B'} shape, {parameters / 1e6:,.1f}M parameters, "
                         f"random weights; imports included"))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from mathneuro.hub import go_offline
    from mathneuro.models import lean_transformers

    go_offline()  # nothing is downloaded: the config is a fixture, the tokenizer built here
    lean_transformers()
    if not args.cpu and not torch.cuda.is_available():
        print("no GPU visible: run with --cpu (add --tiny for the small CPU check)", file=sys.stderr)
        return 2
    device = "cpu" if args.cpu else "cuda"
    if device == "cpu":
        torch.set_num_threads(args.threads)
    rows = run(args, device)
    problems = failures(rows, args.jaccard_floor, args.time_limit)
    name = torch.cuda.get_device_name() if device == "cuda" else f"CPU, {torch.get_num_threads()} thread(s)"
    print(f"gpu_check on {name}, torch {torch.__version__}")
    print(table(rows))
    print("\n".join(f"FAIL {p}" for p in problems) or f"PASS (Jaccard floor {args.jaccard_floor}, "
                                                         f"time limit {args.time_limit:.0f} s)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"device": name, "rows": rows, "failures": problems}, indent=2))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
