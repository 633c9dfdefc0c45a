"""The learning-rate sweep with K folds (``lr_sweep.folds``): how stable each cell's choice of rate
is, and the comparison no choice of rate can change.

- :func:`fold_choices`: each fold's own best rate (best mean validation accuracy over the seeds of
  that fold; of equals, the lowest rate), the choice rule of
  :func:`bnstudy.studies.lr_sweep.report.best_rates` applied to one fold;
- :func:`stability`: per cell, in how many folds that rate is the chosen one, the runner-up rate
  and the chosen rate's validation margin over it, paired over (fold, seed) with a Student-t
  interval (:func:`bnstudy.evaluation.paired.paired_interval`) at the level of the family
  ``lr_margin`` (its members: the cells);
- :func:`chosen_minus_grid`: the chosen rate minus the grid's on the test half, at the level of
  the family ``lr_choice`` (its members: the cells whose chosen rate is not the grid's);
- :func:`extreme_rates` / :func:`bound_macros`: at the smallest batch, batch normalisation at its
  best swept rate against no normaliser at its worst (where batch norm is behind at the grid's
  rate; at its worst against none at its best where it is ahead), both read on the test half, so
  the comparison favours the side it argues against and holds whatever rule chooses the rate;
- :func:`stability_macros`, :func:`stability_columns`: the sentences and the validation table's
  columns.

The K fold networks of one seed share (K - 2) / (K - 1) of their training rows, so intervals that
take the folds x seeds as replicates are narrower than independent networks would give; the paper
says so. Pure pandas and the fixed-order statistics; nothing here depends on the CPU.
"""

from __future__ import annotations

import pandas as pd

from bnstudy.base.stats import mean_sd
from bnstudy.evaluation.families import Family
from bnstudy.evaluation.paired import paired_interval
from bnstudy.paper import latex
from bnstudy.paper.latex import points, points_interval, power_of_ten, signed_points, verdict, words

REPLICATE = ["fold", "seed"]


def fold_choices(runs: pd.DataFrame) -> pd.DataFrame:
    """Per normaliser, batch size and fold: ``lr``, the rate with the highest mean validation
    accuracy over that fold's seeds (of equals, the lowest rate)."""
    out = []
    for (norm, b, fold), g in runs.groupby(["normaliser", "batch_size", "fold"], sort=True):
        means = {lr: _mean(h.sort_values("seed").validation_accuracy) for lr, h in g.groupby("lr", sort=True)}
        top = max(means.values())
        out.append(
            {
                "normaliser": norm,
                "batch_size": int(b),
                "fold": int(fold),
                "lr": min(k for k, v in means.items() if v == top),
            }
        )
    return pd.DataFrame(out)


def _mean(values) -> float:
    return mean_sd(list(values))[0]  # the correctly rounded mean


def _by_replicate(runs: pd.DataFrame, norm: str, b: int, lr: float, column: str) -> pd.Series:
    g = runs[(runs.normaliser == norm) & (runs.batch_size == b) & (runs.lr == lr)]
    return g.set_index(REPLICATE)[column].sort_index()


def stability(runs: pd.DataFrame, rates: pd.DataFrame, best: pd.DataFrame, confidence: float, family: Family):
    """Per cell of ``best`` (the chosen rates): ``folds``; ``agree``, the folds whose own best rate
    (:func:`fold_choices`) is the chosen one; ``runner_up``, the rate of the next best mean validation
    accuracy over folds x seeds (``rates``; of equals, the lowest); and the chosen rate's validation
    accuracy minus the runner-up's paired over (fold, seed): ``margin``, ``margin_ci_low``,
    ``margin_ci_high`` (at ``family``'s level, ``lr_margin``, the cells its members), ``replicates``."""
    level = family.level(confidence, len(best))
    own = fold_choices(runs).groupby(["normaliser", "batch_size"])
    out = []
    for row in best.itertuples(index=False):
        folds = own.get_group((row.normaliser, row.batch_size))
        g = rates[(rates.normaliser == row.normaliser) & (rates.batch_size == row.batch_size) & (rates.lr != row.lr)]
        g = g.sort_values("lr")
        runner = float(g[g.validation_mean == g.validation_mean.max()].lr.iloc[0])
        a, b = (
            _by_replicate(runs, row.normaliser, row.batch_size, lr, "validation_accuracy") for lr in (row.lr, runner)
        )
        pair = paired_interval(a.tolist(), b.loc[a.index].tolist(), level)
        out.append(
            {"normaliser": row.normaliser, "batch_size": int(row.batch_size), "lr": float(row.lr)}
            | {"folds": len(folds), "agree": int((folds.lr == row.lr).sum()), "runner_up": runner}
            | {"margin": pair["gain"], "margin_ci_low": pair["ci_low"], "margin_ci_high": pair["ci_high"]}
            | {"replicates": pair["seeds"]}
        )
    return pd.DataFrame(out)


def _prose(norm: str, labels: dict[str, str]) -> str:
    return "no normaliser" if norm == "none" else labels[norm]


def _margin(r) -> tuple[str, str]:
    """A cell's margin over its runner-up and its interval, in signed points with two decimals."""
    ci = points_interval(r.margin_ci_low, r.margin_ci_high, signed=True, digits=2)
    return f"${signed_points(r.margin, 2)}$", f"${ci}$"


def stability_macros(stab: pd.DataFrame, labels: dict[str, str], size: int, seeds: int, family: Family) -> dict:
    """``lrFolds``, ``lrOtherFolds`` (those a fold network trains on), ``lrSeedsPhrase`` (``seeds``
    in words); ``lrStabilitySentence``: in how many cells every fold picks the chosen rate on
    its own, and the fewest folds that do; ``lrMarginSentence``: in how many cells the chosen rate's
    paired margin over the runner-up lies wholly above zero (its interval named by ``family``'s tag,
    ``lr_margin``); at batch ``size`` (the smallest) each normaliser's agreeing folds and margin."""
    k, cells = int(stab.folds.max()), len(stab)
    m = {
        "lrFolds": str(k),
        "lrOtherFolds": "other fold" if k == 2 else f"other {k - 1} folds",
        "lrSeedsPhrase": f"{seeds} seed{'s' if seeds > 1 else ''}",
        "lrFoldOverlap": overlap_sentence(k),
    }
    m["lrStabilitySentence"] = stability_sentence(stab, labels)
    above = int((stab.margin_ci_low > 0).sum())
    count = "every one" if above == cells else "none" if above == 0 else str(above)
    m["lrMarginSentence"] = (
        f"the chosen rate's mean validation accuracy exceeds the runner-up's by {_article(family.tag)} paired "
        f"interval wholly above zero in {count} of the {cells} cells"
    )
    for r in stab[stab.batch_size == size].itertuples():
        m[latex.macro_name("lr fold agree", r.normaliser, "min")] = str(int(r.agree))
        m[latex.macro_name("lr fold agree", r.normaliser, "min phrase")] = agreeing_folds(int(r.agree), int(r.folds))
        m[latex.macro_name("lr margin", r.normaliser, "min")] = f"{_margin(r)[0]} points {_margin(r)[1]}"
        m[latex.macro_name("lr runner up", r.normaliser, "min")] = power_of_ten(r.runner_up)
    return m


def agreeing_folds(agree: int, folds: int) -> str:
    """The folds that pick a rate on their own, for "the best in ... taken alone": "all 4 folds",
    "2 of the 4 folds" or "none of the 4 folds"."""
    if agree == folds:
        return f"all {folds} folds"
    return f"{latex.count(agree)} of the {folds} folds"


def _article(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def overlap_sentence(k: int) -> str:
    """What the K fold networks of one seed share, and what that does to intervals that count them
    as replicates."""
    if k == 2:
        return "The two fold networks of one seed train on disjoint halves of the rows, each validated on the other's"
    return (
        f"The {k} fold networks of one seed share {k - 2} of the {k - 1} folds each trains on, so these intervals, "
        "which count the folds as replicates, are narrower than independent networks would give"
    )


def stability_sentence(stab: pd.DataFrame, labels: dict[str, str]) -> str:
    """In how many cells all K folds, each on its own, pick the chosen rate, and how few do in the
    least stable cell or cells (named where there are at most three, else counted)."""
    k, cells = int(stab.folds.max()), len(stab)
    every = int((stab.agree == stab.folds).sum())
    all_k = "both" if k == 2 else f"all {k}"
    if every == cells:
        return f"In every one of the {cells} cells {all_k} folds, each on its own, pick the chosen rate"
    fewest = int(stab.agree.min())
    least = [f"{_prose(r.normaliser, labels)} at batch {r.batch_size}" for r in stab.itertuples() if r.agree == fewest]
    if len(least) > 3:
        where = f"in the {len(least)} least stable cells"
    else:
        where = f"in the least stable cell{'s' if len(least) > 1 else ''} ({words(least)})"
    few = f"none of the {k} does" if fewest == 0 else f"only {fewest} of the {k} do{'es' if fewest == 1 else ''}"
    if every:
        lead = f"{all_k.capitalize()} folds, each on its own, pick the chosen rate in {every} of the {cells} cells"
    else:
        lead = f"In no cell do {all_k} folds, each on its own, pick the chosen rate"
    return f"{lead}; {where}, {few}"


def chosen_minus_grid(runs, best: pd.DataFrame, grid: pd.DataFrame, confidence: float, family: Family) -> pd.DataFrame:
    """Per cell whose chosen rate (``best``) is not the grid's (``grid``: the rows at the grid's rate),
    test accuracy at the chosen rate minus at the grid's, paired over (fold, seed): the networks
    of one fold and seed share their rows and initial weights. Intervals at ``family``'s level
    (``lr_choice``), those cells its members (``family``: their number)."""
    at_grid = grid.set_index(["normaliser", "batch_size"]).lr
    cells = [r for r in best.itertuples(index=False) if r.lr != at_grid[(r.normaliser, r.batch_size)]]
    out = []
    for r in cells:
        lr = float(at_grid[(r.normaliser, r.batch_size)])
        a, b = (_by_replicate(runs, r.normaliser, r.batch_size, v, "test_accuracy") for v in (r.lr, lr))
        pair = paired_interval(a.tolist(), b.loc[a.index].tolist(), family.level(confidence, len(cells)))
        out.append(
            {"normaliser": r.normaliser, "batch_size": int(r.batch_size), "lr": float(r.lr), "grid_lr": lr}
            | {"gain": pair["gain"], "ci_low_adj": pair["ci_low"], "ci_high_adj": pair["ci_high"]}
            | {"family": len(cells)}
        )
    columns = ["normaliser", "batch_size", "lr", "grid_lr", "gain", "ci_low_adj", "ci_high_adj", "family"]
    return pd.DataFrame(out, columns=columns)


def choice_record(family: Family, confidence: float, members: int) -> dict:
    """The summary's record of ``lr_choice`` (:meth:`Family.record`); where every chosen rate is the
    grid's the family has no members and no interval: ``members`` 0, ``level`` None."""
    if members:
        return family.record(confidence, members)
    return {"adjustment": family.adjustment, "members": 0, "confidence": confidence, "level": None} | {
        "smallest_effect": family.smallest_effect
    }


def chosen_grid_sentence(diff: pd.DataFrame, cells: int, family: Family) -> str:
    """``lrChosenGridSentence``: where the chosen rate is not the grid's, in how many cells it scores
    below the grid's on the test half, and where the paired intervals lie (at ``family``'s level,
    ``lr_choice``, and said so in its phrase where there are more than one)."""
    if diff.empty:
        return f"In all {cells} cells the chosen rate is the grid's"
    n = len(diff)
    below = int((diff.gain < 0).sum())
    lo, hi = int((diff.ci_high_adj < 0).sum()), int((diff.ci_low_adj > 0).sum())
    if n == 1:
        scores = "scores below" if below else "does not score below"
        where = verdict(diff.ci_low_adj.iloc[0], diff.ci_high_adj.iloc[0])
        return (
            f"The chosen rate is not the grid's in 1 of the {cells} cells, and {scores} it on the test half there; "
            f"paired over folds and seeds, the interval {where}"
        )
    head = f"The chosen rate is not the grid's in {n} of the {cells} cells, and scores below it on the test half"
    head += f" in {below or 'none'} of them"
    sides = [f"wholly below zero in {lo}"] * bool(lo) + [f"wholly above zero in {hi}"] * bool(hi)
    rest = n - lo - hi
    if not sides:
        where = f"contain zero in all {n}"
    else:
        where = "lie " + words(sides) + (f", and contain zero in the other {rest}" if rest else "")
    return f"{head}; paired over folds and seeds, {family.phrase(n)}, the intervals {where}"


def extreme_rates(rates: pd.DataFrame, size: int, deficit: bool) -> tuple[pd.Series, pd.Series]:
    """At batch ``size``, the rows of ``rates`` the bound compares: of a ``deficit``, batch norm at its
    best test mean over the swept rates and no normaliser at its worst; of an advantage, batch norm at
    its worst and no normaliser at its best (of equal means, the lowest rate)."""

    def pick(norm, best):
        g = rates[(rates.normaliser == norm) & (rates.batch_size == size)].sort_values("lr")
        target = g.test_mean.max() if best else g.test_mean.min()
        return g[g.test_mean == target].iloc[0]

    return pick("batchnorm", deficit), pick("none", not deficit)


def bound_macros(runs: pd.DataFrame, rates: pd.DataFrame, size: int, deficit: bool, confidence: float) -> dict:
    """``lrBoundSentence``: batch normalisation at batch ``size`` at the swept rate that most favours
    it against no normaliser at the one that least favours none (:func:`extreme_rates`), both on the
    test half, paired over (fold, seed) with an unadjusted interval; whether even that comparison
    keeps the gap's sign, and ``lrBoundHolds``: ``yes`` (its interval lies wholly on the gap's side),
    ``in the means`` (the means keep it, the interval holds zero) or ``no``."""
    bn, none = extreme_rates(rates, size, deficit)
    a, b = (_by_replicate(runs, r.normaliser, size, r.lr, "test_accuracy") for r in (bn, none))
    pair = paired_interval(a.tolist(), b.loc[a.index].tolist(), confidence)
    holds = bn.test_mean < none.test_mean if deficit else bn.test_mean > none.test_mean
    beyond = pair["ci_high"] < 0 if deficit else pair["ci_low"] > 0
    side, other = ("best", "worst") if deficit else ("worst", "best")
    relation = "below" if deficit else "above"
    scores = f"scores {relation}" if holds else f"does not score {relation}"
    head = (
        f"At batch {size} batch normalisation at its {side} swept rate on the test half ({power_of_ten(bn.lr)}, "
        f"{points(bn.test_mean)}\\%) {scores} no normaliser at its {other} "
        f"({power_of_ten(none.lr)}, {points(none.test_mean)}\\%); paired over folds and seeds the difference is "
        f"${signed_points(pair['gain'])}$ points ${points_interval(pair['ci_low'], pair['ci_high'], signed=True)}$, "
        f"an interval that {verdict(pair['ci_low'], pair['ci_high'])}"
    )
    gap = "deficit" if deficit else "advantage"
    if holds and beyond:
        tail = f"so no choice among the swept rates, however it is made, removes the {gap}"
    elif holds:
        tail = f"so in the means the {gap} outlasts every choice among the swept rates, though not beyond the noise"
    else:
        tail = f"so some choice among the swept rates would undo the {gap}: the answer above rests on the choice"
    verdict_word = "yes" if holds and beyond else "in the means" if holds else "no"
    return {"lrBoundSentence": f"{head}: {tail}", "lrBoundHolds": verdict_word}


def stability_columns(table, stab: pd.DataFrame, labels: dict[str, str]):
    """The validation table (``(header, rows, align, comment)``, a row per normaliser and batch size)
    with two more columns: the folds that pick the chosen rate on their own, and its margin over
    the runner-up (points, paired interval)."""
    header, rows, align, comment = table
    by = stab.set_index(["normaliser", "batch_size"])
    norm_of = {v: k for k, v in labels.items()}
    out = []
    for row in rows:
        r = by.loc[(norm_of[row[0]], int(row[1]))]
        out.append(row + [f"{int(r.agree)}/{int(r.folds)}", " ".join(_margin(r))])
    return (
        header + ["folds", "margin"],
        out,
        align + "rl",
        comment + "; folds picking the chosen rate, its margin over the runner-up",
    )


def stability_json(stab: pd.DataFrame) -> dict:
    """The summary's ``stability``: per normaliser and batch size the folds, those agreeing, the
    runner-up rate and the chosen rate's paired validation margin over it."""
    return {
        n: {
            str(r.batch_size): {"lr": float(r.lr), "folds": int(r.folds), "agree": int(r.agree)}
            | {"runner_up": float(r.runner_up), "margin": float(r.margin), "replicates": int(r.replicates)}
            | {"margin_ci": [float(r.margin_ci_low), float(r.margin_ci_high)]}
            for r in g.itertuples()
        }
        for n, g in stab.groupby("normaliser", sort=True)
    }
