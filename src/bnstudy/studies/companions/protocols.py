"""Study 1 under both protocols: the dependence networks trained with each epoch's leftover rows
dropped (our protocol, ``dependence``) and kept (the published protocol's default loader,
``dependence_keep``), probed alike, side by side against the published table.

Per network (one per seed; a seed gives both protocols the same initial weights and batch
order, the kept protocol adding the leftover batch), random companions at each probe size:

- ``flip_rate``: mean over the probed examples of the share of batches whose training-mode
  label differs from the inference-mode one;
- ``train_mode_accuracy``: mean over the examples of the share of batches labelled correctly.

These are the per-network estimates of :func:`bnstudy.studies.companions.estimates.summarise` (means correctly
rounded, :func:`bnstudy.base.stats.mean_sd`). Over networks: the mean and a Student-t interval
on the logit scale (:func:`bnstudy.base.stats.share_interval`), which stays within [0, 1] as every
measure is a share; kept minus
dropped paired by seed (:func:`bnstudy.evaluation.paired.paired_interval`). A protocol is
*consistent with* a published value at a probe size when the value lies inside the protocol's
interval over networks (the JSON's ``reproduces_flip_rate``, a name kept from before); each
interval is one of a family of one per probe size and measure, with no correction for
multiplicity. Nothing here depends on the CPU.
"""

from __future__ import annotations

import pandas as pd

from bnstudy.base.stats import mean_sd, share_interval
from bnstudy.evaluation.paired import paired_interval
from bnstudy.paper import latex
from bnstudy.paper.latex import words

PROTOCOLS = ("dependence", "dependence_keep")  # network names of the probe rows: dropped, kept
PROTOCOL_WORDS = {"dependence": "dropped", "dependence_keep": "kept"}
MEASURES = ("flip_rate", "train_mode_accuracy")
COUNTS = {"flip_rate": "flips", "train_mode_accuracy": "correct"}


def per_network(probes: pd.DataFrame) -> pd.DataFrame:
    """One row per protocol, seed and random probe size: ``flip_rate``, ``train_mode_accuracy``
    (means over examples, examples ascending) and the number of examples."""
    random = probes[(probes["design"] == "random") & probes["network"].isin(PROTOCOLS)]
    out = []
    for (network, seed, b), g in random.groupby(["network", "seed", "batch_size"], sort=True):
        g = g.sort_values("example")
        row = {"protocol": PROTOCOL_WORDS[network], "seed": int(seed), "batch_size": int(b), "examples": len(g)}
        for measure, count in COUNTS.items():
            row[measure] = mean_sd((g[count] / g["batches"]).tolist())[0]
        out.append(row)
    if not out:
        raise ValueError(f"no random-companion probes of the networks {PROTOCOLS}")
    frame = pd.DataFrame(out)
    missing = set(PROTOCOL_WORDS.values()) - set(frame["protocol"])
    if missing:
        raise ValueError(f"no probes of the {' and '.join(sorted(missing))} protocol")
    order = {p: i for i, p in enumerate(PROTOCOL_WORDS.values())}
    return (
        frame.assign(_p=frame["protocol"].map(order))
        .sort_values(["_p", "batch_size", "seed"])
        .drop(columns="_p")
        .reset_index(drop=True)
    )


def over_networks(networks: pd.DataFrame, published: dict, confidence: float) -> pd.DataFrame:
    """Per protocol, measure and probe size: networks, mean, sd, interval (logit scale, within [0, 1]),
    the published value (NaN if none), whether it lies inside the interval, ours / published."""
    out = []
    for protocol in PROTOCOL_WORDS.values():
        for measure in MEASURES:
            for b, g in networks[networks["protocol"] == protocol].groupby("batch_size", sort=True):
                mean, sd, lo, hi = share_interval(g.sort_values("seed")[measure].tolist(), confidence)
                theirs = published.get(measure, {}).get(int(b))
                theirs = float("nan") if theirs is None else float(theirs)
                out.append(
                    {
                        "protocol": protocol,
                        "measure": measure,
                        "batch_size": int(b),
                        "networks": len(g),
                        "mean": mean,
                        "sd": sd,
                        "ci_low": lo,
                        "ci_high": hi,
                        "published": theirs,
                        "inside": bool(lo <= theirs <= hi),
                        "ratio": mean / theirs if theirs == theirs and theirs != 0 else float("nan"),
                    }
                )
    return pd.DataFrame(out)


def kept_minus_dropped(networks: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """Per measure and probe size: kept minus dropped, paired by seed (the seeds both protocols have)."""
    out = []
    for measure in MEASURES:
        for b in sorted(networks["batch_size"].unique()):
            kept, dropped = (
                networks[(networks["protocol"] == p) & (networks["batch_size"] == b)].set_index("seed")[measure]
                for p in ("kept", "dropped")
            )
            seeds = sorted(set(kept.index) & set(dropped.index))
            if not seeds:
                raise ValueError(f"no seed has networks of both protocols at probe size {b}")
            row = paired_interval([kept[s] for s in seeds], [dropped[s] for s in seeds], confidence)
            out.append({"measure": measure, "batch_size": int(b)} | row)
    return pd.DataFrame(out)


def _pct(value) -> str:
    """A share in percent with the shared endpoint rule: a share that is not 0 or 1 never prints as
    0.0% or 100.0% (:func:`bnstudy.paper.latex.endpoint`)."""
    text = latex.endpoint(value, 1, bounds=(0, 1))
    return text if text == "n/a" else text + "\\%"


def _pct_interval(lo, hi) -> str:
    """``[lo\\%, hi\\%]``; ``(no spread)`` where every network is alike, never ``[x, x]``."""
    return "(no spread)" if latex.degenerate(lo, hi) else f"[{_pct(lo)}, {_pct(hi)}]"


def _sizes(sizes) -> str:
    return words([f"$b = {b}$" for b in sizes])


def reproduction(protocol: str, inside: list[int], outside: list[int]) -> str:
    """Whether one protocol is consistent with the published flip rates, in words: ``inside`` the sizes
    whose published rate lies inside the protocol's interval over networks, ``outside`` the rest."""
    head = f"with the leftover rows {protocol}, the published flip rate lies"
    if not outside:
        return f"{head} inside the interval over networks at every probe size"
    if not inside:
        return f"{head} outside the interval over networks at every probe size"
    return f"{head} inside the interval over networks at {_sizes(inside)} and outside it at {_sizes(outside)}"


def verdict_sentence(inside: dict[str, list[int]], outside: dict[str, list[int]], headline: int) -> str:
    """The plain statement: which protocol is consistent with the published flip-rate table (each
    published rate inside its interval over networks), which is not, and which is consistent with the
    rate at the ``headline`` size (the smallest probe size). "Consistent with", not "reproduces": a
    published value inside an interval is not a measurement of the same rate (the text says so)."""
    whole = [p for p in ("dropped", "kept") if not outside[p]]
    at_head = [p for p in ("dropped", "kept") if headline in inside[p]]
    if len(whole) == 2:
        first = "Both protocols are consistent with the published flip rates at every probe size"
    elif len(whole) == 1:
        other = "kept" if whole[0] == "dropped" else "dropped"
        first = (
            f"The protocol with the leftover rows {whole[0]} is consistent with the published flip rates at every "
            f"probe size; the one with them {other} is not"
        )
    else:
        first = "Neither protocol is consistent with the whole published flip-rate table"
    if len(at_head) == 2:
        second = f"both are consistent with the published rate at $b = {headline}$"
    elif len(at_head) == 1:
        other = "kept" if at_head[0] == "dropped" else "dropped"
        second = (
            f"at $b = {headline}$ only the protocol with the leftover rows {at_head[0]} is consistent with the "
            f"published rate; the one with them {other} is not"
        )
    else:
        second = f"neither is consistent with the published rate at $b = {headline}$"
    return f"{first}: {second}."


def published_inside(over: pd.DataFrame) -> tuple[dict, dict]:
    """Per protocol, the probe sizes whose published flip rate lies inside / outside the interval."""
    flips = over[(over["measure"] == "flip_rate") & over["published"].notna()]
    inside = {
        p: sorted(int(b) for b in flips[(flips.protocol == p) & flips.inside].batch_size)
        for p in PROTOCOL_WORDS.values()
    }
    outside = {
        p: sorted(int(b) for b in flips[(flips.protocol == p) & ~flips.inside].batch_size)
        for p in PROTOCOL_WORDS.values()
    }
    return inside, outside


def size_macros(cell: pd.DataFrame, pair: pd.DataFrame, published: dict, sizes: list[int]) -> dict:
    """Per probe size (``...BTwo...``; at the smallest and largest also ``...Min...``/``...Max...``):
    each protocol's means and intervals with their ratio to the published rate, kept minus dropped
    with its verdict, and the published value."""
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
                if r.published == r.published:
                    put(stem, b, "ratio", latex.fmt(r.ratio, 1))
        for measure in MEASURES:
            r = pair.loc[(measure, b)]
            stem = f"prot kept minus dropped {measure}"
            put(stem, b, "", latex.signed_points(r.gain, 1))
            put(stem, b, "ci", latex.points_interval(r.ci_low, r.ci_high, signed=True, digits=1))
            put(stem, b, "verdict", latex.verdict(r.ci_low, r.ci_high))
            theirs = published.get(measure, {}).get(b)
            if theirs is not None:
                put(f"prot published {measure}", b, "", _pct(theirs))
    return m


def summary_json(cell: pd.DataFrame, pair: pd.DataFrame, sizes, inside, outside, confidence: float) -> dict:
    """The JSON summary: each protocol's interval over networks per measure and probe size, kept
    minus dropped, and where the published flip rate lies."""

    def over(p, measure, b):
        c = cell.loc[(p, measure, b)]
        return {
            "networks": int(c["networks"]),
            "mean": float(c["mean"]),
            "ci": [float(c["ci_low"]), float(c["ci_high"])],
            "published": _or_none(c["published"]),
            "published_inside": bool(c["inside"]),
        }

    def kept(measure, b):
        c = pair.loc[(measure, b)]
        return {"pairs": int(c["seeds"]), "gain": float(c["gain"]), "ci": [float(c["ci_low"]), float(c["ci_high"])]}

    return {
        "confidence": confidence,
        "probe_sizes": sizes,
        "over_networks": {
            p: {measure: {str(b): over(p, measure, b) for b in sizes} for measure in MEASURES}
            for p in PROTOCOL_WORDS.values()
        },
        "kept_minus_dropped": {measure: {str(b): kept(measure, b) for b in sizes} for measure in MEASURES},
        "reproduces_flip_rate": {p: {"inside": inside[p], "outside": outside[p]} for p in PROTOCOL_WORDS.values()},
    }


def report(probes: pd.DataFrame, published: dict, confidence: float) -> dict:
    """Everything the rule writes: the per-network and over-network tables, the paired
    differences, the JSON summary, macros and a LaTeX table. ``published``: the
    ``companions`` section of ``published.yaml``."""
    networks = per_network(probes)
    over = over_networks(networks, published, confidence)
    paired = kept_minus_dropped(networks, confidence)
    sizes = sorted(int(b) for b in networks["batch_size"].unique())
    cell = over.set_index(["protocol", "measure", "batch_size"])
    pair = paired.set_index(["measure", "batch_size"])
    inside, outside = published_inside(over)
    head = sizes[0]
    m = {
        "protNetworksDropped": str(int(cell.loc[("dropped", "flip_rate", head), "networks"])),
        "protNetworksKept": str(int(cell.loc[("kept", "flip_rate", head), "networks"])),
        "protPairs": str(int(pair.loc[("flip_rate", head), "seeds"])),
        "protConfidence": f"{100 * confidence:g}\\%",
        "protSizeMin": str(head),
        "protSizeMax": str(sizes[-1]),
        "protSizeCount": str(len(sizes)),
        "protReproducesDropped": reproduction("dropped", inside["dropped"], outside["dropped"]),
        "protReproducesKept": reproduction("kept", inside["kept"], outside["kept"]),
        "protVerdict": verdict_sentence(inside, outside, head),
    }
    m |= size_macros(cell, pair, published, sizes)
    return {
        "networks": networks,
        "over_networks": over,
        "paired": paired,
        "summary": summary_json(cell, pair, sizes, inside, outside, confidence),
        "macros": m,
        "latex_table": latex_table(over, paired, sizes),
    }


def _or_none(value):
    return None if value != value else float(value)


def latex_table(over: pd.DataFrame, paired: pd.DataFrame, sizes) -> tuple:
    """``(header, rows, align, comment)``: per measure and probe size, each protocol's mean over
    networks with its interval, the published value, and kept minus dropped paired by seed."""
    cell = over.set_index(["protocol", "measure", "batch_size"])
    pair = paired.set_index(["measure", "batch_size"])
    label = {"flip_rate": "flip rate", "train_mode_accuracy": "train-mode acc."}
    rows = []
    for measure in MEASURES:
        for b in sizes:
            row = [label[measure], f"$b={b}$"]
            for protocol in PROTOCOL_WORDS.values():
                r = cell.loc[(protocol, measure, b)]
                row.append(f"{_pct(r['mean'])} {_pct_interval(r.ci_low, r.ci_high)}")
            theirs = cell.loc[("dropped", measure, b), "published"]
            row.append("--" if theirs != theirs else _pct(theirs))
            r = pair.loc[(measure, b)]
            row.append(
                f"${latex.signed_points(r.gain, 1)}$ "
                f"${latex.points_interval(r.ci_low, r.ci_high, signed=True, digits=1)}$"
            )
            rows.append(row)
    header = ["measure", "probe", "leftover dropped [CI]", "leftover kept [CI]", "publ.", "kept $-$ dropped [CI]"]
    return header, rows, "llllrl", "Study 1 under both protocols: means over networks, kept minus dropped by seed"
