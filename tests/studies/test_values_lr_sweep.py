"""The learning-rate sweep's report by value: every macro, the JSON summary, both tables and the
data frames, against numbers computed here from small hand-made sweeps."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from bnstudy.evaluation.families import declared
from bnstudy.paper.latex import macro_name
from bnstudy.studies.lr_sweep import report as lr_sweep_report
from share_reference import logit_t_interval
from test_lr_sweep import ADJUSTMENTS, FAMILIES, declared_families

LABELS = {"none": "plain", "batchnorm": "batch norm"}
NOISE = {"none": [0.0, 0.02, 0.04], "batchnorm": [0.01, 0.02, 0.06]}  # test offsets of seeds 1, 4, 7
DESIGN = {"fit_rows": 12000.0, "validation_rows": 250.0, "epochs": 30.0, "grid_seeds": 5.0}

# (normaliser, batch size, rate): (validation accuracies of seeds 1, 4, 7; test base before NOISE)
SWEEP = {
    ("none", 2, 1e-3): ([0.80, 0.82, 0.87], 0.70),  # best, the lowest rate
    ("none", 2, 3e-3): ([0.78, 0.80, 0.79], 0.66),
    ("none", 2, 1e-2): ([0.70, 0.72, 0.71], 0.62),
    ("none", 2, 1e-1): ([0.40, 0.41, 0.42], 0.40),
    ("none", 4, 1e-3): ([0.70, 0.71, 0.75], 0.60),
    ("none", 4, 3e-3): ([0.76, 0.77, 0.81], 0.64),  # best: ties with 1e-2, the lower rate wins
    ("none", 4, 1e-2): ([0.76, 0.77, 0.81], 0.67),
    ("none", 4, 1e-1): ([0.50, 0.52, 0.51], 0.45),
    ("none", 16, 1e-3): ([0.60, 0.62, 0.61], 0.55),
    ("none", 16, 3e-3): ([0.64, 0.66, 0.65], 0.58),
    ("none", 16, 1e-2): ([0.70, 0.71, 0.75], 0.61),  # best, the highest rate of this cell (no 1e-1)
    ("batchnorm", 2, 1e-3): ([0.60, 0.61, 0.65], 0.50),
    ("batchnorm", 2, 3e-3): ([0.66, 0.67, 0.68], 0.55),
    ("batchnorm", 2, 1e-2): ([0.70, 0.69, 0.71], 0.57),
    ("batchnorm", 2, 1e-1): ([0.73, 0.74, 0.78], 0.63),  # best, the highest rate
    ("batchnorm", 4, 1e-3): ([0.80, 0.81, 0.79], 0.59),
    ("batchnorm", 4, 3e-3): ([0.83, 0.84, 0.82], 0.63),
    ("batchnorm", 4, 1e-2): (
        [0.90, 0.91, 0.95],
        0.64,
    ),  # best inside, by the widest margin; at 0.9 the grid pair at b 4 lies below zero
    ("batchnorm", 4, 1e-1): ([0.60, 0.60, 0.63], 0.52),
    ("batchnorm", 16, 1e-3): ([0.70, 0.72, 0.71], 0.62),
    ("batchnorm", 16, 3e-3): ([0.85, 0.86, 0.87], 0.69),  # best inside
    ("batchnorm", 16, 1e-2): ([0.80, 0.81, 0.79], 0.54),
    ("batchnorm", 16, 1e-1): ([0.55, 0.56, 0.57], 0.47),
}
# chosen by hand from the validation means above: (rate, edge)
CHOICE = {
    ("batchnorm", 2): (1e-1, "highest"),
    ("batchnorm", 4): (1e-2, "inside"),
    ("batchnorm", 16): (3e-3, "inside"),
    ("none", 2): (1e-3, "lowest"),
    ("none", 4): (3e-3, "inside"),
    ("none", 16): (1e-2, "highest"),
}


def runs_from(sweep, noise=NOISE, seeds=(1, 4, 7)):
    rows = []
    for (norm, b, lr), (val, base) in sweep.items():
        for seed, v, off in zip(seeds, val, noise[norm]):
            rows.append(
                {"normaliser": norm, "batch_size": b, "lr": lr, "seed": seed}
                | {"validation_accuracy": v, "test_accuracy": base + off, "final_loss": 0.25}
            )
    return pd.DataFrame(rows).sample(frac=1, random_state=3).reset_index(drop=True)


def t_interval(values, confidence):
    v = np.asarray(values, dtype=float)
    mean, sd = float(v.mean()), float(v.std(ddof=1))
    half = sps.t.ppf(1 - (1 - confidence) / 2, len(v) - 1) * sd / math.sqrt(len(v))
    return mean, sd, mean - half, mean + half


def pts(x, d=1):
    """A share in points; one that is neither 0 nor 1 never printed as 0 or 100 (more decimals)."""
    v = 100 * x
    while float(f"{v:.{d}f}") in (0.0, 100.0) and v not in (0.0, 100.0):
        d += 1
    return f"{v:.{d}f}"


def sgn(x, d=2):
    """Signed points; exact zero unsigned; a nonzero value never printed as zero (more decimals)."""
    v = 100 * x
    if v == 0:
        return f"{0:.{d}f}"
    while float(f"{v:.{d}f}") == 0:
        d += 1
    return f"{v:+.{d}f}"


def ten(x):
    mantissa, exponent = f"{x:.0e}".split("e")
    return f"${mantissa} \\times 10^{{{int(exponent)}}}$"


def conj(items):
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def at(sizes):
    if not sizes:
        return "at no batch size"
    return ("at batches " if len(sizes) > 1 else "at batch ") + conj(sizes)


def sign_sentence(above, below, total, tag="adjusted"):
    """Where the paired intervals lie (``tag``: as ``lr_gap`` is declared), written out for the cases
    these sweeps reach."""
    subject = f"the {tag} paired intervals"
    if not above and not below:
        return f"{subject} contain zero at every batch size"
    clauses = [
        f"wholly {w} zero " + ("at every batch size" if len(s) == total else at(s))
        for w, s in (("below", below), ("above", above))
        if s
    ]
    rest = total - len(above) - len(below)
    if rest:
        clauses.append("contain zero at " + ("the other batch size" if rest == 1 else f"the other {rest} batch sizes"))
    return f"{subject} lie " + (clauses[0] if len(clauses) == 1 else ", ".join(clauses[:-1]) + ", and " + clauses[-1])


def where(lo, hi):
    return "lies wholly below zero" if hi < 0 else "lies wholly above zero" if lo > 0 else "contains zero"


def scores_of(sweep, noise, norm, b, lr):
    _, base = sweep[(norm, b, lr)]
    return [base + off for off in noise[norm]]


def cell(sweep, noise, norm, b, lr, confidence):
    val, _ = sweep[(norm, b, lr)]
    mean, sd, lo, hi = logit_t_interval(scores_of(sweep, noise, norm, b, lr), confidence)
    return {"lr": lr, "seeds": 3, "validation_accuracy": float(np.mean(val))} | {
        "test_accuracy": mean,
        "test_sd": sd,
        "test_ci": [lo, hi],
    }


def paired(sweep, noise, b, lr_bn, lr_none, confidence, adjustment="bonferroni"):
    """The paired t interval, and the one the family ``lr_gap`` quotes: Bonferroni-adjusted over the
    sweep's batch sizes (its members), or as declared (``adjustment``) unadjusted."""
    d = np.subtract(scores_of(sweep, noise, "batchnorm", b, lr_bn), scores_of(sweep, noise, "none", b, lr_none))
    gain, sd, lo, hi = t_interval(d, confidence)
    family = len({k[1] for k in sweep})
    _, _, lo_adj, hi_adj = t_interval(d, 1 - (1 - confidence) / family if adjustment == "bonferroni" else confidence)
    return {"lr_batchnorm": lr_bn, "lr_none": lr_none, "seeds": 3, "gain": gain, "sd": sd, "ci": [lo, hi]} | {
        "family": family,
        "ci_adjusted": [lo_adj, hi_adj],
    }


def assert_same(actual, expected, path="out"):
    """Equal keys in the same order, ints as ints, strings exactly, floats to 1e-12, NaN as NaN."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), path
        assert list(actual) == list(expected), path
        for k in expected:
            assert_same(actual[k], expected[k], f"{path}[{k!r}]")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), path
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, f"{path}[{i}]")
    elif isinstance(expected, bool) or isinstance(expected, str):
        assert type(actual) is type(expected) and actual == expected, (path, actual, expected)
    elif isinstance(expected, int):
        assert type(actual) is int and actual == expected, (path, actual, expected)
    else:
        assert isinstance(actual, float) and not isinstance(actual, bool), (path, type(actual))
        if math.isnan(expected):
            assert math.isnan(actual), (path, actual)
        else:
            assert actual == pytest.approx(expected, rel=1e-12, abs=1e-12), (path, actual, expected)


def expected_report(sweep, noise, choice, grid_lr, confidence, labels, design, edge_margin, adjustment="bonferroni"):
    """The whole report, from ``choice`` (rate and edge per cell, read off by hand) and the data;
    ``adjustment``: the declaration of the family ``lr_gap``."""
    norms = sorted({k[0] for k in sweep})
    sizes = sorted({k[1] for k in sweep})
    lrs = sorted({k[2] for k in sweep})
    best = {k: cell(sweep, noise, *k, lr, confidence) for k, (lr, _) in choice.items()}
    grid = {(n, b): cell(sweep, noise, n, b, grid_lr, confidence) for n in norms for b in sizes}
    pb = {
        b: paired(sweep, noise, b, choice[("batchnorm", b)][0], choice[("none", b)][0], confidence, adjustment)
        for b in sizes
    }
    pg = {b: paired(sweep, noise, b, grid_lr, grid_lr, confidence, adjustment) for b in sizes}
    tag = "adjusted" if adjustment == "bonferroni" else "unadjusted"

    m = {
        "lrSweepRates": conj([ten(v) for v in lrs]),
        "lrSweepRateCount": str(len(lrs)),
        "lrSweepSeeds": "3",
        "lrSweepNetworks": str(3 * len(sweep)),
        "lrGridRate": ten(grid_lr),
        "lrRateLowest": ten(lrs[0]),
        "lrRateSecond": ten(lrs[1]),
        "lrFitRows": f"{int(design['fit_rows']):,}".replace(",", "{,}"),
        "lrValidationRows": f"{int(design['validation_rows']):,}".replace(",", "{,}"),
        "lrSweepEpochs": str(int(design["epochs"])),
        "lrGridSeeds": str(int(design["grid_seeds"])),
        "lrBatchMin": str(sizes[0]),
        "lrBatchMax": str(sizes[-1]),
        "lrBatchCount": str(len(sizes)),
    }
    for (n, b), c in sorted(best.items()):
        m[macro_name("lr best", n, "b", b)] = ten(c["lr"])
        m[macro_name("lr acc", n, "b", b)] = pts(c["test_accuracy"])  # the section prints its %
        m[macro_name("lr ci", n, "b", b)] = f"[{pts(c['test_ci'][0])}\\%, {pts(c['test_ci'][1])}\\%]"
    for n in ("none", "batchnorm"):
        for w, b in (("min", sizes[0]), ("max", sizes[-1])):
            for name, table in (("", best), ("grid", grid)):
                c = table[(n, b)]
                m[macro_name("lr acc", name, n, w)] = pts(c["test_accuracy"])
                m[macro_name("lr ci", name, n, w)] = f"[{pts(c['test_ci'][0])}\\%, {pts(c['test_ci'][1])}\\%]"
            m[macro_name("lr best", n, w)] = ten(choice[(n, b)][0])
    first = pb[sizes[0]]
    lo, hi = first["ci_adjusted"]  # the headline: adjusted over the batch sizes
    grid_lo, grid_hi = pg[sizes[0]]["ci_adjusted"]  # "no longer" only where the grid's rate told it from zero
    if pg[sizes[0]]["gain"] < 0:  # batch norm behind at the grid's rate: a deficit
        m["lrGapNoun"] = "deficit"
        survives, reversed_, told_at_grid = hi < 0, lo > 0, grid_hi < 0
    else:  # ahead (or level): an advantage, the same questions with the signs reversed
        m["lrGapNoun"] = "advantage"
        survives, reversed_, told_at_grid = lo > 0, hi < 0, grid_lo > 0
    if survives:
        m["lrDeficitAnswer"] = "survives"
    elif reversed_:
        m["lrDeficitAnswer"] = "does not survive"
    elif told_at_grid:
        m["lrDeficitAnswer"] = "can no longer be told from zero after"
    else:
        m["lrDeficitAnswer"] = "cannot be told from zero, at the grid's rate or after"
    m["lrFamily"] = str(len(sizes))
    for name, table in (("best", pb), ("grid", pg)):
        first = table[sizes[0]]
        lo, hi = first["ci_adjusted"]
        m[macro_name("lr paired", name, "min gain")] = sgn(first["gain"])
        m[macro_name("lr paired", name, "min ci")] = (
            "\\text{(every seed alike)}" if lo == hi else f"[{sgn(lo)}, {sgn(hi)}]"
        )
        m[macro_name("lr paired", name, "min verdict")] = where(lo, hi)
        below = [str(b) for b in sizes if table[b]["ci_adjusted"][1] < 0]
        above = [str(b) for b in sizes if table[b]["ci_adjusted"][0] > 0]
        m[macro_name("lr paired", name, "below sizes")] = at(below)
        m[macro_name("lr paired", name, "above sizes")] = at(above)
        m[macro_name("lr paired", name, "sign sentence")] = sign_sentence(above, below, len(sizes), tag)
    at_best, at_grid = pb[sizes[0]], pg[sizes[0]]
    said = f"${m['lrPairedBestMinGain']}$ points ${m['lrPairedBestMinCi']}$ at the chosen rates"
    if (at_best["gain"], *at_best["ci_adjusted"]) == (
        at_grid["gain"],
        *at_grid["ci_adjusted"],
    ):  # one number, said once
        m["lrPairedMinBoth"] = said + ", which at this batch size are the grid's"
    else:
        m["lrPairedMinBoth"] = (
            said + f" and ${m['lrPairedGridMinGain']}$ points ${m['lrPairedGridMinCi']}$ at \\lrGridRate{{}}"
        )
    one, other = m["lrPairedBestSignSentence"], m["lrPairedGridSignSentence"]
    m["lrSignSentences"] = (
        f"At the chosen rates and at \\lrGridRate{{}} alike, {one}"
        if one == other
        else f"At the chosen rates {one}; at \\lrGridRate{{}} {other}"
    )
    prose = {**labels, "none": "no normaliser"}  # "none at batch 4" would read as no cell
    edges = [f"{prose[n]} at batch {b} ({e})" for (n, b), (_, e) in sorted(choice.items()) if e != "inside"]
    m["lrEdgeCells"] = conj(edges) if edges else "no cell"
    m["lrEdgeMargin"] = pts(edge_margin, 2) if edges else "n/a"
    m["lrEdgeCount"] = str(len(edges))
    if edges:
        per_seed = edge_margin * int(design["validation_rows"])  # the margin in validation rows per seed
        total = f"{int(design['validation_rows']):,}".replace(",", "{,}")
        size = (
            f"less than one of the {total} validation rows per seed: a near tie"
            if per_seed < 1
            else f"about {round(per_seed):,} of the {total} validation rows per seed".replace(",", "{,}")
        )
        m["lrEdgeSentence"] = (
            f"Chosen rates at an end of the swept list: {conj(edges)}; there the chosen rate beats the next best "
            f"{'by' if len(edges) == 1 else 'by at most'} {pts(edge_margin, 2)} points of mean validation accuracy "
            f"({size}), and no rate beyond the swept list was tried"
        )
    else:
        m["lrEdgeSentence"] = "No cell's chosen rate lies at an end of the swept list"
    m["lrValidationRowPoints"] = pts(1 / int(design["validation_rows"]), 2)
    for n in ("none", "batchnorm"):
        lift = max(best[(n, b)]["validation_accuracy"] - grid[(n, b)]["validation_accuracy"] for b in sizes)
        m[macro_name("lr validation lift", n)] = pts(lift, 2)
        rows = lift * int(design["validation_rows"])  # the lift in rows of the validation split
        m[macro_name("lr validation lift", n, "rows")] = (
            "a fraction of a validation row per seed: its rates are hard to tell apart, and which one is chosen "
            "is close to chance"
            if rows < 1
            else f"about {round(rows):,} of the {int(design['validation_rows']):,} validation rows".replace(",", "{,}")
        )
        below = sum(best[(n, b)]["test_accuracy"] < grid[(n, b)]["test_accuracy"] for b in sizes)
        m[macro_name("lr below grid", n)] = str(below or "none")  # a count of zero in words
        for name, table in (("best", best), ("grid", grid)):
            means = [table[(n, b)]["test_accuracy"] for b in sizes]
            m[macro_name("lr range", n, name)] = pts(max(means) - min(means))

    summary = {
        "grid_lr": grid_lr,
        "lrs": lrs,
        "seeds": [1, 4, 7],
        "confidence": confidence,
        "design": {k: int(v) for k, v in design.items()},
        "best": {n: {str(b): best[(n, b)] | {"edge": choice[(n, b)][1]} for b in sizes} for n in norms},
        "at_grid_lr": {n: {str(b): grid[(n, b)] for b in sizes} for n in norms},
        "batchnorm_minus_none": {
            "at_best_rates": {str(b): pb[b] for b in sizes},
            "at_grid_lr": {str(b): pg[b] for b in sizes},
        },
        "validation_accuracy": {
            n: {
                str(b): {repr(lr): float(np.mean(sweep[(n, b, lr)][0])) for lr in lrs if (n, b, lr) in sweep}
                for b in sizes
            }
            for n in norms
        },
        "families": {
            "lr_gap": {"adjustment": adjustment, "members": len(sizes), "confidence": confidence}
            | {"level": 1 - (1 - confidence) / len(sizes) if adjustment == "bonferroni" else confidence}
            | {"smallest_effect": 0.01}
        },
    }

    rows = []
    for b in sizes:
        row = [str(b)]
        for n in ("none", "batchnorm"):
            c = best[(n, b)]
            row += [ten(c["lr"]), f"{pts(c['test_accuracy'])} $\\pm$ {pts(c['test_sd'])}"]
        for table in (pb, pg):
            p = table[b]
            lo, hi = p["ci_adjusted"]  # the table quotes the family lr_gap's interval, as the text does
            ci = "\\text{(every seed alike)}" if lo == hi else f"[{sgn(lo)}, {sgn(hi)}]"
            row.append(f"${sgn(p['gain'])}$ ${ci}$")
        rows.append(row)
    header = ["batch", "none: rate", "accuracy", "BN: rate", "accuracy", "BN $-$ none", "at the grid's rate"]
    table = (header, rows, "rllllll", "learning rate chosen on the validation split, per cell")

    vrows = []
    for n in ("none", "batchnorm"):
        for b in sizes:
            cells = []
            for lr in lrs:
                text = pts(np.mean(sweep[(n, b, lr)][0])) if (n, b, lr) in sweep else "--"
                cells.append(f"\\textbf{{{text}}}" if lr == choice[(n, b)][0] else text)
            vrows.append([labels[n], str(b)] + cells)
    vheader = ["normaliser", "batch"] + [ten(v) for v in lrs]
    vtable = (vheader, vrows, "lr" + "r" * len(lrs), "mean validation accuracy by learning rate")
    return m, summary, table, vtable, best, grid, pb, pg


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
def test_every_macro_summary_entry_and_table_row_of_the_sweep_report(adjustment):
    confidence = 0.9
    out = lr_sweep_report.report(runs_from(SWEEP), 1e-2, confidence, LABELS, DESIGN, declared_families(adjustment))
    margin = float(np.mean([0.70, 0.71, 0.75]) - 0.65)
    m, summary, table, vtable, *_ = expected_report(
        SWEEP, NOISE, CHOICE, 1e-2, confidence, LABELS, DESIGN, margin, adjustment
    )
    assert set(out) == {"rates", "best", "paired", "summary", "macros", "tables"}
    assert out["macros"] == m
    assert list(out["macros"]) == list(m)
    assert_same(out["summary"], summary)
    assert list(out["tables"]) == ["table", "validation_table"]
    assert out["tables"]["table"] == table
    assert out["tables"]["validation_table"] == vtable


def test_hand_read_macros_of_the_sweep_report():
    """A few macros written out in full, so that the reference above is itself checked."""
    m = lr_sweep_report.report(runs_from(SWEEP), 1e-2, 0.9, LABELS, DESIGN, FAMILIES)["macros"]
    assert m["lrSweepRates"] == (
        "$1 \\times 10^{-3}$, $3 \\times 10^{-3}$, $1 \\times 10^{-2}$ and $1 \\times 10^{-1}$"
    )
    assert m["lrSweepNetworks"] == "69" and m["lrFitRows"] == "12{,}000" and m["lrValidationRows"] == "250"
    assert m["lrRateSecond"] == "$3 \\times 10^{-3}$" and m["lrBatchMax"] == "16" and m["lrBatchCount"] == "3"
    assert (
        m["lrEdgeCells"]
        == "batch norm at batch 2 (highest), no normaliser at batch 2 (lowest) and no normaliser at batch 16 (highest)"
    )
    assert m["lrEdgeMargin"] == "7.00" and m["lrEdgeCount"] == "3" and m["lrValidationRowPoints"] == "0.40"
    assert m["lrDeficitAnswer"] == "survives"
    assert m["lrPairedBestMinGain"] == "-6.00" and m["lrPairedGridMinGain"] == "-4.00"
    assert m["lrPairedBestBelowSizes"] == "at batch 2" and m["lrPairedBestAboveSizes"] == "at batch 16"
    # adjusted over the 3 batch sizes; unadjusted the grid pair at b = 4 lies below zero, adjusted it holds zero
    assert m["lrPairedGridBelowSizes"] == "at batches 2 and 16" and m["lrPairedGridAboveSizes"] == "at no batch size"
    assert m["lrFamily"] == "3"
    assert m["lrPairedGridSignSentence"] == (
        "the adjusted paired intervals lie wholly below zero at batches 2 and 16, "
        "and contain zero at the other batch size"
    )
    assert m["lrPairedBestSignSentence"] == (
        "the adjusted paired intervals lie wholly below zero at batch 2, wholly above zero at batch 16, "
        "and contain zero at the other batch size"
    )
    # batch 2 at the chosen rates: differences -6, -7, -5 points (sd 1); the t quantile with 2 degrees of
    # freedom in closed form, (2p - 1) sqrt(2 / (4 p (1 - p))), at p = 1 - 0.1 / 3 / 2
    p = 1 - 0.1 / 3 / 2
    half = (2 * p - 1) * math.sqrt(2 / (4 * p * (1 - p))) * 1 / math.sqrt(3)
    assert m["lrPairedBestMinCi"] == f"[{-6 - half:+.2f}, {-6 + half:+.2f}]" == "[-9.08, -2.92]"
    assert m["lrPairedBestMinVerdict"] == "lies wholly below zero"
    assert m["lrValidationLiftNone"] == "12.00" and m["lrValidationLiftBatchnorm"] == "6.00"
    assert m["lrBelowGridNone"] == "1" and m["lrBelowGridBatchnorm"] == "none"
    assert m["lrRangeNoneBest"] == "9.0" and m["lrRangeNoneGrid"] == "6.0"
    assert m["lrRangeBatchnormBest"] == "6.0" and m["lrRangeBatchnormGrid"] == "10.0"
    assert m["lrBestNoneBOneSix"] == "$1 \\times 10^{-2}$" and m["lrAccNoneBTwo"] == "72.0"
    assert m["lrBestBatchnormMax"] == "$3 \\times 10^{-3}$" and m["lrAccGridBatchnormMax"] == "57.0"


def test_report_data_frames_hold_every_rate_the_chosen_ones_and_both_pairings():
    confidence = 0.9
    out = lr_sweep_report.report(runs_from(SWEEP), 1e-2, confidence, LABELS, DESIGN, FAMILIES)
    *_, best, grid, pb, pg = expected_report(SWEEP, NOISE, CHOICE, 1e-2, confidence, LABELS, DESIGN, 0.07)
    rates = out["rates"]
    assert list(rates.columns) == [
        "normaliser", "batch_size", "lr", "seeds", "validation_mean", "validation_sd",
        "test_mean", "test_sd", "test_ci_low", "test_ci_high",
    ]  # fmt: skip
    keys = sorted(SWEEP)
    assert list(zip(rates.normaliser, rates.batch_size, rates.lr)) == keys
    for row, k in zip(rates.itertuples(), keys):
        val, _ = SWEEP[k]
        want = cell(SWEEP, NOISE, *k, confidence)
        got = [row.validation_mean, row.validation_sd, row.test_mean, row.test_sd, row.test_ci_low, row.test_ci_high]
        assert got == pytest.approx(
            [np.mean(val), np.std(val, ddof=1), want["test_accuracy"], want["test_sd"]] + want["test_ci"], abs=1e-12
        )
        assert row.seeds == 3
    b = out["best"]
    assert list(b.columns) == [
        "normaliser", "batch_size", "lr", "edge", "margin", "validation_mean",
        "test_mean", "test_sd", "test_ci_low", "test_ci_high", "seeds",
    ]  # fmt: skip
    assert list(zip(b.normaliser, b.batch_size, b.lr, b.edge)) == [k + v for k, v in sorted(CHOICE.items())]
    margins = {("batchnorm", 2): 0.05, ("batchnorm", 4): 0.09, ("batchnorm", 16): 0.06}
    margins |= {("none", 2): 0.04, ("none", 4): 0.0, ("none", 16): 0.07}
    assert b.margin.tolist() == pytest.approx([margins[k] for k in sorted(CHOICE)], abs=1e-12)
    for row in b.itertuples():
        c = best[(row.normaliser, row.batch_size)]
        got = [row.validation_mean, row.test_mean, row.test_sd, row.test_ci_low, row.test_ci_high]
        assert got == pytest.approx(
            [c["validation_accuracy"], c["test_accuracy"], c["test_sd"]] + c["test_ci"], abs=1e-12
        )
        assert row.seeds == 3
    p = out["paired"]
    assert list(p.columns) == [
        "batch_size", "lr_a", "lr_b", "seeds", "gain", "sd", "ci_low", "ci_high",
        "family", "ci_low_adj", "ci_high_adj", "rates",
    ]  # fmt: skip
    assert p.index.tolist() == list(range(6))
    assert p.rates.tolist() == ["best"] * 3 + ["grid"] * 3 and p.batch_size.tolist() == [2, 4, 16] * 2
    want = [pb[s] for s in (2, 4, 16)] + [pg[s] for s in (2, 4, 16)]
    for row, w in zip(p.itertuples(), want):
        assert (row.lr_a, row.lr_b, row.seeds) == (w["lr_batchnorm"], w["lr_none"], 3)
        assert [row.gain, row.sd, row.ci_low, row.ci_high] == pytest.approx([w["gain"], w["sd"]] + w["ci"], abs=1e-12)
        assert row.family == 3 and [row.ci_low_adj, row.ci_high_adj] == pytest.approx(w["ci_adjusted"], abs=1e-12)
        assert row.ci_low_adj < row.ci_low and row.ci_high < row.ci_high_adj  # the adjusted interval is wider


# One batch size, three rates, every cell's best rate inside (the grid's): no edge cell.
INSIDE = {
    ("none", 8, 3e-4): ([0.60, 0.61, 0.62], 0.30),
    ("none", 8, 1e-3): ([0.70, 0.72, 0.74], 0.50),
    ("none", 8, 3e-3): ([0.65, 0.66, 0.67], 0.40),
    ("batchnorm", 8, 3e-4): ([0.50, 0.52, 0.51], 0.35),
    ("batchnorm", 8, 1e-3): ([0.80, 0.79, 0.81], 0.50),
    ("batchnorm", 8, 3e-3): ([0.75, 0.74, 0.76], 0.45),
}
INSIDE_CHOICE = {("batchnorm", 8): (1e-3, "inside"), ("none", 8): (1e-3, "inside")}
SMALL_DESIGN = {"fit_rows": 1234.0, "validation_rows": 3.0, "epochs": 2.0, "grid_seeds": 9.0}


@pytest.mark.parametrize(
    "noise, answer, verdict_words",
    [
        # chosen rate = the grid's: neither interval tells the deficit from zero, so never "no longer"
        # the same test accuracy on every seed: every difference exactly zero, interval [0, 0]
        (
            {"none": [0.0, 0.02, 0.04], "batchnorm": [0.0, 0.02, 0.04]},
            "cannot be told from zero, at the grid's rate or after",
            "contains zero",
        ),
        # batch norm behind on average, the interval across zero
        (
            {"none": [0.0, 0.02, 0.04], "batchnorm": [0.03, -0.02, 0.02]},
            "cannot be told from zero, at the grid's rate or after",
            "contains zero",
        ),
    ],
)
def test_report_with_one_batch_size_and_no_edge_cell_by_value(noise, answer, verdict_words):
    confidence = 0.8
    out = lr_sweep_report.report(runs_from(INSIDE, noise), 1e-3, confidence, LABELS, SMALL_DESIGN, FAMILIES)
    m, summary, table, vtable, *_ = expected_report(
        INSIDE, noise, INSIDE_CHOICE, 1e-3, confidence, LABELS, SMALL_DESIGN, float("nan")
    )
    assert out["macros"] == m and list(out["macros"]) == list(m)
    assert_same(out["summary"], summary)
    assert out["tables"]["table"] == table
    assert out["tables"]["validation_table"] == vtable
    assert m["lrDeficitAnswer"] == answer and m["lrPairedBestMinVerdict"] == verdict_words
    assert m["lrEdgeCells"] == "no cell" and m["lrEdgeMargin"] == "n/a" and m["lrEdgeCount"] == "0"
    assert m["lrBatchMin"] == m["lrBatchMax"] == "8" and m["lrBatchCount"] == "1"
    assert m["lrPairedBestBelowSizes"] == m["lrPairedBestAboveSizes"] == "at no batch size"
    assert m["lrBelowGridNone"] == m["lrBelowGridBatchnorm"] == "none"  # chosen and grid cells are the same
    assert m["lrValidationRowPoints"] == "33.33" and m["lrFitRows"] == "1{,}234"
    if noise["batchnorm"] == noise["none"]:
        assert (
            m["lrPairedBestMinGain"] == "0.00" and m["lrPairedBestMinCi"] == "\\text{(every seed alike)}"
        )  # exact zero, unsigned
    assert m["lrFamily"] == "1" and m["lrPairedBestSignSentence"] == (
        "the adjusted paired intervals contain zero at every batch size"
    )


def test_best_rates_margin_is_nan_for_one_rate_and_a_difference_for_two():
    rows = []
    for lr, val in ((1e-3, [0.4, 0.5, 0.9]), (1e-2, [0.5, 0.6, 0.5])):  # means 0.6 and 0.5333...
        for seed, v in zip((3, 1, 2), val):
            rows.append({"normaliser": "none", "batch_size": 4, "lr": lr, "seed": seed, "validation_accuracy": v})
            rows[-1]["test_accuracy"] = 0.1 * seed + lr
    rows.append({"normaliser": "none", "batch_size": 2, "lr": 1e-2, "seed": 1} | {"validation_accuracy": 0.7})
    rows[-1]["test_accuracy"] = 0.3
    rates = lr_sweep_report.rate_table(pd.DataFrame(rows), 0.95)
    best = lr_sweep_report.best_rates(rates.iloc[::-1])  # in any row order: sorted by cell
    assert best.batch_size.tolist() == [2, 4] and best.lr.tolist() == [1e-2, 1e-3]
    assert best.edge.tolist() == ["lowest", "lowest"]  # one rate: its own lowest
    assert math.isnan(best.margin[0]) and best.margin[1] == pytest.approx(0.6 - 1.6 / 3, abs=1e-12)
    assert best.seeds.tolist() == [1, 3] and best.validation_mean[1] == pytest.approx(0.6, abs=1e-12)
    # seeds 1, 2, 3 (sorted) at 1e-3: 0.101, 0.201, 0.301
    mean, sd, lo, hi = logit_t_interval([0.101, 0.201, 0.301], 0.95)
    assert [best.test_mean[1], best.test_sd[1], best.test_ci_low[1], best.test_ci_high[1]] == pytest.approx(
        [mean, sd, lo, hi], abs=1e-12
    )
    assert best.test_mean[0] == 0.3 and math.isnan(best.test_sd[0]) and math.isnan(best.test_ci_low[0])
    assert lr_sweep_report.best_lr(best, "none", 4) == 1e-3 and lr_sweep_report.best_lr(best, "none", 2) == 1e-2
    grid = lr_sweep_report.at_rate(rates, 1e-2)
    assert grid.batch_size.tolist() == [2, 4] and grid.index.tolist() == [0, 1]
    assert list(grid.columns) == list(rates.columns)
    assert grid.validation_mean.tolist() == pytest.approx([0.7, 1.6 / 3], abs=1e-12)


def test_paired_at_pairs_only_the_seeds_both_sides_share_at_each_sides_rate():
    rows = []
    for norm, lr, seeds, accs in (
        ("batchnorm", 1e-1, (5, 2, 9, 3), (0.9, 0.6, 0.8, 0.55)),  # seed 3 has no partner
        ("batchnorm", 1e-2, (5, 2, 9, 6), (0.1, 0.1, 0.1, 0.1)),
        ("none", 1e-2, (9, 6, 5, 2), (0.5, 0.3, 0.7, 0.4)),  # only none has seed 6
        ("none", 1e-1, (9, 5, 2), (0.2, 0.2, 0.2)),
    ):
        for s, a in zip(seeds, accs):
            rows.append({"normaliser": norm, "batch_size": 4, "lr": lr, "seed": s, "test_accuracy": a})
    runs = pd.DataFrame(rows)
    chosen = pd.DataFrame({"normaliser": ["none", "batchnorm"], "batch_size": [4, 4], "lr": [1e-2, 1e-1]})
    got = lr_sweep_report.paired_at(runs, chosen, "batchnorm", "none", 0.9, declared(FAMILIES, "lr_gap"))
    d = [0.6 - 0.4, 0.9 - 0.7, 0.8 - 0.5]  # seeds 2, 5, 9
    gain, sd, lo, hi = t_interval(d, 0.9)
    _, _, lo_adj, hi_adj = t_interval(d, 0.9)  # one batch size: a family of one, no adjustment
    assert list(got.columns) == [
        "batch_size", "lr_a", "lr_b", "seeds", "gain", "sd", "ci_low", "ci_high", "family", "ci_low_adj", "ci_high_adj",
    ]  # fmt: skip
    assert got.family.tolist() == [1] and [got.ci_low_adj[0], got.ci_high_adj[0]] == pytest.approx([lo_adj, hi_adj])
    assert got.batch_size.tolist() == [4] and got.lr_a.tolist() == [1e-1] and got.lr_b.tolist() == [1e-2]
    assert got.seeds.tolist() == [3]
    assert [got.gain[0], got.sd[0], got.ci_low[0], got.ci_high[0]] == pytest.approx([gain, sd, lo, hi], abs=1e-12)


def test_validation_table_orders_none_then_batch_norm_then_others_and_marks_missing_rates():
    sweep = {
        ("layernorm", 2, 1e-3): ([0.51, 0.52, 0.53], 0.5),
        ("groupnorm", 2, 1e-2): ([0.21, 0.22, 0.23], 0.5),
        ("groupnorm", 1, 1e-3): ([0.11, 0.12, 0.13], 0.5),
        ("none", 4, 1e-3): ([0.61, 0.62, 0.63], 0.5),
        ("none", 4, 1e-2): ([0.71, 0.72, 0.73], 0.5),
        ("none", 2, 1e-2): ([0.41, 0.42, 0.43], 0.5),
        ("batchnorm", 2, 1e-3): ([0.81, 0.82, 0.83], 0.5),
        ("batchnorm", 2, 1e-2): ([0.31, 0.32, 0.33], 0.5),
    }
    noise = {n: [0.0, 0.01, 0.03] for n in ("none", "batchnorm", "layernorm", "groupnorm")}
    labels = {"batchnorm": "BN", "layernorm": "LN", "none": "no norm", "groupnorm": "GN"}
    rates = lr_sweep_report.rate_table(runs_from(sweep, noise), 0.95)
    best = lr_sweep_report.best_rates(rates)
    # rows in any order: the others after batch norm, by batch size, then by name
    header, rows, align, comment = lr_sweep_report.validation_table(rates.iloc[::-1], best, labels)
    assert header == ["normaliser", "batch", "$1 \\times 10^{-3}$", "$1 \\times 10^{-2}$"]
    assert rows == [
        ["no norm", "2", "--", "\\textbf{42.0}"],
        ["no norm", "4", "62.0", "\\textbf{72.0}"],
        ["BN", "2", "\\textbf{82.0}", "32.0"],
        ["GN", "1", "\\textbf{12.0}", "--"],
        ["GN", "2", "--", "\\textbf{22.0}"],
        ["LN", "2", "\\textbf{52.0}", "--"],
    ]
    assert align == "lrrr" and comment == "mean validation accuracy by learning rate"


def test_best_table_rows_for_one_batch_size_by_value():
    best = pd.DataFrame(
        {"normaliser": ["batchnorm", "none"], "batch_size": [8, 8], "lr": [3e-4, 2e-2]}
        | {"test_mean": [0.8123, 0.7346], "test_sd": [0.0123, 0.0456]}
    )
    pb = pd.DataFrame({"batch_size": [8], "gain": [0.0778], "ci_low_adj": [-0.0123], "ci_high_adj": [0.1679]})
    pg = pd.DataFrame({"batch_size": [8], "gain": [-0.0456], "ci_low_adj": [-0.0789], "ci_high_adj": [-0.0123]})
    header, rows, align, comment = lr_sweep_report.best_table(best, pb, pg)
    assert header == ["batch", "none: rate", "accuracy", "BN: rate", "accuracy", "BN $-$ none", "at the grid's rate"]
    assert rows == [
        [
            "8",
            "$2 \\times 10^{-2}$",
            "73.5 $\\pm$ 4.6",
            "$3 \\times 10^{-4}$",
            "81.2 $\\pm$ 1.2",
            "$+7.78$ $[-1.23, +16.79]$",
            "$-4.56$ $[-7.89, -1.23]$",
        ]
    ]
    assert align == "rllllll" and comment == "learning rate chosen on the validation split, per cell"
