"""The serving study's paper parts: macros for every number in its section, and its table.

Input: the summary of :func:`bnstudy.studies.serving.estimates.summarise`. Accuracies print as
percentages, differences as signed percentage points, the movement of the running
statistics with two decimals; intervals as ``[low, high]``.
"""

from __future__ import annotations

import math

from bnstudy.base.designs import SERVING_STREAMS as STREAMS
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


def macros(summary: dict, settings: dict) -> dict[str, str]:
    """``{name: TeX}``: the settings, per training batch size and stream, and ranges over batch sizes.

    ``settings``: ``batch_size``, ``passes``, ``batches`` and ``served`` (rows) per pass,
    ``test_rows``, ``stream_rows`` (the rows streams draw from), ``held_out_rows`` (the rows
    no stream serves, on which accuracy before and after is scored), ``replicates`` (streams
    of each kind), ``momentum``, ``confidence``.
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
            m[name("change", "ci")] = interval_points(e["inference_change"])
            m[name("shift")] = latex.fmt(e["mean_shift"]["mean"], 2)
            m[name("var", "change")] = latex.fmt(e["var_change"]["mean"], 2)
        d = cell["sorted_minus_random"]
        m[latex.macro_name("serving", "sorted", "minus", "random", "served", "b", b)] = points(
            d["stream_accuracy"]["mean"]
        )
        m[latex.macro_name("serving", "sorted", "minus", "random", "served", "ci", "b", b)] = interval_points(
            d["stream_accuracy"]
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
    gaps = [cell["sorted_minus_random"]["stream_accuracy"] for cell in summary.values()]
    m["servingSortedMinusRandomServedMin"] = points(min(g["mean"] for g in gaps))
    m["servingSortedMinusRandomServedMax"] = points(max(g["mean"] for g in gaps))
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
    m["servingAbstractSentence"] = abstract_sentence(summary, m["servingConfidence"])
    return m


def abstract_sentence(summary: dict, confidence: str) -> str:
    """The abstract's sentence on serving, at the smallest training batch size: what class-sorted
    traffic costs in training mode against random traffic (paired by network and stream number), and
    how a class-sorted stream changes the inference-mode accuracy of the model it leaves behind on the
    held-out rows, each with its crossed interval (``confidence``, printed) and one verdict per interval
    (:func:`bnstudy.paper.latex.two_verdicts`), never more than the intervals show."""
    b = min(summary, key=int)
    served = summary[b]["sorted_minus_random"]["stream_accuracy"]
    change = summary[b]["sorted"]["inference_change"]
    return (
        f"Served in training mode with live statistics, networks trained in batches of {int(b)} score "
        f"{points(served['mean'])} points {interval_points(served)} on class-sorted test traffic against random "
        f"traffic, and a class-sorted stream changes the inference-mode accuracy of the model it leaves behind "
        f"by {points(change['mean'])} points {interval_points(change)} on held-out rows "
        f"({latex.two_verdicts(served['ci'], change['ci'])}; {confidence} intervals over networks and streams)"
    )


def table_rows(summary: dict) -> list[list[str]]:
    """One row per training batch size: inference accuracy before, its change after each stream
    (with interval), and the training-mode accuracy over each stream."""
    rows = []
    for b, cell in sorted(summary.items(), key=lambda kv: int(kv[0])):
        r, s = cell["random"], cell["sorted"]
        rows.append(
            [
                str(int(b)),
                percent(r["inference_before"]["mean"]),
                f"{points(r['inference_change']['mean'])} {interval_points(r['inference_change'])}",
                f"{points(s['inference_change']['mean'])} {interval_points(s['inference_change'])}",
                percent(r["stream_accuracy"]["mean"]),
                percent(s["stream_accuracy"]["mean"]),
            ]
        )
    return rows


HEADER = [
    "$b_{\\mathrm{train}}$",
    "before",
    "change, random",
    "change, sorted",
    "served, random",
    "served, sorted",
]


def write_table(path, summary: dict) -> None:
    latex.write_table(path, HEADER, table_rows(summary), "rrrrrr", "serving: inference accuracy before/after, served")
