"""The architecture matrix: every causal-LM family a researcher reaches for, as a tiny random model
of the installed transformers, checked the same way (#20):

* every matrix inside the decoder blocks is a target (computed from the model's parameters),
  each expert of a fused expert weight a TopK unit of its own, each depthwise convolution of a
  state-space or linear-attention mixer one too;
* the statistics equal a reference written from the definition, one sample at a time;
* pruning zeroes exactly the mask, scaling multiplies exactly it, the mask survives disk, and an
  edit's restore gives back the exact weights.
"""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from conftest import TEXTS, char_tokenizer
from torch import nn
from torch.overrides import TorchFunctionMode

import mathneuro
from mathneuro.collect import eager_experts
from mathneuro.targets import Target, expert_view, find_targets, stored_targets, unscored

SIZES = dict(
    vocab_size=128, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
    intermediate_size=96, max_position_embeddings=256, head_dim=16, num_local_experts=4, num_experts=4,
    n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=48,
    n_shared_experts=1, first_k_dense_replace=1, moe_num_experts=4, q_lora_rank=32, kv_lora_rank=16,
    qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16, n_group=1, topk_group=1, d_model=64, n_heads=4,
    n_layers=2, ffn_dim=96, word_embed_proj_dim=64, rotary_dim=8, partial_rotary_factor=0.5,
    pad_token_id=0, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False,
)
# model type -> what it stands for, and the sizes it needs beyond SIZES
ARCHITECTURES = {
    "llama": ("dense", {}), "mistral": ("dense", {}), "qwen2": ("dense", {}), "qwen3": ("dense", {}),
    "gemma": ("dense", {}), "gemma2": ("dense", {}), "gemma3_text": ("dense", {}), "phi3": ("dense, fused qkv", {}),
    "olmo": ("dense", {}), "olmo2": ("dense", {}), "olmo3": ("dense", {}), "granite": ("dense", {}),
    "starcoder2": ("dense", {}), "stablelm": ("dense", {}), "helium": ("dense", {}), "glm": ("dense", {}),
    "smollm3": ("dense", {}), "exaone4": ("dense", {"sliding_window_pattern": 2, "sliding_window": 4}),
    "persimmon": ("dense", {}), "biogpt": ("dense", {}), "xglm": ("dense", {}),
    "phi": ("parallel attention", {}), "gptj": ("parallel attention", {}), "falcon": ("parallel attention", {}),
    "gpt_neox": ("parallel attention", {}), "cohere": ("parallel attention", {}), "codegen": ("parallel attention", {}),
    "gpt2": ("GPT-2 Conv1D", {}), "gpt_bigcode": ("multi-query", {}), "bloom": ("ALiBi", {}), "mpt": ("ALiBi", {}),
    "gpt_neo": ("local attention", {"attention_types": [[["global", "local"], 1]], "num_layers": 2}),
    "opt": ("flattened MLP inputs", {}),
    "mixtral": ("MoE", {}), "qwen2_moe": ("MoE + shared expert", {}), "qwen3_moe": ("MoE", {}), "olmoe": ("MoE", {}),
    "granitemoe": ("MoE", {}), "phimoe": ("MoE", {}), "flex_olmo": ("MoE", {}), "ernie4_5_moe": ("MoE", {}),
    "glm4_moe": ("MoE", {}), "minimax": ("MoE, linear attention", {}), "hunyuan_v1_moe": ("MoE", {}),
    "gpt_oss": ("MoE, transposed interleaved experts with biases", {}),
    "jetmoe": ("MoE of attention and MLP", {}),
    "dbrx": ("MoE, experts stacked 2-D", {"attn_config": {"kv_n_heads": 2, "rope_theta": 10000.0, "clip_qkv": 8.0}}),
    "deepseek_v2": ("MoE, multi-head latent attention", {}),
    "deepseek_v3": ("MoE, multi-head latent attention", {"head_dim": 8}),
    # state-space and hybrid: a depthwise conv1d in every mixer, read by F.conv1d, never by the module
    "mamba": ("state space", {"state_size": 8, "time_step_rank": 8}),  # dt_proj.weight @ x: no module call
    "falcon_mamba": ("state space", {"state_size": 8, "time_step_rank": 8}),
    "mamba2": ("state space", {"num_heads": 8, "head_dim": 16, "state_size": 16, "n_groups": 1, "chunk_size": 8}),
    "falcon_h1": ("hybrid: Mamba 2 beside attention", {"mamba_d_ssm": 128, "mamba_n_heads": 8, "mamba_d_head": 16,
                                                       "mamba_d_state": 16, "mamba_chunk_size": 8}),
    "bamba": ("hybrid: Mamba 2 and attention", {"attn_layer_indices": [1], "mamba_n_heads": 8, "mamba_d_head": 16,
                                                "mamba_d_state": 16, "mamba_chunk_size": 8}),
    "zamba2": ("hybrid: Mamba 2 and one attention block shared by the layers",  # tied, as its checkpoints are
               {"layers_block_type": ["hybrid", "hybrid"], "hybrid_layer_ids": [0, 1], "mamba_d_state": 16,
                "n_mamba_heads": 8, "chunk_size": 8, "adapter_rank": 8, "tie_word_embeddings": True}),
    "lfm2": ("hybrid: short convolutions and attention", {"layer_types": ["conv", "full_attention"]}),
    "jamba": ("MoE, hybrid: Mamba and attention", {"attn_layer_period": 2, "attn_layer_offset": 1, "mamba_d_state": 8,
                                                   "expert_layer_period": 2, "expert_layer_offset": 1, "mamba_dt_rank": 8}),
    "granitemoehybrid": ("MoE, hybrid: Mamba 2 and attention", {"layer_types": ["mamba", "attention"], "mamba_n_heads": 8,
                                                                "mamba_d_head": 16, "mamba_d_state": 16,
                                                                "mamba_chunk_size": 8, "shared_intermediate_size": 48}),
    "nemotron_h": ("MoE, hybrid: Mamba 2, attention and MLP",
                   {"layers_block_type": ["mamba", "moe", "attention", "mlp"], "num_hidden_layers": 4,
                    "mamba_num_heads": 8, "mamba_head_dim": 16, "ssm_state_size": 16, "n_groups": 1, "chunk_size": 8,
                    "moe_shared_expert_intermediate_size": 48}),
    "qwen3_next": ("MoE, hybrid: gated DeltaNet and attention",
                   {"layer_types": ["linear_attention", "full_attention"], "linear_key_head_dim": 16,
                    "linear_value_head_dim": 16, "linear_num_key_heads": 2, "linear_num_value_heads": 4}),
}
MOE = {t for t, (kind, _) in ARCHITECTURES.items() if kind.startswith("MoE")}
STATE_SPACE = {t for t, (kind, _) in ARCHITECTURES.items() if "state space" in kind or "hybrid" in kind}


def build(model_type: str, seed: int = 0) -> nn.Module:
    from transformers import AutoConfig, AutoModelForCausalLM

    config_class = type(AutoConfig.for_model(model_type))
    known = set(config_class().to_dict()) | set(getattr(config_class, "attribute_map", {}))
    sizes = {**SIZES, **ARCHITECTURES[model_type][1]}
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(config_class(**{k: v for k, v in sizes.items() if k in known})).eval()


@pytest.fixture(scope="module")
def tokenizer():
    return char_tokenizer()  # ids < 128: every tiny model's vocabulary


def block_matrices(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter of 2+ dimensions inside a numbered block, biases and Mamba's state-space
    parameters (A_log: a decay per channel and state, no input features) aside: what must be scored."""
    return {n: p for n, p in model.named_parameters()
            if p.ndim >= 2 and not n.endswith("bias") and re.search(r"\.\d+\.", f".{n}.") and "embed" not in n
            and n.rsplit(".", 1)[-1] not in {"A_log", "D", "dt_bias"}}


def depthwise_weights(model: nn.Module) -> set[str]:
    """The weights of the depthwise convolutions: (channels, 1, kernel), one matrix each (not channels' worth)."""
    return {f"{n}.weight" for n, m in model.named_modules() if isinstance(m, nn.Conv1d) and m.groups == m.in_channels}


# The reference: one sample per forward pass, every input captured whole, norms in float64 ------


def _experts_inputs(module: nn.Module, args: tuple, kwargs: dict) -> dict[tuple[str, int], torch.Tensor]:
    """The rows each expert of a fused-experts module reads, per (parameter attribute, expert),
    from the module's call (tokens, routing), by transformers' own per-expert definition."""
    name = type(module).__name__
    if name == "JetMoeParallelExperts":  # forward(inputs, expert_size): rows grouped by expert
        inputs, sizes = args
        return {("weight", e): rows for e, rows in enumerate(inputs.split(sizes, dim=0))}
    if name == "DbrxExpertGLU":  # forward(x, w1, v1, w2) with one expert's slices
        x, w1, v1, w2 = args
        e = (w1.storage_offset() - module.w1.storage_offset()) // w1.numel()
        return {("w1", e): x, ("v1", e): x, ("w2", e): module.activation_fn(x @ w1.T) * (x @ v1.T)}
    hidden = args[0]
    index = args[1] if len(args) > 1 else next(v for k, v in kwargs.items() if "ind" in k)
    hidden = hidden.reshape(-1, hidden.shape[-1])
    found = {}
    for e in range(module.num_experts):
        x = hidden[(index == e).any(-1)]
        if name == "NemotronHExperts":  # no gate: up_proj, the activation, down_proj
            found[("up_proj", e)], found[("down_proj", e)] = x, module.act_fn(x @ module.up_proj[e].T)
            continue
        gate_up = module.gate_up_proj[e]
        y = x @ gate_up if module.is_transposed else x @ gate_up.T
        if module.has_bias:
            y = y + module.gate_up_proj_bias[e]
        found[("gate_up_proj", e)], found[("down_proj", e)] = x, module._apply_gate(y)
    return found


def _root(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor a view was taken of (a parameter's ``squeeze(1)``, ``.T``), or the tensor itself."""
    return tensor if tensor._base is None else tensor._base


class _DirectReads(TorchFunctionMode):
    """The reads no module call shows, as the mixers make them: ``F.conv1d(x, w)`` with ``w`` a
    view of a depthwise convolution's weight (x: (1, channels, pos)), and a linear module's weight
    multiplied outside that module's forward (Mamba's ``dt_proj.weight @ x``). ``record(name, x)``
    gets each input as (tokens, features)."""

    def __init__(self, convs: dict[int, Target], linears: dict[int, Target], inside: set[str], record):
        super().__init__()
        self.convs, self.linears, self.inside, self.record = convs, linears, inside, record

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        weight = args[1] if len(args) > 1 else kwargs.get("weight")
        if func is F.conv1d and id(_root(weight)) in self.convs:
            x = args[0]  # (1, channels, pos)
            self.record(self.convs[id(_root(weight))].name, x.transpose(-1, -2))
        elif func in (F.linear, torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__):
            for position, operand in enumerate(args[:2]):
                target = self.linears.get(id(_root(operand))) if isinstance(operand, torch.Tensor) else None
                if target is None or target.name in self.inside:
                    continue
                assert operand is target.parameter and position == 0 and func is not F.linear, \
                    f"{target.name} read as {func.__name__} operand {position}: the reference knows w @ y only"
                self.record(target.name, args[1].transpose(-1, -2))  # w @ y: y's rows are w's inputs
        return func(*args, **kwargs)


def reference_statistics(model: nn.Module, tokenizer, texts, targets: list[Target]) -> dict[str, torch.Tensor]:
    """Σ_samples ‖x_j‖₂ of every target from the definition: each sample alone, each input whole
    (all of a sample's reads of a matrix together: a block shared by several layers reads it in each)."""
    linears = {id(t.parameter): t for t in targets if not t.functional}
    by_module = {m: linears[id(m.weight)] for m in model.modules()  # every module applying the weight
                 if isinstance(getattr(m, "weight", None), torch.Tensor) and id(m.weight) in linears}
    convs = {id(t.parameter): t for t in targets if t.depthwise}
    routers = {t.module: t for t in targets if t.functional and t.expert is None and not t.depthwise}
    experts = {t.module for t in targets if t.expert is not None}
    owners = {t.module: t for t in targets if t.expert is not None}
    totals = {t.name: torch.zeros(t.in_features, dtype=torch.float64) for t in targets}
    norms = lambda x: x.detach().double().reshape(-1, x.shape[-1]).norm(dim=0)  # noqa: E731  L2 over tokens
    inside: set[str] = set()  # the linear targets whose module is running

    def record(name: str, x: torch.Tensor) -> None:
        sample[name] = sample.get(name, 0) + norms(x) ** 2

    def leave(module, args, out):
        inside.discard(by_module[module].name)

    def capture(module, args, kwargs):
        if module in by_module:
            inside.add(by_module[module].name)
        if module in by_module or module in routers:
            target = by_module.get(module) or routers[module]
            record(target.name, args[0])
        if module in experts:
            first = owners[module]
            for (attr, e), rows in _experts_inputs(module, args, kwargs).items():
                name = f"{first.param_name.rsplit('.', 1)[0]}.{attr}[{e}]"
                sample[name] = sample.get(name, 0) + norms(rows) ** 2 if len(rows) else sample.get(name, 0)

    handles = [m.register_forward_pre_hook(capture, with_kwargs=True)
               for m in {*by_module, *routers, *experts}]
    handles += [m.register_forward_hook(leave) for m in by_module]
    try:
        with torch.no_grad(), eager_experts(model), _DirectReads(convs, linears, inside, record):
            for text in texts:
                sample: dict[str, torch.Tensor] = {}
                model(tokenizer(text, return_tensors="pt")["input_ids"], use_cache=False)
                for name, sumsq in sample.items():
                    totals[name] += torch.as_tensor(sumsq, dtype=torch.float64).sqrt()
    finally:
        for h in handles:
            h.remove()
    return totals


# The matrix -------------------------------------------------------------------------------------


@pytest.mark.parametrize("model_type", sorted(ARCHITECTURES))
def test_every_block_matrix_is_scored_exactly_and_edits_are_exact(model_type, tokenizer, tmp_path, one_thread):
    model = build(model_type)
    targets = find_targets(model)
    matrices = block_matrices(model)
    assert {t.param_name for t in targets} == set(matrices) and unscored(model, targets) == {}
    convs = depthwise_weights(model)
    assert bool(convs) == (model_type in STATE_SPACE) and {t.param_name for t in targets if t.depthwise} == convs
    units = {n: (p.shape[0] if p.ndim == 3 and n not in convs else 1) for n, p in matrices.items()}
    for t in targets:
        if t.expert is not None:
            units[t.param_name] = t.experts
    assert len(targets) == sum(units.values())  # one target per matrix, per expert of a fused weight
    assert (model_type in MOE) == any(t.routed for t in targets)

    stats = mathneuro.collect_statistics(model, tokenizer, TEXTS, batch_size=5)
    reference = reference_statistics(model, tokenizer, TEXTS, targets)
    for t in targets:
        assert reference[t.name].sum() > 0, t.name  # every matrix is read: zeros would rank it by |W| alone
        torch.testing.assert_close(stats.stats[t.name].double(), reference[t.name], rtol=1e-4, atol=1e-5,
                                   msg=lambda m, t=t: f"{model_type} {t.name}: {m}")

    control = mathneuro.collect_statistics(model, tokenizer, TEXTS[::-1][:5], batch_size=3)
    top = mathneuro.top_k(model, stats, 0.05)
    for t in targets:  # the paper's per-matrix K, per expert too
        selected = top[t.param_name] if t.expert is None else expert_view(top[t.param_name], t.experts)[t.expert]
        assert int(selected.sum()) == int(t.weight.numel() * 0.05), t.name
    weights = {n: p.detach() for n, p in model.named_parameters()}  # the top_k job: the layout, the checkpoint's weights
    assert mathneuro.top_k(None, stats, 0.05, targets=stored_targets(stats.layout, weights.__getitem__)) == top
    mask = mathneuro.specific(top, mathneuro.top_k(model, control, 0.05))
    mask.save(tmp_path / "mask.safetensors")
    mask = mathneuro.ParameterMask.load(tmp_path / "mask.safetensors")  # the edits below apply the saved mask
    random = mathneuro.random_like(mask, seed=0)
    for name in mask:
        counts = [m.sum() for m in (mask[name], random[name])]
        if name in mask.experts:
            counts = [expert_view(m, mask.experts[name]).sum((1, 2)) for m in (mask[name], random[name])]
        assert torch.equal(*counts), name  # the random baseline: the same count in every matrix

    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    with mathneuro.apply_mask(model, mask, 0.0):
        for name, p in model.named_parameters():
            if name in mask:
                assert torch.all(p[mask[name]] == 0) and torch.equal(p[~mask[name]], before[name][~mask[name]]), name
            else:
                assert torch.equal(p, before[name]), name
    edit = mathneuro.apply_mask(model, mask, 1.1)
    for name, p in model.named_parameters():
        chosen = mask[name] if name in mask else torch.zeros_like(p, dtype=torch.bool)
        assert torch.equal(p[chosen], before[name][chosen] * 1.1) and torch.equal(p[~chosen], before[name][~chosen]), name
    edit.restore()
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())


def test_the_matrix_covers_what_the_issue_asks():
    kinds = [kind for kind, _ in ARCHITECTURES.values()]
    assert len(ARCHITECTURES) >= 25 and len(MOE) >= 3 and "opt" in ARCHITECTURES
    assert any("latent" in k for k in kinds) and any("parallel" in k for k in kinds) and "gpt2" in ARCHITECTURES
    # issue #40: the state-space and hybrid families, the MoE hybrids among them
    assert {"mamba", "mamba2", "falcon_mamba", "jamba", "falcon_h1", "bamba", "zamba2", "granitemoehybrid",
            "nemotron_h", "qwen3_next", "lfm2"} <= STATE_SPACE
    assert {"jamba", "granitemoehybrid", "nemotron_h", "qwen3_next"} <= MOE


# Experts as transformers 4 wrote them: one nn.Linear module per expert ---------------------------


class _Expert(nn.Module):
    def __init__(self, hidden: int, inner: int):
        super().__init__()
        self.w1, self.w3, self.w2 = nn.Linear(hidden, inner, bias=False), nn.Linear(hidden, inner, bias=False), nn.Linear(inner, hidden, bias=False)

    def forward(self, x):
        return self.w2(nn.functional.silu(self.w1(x)) * self.w3(x))


class _SparseMoe(nn.Module):
    """Mixtral's block of transformers 4: a router and a ModuleList of per-expert MLPs."""

    def __init__(self, hidden: int, inner: int, experts: int = 4, top: int = 2):
        super().__init__()
        self.gate, self.top = nn.Linear(hidden, experts, bias=False), top
        self.experts = nn.ModuleList(_Expert(hidden, inner) for _ in range(experts))

    def forward(self, hidden_states):
        flat = hidden_states.reshape(-1, hidden_states.shape[-1])
        weights, chosen = self.gate(flat).softmax(-1).topk(self.top, dim=-1)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            rows, slot = (chosen == e).nonzero(as_tuple=True)
            if len(rows):
                out.index_add_(0, rows, expert(flat[rows]) * weights[rows, slot, None])
        return out.view_as(hidden_states)


def test_per_expert_linear_modules_are_routed_targets_scored_per_sample(tokenizer, one_thread):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2)).eval()
    for layer in model.model.layers:
        layer.mlp = _SparseMoe(32, 24)
    targets = find_targets(model)
    assert {t.param_name for t in targets} == set(block_matrices(model))
    assert {t.name for t in targets if t.routed} == {n for n, m in model.named_modules()
                                                     if isinstance(m, nn.Linear) and ".experts." in n}
    stats = mathneuro.collect_statistics(model, tokenizer, TEXTS, batch_size=4)
    reference = reference_statistics(model, tokenizer, TEXTS, targets)
    for t in targets:
        torch.testing.assert_close(stats.stats[t.name].double(), reference[t.name], rtol=1e-4, atol=1e-5)


def test_a_block_matrix_nothing_can_read_fails_naming_it_unless_excluded(tokenizer):
    model = build("llama")
    model.model.layers[1].mlp.register_parameter("memory", nn.Parameter(torch.ones(4, 64, 2)))
    with pytest.raises(ValueError, match=r"cannot score: \['model\.layers\.1\.mlp\.memory \(4, 64, 2\)"):
        find_targets(model)
    targets = find_targets(model, exclude=[r"lm_head", r"embed", r"\.memory\b"])
    assert unscored(model, targets) == {"model.layers.1.mlp.memory": [4, 64, 2]}
    stats = mathneuro.collect_statistics(model, tokenizer, TEXTS[:2], targets=targets)
    assert "model.layers.1.mlp.memory" in stats.metadata["unscored"]


def test_convolutions_other_than_depthwise_and_state_space_names_outside_a_mixer_are_still_refused():
    """The rules are no wider than they say: a grouped convolution, a depthwise one padded with
    other than zeros (its input has positions that are no token) and an ``A_log`` in a module
    without a depthwise convolution are matrices MathNeuro cannot read."""
    model = build("llama")
    model.model.layers[0].mlp.conv = nn.Conv1d(64, 64, 3, groups=2)
    model.model.layers[0].self_attn.conv = nn.Conv1d(64, 64, 3, groups=64, padding=2, padding_mode="circular")
    model.model.layers[1].mlp.register_parameter("A_log", nn.Parameter(torch.zeros(96, 8)))
    with pytest.raises(ValueError, match="cannot score") as refused:
        find_targets(model)
    for unread in ("model.layers.0.mlp.conv.weight (64, 32, 3)", "model.layers.0.self_attn.conv.weight (64, 1, 3)",
                   "model.layers.1.mlp.A_log (96, 8)"):
        assert unread in str(refused.value)


def test_a_convolutions_taps_share_their_channels_statistic(tokenizer, one_thread):
    """S[c, 0, t] = |W[c, 0, t]| · stat[c]; Wanda's row scope takes K of each channel's taps."""
    model = build("mamba2")
    stats = mathneuro.collect_statistics(model, tokenizer, TEXTS[:4])
    conv = next(t for t in find_targets(model) if t.depthwise)
    weight, stat = conv.weight.detach(), stats.stats[conv.name]  # (channels, 1, kernel), (channels,)
    assert weight.shape == (160, 1, 4) and stat.shape == (160,)
    torch.testing.assert_close(conv.importance(stat), weight.abs() * stat[:, None, None])
    rows = mathneuro.top_k(model, stats, 0.5, scope="row")[conv.param_name]
    assert torch.equal(rows.sum(-1), torch.full((160, 1), 2))


def test_a_convolution_no_torch_call_shows_stops_the_collection_after_its_first_pass(tokenizer, monkeypatch):
    """Where a fused kernel (causal-conv1d's on a GPU) reads the convolution's weight, no F.conv1d
    call shows its input: the collection stops after one pass naming the weight, rather than
    scoring it from nothing after all of them."""
    from transformers.models.mamba2 import modeling_mamba2

    def unseen(hidden_states, weight, bias=None, activation=None, **kwargs):
        kernel = weight.shape[-1]  # weight: (channels, kernel); hidden_states: (batch, channels, pos)
        windows = F.pad(hidden_states, (kernel - 1, 0)).unfold(-1, kernel, 1)  # (batch, channels, pos, kernel)
        out = torch.einsum("bcpk,ck->bcp", windows, weight) + bias[:, None]
        return F.silu(out) if activation else out

    monkeypatch.setattr(modeling_mamba2, "causal_conv1d_fn", unseen)
    model = build("mamba2")
    passes = []
    with pytest.raises(RuntimeError, match=r"call read \['backbone\.layers\.0\.mixer\.conv1d\.weight'"):
        mathneuro.collect_statistics(model, tokenizer, TEXTS, batch_size=2,
                                     progress=lambda done, total: passes.append(done))
    assert passes == []


# How transformers' save_pretrained stores each MoE model's experts, against the parameters the
# model holds (fused: one 3-D weight per expert kind): "as the model" (the same names and shapes),
# "per expert" (one 2-D matrix per expert, as transformers 4 held them) or "renamed" (fused under
# other names). Only "as the model" can be read by name (mathneuro.models.stored_weights); for the
# others stored_weights raises LookupError and the top_k job loads the model instead.
CHECKPOINT_EXPERTS = {
    "dbrx": "as the model", "gpt_oss": "as the model", "jetmoe": "as the model", "granitemoe": "renamed",
    "granitemoehybrid": "renamed",
    **{t: "per expert" for t in ("deepseek_v2", "deepseek_v3", "ernie4_5_moe", "flex_olmo", "glm4_moe",
                                 "hunyuan_v1_moe", "minimax", "mixtral", "olmoe", "phimoe", "qwen2_moe", "qwen3_moe",
                                 "jamba", "nemotron_h", "qwen3_next")},
}


def checkpoint_experts(keys: set[str], names: set[str]) -> str:
    """How a checkpoint holding tensors ``keys`` stores a model with parameters ``names``."""
    if names <= keys:
        return "as the model"
    return "per expert" if any(re.search(r"\.experts\.\d+\.", k) for k in keys) else "renamed"


def test_the_checkpoint_table_covers_every_moe_model():
    assert set(CHECKPOINT_EXPERTS) == MOE
    assert set(CHECKPOINT_EXPERTS.values()) == {"as the model", "per expert", "renamed"}


@pytest.mark.parametrize("model_type", sorted(MOE))
def test_a_fused_expert_mask_survives_disk_and_selection_from_the_checkpoint(model_type, tokenizer, tmp_path,
                                                                             one_thread):
    """The mask selected from the weights as the top_k job reads them (workflow_scripts/top_k.py:
    from the checkpoint by name, or from the loaded model where stored_weights raises LookupError)
    equals the mask selected on the model."""
    from safetensors import safe_open

    from mathneuro.models import load_weights, stored_weights
    from mathneuro.targets import stored_targets

    model = build(model_type)
    stats = mathneuro.collect_statistics(model, tokenizer, TEXTS[:6])
    mask = mathneuro.top_k(model, stats, 0.05)
    mask.save(tmp_path / "mask.safetensors")
    loaded = mathneuro.ParameterMask.load(tmp_path / "mask.safetensors")
    assert loaded == mask and loaded.experts == mask.experts and mask.experts
    names = {n: p.detach() for n, p in model.named_parameters()}
    from_layout = mathneuro.top_k(None, stats, 0.05, targets=stored_targets(stats.layout, names.__getitem__))
    assert from_layout == mask

    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    keys = set()
    for file in (tmp_path / "model").glob("*.safetensors"):
        with safe_open(str(file), framework="pt") as handle:
            keys |= set(handle.keys())
    params = [i["param"] for i in stats.layout.values()]
    stored = checkpoint_experts(keys, set(params))
    assert stored == CHECKPOINT_EXPERTS[model_type]
    if stored == "as the model":
        with stored_weights(str(tmp_path / "model"), params) as read:
            assert mathneuro.top_k(None, stats, 0.05, targets=stored_targets(stats.layout, read)) == mask
    else:
        with pytest.raises(LookupError, match="the checkpoint has no tensor"):
            with stored_weights(str(tmp_path / "model"), params):
                pass
        weights = dict(load_weights(str(tmp_path / "model"))[0].named_parameters())
        read = lambda name: weights[name].detach()  # noqa: E731  the top_k job's fallback
        assert mathneuro.top_k(None, stats, 0.05, targets=stored_targets(stats.layout, read)) == mask


def test_lape_on_experts_is_a_clear_error(tokenizer):
    model = build("mixtral")
    stats = mathneuro.collect_statistics(model, tokenizer, TEXTS[:3])
    with pytest.raises(ValueError, match="routes tokens to experts"):
        mathneuro.lape_mask(model, {"math": stats, "other": stats}, "math")


def test_an_edited_moe_model_exports_and_reloads_with_its_edit(tokenizer, tmp_path):
    from transformers import AutoModelForCausalLM

    model = build("mixtral")
    mask = mathneuro.top_k(model, mathneuro.collect_statistics(model, tokenizer, TEXTS[:4]), 0.05)
    mathneuro.apply_mask(model, mask, 0.0)
    mathneuro.export_model(model, tokenizer, tmp_path / "edited")
    reloaded = dict(AutoModelForCausalLM.from_pretrained(tmp_path / "edited").named_parameters())
    for name, param in model.named_parameters():
        assert torch.equal(reloaded[name], param), name
    assert all(torch.all(reloaded[n][m] == 0) for n, m in mask.items())


# SNIP and fine-tuning on the families whose weights differ most: a dense one, GPT-2's Conv1D,
# OPT's flattened MLP inputs, an MoE with fused experts and a state-space model (3-D depthwise
# convolution weights).
BEYOND = ["llama", "gpt2", "opt", "qwen3_moe", "mamba"]


@pytest.mark.parametrize("model_type", BEYOND)
def test_snip_scores_every_target_and_set_fine_tuning_keeps_every_other_entry(model_type, tokenizer, one_thread):
    """SNIP's scores equal a reference taking one sample at a time (each expert its own slice of
    the fused weight), and training a set's entries leaves every other entry bit-identical."""
    from mathneuro.finetune import finetune
    from mathneuro.snip import snip_scores

    model = build(model_type)
    targets = find_targets(model)
    scores = snip_scores(model, tokenizer, TEXTS[:3], max_length=32, targets=targets)
    expected = {t.name: torch.zeros(t.weight.shape) for t in targets}
    for text in TEXTS[:3]:
        ids = tokenizer(text, return_tensors="pt")["input_ids"][:, :32]
        model.zero_grad(set_to_none=True)
        for p in model.parameters():
            p.requires_grad_(True)
        model(input_ids=ids, labels=ids).loss.backward()
        for t in targets:
            grad = t.parameter.grad if t.expert is None else expert_view(t.parameter.grad, t.experts)[t.expert]
            expected[t.name] += (t.weight.detach() * grad).abs()
    for p in model.parameters():
        p.requires_grad_(False)
    for t in targets:
        assert torch.allclose(scores.stats[t.name], expected[t.name], rtol=1e-4, atol=1e-7), t.name
    mask = mathneuro.top_k(model, scores, 0.1, targets=targets)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    finetune(model, tokenizer, TEXTS, mask, steps=2, batch_size=2, lr=0.01, warmup=0, weight_decay=0.1,
             max_length=32, log=lambda _: None)
    for name, param in model.named_parameters():
        chosen = mask[name] if name in mask.counts() else torch.zeros_like(param, dtype=torch.bool)
        assert torch.equal(param[~chosen], before[name][~chosen]), name
