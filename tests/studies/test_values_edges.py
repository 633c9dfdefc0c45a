"""Edge cases of the summaries and the remedies, by value, on small inputs built here.

Each test reaches one boundary the larger value tests do not: a dependence network without the
every-companion design, more than two random probe sizes, paired intervals whose upper end is
exactly zero, published accuracies that tie, the float32 arithmetic of the exact statistics, and
the columns of a written CSV. Expected values are computed here (NumPy, f-strings written out).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import accumulation_families as af
from batch_size_families import ADJUSTED as ADJUSTED_FAMILIES
from bnstudy.base import io
from bnstudy.evaluation import recompute
from bnstudy.nets import model as mlp
from bnstudy.nets.model import NetSpec
from bnstudy.studies.accumulation import report as accumulation_report
from bnstudy.studies.batch_size import macros as batch_size_macros
from bnstudy.studies.companions import macros as companions_macros
from bnstudy.studies.running_stats import shuffles as running_stats_shuffles
from float32_by_hand import exact_by_hand


def pct(v):
    return f"{100 * v:.1f}\\%"


# ---- study 1: companions ---------------------------------------------------------------------


def _dep_row(design, b, flip, **extra):
    return {
        "design": design,
        "batch_size": b,
        "examples": 6,
        "seed": 3,
        "batches_per_example": 5,
        "flip_rate": flip,
        "flip_rate_ci_low": flip - 0.0625,
        "flip_rate_ci_high": flip + 0.0625,
        "train_mode_accuracy": 0.75,
        "train_mode_accuracy_ci_low": 0.625,
        "train_mode_accuracy_ci_high": 0.875,
        "ever_flipped": 0.5,
        "ever_flipped_ci_low": 0.25,
        "ever_flipped_ci_high": 0.75,
        "inference_accuracy": 0.875,
    } | extra


def _grid_flips(sizes):
    """Grid flip rates (mean over seeds) per normaliser, training batch and probe size, all distinct."""
    rows = []
    for k, norm in enumerate(("batchnorm", "batchrenorm")):
        for j, tb in enumerate((2, 16, 64)):
            for i, b in enumerate(sizes):
                mean = 0.5 - 0.125 * i + 0.03125 * ((j * 5 + k * 3) % 4) + 0.0078125 * k
                rows.append(
                    {"measure": "flip_rate", "design": "random", "normaliser": norm}
                    | {"train_batch_size": tb, "batch_size": b, "mean": mean}
                )
    # another measure and another design at the same cells: never read
    rows.append(
        {"measure": "ever_flipped", "design": "random", "normaliser": "batchnorm"}
        | {"train_batch_size": 2, "batch_size": sizes[-1], "mean": 0.99}
    )
    rows.append(
        {"measure": "flip_rate", "design": "exact", "normaliser": "batchnorm"}
        | {"train_batch_size": 2, "batch_size": sizes[-1], "mean": 0.001}
    )
    return pd.DataFrame(rows)


def _grid_expected(over_seeds, norm, b):
    cell = over_seeds[
        (over_seeds.measure == "flip_rate")
        & (over_seeds.design == "random")
        & (over_seeds.normaliser == norm)
        & (over_seeds.batch_size == b)
    ]
    return pct(float(cell["mean"].min())), pct(float(cell["mean"].max()))


def test_end_macros_without_the_exact_design_say_na_for_its_size():
    """A first network without the every-companion design: ``compExactSize`` is ``n/a`` (the
    whole dict written out); with it, the size of that design."""
    dep0 = pd.DataFrame(
        [
            _dep_row("random", 4, 0.25),
            _dep_row("random", 2, 0.5),
            _dep_row("own_class", 4, 0.75),
        ]
    )
    over_seeds = _grid_flips((2, 4))
    m = {"compFlipBTwo": "F2", "compFlipBFour": "F4", "compAccBFour": "A4", "compNetFlipRateCiBTwo": "N2"}
    got = companions_macros.end_macros(m, dep0, over_seeds, one_class_size=4)
    want = {
        "compSizeMin": "2",
        "compSizeMax": "4",
        "compSizeWords": "2 and 4",
        "compFlipList": "50.0\\% and 25.0\\%",
        "compFlipCiBTwo": "[43.8\\%, 56.2\\%]",
        "compFlipCiBFour": "[18.8\\%, 31.2\\%]",
        "compFlipMin": "F2",
        "compFlipCiMin": "[43.8\\%, 56.2\\%]",
        "compNetFlipRateCiMin": "N2",
        "compFlipMax": "F4",
        "compFlipCiMax": "[18.8\\%, 31.2\\%]",
        "compAccMax": "A4",
        "compExactSize": "n/a",
        "compRandomFlipOneClass": "25.0\\%",
    }
    for norm, word in (("batchnorm", "Batchnorm"), ("batchrenorm", "Batchrenorm")):
        for end, b in (("Min", 2), ("Max", 4)):
            low, high = _grid_expected(over_seeds, norm, b)
            want[f"compGrid{word}Lowest{end}"] = low
            want[f"compGrid{word}Highest{end}"] = high
            want[f"compGrid{word}Range{end}"] = low if low == high else f"{low}--{high}"
    assert got == want
    with_exact = pd.concat([dep0, pd.DataFrame([_dep_row("exact", 2, 0.4)])], ignore_index=True)
    again = companions_macros.end_macros(m, with_exact, over_seeds, one_class_size=16)
    assert again == want | {"compExactSize": "2", "compRandomFlipOneClass": "n/a"}


def test_grid_macros_are_at_the_smallest_and_the_largest_of_three_probe_sizes():
    """Three random probe sizes (2, 4, 8): the grid's lowest and highest flip rate over training
    batch sizes are quoted at 2 and at 8, never at the middle size 4."""
    sizes = (2, 4, 8)
    dep0 = pd.DataFrame(
        [_dep_row("random", b, 0.5 - 0.125 * i) for i, b in enumerate(sizes)]
        + [_dep_row("own_class", 4, 0.75), _dep_row("other_class", 4, 0.125)]
    )
    probes = pd.DataFrame(
        [
            {"network": net, "normaliser": norm, "train_batch_size": tb, "seed": s, "label": s % 2}
            | {"batches": 5, "flips": 0 if norm == "none" else 2}
            # one example probed: no crossed interval to set the published rate against
            | {"design": "random", "batch_size": 2, "example": 0}
            for net, norm, tb in (("grid", "batchnorm", 2), ("grid", "batchnorm", 16), ("grid", "none", 2))
            + (("dependence", "batchnorm", 16),)
            for s in (0, 1)
        ]
    )
    dep_networks = pd.DataFrame(
        [
            {"design": "exact", "batch_size": 2, "measure": "flip_rate", "seeds": 3}
            | {"mean": 0.5, "ci_low": 0.4, "ci_high": 0.6}
        ]
    )
    published = {"inference_accuracy": 0.9, "one_class_same_label_b16": 0.8, "flip_rate": {2: 0.5}}
    params = {
        "examples_per_class": 3,
        "batches_per_example": 5,
        "one_class_batch_size": 4,
        "resamples": 99,
        "confidence": 0.95,
    }
    over_seeds = _grid_flips(sizes)
    got = companions_macros.macros(probes, dep0, dep_networks, over_seeds, published, params)
    want = {"compGridNetworks": "6"}  # (batchnorm, 2), (batchnorm, 16), (none, 2); two seeds each
    for norm, word in (("batchnorm", "Batchnorm"), ("batchrenorm", "Batchrenorm")):
        for b, name in ((2, "BTwo"), (8, "BEight")):
            low, high = _grid_expected(over_seeds, norm, b)
            want[f"compGrid{word}Min{name}"] = low
            want[f"compGrid{word}Max{name}"] = high
    assert {k: v for k, v in got.items() if k.startswith("compGrid")} == want
    assert got["compPublishedComparison"] == "n/a" and got["compPublishedOutside"] == "at no size"
    # the largest size's spread differs from the middle one's: a mix-up would show
    assert _grid_expected(over_seeds, "batchnorm", 8) != _grid_expected(over_seeds, "batchnorm", 4)


# ---- the accumulation study: ghost minus accumulation ending at zero -------------------------


def test_accumulation_ghost_interval_ending_at_zero_is_not_resolved():
    """Ghost equals accumulation for every seed at micro-batch 2 in inference mode (interval
    [0, 0]), lies wholly below it at micro-batch 4 in training mode, straddles zero elsewhere:
    only the latter is resolved."""
    batch, micro, seeds = 8, (2, 4), (0, 1, 2)
    runs, grid = [], []
    for m in micro:
        for mode in ("inference", "recomputed", "training"):
            for s in seeds:
                acc = 0.7 + 0.01 * m + 0.02 * s + (0.05 if mode == "training" else 0.0)
                runs.append({"variant": "scaled", "micro_batch": m, "seed": s, "mode": mode, "accuracy": acc - 0.05})
                if (m, mode) == (2, "inference"):
                    ghost = acc
                elif (m, mode) == (4, "training"):
                    ghost = acc - 0.05 - 0.004 * s * s
                else:
                    ghost = acc + (0.01, -0.02, 0.005)[s]
                runs.append({"variant": "accumulate", "micro_batch": m, "seed": s, "mode": mode, "accuracy": acc})
                runs.append({"variant": "ghost", "micro_batch": m, "seed": s, "mode": mode, "accuracy": ghost})
    for b in (batch, *micro):
        for mode in ("inference", "recomputed", "training"):
            for s in seeds:
                grid.append(
                    {
                        "normaliser": "batchnorm",
                        "batch_size": b,
                        "seed": s,
                        "mode": mode,
                        "accuracy": 0.6 + 0.01 * b + 0.03 * s,
                    }
                )
    differences = pd.DataFrame(
        [
            {"micro_batch": m, "seed": s, "after": after, "parameters": 1e-6, "pre_norm_biases": 1e-7}
            | {"running": 1e-8, "scale": 2.0, "label_disagreement": 0.01}
            for m in micro
            for s in seeds
            for after in ("first_step", "run")
        ]
    )
    out = accumulation_report.report(
        pd.DataFrame(runs), pd.DataFrame(grid), differences, batch, list(micro), 0.9, 3, 64, 1e-3, af.section()
    )
    pair = out["paired"].set_index(["micro_batch", "comparison", "mode"])
    zero = pair.loc[(2, "ghost_vs_accumulate", "inference")]
    assert (zero.ci_low, zero.ci_high) == (0.0, 0.0)
    assert pair.loc[(4, "ghost_vs_accumulate", "training")].ci_high < 0
    assert out["macros"]["accumGhostResolved"] == "training mode at micro-batch 4"
    assert out["macros"]["accumGhostComparisons"] == "6"


# ---- study 2: a published gain of zero is no gain --------------------------------------------


def test_published_gain_sizes_leave_out_a_tie_between_batchnorm_and_none():
    """Published batch norm above none at batch 2 and equal to it at batch 4: only batch 2
    carries a published gain (the gain, the size list and both standard-error sentences)."""
    sizes, seeds = (2, 4), (0, 1, 2)
    runs = pd.DataFrame(
        [
            {"normaliser": n, "batch_size": b, "seed": s, "mode": "inference", "accuracy": 0.9}
            for n in ("none", "batchnorm")
            for b in sizes
            for s in seeds
        ]
    )
    sd = {("none", 2): 0.01, ("batchnorm", 2): 0.02, ("none", 4): 0.03, ("batchnorm", 4): 0.015}
    summary = pd.DataFrame(
        [
            {"normaliser": n, "batch_size": b, "mode": "inference", "mean": 0.9, "sd": sd[(n, b)]}
            | {"ci_low": 0.85, "ci_high": 0.95}
            for n in ("none", "batchnorm")
            for b in sizes
        ]
    )
    pair_cols = ["comparison", "batch_size", "gain", "ci_low", "ci_high", "ci_low_adj", "ci_high_adj", "family"]
    pair_cols += ["a_only", "b_only"]
    pair_summary = pd.DataFrame(
        {c: pd.Series(dtype=object if c == "comparison" else float) for c in pair_cols}
        | {"seeds_a_better": pd.Series(dtype=int), "seeds_b_better": pd.Series(dtype=int)}
    )
    distance = pd.DataFrame(columns=["batch_size", "statistics", "layer", "mean_distance", "var_distance"])
    published = {
        "seeds": 5,
        "none": {2: 0.875, 4: 0.9375},
        "batchnorm": {2: 0.90625, 4: 0.9375},
        "batchnorm_training_mode": {},
    }
    m = batch_size_macros.macros(
        runs,
        summary,
        pd.DataFrame(columns=["updates"]),
        distance,
        pd.DataFrame(columns=["rows"]),
        pair_summary,
        published,
        0.1,
        0.95,
        ADJUSTED_FAMILIES,
    )
    se = math.sqrt(0.02**2 / 5 + 0.01**2 / 5)  # at batch 2, with the published five seeds
    assert {k: v for k, v in m.items() if k.startswith("publishedGain")} == {
        "publishedGainBTwo": f"{100 * (0.90625 - 0.875):.1f}",
        "publishedGainSizes": "2",
        "publishedGainInSeList": f"{0.03125 / se:.1f} such standard errors at batch 2",
        "publishedGainSeSentence": (
            "With the standard deviations of the two cells compared, a difference of two independent means of 5 "
            f"seeds each carries a standard error of {100 * se:.2f} points at batch 2 (seed standard deviations "
            f"{100 * 0.02:.2f} and {100 * 0.01:.2f}); the published gain is {0.03125 / se:.1f} such standard "
            "errors at batch 2."
        ),
    }
    assert m["seDiffPublishedSeedsList"] == (
        f"{100 * se:.2f} points at batch 2 (seed standard deviations {100 * 0.02:.2f} and {100 * 0.01:.2f})"
    )
    assert m["gainCompared"] == "0"


# ---- remedies: the exact statistics in float32 -----------------------------------------------

SPEC = NetSpec("batchnorm", widths=(6, 4, 3, 3))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_statistics_bit_for_bit_against_a_float32_computation(seed):
    """Layer 1 in float32 with its exact statistics rounded to float32, layer 2's input a float32
    linear layer: both layers' statistics equal a NumPy float32 computation bit for bit (a float64
    layer-2 input, or layer 1 normalised with float64 means, gives other last bits)."""
    stacked = {k: np.array(v) for k, v in mlp.initial_stack(SPEC, [0, 1]).items()}
    rng = np.random.default_rng(seed)
    stacked["1.weight"] = (0.5 + rng.random(stacked["1.weight"].shape)).astype(np.float32)
    stacked["1.bias"] = (0.3 * rng.standard_normal(stacked["1.bias"].shape)).astype(np.float32)
    x = (rng.standard_normal((13, 6)) * 2 + 0.5).astype(np.float32)
    got = recompute.exact_statistics(stacked, SPEC, x)
    want = exact_by_hand({k: np.asarray(v, np.float32) for k, v in stacked.items()}, x, SPEC.eps)
    assert list(got) == list(mlp.NORMS)
    for layer in mlp.NORMS:
        for g, w in zip(got[layer], want[layer]):
            assert g.dtype == np.float32 and g.shape == w.shape
            assert np.array_equal(g.view(np.uint32), w.view(np.uint32)), layer


# ---- the running-statistics summary's CSV tables ---------------------------------------------


def test_written_tables_have_no_index_column(tmp_path):
    """``io.write_table`` (how the summary rule writes its tables) writes the columns alone:
    the whole file by hand, and the shuffle summary's header."""
    path = tmp_path / "t.csv"
    io.write_table(path, pd.DataFrame({"a": [3, 1], "b": [0.5, 0.25]}, index=[7, 9]))
    assert path.read_text() == "a,b\n3,0.5\n1,0.25\n"
    io.write_table(path, [{"x": "u", "y": 2}])
    assert path.read_text() == "x,y\nu,2\n"
    shuffles = pd.DataFrame(
        [
            {"estimator": "ema", "batch_size": b, "updates": 64 // b, "shuffle": s}
            | {"running_error": 0.1 * b + 0.01 * s, "train_eval_rmse": 0.2 + 0.03 * s}
            for b in (2, 8)
            for s in (0, 1, 2)
        ]
    )
    table = running_stats_shuffles.shuffle_summary_table(shuffles, 0.95)
    io.write_table(path, table)
    lines = path.read_text().splitlines()
    assert lines[0] == "estimator,batch_size,updates,metric,shuffles,mean,sd,ci_low,ci_high"
    assert len(lines) == 1 + 4 and lines[1].startswith("ema,2,32,running_error,3,")
    assert pd.read_csv(path).columns.tolist() == table.columns.tolist()
