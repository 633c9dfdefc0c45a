"""The equal-steps study's summary: paired comparisons of the arms with the grid's networks of the
same seeds, JSON, macros, the generated sentences of its section and a table.

Per arm (:mod:`.design`), with ``b`` the batch size it trains, ``o`` the other batch size and ``S`` the
other's grid steps (the arm's too), every comparison is paired by seed (the same initial weights; the
grid's batch order at each batch size), each a Student-t interval of the per-seed differences
(:func:`bnstudy.evaluation.paired.paired_interval`), clipped to the range the difference can take:

- ``gap``: batch norm minus no normaliser, inference-mode test accuracy, of the arm (batch ``b``, ``S``
  steps); ``gap_other``: the same of the grid's networks at ``o`` (also ``S`` steps);
- ``batch``: at ``S`` steps, batch norm's gap at the smaller batch size minus its gap at the larger (a
  difference of two gaps: bound 2);
- ``steps``: at batch ``b``, batch norm's gap with more steps minus its gap with fewer (the grid's
  network at ``b`` against the arm; bound 2);
- ``batch_none``, ``batch_batchnorm``: each normaliser's accuracy at the smaller batch size minus the
  larger, at ``S`` steps.

Each comparison's intervals over the arms run (the batch sizes they train at) form the family
``equal_steps`` the config declares (``families``: :mod:`bnstudy.evaluation.families`): every
interval is at its level (:func:`members`: the arms run) and worded by its tag and phrase. Nothing
here depends on the CPU, and no compiled code is loaded.
"""

from __future__ import annotations

import pandas as pd

from bnstudy.evaluation.families import Family
from bnstudy.evaluation.paired import paired_interval
from bnstudy.paper import latex
from bnstudy.paper.latex import difference_clause, points_interval, signed_points, verdict, words
from bnstudy.studies.equal_steps.design import ARMS, arm_batches

GRID, ARM = "grid", "arm"
KEYS = ("gap", "gap_other", "batch", "steps", "batch_none", "batch_batchnorm")
BOUNDS = {"batch": 2.0, "steps": 2.0}  # differences of two gaps; the others differences of two shares


def members(arms) -> int:
    """The members of the family ``equal_steps``: the arms run, one per batch size they train at."""
    return len([a for a in ARMS if a in arms])


def intervals(family: Family, arms) -> str:
    """The intervals in words, for the summary and the table's comment."""
    phrase = family.phrase(members(arms))
    return f"Student-t intervals of the per-seed differences, clipped to the range of each difference, {phrase}"


def per_seed(arms: pd.DataFrame, grid: pd.DataFrame, seeds) -> pd.DataFrame:
    """One row per source (``arm``, ``grid``), normaliser, batch size and seed of ``seeds``: the
    inference-mode accuracy (the grid's cells' ``inference`` rows); a seed missing is an error."""
    grid = grid[(grid["mode"] == "inference") & grid["seed"].isin([int(s) for s in seeds])]
    parts = [arms.assign(source=ARM), grid.assign(source=GRID)]
    cols = ["source", "normaliser", "batch_size", "seed", "accuracy"]
    table = pd.concat([p[cols] for p in parts], ignore_index=True)
    for (source, n, b), g in table.groupby(["source", "normaliser", "batch_size"]):
        if sorted(g["seed"]) != sorted(int(s) for s in seeds):
            raise ValueError(f"{source} {n} at batch {b}: seeds {sorted(g['seed'])}, not {sorted(seeds)}")
    return table.sort_values(cols[:4]).reset_index(drop=True)


def _accuracy(table, source, normaliser, b) -> list[float]:
    g = table[(table["source"] == source) & (table["normaliser"] == normaliser) & (table["batch_size"] == b)]
    if g.empty:
        raise ValueError(f"no {source} networks of {normaliser} at batch {b}")
    return list(g.sort_values("seed")["accuracy"])


def _gap(table, source, b) -> list[float]:
    """Batch norm minus no normaliser, seed by seed."""
    bn, none = _accuracy(table, source, "batchnorm", b), _accuracy(table, source, "none", b)
    return [x - y for x, y in zip(bn, none, strict=True)]


def comparisons(table: pd.DataFrame, arms, batch_sizes, steps: dict, confidence: float, family: Family):
    """Every comparison (module docstring) of each arm run, in :data:`ARMS` then :data:`KEYS` order,
    its interval at ``family``'s level (``equal_steps``); ``steps``: the grid's steps at each batch
    size (``{batch size: steps}``)."""
    level = family.level(confidence, members(arms))
    out = []
    for arm in (a for a in ARMS if a in arms):
        b, o = arm_batches(arm, batch_sizes)
        small, large = min(b, o), max(b, o)
        # at S steps: the smaller batch and the larger, one of them the arm, the other the grid
        at_small = ARM if b == small else GRID
        at_large = ARM if b == large else GRID
        # at batch b: more steps and fewer, the grid's network (its own steps) and the arm (the other's)
        more, fewer = (GRID, ARM) if steps[b] > steps[o] else (ARM, GRID)
        pairs = {
            "gap": (_accuracy(table, ARM, "batchnorm", b), _accuracy(table, ARM, "none", b)),
            "gap_other": (_accuracy(table, GRID, "batchnorm", o), _accuracy(table, GRID, "none", o)),
            "batch": (_gap(table, at_small, small), _gap(table, at_large, large)),
            "steps": (_gap(table, more, b), _gap(table, fewer, b)),
            **{
                f"batch_{n}": (_accuracy(table, at_small, n, small), _accuracy(table, at_large, n, large))
                for n in ("none", "batchnorm")
            },
        }
        for key in KEYS:
            a, c = pairs[key]
            r = paired_interval(a, c, level, BOUNDS.get(key, 1.0))
            out.append(
                {"arm": arm, "key": key, "batch_size": b, "other": o, "steps": int(steps[o]),
                 "own_steps": int(steps[b]), "seeds": r["seeds"], "gain": r["gain"], "sd": r["sd"],
                 "ci_low": r["ci_low"], "ci_high": r["ci_high"]}
            )  # fmt: skip
    return pd.DataFrame(out)


def _row(cells: pd.DataFrame, arm: str, key: str) -> dict:
    return cells[(cells["arm"] == arm) & (cells["key"] == key)].iloc[0].to_dict()


# what an interval of the batch (and the step) comparison says of batch norm against no normaliser
READING = {
    "batch": {
        "below": "with the steps held equal, the smaller batch lowers batch norm's accuracy relative to no normaliser",
        "above": "with the steps held equal, the smaller batch raises batch norm's accuracy relative to no normaliser",
        "zero": "with the steps held equal, our seeds cannot tell whether the batch size moves batch norm's "
        "standing against no normaliser",
    },
    "steps": {
        "below": "at this batch size, more steps lower batch norm's accuracy relative to no normaliser",
        "above": "at this batch size, more steps raise batch norm's accuracy relative to no normaliser",
        "zero": "at this batch size, our seeds cannot tell whether the step count moves batch norm's standing "
        "against no normaliser",
    },
}


def side(lo: float, hi: float) -> str:
    """``below``, ``above`` or ``zero`` (the interval holds zero, or is undefined)."""
    return "below" if hi < 0 else "above" if lo > 0 else "zero"


def _points(r: dict) -> str:
    ci = points_interval(r["ci_low"], r["ci_high"], signed=True)
    return f"${signed_points(r['gain'])}$ points ${ci}$, an interval that {verdict(r['ci_low'], r['ci_high'])}"


def _reading(key: str, r: dict, said: dict | None, where: str) -> str:
    """What the interval of ``r`` (the ``batch`` or ``steps`` comparison) says: :data:`READING`, or,
    where an earlier arm's sentence (``said``: its readings by key, each with where it was said) gave
    the same reading, a pointer back to it, so that a paragraph states one reading once."""
    reading = READING[key][side(r["ci_low"], r["ci_high"])]
    if said is not None and key in said and said[key][0] == reading:
        return f", as {said[key][1]}"
    if said is not None:
        said[key] = (reading, where)
    return f": {reading}"


def arm_sentence(rows: dict[str, dict], said: dict | None = None) -> str:
    """The sentence of one arm, four clauses joined by semicolons: batch norm against no normaliser in
    the arm and in the grid at the same steps; the batch comparison at equal steps; the step comparison
    at the arm's batch size, each with what its interval says (:func:`_reading`; ``said``: the readings
    an earlier arm's sentence gave, updated). ``rows``: the arm's :func:`comparisons` rows by key.
    Nothing is said to differ where its interval holds zero."""
    gap, other, batch, step = rows["gap"], rows["gap_other"], rows["batch"], rows["steps"]
    b, o, s, own = int(gap["batch_size"]), int(gap["other"]), int(gap["steps"]), int(gap["own_steps"])
    small, large = min(b, o), max(b, o)
    many, few = latex.fmt(max(s, own)), latex.fmt(min(s, own))
    clauses = [
        f"Trained at batch {b} for the {latex.fmt(s)} steps of batch {o} (its own grid networks take "
        f"{latex.fmt(own)}), batch norm in inference mode has "
        + difference_clause(gap["gain"], gap["ci_low"], gap["ci_high"], "no normaliser"),
        f"batch {o}'s grid networks, with those steps, have "
        + difference_clause(other["gain"], other["ci_low"], other["ci_high"], "no normaliser"),
        f"at {latex.fmt(s)} steps, batch norm's difference at batch {small} minus its difference at batch {large} "
        f"is {_points(batch)}" + _reading("batch", batch, said, f"at {latex.fmt(s)} steps"),
        f"at batch {b}, batch norm's difference after {many} steps minus that after {few} is {_points(step)}"
        + _reading("steps", step, said, f"at batch {b}"),
    ]
    return "; ".join(clauses) + "."


# what the abstract concludes from the batch comparisons' sides, one per arm run
ABSTRACT_READING = {
    "below": "the step count alone does not explain the smaller batch's cost to batch norm",
    "above": "at equal steps the smaller batch favours batch norm",
    "zero": "our seeds cannot tell the batch size's part from the step count's",
}


def abstract_sentence(cells: pd.DataFrame, family: Family) -> str:
    """The abstract's sentence: each arm's batch comparison at equal steps (batch norm's difference from
    no normaliser at the smaller batch minus at the larger), with its interval (named by ``family``'s
    tag) and the seeds it is over, and the steps both batch sizes take, and one reading: a direction only
    where every interval is clear of zero on that side, else which step counts show one."""
    rows = [_row(cells, arm, "batch") for arm in ARMS if arm in set(cells["arm"])]
    small = min(min(int(r["batch_size"]), int(r["other"])) for r in rows)
    large = max(max(int(r["batch_size"]), int(r["other"])) for r in rows)
    parts = [
        f"${signed_points(r['gain'])}$ points ${points_interval(r['ci_low'], r['ci_high'], signed=True)}$ at "
        f"{latex.fmt(int(r['steps']))} steps"
        for r in rows
    ]
    sides = [side(r["ci_low"], r["ci_high"]) for r in rows]
    if len(set(sides)) == 1:
        reading = ABSTRACT_READING[sides[0]]
    else:
        by_side = {
            s: words([latex.fmt(int(r["steps"])) for r, t in zip(rows, sides, strict=True) if t == s])
            for s in ("below", "above", "zero")
        }
        said = {"below": "lies below zero", "above": "lies above zero", "zero": "contains zero"}
        reading = "the interval " + " and ".join(
            f"{said[s]} at {by_side[s]} steps" for s in ("below", "above", "zero") if by_side[s]
        )
    return (
        f"With the optimiser steps held equal, batch normalisation's difference from no normaliser at batch "
        f"{small} minus that at batch {large} is {' and '.join(parts)} ({int(rows[0]['seeds'])} seeds, "
        f"{family.tag}): {reading}"
    )


def results_macro(arm: str) -> str:
    """The name of ``arm``'s sentence macro: ``equalStepsSmallestResults``, ``equalStepsLargestResults``."""
    return f"equalSteps{arm.capitalize()}Results"


def macros(cells: pd.DataFrame, seeds, batch_sizes, family: Family) -> dict[str, str]:
    """Every number and generated sentence of the section: one sentence per arm run (:func:`arm_sentence`,
    a reading an earlier arm gave pointed back to), defined only for the arms the config runs; the
    note that an interval holding zero shows no equivalence, where a gap's interval (whose clause gives
    no reading) holds zero, else empty; ``family``: ``equal_steps``."""
    m = {
        "equalStepsSmallest": str(min(int(b) for b in batch_sizes)),
        "equalStepsLargest": str(max(int(b) for b in batch_sizes)),
        "equalStepsSeeds": words([str(int(s)) for s in seeds]),
        "equalStepsSeedCount": str(len(seeds)),
    }
    said: dict = {}
    for arm in (a for a in ARMS if a in set(cells["arm"])):
        m[results_macro(arm)] = arm_sentence({k: _row(cells, arm, k) for k in KEYS}, said)
    m["equalStepsAbstractSentence"] = abstract_sentence(cells, family)
    zero = any(side(r.ci_low, r.ci_high) == "zero" for r in cells.itertuples() if r.key in ("gap", "gap_other"))
    m["equalStepsZeroNote"] = (
        "An interval that holds zero does not show that the two sides score alike." if zero else ""
    )
    return m


LABELS = {
    "gap": "batch norm $-$ none, batch {b} (arm)",
    "gap_other": "batch norm $-$ none, batch {o} (grid)",
    "batch": "gap at batch {small} $-$ gap at batch {large}",
    "steps": "gap after {many} $-$ after {few} steps, batch {b}",
    "batch_none": "none: batch {small} $-$ batch {large}",
    "batch_batchnorm": "batch norm: batch {small} $-$ batch {large}",
}


def latex_table(cells: pd.DataFrame, note: str) -> tuple[list[str], list[list[str]], str, str]:
    """One row per arm and comparison: the steps both sides take, the mean difference in signed points
    and its interval; ``note``: :func:`intervals`."""
    rows = []
    for _, r in cells.iterrows():
        b, o, s, own = int(r["batch_size"]), int(r["other"]), int(r["steps"]), int(r["own_steps"])
        names = dict(
            b=b, o=o, small=min(b, o), large=max(b, o), many=latex.fmt(max(s, own)), few=latex.fmt(min(s, own))
        )
        steps = f"{names['many']} / {names['few']}" if r["key"] == "steps" else latex.fmt(s)
        ci = points_interval(r["ci_low"], r["ci_high"], signed=True)
        rows.append([LABELS[r["key"]].format(**names), steps, f"${signed_points(r['gain'])}$", f"${ci}$"])
    header = ["comparison (inference mode)", "steps", "difference", "interval"]
    return header, rows, "lrrl", f"paired by seed, percentage points; {note}"


def summary_json(cells: pd.DataFrame, seeds, batch_sizes, confidence: float, family: Family, arms) -> dict:
    """``results/summary/equal_steps.json``: the settings, every comparison and the record of the
    family ``equal_steps`` (``family``; ``arms``: those run)."""
    return {
        "intervals": intervals(family, arms),
        "families": {family.name: family.record(confidence, members(arms))},
        "seeds": [int(s) for s in seeds],
        "batch_sizes": sorted(int(b) for b in batch_sizes),
        "confidence": float(confidence),
        "comparisons": cells.to_dict("records"),
    }
