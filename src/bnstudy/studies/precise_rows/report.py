"""The budget study's summary: per training batch size and statistic, test accuracy against the
exact statistics (paired by seed), the distance to them, JSON, macros and a table.

Keys of a statistic: ``ema`` (the trained running averages), each budget of rows (``"64"``, ...)
and ``all`` (the whole pass, PreciseBN); ``exact`` is what each is compared with. A network's value
for a budget is the mean over its replicates (passes drawn from seeds ``seed``, ``seed + 1``, ...);
the interval is over seeds (networks), a Student-t interval of the per-seed differences
(:func:`bnstudy.evaluation.paired.paired_interval`), one per cell.

The budgets' and the whole pass's differences to the exact statistics form the family
``precise_rows`` the config declares (``families``: :mod:`bnstudy.evaluation.families`), its
members the budgets and the whole pass (:func:`members`); each interval is at that family's level
and worded by its tag and phrase. One comparison, one verdict: the running averages against the
exact statistics are the batch-size study's comparison :data:`EMA_COMPARISON` (exact minus running
averages) on the same networks, a member of its family ``remedies``, so their row quotes that
study's interval, sign reversed (:func:`adjusted`). Nothing here depends on the CPU.
"""

from __future__ import annotations

import math

import pandas as pd

from bnstudy.base.stats import mean_sd
from bnstudy.evaluation.families import Family
from bnstudy.evaluation.paired import paired_interval
from bnstudy.paper import latex
from bnstudy.paper.latex import at_batches, points_interval, signed_points, words

EMA, ALL, EXACT = "ema", "all", "exact"
# the batch-size study's paired comparison (bnstudy.studies.batch_size.paired) whose negative the
# running averages' row is: its family (remedies, over that study's batch sizes) is the row's
EMA_COMPARISON = "exact_vs_ema"


def members(budgets) -> int:
    """The members of the family ``precise_rows`` at a batch size: each budget and the whole pass."""
    return len(budgets) + 1


def intervals(remedies: Family, ours: Family, ema_members: int, budgets) -> str:
    """Which interval each row reports, in words: the running averages' that of the batch-size study
    (of its family ``remedies``, over ``ema_members`` batch sizes), the others ``ours``'s."""
    return (
        "the running averages' interval is the batch-size study's exact_vs_ema (exact minus running averages), "
        f"{remedies.phrase(ema_members)}, sign reversed; the others are {ours.phrase(members(budgets))}"
    )


def mean_of(values) -> float:
    """The mean of ``values``, correctly rounded (:func:`bnstudy.base.stats.mean_sd`): the same bits
    in any order and on any CPU, and no compiled code loaded (the report re-runs only when it changes)."""
    return mean_sd(list(values))[0]


def keys(budgets) -> list[str]:
    """The statistics compared with the exact ones, in the table's order."""
    return [EMA, *(str(k) for k in sorted(budgets)), ALL]


def per_seed(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per batch size, statistic key and seed: accuracy and distances, means over replicates
    in replicate order, and the rows pooled (0 for the running averages)."""
    rows = rows.assign(
        key=[EMA if a == EMA else EXACT if a == EXACT else str(r) for a, r in zip(rows["arm"], rows["rows"])]
    )
    out = []
    for (b, key, seed), g in rows.groupby(["batch_size", "key", "seed"], sort=True):
        g = g.sort_values("replicate")
        out.append(
            {"batch_size": int(b), "key": key, "seed": int(seed), "rows_used": int(g["rows_used"].iloc[0]),
             "accuracy": mean_of(g["accuracy"]), "mean_distance": mean_of(g["mean_distance"]),
             "var_distance": mean_of(g["var_distance"])}
        )  # fmt: skip
    return pd.DataFrame(out)


def cells(seeds: pd.DataFrame, budgets, confidence: float, family: Family) -> pd.DataFrame:
    """Per batch size and key: mean accuracy, its paired difference to the exact statistics (``gap``,
    ``ci_low``, ``ci_high``: unadjusted) and to the running averages (``vs_ema``...: unadjusted), mean
    distances; and the interval the row reports, ``ci_low_adj``, ``ci_high_adj``: at the level of
    ``family`` (``precise_rows``, :func:`members`), ``family`` the number of intervals that level is
    adjusted over (1: unadjusted; the running averages' row is :func:`adjusted`'s). A budget smaller
    than a batch size has no row there."""
    level = family.level(confidence, members(budgets))
    adjusted_over = members(budgets) if family.adjusted else 1
    out = []
    for b in sorted(set(seeds["batch_size"])):
        at = seeds[seeds["batch_size"] == b]
        exact = at[at["key"] == EXACT].sort_values("seed")
        ema = at[at["key"] == EMA].sort_values("seed")
        for key in keys(budgets):
            g = at[at["key"] == key].sort_values("seed")
            if g.empty and key not in (EMA, ALL) and int(key) < b:  # a budget of less than one batch
                continue
            if list(g["seed"]) != list(exact["seed"]):
                raise ValueError(
                    f"batch {b}, {key}: seeds {list(g['seed'])} are not the exact arm's {list(exact['seed'])}"
                )
            gap = paired_interval(g["accuracy"], exact["accuracy"], confidence)
            ours = paired_interval(g["accuracy"], exact["accuracy"], level) if key != EMA else gap
            ahead = paired_interval(g["accuracy"], ema["accuracy"], confidence)
            out.append(
                {"batch_size": int(b), "key": key, "seeds": gap["seeds"], "rows_used": int(g["rows_used"].iloc[0]),
                 "accuracy": mean_of(g["accuracy"]), "gap": gap["gain"], "ci_low": gap["ci_low"],
                 "ci_high": gap["ci_high"], "vs_ema": ahead["gain"], "vs_ema_low": ahead["ci_low"],
                 "vs_ema_high": ahead["ci_high"], "mean_distance": mean_of(g["mean_distance"]),
                 "var_distance": mean_of(g["var_distance"]), "family": 1 if key == EMA else adjusted_over,
                 "ci_low_adj": ours["ci_low"], "ci_high_adj": ours["ci_high"]}
            )  # fmt: skip
    return pd.DataFrame(out)


def _same(a: float, b: float) -> bool:
    """Equal to within rounding, or both NaN (one seed: no interval on either side)."""
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=0.0, abs_tol=1e-12)


def adjusted(table: pd.DataFrame, gains: pd.DataFrame) -> pd.DataFrame:
    """``table`` (:func:`cells`) with the running averages' interval the batch-size study's paired
    summary gives (``gains``: ``results/batch_size/gains.csv``, :func:`bnstudy.studies.batch_size.paired.summarise`).

    The running averages' row is that study's :data:`EMA_COMPARISON` at its batch size with the sign
    reversed: its ``family`` and interval at that family's level (``remedies``), reused, not
    recomputed. It must be the same comparison: as many seeds, and a mean and unadjusted interval
    that are exactly the negatives of the row's (the same networks scored alike), else a ValueError.
    Every other row keeps :func:`cells`'s interval."""
    ours = gains[gains["comparison"] == EMA_COMPARISON].set_index("batch_size")
    out = []
    for _, r in table.iterrows():
        row = r.to_dict()
        if r["key"] == EMA:
            b = int(r["batch_size"])
            if b not in ours.index:
                raise ValueError(f"batch {b}: the batch-size study has no {EMA_COMPARISON} row")
            g = ours.loc[b]
            if int(g["seeds"]) != int(r["seeds"]) or not (
                _same(g["gain"], -r["gap"]) and _same(g["ci_low"], -r["ci_high"]) and _same(g["ci_high"], -r["ci_low"])
            ):
                raise ValueError(
                    f"batch {b}: the batch-size study's {EMA_COMPARISON} ({g['gain']!r} over {int(g['seeds'])} seeds, "
                    f"[{g['ci_low']!r}, {g['ci_high']!r}]) is not the running averages' difference to the exact "
                    f"statistics here ({r['gap']!r} over {int(r['seeds'])} seeds) with its sign reversed"
                )
            row |= {"family": int(g["family"]), "ci_low_adj": -g["ci_high_adj"], "ci_high_adj": -g["ci_low_adj"]}
        out.append(row)
    return pd.DataFrame(out, columns=table.columns)


def _gaps(table: pd.DataFrame, key: str) -> str:
    """The range over batch sizes of ``key``'s mean difference to the exact statistics, in words:
    ``from $-0.45$ to $+0.11$ points``, or ``$-0.45$ points`` where every batch size gives one value."""
    g = table[table["key"] == key]
    lo, hi = signed_points(min(g["gap"])), signed_points(max(g["gap"]))
    return f"${lo}$ points" if lo == hi else f"from ${lo}$ to ${hi}$ points"


def _where(table: pd.DataFrame, key: str, low: str, high: str) -> dict[str, list[str]]:
    """Batch sizes where ``key``'s interval ``low``..``high`` lies wholly above, wholly below zero, or holds it."""
    g = table[table["key"] == key].sort_values("batch_size")
    sides = {"above": [], "below": [], "neither": []}
    for _, r in g.iterrows():
        side = "above" if r[low] > 0 else "below" if r[high] < 0 else "neither"
        sides[side].append(str(int(r["batch_size"])))
    return sides


def sides_clause(sides: dict[str, list[str]]) -> str:
    """``lies wholly below zero at batches 2 and 4, and contains zero at batches 8 and 16``: each
    clause only where it has batch sizes, in the order above, below, contains; a comma before the
    last clause where a list of batch sizes has its own ``and``."""
    verbs = {"above": "lies wholly above zero", "below": "lies wholly below zero", "neither": "contains zero"}
    clauses = [f"{verbs[side]} {at_batches(sides[side])}" for side in verbs if sides[side]]
    if len(clauses) > 1 and any(" and " in c for c in clauses):  # "at batches 4 and 8, and contains zero"
        return ", ".join(clauses[:-1]) + ", and " + clauses[-1]
    return words(clauses)


def macros(table: pd.DataFrame, budgets, replicates: int, seed: int, family: Family) -> dict[str, str]:
    """Every number and generated clause of the section (``family``: ``precise_rows``)."""
    small, large = str(min(budgets)), str(max(budgets))
    m = {
        "preciseRowsBudgets": words([latex.fmt(int(k)) for k in sorted(budgets)]),
        "preciseRowsSmallest": latex.fmt(int(small)),
        "preciseRowsLargest": latex.fmt(int(large)),
        "preciseRowsReplicates": str(replicates),
        "preciseRowsSeeds": words([str(seed + r) for r in range(replicates)]),
        "preciseRowsBatchSizes": words([str(b) for b in sorted(set(table["batch_size"]))]),
    }
    for name, key in (("Smallest", small), ("Largest", large), ("All", ALL), ("Ema", EMA)):
        m[f"preciseRows{name}Gaps"] = _gaps(table, key)
    held = sorted(int(b) for b in table[table["key"] == small]["batch_size"])
    every = sorted(set(int(b) for b in table["batch_size"]))
    m["preciseRowsSmallestOver"] = (
        "the training batch sizes"
        if held == every
        else f"training batches {words([str(b) for b in held])} (the batch sizes of which it holds at least one batch)"
    )
    m["preciseRowsSmallestVsExact"] = sides_clause(_where(table, small, "ci_low_adj", "ci_high_adj"))
    m["preciseRowsLargestVsExact"] = sides_clause(_where(table, large, "ci_low_adj", "ci_high_adj"))
    m["preciseRowsAllVsExact"] = sides_clause(_where(table, ALL, "ci_low_adj", "ci_high_adj"))
    m["preciseRowsSmallestVsEma"] = sides_clause(_where(table, small, "vs_ema_low", "vs_ema_high"))
    # the running averages: the batch-size study's adjusted interval (:func:`adjusted`), its family's size
    m["preciseRowsEmaVsExact"] = sides_clause(_where(table, EMA, "ci_low_adj", "ci_high_adj"))
    m["preciseRowsEmaFamily"] = str(int(table[table["key"] == EMA]["family"].max()))
    m["preciseRowsAbstractSentence"] = abstract_sentence(table, budgets, family)
    return m


def abstract_sentence(table: pd.DataFrame, budgets, family: Family) -> str:
    """The abstract's sentence on PreciseBN's budget: the smallest budget whose paired interval against
    the exact statistics (at ``family``'s level, named by its tag) lies wholly below zero at no training
    batch size (and that holds a batch of each), with its range of mean differences and
    :func:`sides_clause`, and the budget before it, whose interval does lie below zero somewhere; where
    no budget is clear of zero, the largest. That an interval contains zero is said as such, never that
    the two statistics score alike."""
    every = sorted(set(int(b) for b in table["batch_size"]))
    ordered = [str(k) for k in sorted(budgets)]

    def sides(key):
        return _where(table, key, "ci_low_adj", "ci_high_adj")

    def clear(key):
        return sorted(int(b) for b in table[table["key"] == key]["batch_size"]) == every and not sides(key)["below"]

    found = next((k for k in ordered if clear(k)), None)
    key = ordered[-1] if found is None else found
    rows = f"{latex.fmt(int(key))} training rows"
    if found is None:
        lead = "Even with" if sides(key)["below"] else "With"
        rows += ", the largest budget tried,"
    else:
        lead = "With"
        rows += ", the smallest budget tried," if found == ordered[0] else ","
    text = (
        f"{lead} statistics recomputed by PreciseBN from {rows} inference-mode accuracy minus that with the "
        f"exact statistics is {_gaps(table, key)} and the {family.tag} paired interval {sides_clause(sides(key))}"
    )
    if found is not None and found != ordered[0]:
        before = ordered[ordered.index(found) - 1]
        text += f"; with {latex.fmt(int(before))} rows it {sides_clause(sides(before))}"
    return text


def latex_table(table: pd.DataFrame, budgets, note: str, ema_tag: str) -> tuple[list[str], list[list[str]], str, str]:
    """Rows: training batch sizes; columns: each statistic's paired difference to the exact
    statistics in signed points with the interval it reports (:func:`adjusted`: the running averages'
    as in the batch-size study, named by ``ema_tag``, its family's tag; the others at the level of
    the family ``precise_rows``); ``note``: :func:`intervals`."""
    names = {EMA: f"running averages ({ema_tag})", ALL: "whole pass"} | {
        str(k): f"{latex.fmt(int(k))} rows" for k in budgets
    }
    header = ["batch", *(names[k] for k in keys(budgets))]
    rows = []
    for b in sorted(set(table["batch_size"])):
        row = [str(b)]
        for key in keys(budgets):
            r = table[(table["batch_size"] == b) & (table["key"] == key)]
            if r.empty:  # a budget of less than one batch
                row.append("--")
                continue
            r = r.iloc[0]
            ci = points_interval(r["ci_low_adj"], r["ci_high_adj"], signed=True)
            row.append(f"${signed_points(r['gap'])}$ ${ci}$")
        rows.append(row)
    align = "r" + "l" * len(keys(budgets))
    return header, rows, align, f"accuracy against the exact statistics, paired by seed (points); {note}"


def summary_json(table: pd.DataFrame, budgets, replicates: int, seed: int, confidence: float, note, family) -> dict:
    """``results/summary/precise_rows.json``: the settings, every cell of :func:`adjusted`, ``note``
    (:func:`intervals`) and the record of the family ``precise_rows`` (``family``)."""
    return {
        "intervals": note,
        "families": {family.name: family.record(confidence, members(budgets))},
        "budgets": [int(k) for k in sorted(budgets)],
        "replicates": int(replicates),
        "seed": int(seed),
        "confidence": float(confidence),
        "cells": table.to_dict("records"),
    }
