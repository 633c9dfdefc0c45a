"""The macros that keep numbers out of the paper's prose (issue 15): each checked against an
independent computation on small fixed inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats as sps

from batch_size_families import ADJUSTED as ADJUSTED_FAMILIES
from bnstudy.base import stats
from bnstudy.paper import design
from bnstudy.studies.batch_size import paired
from bnstudy.studies.batch_size import summary as batch_size_summary
from bnstudy.studies.companions import macros as companions_macros
from bnstudy.studies.running_stats import shuffles as running_stats_shuffles

ROOT = Path(__file__).resolve().parents[2]


# --- design: the data set's shape --------------------------------------------------------------


def test_design_macros_give_the_digits_shape_and_classes():
    from sklearn.datasets import load_digits

    images, labels = load_digits().images, load_digits(return_X_y=True)[1]
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    m = design.design_macros(config, 898, 899)
    assert m["dataSide"] == str(images.shape[1]) == str(images.shape[2])
    assert m["dataFeatures"] == str(images.shape[1] * images.shape[2])
    assert m["dataClasses"] == str(np.unique(labels).size)


def test_a_learning_rate_decay_is_named_only_where_a_block_sets_one():
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    m = design.design_macros(config, 898, 899)
    assert "gridLrSchedule" not in m and "depLrSchedule" not in m  # the Methods print nothing more
    config["grid"]["lr_schedule"] = "linear"
    m = design.design_macros(config, 898, 899)
    assert m["gridLrSchedule"].startswith(", decayed linearly over the epochs") and "$(E-e)/E$" in m["gridLrSchedule"]
    assert "depLrSchedule" not in m
    config["dependence"]["lr_schedule"] = "constant"
    assert "depLrSchedule" not in design.design_macros(config, 898, 899)


def test_ghost_batch_norm_is_said_to_be_in_the_grid_only_where_it_is():
    """Section 8 says ghost batch norm is not a grid normaliser only where the config leaves it out."""
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert "ghostbatchnorm" not in config["normalisers"] and "ghostInGrid" not in design.design_macros(config, 898, 899)
    config["normalisers"] = [*config["normalisers"], "ghostbatchnorm"]
    assert design.design_macros(config, 898, 899)["ghostInGrid"] == "1"


def test_fine_tuning_rates_are_named_against_the_grids_rate_as_they_are():
    """Section 9 calls its rates a tenth of the grid's and the grid's own only where they are (the full
    Fashion config fine-tunes at 1e-4 and 1e-3 beside a grid rate of 3e-3)."""
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    m = design.design_macros(config, 898, 899)
    assert (
        m["tuneRateRoles"] == "a tenth of the grid's rate, as fine-tuning usually lowers it, and the grid's rate itself"
    )
    assert m["tuneRateTwoIsGrid"] == "1"
    config["grid"]["lr"], config["finetune"]["lrs"] = 3e-3, [1e-4, 1e-3]
    m = design.design_macros(config, 898, 899)
    assert m["tuneRateRoles"] == "the grid's rate divided by 30 and the grid's rate divided by 3"
    assert "tuneRateTwoIsGrid" not in m
    config["finetune"]["lrs"] = [1e-2]
    assert design.design_macros(config, 898, 899)["tuneRateRoles"] == "3.33 times the grid's rate"


def _cells(means: dict) -> dict:
    """``{(normaliser, b, mode): row}`` with only a ``mean``, as discussion_macros reads them."""
    from types import SimpleNamespace

    return {key: SimpleNamespace(mean=v) for key, v in means.items()}


def test_the_discussion_says_whether_the_grid_shows_group_norms_shape_as_it_does():
    from bnstudy.studies.batch_size.macros import discussion_macros

    inf = {("batchnorm", 2, "inference"): 0.80, ("batchnorm", 16, "inference"): 0.90}
    flat = {("groupnorm", 2, "inference"): 0.88, ("groupnorm", 16, "inference"): 0.89}
    m = discussion_macros(_cells(inf | flat), [2, 16])
    assert m["groupShapeSentence"].startswith("We see the same shape on a far smaller problem")
    assert "lowest at batch 2, and group normalisation's mean accuracy varies by 1.0 points" in m["groupShapeSentence"]
    assert m["groupShapeSentence"].endswith("batch normalisation's by 10.0)")
    rising = {("batchnorm", 2, "inference"): 0.55, ("batchnorm", 16, "inference"): 0.50}
    m = discussion_macros(_cells(rising | flat), [2, 16])  # the tiny Fashion grid's: best at the smallest
    assert m["groupShapeSentence"].startswith("Our grid, a far smaller problem, does not show that shape")
    assert m["groupShapeSentence"].endswith("is lowest at batch 16, not at the smallest, 2)")
    steep = {("groupnorm", 2, "inference"): 0.70, ("groupnorm", 16, "inference"): 0.90}
    m = discussion_macros(_cells(inf | steep), [2, 16])
    assert "does not show" in m["groupShapeSentence"] and "varies by 20.0 points" in m["groupShapeSentence"]
    assert "groupShapeSentence" not in discussion_macros(_cells(inf), [2, 16])  # no group norm in the grid


def test_the_discussion_counts_the_batch_sizes_where_training_mode_scores_below_inference_mode():
    from bnstudy.studies.batch_size.macros import discussion_macros

    inf = {("batchnorm", 2, "inference"): 0.80, ("batchnorm", 16, "inference"): 0.90}
    below = {("batchnorm", 2, "training"): 0.70, ("batchnorm", 16, "training"): 0.89}
    assert discussion_macros(_cells(inf | below), [2, 16])["trainModeLossClause"].startswith(
        "scores below inference mode at every one of the grid's 2 batch sizes"
    )
    mixed = {("batchnorm", 2, "training"): 0.70, ("batchnorm", 16, "training"): 0.91}
    assert discussion_macros(_cells(inf | mixed), [2, 16])["trainModeLossClause"].startswith(
        "scores below inference mode at 1 of the grid's 2 batch sizes"
    )


# --- study 2: paired signs, least gain, published gains in standard errors ---------------------

N_ROWS = 20
# correct rows out of N_ROWS per (normaliser, batch size) and seed 0, 1, 2
CORRECT = {
    ("none", 2): (19, 18, 19),
    ("batchnorm", 2): (12, 13, 11),
    ("batchrenorm", 2): (16, 17, 16),
    ("none", 4): (18, 19, 18),
    ("batchnorm", 4): (19, 19, 18),
    ("batchrenorm", 4): (17, 18, 16),
}
PUBLISHED = {
    "seeds": 3,
    "none": {2: 0.90, 4: 0.90},
    "batchnorm": {2: 0.70, 4: 0.95},
    "batchnorm_training_mode": {2: 0.5},
}


@pytest.fixture(scope="module")
def study2():
    rows, runs = [], []
    for (norm, b), counts in CORRECT.items():
        for seed, k in enumerate(counts):
            key = {"normaliser": norm, "batch_size": b, "seed": seed, "mode": "inference"}
            rows += [key | {"row": i, "correct": int(i < k)} for i in range(N_ROWS)]
            runs.append(key | {"accuracy": k / N_ROWS})
    runs = pd.DataFrame(runs).sort_values(batch_size_summary.KEYS, kind="stable").reset_index(drop=True)
    summary = stats.summarise_over_seeds(runs, ["normaliser", "batch_size", "mode"], "accuracy", 0.95)
    pairs = paired.per_seed(runs, pd.DataFrame(rows))
    pair_summary = paired.summarise(pairs, 0.95, ADJUSTED_FAMILIES)
    updates = pd.DataFrame(columns=["batch_size", "seed", "updates"])
    distances = pd.DataFrame(columns=batch_size_summary.DISTANCE_KEYS + ["mean_distance", "var_distance"])
    m = batch_size_summary.macros(
        runs, summary, updates, distances, pairs, pair_summary, PUBLISHED, 0.1, 0.95, ADJUSTED_FAMILIES
    )
    return m, pair_summary


def _acc(norm, b):
    return np.array(CORRECT[(norm, b)]) / N_ROWS


def _paired_ci(a, b, confidence=0.95):
    ci = sps.ttest_rel(a, b).confidence_interval(confidence)
    return ci.low, ci.high


ADJUSTED = 1 - 0.05 / 2  # Bonferroni over the two batch sizes of each comparison


def test_interval_signs_name_the_batch_sizes_whose_paired_interval_excludes_zero(study2):
    m, _ = study2
    lo2, hi2 = _paired_ci(_acc("batchnorm", 2), _acc("none", 2), ADJUSTED)
    lo4, hi4 = _paired_ci(_acc("batchnorm", 4), _acc("none", 4), ADJUSTED)
    assert hi2 < 0 and lo4 < 0 < hi4  # the inputs are built so: below zero at 2 only
    assert m["pairedBatchnormVsNoneBelowSizes"] == "at batch 2"
    assert m["pairedBatchnormVsNoneAboveSizes"] == "at no batch size"
    lo2, _ = _paired_ci(_acc("batchrenorm", 2), _acc("batchnorm", 2), ADJUSTED)
    _, hi4 = _paired_ci(_acc("batchrenorm", 4), _acc("batchnorm", 4), ADJUSTED)
    assert m["pairedBatchrenormVsBatchnormAboveSizes"] == ("at batch 2" if lo2 > 0 else "at no batch size")
    assert m["pairedBatchrenormVsBatchnormBelowSizes"] == ("at batch 4" if hi4 < 0 else "at no batch size")


def test_least_gain_is_the_batch_size_with_the_smallest_mean_paired_difference(study2):
    m, _ = study2
    d4 = _acc("batchrenorm", 4) - _acc("batchnorm", 4)  # (-2, -1, -2) rows of 20
    lo, hi = _paired_ci(_acc("batchrenorm", 4), _acc("batchnorm", 4))
    assert m["pairedBatchrenormVsBatchnormLeastSize"] == "4"
    assert m["pairedBatchrenormVsBatchnormLeastGain"] == f"{100 * d4.mean():+.2f}" == "-8.33"
    assert m["pairedBatchrenormVsBatchnormLeastCi"] == f"[{100 * lo:+.2f}, {100 * hi:+.2f}]"
    # McNemar per seed on 1 or 2 discordant rows never rejects at 0.05
    least = m["pairedBatchrenormVsBatchnormLeastBetter"], m["pairedBatchrenormVsBatchnormLeastWorse"]
    assert least == ("none", "none")
    assert m["pairedBatchnormVsNoneLeastSize"] == "2"


def test_gap_closed_by_batch_renormalisation_is_its_share_of_the_gap_to_no_normaliser(study2):
    m, _ = study2
    bn, none, renorm = (_acc(n, 2).mean() for n in ("batchnorm", "none", "batchrenorm"))
    share = (renorm - bn) / (none - bn)  # (16.33 - 12) / (18.67 - 12) = 0.65
    assert m["gapClosedBatchrenormMin"] == f"{100 * share:.0f}\\%" == "65\\%"
    assert m["gapClosedBatchrenormMax"] == "n/a"  # batch norm is ahead of none at batch 4: no gap to close


def test_published_gain_in_standard_errors_uses_each_cells_own_sd(study2):
    m, _ = study2
    # published gain at batch 4 only (0.95 - 0.90); standard error of two means of 3 seeds
    se = np.sqrt(np.var(_acc("batchnorm", 4), ddof=1) / 3 + np.var(_acc("none", 4), ddof=1) / 3)
    assert m["publishedGainInSeList"] == f"{0.05 / se:.1f} such standard errors at batch 4"


def test_gap_to_the_published_value_at_the_smallest_batch_in_standard_errors(study2):
    m, _ = study2
    ours = _acc("batchnorm", 2)
    gap = abs(ours.mean() - 0.70)
    se = np.std(ours, ddof=1) * np.sqrt(1 / 3 + 1 / 3)  # their 3 seeds, our 3 seeds, our sd
    assert m["pubGapBatchnormMinPoints"] == f"{100 * gap:.1f}"
    assert m["pubGapBatchnormMinInSe"] == f"{gap / se:.1f}"
    assert m["pubGapBatchnormMinInSd"] == f"{gap / np.std(ours, ddof=1):.1f}"


def test_remedy_sign_sentence_groups_remedies_alike_and_names_the_others_alone():
    def row(comparison, b, lo, hi):
        return {"comparison": comparison, "batch_size": b, "ci_low_adj": lo, "ci_high_adj": hi}

    table = pd.DataFrame(
        [
            row("cumulative_vs_ema", 2, 0.01, 0.02),
            row("cumulative_vs_ema", 8, -0.01, 0.01),
            row("exact_vs_ema", 8, -0.01, 0.01),
            row("exact_vs_ema", 2, 0.01, 0.03),
            row("precise_bn_vs_ema", 2, -0.01, 0.01),
            row("precise_bn_vs_ema", 8, -0.03, -0.01),
            row("precise_bn_vs_ema", 16, -0.03, -0.02),
        ]
    )
    assert batch_size_summary.remedy_sign_sentence(table) == (
        "the paired intervals of the cumulative average and the exact statistics lie wholly above zero at "
        "batch 2, and contain zero at the other batch size; "
        "the paired intervals of PreciseBN lie wholly below zero at batches 8 and 16, and contain zero at the "
        "other batch size"
    )
    assert batch_size_summary.remedy_sign_sentence(table.iloc[0:0]) == "n/a"


# --- study 1: macros named by the smallest and largest probe size ------------------------------


def _dep0():
    def random(b, flip, lo, hi):
        return {"design": "random", "batch_size": b, "flip_rate": flip, "flip_rate_ci_low": lo, "flip_rate_ci_high": hi}

    rows = [random(8, 0.05, 0.03, 0.07), random(2, 0.40, 0.35, 0.45), random(4, 0.2, 0.15, 0.25)]
    rows.append(
        {"design": "exact", "batch_size": 2, "flip_rate": 0.41, "flip_rate_ci_low": 0.41, "flip_rate_ci_high": 0.41}
    )
    return pd.DataFrame(rows)


def _over_seeds():
    rows = [
        ("batchnorm", 2, 2, 0.30),
        ("batchnorm", 16, 2, 0.42),
        ("batchnorm", 2, 8, 0.02),
        ("batchnorm", 16, 8, 0.01),
        ("batchrenorm", 2, 2, 0.05),
        ("batchrenorm", 16, 2, 0.01),
        ("batchnorm", 2, 4, 0.99),  # another design: ignored
    ]
    return pd.DataFrame(
        [
            {"measure": "flip_rate", "design": "random" if p < 0.9 else "own_class", "normaliser": n}
            | {"train_batch_size": t, "batch_size": b, "mean": p}
            for n, t, b, p in rows
        ]
    )


def test_end_macros_alias_the_per_size_macros_at_the_smallest_and_largest_probe_size():
    m = {"compFlipBTwo": "40.0\\%", "compFlipBEight": "5.0\\%", "compNetFlipRateCiBTwo": "[1\\%, 2\\%]"}
    m |= {"compKeepFlipBEight": "6.0\\%", "compAccBFour": "0.9"}
    out = companions_macros.end_macros(m, _dep0(), _over_seeds(), one_class_size=4)
    assert (out["compSizeMin"], out["compSizeMax"]) == ("2", "8")
    assert out["compFlipMin"] == "40.0\\%" and out["compFlipMax"] == "5.0\\%"
    assert out["compNetFlipRateCiMin"] == "[1\\%, 2\\%]"
    assert out["compKeepFlipMax"] == "6.0\\%" and "compKeepFlipMin" not in out
    assert "compAccMin" not in out and "compAccMax" not in out  # only at an end size
    assert out["compFlipCiMin"] == "[35.0\\%, 45.0\\%]" and out["compFlipCiMax"] == "[3.0\\%, 7.0\\%]"


def test_end_macros_list_sizes_and_flip_rates_in_the_same_order():
    out = companions_macros.end_macros({}, _dep0(), _over_seeds(), one_class_size=4)
    assert out["compSizeWords"] == "2, 4 and 8"
    assert out["compFlipList"] == "40.0\\%, 20.0\\% and 5.0\\%"
    assert out["compExactSize"] == "2"
    assert out["compRandomFlipOneClass"] == "20.0\\%"
    assert companions_macros.end_macros({}, _dep0(), _over_seeds(), 16)["compRandomFlipOneClass"] == "n/a"


def test_grid_flip_range_over_training_batch_sizes_at_the_end_probe_sizes():
    out = companions_macros.end_macros({}, _dep0(), _over_seeds(), one_class_size=4)
    # batch norm at b = 2: 30% (trained at 2) and 42% (at 16); at b = 8: 2% and 1%
    assert (out["compGridBatchnormLowestMin"], out["compGridBatchnormHighestMin"]) == ("30.0\\%", "42.0\\%")
    assert (out["compGridBatchnormLowestMax"], out["compGridBatchnormHighestMax"]) == ("1.0\\%", "2.0\\%")
    assert (out["compGridBatchrenormLowestMin"], out["compGridBatchrenormHighestMin"]) == ("1.0\\%", "5.0\\%")
    assert "compGridBatchrenormLowestMax" not in out  # no batch renorm probe at b = 8
    assert (out["compGridBatchnormRangeMin"], out["compGridBatchrenormRangeMin"]) == (
        "30.0\\%--42.0\\%",
        "1.0\\%--5.0\\%",
    )


def test_grid_flip_range_reads_as_one_value_or_none_when_its_ends_agree():
    assert companions_macros.flip_range(0.3, 0.42) == "30.0\\%--42.0\\%"
    assert companions_macros.flip_range(0.30001, 0.30002) == "30.0\\%"  # the ends print alike
    assert companions_macros.flip_range(0.0, 0.0) == "none"  # no probe flipped: not "0.0%--0.0%"
    assert companions_macros.flip_range(0.0, 0.0001) == "0.0\\%--0.01\\%"  # a nonzero end never prints as 0


# --- studies 3 and 5: every estimator at the smallest and largest batch -------------------------


def test_shuffle_macros_name_each_estimator_at_the_smallest_and_largest_batch():
    rows = []
    for est, errors in (("ema", (0.4, 0.2, 2.7)), ("bias_corrected", (0.41, 0.21, 0.02))):
        for b, e in zip((8, 16, 256), errors):
            rows.append(
                {"estimator": est, "batch_size": b, "updates": 512 // b, "metric": "running_error"}
                | {"mean": e, "ci_low": e - 0.01, "ci_high": e + 0.01, "shuffles": 20}
            )
    m = running_stats_shuffles.shuffle_macros(pd.DataFrame(rows), 0.95)
    assert m["rsRepBiasCorrectedRunningErrorMax"] == "0.0200"
    assert m["rsRepBiasCorrectedRunningErrorMaxCi"] == "[0.0100, 0.0300]"
    assert m["rsRepBiasCorrectedRunningErrorMin"] == "0.4100"
    assert m["rsRepEmaRunningErrorMax"] == m["rsRepRunningErrorMax"] == "2.7000"
    assert "rsRepEmaRunningErrorBest" not in m and m["rsRepBestBatch"] == "16"


def test_the_fashion_split_sentence_says_whether_the_whole_test_set_or_a_subset_is_used():
    tiny = yaml.safe_load((ROOT / "config" / "fashion-tiny.yaml").read_text())
    subset = design.design_macros(tiny, 3000, 2000)["dataSplitSentence"]
    opening = "keeps a stratified subset of 2{,}000 of its 10{,}000 official test images as the test set; "
    assert subset.startswith(opening)
    assert "all three drawn with a seed of their own (0)" in subset and "official test set" not in subset
    whole = dict(tiny, data={k: v for k, v in tiny["data"].items() if k != "test_size"})
    sentence = design.design_macros(whole, 3000, 10000)["dataSplitSentence"]
    assert sentence.startswith("keeps its official test set of 10{,}000 images; ")
    assert "both drawn with a seed of their own (0)" in sentence and "subset" not in sentence.split(";")[0]
