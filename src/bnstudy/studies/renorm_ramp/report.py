"""The ramp study's summary: each schedule's batch renorm against the grid's batch norm and batch renorm
of the same seeds, JSON, macros, the generated sentences of its section and a table.

At each batch size ``b`` of the study and for each schedule ``s`` (the grid's own, :data:`GRID`, read
from the grid's networks, and each variant of the config, retrained), paired by seed (the same
initial weights and batch order), inference-mode test accuracy:

- ``vs_batchnorm``: batch renorm with ``s`` minus the grid's batch norm;
- ``vs_grid`` (variants only): batch renorm with ``s`` minus the grid's batch renorm.

Each is a Student-t interval of the per-seed differences (:func:`bnstudy.evaluation.paired.paired_interval`)
at the level of the study's family, every comparison at every batch size (:func:`family`), declared in
the config as :data:`FAMILY` (:meth:`bnstudy.evaluation.families.Family.level`: Bonferroni-adjusted
over the family, or the confidence itself where the family declares no adjustment), with ``agree``,
the seeds whose difference has the sign of the mean. The sensitivity: at each batch size, the range of
``vs_batchnorm``'s mean over the schedules, and each variant whose interval's side of zero (its
verdict) differs from the grid schedule's. Nothing here depends on the CPU, and no compiled code is
loaded.
"""

from __future__ import annotations

import pandas as pd

from bnstudy.evaluation.families import Family
from bnstudy.evaluation.paired import paired_interval
from bnstudy.paper import latex
from bnstudy.paper.latex import points_interval, signed_points, words
from bnstudy.paper.network_prose import number_word
from bnstudy.studies.renorm_ramp.design import GRID

BATCHNORM = "batchnorm"  # the grid's batch norm networks: the other side of vs_batchnorm
KEYS = ("vs_batchnorm", "vs_grid")
FAMILY = "renorm_ramp"  # the config's families.renorm_ramp: every comparison at every batch size


def family(schedules, batch_sizes) -> int:
    """The members of the study's family (:data:`FAMILY`): at every batch size, each schedule's (the
    grid's included) difference from batch norm and each variant's from the grid's batch renorm."""
    return len(batch_sizes) * (2 * len(schedules) + 1)


def per_seed(study: pd.DataFrame, grid: pd.DataFrame, seeds) -> pd.DataFrame:
    """One row per arm (each variant's name, :data:`GRID` for the grid's batch renorm, :data:`BATCHNORM`
    for its batch norm), batch size and seed of ``seeds``: inference-mode accuracy (the grid's cells'
    ``inference`` rows); a seed missing is an error."""
    seeds = sorted(int(s) for s in seeds)
    grid = grid[(grid["mode"] == "inference") & grid["seed"].isin(seeds)]
    grid = grid.assign(arm=grid["normaliser"].map({"batchrenorm": GRID, "batchnorm": BATCHNORM}))
    cols = ["arm", "batch_size", "seed", "accuracy"]
    table = pd.concat([study.rename(columns={"schedule": "arm"})[cols], grid[cols]], ignore_index=True)
    for (arm, b), g in table.groupby(["arm", "batch_size"]):
        if sorted(g["seed"]) != seeds:
            raise ValueError(f"{arm} at batch {b}: seeds {sorted(g['seed'])}, not {seeds}")
    return table.sort_values(cols[:3]).reset_index(drop=True)


def _accuracy(table, arm, b) -> list[float]:
    g = table[(table["arm"] == arm) & (table["batch_size"] == b)]
    if g.empty:
        raise ValueError(f"no {arm} networks at batch {b}")
    return list(g.sort_values("seed")["accuracy"])


def agreeing(a, c, gain: float) -> int:
    """Seeds whose difference ``a - c`` has the sign of ``gain`` (zero for a zero mean)."""
    diffs = [float(x) - float(y) for x, y in zip(a, c, strict=True)]
    sign = (gain > 0) - (gain < 0)
    return sum(1 for d in diffs if (d > 0) - (d < 0) == sign)


def comparisons(table: pd.DataFrame, schedules, batch_sizes, confidence: float, declared: Family) -> pd.DataFrame:
    """Every comparison (module docstring), by batch size, then the grid's schedule and the variants in
    the config's order, then :data:`KEYS`; intervals at the level of the ``declared`` family
    (:data:`FAMILY`) of the :func:`family` comparisons, in ``confidence`` (column ``confidence``)."""
    n = family(schedules, batch_sizes)
    level = declared.level(confidence, n)
    out = []
    for b in sorted(int(x) for x in batch_sizes):
        for arm in (GRID, *schedules):
            for key in KEYS if arm != GRID else KEYS[:1]:
                a, c = _accuracy(table, arm, b), _accuracy(table, BATCHNORM if key == "vs_batchnorm" else GRID, b)
                r = paired_interval(a, c, level)
                out.append(
                    {"batch_size": b, "schedule": arm, "key": key, "seeds": r["seeds"], "gain": r["gain"],
                     "sd": r["sd"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                     "agree": agreeing(a, c, r["gain"]), "family": n, "confidence": level}
                )  # fmt: skip
    return pd.DataFrame(out)


def side(lo: float, hi: float) -> str:
    """``below``, ``above`` or ``zero`` (the interval holds zero, or is undefined)."""
    return "below" if hi < 0 else "above" if lo > 0 else "zero"


def _points(r: dict) -> str:
    return f"${signed_points(r['gain'])}$ points ${points_interval(r['ci_low'], r['ci_high'], signed=True)}$"


def _rows(cells: pd.DataFrame, b: int, key: str) -> list[dict]:
    """The rows of batch ``b`` and comparison ``key``, in the table's order, as dicts of Python values
    (what ``to_dict("records")`` gives). Built from each column's ``tolist()``, not by a pandas mask and
    ``to_dict``: the table has a few rows, and those cost 0.8 ms a call against 0.13 (the sentence tests
    make about 54,000 calls)."""
    columns = list(cells.columns)
    rows = (dict(zip(columns, values)) for values in zip(*(cells[c].tolist() for c in columns)))
    return [r for r in rows if r["batch_size"] == b and r["key"] == key]


def sensitivity(cells: pd.DataFrame, b: int) -> dict:
    """At batch ``b``: the lowest and highest mean of batch renorm minus batch norm over the schedules
    (the grid's included), their schedules, the range, and the variants whose verdict (the side of zero
    of the interval, at the family's level) differs from the grid schedule's."""
    rows = _rows(cells, b, "vs_batchnorm")
    low = min(rows, key=lambda r: r["gain"])
    high = max(rows, key=lambda r: r["gain"])
    grid_side = side(rows[0]["ci_low"], rows[0]["ci_high"])
    changed = [r["schedule"] for r in rows[1:] if side(r["ci_low"], r["ci_high"]) != grid_side]
    return {"batch_size": b, "low": low["gain"], "low_schedule": low["schedule"], "high": high["gain"],
            "high_schedule": high["schedule"], "range": high["gain"] - low["gain"], "grid_side": grid_side,
            "changed": changed}  # fmt: skip


def range_sentence(cells: pd.DataFrame, b: int) -> str:
    """The range of the mean of batch renorm minus batch norm over the schedules at batch ``b`` (the
    grid's included; its ends' schedules are in the table and the summary)."""
    s = sensitivity(cells, b)
    count = len(_rows(cells, b, "vs_batchnorm"))
    if s["low"] == s["high"]:
        same = signed_points(s["low"])
        return f"With all {count} schedules the mean difference from batch normalisation is ${same}$ points."
    return (
        f"Over the {count} schedules the mean difference from batch normalisation runs from "
        f"${signed_points(s['low'])}$ to ${signed_points(s['high'])}$ points."
    )


# What batch renorm does against batch norm, by the side of zero of the interval (at the family's level).
AGAINST_BATCHNORM = {
    "above": "scores above batch normalisation",
    "below": "scores below batch normalisation",
    "zero": "cannot be told apart from batch normalisation",
    "alike": "scores exactly as batch normalisation, in every seed",
}


# After the sentences of a batch size where a difference is the same in every seed (:func:`uniform`).
UNIFORM_NOTE = "$^{\\dagger}$The same in every seed: a difference with no spread, from which no interval is formed."


def uniform(r: dict) -> bool:
    """Whether every seed's difference is the same nonzero value: an interval of zero width, which
    says nothing of how the difference varies (two seeds can agree by chance). The verdict is then
    what every seed shows, and the text gives the value in every seed, not an interval."""
    return r["gain"] != 0 and latex.degenerate(r["ci_low"], r["ci_high"])


def verdict(r: dict) -> str:
    """:func:`side` of the row's interval, or ``alike`` where every seed's difference is zero (the
    schedule never left plain batch norm's limits): not a verdict of the seeds but an identity."""
    return "alike" if r["gain"] == 0 and r["ci_low"] == r["ci_high"] else side(r["ci_low"], r["ci_high"])


def _value(r: dict) -> str:
    """The difference as the text gives it: the mean and its interval, or, where every seed's
    difference is the same (:func:`uniform`), that value marked with a dagger (:data:`UNIFORM_NOTE`)."""
    return f"${signed_points(r['gain'])}$ points$^{{\\dagger}}$" if uniform(r) else _points(r)


def _stated(r: dict, seeds: bool = False) -> str:
    """``: +1.00 points [...]`` after a verdict (with :func:`_seeds` where ``seeds``); nothing after
    ``alike``, which says it all."""
    return "" if verdict(r) == "alike" else f": {_value(r)}{_seeds(r) if seeds else ''}"


def _seeds(r: dict) -> str:
    """`` (4 of 5 seeds above zero)``: the seeds on the side of the mean; nothing where every seed's
    difference is the same (the interval already says so) or the mean is zero."""
    if r["ci_low"] == r["ci_high"] or r["gain"] == 0:
        return ""
    k, n = int(r["agree"]), int(r["seeds"])
    return f" ({f'all {n}' if k == n else f'{k} of {n}'} seeds {'above' if r['gain'] > 0 else 'below'} zero)"


def results_sentence(cells: pd.DataFrame, b: int, labels: dict[str, str], steps: int) -> str:
    """The sentences of batch ``b``: batch renorm minus batch norm with the grid's schedule and its verdict;
    the variants whose verdict is the same, in one sentence with the range of their means (without it
    where every variant shares the grid's verdict: the closing range over all schedules gives it), each other
    variant with its own verdict; the variants whose networks score apart from the grid's batch renorm
    (the others' intervals contain zero); the range over all schedules (:func:`range_sentence`). Each
    comparison's verdict is stated once."""
    grid, *variants = _rows(cells, b, "vs_batchnorm")
    against = {r["schedule"]: r for r in _rows(cells, b, "vs_grid")}
    grid_side = verdict(grid)
    text = [
        f"At batch {b} ({latex.fmt(int(steps))} steps), with the grid's schedule batch renormalisation "
        f"{AGAINST_BATCHNORM[grid_side]}{_stated(grid, seeds=True)}."
    ]
    same = [r for r in variants if verdict(r) == grid_side]
    if same:
        who = "every other schedule" if len(same) == len(variants) else words([labels[r["schedule"]] for r in same])
        # their means are in the range over all schedules that ends the sentences, or all alike
        if len(same) == len(variants) or grid_side == "alike":
            text.append(f"The same holds with {who}.")
        elif len(same) == 1:
            text.append(f"The same holds with {who}{_stated(same[0])}.")
        else:
            low, high = min(r["gain"] for r in same), max(r["gain"] for r in same)
            means = (
                f"a mean of ${signed_points(low)}$ points each"
                if low == high
                else f"means from ${signed_points(low)}$ to ${signed_points(high)}$ points"
            )
            text.append(f"The same holds with {who} ({means}).")
    for other in AGAINST_BATCHNORM:  # the variants of each other verdict, named together
        group = [r for r in variants if verdict(r) == other != grid_side]
        if len(group) == 1:
            r = group[0]
            text.append(f"With {labels[r['schedule']]} it {AGAINST_BATCHNORM[other]}{_stated(r)}.")
        elif group and other == "alike":
            text.append(f"With {words([labels[r['schedule']] for r in group])} it {AGAINST_BATCHNORM[other]}.")
        elif group:
            who = words([labels[r["schedule"]] for r in group])
            numbers = " and ".join(_value(r) for r in group)
            text.append(f"With {who} it {AGAINST_BATCHNORM[other]} ({numbers}, respectively).")
    moved = [r for r in variants if side(against[r["schedule"]]["ci_low"], against[r["schedule"]]["ci_high"]) != "zero"]
    if not moved:
        text.append(
            "No schedule's networks are told apart from the grid's batch renormalisation: each such interval "
            "contains zero."
        )
    else:
        clauses = []  # one clause for each direction, its schedules named together
        for where in ("below", "above"):
            group = [
                against[r["schedule"]] for r in moved if (against[r["schedule"]]["ci_low"] > 0) == (where == "above")
            ]
            if not group:
                continue
            who = words([labels[g["schedule"]] for g in group])
            if len(group) == 1:
                g = group[0]
                alike = g["ci_low"] == g["ci_high"] or g["gain"] == 0
                k, n = int(g["agree"]), int(g["seeds"])
                numbers = _value(g) + ("" if alike else f", in {f'all {n}' if k == n else f'{k} of the {n}'} seeds")
            else:
                numbers = " and ".join(_value(g) for g in group)
            clauses.append(f"{where} it with {who} ({numbers})")
        text.append(f"Against the grid's batch renormalisation the networks score {' and '.join(clauses)}.")
        if len(moved) < len(variants):
            rest = "schedule's interval" if len(variants) - len(moved) == 1 else "schedules' intervals"
            text.append(f"The other {rest} against it contain{'s' if rest.endswith('interval') else ''} zero.")
    text.append(range_sentence(cells, b))
    if any("\\dagger" in t for t in text):  # a value the same in every seed is printed
        text.append(UNIFORM_NOTE)
    return " ".join(text)


def results_macro(b: int) -> str:
    return latex.macro_name("renorm", "ramp", "results", "b", b)


def family_sentence(declared: Family, members: int, confidence: str) -> str:
    """What the ``declared`` family of ``members`` comparisons does to their intervals, in its own words
    (:meth:`bnstudy.evaluation.families.Family.phrase`), ``confidence`` the family's printed: with
    Bonferroni all of them hold together at ``confidence``; without, each alone and exploratory."""
    if declared.adjusted:
        return f"The intervals are {declared.phrase(members)}, so that all of them hold together at {confidence}"
    return (
        f"The intervals are {declared.phrase(members)}: each holds at {confidence} on its own, and the"
        f" {members} do not hold together at {confidence}"
    )


def macros(cells: pd.DataFrame, seeds, batch_sizes, labels: dict[str, str], descriptions: dict[str, str],
           steps: dict[int, int], confidence: float, declared: Family, ends: str = "") -> dict[str, str]:  # fmt: skip
    """Every number and generated sentence of the section. ``labels``, ``descriptions``: each variant's
    name in prose and its schedule in words, the grid's description under :data:`GRID`; ``steps``:
    the run's steps at each batch size; ``declared``: the study's family (:data:`FAMILY`), whose
    words name the intervals (:func:`family_sentence`, :func:`abstract_sentence`); ``ends``:
    :func:`bnstudy.studies.renorm_ramp.design.unfinished_sentence` (its macro defined only when it says something)."""
    sizes = sorted(int(b) for b in batch_sizes)
    n = int(cells["family"].iloc[0])
    m = {
        "renormRampSeeds": words([str(int(s)) for s in sorted(seeds)]),
        "renormRampSeedCount": str(len(seeds)),
        "renormRampBatchSizes": words([str(b) for b in sizes]),
        "renormRampAtBatches": latex.at_batches([str(b) for b in sizes]),  # "at batches 2 and 4", "at batch 2"
        "renormRampFamily": str(n),
        "renormRampConfidence": latex.fmt(float(cells["confidence"].iloc[0]), 2, percent=True),
        "renormRampFamilyConfidence": latex.fmt(float(confidence), 0, percent=True),
        "renormRampFamilySentence": family_sentence(declared, n, latex.fmt(float(confidence), 0, percent=True)),
        "renormRampVariantCount": str(len(labels)),
        "renormRampGridSchedule": descriptions[GRID],
        "renormRampSchedules": "; ".join(f"{labels[v]} ({descriptions[v]})" for v in labels),
    }
    sentences = []
    for b in sizes:
        m[results_macro(b)] = results_sentence(cells, b, labels, steps[b])
        sentences.append(m[results_macro(b)])
    m["renormRampResults"] = " ".join(sentences)
    m["renormRampAbstractSentence"] = abstract_sentence(cells, sizes[0], labels, declared)
    if ends:
        m["renormRampUnfinished"] = ends
    return m


def abstract_sentence(cells: pd.DataFrame, b: int, labels: dict[str, str], declared: Family) -> str:
    """The abstract's sentence: at the smallest batch ``b``, whether the other schedules keep the grid
    schedule's verdict on batch renorm minus batch norm, its interval named by the ``declared``
    family's tag (``adjusted`` or ``unadjusted``), and the range of the means over all schedules (the
    verdicts and their intervals are the section's)."""
    s = sensitivity(cells, b)
    others = len(_rows(cells, b, "vs_batchnorm")) - 1
    head = (
        f"Under {number_word(others)} other schedule{'s' if others != 1 else ''} of its limits, batch "
        f"renormalisation's difference from batch normalisation at batch {b}"
    )
    means = (
        f"${signed_points(s['low'])}$ points with every schedule"
        if s["low"] == s["high"]
        else f"from ${signed_points(s['low'])}$ to ${signed_points(s['high'])}$ points"
    )
    if not s["changed"]:
        return f"{head} keeps the grid schedule's verdict ({declared.tag}), its mean {means}"
    changed = words([labels[v] for v in s["changed"]])
    return f"{head} runs {means}, and its verdict ({declared.tag}) changes with {changed}"


def latex_table(
    cells: pd.DataFrame, names: dict[str, str], limits: dict, declared: Family
) -> tuple[list, list, str, str]:
    """One row per batch size and schedule: the limits at the run's last step, batch renorm minus batch
    norm and minus the grid's batch renorm (mean, interval at the ``declared`` family's level, seeds on
    the mean's side), the comment naming the family's adjustment in its words.
    ``names``: each schedule's short name; ``limits[(schedule, b)]``: ``(rmax, dmax)`` at the last step."""
    rows = []
    for (b, schedule), g in cells.groupby(["batch_size", "schedule"], sort=False):
        by = {r["key"]: r for r in g.to_dict("records")}
        rmax, dmax = limits[(schedule, b)]
        row = [str(b), names[schedule], f"{rmax:.2f}", f"{dmax:.2f}"]
        for key in KEYS:
            r = by.get(key)
            if r is None:
                row += ["", "", ""]
                continue
            ci = points_interval(r["ci_low"], r["ci_high"], signed=True)
            row += [f"${signed_points(r['gain'])}$", f"${ci}$", f"{int(r['agree'])}/{int(r['seeds'])}"]
        rows.append(row)
    header = ["batch", "schedule", "last $r_{\\max}$", "last $d_{\\max}$", "$-$ batch norm", "interval", "seeds",
              "$-$ grid's renorm", "interval", "seeds"]  # fmt: skip
    members = int(cells["family"].iloc[0])
    comment = f"paired by seed, percentage points; {declared.phrase(members)}; seeds: on the mean's side"
    return header, rows, "rlrrrlrrlr", comment


def summary_json(
    cells: pd.DataFrame, seeds, batch_sizes, schedules: list[dict], confidence: float, declared: Family
) -> dict:
    """``results/summary/renorm_ramp.json``: the settings, every comparison, each batch size's sensitivity
    and, under ``families``, what the study applied to its ``declared`` family (:data:`FAMILY`)."""
    sizes = sorted(int(b) for b in batch_sizes)
    return {
        "seeds": sorted(int(s) for s in seeds),
        "batch_sizes": sizes,
        "schedules": schedules,
        "confidence": float(confidence),
        "family": int(cells["family"].iloc[0]),
        "comparisons": cells.to_dict("records"),
        "sensitivity": [sensitivity(cells, b) for b in sizes],
        "families": {FAMILY: declared.record(float(confidence), int(cells["family"].iloc[0]))},
    }
