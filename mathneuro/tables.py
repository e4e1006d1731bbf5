"""The paper's tables as tidy pandas frames: pruning, scaling, data efficiency, consistency (and
its split by layer, layer_overlap), layers, share.

Every table has one row per result with typed identifying columns (model, method, control, k,
k_fraction, edit, factor, n_samples, seed, ...) and, for each, a summary over repeats (seeds):
mean, standard deviation, min, max and the number of repeats.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pandas as pd

from mathneuro import provenance
from mathneuro.methods import NO_CONTROL, TOP_K
from mathneuro.provenance import VERSION_COLUMNS

if TYPE_CHECKING:  # masks pull in torch; the table jobs that do not need it start faster
    from mathneuro.masks import ParameterMask


_LAYER = re.compile(r"\.(\d+)\.")
_EXPERT = re.compile(r"\[\d+\]$")  # one expert's target of a fused weight: <parameter>[<expert>]
EVAL_MEASURES = ["value", "stderr", "base_value", "change", "relative_change"]
EVAL_COLUMNS = {  # column -> dtype of the pruning and scaling tables, in this order
    "model": "string", "skill": "string", "method": "string", "control": "string", "k": "string",
    "k_fraction": "float64", "control_k_fraction": "float64",
    "edit": "string", "factor": "float64", "n_samples": "Int64", "seed": "Int64", "suite": "string",
    "task": "string", "metric": "string", "n": "Int64", "value": "float64", "stderr": "float64",
    "apply_chat_template": "boolean", "fewshot_as_multiturn": "boolean", "system_instruction": "string",
    "batch_size": "Int64", "trained": "string",  # a fine-tuning edit's scope (set, all); NA for the others
    **dict.fromkeys(VERSION_COLUMNS, "string"),  # the versions that made the row (its evaluation's)
}
SAMPLE_COLUMNS = {  # column -> dtype of the samples table: each variant's per-item records (evaluate.samples_frame)
    "model": "string", "skill": "string", "method": "string", "control": "string", "k": "string",
    "k_fraction": "float64", "control_k_fraction": "float64", "edit": "string", "factor": "float64",
    "n_samples": "Int64", "seed": "Int64", "suite": "string", "task": "string", "doc_id": "Int64", "metric": "string",
    "score": "float64", "loglikelihood": "float64", "weight": "float64", "chosen": "Int64", "response": "string",
    "extracted": "string", "prompt": "string", "target": "string",
}


def parameter_location(name: str) -> tuple[int | None, str]:
    """(block index, module type) of a parameter name such as ``model.layers.3.mlp.up_proj.weight``;
    an expert's target of a fused weight (``model.layers.3.mlp.experts.gate_up_proj[5]``) sits where
    its parameter does (3, ``gate_up_proj``)."""
    name = _EXPERT.sub("", name)
    match = _LAYER.search(f".{name}.")
    parts = name.split(".")
    module = parts[-2] if parts[-1] in ("weight", "bias") and len(parts) > 1 else parts[-1]
    return (int(match.group(1)) if match else None), module


def mask_counts(mask: ParameterMask, *, model_parameters: int, **labels) -> pd.DataFrame:
    """One row per matrix: selected entries, matrix size, and where the matrix sits."""
    rows = []
    for name, selected in mask.counts().items():
        layer, module = parameter_location(name)
        rows.append({"parameter": name, "layer": layer, "module": module, "selected": selected,
                     "numel": mask[name].numel()})
    frame = pd.DataFrame(rows).astype({"layer": "Int64", "selected": "int64", "numel": "int64"})
    for key, value in labels.items():
        frame[key] = value
    frame["model_parameters"] = int(model_parameters)
    return frame


def name_top_k_set(counts: pd.DataFrame, *, skill: str, method: str) -> pd.DataFrame:
    """TopK sets' counts are labelled by data set (method TOP_K, control = the data set) since
    every study of a model shares them; the skill's set becomes ``method``'s (Wanda's), without a
    control. The rows of other data sets' TopK sets are dropped."""
    top_k = counts["method"] == TOP_K
    counts = counts[~top_k | (counts["control"] == skill)].copy()
    counts.loc[counts["method"] == TOP_K, ["method", "control"]] = [method, NO_CONTROL]
    return counts.reset_index(drop=True)


def pair_overlaps(masks: Mapping[int, ParameterMask], **labels) -> pd.DataFrame:
    """Overlap of every pair of independently identified sets (keys are the draws' seeds)."""
    from mathneuro.masks import overlap

    rows = []
    for seed_a, seed_b in itertools.combinations(sorted(masks), 2):
        stats = overlap(masks[seed_a], masks[seed_b])
        for metric in ("jaccard", "overlap_rate", "overlap_coefficient"):
            rows.append({**labels, "seed_a": seed_a, "seed_b": seed_b, "metric": metric,
                         "value": float(stats[metric]), "size_a": stats["size_a"], "size_b": stats["size_b"],
                         "intersection": stats["intersection"]})
    return pd.DataFrame(rows, columns=[*labels, "seed_a", "seed_b", "metric", "value", "size_a", "size_b",
                                       "intersection"])


OVERLAP_COUNTS = ["numel", "size_a", "size_b", "intersection", "union"]
OVERLAP_MEASURES = [*OVERLAP_COUNTS, "jaccard", "overlap_rate"]


def layer_overlap(a: ParameterMask, b: ParameterMask, **labels) -> pd.DataFrame:
    """Where two sets over the same matrices agree: one row per (layer, module type) with the
    ``labels`` as columns, the entries of those matrices (``numel``), each set's size there, their
    intersection and union, and :func:`mathneuro.masks.overlap`'s Jaccard and overlap rate of
    these counts (1.0 where neither set selects anything). A fused expert weight is one matrix,
    its experts summed, as in :func:`layer_table`; a matrix outside the blocks has layer NA. The
    counts add up to the whole masks': ``overlap(a, b)`` is the measures of the rows' sums."""
    from mathneuro.masks import overlap_measures

    a.check_shapes(b.shapes, what="the other mask")
    rows = []
    for name, mine in a.items():
        theirs = b[name].to(mine.device)
        rows.append((*parameter_location(name), mine.numel(), int(mine.count_nonzero()), int(theirs.count_nonzero()),
                     int((mine & theirs).count_nonzero()), int((mine | theirs).count_nonzero())))
    counts = pd.DataFrame(rows, columns=["layer", "module", *OVERLAP_COUNTS])
    counts = counts.astype({"layer": "Int64", "module": "string"} | dict.fromkeys(OVERLAP_COUNTS, "int64"))
    table = counts.groupby(["layer", "module"], dropna=False, as_index=False, sort=True)[OVERLAP_COUNTS].sum()
    measures = [overlap_measures(*row) for row in table[["size_a", "size_b", "intersection", "union"]].itertuples(
        index=False)]
    for measure in ("jaccard", "overlap_rate"):
        table[measure] = pd.Series([m[measure] for m in measures], index=table.index, dtype="float64")
    return table.assign(**labels)[[*labels, "layer", "module", *OVERLAP_MEASURES]]


def pair_layer_overlaps(masks: Mapping[int, ParameterMask], **labels) -> pd.DataFrame:
    """:func:`layer_overlap` of every pair of independently identified sets (keys are the draws'
    seeds, as in :func:`pair_overlaps`, whose pairs these rows split by layer and module type)."""
    frames = [layer_overlap(masks[seed_a], masks[seed_b], **labels, seed_a=seed_a, seed_b=seed_b)
              for seed_a, seed_b in itertools.combinations(sorted(masks), 2)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=[*labels, "seed_a", "seed_b", "layer", "module", *OVERLAP_MEASURES])


def with_baseline(evaluations: pd.DataFrame, base: pd.DataFrame) -> pd.DataFrame:
    """Add each result's unedited value (same model, suite, task, metric) and the change from it."""
    keys = ["model", "suite", "task", "metric"]
    reference = base[keys + ["value"]].rename(columns={"value": "base_value"})
    merged = evaluations.merge(reference, on=keys, how="left", validate="many_to_one")
    merged["change"] = merged["value"] - merged["base_value"]
    merged["relative_change"] = merged["change"] / merged["base_value"].where(merged["base_value"] != 0)
    return merged


MASK_KEYS = ["model", "method", "control", "k", "k_fraction", "control_k_fraction", "n_samples", "seed"]


def mask_keys(counts: pd.DataFrame) -> list[str]:
    """The columns that name one set in its count rows, with the versions of the job that counted
    it where the rows carry them (one set's rows share them)."""
    return MASK_KEYS + [c for c in VERSION_COLUMNS if c in counts.columns]


def layer_table(counts: pd.DataFrame) -> pd.DataFrame:
    """Selected parameters per (mask, layer, module type), and their share of the matrix and the mask."""
    counts = with_control_k(counts)
    keys = mask_keys(counts)
    grouped = counts.groupby(keys + ["layer", "module"], dropna=False, as_index=False)[["selected", "numel"]].sum()
    grouped["share_of_matrices"] = grouped["selected"] / grouped["numel"]
    total = grouped.groupby(keys, dropna=False)["selected"].transform("sum")
    grouped["share_of_selected"] = grouped["selected"] / total.where(total != 0)
    return grouped


def share_table(counts: pd.DataFrame) -> pd.DataFrame:
    """Selected parameters as a share of the scored matrices and of all the model's parameters."""
    counts = with_control_k(counts)
    keys = mask_keys(counts)
    table = counts.groupby(keys, dropna=False, as_index=False).agg(
        selected=("selected", "sum"), target_parameters=("numel", "sum"), model_parameters=("model_parameters", "first")
    )
    table["share_of_targets"] = table["selected"] / table["target_parameters"]
    table["share_of_model"] = table["selected"] / table["model_parameters"]
    return table


def summarize(table: pd.DataFrame, measures: Sequence[str], over: Sequence[str] = ("seed",),
              joined: Sequence[str] = ()) -> pd.DataFrame:
    """Mean, std, min, max of ``measures`` over the repeats in columns ``over``; one row per group.
    Columns ``joined`` do not split groups: a group's distinct values, sorted, joined with ", "
    (the versions that made its repeats: one, or several where they differ)."""
    joined = [c for c in joined if c in table.columns]
    keys = [c for c in table.columns if c not in set(measures) | set(over) | set(joined)]
    grouped = table.groupby(keys, dropna=False)
    summary = grouped[list(measures)].agg(["mean", "std", "min", "max"])
    summary.columns = [f"{measure}_{stat}" for measure, stat in summary.columns]
    summary["n_repeats"] = grouped.size()
    for column in joined:
        summary[column] = grouped[column].agg(lambda values: ", ".join(sorted(set(values.dropna()))) or pd.NA)
        summary[column] = summary[column].astype("string")
    return summary.reset_index()


def select(table: pd.DataFrame, allowed: Mapping[str, Sequence]) -> pd.DataFrame:
    """The rows whose value in every column of ``allowed`` is one of the allowed values."""
    keep = pd.Series(True, index=table.index)
    for column, values in allowed.items():
        keep &= table[column].isin(list(values))
    return table[keep].reset_index(drop=True)


def set_overlaps(masks: Mapping[str, ParameterMask], names: tuple[str, str] = ("skill_a", "skill_b"),
                 **labels) -> pd.DataFrame:
    """Overlap of every ordered pair of different sets (keys: their skills, or what ``names``
    calls them), the rate asymmetric: how much of the first's set the second's holds."""
    from mathneuro.masks import overlap

    first, second = names
    rows = []
    for a, b in itertools.permutations(masks, 2):
        stats = overlap(masks[a], masks[b])
        rows.append({**labels, first: a, second: b, "size_a": stats["size_a"], "size_b": stats["size_b"],
                     "intersection": stats["intersection"], "jaccard": float(stats["jaccard"]),
                     "overlap_rate": float(stats["overlap_rate"])})
    return pd.DataFrame(rows, columns=[*labels, first, second, "size_a", "size_b", "intersection",
                                       "jaccard", "overlap_rate"])


AGREEMENT_NAMES = ("method_a", "method_b")


SET_OVERLAP_MEASURES = ["size_a", "size_b", "intersection", "jaccard", "overlap_rate"]


LOCALIZATION_COUNTS = ["numel", "found", "truth", "hits"]
LOCALIZATION_MEASURES = ["precision", "recall", "jaccard", "chance"]
ALL_MODULES = "all"  # the module label of a localization's row over every matrix


def localization(found: ParameterMask, truth: ParameterMask, **labels) -> pd.DataFrame:
    """How well a found set recovers ``truth``, the set a skill was planted in (mathneuro.plant):
    per module type (``q_proj``, ``down_proj``, ...) and over every matrix (module ``all``), the
    entries there (``numel``), each set's size, the found entries that lie in the truth
    (``hits``), precision = hits / found, recall = hits / truth, Jaccard = hits / union, and
    ``chance`` = truth / numel, a random set's expected precision. The counts are
    :func:`layer_overlap`'s, summed over layers. A measure whose denominator is 0 is NaN (an empty
    found set has no precision). ``labels`` become columns."""
    counts = layer_overlap(found, truth).rename(columns={"size_a": "found", "size_b": "truth", "intersection": "hits"})
    table = counts.groupby("module", as_index=False, sort=True)[LOCALIZATION_COUNTS].sum()
    table = pd.concat([table, pd.DataFrame([{"module": ALL_MODULES, **counts[LOCALIZATION_COUNTS].sum()}])],
                      ignore_index=True).astype({"module": "string"} | dict.fromkeys(LOCALIZATION_COUNTS, "int64"))

    def ratio(numerator, denominator):
        return (numerator / denominator.where(denominator > 0)).astype("float64")

    table["precision"] = ratio(table["hits"], table["found"])
    table["recall"] = ratio(table["hits"], table["truth"])
    table["jaccard"] = ratio(table["hits"], table["found"] + table["truth"] - table["hits"])
    table["chance"] = ratio(table["truth"], table["numel"])
    return table.assign(**labels)[[*labels, "module", *LOCALIZATION_COUNTS, *LOCALIZATION_MEASURES]]


def with_control_k(frame: pd.DataFrame) -> pd.DataFrame:
    """``control_k_fraction``, the K of the controls' TopK sets a set was made against, beside
    ``k_fraction``: jobs record it only where it differs (identification.control_k), so elsewhere it
    is ``k_fraction`` (and missing where that is, as for the unedited model)."""
    if "k_fraction" not in frame:
        return frame
    frame = frame.copy()
    given = frame["control_k_fraction"] if "control_k_fraction" in frame else pd.Series(float("nan"), index=frame.index)
    frame["control_k_fraction"] = given.astype("float64").fillna(frame["k_fraction"].astype("float64"))
    columns = list(frame.columns)
    columns.remove("control_k_fraction")
    columns.insert(columns.index("k_fraction") + 1, "control_k_fraction")
    return frame[columns]


def labelled(frame: pd.DataFrame, columns: Mapping[str, str], skill: str | None) -> pd.DataFrame:
    """Evaluation rows (tables or per-item records) typed as ``columns``, with ``control_k_fraction``
    filled in (:func:`with_control_k`) and the edited variants' ``skill`` (the study's where the
    rows carry none: only the sub-skill study's evaluations are labelled)."""
    frame = with_control_k(frame).reindex(columns=list(columns)).astype(columns)
    edited = frame["method"] != "base"
    frame.loc[edited, "skill"] = frame.loc[edited, "skill"].fillna(skill)
    return frame


def edit_tables(table: pd.DataFrame, outcomes: Mapping, groups: Mapping) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An edit analysis's rows (one per repeat) and their summary over repeats, each with the
    paired statistics of mathneuro.evidence (the batch size, which may differ between repeats'
    jobs, is left out of the summary)."""
    from mathneuro.evidence import repeat_statistics, summary_statistics

    summary = summarize(table.drop(columns=["batch_size"]), EVAL_MEASURES, joined=VERSION_COLUMNS)
    return repeat_statistics(table, outcomes, groups), summary_statistics(summary, table, outcomes, groups)


def read_tables(paths: Sequence[str], versions: bool = False) -> pd.DataFrame:
    """The per-job tables at ``paths`` one after the other; an empty frame for none (an analysis
    that is off reads no files). ``versions``: each row also gets the versions its file's
    fingerprint names (:data:`mathneuro.provenance.VERSION_COLUMNS`)."""
    from mathneuro.intermediates import read

    def table(path: str) -> pd.DataFrame:
        frame = pd.read_parquet(path)
        return frame.assign(**provenance.versions(provenance.read_fingerprint(path))) if versions else frame

    return pd.concat([read(p, table) for p in paths], ignore_index=True) if paths else pd.DataFrame()


def build_tables(
    evaluations: pd.DataFrame,
    counts: pd.DataFrame,
    consistency: pd.DataFrame,
    layer_overlaps: pd.DataFrame,
    subskill_overlaps: pd.DataFrame | None = None,
    *,
    selections: Mapping[str, Mapping[str, Sequence]],
    samples: pd.DataFrame | None = None,
    groups: Mapping[tuple, Mapping[str, Sequence[str]]] | None = None,
    agreements: pd.DataFrame | None = None,
    localizations: pd.DataFrame | None = None,
    skill_tasks: Sequence[str] = (),
    skill: str | None = None,
) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """Every table, each as (per-repeat table, summary over repeats). ``selections`` names the
    edit analyses (pruning, scaling, data_efficiency, subskills) and, for each, the values per
    column of the evaluations it reads (see :func:`select`); their rows carry the paired
    statistics (mathneuro.evidence) from ``samples``, every evaluation's per-item records, with
    ``groups`` ((model, suite) -> lm-eval's ``group_subtasks``) naming a group's tasks.
    ``consistency`` and ``layer_overlaps`` are the rows of :func:`pair_overlaps` and
    :func:`pair_layer_overlaps`, summarized over seed pairs. Rows of ``skill_tasks`` (or their
    subtasks, ``minerva_math_algebra`` of ``minerva_math``) are marked ``skill_task``. Evaluations
    without a ``skill`` label are of the study's ``skill``'s sets; the sub-skill study's are
    labelled, and ``subskill_overlaps`` are its sets' :func:`set_overlaps`, summarized over seeds;
    ``agreements``, the overlaps of two methods' sets from the same draws (SNIP's and MathNeuro's),
    likewise; ``localizations``, how each set found on a planted model recovers its planted set
    (:func:`localization`), likewise."""
    from mathneuro.evidence import item_outcomes

    evaluations = labelled(evaluations, EVAL_COLUMNS, skill)
    base = evaluations[evaluations["method"] == "base"]
    edited = with_baseline(evaluations[evaluations["method"] != "base"], base)
    edited["skill_task"] = edited["task"].map(lambda t: any(t == s or t.startswith(s + "_") for s in skill_tasks))
    outcomes = item_outcomes(labelled(samples, SAMPLE_COLUMNS, skill)) if samples is not None else {}
    edits = {name: select(edited, allowed) for name, allowed in selections.items()}
    labels = {"model": "", "method": "", "control": "", "n_samples": 0, "k": "", "k_fraction": 0.0}
    if counts.empty:  # a study whose analyses are all off: tables without rows, never a crash
        counts = pd.DataFrame(columns=["parameter", "layer", "module", "selected", "numel", *labels, "seed",
                                       "model_parameters"])
    if consistency.empty:
        consistency = pair_overlaps({}, **labels)
    if layer_overlaps.empty:
        layer_overlaps = pair_layer_overlaps({}, **labels)
    counts = with_control_k(counts).drop_duplicates(
        subset=["model", "method", "control", "k", "control_k_fraction", "n_samples", "seed", "parameter"])
    consistency, layer_overlaps = with_control_k(consistency), with_control_k(layer_overlaps)
    if subskill_overlaps is None or subskill_overlaps.empty:
        subskill_overlaps = set_overlaps({}, model="", method="", n_samples=0, seed=0, k="", k_fraction=0.0)
    subskill_overlaps = with_control_k(subskill_overlaps)
    if agreements is None or agreements.empty:
        agreements = set_overlaps({}, AGREEMENT_NAMES, model="", control="", n_samples=0, seed=0, k="", k_fraction=0.0)
    agreements = with_control_k(agreements)
    if localizations is None or localizations.empty:
        localizations = pd.DataFrame(columns=["model", "method", "control", "n_samples", "seed", "k", "k_fraction",
                                              "module", *LOCALIZATION_COUNTS, *LOCALIZATION_MEASURES])
    localizations = with_control_k(localizations)
    layers, share = layer_table(counts), share_table(counts)

    def summary(table: pd.DataFrame, measures: Sequence[str], over: Sequence[str] = ("seed",)) -> pd.DataFrame:
        return summarize(table, measures, over, joined=VERSION_COLUMNS)  # rows name the job's versions

    pair = ("seed_a", "seed_b")
    return {
        **{name: edit_tables(table, outcomes, groups or {}) for name, table in edits.items()},
        "consistency": (consistency, summary(consistency, ["value", "size_a", "size_b", "intersection"], pair)),
        "layer_overlap": (layer_overlaps, summary(layer_overlaps, OVERLAP_MEASURES, pair)),
        "subskill_overlap": (subskill_overlaps, summary(subskill_overlaps, SET_OVERLAP_MEASURES)),
        "agreement": (agreements, summary(agreements, SET_OVERLAP_MEASURES)),
        "localization": (localizations, summary(localizations, [*LOCALIZATION_COUNTS, *LOCALIZATION_MEASURES])),
        "layers": (layers, summary(layers, ["selected", "numel", "share_of_matrices", "share_of_selected"])),
        "share": (share, summary(share, ["selected", "target_parameters", "model_parameters", "share_of_targets",
                                         "share_of_model"])),
    }


def samples_table(samples: pd.DataFrame) -> pd.DataFrame:
    """The per-document records of every evaluation, typed, one row per document and filter."""
    return samples.reindex(columns=list(SAMPLE_COLUMNS)).astype(SAMPLE_COLUMNS).reset_index(drop=True)
