"""Study 1 under both protocols, as tables: per-network estimates, over networks, kept minus dropped.

The estimates of :mod:`bnstudy.studies.companions.protocols` (which reports them): each network's
flip rate and training-mode accuracy under each protocol (:func:`per_network`), their mean and
Student-t interval on the logit scale over networks beside the crossed interval over networks and
examples (:func:`over_networks`), and the paired differences kept minus dropped
(:func:`kept_minus_dropped`). The levels of the intervals that families of comparisons read (the
crossed flip-rate intervals the published rates are set against, kept minus dropped) are the
caller's, from the declared families (:mod:`bnstudy.studies.companions.protocol_families`).
"""

from __future__ import annotations

import pandas as pd

from bnstudy.base.stats import mean_sd, share_interval
from bnstudy.evaluation.paired import paired_interval
from bnstudy.studies.companions import driven
from bnstudy.studies.companions.published import crossed_design, crossed_interval, published_place

PROTOCOLS = ("dependence", "dependence_keep")  # network names of the probe rows: dropped, kept
PROTOCOL_WORDS = {"dependence": "dropped", "dependence_keep": "kept"}
PROTOCOL_NETWORK = {word: network for network, word in PROTOCOL_WORDS.items()}
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


def over_networks(
    networks: pd.DataFrame, probes: pd.DataFrame, published: dict, confidence: float, crossed: dict | None = None
) -> pd.DataFrame:
    """Per protocol, measure and probe size: networks, mean, sd, interval over networks (logit scale,
    within [0, 1]), the interval over networks and examples (``crossed_low``/``crossed_high``:
    :func:`bnstudy.studies.companions.published.crossed_interval`, at the level ``crossed[measure]``,
    ``confidence`` where ``crossed`` does not give one; NaN with one network), the
    published value (NaN if none), where it lies against the crossed interval (``place``:
    ``inside``, ``below``, ``above``; empty without a published value or a crossed interval),
    whether inside, ours / published, and whether one network drives the mean (``driven``)."""
    out = []
    for protocol in PROTOCOL_WORDS.values():
        for measure in MEASURES:
            for b, g in networks[networks["protocol"] == protocol].groupby("batch_size", sort=True):
                values = g.sort_values("seed")[measure].tolist()
                mean, sd, lo, hi = share_interval(values, confidence)
                level = (crossed or {}).get(measure, confidence)
                c = crossed_interval(probes, PROTOCOL_NETWORK[protocol], int(b), level, COUNTS[measure])
                c_lo, c_hi = (float("nan"), float("nan")) if c is None else (c["ci_low"], c["ci_high"])
                theirs = published.get(measure, {}).get(int(b))
                theirs = float("nan") if theirs is None else float(theirs)
                place = published_place(theirs, c_lo, c_hi) if theirs == theirs and c is not None else ""
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
                        "crossed_low": c_lo,
                        "crossed_high": c_hi,
                        "published": theirs,
                        "place": place,
                        "inside": place == "inside",
                        "ratio": mean / theirs if theirs == theirs and theirs != 0 else float("nan"),
                        "driven": driven.drives(values),
                    }
                )
    return pd.DataFrame(out)


def published_members(networks: pd.DataFrame, probes: pd.DataFrame, published: dict) -> int:
    """How many published flip rates are set against an interval of ours: per protocol, the probe
    sizes with a published flip rate and a crossed design (two networks and two examples or more:
    :func:`bnstudy.studies.companions.published.crossed_design`), the place :func:`over_networks` gives."""
    rates = published.get("flip_rate", {})
    return sum(
        1
        for protocol in PROTOCOL_WORDS.values()
        for b in sorted(networks[networks["protocol"] == protocol]["batch_size"].unique())
        if rates.get(int(b)) is not None and crossed_design(probes, PROTOCOL_NETWORK[protocol], int(b))
    )


def kept_minus_dropped(networks: pd.DataFrame, levels: dict[str, float]) -> pd.DataFrame:
    """Per measure and probe size: kept minus dropped, paired by seed (the seeds both protocols have),
    each interval at the level ``levels[measure]`` (column ``confidence``)."""
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
            row = paired_interval([kept[s] for s in seeds], [dropped[s] for s in seeds], levels[measure])
            out.append({"measure": measure, "batch_size": int(b)} | row | {"confidence": levels[measure]})
    return pd.DataFrame(out)
