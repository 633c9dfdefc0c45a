"""Study 2's summary by value: every number of batch_size.json, the macros and the tables on a tiny grid.

The expected values are computed here, independently: means and standard deviations by
NumPy, t intervals by ``scipy.stats.t.interval`` and ``ttest_rel``, McNemar p-values by
``scipy.stats.binomtest``, discordant rows by counting, macro names written out.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

import batch_size_families
from bnstudy.evaluation import paired as pairing
from bnstudy.paper import latex
from bnstudy.studies.batch_size import evaluation, paired
from bnstudy.studies.batch_size import macros as batch_size_macros
from bnstudy.studies.batch_size import summary as batch_size_summary
from bnstudy.studies.batch_size.macros import share_of_gap
from share_reference import logit_t_interval

ROWS = 8  # test rows per network
SEEDS = [0, 1, 2]
SIZES = [2, 8]
CONF = 0.95
MARGIN = 0.01  # families.normalisers.smallest_effect: the controls' equivalence margin
FAMILIES = batch_size_families.section(smallest_effect=MARGIN)  # every family Bonferroni-adjusted
MOMENTUM = 0.1
# correct rows out of ROWS per (normaliser, mode) and batch size, seed by seed
COUNTS = {
    ("none", "inference"): {2: [8, 7, 8], 8: [5, 6, 4]},
    ("none", "training"): {2: [7, 7, 8], 8: [5, 5, 4]},
    ("batchnorm", "inference"): {2: [2, 4, 1], 8: [8, 8, 7]},
    ("batchnorm", "training"): {2: [1, 0, 2], 8: [7, 8, 6]},
    ("batchnorm", "debiased_ema"): {2: [2, 4, 2], 8: [8, 8, 7]},
    ("batchnorm", "cumulative"): {2: [3, 5, 2], 8: [7, 7, 6]},
    ("batchnorm", "precise_bn"): {2: [8, 8, 7], 8: [8, 8, 8]},
    ("batchnorm", "exact"): {2: [5, 6, 4], 8: [7, 8, 8]},
    ("batchnorm", "inference_keep"): {8: [8, 7, 8]},
    ("none", "inference_keep"): {8: [6, 6, 5]},
    ("batchrenorm", "inference"): {2: [5, 6, 4], 8: [8, 7, 8]},
}
# which rows are correct: row i of a network with k correct rows iff (i + offset) % ROWS < k
OFFSET = {
    ("none", "inference"): 0,
    ("none", "training"): 1,
    ("batchnorm", "inference"): 0,
    ("batchnorm", "training"): 2,
    ("batchnorm", "debiased_ema"): 0,
    ("batchnorm", "cumulative"): 3,
    ("batchnorm", "precise_bn"): 5,
    ("batchnorm", "exact"): 6,
    ("batchnorm", "inference_keep"): 1,
    ("none", "inference_keep"): 2,
    ("batchrenorm", "inference"): 4,
}
REMEDY_MODES = ("debiased_ema", "cumulative", "precise_bn", "exact")
UPDATES = {2: [4936, 4936, 4937], 4: [2468, 2467, 2468], 8: [1234, 1235, 1234]}
STATISTICS = ("ema", "debiased_ema", "cumulative", "precise_bn", "exact")
PUBLISHED = {
    "seeds": 5,
    "none": {2: 0.95, 8: 0.70, 16: 0.97},
    "batchnorm": {2: 0.40, 8: 0.90, 16: 0.98},
    "batchnorm_training_mode": {2: 0.90, 8: 0.85, 16: 0.95},
}
SIZE_NAME = {2: "BTwo", 8: "BEight"}
# every remedy's paired interval lies above zero at b = 2; only the cumulative average's lies below at 8
REMEDY_SENTENCE = (  # Bonferroni-adjusted over the two batch sizes
    "the paired intervals of the cumulative average lie wholly below zero at batch 8, and wholly above zero "
    "at batch 2; the paired intervals of PreciseBN and the exact statistics lie wholly above zero at batch 2, "
    "and contain zero at the other batch size"
)
END = {2: "Min", 8: "Max"}
MODE_NAME = {
    "inference": "Inference",
    "training": "Training",
    "debiased_ema": "DebiasedEma",
    "cumulative": "Cumulative",
    "precise_bn": "PreciseBn",
    "exact": "Exact",
    "inference_keep": "InferenceKeep",
}
NORM_NAME = {"none": "None", "batchnorm": "Batchnorm", "batchrenorm": "Batchrenorm"}


def correct_vector(norm, mode, b, s, counts=None):
    k = (counts or COUNTS)[(norm, mode)][b][SEEDS.index(s)]
    return np.array([(i + OFFSET[(norm, mode)]) % ROWS < k for i in range(ROWS)], dtype=int)


def accuracy(norm, mode, b, s, counts=None):
    return (counts or COUNTS)[(norm, mode)][b][SEEDS.index(s)] / ROWS


def cells_of(norm, mode, counts=None):
    return [(b, s) for b in (counts or COUNTS)[(norm, mode)] for s in SEEDS]


def inputs(counts=None):
    """The rule's inputs as the script reads them: grid cells, keep cells (marked by ``kept``),
    remedy runs with their update counts, distances and per-row correctness."""
    counts = counts or COUNTS
    cells, keep, keep_correct, correct, remedy_runs = [], [], [], [], []
    for (norm, mode), by_size in counts.items():
        base_mode = mode.removesuffix("_keep")
        rows = [
            {"normaliser": norm, "batch_size": b, "mode": base_mode, "seed": s}
            | {"accuracy": accuracy(norm, mode, b, s, counts)}
            for b, s in cells_of(norm, mode, counts)
        ]
        per_row = [
            {"normaliser": norm, "batch_size": b, "mode": base_mode, "seed": s, "row": i, "correct": int(c)}
            for b, s in cells_of(norm, mode, counts)
            for i, c in enumerate(correct_vector(norm, mode, b, s, counts))
        ]
        if mode.endswith("_keep"):
            keep.append(pd.DataFrame(rows))
            keep_correct.append(pd.DataFrame(per_row))
        elif mode in REMEDY_MODES:
            remedy_runs.append(
                pd.DataFrame([r | {"updates": UPDATES[r["batch_size"]][SEEDS.index(r["seed"])]} for r in rows])
            )
            correct.append(pd.DataFrame(per_row))
        else:
            cells.append(pd.DataFrame(rows))
            correct.append(pd.DataFrame(per_row))
    distances = pd.DataFrame(
        [
            {
                "normaliser": "batchnorm",
                "batch_size": b,
                "seed": s,
                "statistics": name,
                "layer": layer,
                "mean_distance": distance(name, b, s, layer, "mean"),
                "var_distance": distance(name, b, s, layer, "var"),
            }
            for s in reversed(SEEDS)  # not in seed order: the summary sorts
            for b in sorted({b for by_size in counts.values() for b in by_size})
            for name in STATISTICS
            for layer in (1, 2)
        ]
    )
    correct = pd.concat(correct + [batch_size_summary.kept(t) for t in keep_correct], ignore_index=True)
    cells = cells + [batch_size_summary.kept(t) for t in keep]
    return cells, remedy_runs, distances, correct


def distance(name, b, s, layer, kind):
    i = STATISTICS.index(name)
    return 0.1 * (i + 1) + 0.013 * s * (s + 1) + 0.001 * layer * b + (0.0 if kind == "mean" else 0.5 + 0.007 * s)


# Function scope on purpose: mutmut runs, for a mutant, only the tests during which the mutated
# function ran; a module-scoped result would be computed during the first test alone.
@pytest.fixture
def result():
    cells, remedy_runs, distances, correct = inputs()
    return batch_size_summary.summarise(cells, remedy_runs, distances, correct, PUBLISHED, MOMENTUM, CONF, FAMILIES)


def t_summary(values):
    """An accuracy over seeds: mean, sd and the t interval on the logit scale (shares)."""
    return logit_t_interval(values, CONF)


def paired_t(values, confidence=CONF):
    """Paired differences of shares over seeds: mean, sd and the Student-t interval clipped to
    [-1, 1], the range of a difference of two shares."""
    v = np.asarray(values, dtype=float)
    mean, sd = v.mean(), v.std(ddof=1)
    if sd == 0:
        return mean, sd, mean, mean
    lo, hi = sps.t.interval(confidence, len(v) - 1, loc=mean, scale=sd / np.sqrt(len(v)))
    return mean, sd, max(lo, -1.0), min(hi, 1.0)


def expected_cells():
    return {
        (norm, b, mode): t_summary([accuracy(norm, mode, b, s) for s in SEEDS])
        for (norm, mode), by_size in COUNTS.items()
        for b in by_size
    }


def f3(v):
    return f"{v:.3f}"


def pts(v, digits=1):
    return f"{100 * v:.{digits}f}"


def spts(v, digits=2):
    """Signed points; exact zero unsigned; a nonzero value with the decimals its sign needs."""
    x = 100 * v
    if x == 0:
        return f"{0:.{digits}f}"
    d = digits
    while float(f"{x:.{d}f}") == 0:
        d += 1
    return f"{x:+.{d}f}"


def f3_end(v):
    """An interval end of a share, three decimals, more where it would print 0.000 or 1.000."""
    d = 3
    while float(f"{v:.{d}f}") in (0.0, 1.0) and v not in (0.0, 1.0):
        d += 1
    return f"{v:.{d}f}"


def expected_pairs():
    """Per comparison, b and seed: (a_only, b_only, McNemar p, accuracy difference)."""
    out = {}
    for name, (na, ma), (nb, mb) in paired.COMPARISONS:
        for b in SIZES:
            if b not in COUNTS.get((na, ma), {}) or b not in COUNTS.get((nb, mb), {}):
                continue
            for s in SEEDS:
                a, c = correct_vector(na, ma, b, s), correct_vector(nb, mb, b, s)
                a_only, b_only = int(((a == 1) & (c == 0)).sum()), int(((a == 0) & (c == 1)).sum())
                p = sps.binomtest(a_only, a_only + b_only, 0.5).pvalue if a_only + b_only else 1.0
                out[(name, b, s)] = (a_only, b_only, p, accuracy(na, ma, b, s) - accuracy(nb, mb, b, s))
    return out


def expected_gains():
    pairs = expected_pairs()
    out = {}
    for name, b in sorted({(k[0], k[1]) for k in pairs}):
        rows = [pairs[(name, b, s)] for s in SEEDS]
        diffs = [r[3] for r in rows]
        mean, sd, lo, hi = paired_t(diffs)
        family = len({k[1] for k in pairs if k[0] == name})
        _, _, lo_adj, hi_adj = paired_t(diffs, 1 - (1 - CONF) / family)
        significant = [r[2] < 1 - CONF for r in rows]
        out[(name, b)] = {
            "gain": mean,
            "sd": sd,
            "ci_low": lo,
            "ci_high": hi,
            "family": family,
            "ci_low_adj": lo_adj,
            "ci_high_adj": hi_adj,
            "a_only": sum(r[0] for r in rows),
            "b_only": sum(r[1] for r in rows),
            "net_rows": ", ".join(f"{r[0] - r[1]:+d}" for r in rows),
            "better": sum(sig and r[0] > r[1] for sig, r in zip(significant, rows)),
            "worse": sum(sig and r[0] < r[1] for sig, r in zip(significant, rows)),
            "ahead": sum(r[0] > r[1] for r in rows),
            "behind": sum(r[0] < r[1] for r in rows),
            "dz": mean / sd if sd > 0 else float("nan"),
        }
    return out


# ---- the tidy tables and the JSON summary ---------------------------------------------------


def test_the_data_reach_every_branch():
    """The tiny grid is built to exercise both signs: batch norm loses to none at b=2 and wins at
    b=8; some seeds are McNemar-significant either way; one cell has no spread."""
    gains = expected_gains()
    assert gains[("batchnorm_vs_none", 2)]["worse"] == 2 and gains[("precise_bn_vs_ema", 2)]["better"] == 2
    assert gains[("batchnorm_vs_none", 2)]["ci_high"] < 0 < gains[("batchnorm_vs_none", 8)]["ci_low"]
    assert gains[("debiased_ema_vs_ema", 2)]["ci_low"] < 0 < gains[("debiased_ema_vs_ema", 2)]["ci_high"]
    assert expected_cells()[("batchnorm", 8, "precise_bn")][1] == 0


def test_summary_table_is_numpy_mean_sd_and_logit_t_interval(result):
    expected = expected_cells()
    got = result["summary_table"]
    assert len(got) == len(expected)
    for r in got.itertuples(index=False):
        mean, sd, lo, hi = expected[(r.normaliser, r.batch_size, r.mode)]
        assert r.seeds == 3
        assert (r.mean, r.sd, r.ci_low, r.ci_high) == pytest.approx((mean, sd, lo, hi), abs=1e-12)


def test_json_summary_holds_every_cells_mean_sd_and_interval(result):
    expected = expected_cells()
    key = {"inference": "inference", "training": "train_mode"}
    out = {k: v for k, v in result["summary"].items() if k != "families"}  # the families: below
    assert set(out) == {"none", "batchnorm", "batchrenorm"}
    for (norm, b, mode), (mean, sd, lo, hi) in expected.items():
        cell = out[norm][str(b)]
        k = key.get(mode, mode)
        assert cell[f"{k}_accuracy"] == pytest.approx(mean, abs=1e-12)
        assert cell[f"{k}_sd"] == pytest.approx(sd, abs=1e-12)
        assert cell[f"{k}_ci"] == pytest.approx([lo, hi], abs=1e-12)
        assert cell["seeds"] == 3
    n_keys = {(n, str(b)): 0 for n, _ in COUNTS for b in SIZES}
    for norm, mode in COUNTS:
        for b in COUNTS[(norm, mode)]:
            n_keys[(norm, str(b))] += 3
    for (norm, b), n in n_keys.items():
        assert len(out[norm][b]) == n + 1, (norm, b)  # accuracy, sd, ci per mode, and seeds


def test_runs_are_every_network_sorted_with_the_keep_modes_marked(result):
    runs = result["runs"]
    expected = sorted(
        (norm, b, mode, s, accuracy(norm, mode, b, s)) for (norm, mode) in COUNTS for b, s in cells_of(norm, mode)
    )
    assert [tuple(r) for r in runs[["normaliser", "batch_size", "mode", "seed", "accuracy"]].to_numpy()] == [
        tuple(e) for e in expected
    ]
    assert list(runs.index) == list(range(len(runs)))
    assert list(runs.columns) == ["normaliser", "batch_size", "mode", "seed", "accuracy"]  # runs.csv's, no index


def test_distance_summary_is_the_mean_over_seeds(result):
    d = result["distance_summary"]
    assert len(d) == len(SIZES) * len(STATISTICS) * 2
    for r in d.itertuples(index=False):
        for kind in ("mean", "var"):
            want = np.mean([distance(r.statistics, r.batch_size, s, r.layer, kind) for s in SEEDS])
            assert getattr(r, f"{kind}_distance") == pytest.approx(want, abs=1e-15)
    assert list(d.columns) == ["normaliser", "batch_size", "statistics", "layer", "mean_distance", "var_distance"]
    dist = result["distances"]
    assert list(dist.seed.iloc[:3]) == SEEDS  # sorted by keys, then seed


def test_summarise_distances_of_no_rows_has_the_columns():
    empty = pd.DataFrame(columns=batch_size_summary.DISTANCE_KEYS + ["seed", "mean_distance", "var_distance"])
    out = batch_size_summary.summarise_distances(empty)
    assert out.empty and list(out.columns) == batch_size_summary.DISTANCE_KEYS + ["mean_distance", "var_distance"]


def test_tidy_runs_without_remedies_has_no_updates():
    cells, _, _, _ = inputs()
    runs, updates = batch_size_summary.tidy_runs(cells[:1], [])
    assert updates.empty and list(updates.columns) == ["batch_size", "seed", "updates"]
    assert len(runs) == len(cells[0])


def test_tidy_runs_updates_are_one_row_per_network(result):
    _, remedy_runs, _, _ = inputs()
    _, updates = batch_size_summary.tidy_runs([], remedy_runs)
    got = sorted(map(tuple, updates[["batch_size", "seed", "updates"]].to_numpy().tolist()))
    assert got == sorted((b, s, UPDATES[b][SEEDS.index(s)]) for b in SIZES for s in SEEDS)


# ---- paired comparisons --------------------------------------------------------------------


def test_paired_rows_count_discordant_rows_and_mcnemar_by_binomtest(result):
    expected = expected_pairs()
    got = result["paired"]
    assert len(got) == len(expected)
    for r in got.itertuples(index=False):
        a_only, b_only, p, diff = expected[(r.comparison, r.batch_size, r.seed)]
        assert (r.a_only, r.b_only, r.net_rows, r.rows) == (a_only, b_only, a_only - b_only, ROWS)
        assert r.mcnemar_p == pytest.approx(p, rel=1e-11)  # scipy rounds through exp and log
        assert r.accuracy_a - r.accuracy_b == pytest.approx(diff, abs=1e-15)
        assert r.net_rows == round(diff * ROWS)


def test_gains_are_scipys_paired_t_interval_with_mcnemar_seeds(result):
    expected = expected_gains()
    got = result["gains"]
    assert len(got) == len(expected)
    for r in got.itertuples(index=False):
        e = expected[(r.comparison, r.batch_size)]
        assert (r.gain, r.sd, r.ci_low, r.ci_high) == pytest.approx(
            (e["gain"], e["sd"], e["ci_low"], e["ci_high"]), abs=1e-12
        )
        assert (r.a_only, r.b_only, r.net_rows) == (e["a_only"], e["b_only"], e["net_rows"])
        assert (r.seeds_a_better, r.seeds_b_better, r.seeds) == (e["better"], e["worse"], 3)
    # scipy's own paired interval for one of them
    a = [accuracy("batchnorm", "inference", 2, s) for s in SEEDS]
    b = [accuracy("none", "inference", 2, s) for s in SEEDS]
    ci = sps.ttest_rel(a, b).confidence_interval(CONF)
    row = got[(got.comparison == "batchnorm_vs_none") & (got.batch_size == 2)].iloc[0]
    assert (row.ci_low, row.ci_high) == pytest.approx((max(ci.low, -1), min(ci.high, 1)), abs=1e-12)


# ---- macros --------------------------------------------------------------------------------


def sci(lo, hi):
    """A signed interval in points as the paper prints it; a degenerate one (every seed's
    difference the same) as words, never ``[x, x]``."""
    return "\\text{(every seed alike)}" if lo == hi else f"[{spts(lo)}, {spts(hi)}]"


def msci(lo, hi):
    """:func:`sci` as the gains table prints it: each end in math mode (a minus, not a hyphen)."""
    return "\\text{(every seed alike)}" if lo == hi else f"[${spts(lo)}$, ${spts(hi)}$]"


def expected_macros():
    cells = expected_cells()
    m = {
        "gridSeeds": "3",
        "publishedSeeds": "5",
        "batchMin": "2",
        "batchMax": "8",
        "gridBatchCount": "2",
        "evalConfidence": "95\\%",
        "mcnemarAlpha": "0.05",
        "testRowsEvaluated": "8",
        "rowPoints": "12.50",  # one row of 8 in points
    }
    for (norm, b, mode), (mean, sd, lo, hi) in cells.items():
        stem = MODE_NAME[mode] + NORM_NAME[norm]
        m[f"acc{stem}{SIZE_NAME[b]}"] = f3(mean)
        m[f"sd{stem}{SIZE_NAME[b]}"] = f3(sd)
        end = END[b]
        m[f"acc{stem}{end}"] = f3(mean)
        m[f"ci{stem}{end}"] = f"[{f3_end(lo)}, {f3_end(hi)}]"
        m[f"sd{stem}{end}"] = f3(sd)
        m[f"sdPoints{stem}{end}"] = pts(sd)
    for b in SIZES:
        base = cells[("batchnorm", b, "inference")][0]
        gap = cells[("none", b, "inference")][0] - base
        m[f"gap{END[b]}"] = pts(gap)
        renorm = cells[("batchrenorm", b, "inference")][0]
        m[f"gapClosedBatchrenorm{END[b]}"] = f"{100 * (renorm - base) / gap:.0f}\\%" if gap > 0 else "n/a"
        for mode in REMEDY_MODES:
            gain = cells[("batchnorm", b, mode)][0] - base
            m[f"gain{MODE_NAME[mode]}{END[b]}"] = pts(gain)
            m[f"gapClosed{MODE_NAME[mode]}{END[b]}"] = f"{100 * gain / gap:.0f}\\%" if gap > 0 else "n/a"
    names = {
        "batchnorm_vs_none": "BatchnormVsNone",
        "batchrenorm_vs_batchnorm": "BatchrenormVsBatchnorm",
        "debiased_ema_vs_ema": "DebiasedEmaVsEma",
        "cumulative_vs_ema": "CumulativeVsEma",
        "precise_bn_vs_ema": "PreciseBnVsEma",
        "exact_vs_ema": "ExactVsEma",
        "batchnorm_keep_vs_drop": "BatchnormKeepVsDrop",
        "none_keep_vs_drop": "NoneKeepVsDrop",
    }
    gains = expected_gains()
    for (name, b), e in gains.items():
        for stem in (f"paired{names[name]}{END[b]}",) + ((f"paired{names[name]}",) if "keep" in name else ()):
            m[f"{stem}Gain"] = spts(e["gain"])
            m[f"{stem}Ci"] = sci(e["ci_low"], e["ci_high"])
            m[f"{stem}Won"] = str(e["a_only"])
            if stem.endswith(END[b]):
                m[f"{stem}AdjCi"] = sci(e["ci_low_adj"], e["ci_high_adj"])
                m[f"{stem}AdjVerdict"] = (
                    "lies wholly below zero"
                    if e["ci_high_adj"] < 0
                    else "lies wholly above zero"
                    if e["ci_low_adj"] > 0
                    else "contains zero"
                )
                m[f"paired{names[name]}Family"] = str(e["family"])
            m[f"{stem}Lost"] = str(e["b_only"])
            if stem.endswith(END[b]):
                m[f"{stem}Better"] = str(e["better"] or "none")
                m[f"{stem}Worse"] = str(e["worse"] or "none")
    m["keepBatchSize"] = "8"
    # per comparison of the grid: the sizes whose interval lies wholly above / below zero, and the
    # size with the least gain
    for name, word in names.items():
        if "keep" in name:
            continue
        by_size = {b: gains[(name, b)] for b in SIZES}
        above = [str(b) for b in SIZES if by_size[b]["ci_low_adj"] > 0]  # Bonferroni over the sizes
        below = [str(b) for b in SIZES if by_size[b]["ci_high_adj"] < 0]
        for key, found in (("AboveSizes", above), ("BelowSizes", below)):
            plural = "es" if len(found) > 1 else ""
            m[f"paired{word}{key}"] = f"at batch{plural} {' and '.join(found)}" if found else "at no batch size"
        m[f"paired{word}SignSentence"] = sign_sentence_of_two(above, below)
        least = min(SIZES, key=lambda b: by_size[b]["gain"])
        e = by_size[least]
        m[f"paired{word}LeastGain"] = spts(e["gain"])
        m[f"paired{word}LeastCi"] = sci(e["ci_low"], e["ci_high"])
        m[f"paired{word}LeastAdjCi"] = sci(e["ci_low_adj"], e["ci_high_adj"])
        m[f"paired{word}LeastAdjVerdict"] = (
            "lies wholly below zero"
            if e["ci_high_adj"] < 0
            else "lies wholly above zero"
            if e["ci_low_adj"] > 0
            else "contains zero"
        )
        m[f"paired{word}LeastSize"] = str(least)
        m[f"paired{word}LeastBetter"] = str(e["better"] or "none")
        m[f"paired{word}LeastWorse"] = str(e["worse"] or "none")
    # unadjusted, batch norm's interval lies below zero at 2 (test_the_data_reach_every_branch); adjusted
    # over the two batch sizes it no longer does: the correction changes a verdict
    assert m["pairedBatchnormVsNoneAboveSizes"] == "at batch 8"
    assert m["pairedBatchnormVsNoneBelowSizes"] == "at no batch size"
    m["remedySignSentence"] = REMEDY_SENTENCE
    # the gains table's caption: the three families of the table, adjusted alike, their adjustment said once
    m["gainFamiliesClause"] = (
        "batch normalisation minus none, batch renormalisation minus batch normalisation and each remedy minus "
        "the trained EMA, each Bonferroni-adjusted over the 2 batch sizes"
    )
    weight = (1 - MOMENTUM) ** 1234  # the fewest updates of any network
    assert 1.0e-57 < weight < 1.0e-56
    m["emaFewestUpdates"] = "1{,}234"
    m["emaInitialWeightFewest"] = f"\\ensuremath{{{weight / 1e-57:.1f}\\times 10^{{-57}}}}"
    # debiased EMA moves seed 2 at b = 2 by one row of 8 and nothing else
    m["debiasedLargestChange"] = "12.5"
    m["debiasedLead"] = "Debiasing the EMA changes some networks' accuracy"  # not "changes nothing"
    m["debiasedChangeClause"] = "the largest change of accuracy from debiasing over all networks is 12.5 points"
    distance_names = {"ema": "Ema", "precise_bn": "PreciseBn", "cumulative": "Cumulative"}
    for b in SIZES:
        for name, word in distance_names.items():
            for kind in ("mean", "var"):
                value = np.mean([distance(name, b, s, 2, kind) for s in SEEDS])
                m[f"{kind}Distance{word}LayerTwo{END[b]}"] = f3(value)
    inference_sds = [cells[(n, b, "inference")][1] for n in NORM_NAME for b in SIZES]
    m["sdInferenceMedian"] = pts(np.median(inference_sds), 2)
    m["sdInferenceLargest"] = pts(max(inference_sds), 2)
    # published: batch norm beats none at 8 and 16 (0.20 and 0.01), not at 2
    m["publishedGainBEight"] = "20.0"
    m["publishedGainBOneSix"] = "1.0"
    m["publishedGainSizes"] = "8 and 16"
    sd_bn, sd_none = cells[("batchnorm", 8, "inference")][1], cells[("none", 8, "inference")][1]
    se = math.sqrt(sd_bn**2 / 5 + sd_none**2 / 5)  # published seeds
    m["seDiffPublishedSeedsList"] = (
        f"{pts(se, 2)} points at batch 8 (seed standard deviations {pts(sd_bn, 2)} and {pts(sd_none, 2)})"
    )
    m["publishedGainInSeList"] = f"{0.2 / se:.1f} such standard errors at batch 8"
    m["publishedGainSeSentence"] = (
        "With the standard deviations of the two cells compared, a difference of two independent means of 5 seeds "
        f"each carries a standard error of {m['seDiffPublishedSeedsList']}; the published gain is "
        f"{m['publishedGainInSeList']}."
    )
    m["gainCompared"] = "1"
    m["gainComparedExcludingZero"] = "1"
    m["gainComparedSizes"] = "8"
    m["gainsExcludingZero"] = "1"  # adjusted: b = 2 no longer excludes zero
    m["gainsCompared"] = "2"
    m["gainsSidesClause"] = " (above zero at batch 8)"  # the one interval excluding zero, b = 8, lies above
    # published gaps: six cells; the largest is batch norm in training mode at b = 2
    gaps = {}
    for norm, mode, key in (
        ("none", "inference", "none"),
        ("batchnorm", "inference", "batchnorm"),
        ("batchnorm", "training", "batchnorm_training_mode"),
    ):
        for b in SIZES:
            mean, sd = cells[(norm, b, mode)][:2]
            gaps[(norm, mode, b)] = (mean - PUBLISHED[key][b], sd)
    worst = ("batchnorm", "training", 2)
    assert max(gaps, key=lambda k: abs(gaps[k][0])) == worst
    gap, sd = gaps[worst]
    m["pubGapCells"] = "6"
    m["pubGapLargest"] = pts(abs(gap))
    m["pubGapLargestSign"] = "below"
    m["pubGapLargestWhere"] = "batch normalisation, training mode at batch 2"
    m["pubGapLargestSd"] = pts(sd)
    m["pubGapLargestInSd"] = f"{abs(gap) / sd:.1f}"
    m["pubGapMedianInSd"] = f"{np.median([abs(g) / s for g, s in gaps.values()]):.1f}"
    m["pubGapLargestInSe"] = f"{abs(gap) / (sd * math.sqrt(1 / 5 + 1 / 3)):.1f}"
    gap_bn2, sd_bn2 = gaps[("batchnorm", "inference", 2)]
    m["pubBatchnormMin"] = "0.400"
    m["pubGapBatchnormMinInSd"] = f"{abs(gap_bn2) / sd_bn2:.1f}"
    m["pubGapBatchnormMinSign"] = "below"
    m["pubGapBatchnormMinPoints"] = pts(abs(gap_bn2))
    m["pubGapBatchnormMinInSe"] = f"{abs(gap_bn2) / (sd_bn2 * math.sqrt(1 / 5 + 1 / 3)):.1f}"
    m["pubBatchnormBTwo"] = "0.400"
    m["pubBatchnormBEight"] = "0.900"
    # the generated claims: batch norm minus none at b = 2 holds zero once adjusted, so no share of a
    # loss is claimed; renormalisation's adjusted interval at 2 lies above zero, its least (at 8) holds it
    exact, renorm, least = (
        gains[("exact_vs_ema", 2)],
        gains[("batchrenorm_vs_batchnorm", 2)],
        gains[("batchrenorm_vs_batchnorm", 8)],
    )
    assert gains[("batchnorm_vs_none", 2)]["ci_low_adj"] < 0 < gains[("batchnorm_vs_none", 2)]["ci_high_adj"]
    assert exact["ci_low_adj"] > 0 and renorm["ci_low_adj"] > 0 and least["ci_low_adj"] < 0 < least["ci_high_adj"]
    m["recoverySentence"] = (
        "At batch 2 the adjusted interval of batch normalisation minus no normaliser contains zero, so there is "
        "no established loss to recover; exact statistics of the training data in place of the running averages "
        f"change the accuracy there by ${spts(exact['gain'])}$ points "
        f"$[{spts(exact['ci_low_adj'])}, {spts(exact['ci_high_adj'])}]$ (adjusted), an interval that lies wholly "
        "above zero"
    )
    m["renormSentence"] = (
        "Batch renormalisation is ahead of batch normalisation at batch 2, by "
        f"${spts(renorm['gain'])}$ points $[{spts(renorm['ci_low_adj'])}, {spts(renorm['ci_high_adj'])}]$ "
        "(adjusted); its smallest paired difference to batch normalisation, at batch 8, is "
        f"${spts(least['gain'])}$ points $[{spts(least['ci_low_adj'])}, {spts(least['ci_high_adj'])}]$ "
        "(adjusted), an interval that contains zero"
    )
    m["pairedBatchrenormVsBatchnormMinDifference"] = (
        f"a paired difference to batch normalisation of ${spts(renorm['gain'])}$ points "
        f"$[{spts(renorm['ci_low_adj'])}, {spts(renorm['ci_high_adj'])}]$, an interval that lies wholly above zero"
    )
    # seed by seed: batch norm below none in all 3 seeds at 2 ([2, 4, 1] against [8, 7, 8] rows) and
    # above it at 8 ([8, 8, 7] against [5, 6, 4]); renorm above batch norm at 2 in all 3, at 8 one seed
    # ties (8 and 8 rows), one is behind and one ahead
    m["pairedBatchnormVsNoneDirectionSentence"] = (
        "every one of the 3 seeds puts batch normalisation below no normaliser at batch 2, and above it at batch 8"
    )
    # every interval that excludes zero here is tens of points wide: none lies within the one-point margin
    m["pairedBatchnormVsNoneSmallEffect"] = ""
    m["pairedBatchrenormVsBatchnormSmallEffect"] = ""
    m["pairedBatchrenormVsBatchnormDirectionSentence"] = (
        "every one of the 3 seeds puts batch renormalisation above batch normalisation at batch 2"
    )
    # training mode (1, 0, 2 and 7, 8, 6 of 8 rows) below inference mode (2, 4, 1 and 8, 8, 7) at both sizes;
    # no group norm in this grid, so no statement about its shape
    m["trainModeLossClause"] = (
        "scores below inference mode at every one of the grid's 2 batch sizes in our networks (means over seeds)"
    )
    return m


def sign_sentence_of_two(above: list[str], below: list[str]) -> str:
    """Where the adjusted intervals of the two batch sizes lie, every case written out (not
    built by the code under test: bnstudy.paper.latex.zero_sentence)."""
    s = "the adjusted paired intervals"
    return {
        ((), ()): f"{s} contain zero at every batch size",
        (("2",), ()): f"{s} lie wholly above zero at batch 2, and contain zero at the other batch size",
        (("8",), ()): f"{s} lie wholly above zero at batch 8, and contain zero at the other batch size",
        (("2", "8"), ()): f"{s} lie wholly above zero at every batch size",
        ((), ("2",)): f"{s} lie wholly below zero at batch 2, and contain zero at the other batch size",
        ((), ("8",)): f"{s} lie wholly below zero at batch 8, and contain zero at the other batch size",
        ((), ("2", "8")): f"{s} lie wholly below zero at every batch size",
        (("8",), ("2",)): f"{s} lie wholly below zero at batch 2, and wholly above zero at batch 8",
        (("2",), ("8",)): f"{s} lie wholly below zero at batch 8, and wholly above zero at batch 2",
    }[(tuple(above), tuple(below))]


def test_sign_sentence_of_two_is_the_codes_for_every_case():
    """The written-out expectation above against the code, case by case."""
    for above, below in [([], []), (["2"], []), (["8"], []), (["2", "8"], []), ([], ["2"]), ([], ["8"])]:
        assert latex.zero_sentence("the adjusted paired intervals", above, below, 2) == sign_sentence_of_two(
            above, below
        )
    for above, below in [([], ["2", "8"]), (["8"], ["2"]), (["2"], ["8"])]:
        assert latex.zero_sentence("the adjusted paired intervals", above, below, 2) == sign_sentence_of_two(
            above, below
        )


def test_every_macro_by_value(result):
    got, want = result["macros"], expected_macros()
    assert sorted(set(got) - set(want)) == [] and sorted(set(want) - set(got)) == []
    for name in sorted(want):
        assert got[name] == want[name], name


def test_the_gap_closed_is_a_share_of_the_gap_and_refused_when_there_is_no_gap(result):
    m = result["macros"]
    # b = 2: batch norm 7/24, none 23/24 (gap 16/24); cumulative 10/24 closes 3/16, PreciseBN 23/24 all
    assert m["gapClosedCumulativeMin"] == "19\\%" and m["gapClosedPreciseBnMin"] == "100\\%"
    assert m["gainCumulativeMin"] == "12.5" and m["gapMin"] == "66.7"
    assert m["gapClosedPreciseBnMax"] == "n/a"  # batch norm beats none at b = 8: no gap to close


def test_macros_when_no_published_batch_size_is_in_the_grid():
    cells, remedy_runs, distances, correct = inputs()
    published = PUBLISHED | {
        "none": {32: 0.9},
        "batchnorm": {32: 0.95},
        "batchnorm_training_mode": {32: 0.5},
    }
    m = batch_size_summary.summarise(cells, remedy_runs, distances, correct, published, MOMENTUM, CONF, FAMILIES)
    m = m["macros"]
    assert m["seDiffPublishedSeedsList"] == "n/a (none of those batch sizes is in our grid)"
    assert m["gainCompared"] == "0" and m["gainComparedSizes"] == "none" and m["gainComparedExcludingZero"] == "none"
    assert m["publishedGainSizes"] == "32" and m["publishedGainBThreeTwo"] == "5.0"
    assert "pubGapCells" not in m and not any(k.startswith("pubBatchnormB") for k in m)


def test_published_gap_of_batch_norm_at_the_smallest_batch_missing_or_without_spread():
    cells, remedy_runs, distances, correct = inputs()
    published = PUBLISHED | {"batchnorm": {8: 0.90}}  # none at the smallest batch
    m = batch_size_summary.summarise(cells, remedy_runs, distances, correct, published, MOMENTUM, CONF, FAMILIES)
    m = m["macros"]
    for name in ("Min", "MinInSd", "MinSign", "MinPoints", "MinInSe"):
        key = "pubBatchnormMin" if name == "Min" else f"pubGapBatchnorm{name}"
        assert m[key] == "n/a", key
    counts = COUNTS | {("batchnorm", "inference"): {2: [3, 3, 3], 8: [8, 8, 7]}}  # no spread at b = 2
    m = batch_size_summary.summarise(*inputs(counts), PUBLISHED, MOMENTUM, CONF, FAMILIES)["macros"]
    assert m["pubGapBatchnormMinInSe"] == "n/a" and m["pubGapBatchnormMinInSd"] == "inf"
    assert m["pubGapBatchnormMinPoints"] == "2.5" and m["pubGapBatchnormMinSign"] == "below"  # 3/8 vs 0.40


def test_mcnemar_seeds_count_only_p_below_alpha():
    """Six discordant rows all one way: p = 2 / 64 = 1/32 exactly. At confidence 31/32, alpha is
    1/32 too: not below it, so no seed counts; at 0.95 it does."""
    seeds = pd.DataFrame(
        [
            {"comparison": "batchnorm_vs_none", "batch_size": 2, "seed": s, "accuracy_a": 1.0, "accuracy_b": 0.25}
            | {"rows": 8, "a_only": 6, "b_only": 0, "net_rows": 6, "mcnemar_p": sps.binomtest(6, 6).pvalue}
            for s in (0, 1)
        ]
    )
    assert seeds.mcnemar_p.iloc[0] == 1 / 32
    assert paired.summarise(seeds, 31 / 32, FAMILIES).iloc[0]["seeds_a_better"] == 0
    assert paired.summarise(seeds, 0.95, FAMILIES).iloc[0]["seeds_a_better"] == 2
    flipped = seeds.assign(a_only=0, b_only=6, net_rows=-6, accuracy_a=0.25, accuracy_b=1.0)
    assert paired.summarise(flipped, 31 / 32, FAMILIES).iloc[0]["seeds_b_better"] == 0
    assert paired.summarise(flipped, 0.95, FAMILIES).iloc[0]["seeds_b_better"] == 2


def test_published_gap_above_and_the_largest_gap_in_no_training_cell():
    cells, remedy_runs, distances, correct = inputs()
    published = PUBLISHED | {"batchnorm_training_mode": {}, "batchnorm": {2: 0.10, 8: 0.90}}
    m = batch_size_summary.summarise(cells, remedy_runs, distances, correct, published, MOMENTUM, CONF, FAMILIES)
    m = m["macros"]
    # ours at b = 2: 7/24 = 0.2917 against 0.10: the largest gap, above
    assert m["pubGapCells"] == "4"
    assert m["pubGapLargestSign"] == "above" and m["pubGapBatchnormMinSign"] == "above"
    assert m["pubGapLargestWhere"] == "batch normalisation at batch 2"
    assert m["pubGapLargest"] == pts(7 / 24 - 0.10)


# a third batch size between the two ends: every grid cell at b = 4, batch norm against none
# within a row either way (its paired interval holds zero)
MIDDLE = {
    ("none", "inference"): [7, 6, 7],
    ("none", "training"): [6, 7, 6],
    ("batchnorm", "inference"): [6, 7, 5],
    ("batchnorm", "training"): [5, 4, 6],
    ("batchnorm", "debiased_ema"): [6, 7, 5],
    ("batchnorm", "cumulative"): [6, 6, 6],
    ("batchnorm", "precise_bn"): [7, 8, 7],
    ("batchnorm", "exact"): [7, 7, 6],
    ("batchrenorm", "inference"): [7, 6, 8],
}


def with_middle_size():
    return {key: by_size | ({4: MIDDLE[key]} if key in MIDDLE else {}) for key, by_size in COUNTS.items()}


def test_a_middle_batch_size_leaves_every_smallest_and_largest_batch_macro_as_it_was():
    """The ``Min``/``Max`` macros are those of the smallest and the largest batch size, not of the
    second; the lists over sizes name every size that qualifies."""
    two = expected_macros()
    published = PUBLISHED | {"none": PUBLISHED["none"] | {4: 0.80}, "batchnorm": PUBLISHED["batchnorm"] | {4: 0.85}}
    counts = with_middle_size()
    m = batch_size_summary.summarise(*inputs(counts), published, MOMENTUM, CONF, FAMILIES)["macros"]
    # the adjusted intervals widen with the family (three batch sizes here, two there): left out
    # (and the renorm difference clause, which quotes the adjusted interval)
    adjusted = ("pairedBatchrenormVsBatchnormMinDifference",)
    ends = sorted(
        name for name in two if re.search("M(in|ax)([A-Z]|$)", name) and "Adj" not in name and name not in adjusted
    )
    assert len(ends) > 60 and "batchMax" in ends and "gapMax" in ends and "pairedBatchnormVsNoneMaxCi" in ends
    assert {name: m[name] for name in ends} == {name: two[name] for name in ends}
    assert m["gridBatchCount"] == "3" and m["accInferenceBatchnormBFour"] == f3(18 / 24)
    # batch norm minus none at b = 4: -1, +1, -2 rows of 8: an interval holding zero
    assert m["gainsCompared"] == "3" and m["gainsExcludingZero"] == "1"  # adjusted over three sizes: b = 8 only
    # published: batch norm beats none at 4, 8 and 16; ours has 4 and 8
    assert m["publishedGainSizes"] == "4, 8 and 16" and m["gainComparedSizes"] == "4 and 8"
    sd = {
        (n, b): t_summary([accuracy(n, "inference", b, s, counts) for s in SEEDS])[1]
        for n in ("batchnorm", "none")
        for b in (4, 8)
    }
    se = {b: math.sqrt(sd[("batchnorm", b)] ** 2 / 5 + sd[("none", b)] ** 2 / 5) for b in (4, 8)}
    in_se = f"{0.05 / se[4]:.1f} such standard errors at batch 4 and {0.2 / se[8]:.1f} at batch 8"
    assert m["publishedGainInSeList"] == in_se
    assert m["publishedGainSeSentence"].endswith(f"; the published gains are {in_se}.")  # two: plural


def test_a_cell_missing_at_one_end_drops_that_ends_gap_only():
    counts = COUNTS | {("none", "inference"): {8: COUNTS[("none", "inference")][8]}}  # none not run at b = 2
    m = batch_size_summary.summarise(*inputs(counts), PUBLISHED, MOMENTUM, CONF, FAMILIES)["macros"]
    assert "gapMin" not in m and "gainCumulativeMin" not in m
    want = expected_macros()
    assert m["gapMax"] == want["gapMax"] and m["gainCumulativeMax"] == want["gainCumulativeMax"]
    counts = COUNTS | {("none", "inference"): {2: COUNTS[("none", "inference")][2]}}  # nor at b = 8
    m = batch_size_summary.summarise(*inputs(counts), PUBLISHED, MOMENTUM, CONF, FAMILIES)["macros"]
    assert "gapMax" not in m and m["gapMin"] == want["gapMin"]
    # the published gain is claimed at 8 and 16; neither is in the grid with both normalisers
    assert m["seDiffPublishedSeedsList"] == "n/a (none of those batch sizes is in our grid)"
    assert m["publishedGainInSeList"] == "n/a"
    # the text says so in words, never "a standard error of n/a"
    assert m["publishedGainSeSentence"] == (
        "None of the batch sizes with a published gain is in our grid, so none can be set against our seed spread."
    )


def test_rows_evaluated_from_one_paired_row_and_from_none(result):
    cells, remedy_runs, _, _ = inputs()
    _, updates = batch_size_summary.tidy_runs(cells, remedy_runs)
    args = [result["runs"], result["summary_table"], updates, result["distance_summary"]]
    rest = [result["gains"], PUBLISHED, MOMENTUM, CONF, FAMILIES]
    one = batch_size_macros.macros(*args, result["paired"].iloc[:1], *rest)
    assert one["testRowsEvaluated"] == "8" and one["rowPoints"] == "12.50"
    none = batch_size_macros.macros(*args, result["paired"].iloc[:0], *rest)
    assert none["testRowsEvaluated"] == "n/a" and "rowPoints" not in none


def test_the_largest_published_gap_of_no_normaliser_is_named_in_words():
    cells, remedy_runs, distances, correct = inputs()
    published = PUBLISHED | {"none": {2: 0.10, 8: 0.70, 16: 0.97}}  # ours 23/24 at b = 2
    m = batch_size_summary.summarise(cells, remedy_runs, distances, correct, published, MOMENTUM, CONF, FAMILIES)
    m = m["macros"]
    assert m["pubGapLargestWhere"] == "no normaliser at batch 2" and m["pubGapLargestSign"] == "above"
    assert m["pubGapLargest"] == pts(23 / 24 - 0.10)


# ---- tables --------------------------------------------------------------------------------


def test_tables_by_value(result):
    cells = expected_cells()

    def ours(norm, b, mode):
        c = cells.get((norm, b, mode))
        return "--" if c is None else f"{c[0]:.3f} $\\pm$ {c[1]:.3f}"

    t = result["tables"]
    header, rows, align, _ = t["table"]
    assert header == ["batch", "none", "publ.", "batch norm", "publ.", "BN, training mode", "publ."]
    assert align == "rllllll"
    assert rows == [
        [
            str(b),
            ours("none", b, "inference"),
            f"{PUBLISHED['none'][b]:.3f}",
            ours("batchnorm", b, "inference"),
            f"{PUBLISHED['batchnorm'][b]:.3f}",
            ours("batchnorm", b, "training"),
            f"{PUBLISHED['batchnorm_training_mode'][b]:.3f}",
        ]
        for b in SIZES
    ]
    header, rows, align, _ = t["remedies_table"]
    assert header == ["batch", "EMA (trained)", "debiased EMA", "cumulative", "PreciseBN", "exact", "none"]
    assert align == "rllllll"
    assert rows == [
        [str(b)] + [ours("batchnorm", b, m) for m in ("inference", *REMEDY_MODES)] + [ours("none", b, "inference")]
        for b in SIZES
    ]
    header, rows, align, _ = t["distance_table"]
    assert header == ["batch", "layer", "EMA (trained)", "debiased EMA", "cumulative", "PreciseBN"]
    assert align == "rrllll"
    want = []
    for b in SIZES:
        for layer in (1, 2):
            row = [str(b) if layer == 1 else "", str(layer)]
            for name in ("ema", "debiased_ema", "cumulative", "precise_bn"):
                mean = np.mean([distance(name, b, s, layer, "mean") for s in SEEDS])
                var = np.mean([distance(name, b, s, layer, "var") for s in SEEDS])
                row.append(f"{mean:.3f} / {var:.3f}")
            want.append(row)
    assert rows == want
    header, rows, align, _ = t["gain_table"]
    assert header == [
        "comparison",
        "batch",
        "gain",
        "adjusted 95\\% interval",
        "$d_z$",
        "seeds $+$ / $-$",
        "won / lost",
        "McNemar",
        "publ.",
    ]
    assert align == "lrrlrllll"
    gains = expected_gains()
    order = [name for name, _, _ in paired.COMPARISONS]
    want = []
    for name, b in sorted(gains, key=lambda k: (order.index(k[0]), k[1])):
        e = gains[(name, b)]
        pub = "--"
        if name == "batchnorm_vs_none":
            pub = f"${100 * (PUBLISHED['batchnorm'][b] - PUBLISHED['none'][b]):+.1f}$"
        first = not want or want[-1][-1] != name
        want.append(
            [
                paired.LABELS[name] if first else "",
                str(b),
                f"${spts(e['gain'])}$",
                msci(e["ci_low_adj"], e["ci_high_adj"]),
                "--" if np.isnan(e["dz"]) else f"${e['dz']:+.2f}$",
                f"{e['ahead']} / {e['behind']} of {len(SEEDS)}",
                f"{e['a_only']} / {e['b_only']}",
                f"{e['better']} / {e['worse']}",
                pub,
                name,
            ]
        )
    assert rows == [w[:-1] for w in want]


def test_table_cells_missing_from_the_grid_are_dashes():
    cells, remedy_runs, distances, correct = inputs()
    published = PUBLISHED | {"none": {8: 0.7}, "batchnorm_training_mode": {2: 0.9}}
    distances = distances[distances.statistics != "cumulative"]
    cells = [c for c in cells if not (c["normaliser"] == "batchnorm").all() or (c["mode"] != "training").all()]
    t = batch_size_summary.summarise(cells, [], distances, correct, published, MOMENTUM, CONF, FAMILIES)["tables"]
    rows = t["table"][1]
    assert rows[0][2] == "--" and rows[1][6] == "--"  # no published none at 2, no training mode at 8
    assert rows[0][5] == "--" and rows[1][5] == "--"  # no batch-norm training-mode cell in the grid
    assert rows[1][2] == "0.700" and rows[0][6] == "0.900"
    assert all(r[4] == "--" for r in t["distance_table"][1]) and all(r[2] != "--" for r in t["distance_table"][1])
    pub, label = [], None
    for r in t["gain_table"][1]:
        label = r[0] or label
        pub.append((label, r[1], r[-1]))
    assert pub == [
        (paired.LABELS["batchnorm_vs_none"], "2", "--"),  # no published none at 2
        (paired.LABELS["batchnorm_vs_none"], "8", "$+20.0$"),
        (paired.LABELS["batchrenorm_vs_batchnorm"], "2", "--"),
        (paired.LABELS["batchrenorm_vs_batchnorm"], "8", "--"),
        (paired.LABELS["batchnorm_keep_vs_drop"], "8", "--"),
        (paired.LABELS["none_keep_vs_drop"], "8", "--"),
    ]


# ---- the helpers ---------------------------------------------------------------------------


def test_interval_by_hand():
    assert batch_size_summary.interval(0.1, 0.25) == "[0.100, 0.250]"
    assert batch_size_summary.interval(0.1, 0.25, 1) == "[0.1, 0.2]"  # 0.25 rounds to even


def test_kept_by_hand():
    t = pd.DataFrame({"mode": ["inference", "training"], "x": [1, 2]})
    assert batch_size_summary.kept(t)["mode"].tolist() == ["inference_keep", "training_keep"]
    assert t["mode"].tolist() == ["inference", "training"]  # not in place


def test_standard_error_of_difference_by_hand():
    assert batch_size_summary.standard_error_of_difference(0.3, 0.4, 4) == pytest.approx(0.25, abs=1e-15)
    assert batch_size_summary.standard_error_of_difference(0.0, 0.6, 9) == pytest.approx(0.2, abs=1e-15)


def test_published_gaps_by_hand():
    Cell = type("Cell", (), {})
    c = Cell()
    c.mean, c.sd = 0.9, 0.05
    z = Cell()
    z.mean, z.sd = 0.8, 0.0
    cell = {("none", 2, "inference"): c, ("batchnorm", 2, "training"): z}
    published = {"none": {2: 0.8, 4: 0.7}, "batchnorm": {2: 0.5}, "batchnorm_training_mode": {"2": 0.85}}
    gaps = batch_size_summary.published_gaps(cell, published)
    assert gaps.to_dict("records") == [
        {
            "normaliser": "none",
            "mode": "inference",
            "batch_size": 2,
            "ours": 0.9,
            "published": 0.8,
            "gap": pytest.approx(0.1, abs=1e-15),
            "sd": 0.05,
            "gap_in_sd": pytest.approx(2.0, abs=1e-12),
        },
        {
            "normaliser": "batchnorm",
            "mode": "training",
            "batch_size": 2,
            "ours": 0.8,
            "published": 0.85,
            "gap": pytest.approx(-0.05, abs=1e-15),
            "sd": 0.0,
            "gap_in_sd": float("inf"),
        },
    ]


# ---- evaluation's seed statistics: property-based against SciPy ----------------------------

# accuracies are shares of the 899 test rows (a float variance near 1e-300 would underflow Welch's df)
accuracy_values = st.lists(st.integers(0, 899).map(lambda k: k / 899), min_size=2, max_size=8)


@settings(max_examples=60, deadline=None)
@given(accuracy_values, accuracy_values, st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_gain_interval_is_scipys_welch_interval(a, b, confidence):
    diff, lo, hi = evaluation.gain_interval(a, b, confidence)
    assert diff == pytest.approx(np.mean(a) - np.mean(b), abs=1e-12)
    if np.std(a) == 0 and np.std(b) == 0:
        return
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    if va + vb < 1e-20:
        return
    ci = sps.ttest_ind(a, b, equal_var=False).confidence_interval(confidence)
    assert (lo, hi) == pytest.approx((ci.low, ci.high), abs=1e-9, rel=1e-9)


def test_gain_interval_default_confidence_and_refusals():
    a, b = [0.9, 0.8, 0.85], [0.7, 0.75, 0.6, 0.65]
    ci = sps.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert evaluation.gain_interval(a, b)[1:] == pytest.approx((ci.low, ci.high), abs=1e-12)
    diff, lo, hi = evaluation.gain_interval([0.9, 0.8], [0.7])
    assert diff == pytest.approx(0.15) and math.isnan(lo) and math.isnan(hi)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=2, max_size=8),
    st.sampled_from([0.8, 0.9, 0.95]),
)
def test_paired_interval_is_scipys_paired_t_interval(pairs, confidence):
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    r = pairing.paired_interval(a, b, confidence)
    d = np.subtract(a, b)
    assert r["seeds"] == len(pairs)
    assert r["gain"] == pytest.approx(d.mean(), abs=1e-12)
    assert r["sd"] == pytest.approx(d.std(ddof=1), abs=1e-12)
    if d.std(ddof=1) > 1e-9:
        lo, hi = sps.t.interval(confidence, len(d) - 1, loc=d.mean(), scale=sps.sem(d))
        # a difference of two shares lies in [-1, 1]: the interval is clipped to that range
        assert (r["ci_low"], r["ci_high"]) == pytest.approx((max(lo, -1), min(hi, 1)), abs=1e-9, rel=1e-9)


def test_paired_interval_is_clipped_to_the_range_of_a_difference_of_shares():
    # two seeds: differences +0.5 and -0.3, mean 0.1, sd 0.5657, t(0.975, 1) = 12.706: 0.1 -+ 5.08
    r = pairing.paired_interval([0.9, 0.2], [0.4, 0.5], 0.95)
    lo, hi = sps.t.interval(0.95, 1, loc=0.1, scale=sps.sem([0.5, -0.3]))
    assert lo < -1 and hi > 1  # what the t interval alone gives
    assert r["gain"] == pytest.approx(0.1, abs=1e-15) and (r["ci_low"], r["ci_high"]) == (-1.0, 1.0)
    # only the end past the range moves
    r = pairing.paired_interval([0.95, 0.9, 0.99], [0.05, 0.4, 0.02], 0.95)
    lo, hi = sps.t.interval(0.95, 2, loc=np.mean([0.9, 0.5, 0.97]), scale=sps.sem([0.9, 0.5, 0.97]))
    assert hi > 1 > lo > -1 and r["ci_high"] == 1.0 and r["ci_low"] == pytest.approx(lo, abs=1e-12)
    one = pairing.paired_interval([0.9], [0.4], 0.95)  # one seed: no spread, no interval
    assert math.isnan(one["ci_low"]) and math.isnan(one["ci_high"])


def test_paired_interval_refuses_unpaired_or_empty_sides():
    with pytest.raises(ValueError, match="as many values on both sides, got 2 and 1"):
        pairing.paired_interval([0.1, 0.2], [0.1], 0.95)
    with pytest.raises(ValueError):
        pairing.paired_interval([], [], 0.95)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=30))
def test_mcnemar_counts_and_p_are_binomtests(rows):
    a, b = [r[0] for r in rows], [r[1] for r in rows]
    a_only, b_only, p = pairing.mcnemar(a, b)
    assert a_only == sum(x and not y for x, y in rows) and b_only == sum(y and not x for x, y in rows)
    n = a_only + b_only
    assert p == (1.0 if n == 0 else pytest.approx(sps.binomtest(a_only, n, 0.5).pvalue, abs=1e-15))


def test_mcnemar_refuses_rows_of_another_shape():
    with pytest.raises(ValueError, match="differ in shape"):
        pairing.mcnemar([1, 0, 1], [1, 0])


def test_per_seed_skips_seeds_missing_on_one_side():
    runs = pd.DataFrame(
        [
            {"normaliser": "batchnorm", "mode": "inference", "batch_size": 4, "seed": 0, "accuracy": 0.5},
            {"normaliser": "batchnorm", "mode": "inference", "batch_size": 4, "seed": 1, "accuracy": 1.0},
            {"normaliser": "none", "mode": "inference", "batch_size": 4, "seed": 1, "accuracy": 0.5},
        ]
    )
    correct = pd.DataFrame(
        [
            {"normaliser": n, "mode": "inference", "batch_size": 4, "seed": s, "row": i, "correct": c}
            for n, s, cs in (("batchnorm", 0, [1, 0]), ("batchnorm", 1, [1, 1]), ("none", 1, [0, 1]))
            for i, c in reversed(list(enumerate(cs)))  # rows out of order: paired by row number
        ]
    )
    out = paired.per_seed(runs, correct)
    assert out.to_dict("records") == [
        {
            "comparison": "batchnorm_vs_none",
            "batch_size": 4,
            "seed": 1,
            "accuracy_a": 1.0,
            "accuracy_b": 0.5,
            "rows": 2,
            "a_only": 1,
            "b_only": 0,
            "net_rows": 1,
            "mcnemar_p": 1.0,
        }
    ]
    empty = paired.per_seed(runs[runs.normaliser == "none"], correct)
    assert empty.empty and list(empty.columns) == list(out.columns)


def test_at_batches_by_hand():
    assert batch_size_summary.at_batches([]) == "at no batch size"
    assert batch_size_summary.at_batches(["2"]) == "at batch 2"
    assert batch_size_summary.at_batches(["2", "8"]) == "at batches 2 and 8"
    assert batch_size_summary.at_batches(["2", "4", "8"]) == "at batches 2, 4 and 8"


def test_published_gain_without_seed_spread_and_a_zero_width_interval_at_zero():
    # batch norm and none alike at b = 8, seed by seed: every paired difference 0, interval [0, 0]
    same = COUNTS[("none", "inference")][8]
    counts = COUNTS | {("batchnorm", "inference"): {2: [2, 4, 1], 8: list(same)}}
    m = batch_size_summary.summarise(*inputs(counts), PUBLISHED, MOMENTUM, CONF, FAMILIES)["macros"]
    assert m["pairedBatchnormVsNoneMaxCi"] == "\\text{(every seed alike)}"  # no "[0.00, 0.00]"
    assert m["gainComparedExcludingZero"] == "none"  # an interval touching zero does not exclude it
    assert m["gainsExcludingZero"] == "none"  # adjusted over b = 2 and 8, b = 2's no longer excludes zero
    # no spread in either cell at b = 8: the standard error of the difference is 0
    counts = COUNTS | {
        ("batchnorm", "inference"): {2: [2, 4, 1], 8: [8, 8, 8]},
        ("none", "inference"): {2: [8, 7, 8], 8: [5, 5, 5]},
    }
    m = batch_size_summary.summarise(*inputs(counts), PUBLISHED, MOMENTUM, CONF, FAMILIES)["macros"]
    assert m["publishedGainInSeList"] == "n/a such standard errors at batch 8"


def test_json_summary_records_each_family_it_forms(result):
    """One record per family, written out: each comparison of normalisers, renorm and remedies has the
    two batch sizes, each of last_batch one (the leftover rows kept at b = 8 only); Bonferroni puts
    each interval at 1 - 0.05 / m. The paper's check reads them against the declaration."""
    from bnstudy.paper import families as paper_families

    def record(m):
        return {"adjustment": "bonferroni", "members": m, "confidence": CONF, "level": 1 - 0.05 / m,
                "smallest_effect": MARGIN}  # fmt: skip

    records = result["summary"]["families"]
    assert records == {"normalisers": record(2), "renorm": record(2), "remedies": record(2), "last_batch": record(1)}
    assert records["last_batch"]["level"] == CONF  # one member: the unadjusted level
    formed = {name: "batch_size" for name in records}
    checked = paper_families.check(FAMILIES, formed, {"batch_size": result["summary"]})
    assert [f.name for f, _ in checked] == list(records)
    declared_otherwise = batch_size_families.section(normalisers={"adjustment": "unadjusted"})
    with pytest.raises(paper_families.FamilyMismatch, match="family normalisers: adjustment 'bonferroni' applied"):
        paper_families.check(declared_otherwise, formed, {"batch_size": result["summary"]})


def test_families_declared_without_adjustment_quote_the_unadjusted_intervals_and_say_so(result):
    """Declared without adjustment, every family's interval is the unadjusted one (the column the
    figure draws), recorded at the level ``confidence``, and no generated text calls an interval
    adjusted or Bonferroni's: the sentences say unadjusted, and the verdicts follow the narrower
    intervals (batch norm minus none now lies below zero at b = 2, test_the_data_reach_every_branch)."""
    out = batch_size_summary.summarise(*inputs(), PUBLISHED, MOMENTUM, CONF, batch_size_families.UNADJUSTED)
    gains = out["gains"]
    assert (gains.ci_low_adj == gains.ci_low).all() and (gains.ci_high_adj == gains.ci_high).all()
    assert {r["level"] for r in out["summary"]["families"].values()} == {CONF}
    assert {r["adjustment"] for r in out["summary"]["families"].values()} == {"unadjusted"}
    m = out["macros"]
    for name, text in m.items():
        assert not re.search(r"(?<!un)adjusted|Bonferroni", text), name
    assert m["pairedBatchnormVsNoneBelowSizes"] == "at batch 2"  # adjusted: at no batch size
    assert m["pairedBatchnormVsNoneSignSentence"] == (
        "the unadjusted paired intervals lie wholly below zero at batch 2, and wholly above zero at batch 8"
    )
    assert m["recoverySentence"].startswith("Exact statistics of the training data in place of the running averages")
    assert m["recoverySentence"].count("unadjusted") == 1 and "(adjusted" not in m["recoverySentence"]
    assert m["renormSentence"].count("unadjusted") == 2
    header, _, _, comment = out["tables"]["gain_table"]
    assert header[3] == "unadjusted 95\\% interval"
    assert comment.startswith("Paired differences in inference-mode accuracy, points, with unadjusted intervals")
    # the numbers that do not depend on the adjustment are those of the adjusted build
    same = [k for k in result["macros"] if k.startswith(("acc", "sd", "gap", "pub", "mean", "var"))]
    assert len(same) > 40 and {k: m[k] for k in same} == {k: result["macros"][k] for k in same}


def test_families_adjusted_differently_tag_each_comparison_in_the_gains_table():
    """With the family normalisers unadjusted and the others Bonferroni-adjusted, the header names no
    adjustment and each comparison's label carries its family's."""
    mixed = batch_size_families.section(normalisers={"adjustment": "unadjusted"})
    out = batch_size_summary.summarise(*inputs(), PUBLISHED, MOMENTUM, CONF, mixed)
    header, rows, _, comment = out["tables"]["gain_table"]
    assert header[3] == "95\\% interval"
    labels = [r[0] for r in rows if r[0]]
    assert labels == [f"{paired.LABELS[name]} ({'unadjusted' if name == 'batchnorm_vs_none' else 'adjusted'})"
                      for name, _, _ in paired.COMPARISONS]  # fmt: skip
    assert "adjusted or not as each family is declared" in comment
    gains = out["gains"].set_index(["comparison", "batch_size"])
    assert gains.loc[("batchnorm_vs_none", 2), "ci_low_adj"] == gains.loc[("batchnorm_vs_none", 2), "ci_low"]
    assert gains.loc[("exact_vs_ema", 2), "ci_low_adj"] < gains.loc[("exact_vs_ema", 2), "ci_low"]
    assert out["macros"]["pairedBatchnormVsNoneSignSentence"].startswith("the unadjusted paired intervals")
    assert out["macros"]["pairedExactVsEmaSignSentence"].startswith("the adjusted paired intervals")


def test_a_family_whose_comparisons_differ_in_their_batch_sizes_is_refused(result):
    gains = result["gains"]
    uneven = gains[~((gains.comparison == "exact_vs_ema") & (gains.batch_size == 8))]
    assert paired.members(gains) == {"normalisers": 2, "renorm": 2, "remedies": 2, "last_batch": 1}
    with pytest.raises(ValueError, match="family remedies: its comparisons have 2 and 1 batch sizes"):
        paired.members(uneven)


def test_table_comments():
    t = batch_size_summary.summarise(*inputs(), PUBLISHED, MOMENTUM, CONF, FAMILIES)["tables"]
    assert {k: v[3] for k, v in t.items()} == {
        "table": "Study 2: ours (mean $\\pm$ sd over seeds) beside the published values",
        "remedies_table": "Batch norm's inference-mode accuracy under each set of running statistics",
        "distance_table": "Distance to the exact training-half statistics: mean shift / variance log-ratio (RMS)",
        "gain_table": "Paired differences in inference-mode accuracy, points, with Bonferroni-adjusted intervals; "
        "effect d_z; seeds ahead / behind; rows; McNemar seeds",
    }


def test_gain_interval_adds_both_sides_in_float64():
    a = np.full(3, 0.1, dtype=np.float32) + np.array([0, 1e-3, 2e-3], dtype=np.float32)
    b = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    want = evaluation.gain_interval(a.astype(np.float64), b.astype(np.float64))
    assert evaluation.gain_interval(a, b) == want
    assert evaluation.gain_interval(b, a) == (-want[0], -want[2], -want[1])


def test_the_largest_published_gap_in_a_cell_without_spread_has_no_standard_error():
    # batch norm in training mode at b = 2, the largest gap, now the same 1 row of 8 on every seed
    counts = COUNTS | {("batchnorm", "training"): {2: [1, 1, 1], 8: [7, 8, 6]}}
    m = batch_size_summary.summarise(*inputs(counts), PUBLISHED, MOMENTUM, CONF, FAMILIES)["macros"]
    assert m["pubGapLargestWhere"] == "batch normalisation, training mode at batch 2"
    assert m["pubGapLargestSd"] == "0.0" and m["pubGapLargestInSe"] == "n/a"


def test_a_published_size_outside_the_grid_listed_first_changes_nothing(result):
    published = {k: ({16: v[16]} | v if isinstance(v, dict) else v) for k, v in PUBLISHED.items()}
    assert [list(v)[0] for v in published.values() if isinstance(v, dict)] == [16, 16, 16]
    m = batch_size_summary.summarise(*inputs(), published, MOMENTUM, CONF, FAMILIES)["macros"]
    assert m == result["macros"]


def test_a_remedy_interval_of_exactly_zero_lies_neither_above_nor_below():
    # the cumulative average scores as the trained EMA at b = 2, seed by seed: its interval is [0, 0]
    counts = COUNTS | {("batchnorm", "cumulative"): {2: [2, 4, 1], 8: [7, 7, 6]}}
    m = batch_size_summary.summarise(*inputs(counts), PUBLISHED, MOMENTUM, CONF, FAMILIES)["macros"]
    assert m["pairedCumulativeVsEmaMinCi"] == "\\text{(every seed alike)}"  # no "[0.00, 0.00]"
    assert m["remedySignSentence"].startswith(
        "the paired intervals of the cumulative average lie wholly below zero at batch 8, "
        "and contain zero at the other batch size; "
    )


def test_gap_macros_where_batch_norm_is_ahead_at_the_smallest_batch():
    """Batch norm ahead of no normaliser at the smallest batch: no gap to close there, so the
    remedies' shares of it are ``n/a`` and ``gapAheadMin`` states batch norm minus none; at the
    largest batch, behind, the shares are computed and no ``gapAheadMax`` is written."""
    from types import SimpleNamespace

    def c(mean):
        return SimpleNamespace(mean=mean)

    cell = {
        ("batchnorm", 2, "inference"): c(0.93),
        ("none", 2, "inference"): c(0.90),
        ("batchrenorm", 2, "inference"): c(0.95),
        ("batchnorm", 64, "inference"): c(0.80),
        ("none", 64, "inference"): c(0.90),
        ("batchrenorm", 64, "inference"): c(0.85),
    }
    m = batch_size_macros.gap_closed_macros(cell, [2, 64])
    assert m["gapAheadMin"] == "+3.0" and "gapAheadMax" not in m and "gapAhead" not in m
    assert m["gapClosedBatchrenormMin"] == "n/a" and m["gapClosedBatchrenormMax"] == "50\\%"


def test_a_share_of_the_gap_sets_its_minus_as_a_minus_and_never_prints_a_nonzero_share_as_zero():
    """A remedy that widens batch norm's gap closes a negative share of it: the text reads
    ``($-$4\\% of the gap)`` (a minus), never ``(-4\\% of the gap)`` (a hyphen) or ``-0\\%``."""
    assert share_of_gap(0.16) == "16\\%"
    assert share_of_gap(1.0) == "100\\%"
    assert share_of_gap(-0.04) == "$-$4\\%"
    assert share_of_gap(-0.001) == "$-$0.1\\%"  # rounds to 0 at no decimals: one more shows its sign
    assert share_of_gap(0.0) == "0\\%"


def test_the_example_gap_is_said_once_where_it_is_also_the_largest():
    """The text states the largest gap to the published table, then batch norm's at the smallest
    batch as its example; where the two are one cell, ``pubGapLargestIsBatchnormMin`` is defined
    and the section skips the example (it said the same gap twice)."""
    from types import SimpleNamespace

    from bnstudy.studies.batch_size.published import published_gap_macros

    def cells(bn2):
        means = {("none", 2): 0.97, ("batchnorm", 2): bn2, ("none", 4): 0.97, ("batchnorm", 4): 0.95}
        return {(n, b, "inference"): SimpleNamespace(mean=v, sd=0.01) for (n, b), v in means.items()}

    published = {"none": {2: 0.97, 4: 0.97}, "batchnorm": {2: 0.86, 4: 0.96}, "batchnorm_training_mode": {}, "seeds": 3}
    largest = published_gap_macros(cells(0.84), published, 20, [2, 4])  # 2.0 points at b = 2, 1.0 at b = 4
    assert largest["pubGapLargestWhere"] == "batch normalisation at batch 2"
    assert largest["pubGapLargestIsBatchnormMin"] == ""
    other = published_gap_macros(cells(0.855), published, 20, [2, 4])  # 0.5 points at b = 2, 1.0 at b = 4
    assert other["pubGapLargestWhere"] == "batch normalisation at batch 4"
    assert "pubGapLargestIsBatchnormMin" not in other
    assert other["pubGapBatchnormMinPoints"] == "0.5"


@pytest.mark.parametrize("fewest, printed", [(280, "1.5\\times 10^{-13}"), (8580, "2.5\\times 10^{-393}")])
def test_the_initial_values_weight_is_printed_past_a_doubles_underflow(fewest, printed):
    """0.9 ** 8580 (the Fashion MLP's fewest updates) underflows a double to zero, which printed as
    "0.0 x 10^0"; the weight is taken in decimal arithmetic and prints its own digits, and the digits'
    1.5e-13 at 280 updates is what a double gives too."""
    from bnstudy.studies.batch_size.macros import ema_macros

    runs = pd.DataFrame(
        [
            {"mode": mode, "normaliser": "batchnorm", "batch_size": 2, "seed": 0, "accuracy": 0.9}
            for mode in ("debiased_ema", "inference")
        ]  # fmt: skip
    )
    m = ema_macros(runs, pd.DataFrame({"updates": [fewest, fewest + 10]}), 0.1)
    assert m["emaInitialWeightFewest"] == f"\\ensuremath{{{printed}}}"
    if fewest == 280:
        assert f"{0.9**280:.1e}" == "1.5e-13"
    else:
        assert 0.9**fewest == 0.0
