"""Study 1 under both protocols: the dependence networks trained with each epoch's leftover rows
dropped (our protocol, ``dependence``) and kept (``dependence_keep``), probed alike, side by side
against the published table. The published text does not say how an epoch's last, smaller batch
was handled; PyTorch's ``DataLoader`` keeps it unless ``drop_last=True`` (``drop_last`` defaults
to ``False``), so both protocols are measured.

Per network (one per seed; a seed gives both protocols the same initial weights and batch
order, the kept protocol adding the leftover batch), random companions at each probe size:

- ``flip_rate``: mean over the probed examples of the share of batches whose training-mode
  label differs from the inference-mode one;
- ``train_mode_accuracy``: mean over the examples of the share of batches labelled correctly.

These are the per-network estimates of :func:`bnstudy.studies.companions.estimates.summarise` (means correctly
rounded, :func:`bnstudy.base.stats.mean_sd`). Over networks: the mean and a Student-t interval
on the logit scale (:func:`bnstudy.base.stats.share_interval`), which stays within [0, 1] as every
measure is a share; kept minus dropped paired by seed
(:func:`bnstudy.evaluation.paired.paired_interval`).

The published values come from one network, other examples and another split, so a protocol is
*consistent with* a published value at a probe size when the value lies inside the protocol's
interval over networks *and* examples (the crossed interval of
:func:`bnstudy.studies.companions.published.crossed_interval`, the one the companions section
reports; the JSON's ``reproduces_flip_rate``, a name kept from before).

The comparisons whose verdicts the section states are the config's declared families
(:mod:`bnstudy.studies.companions.protocol_families`): kept minus dropped in the flip rate and in the
training-mode accuracy, each over the probe sizes, and the published flip rates against each
protocol's interval over networks and examples. Each interval is formed at its family's level, the
sentences name it by the family's tag or phrase, and the summary records the families.

A mean that one network drives (:func:`bnstudy.studies.companions.driven.drives`: with three or
more networks, the largest value exceeds the sum of the others) is printed with every network's
value and the median beside it (``...Driven`` macros, the table's dagger and its note). Nothing
here depends on the CPU. The tables (per network, over networks, kept minus dropped) are
:mod:`bnstudy.studies.companions.protocol_tables`'; here they are reported: sentences, macros,
the JSON summary and the LaTeX table.
"""

from __future__ import annotations

import pandas as pd

from bnstudy.evaluation.families import Family
from bnstudy.paper import latex
from bnstudy.paper.latex import words
from bnstudy.studies.companions import driven
from bnstudy.studies.companions import protocol_families as pf
from bnstudy.studies.companions.protocol_tables import (
    MEASURES,
    PROTOCOL_WORDS,
    kept_minus_dropped,
    over_networks,
    per_network,
    published_members,
)
from bnstudy.studies.companions.published import ratio_words


def _pct(value) -> str:
    """A share in percent with the shared endpoint rule: a share that is not 0 or 1 never prints as
    0.0% or 100.0% (:func:`bnstudy.paper.latex.endpoint`)."""
    text = latex.endpoint(value, 1, bounds=(0, 1))
    return text if text == "n/a" else text + "\\%"


def _pct_interval(lo, hi) -> str:
    """``[lo\\%, hi\\%]``; ``(no spread)`` where every network is alike, never ``[x, x]``."""
    return "(no spread)" if latex.degenerate(lo, hi) else f"[{_pct(lo)}, {_pct(hi)}]"


PLACE_ORDER = ("inside", "below", "above")


def reproduction(protocol: str, places: dict[int, str], intervals: dict[int, str], tag: str) -> str:
    """Where the published flip rate lies against one protocol's interval over networks and examples,
    size by size, in words: ``places[b]`` is ``inside``, ``below`` or ``above``, ``intervals[b]`` the
    interval as printed. Sizes are grouped by place (inside, below, above), ascending within a group;
    the first group names the interval (by its family's ``tag``: ``adjusted`` or ``unadjusted``), the
    others say ``it``."""
    if not places:
        return f"with the leftover rows {protocol}, no published flip rate has an interval to be set against"
    groups = []
    for place in PLACE_ORDER:
        sizes = sorted(b for b, p in places.items() if p == place)
        if not sizes:
            continue
        what = f"our {tag} interval over networks and examples" if not groups else "it"
        listed = words([f"$b = {b}$ ({intervals[b]})" for b in sizes])
        groups.append(f"{place} {what} at {listed}")
    if len(groups) == 1:
        body = groups[0]
    else:
        body = ", ".join(groups[:-1]) + " and " + groups[-1]
    return f"with the leftover rows {protocol}, the published flip rate lies {body}"


def verdict_sentence(inside: dict[str, list[int]], outside: dict[str, list[int]], tag: str) -> str:
    """The plain statement: which protocol is consistent with the published flip-rate table (each
    published rate inside its interval over networks and examples), which is not, by the intervals
    its family's ``tag`` names (``adjusted`` or ``unadjusted``). "Consistent with", not "reproduces":
    a published value inside an interval is not a measurement of the same rate (the text says so). A
    protocol with no published rate set against it is left out of the claim."""
    judged = [p for p in ("dropped", "kept") if inside[p] or outside[p]]
    if not judged:
        return "No published flip rate has an interval over networks and examples to be set against."
    text = _verdict(judged, outside)
    return f"By our {tag} intervals, {text[0].lower()}{text[1:]}"


def _verdict(judged: list[str], outside: dict[str, list[int]]) -> str:
    whole = [p for p in judged if not outside[p]]
    if len(judged) == 1:
        p = judged[0]
        verb = "is" if p in whole else "is not"
        return (
            f"The protocol with the leftover rows {p} {verb} consistent with the published flip rates at every "
            "probe size they were set against."
        )
    if len(whole) == 2:
        return "Both protocols are consistent with the published flip rates at every probe size."
    if len(whole) == 1:
        other = "kept" if whole[0] == "dropped" else "dropped"
        return (
            f"The protocol with the leftover rows {whole[0]} is consistent with the published flip rates at every "
            f"probe size; the one with them {other} is not."
        )
    return "Neither protocol is consistent with the published flip rates at every probe size."


def _multiple(ours: float, theirs: float) -> str:
    """Ours as a multiple of a positive published rate (:func:`bnstudy.studies.companions.published.ratio_words`);
    ``zero`` for a rate of exactly zero, never ``0.0 times theirs``."""
    return "zero" if ours == 0 else ratio_words(ours, theirs)


def max_comparison(size: int, theirs, means: dict[str, float], values: dict[str, tuple[list, list]]) -> str:
    """Our mean flip rate at the largest probe size as a multiple of the published rate, per protocol,
    with every network's value and the median beside a mean that one network drives
    (:func:`bnstudy.studies.companions.driven.driven_clause`); the median's own multiple then follows.
    ``values[protocol]``: the networks' flip rates and their seeds. Empty without a published rate
    at that size; no multiple of a published rate of zero."""
    if theirs is None or theirs != theirs:
        return ""
    theirs = float(theirs)
    head = f"At $b = {size}$, against the published {_pct(theirs)}"
    if theirs <= 0:
        parts = [f"with the rows {p} our mean is {_pct(means[p])}" for p in ("dropped", "kept")]
        return f"{head} (a rate of zero, so no multiple of it), " + " and ".join(parts) + "."
    clauses = []
    for p, lead in (("dropped", "our mean flip rate with the rows dropped is"), ("kept", "with them kept")):
        clause = f"{lead} {_multiple(means[p], theirs)}"
        rates, seeds = values[p]
        extra = driven.driven_clause(rates, seeds, _pct)
        if extra:
            middle = driven.median(rates)
            clause += f"{extra}, the median {_multiple(middle, theirs)}"
        clauses.append(clause)
    return f"{head}, {clauses[0]}; {clauses[1]}."


def published_inside(over: pd.DataFrame) -> tuple[dict, dict]:
    """Per protocol, the probe sizes whose published flip rate lies inside / outside the interval
    over networks and examples (sizes without a published value or a crossed interval: neither)."""
    flips = over[(over["measure"] == "flip_rate") & (over["place"] != "")]
    inside = {
        p: sorted(int(b) for b in flips[(flips.protocol == p) & flips.inside].batch_size)
        for p in PROTOCOL_WORDS.values()
    }
    outside = {
        p: sorted(int(b) for b in flips[(flips.protocol == p) & ~flips.inside].batch_size)
        for p in PROTOCOL_WORDS.values()
    }
    return inside, outside


def reproduction_macros(over: pd.DataFrame, tag: str) -> dict:
    """``protReproducesDropped``/``Kept``: :func:`reproduction` of each protocol's flip rate."""
    m = {}
    flips = over[(over["measure"] == "flip_rate") & (over["place"] != "")]
    for p in PROTOCOL_WORDS.values():
        rows = flips[flips["protocol"] == p]
        places = {int(r.batch_size): r.place for r in rows.itertuples(index=False)}
        intervals = {
            int(r.batch_size): _pct_interval(r.crossed_low, r.crossed_high) for r in rows.itertuples(index=False)
        }
        m[latex.macro_name("prot reproduces", p)] = reproduction(p, places, intervals, tag)
    return m


def driven_note(networks: pd.DataFrame, over: pd.DataFrame) -> str:
    """The table's note on the means one network drives (each marked with a dagger): per mean, every
    network's value and the median, after a space (the caption's sentence before it ends with a
    full stop); empty where no mean is driven."""
    label = {"flip_rate": "flip rate", "train_mode_accuracy": "training-mode accuracy"}
    parts = []
    for r in over[over["driven"]].itertuples(index=False):
        g = networks[(networks.protocol == r.protocol) & (networks.batch_size == r.batch_size)].sort_values("seed")
        clause = driven.driven_clause(g[r.measure].tolist(), g["seed"].tolist(), _pct)
        parts.append(f"the {label[r.measure]} with the rows {r.protocol} at $b = {r.batch_size}${clause}")
    if not parts:
        return ""
    return " $^\\dagger$\\,Marked means: " + "; ".join(parts) + "."


def size_macros(
    cell: pd.DataFrame, pair: pd.DataFrame, networks: pd.DataFrame, published: dict, sizes: list[int], fams: dict
) -> dict:
    """Per probe size (``...BTwo...``; at the smallest and largest also ``...Min...``/``...Max...``):
    each protocol's means with the interval over networks (``...Ci``) and over networks and
    examples (``...CrossedCi``), the words that follow a mean one network drives (``...Driven``,
    empty where none does: :func:`bnstudy.studies.companions.driven.driven_clause`), kept minus
    dropped with its verdict, and the published value."""
    m = {}
    head = sizes[0]

    def put(stem: str, b: int, suffix: str, value: str) -> None:
        m[latex.macro_name(stem, "b", b, suffix)] = value
        for end, size in (("min", head), ("max", sizes[-1])):
            if b == size:
                m[latex.macro_name(stem, end, suffix)] = value

    for b in sizes:
        for protocol in PROTOCOL_WORDS.values():
            for measure in MEASURES:
                r = cell.loc[(protocol, measure, b)]
                stem = f"prot {protocol} {measure}"
                put(stem, b, "", _pct(r["mean"]))
                put(stem, b, "ci", _pct_interval(r.ci_low, r.ci_high))
                put(stem, b, "crossed ci", _pct_interval(r.crossed_low, r.crossed_high))
                g = networks[(networks.protocol == protocol) & (networks.batch_size == b)].sort_values("seed")
                put(stem, b, "driven", driven.driven_clause(g[measure].tolist(), g["seed"].tolist(), _pct))
        for measure in MEASURES:
            r = pair.loc[(measure, b)]
            stem = f"prot kept minus dropped {measure}"
            put(stem, b, "", latex.signed_points(r.gain, 1))
            put(stem, b, "ci", pf.keep_interval(r.ci_low, r.ci_high, fams[measure]))  # ``fams``: by measure
            put(stem, b, "verdict", pf.keep_verdict(r.ci_low, r.ci_high, fams[measure]))
            theirs = published.get(measure, {}).get(b)
            if theirs is not None:
                put(f"prot published {measure}", b, "", _pct(theirs))
    return m


def summary_json(
    cell: pd.DataFrame, pair: pd.DataFrame, sizes, inside, outside, confidence: float, families: dict
) -> dict:
    """The JSON summary: each protocol's intervals over networks and over networks and examples per
    measure and probe size, whether one network drives the mean, kept minus dropped, where the
    published value lies against the interval over networks and examples, and ``families``: what
    was applied to each family (:func:`bnstudy.studies.companions.protocol_families.records`)."""

    def over(p, measure, b):
        c = cell.loc[(p, measure, b)]
        return {
            "networks": int(c["networks"]),
            "mean": float(c["mean"]),
            "ci": [float(c["ci_low"]), float(c["ci_high"])],
            "crossed_ci": [_or_none(c["crossed_low"]), _or_none(c["crossed_high"])],
            "driven_by_one_network": bool(c["driven"]),
            "published": _or_none(c["published"]),
            "published_place": c["place"] or None,
            "published_inside": bool(c["inside"]),
        }

    def kept(measure, b):
        c = pair.loc[(measure, b)]
        ci = [float(c["ci_low"]), float(c["ci_high"])]
        return {"pairs": int(c["seeds"]), "gain": float(c["gain"]), "ci": ci, "level": float(c["confidence"])}

    return {
        "confidence": confidence,
        "probe_sizes": sizes,
        "over_networks": {
            p: {measure: {str(b): over(p, measure, b) for b in sizes} for measure in MEASURES}
            for p in PROTOCOL_WORDS.values()
        },
        "kept_minus_dropped": {measure: {str(b): kept(measure, b) for b in sizes} for measure in MEASURES},
        "reproduces_flip_rate": {p: {"inside": inside[p], "outside": outside[p]} for p in PROTOCOL_WORDS.values()},
        "families": families,
    }


def report(probes: pd.DataFrame, published: dict, confidence: float, families: dict[str, Family]) -> dict:
    """Everything the rule writes: the per-network and over-network tables, the paired
    differences, the JSON summary, macros and a LaTeX table. ``published``: the
    ``companions`` section of ``published.yaml``; ``families``: the declared families the config
    forms, ``{name: Family}`` (:mod:`bnstudy.studies.companions.protocol_families`)."""
    networks = per_network(probes)
    sizes = sorted(int(b) for b in networks["batch_size"].unique())
    members = published_members(networks, probes, published)
    level = pf.levels(families, confidence, len(sizes), members)
    over = over_networks(networks, probes, published, confidence, {"flip_rate": level[pf.PUBLISHED]})
    paired = kept_minus_dropped(networks, {m: level[f] for m, f in pf.MEASURE_FAMILY.items()})
    cell = over.set_index(["protocol", "measure", "batch_size"])
    pair = paired.set_index(["measure", "batch_size"])
    inside, outside = published_inside(over)
    head = sizes[0]
    said = f"{100 * confidence:g}\\%"
    against = pf.published_family(families)
    keep, accuracy = families[pf.KEEP], families[pf.KEEP_ACCURACY]
    m = {
        "protNetworksDropped": str(int(cell.loc[("dropped", "flip_rate", head), "networks"])),
        "protNetworksKept": str(int(cell.loc[("kept", "flip_rate", head), "networks"])),
        "protPairs": str(int(pair.loc[("flip_rate", head), "seeds"])),
        "protConfidence": f"{100 * confidence:g}\\%",
        "protSizeMin": str(head),
        "protSizeMax": str(sizes[-1]),
        "protSizeCount": str(len(sizes)),
        "protVerdict": verdict_sentence(inside, outside, against.tag),
        "protPublishedConfidence": said if level[pf.PUBLISHED] == confidence else _level(level[pf.PUBLISHED]),
        "protPublishedClause": pf.published_clause(against, members, said),
        "protKeepSentence": pf.keep_sentence(keep, accuracy, len(sizes), said),
        "protDrivenNote": driven_note(networks, over),
    }
    m |= reproduction_macros(over, against.tag)
    m["protInFull"] = pf.in_full(m["protReproducesKept"])
    top = sizes[-1]
    flips = networks[networks["batch_size"] == top].sort_values("seed")
    by = {p: flips[flips["protocol"] == p] for p in PROTOCOL_WORDS.values()}
    m["protMaxComparison"] = max_comparison(
        top,
        published.get("flip_rate", {}).get(top),
        {p: float(cell.loc[(p, "flip_rate", top), "mean"]) for p in by},
        {p: (g["flip_rate"].tolist(), g["seed"].tolist()) for p, g in by.items()},
    )
    by_measure = {measure: families[f] for measure, f in pf.MEASURE_FAMILY.items()}
    m |= size_macros(cell, pair, networks, published, sizes, by_measure)
    return {
        "networks": networks,
        "over_networks": over,
        "paired": paired,
        "summary": summary_json(
            cell, pair, sizes, inside, outside, confidence, pf.records(families, confidence, len(sizes), members)
        ),
        "macros": m,
        "latex_table": latex_table(over, paired, sizes, by_measure),
    }


def _level(level: float) -> str:
    """An interval's level, two decimals: ``99.38\\%``."""
    return latex.fmt(level, 2, percent=True)


def _or_none(value):
    return None if value != value else float(value)


def latex_table(over: pd.DataFrame, paired: pd.DataFrame, sizes, fams: dict) -> tuple:
    """``(header, rows, align, comment)``: per measure and probe size, each protocol's mean over
    networks (a dagger where one network drives it: :func:`driven_note`) with its interval over
    networks, the published value, and kept minus dropped paired by seed (:func:`protocol_families.keep_interval`),
    its intervals in the words of their families (``fams``: by measure; :meth:`Family.phrase`), in the comment."""
    flip, accuracy = (fams[m].phrase(len(sizes)) for m in MEASURES)
    cell = over.set_index(["protocol", "measure", "batch_size"])
    pair = paired.set_index(["measure", "batch_size"])
    label = {"flip_rate": "flip rate", "train_mode_accuracy": "train-mode acc."}
    rows = []
    for measure in MEASURES:
        for b in sizes:
            row = [label[measure], f"$b={b}$"]
            for protocol in PROTOCOL_WORDS.values():
                r = cell.loc[(protocol, measure, b)]
                mark = "$^\\dagger$" if r.driven else ""
                row.append(f"{_pct(r['mean'])}{mark} {_pct_interval(r.ci_low, r.ci_high)}")
            theirs = cell.loc[("dropped", measure, b), "published"]
            row.append("--" if theirs != theirs else _pct(theirs))
            r = pair.loc[(measure, b)]
            row.append(f"${latex.signed_points(r.gain, 1)}$ ${pf.keep_interval(r.ci_low, r.ci_high, fams[measure])}$")
            rows.append(row)
    header = ["measure", "probe", "leftover dropped [CI]", "leftover kept [CI]", "publ.", "kept $-$ dropped [CI]"]
    comment = (
        "Study 1 under both protocols: means over networks, kept minus dropped by seed;"
        f" its flip rate {flip}, its training-mode accuracy {accuracy}"
    )
    return header, rows, "llllrl", comment
