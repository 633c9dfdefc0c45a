"""The fine-tuning section's generated sentences and the printers they share with its macros and
tables: accuracies print as percentages, differences as signed percentage points, distances with
two decimals. Every sentence is generated from paired intervals of
:mod:`bnstudy.studies.finetune.summary` and claims no more than they show.
"""

from __future__ import annotations

from bnstudy.base.designs import FINETUNE_MODES as MODES
from bnstudy.base.designs import FINETUNE_STREAM_WORDS
from bnstudy.base.designs import FINETUNE_STREAMS as STREAMS
from bnstudy.evaluation.families import Family
from bnstudy.paper import latex
from bnstudy.paper.latex import math_points as points
from bnstudy.paper.latex import math_points_interval as interval_points
from bnstudy.paper.latex import verdict, words
from bnstudy.paper.network_prose import number_word
from bnstudy.studies.finetune.summary import SPECIFIC, specific_in

DIGITS = 1  # decimals of percentages and percentage points

STREAM_WORDS = FINETUNE_STREAM_WORDS


def percent(value: float) -> str:
    """An accuracy in percent; one that is not 0 or 1 never as ``0.0\\%`` or ``100.0\\%``
    (:func:`bnstudy.paper.latex.points`)."""
    text = latex.points(value, DIGITS)
    return text if text == "n/a" else text + "\\%"


def distance(value: float) -> str:
    return latex.fmt(value, 2)


def recompute_sentence(entry: dict, start: str) -> str:
    """What recomputing the statistics did for the live and the frozen networks of one rate and
    stream, generated from the paired intervals so that it claims no more than they show: the
    accuracy of each mode with the statistics recomputed and its change against the fine-tuned
    network (recomputed minus after), with the intervals' verdicts; "helps both modes" only
    when both lie wholly above zero. Then, against the starting accuracy ``start``
    (recomputed minus before, paired): modes whose interval lies wholly below zero stay below
    the start, a loss that recomputed statistics cannot remove (so, when both do, one in the
    weights); modes whose interval lies wholly above zero lie above it; the rest are not told
    apart from it."""
    live, frozen = entry["live"], entry["frozen"]
    gains = [live["recomputed_gain"], frozen["recomputed_gain"]]
    verdicts = [verdict(*g["ci"]) for g in gains]
    if verdicts[0] == verdicts[1]:
        said = f"both intervals {verdict(*gains[0]['ci'], plural=True)}"
    else:
        said = f"the live interval {verdicts[0]}, the frozen one {verdicts[1]}"
    helps = all(g["ci"][0] > 0 for g in gains)
    text = "recomputing the statistics helps both modes: it gives " if helps else "recomputing the statistics gives "
    text += (
        f"{percent(live['recomputed_after']['mean'])} for the live networks and "
        f"{percent(frozen['recomputed_after']['mean'])} for the frozen ones, changes of "
        f"{points(gains[0]['mean'])} {interval_points(gains[0])} and {points(gains[1]['mean'])} "
        f"{interval_points(gains[1])} points against the fine-tuned networks ({said})"
    )
    side = {}
    for mode in MODES:
        lo, hi = entry[mode]["recomputed_change"]["ci"]
        side[mode] = "below" if hi < 0 else "above" if lo > 0 else "apart"
    if side["live"] == side["frozen"]:
        text += {
            "below": f". Recomputed, both stay below the start ({start}): a loss that fitted statistics cannot"
            " remove lies in the weights",
            "above": f". Recomputed, both lie above the start ({start})",
            "apart": f". Recomputed, neither is told apart from the start ({start})",
        }[side["live"]]
    else:
        phrase = {"below": "stay below it", "above": "lie above it", "apart": "are not told apart from it"}
        text += f". Against the start ({start}), recomputed, the live networks {phrase[side['live']]}"
        text += f" and the frozen ones {phrase[side['frozen']]}"
    return text


def _side(ci) -> str:
    """``below``, ``above`` or ``zero``: where an interval lies with respect to zero."""
    lo, hi = ci
    return "below" if hi < 0 else "above" if lo > 0 else "zero"


def skew_cost_sentence(rates: list[str], differences: list[dict]) -> str:
    """What one-class batches cost against random ones (live, paired; ``differences``: one
    interval per rate of ``rates``, the rates' names in words), in words that agree with each
    interval: ``cost more`` only where it lies wholly below zero, ``cost less`` only where wholly
    above, ``cannot be told apart from them`` where it contains zero."""
    groups: dict[str, list[str]] = {}
    for rate, d in zip(rates, differences):
        groups.setdefault(_side(d["ci"]), []).append(rate)
    phrase = {"below": "cost more", "above": "cost less", "zero": "cannot be told apart from them"}
    clauses = []
    for side in ("below", "above", "zero"):
        if side in groups:
            where = f"at {words(groups[side])}"
            if len(groups[side]) == len(rates):
                where = "at either rate" if len(rates) == 2 else "at every rate"
            clauses.append(f"{phrase[side]} {where}")
    text = clauses[0] if len(clauses) == 1 else ", ".join(clauses[:-1]) + " and " + clauses[-1]
    return f"against random batches of the same size, one-class batches {text}"


def recovery_sentence(live: dict) -> str:
    """What recomputing the statistics recovered of live fine-tuning's change, for one rate and
    stream (``live``: the live mode's entry), from two paired intervals: the change of the
    inference-mode accuracy (after minus before) and the recomputed accuracy's change from the
    start (recomputed minus before). The change itself, with its interval and verdict, is the
    sentence before's (the section states it just ahead), so it is named here in words only, never
    printed twice, nor called a cost of a negative number. "Recovered all" is never said: an
    interval that contains zero shows no difference from the start, not a full recovery."""
    cost, back = _side(live["inference_change"]["ci"]), _side(live["recomputed_change"]["ci"])
    again = f"{points(live['recomputed_change']['mean'])} {interval_points(live['recomputed_change'])} points"
    if cost != "below":
        told = "lies wholly above zero" if cost == "above" else "contains zero"
        return (
            f"live fine-tuning showed no loss for recomputing to recover (its change's interval {told}); "
            f"recomputed, the networks lie {again} from the start"
        )
    if back == "below":
        return (
            f"recomputing recovered only part of live fine-tuning's loss: recomputed, the networks still lie {again}"
            " from the start, an interval wholly below zero"
        )
    if back == "above":
        return (
            f"recomputing recovered more than live fine-tuning's loss: recomputed, the networks lie {again} from"
            " the start, an interval wholly above zero"
        )
    return (
        "after live fine-tuning's loss, recomputed, the networks can no longer be told apart from the start"
        f" ({again}, an interval that contains zero)"
    )


def remedy_sentence(cell: dict) -> str:
    """Frozen minus live after fine-tuning, for one rate (``cell``: the rate's entry), on both
    streams, in words that agree with each paired interval."""
    sides = [_side(cell[s]["frozen_minus_live"]["inference_after"]["ci"]) for s in STREAMS]
    phrase = {
        "above": "does better than live fine-tuning",
        "below": "does worse than live fine-tuning",
        "zero": "cannot be told apart from live fine-tuning",
    }
    if len(set(sides)) == 1:
        return f"the remedy {phrase[sides[0]]} on either stream"
    short = {"above": "does better", "below": "does worse", "zero": "cannot be told apart from it"}
    return (
        f"against live fine-tuning, the remedy {short[sides[0]]} on random batches and {short[sides[1]]} "
        "on one-class batches"
    )


# the controls as the section's sentences name them
CONTROL_WORDS = {"none": "no normaliser", "layernorm": "layer norm"}


def adjusted(d: dict) -> dict:
    """A batch-norm-specific part (:data:`SPECIFIC`) with its interval at the family's level as ``ci``,
    for the printers."""
    return d | {"ci": d["ci_adjusted"]}


# the table's mark of an interval at the family's level, by the family's tag
MARKS = {"adjusted": "adj.", "unadjusted": "unadj."}


def family_mark(family: Family) -> str:
    """How the arms table marks the batch-norm-specific parts' column: ``adj.`` or ``unadj.``."""
    return MARKS[family.tag]


def family_sentence(family: Family, cells: int, confidence: str) -> str:
    """What the declared family of the batch-norm-specific parts (``family``, each control's ``cells``
    rate, condition and stream cells) does to their intervals, in its own words
    (:meth:`bnstudy.evaluation.families.Family.phrase`), ``confidence`` the study's printed: with
    Bonferroni all of them hold together at ``confidence``; without, each alone and exploratory."""
    if family.adjusted:
        return (
            f"Each of its intervals is {family.phrase(cells)}, so that all of them hold together with probability"
            f" at least {confidence}, whichever cell a claim picks"
        )
    return (
        f"Its intervals are {family.phrase(cells)}: each is a {confidence} interval on its own, and the {cells}"
        f" do not hold together at {confidence}"
    )


def specific_verdict(sides: list[str], controls: int = 2) -> str:
    """Where the intervals (at the family's level) of the batch-norm-specific parts (``sides``: ``below``, ``above`` or
    ``zero`` each) against ``controls`` controls lie, and what that lets one put down to batch
    normalisation: a part of the loss only where an interval lies wholly below zero."""
    whom = "the controls" if controls > 1 else "the control"
    whose = "the controls'" if controls > 1 else "the control's"
    if len(set(sides)) == 1:
        side = sides[0]
        then = {
            "below": f"the loss beyond {whose} can be put down to batch normalisation",
            "above": f"batch norm changes less for the worse than {whom}",
            "zero": f"batch norm's change cannot be told apart from {whose}: no part of it is shown to be batch"
            " normalisation's (which does not show that none is)",
        }[side]
        return f"{specific_sides(sides)}, so {then}"
    return (
        f"{specific_sides(sides)}, and only where an interval lies wholly below zero can a part of the"
        " loss be put down to batch normalisation"
    )


def specific_sides(sides: list[str]) -> str:
    """Where the batch-norm-specific parts' intervals lie, without what that lets one conclude:
    ``all four intervals contain zero``, ``of these intervals one lies wholly below zero and three
    contain zero``."""
    n = len(sides)
    if len(set(sides)) == 1:
        subject = "the interval" if n == 1 else "both intervals" if n == 2 else f"all {number_word(n)} intervals"
        return f"{subject} {verdict(*{'below': (-1, -1), 'above': (1, 1), 'zero': (-1, 1)}[sides[0]], plural=n > 1)}"
    parts = []
    for side, one, many in (
        ("below", "lies wholly below zero", "lie wholly below zero"),
        ("above", "lies wholly above zero", "lie wholly above zero"),
        ("zero", "contains zero", "contain zero"),
    ):
        k = sides.count(side)
        if k:
            parts.append(f"{number_word(k)} {one if k == 1 else many}")
    return f"of these intervals {words(parts)}"


def specific_sentence(cell: dict, before: tuple[str, list[str]] | None = None) -> str:
    """One rate's batch-norm-specific parts with the inputs as trained (``cell``: ``{stream: entry}`` of
    :func:`summarise_arms`): the range of the controls' changes, live batch norm's change minus each
    control's on random and on one-class batches with its interval at the family's level, and
    :func:`specific_verdict` of those intervals. ``before``: the rate printed and the sides of the
    sentence just before (the smaller rate's); where they are the same, the reading is not said a
    second time: ``as at 1e-4, all four intervals contain zero``."""
    keys = specific_in(cell)
    changes = [cell[s]["arms"][SPECIFIC[k]]["change"]["mean"] for k in keys for s in STREAMS]
    lo, hi = points(min(changes)), points(max(changes))
    span = lo if lo == hi else f"{lo} to {hi}"
    head = "the controls change" if len(keys) > 1 else "the control changes"
    whose = "theirs" if len(keys) > 1 else "the control's"
    parts = []
    for j, k in enumerate(keys):
        d = [cell[s]["contrasts"][k] for s in STREAMS]
        on = (" on random", " on one-class batches") if j == 0 else ("", "")
        parts.append(
            f"{adjusted_cell(d[0])}{on[0]} and {adjusted_cell(d[1])}{on[1]} against {CONTROL_WORDS[SPECIFIC[k]]}"
        )
    sides = [_side(cell[s]["contrasts"][k]["ci_adjusted"]) for k in keys for s in STREAMS]
    said = specific_verdict(sides, len(keys))
    if before is not None and before[1] == sides:
        said = f"as at {before[0]}, {specific_sides(sides)}"
    return (
        f"{head} by {span} points, and live batch norm's change minus {whose}, the part specific to batch"
        f" normalisation, is {words(parts)}: {said}"
    )


def specific_sides_of(cell: dict) -> list[str]:
    """The sides of zero of one rate's batch-norm-specific intervals, in :func:`specific_sentence`'s order."""
    return [_side(cell[s]["contrasts"][k]["ci_adjusted"]) for k in specific_in(cell) for s in STREAMS]


def adjusted_cell(d: dict) -> str:
    return f"{points(d['mean'])} {interval_points(adjusted(d))}"


# the controls of the abstract's sentence, as it names them (never "none")
ABSTRACT_CONTROLS = {"none": "no normaliser's", "layernorm": "layer normalisation's"}


def _difference(e: dict) -> str:
    return f"{points(e['mean'])} points {interval_points(e)}"


def _verdicts(cis: list) -> str:
    """Where one interval per rate lies, each verdict said once."""
    if len(cis) == 1:
        return f"an interval that {verdict(*cis[0])}"
    if len(cis) == 2:
        return latex.two_verdicts(*cis)
    said = [verdict(*ci) for ci in cis]
    if len(set(said)) == 1:
        return f"all {number_word(len(cis))} intervals {verdict(*cis[0], plural=True)}"
    return ", ".join(f"the {ordinal} {v}" for ordinal, v in zip(("first", "second", "third", "fourth"), said))


def _specific_phrase(live: dict, parts: list[tuple[str, dict]]) -> str:
    """What one rate's batch-norm-specific parts (``parts``: ``(the control's name, part)``) show: a loss
    put down to batch normalisation only where live batch norm's change and every part (its interval at the
    family's level) lie wholly below zero; else the change's place against each control, each verdict said once."""
    sides = {name: _side(d["ci_adjusted"]) for name, d in parts}
    if live["ci"][1] < 0 and set(sides.values()) == {"below"}:
        return f"a loss beyond {words(list(sides))}, which can be put down to batch normalisation"
    said = {"below": "below {}", "above": "above {}", "zero": "not told apart from {}"}
    groups = [said[side].format(words([n for n, s in sides.items() if s == side]))
              for side in ("below", "above", "zero") if side in sides.values()]  # fmt: skip
    return "a change " + " and ".join(groups)


def abstract_sentence(cells: list[tuple[str, dict]], batch_size: int, family: Family, members: int) -> str:
    """Live batch norm's change of the inference-mode accuracy after fine-tuning in batches of
    ``batch_size`` at each rate (``cells``: ``(the rate printed, one condition and stream of
    :func:`summarise_arms`)`` in increasing order) with its verdicts (said to be unadjusted: no declared
    family holds the change itself), and the part of it specific to batch
    normalisation, that change minus each control's (paired by seed; its interval at the level of the
    declared ``family`` of ``members`` cells, named in the family's words), with what it shows at each
    rate (:func:`_specific_phrase`; ``at both rates`` where one reading holds at every rate, whose
    printed values the clause before has just named): the loss is put down to batch normalisation only
    where the change and every part lie wholly below zero."""
    lives = [cell["arms"]["live"]["change"] for _, cell in cells]
    changes = words([f"{_difference(live)} at rate {rate}" for live, (rate, _) in zip(lives, cells)])
    text = (
        f"Fine-tuned live in one-class batches of {batch_size} rows, batch normalisation's inference-mode "
        f"accuracy changes by {changes} (unadjusted: {_verdicts([live['ci'] for live in lives])})"
    )
    keys = [k for k in SPECIFIC if all("ci_adjusted" in cell["contrasts"].get(k, {}) for _, cell in cells)]
    if not keys:
        return text
    names = [ABSTRACT_CONTROLS[SPECIFIC[k]] for k in keys]
    minus = " and minus ".join(names)
    per_rate = [
        f"{words([_difference(adjusted(cell['contrasts'][k])) for k in keys])} at {rate}" for rate, cell in cells
    ]
    text += (
        f"; its change minus {minus}, the part specific to batch normalisation, paired by seed and"
        f" {family.phrase(members)}, is {words(per_rate)}"
    )
    phrases: dict[str, list[str]] = {}
    for live, (rate, cell) in zip(lives, cells):
        phrase = _specific_phrase(live, [(ABSTRACT_CONTROLS[SPECIFIC[k]], cell["contrasts"][k]) for k in keys])
        phrases.setdefault(phrase, []).append(rate)
    if len(phrases) == 1 and len(cells) > 1:  # one reading for every rate: the rates are not named again
        every = "both rates" if len(cells) == 2 else f"all {len(cells)} rates"
        return f"{text}: at {every} {next(iter(phrases))}"
    text += ": " + "; ".join(f"at {words(rates)} {phrase}" for phrase, rates in phrases.items())
    return text


# the contrasts the section counts, in its order, as its sentence names them
COUNTED = (
    ("statistics_update", "the interval of the statistics update (live minus momentum~0)"),
    ("gradient_path", "that of the gradient path (momentum~0 minus frozen)"),
    ("live_minus_none", "that of live batch norm's change minus no normaliser's"),
    ("live_minus_layernorm", "that of live batch norm's change minus layer norm's"),
)


def side_clause(below: int, above: int, cells: int) -> str:
    """Where ``cells`` intervals lie, in words, each count once and only where it is not zero, the noun
    with the first count and agreeing with it (never ``in 1 cells``): ``lies below zero in 3 cells,
    above zero in 1 and contains zero in 4``, ``lies below zero in 1 cell and contains zero in 3``; one
    side for all: ``lies below zero in all 8 cells``, ``contains zero in all 8 cells`` (never ``in 8
    cells`` beside ``in all 8``)."""
    held = cells - below - above
    for n, said in ((below, "lies below zero"), (above, "lies above zero"), (held, "contains zero")):
        if n == cells:
            return f"{said} in all {cells} cells"
    counts = [(side, n) for side, n in (("below zero", below), ("above zero", above)) if n]
    parts = [f"{side} in {n}" for side, n in counts] + [f"contains zero in {held}" for n in [held] if n]
    parts[0] = f"lies {parts[0]} {'cell' if counts[0][1] == 1 else 'cells'}"
    return words(parts)


def contrast_counts(below: dict, above: dict, cells: int, reported: tuple = ()) -> str:
    """The section's counts of contrasts by side of zero, one clause per contrast and condition, for
    the contrasts the build has (no layer-norm control where the grid has no layer norm) and that are
    not ``reported`` elsewhere: the batch-norm-specific parts, members of a declared family, are counted
    at that family's level in their own paragraph (``finetuneSpecificCounts``), so their unadjusted
    counts here would give the same comparison a second verdict."""
    out = []
    for key, label in COUNTED:
        if ("same", key) not in below or key in reported:
            continue
        same = side_clause(below[("same", key)], above[("same", key)], cells)
        shifted = side_clause(below[("shifted", key)], above[("shifted", key)], cells)
        # one verdict once: the same clause for both conditions is said of both together; two parallel
        # clauses are set apart by a semicolon, each condition named before its counts
        out.append(
            f"{label} {same} in both conditions"
            if same == shifted
            else f"{label} {same} as trained; shifted, it {shifted}"
        )
    return "; ".join(out)
