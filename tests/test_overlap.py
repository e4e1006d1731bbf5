"""Overlap of two sets per layer and module type: its rows add up to the whole-model overlap."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from mathneuro.masks import ParameterMask, overlap, overlap_measures
from mathneuro.tables import layer_overlap, pair_layer_overlaps, pair_overlaps, parameter_location

SHAPES = {  # two blocks of attention and MLP matrices, a fused expert weight, and a matrix outside the blocks
    **{f"model.layers.{i}.self_attn.{m}.weight": (8, 12) for i in range(2) for m in ("q_proj", "v_proj")},
    **{f"model.layers.{i}.mlp.experts.gate_up_proj": (3, 10, 8) for i in range(2)},
    "lm_head.weight": (16, 8),
}
EXPERTS = {f"model.layers.{i}.mlp.experts.gate_up_proj": 3 for i in range(2)}


def random_mask(seed: int, share: float = 0.3) -> ParameterMask:
    generator = torch.Generator().manual_seed(seed)
    return ParameterMask({name: torch.rand(shape, generator=generator) < share for name, shape in SHAPES.items()},
                         experts=EXPERTS)


def part(mask: ParameterMask, names) -> ParameterMask:
    return ParameterMask({name: mask[name] for name in names})


@pytest.mark.parametrize("seed", range(5))
def test_the_rows_add_up_to_the_whole_model_overlap(seed):
    a, b = random_mask(seed), random_mask(100 + seed, share=0.1 + 0.1 * seed)
    rows = layer_overlap(a, b)
    whole = overlap(a, b)
    sums = rows[["size_a", "size_b", "intersection", "union"]].sum()
    assert sums.to_dict() == {key: whole[key] for key in sums.index}
    assert rows["numel"].sum() == a.numel()
    pooled = overlap_measures(*(int(sums[key]) for key in ("size_a", "size_b", "intersection", "union")))
    assert pooled["jaccard"] == pytest.approx(whole["jaccard"])
    assert pooled["overlap_rate"] == pytest.approx(whole["overlap_rate"])


def test_each_row_is_the_overlap_of_the_matrices_at_its_layer_and_module():
    a, b = random_mask(1), random_mask(2)
    rows = layer_overlap(a, b, model="m", method="mathneuro")
    where = {name: parameter_location(name) for name in SHAPES}
    expected = set(where.values())
    assert len(rows) == len(expected) and (rows["model"] == "m").all() and (rows["method"] == "mathneuro").all()
    assert list(rows.columns[:4]) == ["model", "method", "layer", "module"]
    for row in rows.itertuples():
        layer = None if pd.isna(row.layer) else int(row.layer)
        names = [name for name, location in where.items() if location == (layer, row.module)]
        stats = overlap(part(a, names), part(b, names))
        assert (row.size_a, row.size_b, row.intersection, row.union) == (
            stats["size_a"], stats["size_b"], stats["intersection"], stats["union"])
        assert (row.jaccard, row.overlap_rate) == pytest.approx((stats["jaccard"], stats["overlap_rate"]))
        assert row.numel == sum(a[name].numel() for name in names)
    assert rows["layer"].isna().sum() == 1  # lm_head, outside the blocks
    assert set(rows.loc[rows["module"] == "gate_up_proj", "layer"]) == {0, 1}  # the experts summed per layer


def test_where_neither_set_selects_anything_the_measures_are_those_of_two_empty_sets():
    a = ParameterMask({name: torch.zeros(shape, dtype=torch.bool) for name, shape in SHAPES.items()})
    rows = layer_overlap(a, a)
    empty = overlap(part(a, ["lm_head.weight"]), part(a, ["lm_head.weight"]))
    assert (rows["union"] == 0).all()
    assert (rows["jaccard"] == empty["jaccard"]).all() and (rows["overlap_rate"] == empty["overlap_rate"]).all()


def test_every_seed_pair_splits_its_consistency_rows():
    masks = {seed: random_mask(seed) for seed in (2, 0, 1)}
    labels = {"model": "m", "method": "mathneuro", "control": "c", "n_samples": 10}
    split, whole = pair_layer_overlaps(masks, **labels), pair_overlaps(masks, **labels)
    pairs = [(0, 1), (0, 2), (1, 2)]
    assert list(split[["seed_a", "seed_b"]].drop_duplicates().itertuples(index=False, name=None)) == pairs
    summed = split.groupby(["seed_a", "seed_b"])[["size_a", "size_b", "intersection", "union"]].sum()
    for (seed_a, seed_b), row in summed.iterrows():
        stats = overlap(masks[seed_a], masks[seed_b])
        assert row.to_dict() == {key: stats[key] for key in row.index}
        for metric in ("jaccard", "overlap_rate"):
            value = whole[(whole["seed_a"] == seed_a) & (whole["seed_b"] == seed_b) & (whole["metric"] == metric)]
            pooled = overlap_measures(*(int(row[key]) for key in ("size_a", "size_b", "intersection", "union")))
            assert pooled[metric] == pytest.approx(float(value["value"].iloc[0]))
    assert pair_layer_overlaps({0: masks[0]}, **labels).empty  # one draw: no pair


def test_masks_of_other_shapes_are_refused():
    a = random_mask(0)
    b = ParameterMask({name: a[name] for name in list(SHAPES)[:-1]})
    with pytest.raises(ValueError, match="only in|not in"):
        layer_overlap(a, b)


@pytest.mark.parametrize("name, location", [
    ("model.layers.3.mlp.up_proj.weight", (3, "up_proj")),
    ("model.layers.3.mlp.experts.gate_up_proj", (3, "gate_up_proj")),
    ("model.layers.3.mlp.experts.gate_up_proj[5]", (3, "gate_up_proj")),
    ("model.layers.12.block_sparse_moe.experts.5.w1.weight", (12, "w1")),
    ("transformer.h.0.attn.c_attn.weight", (0, "c_attn")),
    ("lm_head.weight", (None, "lm_head")),
])
def test_a_parameter_or_an_experts_target_is_placed_by_its_block_and_module(name, location):
    assert parameter_location(name) == location


def test_set_overlaps_compare_every_ordered_pair_of_sets():
    """Jaccard is symmetric, the overlap rate is the share of skill_a's set in skill_b's, and the
    counts are the masks' own."""
    import itertools

    from mathneuro.tables import set_overlaps

    generator = torch.Generator().manual_seed(5)
    masks = {name: ParameterMask({"w": torch.rand(20, 30, generator=generator) < share})
             for name, share in (("add", 0.1), ("sub", 0.2), ("mul", 0.05))}
    table = set_overlaps(masks, model="toy", k="5pct").set_index(["skill_a", "skill_b"])
    assert sorted(table.index) == sorted(itertools.permutations(masks, 2))
    for a, b in itertools.permutations(masks, 2):
        inter = int((masks[a]["w"] & masks[b]["w"]).sum())
        union = int((masks[a]["w"] | masks[b]["w"]).sum())
        row = table.loc[(a, b)]
        assert row["intersection"] == inter and row["size_a"] == masks[a].count()
        assert row["jaccard"] == pytest.approx(inter / union) == table.loc[(b, a), "jaccard"]
        assert row["overlap_rate"] == pytest.approx(inter / masks[a].count())
    assert (table["model"] == "toy").all()
