"""The accumulation study's summary by value (bnstudy.studies.accumulation.report): the long table, the
cells, the paired differences and the closeness rows against frames built here, the complete
JSON summary, the complete macro dict and every header, row and alignment of the LaTeX table,
all computed here from small hand-made accuracies (shares of 997 test rows) with Student-t
intervals written out, each paired interval at the level of its declared family (the headline
family and the other, each in either adjustment: accumulation_families), numbers printed with
f-strings written out here."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import accumulation_families as af
from bnstudy.studies.accumulation import report as ar
from bnstudy.studies.accumulation import sentences as accumulation_sentences
from bnstudy.studies.accumulation import table as at

ROWS = 997  # accuracies are counts of rows / ROWS: no value prints on a rounding tie
CONFIGS = ("large", "accumulate", "ghost", "small", "scaled")
MODES = ("inference", "recomputed", "training")
COMPARISONS = (
    ("accumulate_vs_large", "accumulate", "large"),
    ("accumulate_vs_small", "accumulate", "small"),
    ("ghost_vs_accumulate", "ghost", "accumulate"),
    ("accumulate_vs_scaled", "accumulate", "scaled"),
    ("scaled_vs_small", "scaled", "small"),
)
CLOSE_COLUMNS = (
    "first_relative",
    "first_bias",
    "first_running",
    "run_parameters",
    "run_biases",
    "run_running",
    "run_scale",
    "run_disagreement",
    "run_disagreement_max",
)


# ---- numbers written out here -------------------------------------------------------------


def _interval(values, confidence):
    """Mean, sd (ddof 1), Student-t interval of the mean."""
    v = np.asarray(values, dtype=float)
    n = len(v)
    mean = float(v.mean())
    sd = float(np.std(v, ddof=1))
    half = float(sps.t.ppf(1 - (1 - confidence) / 2, n - 1)) * sd / math.sqrt(n)
    return mean, sd, mean - half, mean + half


def _share_interval(values, confidence):
    """Mean, sd (ddof 1) and the Student-t interval of a share on the logit scale (delta method:
    the logit's standard error is se / (m (1 - m))), mapped back with scipy's expit."""
    from scipy.special import expit, logit

    mean, sd, lo, _ = _interval(values, confidence)
    half = (mean - lo) / (mean * (1 - mean))
    return mean, sd, float(expit(logit(mean) - half)), float(expit(logit(mean) + half))


def _p(x):  # points
    return f"{100 * x:.1f}"


def _s(x, d=2):  # signed points; exact zero unsigned; a nonzero value never printed as zero
    v = 100 * x
    if v == 0:
        return f"{0:.{d}f}"
    extra = 0
    while float(f"{v:.{d + extra}f}") == 0 and extra < 12:
        extra += 1
    if float(f"{v:.{d + extra}f}") == 0:  # past 12 more decimals: the order of magnitude
        mantissa, exponent = f"{v:+.0e}".split("e")
        return f"{mantissa}\\ensuremath{{\\times 10^{{{int(exponent)}}}}}"
    return f"{v:+.{d + extra}f}"


def _verdict(lo, hi):
    if hi < 0:
        return "lies wholly below zero"
    if lo > 0:
        return "lies wholly above zero"
    return "contains zero"


def _cap(text):
    return "".join(w[0].upper() + w[1:] for w in text.split())


def _thousands(n):
    return f"{n:,}".replace(",", "{,}")


def _same(actual, expected, where="summary"):
    """Equal structure, key order and types; floats to 1e-12."""
    if isinstance(expected, dict):
        assert type(actual) is dict, where
        assert list(actual) == list(expected), where
        for k in expected:
            _same(actual[k], expected[k], f"{where}[{k!r}]")
    elif isinstance(expected, list):
        assert type(actual) is list and len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected)):
            _same(a, e, f"{where}[{i}]")
    elif isinstance(expected, float):
        assert type(actual) is float, where
        assert actual == pytest.approx(expected, rel=1e-12, abs=1e-15), where
    else:
        assert type(actual) is type(expected) and actual == expected, where


# ---- inputs -------------------------------------------------------------------------------


def _frames(acc, grid_acc, diffs, rng_seed):
    """``acc[(m, variant, mode)] = {seed: count}`` for the study's runs (micro-batch and seed
    as floats, as a table read back may hold them), ``grid_acc[(b, mode)] = {seed: count}``;
    rows shuffled, an unused column on each side."""
    rng = np.random.default_rng(rng_seed)
    runs = [
        {"extra": "x", "variant": v, "micro_batch": float(m), "seed": float(s), "mode": mode, "accuracy": c / ROWS}
        for (m, v, mode), by_seed in acc.items()
        for s, c in by_seed.items()
    ]
    grid = [
        {"normaliser": "batchnorm", "batch_size": b, "seed": s, "mode": mode, "accuracy": c / ROWS, "extra": 1}
        for (b, mode), by_seed in grid_acc.items()
        for s, c in by_seed.items()
    ]
    runs, grid, diffs = pd.DataFrame(runs), pd.DataFrame(grid), pd.DataFrame(diffs)
    return (
        runs.iloc[rng.permutation(len(runs))].reset_index(drop=True),
        grid.iloc[rng.permutation(len(grid))].reset_index(drop=True),
        diffs.iloc[rng.permutation(len(diffs))].reset_index(drop=True),
    )


def _values(acc, grid_acc, batch, micro):
    """``{(m, config, mode): {seed: accuracy}}`` for every configuration."""
    out = {}
    for m in micro:
        for mode in MODES:
            out[(m, "large", mode)] = {s: c / ROWS for s, c in grid_acc[(batch, mode)].items()}
            for v in ("accumulate", "ghost", "scaled"):
                out[(m, v, mode)] = {s: c / ROWS for s, c in acc[(m, v, mode)].items()}
            out[(m, "small", mode)] = {s: c / ROWS for s, c in grid_acc[(m, mode)].items()}
    return out


def _diff(m, seed, after, parameters, biases, running, scale, disagreement):
    return {
        "micro_batch": m,
        "seed": seed,
        "after": after,
        "parameters": parameters,
        "pre_norm_biases": biases,
        "running": running,
        "scale": scale,
        "label_disagreement": disagreement,
    }


# Two micro-batches (3 and 5, given unsorted), three seeds, batch 24, confidence 0.9.
SEEDS = (2, 5, 9)
LARGE = {"inference": (900, 910, 905), "recomputed": (902, 907, 906), "training": (880, 884, 890)}
TWO = {
    # micro-batch 3
    (3, "small", "inference"): (820, 790, 805),
    (3, "small", "training"): (600, 640, 611),
    (3, "accumulate", "inference"): (895, 912, 899),  # - large: (-5, 2, -6), contains zero
    (3, "accumulate", "training"): (870, 893, 871),
    (3, "ghost", "inference"): (896, 911, 901),  # - accumulate: (1, -1, 2), contains zero
    (3, "ghost", "training"): (873, 897, 876),  # - accumulate: (3, 4, 5), wholly above zero
    # micro-batch 5
    (5, "small", "inference"): (850, 862, 841),  # accumulate - small: (10, 9, 25), contains zero
    (5, "small", "training"): (700, 731, 690),
    (5, "accumulate", "inference"): (860, 871, 866),  # - large: (-40, -39, -39), wholly below zero
    (5, "accumulate", "training"): (881, 886, 893),  # - large: (1, 2, 3), wholly above zero
    (5, "ghost", "inference"): (853, 863, 860),  # - accumulate: (-7, -8, -6), wholly below zero
    (5, "ghost", "training"): (881, 886, 893),  # - accumulate: (0, 0, 0): an interval [0, 0]
    # recomputed statistics; ghost - accumulate contains zero at both micro-batches
    (3, "small", "recomputed"): (822, 795, 801),
    (3, "accumulate", "recomputed"): (897, 915, 904),
    (3, "ghost", "recomputed"): (898, 914, 904),  # - accumulate: (1, -1, 0)
    (5, "small", "recomputed"): (852, 866, 845),
    (5, "accumulate", "recomputed"): (866, 875, 869),
    (5, "ghost", "recomputed"): (865, 877, 869),  # - accumulate: (-1, 2, 0)
    # the second arm: the micro-batch with the rate scaled
    (3, "scaled", "inference"): (810, 780, 800),
    (3, "scaled", "recomputed"): (815, 786, 806),
    (3, "scaled", "training"): (590, 630, 605),
    (5, "scaled", "inference"): (845, 850, 840),
    (5, "scaled", "recomputed"): (848, 856, 842),
    (5, "scaled", "training"): (695, 725, 688),
}
LR = 1e-3


def _two_micro_batches():
    acc = {(m, v, mode): dict(zip(SEEDS, c)) for (m, v, mode), c in TWO.items() if v != "small"}
    grid_acc = {(24, mode): dict(zip(SEEDS, c)) for mode, c in LARGE.items()}
    grid_acc |= {(m, mode): dict(zip(SEEDS, c)) for (m, v, mode), c in TWO.items() if v == "small"}
    grid_acc[(8, "inference")] = {2: 1, 5: 2, 9: 3}  # a batch the study does not use
    grid_acc[(8, "training")] = {2: 4, 5: 5, 9: 6}
    nan = float("nan")
    diffs = [
        # first step: parameters / scale = (2e-7, 1.5e-7, 6e-7) at 3, (2e-7, 5e-7, 1e-7) at 5
        _diff(3, 2, "first_step", 2e-6, 0.0, 0.0, 10.0, nan),
        _diff(3, 5, "first_step", 6e-6, 2e-9, 0.0, 40.0, nan),
        _diff(3, 9, "first_step", 3e-6, 1e-9, 0.0, 5.0, nan),
        _diff(5, 2, "first_step", 4e-6, 5e-9, 0.0, 20.0, nan),
        _diff(5, 5, "first_step", 1e-6, 0.0, 3e-8, 2.0, nan),
        _diff(5, 9, "first_step", 9e-6, 4e-9, 1e-8, 90.0, nan),
        _diff(3, 2, "run", 0.123, 0.02, 0.503, 1.5, 0.011),
        _diff(3, 5, "run", 0.314, 0.01, 0.251, 2.5, 0.023),
        _diff(3, 9, "run", 0.071, 0.04, 0.756, 0.5, 0.005),
        _diff(5, 2, "run", 0.207, 0.03, 0.418, 3.25, 0.031),
        _diff(5, 5, "run", 0.093, 0.06, 0.122, 1.75, 0.017),
        _diff(5, 9, "run", 0.151, 0.05, 0.364, 2.5, 0.046),
    ]
    return acc, grid_acc, diffs


# ---- expected outputs, built here ---------------------------------------------------------


def _expected_table(values, micro):
    rows = [
        {"config": c, "micro_batch": m, "seed": s, "mode": mode, "accuracy": values[(m, c, mode)][s]}
        for m in micro
        for c in CONFIGS
        for mode in MODES
        for s in sorted(values[(m, c, mode)])
    ]
    return pd.DataFrame(rows)


def _cells(values, micro, confidence):
    out = {}
    for m in micro:
        for c in CONFIGS:
            for mode in MODES:
                v = values[(m, c, mode)]
                out[(m, c, mode)] = (len(v), *_share_interval([v[s] for s in sorted(v)], confidence))
    return out


def _paired(d, confidence):
    """``_interval`` of per-seed differences of shares, whose mean is exactly zero where the
    differences cancel but for floating-point rounding (within 1e-12 of the largest); the interval
    held to [-1, 1], the range a difference of two shares can take (two seeds at a Bonferroni level
    carry an end past it)."""
    mean, sd, lo, hi = _interval(d, confidence)
    if abs(mean) <= 1e-12 * max([1.0, *(abs(x) for x in d)]):
        mean = 0.0
    return mean, sd, max(lo, -1.0), min(hi, 1.0)


def _pairs(values, micro, confidence, fams):
    """``(seeds, mean, sd, low, high, family, level)`` of each comparison, its interval at its family's
    level (``fams``: the declared section)."""
    out = {}
    for m in micro:
        for name, a, b in COMPARISONS:
            for mode in MODES:
                va, vb = values[(m, a, mode)], values[(m, b, mode)]
                seeds = sorted(set(va) & set(vb))
                d = [va[s] - vb[s] for s in seeds]
                family = af.family_of(name, mode)
                level = af.level(fams, family, confidence, len(micro))
                out[(m, name, mode)] = (len(d), *_paired(d, level), family, level)
    return out


def _recompute(values, micro, confidence, fams):
    out = {}
    level = af.level(fams, "accumulation_other", confidence, len(micro))
    for m in micro:
        for c in CONFIGS:
            va, vb = values[(m, c, "recomputed")], values[(m, c, "inference")]
            seeds = sorted(set(va) & set(vb))
            out[(m, c)] = (len(seeds), *_paired([va[s] - vb[s] for s in seeds], level), "accumulation_other", level)
    return out


def _closeness(diffs):
    out = {}
    for m in sorted({d["micro_batch"] for d in diffs}):
        first = [d for d in diffs if d["micro_batch"] == m and d["after"] == "first_step"]
        run = [d for d in diffs if d["micro_batch"] == m and d["after"] == "run"]
        out[m] = {
            "first_relative": max(d["parameters"] / d["scale"] for d in first),
            "first_bias": max(d["pre_norm_biases"] for d in first),
            "first_running": max(d["running"] for d in first),
            "run_parameters": max(d["parameters"] for d in run),
            "run_biases": max(d["pre_norm_biases"] for d in run),
            "run_running": max(d["running"] for d in run),
            "run_scale": max(d["scale"] for d in run),
            "run_disagreement": sum(d["label_disagreement"] for d in run) / len(run),
            "run_disagreement_max": max(d["label_disagreement"] for d in run),
        }
    return out


def _frame_of(d, keys):
    return pd.DataFrame(
        [
            dict(zip(keys, k)) | dict(zip(("seeds", "x", "sd", "ci_low", "ci_high", "family", "level"), v))
            for k, v in d.items()
        ]
    )


def _label(config, batch, m):
    return {
        "large": f"batch {batch}",
        "accumulate": f"{batch // m} $\\times$ {m}, accumulated",
        "ghost": f"ghost, virtual {m}",
        "small": f"batch {m}",
        "scaled": f"batch {m}, rate $\\times$ {m}/{batch}",
    }[config]


def _expected_latex(values, cells, micro, batch, confidence, fams):
    rows = []
    for m in micro:
        for c in CONFIGS:
            row = [str(m), _label(c, batch, m)]
            for mode in MODES:
                _, mean, sd, _, _ = cells[(m, c, mode)]
                row.append(f"{_p(mean)} $\\pm$ {_p(sd)}")
            for mode in ("inference", "recomputed"):
                if c == "accumulate":
                    row.append("--")
                    continue
                # the row's configuration minus accumulation, by seed, at the level of the comparison's family
                va, vb = values[(m, c, mode)], values[(m, "accumulate", mode)]
                seeds = sorted(set(va) & set(vb))
                name = {"ghost": "ghost_vs_accumulate"}.get(c, f"accumulate_vs_{c}")
                level = af.level(fams, af.family_of(name, mode), confidence, len(micro))
                gain, _, lo, hi = _paired([va[s] - vb[s] for s in seeds], level)
                row.append(f"${_s(gain)}$ $[{_s(lo)}, {_s(hi)}]$")
            rows.append(row)
    header = [
        "micro-batch",
        "training",
        "inference",
        "recomputed",
        "training mode",
        "$-$ accumulated (inference)",
        "$-$ accumulated (recomputed)",
    ]
    return header, rows, "rllllrr", "accuracy by configuration, and minus accumulation paired by seed"


def _expected_summary(batch, micro, seeds, confidence, cells, pairs, close, recompute, fams):
    def cell(k):
        n, mean, sd, lo, hi = cells[k]
        return {"seeds": n, "mean": mean, "sd": sd, "ci": [lo, hi]}

    def pair_of(v):
        n, gain, sd, lo, hi, family, _ = v
        return {"seeds": n, "gain": gain, "sd": sd, "ci": [lo, hi], "family": family}

    def record(family, members):
        d = fams[family]
        level = 1 - (1 - confidence) / members if d["adjustment"] == "bonferroni" else confidence
        return {"adjustment": d["adjustment"], "members": members, "confidence": confidence, "level": level,
                "smallest_effect": d["smallest_effect"]}  # fmt: skip

    def pair(k):
        return pair_of(pairs[k])

    return {
        "batch_size": batch,
        "micro_batches": list(micro),
        "seeds": list(seeds),
        "confidence": confidence,
        "accuracy": {str(m): {c: {mode: cell((m, c, mode)) for mode in MODES} for c in CONFIGS} for m in micro},
        "paired": {
            str(m): {name: {mode: pair((m, name, mode)) for mode in MODES} for name, _, _ in COMPARISONS} for m in micro
        },
        "recompute": {str(m): {c: pair_of(recompute[(m, c)]) for c in CONFIGS} for m in micro},
        "accumulate_vs_ghost": {str(m): dict(close[m]) for m in micro},
        "families": {
            "accumulation": record("accumulation", 4 * len(micro)),
            "accumulation_other": record("accumulation_other", 16 * len(micro)),
        },
    }


def _headline_verdict(lo, hi, margin):
    """A headline interval's verdict against zero and the smallest effect ``margin``, written out."""
    pm = f"$\\pm{100 * margin:.1f}$ points" if margin is not None else None
    said = _verdict(lo, hi)
    inside = margin is not None and -margin < lo and hi < margin
    if hi < 0 or lo > 0:
        return f"{said}, yet wholly within {pm}, the smallest difference declared to matter" if inside else said
    if margin is None:
        return f"{said}, and with no smallest difference declared to matter it shows no equivalence"
    if inside:
        return (
            f"{said} and lies wholly within {pm}, the smallest difference declared to matter: the two are "
            "equivalent by two one-sided tests"
        )
    return (
        f"{said} but reaches beyond {pm}, the smallest difference declared to matter: the two are neither "
        "told apart nor shown equivalent"
    )


def _expected_macros_per_micro(where, m, batch, train_rows, cells, pairs, close, tens, recompute, lr_text, margin):
    """The macros of one end of the micro-batches; ``tens`` the first-step relative difference
    as the test writes it out (``$6 \\times 10^{-7}$``), ``lr_text`` the scaled rate written out."""
    w = where.capitalize()
    out = {f"accumParts{w}": str(batch // m), f"accumStepsSmall{w}": _thousands(train_rows // m)}
    out[f"accumScaledLr{w}"] = lr_text
    for c in CONFIGS:
        _, gain, _, lo, hi, _, _ = recompute[(m, c)]
        out[f"accumRecompute{_cap(c)}{w}"] = _s(gain)
        out[f"accumRecompute{_cap(c)}{w}Ci"] = "\\text{(every seed alike)}" if lo == hi else f"[{_s(lo)}, {_s(hi)}]"
        out[f"accumRecompute{_cap(c)}{w}Verdict"] = _verdict(lo, hi)
    for c in CONFIGS:
        for mode in MODES:
            _, mean, _, lo, hi = cells[(m, c, mode)]
            # an accuracy in percent, with its unit (the section's differences are points)
            out[f"accum{_cap(c)}{_cap(mode)}{w}"] = _p(mean)
            out[f"accumCi{_cap(c)}{_cap(mode)}{w}"] = (
                "\\text{(every seed alike)}" if lo == hi else f"[{_p(lo)}\\%, {_p(hi)}\\%]"
            )
    for name, _, _ in COMPARISONS:
        stem = _cap(name.replace("_vs_", " minus "))
        for mode in MODES:
            _, gain, _, lo, hi, family, _ = pairs[(m, name, mode)]
            out[f"accum{stem}{_cap(mode)}{w}"] = _s(gain)
            out[f"accum{stem}{_cap(mode)}{w}Ci"] = "\\text{(every seed alike)}" if lo == hi else f"[{_s(lo)}, {_s(hi)}]"
            headline = family == "accumulation"
            out[f"accum{stem}{_cap(mode)}{w}Verdict"] = (
                _headline_verdict(lo, hi, margin) if headline else _verdict(lo, hi)
            )
            if (w, name, mode) == ("Min", "accumulate_vs_large", "inference"):  # the Discussion's sentence
                out["accumDiscussionSentence"] = (
                    "An optimiser step that averages over a large batch does not stand in for a batch-normalisation"
                    " layer that normalises over one: accumulated micro-batches fall behind the true batch"
                    if hi < 0
                    else "Accumulated micro-batches score above the true batch, so an optimiser step over a large"
                    " batch more than stands in for normalising over one here"
                    if lo > 0
                    else "Whether an optimiser step that averages over a large batch stands in for a"
                    " batch-normalisation layer that normalises over one, our seeds cannot tell: accumulated"
                    " micro-batches are not told apart from the true batch"
                )
    c = close[m]
    out[f"accumFirstRelative{w}"] = tens
    out[f"accumRunParameters{w}"] = f"{c['run_parameters']:.2f}"
    out[f"accumRunRunning{w}"] = f"{c['run_running']:.2f}"
    out[f"accumRunDisagreement{w}"] = _p(c["run_disagreement"]) + "\\%"  # a share, with its unit
    out[f"accumRunDisagreementWorst{w}"] = _p(c["run_disagreement_max"]) + "\\%"
    return out


def _expected_abstract(pairs, m, batch, fams, micro):
    """The abstract's sentence at micro-batch ``m``: accumulation against the true batch and against the
    grid's batch ``m`` in inference mode, each at the headline family's level and said by where its
    interval lies against zero and the smallest effect (a shared verdict once), the family named."""
    margin = fams["accumulation"]["smallest_effect"]
    pm = None if margin is None else f"$\\pm{100 * margin:.1f}$ points"
    said = []
    for which, other, it in (
        ("large", f"the true batch of {batch}", "it"),
        ("small", f"the grid's networks at batch {m}", "them"),
    ):
        _, gain, _, lo, hi, _, _ = pairs[(m, f"accumulate_vs_{which}", "inference")]
        ci = "\\text{(every seed alike)}" if lo == hi else f"[{_s(lo)}, {_s(hi)}]"
        inside = None if margin is None else -margin < lo and hi < margin
        said.append(((_verdict(lo, hi), inside), other, it, f"${_s(gain)}$ points ${ci}$"))
    (first, a, _, x), (second, b, _, y) = said
    if first == second:
        side, inside = first
        if side == "contains zero":
            words = {
                None: f"cannot be told apart from {a} ({x}) or from {b} ({y}) and, with no smallest difference "
                "declared to matter, is shown equivalent to neither",
                True: f"is equivalent to {a} ({x}) and to {b} ({y}) within the {pm} declared to matter",
                False: f"cannot be told apart from {a} ({x}) or from {b} ({y}), nor shown equivalent to either "
                f"within the {pm} declared to matter",
            }[inside]
        else:
            words = (
                f"falls behind {a} by {x} and {b} by {y}"
                if side == "lies wholly below zero"
                else f"is ahead of {a} by {x} and of {b} by {y}"
            )
            words += f", both wholly within the {pm} declared to matter" if inside else ""
    else:
        clauses = []
        for (side, inside), other, it, d in said:
            if side == "contains zero":
                clauses.append(
                    {
                        None: f"cannot be told apart from {other} ({d}) and, with no smallest difference declared "
                        f"to matter, is not shown equivalent to {it}",
                        True: f"is equivalent to {other} within the {pm} declared to matter ({d})",
                        False: f"cannot be told apart from {other} ({d}), nor shown equivalent to {it} within the "
                        f"{pm} declared to matter",
                    }[inside]
                )
            else:
                verb = "falls behind" if side == "lies wholly below zero" else "is ahead of"
                clauses.append(
                    f"{verb} {other} by {d}" + (f", wholly within the {pm} declared to matter" if inside else "")
                )
        first, second = clauses
        margin_words = f"the {pm} declared to matter"
        if margin_words in first:  # the margin named once: the second clause says "that margin"
            second = second.replace(margin_words, "that margin")
        words = first + (", and " if "declared to matter" in first else " and ") + second
    n = 4 * micro
    named = (
        f"Bonferroni-adjusted over the {n} comparisons"
        if fams["accumulation"]["adjustment"] == "bonferroni"
        else "unadjusted (exploratory)"
    )
    return (
        f"In inference mode, paired by seed and {named}, batch normalisation trained in micro-batches of {m} rows "
        f"accumulated to steps of {batch} {words}"
    )


def _expected_family_sentence(fams, micro, confidence):
    """The Protocol's sentence on the two families, written out for ``micro`` micro-batches."""
    head, other = fams["accumulation"], fams["accumulation_other"]
    c = f"{100 * confidence:.0f}\\%"
    if head["adjustment"] == "bonferroni":
        text = f"Their intervals are Bonferroni-adjusted over the {4 * micro} comparisons, so that all of them hold"
        text += f" together at {c}"
    else:
        text = (
            f"Their intervals are unadjusted (exploratory): each holds at {c} on its own, not all {4 * micro} together"
        )
    if head["smallest_effect"] is None:
        text += (
            "; no smallest difference is declared to matter, so an interval that contains zero shows only that our "
            "seeds cannot tell the two apart, never that they score alike"
        )
    else:
        text += (
            f". One that contains zero shows the two equivalent only where it lies wholly within "
            f"$\\pm{100 * head['smallest_effect']:.1f}$ points, the smallest difference declared to matter"
            " (two one-sided tests)"
        )
    if other["adjustment"] == "bonferroni":
        n = 16 * micro
        tail = f"adjusted by Bonferroni over its own {n} comparisons, so that those {n} hold together too"
        return f"{text}. Every other paired interval here is {tail}"
    return f"{text}. Every other paired interval here is unadjusted (exploratory), a {c} interval on its own"


# ---- two micro-batches, three seeds --------------------------------------------------------


# Function scope on purpose: mutmut runs, for a mutant, only the tests during which the mutated
# function ran; a module-scoped report would be computed during the first test alone.
# The declarations the report is held to: as the test config declares the two families, every
# interval unadjusted (the numbers of the per-comparison intervals), both families adjusted, and the
# headline family without a smallest effect.
DECLARATIONS = {
    "declared": af.section(),
    "unadjusted": af.section("unadjusted"),
    "adjusted": af.section("bonferroni", "bonferroni"),
    "no margin": af.section(smallest_effect=None),
}


def _report(declaration):
    acc, grid_acc, diffs = _two_micro_batches()
    runs, grid, d = _frames(acc, grid_acc, diffs, rng_seed=3)
    d = d.sort_values("micro_batch", ascending=False, kind="stable")  # micro-batch 5 comes first
    fams = DECLARATIONS[declaration]
    out = ar.report(runs, grid, d, 24, [5, 3], 0.9, 7, 25001, LR, fams)
    values = _values(acc, grid_acc, 24, (3, 5))
    return out, values, diffs, fams


@pytest.fixture(params=list(DECLARATIONS))
def two(request):
    return _report(request.param)


def test_long_table_holds_every_configuration_sorted_with_integer_seeds(two):
    out, values, _, _ = two
    expected = _expected_table(values, (3, 5))
    assert len(expected) == 2 * 5 * 3 * 3
    pd.testing.assert_frame_equal(out["table"], expected, check_exact=True)
    assert out["table"].micro_batch.dtype == np.int64 and out["table"].seed.dtype == np.int64


def test_cells_are_student_t_intervals_on_the_logit_scale_over_seeds_in_configuration_order(two):
    out, values, _, _ = two
    cells = _cells(values, (3, 5), 0.9)
    expected = _frame_of(cells, ("micro_batch", "config", "mode")).rename(columns={"x": "mean"})
    pd.testing.assert_frame_equal(out["cells"], expected, rtol=1e-12)
    # one by hand: accumulation at 3 in inference mode, (895, 912, 899) / 997
    v = np.array([895, 912, 899]) / ROWS
    half = sps.t.ppf(0.95, 2) * np.std(v, ddof=1) / math.sqrt(3) / (v.mean() * (1 - v.mean()))
    centre = math.log(v.mean() / (1 - v.mean()))
    row = out["cells"].iloc[3]
    assert (row.micro_batch, row.config, row["mode"], row.seeds) == (3, "accumulate", "inference", 3)
    assert row.ci_low == pytest.approx(1 / (1 + math.exp(-(centre - half))), rel=1e-12)
    assert row.ci_high == pytest.approx(1 / (1 + math.exp(-(centre + half))), rel=1e-12)
    assert 0 < row.ci_low < row["mean"] < row.ci_high < 1


def test_paired_rows_are_differences_by_seed_per_comparison_and_mode(two):
    out, values, _, fams = two
    pairs = _pairs(values, (3, 5), 0.9, fams)
    expected = _frame_of(pairs, ("micro_batch", "comparison", "mode")).rename(columns={"x": "gain"})
    pd.testing.assert_frame_equal(out["paired"], expected, rtol=1e-12, atol=1e-15)
    p = out["paired"].set_index(["micro_batch", "comparison", "mode"])
    assert p.loc[(5, "accumulate_vs_large", "inference"), "ci_high"] < 0
    # training mode is the other family's: at 0.9 wholly above zero, at 1 - 0.1 / 32 no longer
    unadjusted = fams["accumulation_other"]["adjustment"] == "unadjusted"
    assert (p.loc[(5, "accumulate_vs_large", "training"), "ci_low"] > 0) == unadjusted
    zero = p.loc[(5, "ghost_vs_accumulate", "training")]
    assert zero[["seeds", "gain", "sd", "ci_low", "ci_high", "family"]].tolist() == [
        3,
        0.0,
        0.0,
        0.0,
        0.0,
        "accumulation_other",
    ]
    assert p.loc[(3, "accumulate_vs_large", "inference"), "gain"] == pytest.approx(-3 / ROWS)
    # the members of each family: 2 comparisons x 2 modes x 2 micro-batches, and the other 26 paired rows
    assert (out["paired"].family == "accumulation").sum() == 8 and len(out["paired"]) == 30


def test_headline_intervals_at_the_bonferroni_level_over_eight_comparisons():
    """Declared Bonferroni, each headline interval is the Student-t interval at 1 - 0.1 / 8 (scipy here);
    declared unadjusted, at 0.9; the other family's intervals stay at 0.9 under the test config."""
    d = np.array([-40, -39, -39]) / ROWS  # accumulation minus the true batch at 5, inference mode
    for declaration, level in (("declared", 1 - 0.1 / 8), ("unadjusted", 0.9)):
        out = _report(declaration)[0]
        r = out["paired"].set_index(["micro_batch", "comparison", "mode"]).loc[(5, "accumulate_vs_large", "inference")]
        half = sps.t.ppf(1 - (1 - level) / 2, 2) * np.std(d, ddof=1) / math.sqrt(3)
        assert (r.ci_low, r.ci_high) == pytest.approx((d.mean() - half, d.mean() + half), rel=1e-12)
        assert r.level == level and r.family == "accumulation"
        other = (
            out["paired"].set_index(["micro_batch", "comparison", "mode"]).loc[(5, "accumulate_vs_large", "training")]
        )
        assert other.level == 0.9 and other.family == "accumulation_other"
    adjusted = _report("adjusted")[0]
    assert set(adjusted["recompute"].level) == {1 - 0.1 / 32} and set(adjusted["recompute"].family) == {
        "accumulation_other"
    }


def test_closeness_per_micro_batch_against_the_differences(two):
    out, _, diffs, _ = two
    close = _closeness(diffs)
    expected = pd.DataFrame([{"micro_batch": m} | c for m, c in close.items()])
    pd.testing.assert_frame_equal(out["closeness"], expected, rtol=1e-12)
    # by hand: the largest ratio, not the ratio of the largest values
    assert out["closeness"].first_relative.tolist() == pytest.approx([6e-7, 5e-7])
    assert out["closeness"].run_disagreement.tolist() == pytest.approx([0.013, 0.094 / 3])


def test_summary_json_is_complete(two):
    out, values, diffs, fams = two
    cells, pairs, close = _cells(values, (3, 5), 0.9), _pairs(values, (3, 5), 0.9, fams), _closeness(diffs)
    recompute = _recompute(values, (3, 5), 0.9, fams)
    _same(out["summary"], _expected_summary(24, (3, 5), SEEDS, 0.9, cells, pairs, close, recompute, fams))
    assert list(out) == ["table", "cells", "paired", "recompute", "closeness", "summary", "macros", "latex_table"]


def test_recompute_rows_are_recomputed_minus_running_by_seed(two):
    out, values, _, fams = two
    expected = _frame_of(_recompute(values, (3, 5), 0.9, fams), ("micro_batch", "config")).rename(columns={"x": "gain"})
    pd.testing.assert_frame_equal(out["recompute"], expected, rtol=1e-12, atol=1e-15)
    # by hand: accumulation at 3, (897 - 895, 915 - 912, 904 - 899) rows
    r = out["recompute"].set_index(["micro_batch", "config"]).loc[(3, "accumulate")]
    assert r.gain == pytest.approx(10 / 3 / ROWS, rel=1e-12)


def test_macros_are_complete_with_both_ends_of_the_micro_batches(two):
    out, values, diffs, fams = two
    cells, pairs, close = _cells(values, (3, 5), 0.9), _pairs(values, (3, 5), 0.9, fams), _closeness(diffs)
    margin = fams["accumulation"]["smallest_effect"]
    ghost = [
        (mode, m)
        for m in (3, 5)
        for mode in MODES
        if pairs[(m, "ghost_vs_accumulate", mode)][3] > 0 or pairs[(m, "ghost_vs_accumulate", mode)][4] < 0
    ]
    assert len(ghost) <= 2  # named with "and" below
    expected = {
        "accumBatch": "24",
        "accumMicroBatches": "3 and 5",
        "accumMicroMin": "3",
        "accumMicroMax": "5",
        "accumSeeds": "3",
        "accumEpochs": "7",
        "accumStepsLarge": "1{,}041",  # 25001 // 24
        "accumNetworks": "18",  # three trained variants x two micro-batches x three seeds
        "accumLr": "$10^{-3}$",
    }
    recompute = _recompute(values, (3, 5), 0.9, fams)
    lo_text, hi_text = "$1.25 \\times 10^{-4}$", "$2.083 \\times 10^{-4}$"  # 1e-3 * 3 / 24, 1e-3 * 5 / 24
    expected |= _expected_macros_per_micro(
        "min", 3, 24, 25001, cells, pairs, close, "$6 \\times 10^{-7}$", recompute, lo_text, margin
    )
    expected |= _expected_macros_per_micro(
        "max", 5, 24, 25001, cells, pairs, close, "$5 \\times 10^{-7}$", recompute, hi_text, margin
    )
    expected |= {
        "accumFirstRelative": "$6 \\times 10^{-7}$",
        "accumFirstRunning": "within $3 \\times 10^{-8}$",
        "accumGhostResolved": " and ".join(f"{mode} mode at micro-batch {m}" for mode, m in ghost) or "none",
        "accumGhostComparisons": "6",
        "accumGhostResolvedSentence": accumulation_sentences.resolved_sentence([(f"{w} mode", m) for w, m in ghost]),
        "accumCheck": accumulation_sentences.check_sentence(6e-7, 3e-8),
        "accumFamilySentence": _expected_family_sentence(fams, 2, 0.9),
        "accumAbstractSentence": _expected_abstract(pairs, 3, 24, fams, 2),  # the smaller micro-batch
    }
    m = out["macros"]
    assert m == expected


def test_macros_written_out_in_full_under_each_declaration():
    m = _report("unadjusted")[0]["macros"]  # the intervals at 0.9 each
    assert m["accumGhostResolved"] == "training mode at micro-batch 3 and inference mode at micro-batch 5"
    assert m["accumGhostResolvedSentence"] == (
        "2 exclude zero (training mode at micro-batch 3 and inference mode at micro-batch 5)"
    )
    # a few written out in full
    assert m["accumPartsMin"] == "8" and m["accumPartsMax"] == "4"
    assert m["accumStepsSmallMin"] == "8{,}333" and m["accumStepsSmallMax"] == "5{,}000"
    assert m["accumAccumulateMinusLargeInferenceMaxVerdict"] == "lies wholly below zero"
    assert m["accumAccumulateMinusLargeTrainingMaxVerdict"] == "lies wholly above zero"
    assert m["accumAccumulateMinusLargeInferenceMinVerdict"] == (
        "contains zero but reaches beyond $\\pm1.0$ points, the smallest difference declared to matter: the two are "
        "neither told apart nor shown equivalent"
    )
    assert m["accumGhostMinusAccumulateTrainingMax"] == "0.00"  # exactly zero: unsigned
    assert m["accumGhostMinusAccumulateTrainingMaxCi"] == "\\text{(every seed alike)}"  # no "[0.00, 0.00]"
    assert m["accumGhostMinusAccumulateTrainingMaxVerdict"] == "contains zero"
    assert m["accumAccumulateMinusLargeInferenceMax"] == f"{100 * (-118 / 3) / ROWS:+.2f}" == "-3.95"
    assert m["accumRunParametersMin"] == "0.31" and m["accumRunRunningMin"] == "0.76"
    # at micro-batch 3 the true batch is not told apart (-3 / 997 rows), the grid's batch 3 is behind
    assert m["accumAbstractSentence"].startswith(
        "In inference mode, paired by seed and unadjusted (exploratory), batch normalisation trained in "
        "micro-batches of 3 rows accumulated to steps of 24 cannot be told apart from the true batch of 24 "
        "($-0.30$ points $["
    )
    assert (
        "), nor shown equivalent to it within the $\\pm1.0$ points declared to matter, and is ahead of the grid's "
        in (m["accumAbstractSentence"])
    )
    assert m["accumRunDisagreementMin"] == "1.3\\%" and m["accumRunDisagreementWorstMax"] == "4.6\\%"
    assert m["accumLargeInferenceMin"] == m["accumLargeInferenceMax"] == "90.8"  # 905 / 997
    # as the test config declares them: the headline intervals Bonferroni-adjusted over the 8 comparisons,
    # wide enough that the grid's batch 3 is no longer told apart; the ghost intervals (exploratory) alike
    m = _report("declared")[0]["macros"]
    assert m["accumAbstractSentence"].startswith(
        "In inference mode, paired by seed and Bonferroni-adjusted over the 8 comparisons, batch normalisation"
    )
    assert m["accumAbstractSentence"].endswith(
        "or from the grid's networks at batch 3 ($+9.73$ points $[-2.40, +21.86]$), nor shown equivalent to either "
        "within the $\\pm1.0$ points declared to matter"
    )
    assert m["accumGhostResolved"] == "training mode at micro-batch 3 and inference mode at micro-batch 5"
    assert m["accumFamilySentence"].startswith("Their intervals are Bonferroni-adjusted over the 8 comparisons, so ")


def test_latex_table_every_row_header_and_alignment(two):
    out, values, _, fams = two
    cells = _cells(values, (3, 5), 0.9)
    assert out["latex_table"] == _expected_latex(values, cells, (3, 5), 24, 0.9, fams)
    header, rows, align, _ = out["latex_table"]
    assert len(rows) == 10 and all(len(r) == len(header) == len(align) for r in rows)
    assert [r[1] for r in rows[:5]] == [
        "batch 24",
        "8 $\\times$ 3, accumulated",
        "ghost, virtual 3",
        "batch 3",
        "batch 3, rate $\\times$ 3/24",
    ]
    # large minus accumulation at 5 in inference mode: (40, 39, 39) rows, the interval wholly above zero
    wide = fams["accumulation"]["adjustment"] == "bonferroni"  # at 1 - 0.1/8 (t quantile 8.86), not 0.9
    assert rows[5][-2] == ("$+3.95$ $[+3.65, +4.24]$" if wide else "$+3.95$ $[+3.85, +4.04]$")
    assert rows[6][-2:] == ["--", "--"]


# ---- one micro-batch, a ghost seed more, nothing resolved ----------------------------------


def _one_micro_batch():
    seeds = (1, 4)
    acc = {
        (2, "accumulate", "inference"): dict(zip(seeds, (700, 720))),
        (2, "accumulate", "training"): dict(zip(seeds, (650, 668))),
        # ghost has seed 6 too: its cell counts three seeds, its pair two
        (2, "ghost", "inference"): {1: 705, 4: 713, 6: 500},
        (2, "ghost", "training"): {1: 640, 4: 671, 6: 400},
        (2, "accumulate", "recomputed"): dict(zip(seeds, (703, 722))),
        (2, "ghost", "recomputed"): {1: 709, 4: 716, 6: 502},
        (2, "scaled", "inference"): dict(zip(seeds, (600, 640))),
        (2, "scaled", "recomputed"): dict(zip(seeds, (611, 652))),
        (2, "scaled", "training"): dict(zip(seeds, (410, 470))),
    }
    grid_acc = {
        (10, "inference"): dict(zip(seeds, (760, 731))),
        (10, "training"): dict(zip(seeds, (742, 716))),
        (10, "recomputed"): dict(zip(seeds, (761, 733))),
        (2, "recomputed"): dict(zip(seeds, (615, 650))),
        (2, "inference"): dict(zip(seeds, (610, 655))),
        (2, "training"): dict(zip(seeds, (420, 481))),
    }
    diffs = [
        _diff(2, 1, "first_step", 0.0, 0.0, 0.0, 3.0, float("nan")),
        _diff(2, 4, "first_step", 0.0, 0.0, 0.0, 4.0, float("nan")),
        _diff(2, 1, "run", 0.0449, 0.002, 0.0151, 0.8, 0.0),
        _diff(2, 4, "run", 0.0312, 0.001, 0.0049, 0.9, 0.012),
    ]
    return acc, grid_acc, diffs


def test_one_micro_batch_identical_first_step_and_nothing_resolved():
    acc, grid_acc, diffs = _one_micro_batch()
    runs, grid, d = _frames(acc, grid_acc, diffs, rng_seed=8)
    fams = af.section()  # as the test config declares them
    out = ar.report(runs, grid, d, 10, [2], 0.95, 2, 999, 3e-3, fams)
    values = _values(acc, grid_acc, 10, (2,))
    cells, pairs, close = _cells(values, (2,), 0.95), _pairs(values, (2,), 0.95, fams), _closeness(diffs)
    assert cells[(2, "ghost", "inference")][0] == 3 and pairs[(2, "ghost_vs_accumulate", "inference")][0] == 2
    pd.testing.assert_frame_equal(out["table"], _expected_table(values, (2,)), check_exact=True)
    expected_cells = _frame_of(cells, ("micro_batch", "config", "mode")).rename(columns={"x": "mean"})
    pd.testing.assert_frame_equal(out["cells"], expected_cells, rtol=1e-12)
    expected_pairs = _frame_of(pairs, ("micro_batch", "comparison", "mode")).rename(columns={"x": "gain"})
    pd.testing.assert_frame_equal(out["paired"], expected_pairs, rtol=1e-12)
    recompute = _recompute(values, (2,), 0.95, fams)
    _same(out["summary"], _expected_summary(10, (2,), (1, 4, 6), 0.95, cells, pairs, close, recompute, fams))
    expected = {
        "accumOneMicro": "one",  # the section names the one micro-batch alone
        "accumBatch": "10",
        "accumMicroBatches": "2",
        "accumMicroMin": "2",
        "accumMicroMax": "2",
        "accumSeeds": "3",
        "accumEpochs": "2",
        "accumStepsLarge": "99",
        "accumNetworks": "9",
        "accumLr": "$3 \\times 10^{-3}$",
    }
    for where in ("min", "max"):  # one micro-batch: both ends are the same
        expected |= _expected_macros_per_micro(
            where, 2, 10, 999, cells, pairs, close, "$0$", recompute, "$6 \\times 10^{-4}$", 0.01
        )
    expected |= {
        "accumFirstRelative": "$0$",
        "accumFirstRunning": "identical, bit for bit",
        "accumGhostResolved": "none",
        "accumGhostComparisons": "3",
        "accumGhostResolvedSentence": "none excludes zero",
        "accumCheck": accumulation_sentences.check_sentence(0.0, 0.0),
        "accumFamilySentence": _expected_family_sentence(fams, 1, 0.95),
        "accumAbstractSentence": _expected_abstract(pairs, 2, 10, fams, 1),
    }
    assert out["macros"] == expected
    assert out["macros"]["accumStepsSmallMin"] == "499" and out["macros"]["accumPartsMax"] == "5"
    assert out["macros"]["accumRunDisagreementMin"] == "0.6\\%" and out["macros"]["accumRunRunningMax"] == "0.02"
    assert ") or from the grid's networks at batch 2 ($+" in out["macros"]["accumAbstractSentence"]  # neither apart
    assert out["latex_table"] == _expected_latex(values, cells, (2,), 10, 0.95, fams)
    assert out["summary"]["families"]["accumulation"]["members"] == 4  # 2 comparisons x 2 modes x 1 micro-batch
    assert out["summary"]["families"]["accumulation_other"]["members"] == 16


# ---- the parts on their own ----------------------------------------------------------------


def test_config_labels_in_words():
    assert at.config_label("large", 24, 5) == "batch 24"
    assert at.config_label("accumulate", 24, 5) == "4 $\\times$ 5, accumulated"
    assert at.config_label("ghost", 24, 5) == "ghost, virtual 5"
    assert at.config_label("small", 24, 5) == "batch 5"
    assert at.config_label("scaled", 24, 5) == "batch 5, rate $\\times$ 5/24"
    with pytest.raises(KeyError):
        at.config_label("other", 24, 5)


def test_long_table_names_the_missing_large_batch():
    acc, grid_acc, diffs = _two_micro_batches()
    runs, grid, _ = _frames(acc, grid_acc, diffs, rng_seed=1)
    with pytest.raises(ValueError, match=r"^no grid networks at batch 24$"):
        ar.long_table(runs, grid[grid.batch_size != 24], 24, [3, 5])
    with pytest.raises(ValueError, match=r"^no grid networks at batch 5$"):
        ar.long_table(runs, grid[grid.batch_size != 5], 24, [3, 5])


def test_long_table_names_a_configuration_without_recomputed_rows():
    acc, grid_acc, diffs = _two_micro_batches()
    runs, grid, _ = _frames(acc, grid_acc, diffs, rng_seed=1)
    with pytest.raises(ValueError, match=r"^no 'large' rows in mode\(s\) \['recomputed'\]$"):
        ar.long_table(runs, grid[grid["mode"] != "recomputed"], 24, [3, 5])
    other = pd.concat([runs, runs.assign(mode="exact")], ignore_index=True)  # other modes are left out
    pd.testing.assert_frame_equal(ar.long_table(other, grid, 24, [3, 5]), ar.long_table(runs, grid, 24, [3, 5]))


def test_rates_and_resolved_sentences_in_words():
    assert ar.rate(1e-3) == "$10^{-3}$" and ar.rate(3.125e-5) == "$3.125 \\times 10^{-5}$"
    assert ar.rate(1e-3 * 2 / 64) == "$3.125 \\times 10^{-5}$" and ar.rate(2.5e-4) == "$2.5 \\times 10^{-4}$"
    assert accumulation_sentences.check_sentence(0.0, 0.0).startswith("The check passes: ")
    assert accumulation_sentences.check_sentence(1e-5, 0.0).startswith("The check passes: ")
    assert accumulation_sentences.check_sentence(2e-5, 0.0).startswith("The check fails: ")
    assert accumulation_sentences.check_sentence(0.0, 1e-9).startswith("The check fails: ")
    assert accumulation_sentences.resolved_sentence([]) == "none excludes zero"
    assert (
        accumulation_sentences.resolved_sentence([("training mode", 2)])
        == "one excludes zero (training mode at micro-batch 2)"
    )
    three = [("training mode", 2), ("training mode", 4), ("inference mode", 4)]
    assert accumulation_sentences.resolved_sentence(three) == (
        "3 exclude zero (training mode at micro-batches 2 and 4 and inference mode at micro-batch 4)"
    )


def test_long_table_refuses_grid_rows_of_two_normalisers():
    """Another normaliser's network of the same seed would be counted as a second network of that seed."""
    acc, grid_acc, diffs = _two_micro_batches()
    runs, grid, _ = _frames(acc, grid_acc, diffs, rng_seed=1)
    assert set(grid.normaliser) == {"batchnorm"}
    other = pd.concat([grid, grid.assign(normaliser="layernorm")], ignore_index=True)
    with pytest.raises(ValueError, match=r"^grid rows of more than one normaliser: \['batchnorm', 'layernorm'\]$"):
        ar.long_table(runs, other, 24, [3, 5])


def test_paired_table_refuses_a_comparison_without_common_seeds():
    table = pd.DataFrame(
        [
            {"config": c, "micro_batch": 2, "seed": s, "mode": mode, "accuracy": 0.5}
            for c, s in (("large", 1), ("accumulate", 2), ("ghost", 2), ("small", 2))
            for mode in MODES
        ]
    )
    with pytest.raises(ValueError, match=r"^no common seeds for accumulate_vs_large at micro-batch 2$"):
        ar.paired_table(table, {"accumulation": 0.95, "accumulation_other": 0.95})


def test_cell_and_pair_json_keys_and_types():
    r = pd.Series({"seeds": np.int64(3), "mean": 0.25, "sd": 0.5, "ci_low": -0.125, "ci_high": 0.625})
    assert ar._cell_json(r) == {"seeds": 3, "mean": 0.25, "sd": 0.5, "ci": [-0.125, 0.625]}
    p = pd.Series(
        {"seeds": np.int64(2), "gain": -0.75, "sd": 0.0625, "ci_low": -1.5, "ci_high": 0.375, "family": "accumulation"}
    )
    assert ar._pair_json(p) == {"seeds": 2, "gain": -0.75, "sd": 0.0625, "ci": [-1.5, 0.375], "family": "accumulation"}
    assert type(ar._cell_json(r)["seeds"]) is int and type(ar._pair_json(p)["gain"]) is float
    assert ar._stats(1, 2, 3, 4) == {"mean": 1, "sd": 2, "ci_low": 3, "ci_high": 4}


@pytest.mark.parametrize("adjustment", list(DECLARATIONS))
def test_the_result_prints_each_accuracy_with_its_unit(adjustment):
    """The section's accuracies are percentages and its differences points: 'batch normalisation scores
    84.3 [82.3, 86.1] in inference mode' lost the unit; each accuracy and its interval now carry it,
    rendered in the Result and the Steps paragraphs."""
    import re

    from test_sentences import render

    m = _report(adjustment)[0]["macros"]
    section = (Path(__file__).resolve().parents[2] / "paper" / "sections" / "accumulation.tex").read_text()
    text = render(section, m)
    passage = text[text.index("\\paragraph{Result.}") : text.index("\\paragraph{Statistics or weights.}")]
    scored = re.findall(r"scores\s+([0-9.]+(?:\\%)?)(?:\s+(\[[^\]]*\]))?", passage)
    assert scored, passage
    for value, ci in scored:
        assert value.endswith("\\%"), value
        assert not ci or ci.count("\\%") == 2, ci
    assert not re.search(r"scores\s+\d+\.\d(?!\\%)", passage), passage
