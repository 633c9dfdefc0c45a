"""The convolutional network's summary by value: every macro, every JSON entry and every table
cell of :func:`bnstudy.studies.conv.report.report`, computed independently on small fixed inputs
(means and Student-t intervals with NumPy and ``scipy.stats``, for accuracies and flip rates on the
logit scale (``share_reference``), numbers printed with f-strings, an end that would print as 0 or 100
with the decimals that tell it apart)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from bnstudy.paper.latex import macro_name
from bnstudy.studies.conv import report as conv_report
from bnstudy.studies.conv import science as conv_study
from share_reference import logit_t_interval

NORMS = ("batchnorm", "groupnorm", "none")
SIZES = (2, 8)
SEEDS = (0, 1, 2)
CONFIDENCE = 0.9
DESIGN = {
    "channels": (16, 32),
    "groups": 4,
    "epochs": 7,
    "mlp_seeds": 5,
    "examples": 1500,
    "draws": 50,
    "exact_examples": 20,
    "exact_per_class": 2,
    "pairs": 12345,
}
LABELS = {"none": "none", "batchnorm": "BN", "groupnorm": "GN", "layernorm": "LN"}
SIDE = 8  # the digits: 8x8 images


def t_interval(values, confidence=CONFIDENCE):
    v = np.asarray(values, float)
    n = len(v)
    mean, sd = float(v.mean()), float(v.std(ddof=1))
    half = sps.t.ppf(1 - (1 - confidence) / 2, n - 1) * sd / math.sqrt(n)
    return mean, sd, mean - half, mean + half


def pts(v, d=1):
    """A share in points; one that is neither 0 nor 1 never printed as 0 or 100 (more decimals)."""
    x = 100 * v
    while float(f"{x:.{d}f}") in (0.0, 100.0) and x not in (0.0, 100.0):
        d += 1
    return f"{x:.{d}f}"


def spts(v, d=1):
    """Signed points; exact zero unsigned; a nonzero value never printed as zero (more decimals)."""
    x = 100 * v
    if x == 0:
        return f"{0:.{d}f}"
    while float(f"{x:.{d}f}") == 0:
        d += 1
    return f"{x:+.{d}f}"


def where_(lo, hi):
    return "lies wholly below zero" if hi < 0 else "lies wholly above zero" if lo > 0 else "contains zero"


def inference(norm, b, s):
    base = {"none": 0.90, "batchnorm": 0.93, "groupnorm": 0.91}[norm]
    return base - 0.01 * SIZES.index(b) + 0.013 * s + 0.002 * s * s


def train_mode(norm, b, s):
    if norm == "batchnorm":  # far below none at b=2, near it at b=8
        return (0.55 if b == 2 else 0.905) + 0.021 * s - 0.003 * s * s
    return inference(norm, b, s)


def loss(norm, b, s):
    return 0.3 + 0.05 * NORMS.index(norm) + 0.011 * b + 0.017 * s


def flip(b, design, s):
    return 0.2 + 0.1 * conv_report.FLIP_DESIGNS.index(design) + 0.03 * SIZES.index(b) + 0.011 * s


@pytest.fixture
def inputs():
    runs = pd.DataFrame(
        [
            dict(
                normaliser=n,
                batch_size=b,
                seed=s,
                inference_accuracy=inference(n, b, s),
                train_mode_accuracy=train_mode(n, b, s),
                final_loss=loss(n, b, s),
            )
            for s in (2, 0, 1)  # rows out of order: the report sorts them
            for n in reversed(NORMS)
            for b in SIZES
        ]
    )
    rates = pd.DataFrame(
        [
            dict(
                batch_size=b,
                design=d,
                seed=s,
                flip_rate=flip(b, d, s),
                train_mode_accuracy=0.6 + 0.05 * s + 0.01 * b,
                ever_flipped=0.7 + 0.02 * s + 0.001 * b,
            )
            for s in (1, 2, 0)
            for d in conv_report.FLIP_DESIGNS
            for b in SIZES
        ]
    )
    # the MLP: study 2's summary and study 1's per-seed table, as mlp_rows reads them
    summary = {
        n: {
            str(b): {
                "seeds": 5,
                "inference_accuracy": 0.8 + 0.01 * i + 0.02 * j,
                "inference_sd": 0.011,
                "inference_ci": [0.79 + 0.01 * i + 0.02 * j, 0.81 + 0.01 * i + 0.02 * j],
                "train_mode_accuracy": 0.5 + 0.03 * i + 0.04 * j,
                "train_mode_sd": 0.012,
                "train_mode_ci": [0.49 + 0.03 * i + 0.04 * j, 0.52 + 0.03 * i + 0.04 * j],
            }
            for j, b in enumerate(SIZES)
        }
        for i, n in enumerate(NORMS)
    }
    grid = pd.DataFrame(
        [
            dict(
                normaliser="batchnorm",
                train_batch_size=b,
                design=d,
                batch_size=2,
                measure=m,
                seeds=5,
                mean=mean,
                sd=0.01,
                ci_low=mean - 0.02,
                ci_high=mean + 0.02,
            )
            for b in SIZES
            for d in ("random", "exact")
            for k, m in enumerate(("flip_rate", "train_mode_accuracy", "ever_flipped"))
            # the MLP's exact flip rate: above the CNN's at b=2, below it at b=8
            for mean in [0.55 + 0.1 * k if (b, d, m) == (2, "exact", "flip_rate") else 0.4 + 0.1 * k + 0.01 * b]
        ]
    )
    mlp = conv_report.mlp_rows(summary, grid, NORMS, SIZES)
    return runs, rates, mlp


def cell(model, norm, b, measure, runs, rates, mlp):
    """(seeds, mean, sd, lo, hi) of one cell, computed here (the MLP's read from its rows)."""
    if model == "mlp":
        r = mlp[(mlp.normaliser == norm) & (mlp.batch_size == b) & (mlp.measure == measure)]
        if r.empty:
            return None
        r = r.iloc[0]
        return r.seeds, r["mean"], r.sd, r.ci_low, r.ci_high
    if measure in ("inference_accuracy", "train_mode_accuracy", "final_loss"):
        f = {"inference_accuracy": inference, "train_mode_accuracy": train_mode, "final_loss": loss}[measure]
        interval = t_interval if measure == "final_loss" else lambda v: logit_t_interval(v, CONFIDENCE)  # shares
        return (3, *interval([f(norm, b, s) for s in SEEDS]))
    design, _, what = next(
        (d, "_", measure[len(d) + 1 :]) for d in conv_report.FLIP_DESIGNS if measure.startswith(d + "_")
    )
    g = rates[(rates.batch_size == b) & (rates.design == design)].sort_values("seed")
    return (3, *logit_t_interval(g[what].tolist(), CONFIDENCE))


def expected_macros(runs, rates, mlp):
    m = {
        "convChannelsOne": "16",
        "convChannelsTwo": "32",
        "convGroups": "4",
        "convEpochs": "7",
        "convSeeds": "3",
        "convMlpSeeds": "5",
        "convBatchSizes": "2 and 8",
        "convBatchMin": "2",
        "convBatchMax": "8",
        "convNetworks": "18",
        "convProbedNetworks": "6",
        "convExamples": "1{,}500",
        "convDraws": "50",
        "convExactExamples": "20",
        "convExactPerClass": "2",
        "convPairs": "12{,}345",
        "convPositionValues": "128",
        "convPositions": "64",
        "convImageSide": "8",
        "convKernel": "3",
    }
    below = []
    for where, b in (("min", 2), ("max", 8)):
        for model in ("cnn", "mlp"):
            for norm in NORMS:
                for measure, short in (("inference_accuracy", "inf"), ("train_mode_accuracy", "train")):
                    _, mean, _, lo, hi = cell(model, norm, b, measure, runs, rates, mlp)
                    m[macro_name("conv", model, norm, short, where)] = pts(mean)
                    m[macro_name("conv", model, norm, short, where, "ci")] = f"[{pts(lo)}, {pts(hi)}]"
            designs = conv_report.FLIP_DESIGNS if model == "cnn" else ("random", "exact")
            for design in designs:
                _, mean, _, lo, hi = cell(model, "batchnorm", b, f"{design}_flip_rate", runs, rates, mlp)
                m[macro_name("conv", model, "flip", design, where)] = pts(mean)
                m[macro_name("conv", model, "flip", design, where, "ci")] = f"[{pts(lo)}, {pts(hi)}]"
            m[macro_name("conv", model, "exact acc", where)] = pts(
                cell(model, "batchnorm", b, "exact_train_mode_accuracy", runs, rates, mlp)[1]
            )
            inf = cell(model, "batchnorm", b, "inference_accuracy", runs, rates, mlp)[1]
            train = cell(model, "batchnorm", b, "train_mode_accuracy", runs, rates, mlp)[1]
            m[macro_name("conv gap", model, where)] = pts(inf - train)
        for norm in ("batchnorm", "groupnorm"):
            for measure, short, f in (("inf", "inf", inference), ("train", "train", train_mode)):
                diffs = [f(norm, b, s) - inference("none", b, s) for s in SEEDS]
                gain, _, lo, hi = t_interval(diffs)
                _, _, lo_adj, hi_adj = t_interval(diffs, 1 - (1 - CONFIDENCE) / len(SIZES))  # Bonferroni
                m[macro_name("conv gain", norm, short, where)] = spts(gain)
                m[macro_name("conv gain", norm, short, where, "ci")] = (
                    "\\text{(every seed alike)}" if lo == hi else f"[{spts(lo)}, {spts(hi)}]"
                )
                m[macro_name("conv gain", norm, short, where, "verdict")] = where_(lo, hi)
                m[macro_name("conv gain", norm, short, where, "adj ci")] = (
                    "\\text{(every seed alike)}" if lo_adj == hi_adj else f"[{spts(lo_adj)}, {spts(hi_adj)}]"
                )
                m[macro_name("conv gain", norm, short, where, "adj verdict")] = where_(lo_adj, hi_adj)
                if norm == "batchnorm" and short == "train" and hi < 0:
                    below.append(str(b))
        m["convFamily"] = str(len(SIZES))
        for norm in NORMS:
            m[macro_name("conv loss", norm, where)] = f"{t_interval([loss(norm, b, s) for s in SEEDS])[0]:.2f}"
        _, _, _, clo, chi = cell("cnn", "batchnorm", b, "exact_flip_rate", runs, rates, mlp)
        _, _, _, mlo, mhi = cell("mlp", "batchnorm", b, "exact_flip_rate", runs, rates, mlp)
        m[macro_name("conv flip compare", where)] = "below" if chi < mlo else "above" if clo > mhi else "overlapping"
    m["convBatchnormTrainBelowNone"] = " and ".join(below) if below else "none"
    first, last = (cell("cnn", "none", b, "inference_accuracy", runs, rates, mlp)[1] for b in (2, 8))
    m["convNoneInfTrend"] = "goes" if pts(first) == pts(last) else "falls" if last < first else "rises"
    _, _, _, olo, ohi = cell("cnn", "batchnorm", 2, "own_class_flip_rate", runs, rates, mlp)
    _, _, _, tlo, thi = cell("cnn", "batchnorm", 2, "other_class_flip_rate", runs, rates, mlp)
    m["convOwnOtherMin"] = (
        "more often than"
        if olo > thi
        else "less often than"
        if ohi < tlo
        else "neither clearly more nor clearly less often than"
    )
    return m


def test_every_macro_by_hand(inputs):
    runs, rates, mlp = inputs
    got = conv_report.report(runs, rates, mlp, CONFIDENCE, LABELS, DESIGN, SIDE)["macros"]
    want = expected_macros(runs, rates, mlp)
    assert got == want
    # the inputs reach the branches they are meant to
    assert got["convFlipCompareMin"] == "below" and got["convFlipCompareMax"] == "above"
    assert got["convBatchnormTrainBelowNone"] == "2"
    assert got["convGainBatchnormTrainMinVerdict"] == "lies wholly below zero"
    assert {got["convGainGroupnormInfMaxVerdict"], got["convGainBatchnormInfMinVerdict"]} == {"lies wholly above zero"}


def test_no_batch_size_below_none_reads_none(inputs):
    runs, rates, mlp = inputs
    runs = runs.copy()
    bn = runs.normaliser == "batchnorm"
    runs.loc[bn, "train_mode_accuracy"] = runs.loc[bn, "inference_accuracy"] + 0.01
    got = conv_report.report(runs, rates, mlp, CONFIDENCE, LABELS, DESIGN, SIDE)["macros"]
    assert got["convBatchnormTrainBelowNone"] == "none"
    # and both sizes below it: words
    runs.loc[bn, "train_mode_accuracy"] = 0.2 + 0.01 * runs.loc[bn, "seed"]
    got = conv_report.report(runs, rates, mlp, CONFIDENCE, LABELS, DESIGN, SIDE)["macros"]
    assert got["convBatchnormTrainBelowNone"] == "2 and 8"


def test_summary_json_by_hand(inputs):
    runs, rates, mlp = inputs
    out = conv_report.report(runs, rates, mlp, CONFIDENCE, LABELS, DESIGN, SIDE)
    summary = out["summary"]
    assert summary["confidence"] == CONFIDENCE and summary["seeds"] == [0, 1, 2] and summary["batch_sizes"] == [2, 8]
    assert summary["design"] == {k: (list(v) if isinstance(v, tuple) else v) for k, v in DESIGN.items()}
    cells = summary["cells"]
    assert set(cells) == {"cnn", "mlp"}
    assert set(cells["cnn"]) == set(NORMS) and set(cells["mlp"]) == set(NORMS)
    for model in ("cnn", "mlp"):
        for norm in NORMS:
            assert set(cells[model][norm]) == {"2", "8"}
            for b in SIZES:
                entry = cells[model][norm][str(b)]
                measures = {"inference_accuracy", "train_mode_accuracy"}
                if model == "cnn":
                    measures.add("final_loss")
                if norm == "batchnorm":
                    designs = conv_report.FLIP_DESIGNS if model == "cnn" else ("random", "exact")
                    kinds = ("flip_rate", "train_mode_accuracy", "ever_flipped")
                    measures |= {f"{d}_{k}" for d in designs for k in kinds}
                assert set(entry) == measures, (model, norm, b)
                for measure, e in entry.items():
                    seeds, mean, sd, lo, hi = cell(model, norm, b, measure, runs, rates, mlp)
                    assert set(e) == {"mean", "sd", "ci", "seeds"}
                    assert e["seeds"] == seeds
                    assert e["mean"] == pytest.approx(mean, abs=1e-12) and e["sd"] == pytest.approx(sd, abs=1e-12)
                    assert e["ci"] == pytest.approx([lo, hi], abs=1e-12)
    minus = summary["minus_none"]
    assert set(minus) == {"batchnorm", "groupnorm"}
    for norm in ("batchnorm", "groupnorm"):
        assert set(minus[norm]) == {"2", "8"}
        for b in SIZES:
            entry = minus[norm][str(b)]
            assert set(entry) == {"inference_accuracy", "train_mode_accuracy"}
            for measure, f in (("inference_accuracy", inference), ("train_mode_accuracy", train_mode)):
                gain, sd, lo, hi = t_interval([f(norm, b, s) - inference("none", b, s) for s in SEEDS])
                _, _, lo_adj, hi_adj = t_interval(
                    [f(norm, b, s) - inference("none", b, s) for s in SEEDS], 1 - (1 - CONFIDENCE) / len(SIZES)
                )
                e = entry[measure]
                assert set(e) == {"gain", "sd", "ci", "seeds", "family", "ci_adjusted"} and e["seeds"] == 3
                assert e["gain"] == pytest.approx(gain, abs=1e-12) and e["sd"] == pytest.approx(sd, abs=1e-12)
                assert e["ci"] == pytest.approx([lo, hi], abs=1e-12)
                assert e["family"] == 2 and e["ci_adjusted"] == pytest.approx([lo_adj, hi_adj], abs=1e-12)
                assert (lo_adj < lo and hi < hi_adj) if sd > 0 else (lo_adj == lo and hi == hi_adj)


def test_side_table_is_sorted_long_form_of_both_networks(inputs):
    runs, rates, mlp = inputs
    side = conv_report.report(runs, rates, mlp, CONFIDENCE, LABELS, DESIGN, SIDE)["side"]
    assert list(side.columns) == [
        "model", "normaliser", "batch_size", "measure", "seeds", "mean", "sd", "ci_low", "ci_high"
    ]  # fmt: skip
    keys = list(zip(side.model, side.normaliser, side.batch_size, side.measure))
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    cnn = 3 * 2 * 3 + 2 * 4 * 3  # three measures per normaliser and size; three per flip design and size
    mlp_rows = 3 * 2 * 2 + 2 * 2 * 3
    assert (side.model == "cnn").sum() == cnn and (side.model == "mlp").sum() == mlp_rows
    assert side.index.tolist() == list(range(len(side)))


def test_paired_rows_by_hand(inputs):
    runs, rates, mlp = inputs
    paired = conv_report.report(runs, rates, mlp, CONFIDENCE, LABELS, DESIGN, SIDE)["paired"]
    assert list(paired.columns) == [
        "normaliser", "batch_size", "measure", "seeds", "gain", "sd", "ci_low", "ci_high",
        "family", "ci_low_adj", "ci_high_adj",
    ]  # fmt: skip
    keys = list(zip(paired.normaliser, paired.batch_size, paired.measure))
    assert keys == [(n, b, m) for n in ("batchnorm", "groupnorm") for b in SIZES for m in conv_report.MEASURES]


def test_table_by_hand(inputs):
    runs, rates, mlp = inputs
    header, rows, align, comment = conv_report.report(runs, rates, mlp, CONFIDENCE, LABELS, DESIGN, SIDE)["table"]
    assert header == ["batch", "network", "none", "BN", "GN", "BN, training mode", "BN flips, $b = 2$"]
    assert align == "rlrrrrr"
    assert comment == "CNN beside the MLP: accuracy (points) and flip rate (%)"
    want = []
    for b in SIZES:
        for model, name in (("cnn", "CNN"), ("mlp", "MLP")):
            row = [str(b), name]
            for norm in ("none", "batchnorm", "groupnorm"):
                row.append(pts(cell(model, norm, b, "inference_accuracy", runs, rates, mlp)[1]))
            row.append(pts(cell(model, "batchnorm", b, "train_mode_accuracy", runs, rates, mlp)[1]))
            row.append(pts(cell(model, "batchnorm", b, "exact_flip_rate", runs, rates, mlp)[1]))
            want.append(row)
    assert rows == want


def test_table_marks_a_missing_cell_with_a_dash(inputs):
    runs, rates, mlp = inputs
    side = conv_report.report(runs, rates, mlp, CONFIDENCE, LABELS, DESIGN, SIDE)["side"]
    side = side[~((side.model == "mlp") & (side.measure == "exact_flip_rate"))]
    side = side[~((side.model == "cnn") & (side.normaliser == "groupnorm") & (side.batch_size == 8))]
    norms = ["batchnorm", "groupnorm", "layernorm", "none"]
    header, rows, align, _ = conv_report.table(side, list(SIZES), norms, LABELS)
    assert header[2:6] == ["none", "BN", "GN", "LN"] and align == "rlrrrrrr"
    assert [r[:2] for r in rows] == [["2", "CNN"], ["2", "MLP"], ["8", "CNN"], ["8", "MLP"]]
    assert rows[1][-1] == "--" and rows[3][-1] == "--" and rows[0][-1] != "--"
    assert rows[2][4] == "--" and rows[2][5] == "--"  # no group norm at 8; no layer norm anywhere
    assert rows[0][5] == "--"


def test_cells_and_flip_cells_by_hand(inputs):
    runs, rates, _ = inputs
    got = conv_report.cells(runs, CONFIDENCE)
    assert list(got.columns) == [
        "model", "normaliser", "batch_size", "measure", "seeds", "mean", "sd", "ci_low", "ci_high"
    ]  # fmt: skip
    assert list(zip(got.normaliser, got.batch_size, got.measure)) == [
        (n, b, m) for n in NORMS for b in SIZES for m in ("inference_accuracy", "train_mode_accuracy", "final_loss")
    ]
    assert set(got.model) == {"cnn"} and set(got.seeds) == {3}
    for r in got.itertuples():
        f = {"inference_accuracy": inference, "train_mode_accuracy": train_mode, "final_loss": loss}[r.measure]
        values = [f(r.normaliser, r.batch_size, s) for s in SEEDS]
        mean, sd, lo, hi = t_interval(values) if r.measure == "final_loss" else logit_t_interval(values, CONFIDENCE)
        assert (r.mean, r.sd, r.ci_low, r.ci_high) == pytest.approx((mean, sd, lo, hi), abs=1e-12)
    flips = conv_report.flip_cells(rates, CONFIDENCE)
    assert set(flips.model) == {"cnn"} and set(flips.normaliser) == {"batchnorm"} and set(flips.seeds) == {3}
    kinds = ("flip_rate", "train_mode_accuracy", "ever_flipped")
    designs = sorted(conv_report.FLIP_DESIGNS)
    assert list(zip(flips.batch_size, flips.measure)) == [
        (b, f"{d}_{k}") for b in SIZES for d in designs for k in kinds
    ]
    for r in flips.itertuples():
        d = next(d for d in designs if r.measure.startswith(d + "_") and r.measure[len(d) + 1 :] in kinds)
        g = rates[(rates.batch_size == r.batch_size) & (rates.design == d)].sort_values("seed")
        mean, sd, lo, hi = logit_t_interval(g[r.measure[len(d) + 1 :]].tolist(), CONFIDENCE)
        assert (r.mean, r.sd, r.ci_low, r.ci_high) == pytest.approx((mean, sd, lo, hi), abs=1e-12)


def test_mlp_rows_take_each_field_from_its_place(inputs):
    *_, mlp = inputs
    r = mlp[(mlp.normaliser == "groupnorm") & (mlp.batch_size == 8) & (mlp.measure == "train_mode_accuracy")].iloc[0]
    assert (r.model, r.seeds, r["mean"], r.sd, r.ci_low, r.ci_high) == pytest.approx(
        ("mlp", 5, 0.5 + 0.03 + 0.04, 0.012, 0.49 + 0.03 + 0.04, 0.52 + 0.03 + 0.04)
    )
    r = mlp[(mlp.normaliser == "none") & (mlp.batch_size == 2) & (mlp.measure == "inference_accuracy")].iloc[0]
    assert (r.seeds, r["mean"], r.sd, r.ci_low, r.ci_high) == pytest.approx(
        (5, 0.8 + 0.02, 0.011, 0.79 + 0.02, 0.81 + 0.02)
    )
    r = mlp[(mlp.batch_size == 8) & (mlp.measure == "random_ever_flipped")].iloc[0]
    assert (r.normaliser, r.seeds, r["mean"], r.sd, r.ci_low, r.ci_high) == pytest.approx(
        ("batchnorm", 5, 0.4 + 0.2 + 0.08, 0.01, 0.4 + 0.2 + 0.08 - 0.02, 0.4 + 0.2 + 0.08 + 0.02)
    )
    assert list(mlp.columns) == [
        "model", "normaliser", "batch_size", "measure", "seeds", "mean", "sd", "ci_low", "ci_high"
    ]  # fmt: skip
    assert len(mlp) == 3 * 2 * 2 + 2 * 3 * 2


# ---- the CNN's companion draws and flip rates -------------------------------------------------


def test_exact_subset_is_the_documented_seeded_draw():
    """``per_class`` of each class's examples, drawn by PCG64 seeded from (seed, STREAM_PROBE)."""
    from bnstudy.base.runtime import STREAM_PROBE, derive_seed

    examples = np.array([3, 5, 8, 11, 12, 17, 20, 21, 30])
    labels = np.array([0, 1, 0, 1, 0, 1, 0, 2, 2])
    for seed in (0, 4):
        rng = np.random.default_rng(derive_seed(seed, STREAM_PROBE))
        want = []
        for c in (0, 1, 2):
            pool = np.sort(examples[labels == c])
            want += list(pool[rng.permutation(len(pool))[:2]])
        got = conv_study.exact_subset(examples, labels, 2, seed)
        assert got.dtype == np.int64 and got.tolist() == sorted(int(v) for v in want)
    draws = {tuple(conv_study.exact_subset(examples, labels, 2, s)) for s in range(6)}
    assert len(draws) > 1  # the seed matters


def test_companion_pairs_are_the_documented_seeded_draws():
    from bnstudy.base.runtime import STREAM_PROBE, derive_seed

    y = np.array([0, 1, 0, 1, 0, 2, 1, 0, 2])
    pairs = conv_study.companion_pairs([2, 5], y, 40, np.array([1]), seed=3)
    assert list(pairs.columns) == ["example", "companion", "design"]
    want = []
    for e in (2, 5):
        rng = np.random.default_rng(derive_seed(3, STREAM_PROBE, e))
        others = np.array([i for i in range(len(y)) if i != e])
        for design, pool in (
            ("random", others),
            ("own_class", others[y[others] == y[e]]),
            ("other_class", others[y[others] != y[e]]),
        ):
            want += [(e, int(c), design) for c in pool[rng.integers(0, len(pool), size=40)]]
    want += [(1, c, "exact") for c in range(len(y)) if c != 1]
    assert list(pairs.itertuples(index=False, name=None)) == want
    random2 = pairs[(pairs.example == 2) & (pairs.design == "random")].companion
    assert 0 in set(random2) and 2 not in set(random2)  # the pool's first row can be drawn; never the example
    own2 = set(pairs[(pairs.example == 2) & (pairs.design == "own_class")].companion)
    assert own2 <= {0, 4, 7} and set(pairs[(pairs.example == 5) & (pairs.design == "other_class")].companion) <= {
        0, 1, 2, 3, 4, 6, 7
    }  # fmt: skip


def test_flip_rates_one_row_per_network_and_design_in_order():
    probes = pd.DataFrame(
        [
            dict(batch_size=b, seed=s, design=d, example=e, batches=4, flips=(e + s) % 3, correct=2 + e % 2)
            | dict(inference_correct=1)
            for b in (8, 2)
            for s in (1, 0)
            for d in ("random", "exact")
            for e in (0, 1, 2)
        ]
    )
    got = conv_study.flip_rates(probes)
    assert list(got.columns) == [
        "batch_size", "seed", "design", "examples", "flip_rate", "train_mode_accuracy", "ever_flipped"
    ]  # fmt: skip
    keys = list(zip(got.batch_size, got.seed, got.design))
    assert keys == [(b, s, d) for b in (2, 8) for s in (0, 1) for d in ("exact", "random")]
    for r in got.itertuples():
        flips = [(e + r.seed) % 3 for e in (0, 1, 2)]
        assert r.examples == 3
        assert r.flip_rate == pytest.approx(sum(f / 4 for f in flips) / 3)
        assert r.train_mode_accuracy == pytest.approx((2 / 4 + 3 / 4 + 2 / 4) / 3)
        assert r.ever_flipped == sum(f > 0 for f in flips) / 3
