"""The learning-rate sweep with K folds (lr_sweep.folds): the folds, the choice over folds x seeds,
its stability, the bound no choice of rate can change, the config check and the cost; and the
single split's report untouched by them."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats as sps

from bnstudy.base.config import ConfigError, load_schema, validate
from bnstudy.evaluation.families import declared
from bnstudy.studies.lr_sweep import report as lr_sweep_report
from bnstudy.studies.lr_sweep import science as lr_sweep
from bnstudy.studies.lr_sweep import stability
from conftest import ROOT
from test_lr_sweep import ADJUSTMENTS, FAMILIES, declared_families
from test_sentences import problems

LABELS = {"none": "none", "batchnorm": "batch norm"}
DESIGN = {"folds": 3, "validation_rows": 300, "fold_rows_min": 100, "fold_rows_max": 100, "epochs": 1, "grid_seeds": 3}
CHOICE, MARGIN = declared(FAMILIES, "lr_choice"), declared(FAMILIES, "lr_margin")  # Bonferroni; none


def variant(name: str, adjustment: str):
    """Family ``name`` declared with ``adjustment``."""
    return declared(declared_families(adjustment), name)


# ---- the folds ---------------------------------------------------------------------------


def test_folds_are_stratified_disjoint_cover_the_training_half_and_are_seeded():
    y = np.array([0] * 10 + [1] * 10 + [2] * 5 + [3] * 7)
    fold = lr_sweep.fold_split(y, 5, 0)
    assert fold.dtype == np.int64 and sorted(set(fold.tolist())) == [0, 1, 2, 3, 4]  # every row in one fold
    for k in range(5):  # stratified: each class spread over the folds within one row
        counts = np.bincount(y[fold == k], minlength=4)
        assert all(abs(c - n / 5) < 1 for c, n in zip(counts, np.bincount(y)))
    pairs = lr_sweep.read_folds(lr_sweep.fold_table(fold))
    held = np.concatenate([h for _, h in pairs])
    assert sorted(held.tolist()) == list(range(len(y)))  # disjoint held-out folds covering every row
    for fit, h in pairs:
        assert not set(fit.tolist()) & set(h.tolist()) and len(fit) + len(h) == len(y)
        assert list(fit) == sorted(fit) and list(h) == sorted(h)
    assert np.array_equal(lr_sweep.fold_split(y, 5, 0), fold)  # seeded
    assert any(not np.array_equal(lr_sweep.fold_split(y, 5, s), fold) for s in range(1, 6))
    from sklearn.model_selection import StratifiedKFold  # scikit-learn's folds, in its order

    for k, (_, test) in enumerate(StratifiedKFold(5, shuffle=True, random_state=0).split(np.zeros((len(y), 1)), y)):
        assert np.array_equal(np.flatnonzero(fold == k), np.sort(test))


def test_fold_table_round_trips_whatever_its_row_order():
    fold = np.array([1, 0, 1, 0, 2, 2])
    table = lr_sweep.fold_table(fold)
    assert table["row"].tolist() == list(range(6)) and table["fold"].tolist() == fold.tolist()
    pairs = lr_sweep.read_folds(table.sample(frac=1, random_state=1))
    assert [(f.tolist(), h.tolist()) for f, h in pairs] == [
        ([0, 2, 4, 5], [1, 3]),
        ([1, 3, 4, 5], [0, 2]),
        ([0, 1, 2, 3], [4, 5]),
    ]


def test_fold_sweep_trains_each_fold_on_the_other_folds(configured):
    from bnstudy.evaluation import accuracy
    from bnstudy.nets import model, train
    from bnstudy.nets.recipe import Recipe

    rng = np.random.default_rng(0)
    x = rng.random((30, 64)).astype(np.float32)
    y = np.arange(30) % 3
    pairs = lr_sweep.read_folds(lr_sweep.fold_table(lr_sweep.fold_split(y, 2, 0)))
    spec = model.NetSpec(normaliser="batchnorm", widths=(64, 8, 8, 10), groups=2, eps=1e-5, momentum=0.1)
    runs, epochs = lr_sweep.fold_sweep(spec, Recipe(epochs=1), [4], [1e-3, 1e-1], [0, 1], x, y, pairs, x[:6], y[:6])
    assert list(runs.columns) == ["normaliser", "batch_size", "lr", "seed", "fold"] + lr_sweep.RUN_COLUMNS[4:]
    assert runs[["fold", "lr", "seed"]].values.tolist() == [
        [k, lr, s] for k in (0, 1) for lr in (1e-3, 1e-1) for s in (0, 1)
    ]
    fit, held = pairs[1]
    stacked, _ = train.train_models(spec, Recipe(epochs=1, batch_size=4, lr=1e-1), [0, 1], x[fit], y[fit])
    want = accuracy.inference_accuracy(stacked, spec, x[held], y[held]).tolist()
    assert runs.validation_accuracy.tolist()[6:] == want
    assert runs.test_accuracy.tolist()[6:] == accuracy.inference_accuracy(stacked, spec, x[:6], y[:6]).tolist()
    assert sorted(set(epochs.fold)) == [0, 1]


# ---- the choice over folds x seeds and its stability ---------------------------------------


def fold_runs(val, test=None, seeds=(0, 1)):
    """Runs of one batch size (2) from ``val[(norm, lr)]``: one list per fold of per-seed validation
    accuracies; test accuracies ``test[(norm, lr)]`` likewise (default: the validation ones)."""
    rows = []
    for (norm, lr), folds in val.items():
        for k, accs in enumerate(folds):
            for s, v in zip(seeds, accs):
                t = (test or val)[(norm, lr)][k][seeds.index(s)]
                rows.append(
                    {"normaliser": norm, "batch_size": 2, "lr": lr, "seed": s, "fold": k}
                    | {"validation_accuracy": v, "test_accuracy": t, "final_loss": 0.1}
                )
    return pd.DataFrame(rows).sample(frac=1, random_state=0).reset_index(drop=True)


# batch norm: 1e-2 wins over folds x seeds (mean 0.70) though fold 0 alone prefers 1e-3;
# none: 1e-3 and 1e-2 tie in fold 2, the lower rate is that fold's choice
VAL = {
    ("batchnorm", 1e-3): [[0.80, 0.80], [0.50, 0.52], [0.50, 0.54]],  # mean 0.61
    ("batchnorm", 1e-2): [[0.60, 0.62], [0.74, 0.72], [0.74, 0.78]],  # mean 0.70
    ("batchnorm", 1e-1): [[0.30, 0.30], [0.30, 0.31], [0.30, 0.30]],
    ("none", 1e-3): [[0.90, 0.91], [0.80, 0.82], [0.85, 0.85]],
    ("none", 1e-2): [[0.90, 0.92], [0.90, 0.93], [0.85, 0.85]],  # best: mean 0.89
    ("none", 1e-1): [[0.40, 0.40], [0.40, 0.40], [0.40, 0.40]],
}


def test_the_rate_is_the_best_mean_over_folds_and_seeds_not_one_folds():
    runs = fold_runs(VAL)
    best = lr_sweep_report.best_rates(lr_sweep_report.rate_table(runs, 0.95)).set_index("normaliser")
    assert best.loc["batchnorm"].lr == 1e-2 and best.loc["none"].lr == 1e-2
    assert best.loc["batchnorm"].validation_mean == pytest.approx(0.70, abs=1e-12)
    assert best.loc["batchnorm"].seeds == 6  # the networks averaged: 3 folds x 2 seeds
    own = stability.fold_choices(runs).set_index(["normaliser", "fold"]).lr
    assert own[("batchnorm", 0)] == 1e-3 and own[("batchnorm", 1)] == 1e-2 and own[("batchnorm", 2)] == 1e-2
    assert own[("none", 0)] == 1e-2 and own[("none", 2)] == 1e-3  # a tie in fold 2: the lower rate


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
def test_stability_counts_agreeing_folds_and_pairs_the_margin_over_folds_and_seeds(adjustment):
    """The margin's interval at the level ``lr_margin`` declares: unadjusted, or Bonferroni over the 2 cells."""
    runs = fold_runs(VAL)
    rates = lr_sweep_report.rate_table(runs, 0.95)
    best = lr_sweep_report.best_rates(rates)
    stab = stability.stability(runs, rates, best, 0.95, variant("lr_margin", adjustment)).set_index("normaliser")
    assert stab.loc["batchnorm"].agree == 2 and stab.loc["batchnorm"].folds == 3
    assert stab.loc["none"].agree == 2 and stab.loc["none"].runner_up == 1e-3
    assert stab.loc["batchnorm"].runner_up == 1e-3
    chosen = [v for fold in VAL[("batchnorm", 1e-2)] for v in fold]  # (fold, seed) order
    runner = [v for fold in VAL[("batchnorm", 1e-3)] for v in fold]
    ci = sps.ttest_rel(chosen, runner).confidence_interval(1 - 0.05 / 2 if adjustment == "bonferroni" else 0.95)
    assert stab.loc["batchnorm"].margin == pytest.approx(0.70 - 0.61, abs=1e-12)
    assert (stab.loc["batchnorm"].margin_ci_low, stab.loc["batchnorm"].margin_ci_high) == pytest.approx(
        (ci.low, ci.high), abs=1e-12
    )
    assert stab.loc["batchnorm"].replicates == 6


def stab_rows(rows):
    return pd.DataFrame(
        [
            dict(normaliser=n, batch_size=b, lr=1e-3, folds=5, agree=a, runner_up=1e-2)
            | dict(margin=m, margin_ci_low=lo, margin_ci_high=hi, replicates=5)
            for n, b, a, m, lo, hi in rows
        ]
    )


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
def test_every_stability_sentence(adjustment):
    family = variant("lr_margin", adjustment)
    article = {"bonferroni": "an adjusted", "unadjusted": "an unadjusted"}[adjustment]
    every = stab_rows([("none", 2, 5, 0.01, 0.001, 0.02), ("batchnorm", 2, 5, 0.02, 0.01, 0.03)])
    m = stability.stability_macros(every, LABELS, 2, 1, family)
    assert m["lrFolds"] == "5" and m["lrOtherFolds"] == "other 4 folds" and m["lrSeedsPhrase"] == "1 seed"
    assert m["lrStabilitySentence"] == "In every one of the 2 cells all 5 folds, each on its own, pick the chosen rate"
    assert m["lrMarginSentence"] == (
        f"the chosen rate's mean validation accuracy exceeds the runner-up's by {article} paired interval wholly "
        "above zero in every one of the 2 cells"
    )
    assert m["lrFoldAgreeBatchnormMin"] == "5" and m["lrRunnerUpNoneMin"] == "$1 \\times 10^{-2}$"
    assert m["lrFoldAgreeBatchnormMinPhrase"] == "all 5 folds"  # "the best in all 5 folds", not "5 of the 5"
    assert m["lrMarginBatchnormMin"] == "$+2.00$ points $[+1.00, +3.00]$"
    some = stab_rows(
        [("none", 2, 5, 0.01, -0.001, 0.02), ("none", 8, 2, 0.0, 0.0, 0.0), ("batchnorm", 2, 2, 0.02, 0.01, 0.03)]
    )
    m = stability.stability_macros(some, LABELS, 2, 1, family)
    assert m["lrStabilitySentence"] == (
        "All 5 folds, each on its own, pick the chosen rate in 1 of the 3 cells; in the least stable cells (no "
        "normaliser at batch 8 and batch norm at batch 2), only 2 of the 5 do"
    )
    assert m["lrMarginSentence"].endswith("wholly above zero in 1 of the 3 cells")
    assert "lrFoldAgreeNoneMin" in m and "lrFoldAgreeNoneB8" not in m  # the smallest batch only
    assert m["lrFoldAgreeBatchnormMinPhrase"] == "2 of the 5 folds" and m["lrFoldAgreeNoneMinPhrase"] == "all 5 folds"
    assert stability.agreeing_folds(0, 4) == "none of the 4 folds"
    none = stab_rows([("none", 2, 3, 0.0, 0.0, 0.0), ("batchnorm", 2, 4, 0.01, -0.01, 0.03)])
    m = stability.stability_macros(none, LABELS, 2, 1, family)
    assert m["lrStabilitySentence"] == (
        "In no cell do all 5 folds, each on its own, pick the chosen rate; in the least stable cell (no normaliser "
        "at batch 2), only 3 of the 5 do"
    )
    assert m["lrMarginSentence"].endswith("wholly above zero in none of the 2 cells")
    assert m["lrMarginNoneMin"] == "$0.00$ points $\\text{(every seed alike)}$"
    one = stab_rows([(n, b, 1, 0.0, 0.0, 0.0) for n in ("none", "batchnorm") for b in (2, 4)])
    assert stability.stability_sentence(one, LABELS).endswith(
        "in the 4 least stable cells, only 1 of the 5 does"
    )  # over 3: counted
    zero = one.assign(agree=[0, 1, 0, 1])
    assert stability.stability_sentence(zero, LABELS).endswith(
        "cells (no normaliser at batch 2 and batch norm at batch 2), none of the 5 does"
    )
    two = stab_rows([("none", 2, 2, 0.0, 0.0, 0.0), ("batchnorm", 2, 1, 0.0, 0.0, 0.0)]).assign(folds=2)
    assert stability.stability_sentence(two, LABELS).startswith(
        "Both folds, each on its own, pick the chosen rate in 1"
    )
    assert stability.stability_sentence(two.assign(agree=2), LABELS).endswith(
        "2 cells both folds, each on its own, pick the chosen rate"
    )
    assert stability.stability_sentence(two.assign(agree=1), LABELS) == (
        "In no cell do both folds, each on its own, pick the chosen rate; in the least stable cells (no normaliser "
        "at batch 2 and batch norm at batch 2), only 1 of the 2 does"
    )
    assert stability.overlap_sentence(2).startswith("The two fold networks of one seed train on disjoint halves")
    assert stability.overlap_sentence(5).startswith("The 5 fold networks of one seed share 3 of the 4 folds each")
    assert two.folds.max() == 2 and stability.stability_macros(two, LABELS, 2, 1, family)["lrFoldOverlap"] == (
        stability.overlap_sentence(2)
    )
    for table in (every, some, none, one, zero, two):  # free of the grammar faults test_sentences looks for
        m = stability.stability_macros(table, LABELS, 2, 1, family)
        assert not problems(m["lrStabilitySentence"]) and not problems(m["lrMarginSentence"])
        assert not problems(m["lrFoldOverlap"])


def diff_rows(rows):
    return pd.DataFrame(
        [
            dict(normaliser="none", batch_size=b, lr=1e-2, grid_lr=1e-3, gain=g, ci_low_adj=lo, ci_high_adj=hi)
            for b, g, lo, hi in rows
        ]
    )


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
def test_every_chosen_against_grid_sentence(adjustment):
    family = variant("lr_choice", adjustment)

    def sentence(table, cells):
        return stability.chosen_grid_sentence(table, cells, family)

    empty = stability.chosen_minus_grid(fold_runs(VAL), *_best_and_grid(fold_runs(VAL), 1e-2), 0.95, family)
    assert empty.empty  # both cells chose 1e-2, the grid's rate here
    assert sentence(empty, 2) == "In all 2 cells the chosen rate is the grid's"
    assert stability.choice_record(family, 0.95, 0) == {
        "adjustment": adjustment, "members": 0, "confidence": 0.95, "level": None, "smallest_effect": 0.01,
    }  # fmt: skip
    one = diff_rows([(2, -0.01, -0.03, 0.01)])
    assert sentence(one, 4) == (
        "The chosen rate is not the grid's in 1 of the 4 cells, and scores below it on the test half there; "
        "paired over folds and seeds, the interval contains zero"
    )
    up = diff_rows([(2, 0.02, 0.01, 0.03)])
    assert sentence(up, 4).endswith(
        "does not score below it on the test half there; paired over folds and seeds, the interval lies wholly "
        "above zero"
    )
    mixed = diff_rows([(2, -0.02, -0.03, -0.01), (4, 0.02, 0.01, 0.03), (8, -0.01, -0.02, 0.01)])
    phrase = {"bonferroni": "Bonferroni-adjusted over the 3 cells", "unadjusted": "unadjusted (exploratory)"}[
        adjustment
    ]
    assert sentence(mixed, 6) == (
        "The chosen rate is not the grid's in 3 of the 6 cells, and scores below it on the test half in 2 of them; "
        f"paired over folds and seeds, {phrase}, the intervals lie wholly below zero in 1 and wholly above zero "
        "in 1, and contain zero in the other 1"
    )
    held = diff_rows([(2, -0.01, -0.03, 0.01), (4, 0.01, -0.01, 0.03)])
    assert sentence(held, 6).endswith("the intervals contain zero in all 2")
    below = diff_rows([(2, -0.02, -0.03, -0.01), (4, -0.02, -0.03, -0.01)])
    assert sentence(below, 6).endswith("the intervals lie wholly below zero in 2")
    assert sentence(diff_rows([(2, 0.01, -0.01, 0.03), (4, 0.01, -0.01, 0.03)]), 6).startswith(
        "The chosen rate is not the grid's in 2 of the 6 cells, and scores below it on the test half in none of them"
    )
    for table in (one, up, mixed, held, below):
        assert not problems(sentence(table, 6))


def _best_and_grid(runs, grid_lr):
    rates = lr_sweep_report.rate_table(runs, 0.95)
    return lr_sweep_report.best_rates(rates), lr_sweep_report.at_rate(rates, grid_lr)


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
def test_chosen_minus_grid_pairs_over_fold_and_seed_at_the_choice_familys_level(adjustment):
    runs = fold_runs(VAL)
    best, grid = _best_and_grid(runs, 1e-3)
    diff = stability.chosen_minus_grid(runs, best, grid, 0.95, variant("lr_choice", adjustment))
    diff = diff.set_index("normaliser")
    assert list(diff.index) == ["batchnorm", "none"] and set(diff.family) == {2}
    a = [v for f in VAL[("batchnorm", 1e-2)] for v in f]
    b = [v for f in VAL[("batchnorm", 1e-3)] for v in f]
    ci = sps.ttest_rel(a, b).confidence_interval(1 - 0.05 / 2 if adjustment == "bonferroni" else 0.95)
    assert diff.loc["batchnorm"].gain == pytest.approx(np.mean(np.subtract(a, b)), abs=1e-12)
    assert (diff.loc["batchnorm"].ci_low_adj, diff.loc["batchnorm"].ci_high_adj) == pytest.approx(
        (ci.low, ci.high), abs=1e-12
    )


# ---- the bound: batch norm at its best rate against none at its worst -------------------------


def bound_runs(bn_tests, none_tests):
    """Two rates per normaliser at batch 2, 2 folds x 2 seeds; test accuracies given per rate."""
    val = {(n, lr): [[0.5, 0.5], [0.5, 0.5]] for n in ("none", "batchnorm") for lr in (1e-3, 1e-2)}
    test = {("batchnorm", lr): v for lr, v in zip((1e-3, 1e-2), bn_tests)}
    test |= {("none", lr): v for lr, v in zip((1e-3, 1e-2), none_tests)}
    return fold_runs(val, test)


@pytest.mark.parametrize(
    "deficit, bn, none, holds, relation, tail",
    [
        # batch norm's best (1e-2, 0.80) below none's worst (1e-3, 0.90), every pair: the deficit holds
        (
            True,
            ([[0.6, 0.62], [0.6, 0.61]], [[0.80, 0.81], [0.79, 0.80]]),
            ([[0.90, 0.91], [0.89, 0.90]], [[0.95, 0.95], [0.95, 0.95]]),
            "yes",
            "scores below",
            "so no choice among the swept rates, however it is made, removes the deficit",
        ),
        # below in the means, the paired interval holds zero
        (
            True,
            ([[0.6, 0.6], [0.6, 0.6]], [[0.80, 0.99], [0.70, 0.80]]),
            ([[0.90, 0.80], [0.84, 0.80]], [[0.95, 0.95], [0.95, 0.95]]),
            "in the means",
            "scores below",
            "so in the means the deficit outlasts every choice among the swept rates, though not beyond the noise",
        ),
        # batch norm's best above none's worst: some choice undoes the deficit
        (
            True,
            ([[0.6, 0.6], [0.6, 0.6]], [[0.92, 0.93], [0.92, 0.93]]),
            ([[0.90, 0.91], [0.89, 0.90]], [[0.95, 0.95], [0.95, 0.95]]),
            "no",
            "does not score below",
            "so some choice among the swept rates would undo the deficit: the answer above rests on the choice",
        ),
        # an advantage: batch norm's worst (1e-3, 0.96) above none's best (1e-2, 0.80)
        (
            False,
            ([[0.96, 0.97], [0.96, 0.96]], [[0.99, 0.99], [0.99, 0.99]]),
            ([[0.70, 0.70], [0.70, 0.71]], [[0.80, 0.81], [0.80, 0.80]]),
            "yes",
            "scores above",
            "so no choice among the swept rates, however it is made, removes the advantage",
        ),
    ],
)
def test_every_bound_sentence(deficit, bn, none, holds, relation, tail):
    runs = bound_runs(bn, none)
    rates = lr_sweep_report.rate_table(runs, 0.95)
    m = stability.bound_macros(runs, rates, 2, deficit, 0.95)
    assert m["lrBoundHolds"] == holds
    side, other = ("best", "worst") if deficit else ("worst", "best")
    b_row, n_row = stability.extreme_rates(rates, 2, deficit)
    # the extremes by hand: batch norm's best (or worst) mean test accuracy over its rates, none's opposite
    bn_means = {lr: np.mean(v) for lr, v in zip((1e-3, 1e-2), bn)}
    none_means = {lr: np.mean(v) for lr, v in zip((1e-3, 1e-2), none)}
    pick = max if deficit else min
    assert b_row.lr == pick(bn_means, key=bn_means.get)
    assert n_row.lr == (min if deficit else max)(none_means, key=none_means.get)
    d = np.subtract(np.ravel(bn[[1e-3, 1e-2].index(b_row.lr)]), np.ravel(none[[1e-3, 1e-2].index(n_row.lr)]))
    assert m["lrBoundSentence"].startswith(
        f"At batch 2 batch normalisation at its {side} swept rate on the test half "
        f"($1 \\times 10^{{{int(np.log10(b_row.lr))}}}$, {100 * b_row.test_mean:.1f}\\%) {relation} no normaliser "
        f"at its {other}"
    )
    assert f"the difference is ${100 * d.mean():+.2f}$ points" in m["lrBoundSentence"]
    assert m["lrBoundSentence"].endswith(": " + tail)
    assert not problems(m["lrBoundSentence"])


# ---- the report with folds, and without -----------------------------------------------------


@pytest.mark.parametrize("adjustment", ADJUSTMENTS)
def test_the_fold_report_pairs_over_fold_and_seed_and_adds_its_stability(adjustment):
    runs = fold_runs(VAL, {k: [[min(1.0, v + 0.01 * s) for s, v in enumerate(f)] for f in fs] for k, fs in VAL.items()})
    families = declared_families(adjustment)
    out = lr_sweep_report.report(runs, 1e-3, 0.95, LABELS, DESIGN, families)
    m = out["macros"]
    assert m["lrFolds"] == "3" and m["lrOtherFolds"] == "other 2 folds" and m["lrSeedsPhrase"] == "2 seeds"
    assert m["lrFoldRows"] == "100" and m["lrValidationRows"] == "300" and "lrFitRows" not in m
    assert m["lrSweepNetworks"] == "36"  # 2 normalisers x 3 rates x 3 folds x 2 seeds
    paired = out["paired"].set_index("rates")
    # batch norm at 1e-2 minus none at 1e-2, paired by (fold, seed): the differences by hand
    a = [v + 0.01 * s for f in VAL[("batchnorm", 1e-2)] for s, v in enumerate(f)]
    b = [v + 0.01 * s for f in VAL[("none", 1e-2)] for s, v in enumerate(f)]
    ci = sps.ttest_rel(a, b).confidence_interval(0.95)
    assert paired.loc["best"].seeds == 6 and paired.loc["best"].gain == pytest.approx(np.mean(np.subtract(a, b)))
    assert (paired.loc["best"].ci_low, paired.loc["best"].ci_high) == pytest.approx((ci.low, ci.high), abs=1e-12)
    header, rows, align, _ = out["tables"]["validation_table"]
    assert header[-2:] == ["folds", "margin"] and len(align) == len(header)
    assert rows[0][:2] == ["none", "2"] and rows[0][-2] == "2/3" and rows[1][-2] == "2/3"
    assert out["summary"]["folds"] == 3 and out["summary"]["stability"]["batchnorm"]["2"]["agree"] == 2
    assert m["lrBoundHolds"] in ("yes", "in the means", "no") and m["lrBoundSentence"].startswith("At batch 2")
    assert m["lrChosenGridSentence"].startswith("The chosen rate is not the grid's in 2 of the 2 cells")
    assert out["summary"]["design"] == {k: int(v) for k, v in DESIGN.items()}
    # every family the fold report forms, recorded as declared: one batch size, 2 cells, both not the grid's rate
    records = out["summary"]["families"]
    assert records == {
        "lr_gap": declared(families, "lr_gap").record(0.95, 1),
        "lr_choice": declared(families, "lr_choice").record(0.95, 2),
        "lr_margin": declared(families, "lr_margin").record(0.95, 2),
    }
    assert {r["adjustment"] for r in records.values()} == {adjustment}
    assert records["lr_choice"]["level"] == (1 - 0.05 / 2 if adjustment == "bonferroni" else 0.95)


def test_without_folds_the_report_has_none_of_the_fold_outputs():
    from test_lr_sweep import runs_table

    out = lr_sweep_report.report(
        runs_table(), 1e-2, 0.95, LABELS, dict(fit_rows=8, validation_rows=2, epochs=1, grid_seeds=5), FAMILIES
    )
    fold_keys = {
        "lrFolds",
        "lrOtherFolds",
        "lrChosenGridSentence",
        "lrSeedsPhrase",
        "lrFoldRows",
        "lrStabilitySentence",
        "lrBoundSentence",
    }
    assert not fold_keys & set(out["macros"]) and "lrFitRows" in out["macros"]
    assert "stability" not in out["summary"] and "folds" not in out["summary"]
    assert list(out["summary"]["families"]) == ["lr_gap"]  # lr_choice and lr_margin only with folds
    assert out["tables"]["validation_table"][0][-1] == "$1 \\times 10^{-1}$"  # no fold columns
    assert "fold" not in out["best"].columns and list(out["rates"].columns)[3] == "seeds"


# ---- config and cost ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def schema():
    return load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml")


def _error(cfg, schema):
    try:
        validate(cfg, schema)
    except ConfigError as e:
        return str(e)
    return None


def test_folds_config_is_checked_with_one_line_naming_the_key(test_config, schema):
    assert test_config["lr_sweep"]["folds"] == 2 and _error(test_config, schema) is None
    for folds, key in ((1, "lr_sweep.folds"), (2.5, "lr_sweep.folds")):
        cfg = copy.deepcopy(test_config)
        cfg["lr_sweep"]["folds"] = folds
        message = _error(cfg, schema)
        assert message is not None and message.startswith(f"config error: {key}") and "\n" not in message
    both = copy.deepcopy(test_config)
    both["lr_sweep"]["validation_fraction"] = 0.2
    message = _error(both, schema)
    assert message.startswith("config error: lr_sweep.folds: set exactly one") and message.endswith("both are set")
    neither = copy.deepcopy(test_config)
    del neither["lr_sweep"]["folds"]
    for name in ("lr_choice", "lr_margin"):  # formed only with folds
        del neither["families"][name]
    assert _error(neither, schema).endswith("neither is set")
    split = copy.deepcopy(neither)
    split["lr_sweep"]["validation_fraction"] = 0.2
    assert _error(split, schema) is None
    split["lr_sweep"]["seeds"] = [0]  # one split: two seeds at least, for an interval
    assert _error(split, schema).startswith("config error: lr_sweep.seeds: at least 2 seeds")
    one_seed = copy.deepcopy(test_config)
    one_seed["lr_sweep"]["seeds"] = [0]  # folds: the folds are the replicates
    assert _error(one_seed, schema) is None


def test_the_configs_choose_the_rate_as_stated():
    def sweep(name):
        return yaml.safe_load((ROOT / "config" / name).read_text())["lr_sweep"]

    for name in ("config.yaml", "combined.yaml"):
        assert sweep(name)["folds"] == 4 and sweep(name)["seeds"] == [0, 1] and "validation_fraction" not in sweep(name)
    for name in ("fashion-mlp.yaml", "fashion-tiny.yaml", "fashion-cluster.yaml"):
        assert "folds" not in sweep(name) and "validation_fraction" in sweep(name)


def test_the_cost_of_k_folds_is_k_times_the_networks_on_k_minus_one_kths_of_the_rows(test_config):
    from bnstudy.pipeline.plan import train_rows
    from bnstudy.studies.lr_sweep.cost import WORK

    params = {"seeds": [0, 1], "lrs": [1e-3, 1e-2], "batch_sizes": [4], "recipe": {"epochs": 1, "last_batch": "drop"}}
    work = WORK["train_lr_sweep"].function
    wc = {"normaliser": "none", "batch_size": "4"}
    n = train_rows(test_config)
    split = copy.deepcopy(test_config)
    del split["lr_sweep"]["folds"]
    k = copy.deepcopy(test_config)
    k["lr_sweep"]["folds"] = 4
    split["lr_sweep"]["validation_fraction"] = 1 - round(n * 3 / 4) / n  # one split training on (K-1)/K of the rows
    assert work(params, wc, k) == pytest.approx(4 * work(params, wc, split), rel=1e-9)


@pytest.mark.slow
def test_folds_beside_a_validation_split_stop_snakemake_before_any_job(test_config, tmp_path):
    from conftest import snakemake

    bad = copy.deepcopy(test_config)
    bad["lr_sweep"]["validation_fraction"] = 0.2
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    result = snakemake("-n", "--configfile", str(path), timeout=120)
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("config error:")]
    assert len(errors) == 1 and errors[0] == result.stderr.strip().splitlines()[-1], result.stderr
    assert errors[0].startswith("config error: lr_sweep.folds: set exactly one") and "Traceback" not in result.stderr
