"""The serving study's paper parts: macros for every number in its section, and its table.

Input: the summary of :func:`bnstudy.studies.serving.estimates.summarise`. Accuracies print as
percentages, differences as signed percentage points, the movement of the running
statistics with two decimals; intervals as ``[low, high]``.

The comparisons the text reads are members of the study's declared families
(:mod:`bnstudy.studies.serving.estimates`: ``serving_order``, ``serving_change``,
``serving_adaptation``), their intervals at the family's level; each sentence names them as the
family does (:attr:`bnstudy.evaluation.families.Family.tag`, :meth:`~bnstudy.evaluation.families.Family.phrase`),
and an interval that contains zero is also read against the family's smallest effect (:func:`verdict`):
that the streams cannot be told apart is not that they score alike.
"""

from __future__ import annotations

import math

from bnstudy.base.designs import SERVING_STREAMS as STREAMS
from bnstudy.evaluation.families import Family
from bnstudy.paper import latex
from bnstudy.paper.latex import math_points as points
from bnstudy.paper.latex import math_points_interval as interval_points

DIGITS = 1  # decimals of percentages and percentage points


def updates(settings) -> int:
    """The running statistics' updates over one stream: batches times passes."""
    return int(settings["batches"] * settings["passes"])


def percent(value: float) -> str:
    """An accuracy in percent; one that is not 0 or 1 never as ``0.0\\%`` or ``100.0\\%``
    (:func:`bnstudy.paper.latex.points`)."""
    text = latex.points(value, DIGITS)
    return text if text == "n/a" else text + "\\%"


def macros(summary: dict, settings: dict, families: dict[str, Family]) -> dict[str, str]:
    """``{name: TeX}``: the settings, per training batch size and stream, and ranges over batch sizes.

    ``settings``: ``batch_size``, ``passes``, ``batches`` and ``served`` (rows) per pass,
    ``test_rows``, ``stream_rows`` (the rows streams draw from), ``held_out_rows`` (the rows
    no stream serves, on which accuracy before and after is scored), ``replicates`` (streams
    of each kind), ``momentum``, ``confidence``. ``families``: the study's declared families by name
    (``serving_order``, ``serving_change`` and, with the control, ``serving_adaptation``), whose
    words name the intervals of the generated sentences.
    """
    replicates = int(settings["replicates"])
    m = {
        "servingBatchSize": latex.fmt(int(settings["batch_size"])),
        "servingPasses": latex.fmt(int(settings["passes"])),
        "servingPassPhrase": "one pass" if int(settings["passes"]) == 1 else f"{int(settings['passes'])} passes",
        "servingBatches": latex.fmt(int(settings["batches"])),
        "servingRows": latex.fmt(int(settings["served"])),
        "servingMomentum": f"{settings['momentum']:g}",
        "servingConfidence": latex.fmt(settings["confidence"], 0, percent=True),
        "servingCells": latex.fmt(len(summary)),
        "servingTestRows": latex.fmt(int(settings["test_rows"])),
        "servingStreamRows": latex.fmt(int(settings["stream_rows"])),
        "servingHeldOutRows": latex.fmt(int(settings["held_out_rows"])),
        "servingHeldOutShare": latex.fmt(settings["held_out"], 0, percent=True),
        "servingReplicates": latex.fmt(replicates),
        "servingReplicatePhrase": "one stream" if replicates == 1 else f"{replicates} streams",
        "servingClassOrderPhrase": (
            "the classes in ascending order"
            if replicates == 1
            else "the classes in ascending order in the first and in seeded random orders in the others"
        ),
        # weight the trained running statistics keep after the stream: (1 - momentum) ** updates, a
        # product in order (libm's pow may differ in the last bit between CPUs)
        "servingTrainedWeight": f"{math.prod([1.0 - settings['momentum']] * updates(settings)):.2g}",
    }
    seeds = {c[s][k]["seeds"] for c in summary.values() for s in STREAMS for k in c[s]}
    m["servingSeeds"] = latex.fmt(int(min(seeds)))
    for b, cell in summary.items():
        for stream in STREAMS:
            e = cell[stream]
            name = lambda *parts: latex.macro_name("serving", stream, *parts, "b", b)  # noqa: E731
            m[name("served")] = percent(e["stream_accuracy"]["mean"])
            m[name("before")] = percent(e["inference_before"]["mean"])
            m[name("after")] = percent(e["inference_after"]["mean"])
            m[name("change")] = points(e["inference_change"]["mean"])
            m[name("change", "ci")] = _ci(e["inference_change"], families[CHANGE])
            m[name("shift")] = latex.fmt(e["mean_shift"]["mean"], 2)
            m[name("var", "change")] = latex.fmt(e["var_change"]["mean"], 2)
        d = cell["sorted_minus_random"]
        m[latex.macro_name("serving", "sorted", "minus", "random", "served", "b", b)] = points(
            d["stream_accuracy"]["mean"]
        )
        m[latex.macro_name("serving", "sorted", "minus", "random", "served", "ci", "b", b)] = _ci(
            d["stream_accuracy"], families[ORDER]
        )
    for stream in STREAMS:
        for measure, key, form in (
            ("served", "stream_accuracy", percent),
            ("change", "inference_change", points),
            ("shift", "mean_shift", lambda v: latex.fmt(v, 2)),
        ):
            means = [cell[stream][key]["mean"] for cell in summary.values()]
            m[latex.macro_name("serving", stream, measure, "min")] = form(min(means))
            m[latex.macro_name("serving", stream, measure, "max")] = form(max(means))
            m[latex.macro_name("serving", stream, measure, "range")] = latex.span(form(min(means)), form(max(means)))
    gaps = [cell["sorted_minus_random"]["stream_accuracy"] for cell in summary.values()]
    m["servingSortedMinusRandomServedMin"] = points(min(g["mean"] for g in gaps))
    m["servingSortedMinusRandomServedMax"] = points(max(g["mean"] for g in gaps))
    m["servingSortedMinusRandomServedRange"] = latex.span(*(points(f(g["mean"] for g in gaps)) for f in (min, max)))
    m["servingSortedMinusRandomServedLossCells"] = latex.fmt(sum(g["ci"][1] < 0 for g in gaps))
    for stream in STREAMS:
        for part in ("networks", "streams"):
            sds = [cell[stream]["inference_change"][f"sd_{part}"] for cell in summary.values()]
            sds = [v for v in sds if v == v]  # NaN: the component is not estimable (one network or stream)
            m[latex.macro_name("serving", stream, "change", "sd", part, "max")] = (
                latex.fmt(100 * max(sds), DIGITS) if sds else "n/a"
            )
    for stream in STREAMS:
        cis = [cell[stream]["inference_change"]["ci"] for cell in summary.values()]
        m[latex.macro_name("serving", stream, "loss", "cells")] = latex.fmt(sum(hi < 0 for _, hi in cis))
        m[latex.macro_name("serving", stream, "gain", "cells")] = latex.fmt(sum(lo > 0 for lo, _ in cis))
    sizes = sorted(summary, key=int)  # each stream's intervals over the training batch sizes, in words
    for name, stream, key, family in (
        ("servingRandomChangeZeroSentence", "random", "inference_change", families[CHANGE]),
        ("servingSortedChangeZeroSentence", "sorted", "inference_change", families[CHANGE]),
        ("servingSortedMinusRandomZeroSentence", "sorted_minus_random", "stream_accuracy", families[ORDER]),
    ):
        cis = {b: summary[b][stream][key]["ci"] for b in sizes}
        m[name] = latex.zero_sentence(
            f"the {family.tag} intervals",
            [b for b, (lo, _) in cis.items() if lo > 0],
            [b for b, (_, hi) in cis.items() if hi < 0],
            len(cis),
        ) + within_clause(cis, family)  # which of those holding zero lie within the smallest effect
    m["servingAbstractSentence"] = abstract_sentence(summary, m["servingConfidence"], families[ORDER], families[CHANGE])
    return m | control_macros(summary, families)


CONTROL = "training_rows"  # bnstudy.studies.serving.science.CONTROL
DIFFERENCE = "random_minus_training_rows"  # the part of the random stream's change that needs the test rows
ORDER, CHANGE, ADAPTATION = "serving_order", "serving_change", "serving_adaptation"  # estimates' families
SMALLEST = "the smallest effect declared to matter"


def _ci(entry: dict, family: Family) -> str:
    """An interval of the ``family`` in points, each end with the decimals that tell it from zero and,
    where the interval contains zero (the text then reads it against the family's smallest effect:
    :func:`margin_clause`), from that effect, so that the margin's verdict can be read off it as the
    sign's can (:func:`bnstudy.paper.latex.math_points_interval`)."""
    return interval_points(entry, margin=_margin(entry, family.smallest_effect))


def _margin(entry: dict, margin: float | None) -> float | None:
    """``margin`` where ``entry``'s interval contains zero (a margin verdict reads it), else None."""
    return margin if _side(entry["ci"]) == "zero" else None


def _side(ci) -> str:
    lo, hi = ci
    return "below" if hi < 0 else "above" if lo > 0 else "zero"


def margin_clause(ci, family: Family, plural: bool = False) -> str:
    """For an interval (``ci``) that contains zero, whether it also lies within the ``family``'s smallest
    effect (two one-sided tests, each at half the interval's error rate: the interval inside
    ``(-smallest, +smallest)``): ``lies within $\\pm1.0$ points`` or ``reaches beyond $\\pm1.0$
    points`` (``plural``: of several intervals); empty for an interval clear of zero or a family
    that declares no smallest effect."""
    margin = family.smallest_effect
    if _side(ci) != "zero" or margin is None:
        return ""
    bound = f"$\\pm{latex.points(margin, 1)}$ points"
    inside = family.within(*ci)
    verb = ("lie within" if plural else "lies within") if inside else ("reach beyond" if plural else "reaches beyond")
    return f"{verb} {bound}"


def verdict(ci, family: Family, explain: bool = True) -> str:
    """Where an interval of the ``family`` lies with respect to zero (:func:`bnstudy.paper.latex.verdict`)
    and, where it contains zero, against the family's smallest effect (:func:`margin_clause`):
    ``contains zero and reaches beyond $\\pm1.0$ points, the smallest effect declared to matter``
    (``explain``: with the bound's meaning)."""
    text = latex.verdict(*ci)
    clause = margin_clause(ci, family)
    if not clause:
        return text
    return f"{text} and {clause}, {SMALLEST}" if explain else f"{text} and {clause}"


def control_macros(summary: dict, families: dict[str, Family]) -> dict[str, str]:
    """The random stream's control (training rows served in place of the test rows), where the summary
    has it (``serving.training_rows``; none otherwise): per training batch size the control's change
    and the random stream's change minus it, each with its interval; where the difference's intervals
    lie over the training batch sizes, and which of those that contain zero lie within the smallest
    effect (``servingControlZeroSentence``: :func:`within_clause`); and the answer at the smallest
    training batch size (``servingControlSentence``: :func:`control_sentence`); ``families``: the
    study's declared families by name, whose tags name the intervals."""
    if not all(CONTROL in cell for cell in summary.values()):
        return {}
    m = {"servingHasControl": "1"}  # the section's paragraph on the control is typeset only with it
    for b, cell in summary.items():
        c, d = cell[CONTROL]["inference_change"], cell[DIFFERENCE]["inference_after"]
        m[latex.macro_name("serving", "training rows", "change", "b", b)] = points(c["mean"])
        m[latex.macro_name("serving", "training rows", "change", "ci", "b", b)] = _ci(c, families[CHANGE])
        m[latex.macro_name("serving", "random minus training rows", "b", b)] = points(d["mean"])
        m[latex.macro_name("serving", "random minus training rows", "ci", "b", b)] = _ci(d, families[ADAPTATION])
    sizes = sorted(summary, key=int)
    sides = {b: _side(summary[b][DIFFERENCE]["inference_after"]["ci"]) for b in sizes}
    adaptation = families[ADAPTATION]
    m["servingControlZeroSentence"] = latex.zero_sentence(
        f"the {adaptation.tag} intervals of the random stream's change minus the control's",
        [b for b in sizes if sides[b] == "above"],
        [b for b in sizes if sides[b] == "below"],
        len(sizes),
    ) + within_clause({b: summary[b][DIFFERENCE]["inference_after"]["ci"] for b in sizes}, adaptation)
    m["servingControlSentence"] = control_sentence(summary[sizes[0]], sizes[0], families[CHANGE], adaptation)
    return m


def within_clause(cis: dict, family: Family) -> str:
    """For a sentence on where a family's intervals (``cis``: ``{batch size: [low, high]}``, in the
    order to name them) lie with respect to zero: which of those that contain zero also lie within the
    ``family``'s smallest effect (:func:`margin_clause`), with its leading ``; ``: ``; it reaches
    beyond $\\pm1.0$ points, the smallest effect declared to matter`` (the one interval that contains
    zero, which the sentence before names), ``; both lie within ...``, ``; of the 3 that contain zero,
    the one at batch 16 lies within $\\pm1.0$ points, the smallest effect declared to matter, and the
    others reach beyond`` (where every interval contains zero, as the sentence before says, without
    ``of the 3 that contain zero``); empty where none contains zero or the family declares no smallest
    effect."""
    zero = [b for b, ci in cis.items() if margin_clause(ci, family)]
    if not zero:
        return ""
    bound = f"$\\pm{latex.points(family.smallest_effect, 1)}$ points, {SMALLEST}"
    within = [b for b in zero if margin_clause(cis[b], family).startswith("lies within")]
    if len(zero) == 1:  # the sentence before has named the one interval that contains zero
        return f"; it {'lies within' if within else 'reaches beyond'} {bound}"
    if len(within) in (0, len(zero)):
        verb = "lie within" if within else "reach beyond"
        return f"; {'both' if len(zero) == 2 else f'all {len(zero)}'} {verb} {bound}"
    rest = len(zero) - len(within)
    those = "the one" if len(within) == 1 else "those"
    # every interval contains zero, as the sentence before says: not said a second time
    lead = "" if len(zero) == len(cis) else f"of the {len(zero)} that contain zero, "
    verb = "lies within" if len(within) == 1 else "lie within"
    others = "the other reaches beyond" if rest == 1 else "the others reach beyond"
    return f"; {lead}{those} {latex.at_batches([str(b) for b in within])} {verb} {bound}, and {others}"


NO_GAIN = (
    "the random stream's change is not shown to be a gain, its interval not lying wholly above zero, so there is no "
    "gain to explain"
)


def control_sentence(cell: dict, b, change: Family, adaptation: Family) -> str:
    """What the control says of one training batch size's random stream (``cell``: the summary's entry
    of size ``b``): the held-out accuracy's change after a random stream of test rows and after the
    same stream of training rows, the difference (paired by network and replicate) with the verdicts
    of the last two, and which explains a gain: adaptation to the test rows only where the difference
    lies wholly above zero, re-estimation of the statistics in served batches only where the control's
    change lies wholly above zero, neither where neither does; no gain to explain where the random
    stream's change does not lie wholly above zero. The changes are members of the ``change`` family, the
    difference of the ``adaptation`` family, each named by its tag; an interval that contains zero is
    read against its family's smallest effect too (:func:`verdict`; the bound's meaning said once)."""
    test = cell["random"]["inference_change"]
    train = cell[CONTROL]["inference_change"]
    diff = cell[DIFFERENCE]["inference_after"]
    text = (
        f"the held-out accuracy of networks trained in batches of {int(b)} changes by {points(test['mean'])} "
        f"points {_ci(test, change)} after a random stream of test rows and by {points(train['mean'])} points "
        f"{_ci(train, change)} after a stream of as many training rows (both {change.tag}); that second interval "
        f"{verdict(train['ci'], change)}; the difference, the part that needs the test rows, is "
        f"{points(diff['mean'])} points {_ci(diff, adaptation)} ({adaptation.tag}), an interval that "
        f"{verdict(diff['ci'], adaptation, explain=not margin_clause(train['ci'], change))}"
    )
    t, c, d = _side(test["ci"]), _side(train["ci"]), _side(diff["ci"])
    if t != "above":
        return f"{text}: {NO_GAIN}"
    if d == "above" and c != "above":
        answer = "the gain needs the test rows, so it is adaptation to the test distribution"
    elif d == "above":
        answer = (
            "training rows reproduce part of the gain and the test rows add to it, so it is the statistics "
            "re-estimated in served batches and adaptation to the test rows together"
        )
    elif c == "above":
        answer = (
            "training rows, which carry no information about the test distribution, reproduce the gain, so it is "
            "the running statistics re-estimated from the batch statistics of served rows; no part of it is shown "
            "to need the test rows"
        )
    else:
        answer = "neither interval lies wholly above zero, so the gain is put down to neither adaptation nor "
        answer += "re-estimation"
    return f"{text}: {answer}"


def _how(family: Family, members: int) -> str:
    """A family's adjustment in words, for inside parentheses (no second pair): ``Bonferroni-adjusted
    over the 6 training batch sizes`` or ``unadjusted and exploratory``."""
    return family.phrase(members) if family.adjusted else f"{family.tag} and exploratory"


def abstract_verdicts(served, change, order: Family, changes: Family) -> str:
    """The two intervals' verdicts of :func:`abstract_sentence`, each said once: where either contains
    zero, whether it lies within its family's smallest effect (:func:`margin_clause`), the bound's
    meaning said once at the end."""
    if not margin_clause(served, order) and not margin_clause(change, changes):
        return latex.two_verdicts(served, change)
    first, second = verdict(served, order, explain=False), verdict(change, changes, explain=False)
    if first == second:  # both contain zero, on the same side of the same bound
        clause = margin_clause(served, order, plural=True)
        return f"both intervals {latex.verdict(*served, plural=True)} and {clause}, {SMALLEST}"
    both = margin_clause(served, order) and margin_clause(change, changes)
    return f"the first interval {first}, the second {second}, {'in each case ' if both else ''}{SMALLEST}"


def abstract_sentence(summary: dict, confidence: str, order: Family, changes: Family) -> str:
    """The abstract's sentence on serving, at the smallest training batch size: what class-sorted
    traffic costs in training mode against random traffic (paired by network and stream number; a
    member of the family ``order``), and how a class-sorted stream changes the inference-mode accuracy
    of the model it leaves behind on the held-out rows (a member of ``changes``), each with its crossed
    interval at its family's level and one verdict per interval (:func:`abstract_verdicts`), never more
    than the intervals show; the intervals named by their families' adjustments (``confidence``, printed:
    the level of an unadjusted family's)."""
    b = min(summary, key=int)
    served = summary[b]["sorted_minus_random"]["stream_accuracy"]
    change = summary[b]["sorted"]["inference_change"]
    m = len(summary)
    if order.adjustment == changes.adjustment:
        kind = f"{confidence} intervals" if not order.adjusted else "intervals"
        level = f"{kind} over networks and streams, {'each ' if order.adjusted else ''}{_how(order, m)}"
    else:
        first, second = (_how(f, m) if f.adjusted else f"at {confidence}, {_how(f, m)}" for f in (order, changes))
        level = f"intervals over networks and streams, the first {first}, the second {second}"
    return (
        f"Served in training mode with live statistics, networks trained in batches of {int(b)} score "
        f"{points(served['mean'])} points {_ci(served, order)} on class-sorted test traffic against random "
        f"traffic, and a class-sorted stream changes the inference-mode accuracy of the model it leaves behind "
        f"by {points(change['mean'])} points {_ci(change, changes)} on held-out rows "
        f"({abstract_verdicts(served['ci'], change['ci'], order, changes)}; {level})"
    )


def table_rows(summary: dict, change: Family | None = None) -> list[list[str]]:
    """One row per training batch size: inference accuracy before, its change after each stream
    (with interval, each end read against the ``change`` family's smallest effect: :func:`_ci`), and
    the training-mode accuracy over each stream."""
    margin = None if change is None else change.smallest_effect
    rows = []
    for b, cell in sorted(summary.items(), key=lambda kv: int(kv[0])):
        r, s = cell["random"], cell["sorted"]
        rows.append(
            [
                str(int(b)),
                percent(r["inference_before"]["mean"]),
                f"{points(r['inference_change']['mean'])} {_table_ci(r['inference_change'], margin)}",
                f"{points(s['inference_change']['mean'])} {_table_ci(s['inference_change'], margin)}",
                percent(r["stream_accuracy"]["mean"]),
                percent(s["stream_accuracy"]["mean"]),
            ]
        )
    return rows


def _table_ci(entry: dict, margin: float | None) -> str:
    return interval_points(entry, margin=_margin(entry, margin))


HEADER = [
    "$b_{\\mathrm{train}}$",
    "before",
    "change, random",
    "change, sorted",
    "served, random",
    "served, sorted",
]


def write_table(path, summary: dict, change: Family) -> None:
    """The table (:func:`table_rows`), its comment naming the changes' family's adjustment (``change``)."""
    comment = f"serving: inference accuracy before/after (changes {change.phrase(len(summary))}), served"
    latex.write_table(path, HEADER, table_rows(summary, change), "rrrrrr", comment)
