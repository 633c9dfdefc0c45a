"""Study 1's summary: the dependence networks and the grid, as tidy tables, macros and LaTeX tables.

The rule script ``companions_summarise.py`` reads the probe counts and writes what
:func:`summarise_all` returns. Per network, design and size the estimates and their
bootstrap intervals over examples come from :func:`bnstudy.studies.companions.estimates.summarise`;
over networks (the dependence networks, one per seed; the grid's seeds) each
estimate's mean and Student-t interval are :func:`bnstudy.base.stats.summarise_over_seeds`
(sums correctly rounded). Nothing here depends on the CPU.
"""

from __future__ import annotations

import math

import pandas as pd

from bnstudy.base import stats
from bnstudy.nets.model import BATCH_KINDS
from bnstudy.paper import latex
from bnstudy.paper.latex import words
from bnstudy.studies.companions import driven
from bnstudy.studies.companions import estimates as companions

MEASURES = ("flip_rate", "train_mode_accuracy", "ever_flipped")
NETWORK_KEYS = ["normaliser", "train_batch_size", "design", "batch_size"]
ONE_CLASS = (("own_class", "own class"), ("other_class", "another class"), ("any_class", "any class"))


def over_networks(summary: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """Mean, sd and interval over networks of every measure, per normaliser, training batch, design, b.

    Every measure is a share, so the interval is the Student-t interval on the logit scale
    (:func:`bnstudy.base.stats.share_interval`), which stays within [0, 1]."""
    parts = [
        stats.summarise_over_seeds(summary, NETWORK_KEYS, value, confidence, bounded=True).assign(measure=value)
        for value in MEASURES
    ]
    return pd.concat(parts, ignore_index=True)


def _pct(v):
    """A share in percent with the sign ``\\%``; never ``0.0\\%`` or ``100.0\\%`` for a share
    that is neither 0 nor 1 (:func:`bnstudy.paper.latex.points`)."""
    text = latex.points(v)
    return text if text == "n/a" else text + "\\%"


def _fraction(v):
    """A share as a fraction with three decimals, never ``0.000`` or ``1.000`` unless exact."""
    return latex.endpoint(v, 3, scale=1.0, bounds=(1.0,))


NO_SPREAD = "(no spread)"


def _interval(lo, hi, percent=True):
    """``[lo, hi]``; :data:`NO_SPREAD` for a degenerate interval (every resample or network alike),
    never ``[80.0\\%, 80.0\\%]``."""
    if latex.degenerate(lo, hi):
        return NO_SPREAD
    f = _pct if percent else _fraction
    return f"[{f(lo)}, {f(hi)}]"


def _with_interval(value, lo, hi, percent=True):
    """``value [lo, hi]``; ``every one`` / ``none`` for a degenerate interval at 1 or 0."""
    words_ = latex.degenerate_share(value, lo, hi)
    if words_ is not None:
        return words_
    f = _pct if percent else _fraction
    return f"{f(value)} {_interval(lo, hi, percent)}"


def _value_and_interval(value, lo, hi, percent=True) -> tuple[str, str]:
    """The value and its interval as two macros; a degenerate interval at 1 or 0 gives
    ``every one`` / ``none`` and an empty interval."""
    words_ = latex.degenerate_share(value, lo, hi)
    if words_ is not None:
        return words_, ""
    return (_pct if percent else _fraction)(value), _interval(lo, hi, percent)


def exact_pool_macro(params) -> dict:
    """``compExactPool``: the exact design's sample of companions, where the config draws one (the
    sections test ``\\ifdefined\\compExactPool``); nothing where it pairs every test row."""
    n = params.get("exact_companions")
    return {} if n is None else {"compExactPool": latex.fmt(int(n))}


def exact_label(params) -> str:
    """The exact design's row label in the tables."""
    n = params.get("exact_companions")
    return "every companion" if n is None else f"every one of {latex.fmt(int(n))} sampled"


def setting_macros(probes, dep0, dep_networks, result: dict, published, params) -> dict:
    """The probes' design and the first dependence network's headline numbers."""
    sizes = sorted(int(b) for b in dep0.loc[dep0["design"] == "random", "batch_size"])
    first = dep0.iloc[0]
    classes = int(probes["label"].nunique())
    m = {
        "compExamples": str(int(first["examples"])),
        "compPerClass": str(params["examples_per_class"]),
        "compBatches": str(params["batches_per_example"]),
        "compExactBatches": latex.fmt(int(dep0.loc[dep0["design"] == "exact", "batches_per_example"].iloc[0]))
        if (dep0["design"] == "exact").any()
        else "n/a",
        **exact_pool_macro(params),
        "compOneClassSize": str(params["one_class_batch_size"]),
        "compOneClassCompanions": str(params["one_class_batch_size"] - 1),
        "compResamples": latex.fmt(int(params["resamples"])),
        "compConfidence": f"{100 * params['confidence']:g}\\%",
        "compSizeList": ", ".join(str(b) for b in sizes),
        "compInferenceAcc": latex.fmt(result["inference_accuracy"]),
        "compPublishedInferenceAcc": latex.fmt(published["inference_accuracy"]),
        "compOwnFlip": _pct(result["one_class_same_flip"]),
        "compOtherFlip": _pct(result["one_class_other_flip"]),
        "compPublishedOneClassFlip": _pct(1 - published["one_class_same_label_b16"]),
        "compExactFlip": _pct(result["exact_flip_rate_b2"]) if result["exact_flip_rate_b2"] is not None else "n/a",
        "compClasses": str(classes),
        "compOtherClasses": str(classes - 1),
        "compDepSeed": str(int(first["seed"])),
        "compDepNetworks": str(int(dep_networks["seeds"].max())),
    }
    if "one_class_any_flip" in result:
        m["compAnyFlip"] = _pct(result["one_class_any_flip"])
        m["compMixtureFlip"] = _pct(
            companions.mixture_flip_rate(result["one_class_same_flip"], result["one_class_other_flip"], classes)
        )
        m["compOwnShare"] = latex.fmt(1 / classes, 1)
        m["compOtherShare"] = latex.fmt((classes - 1) / classes, 1)
    return m


def size_macros(dep0: pd.DataFrame, dep_networks: pd.DataFrame, sizes: list[int]) -> dict:
    """Per random probe size: the first network's flip rate, accuracy and ever-flipped share with
    their bootstrap intervals, and every measure's mean and interval over the dependence networks."""
    m = {}
    for b in sizes:
        r = dep0[(dep0["design"] == "random") & (dep0["batch_size"] == b)].iloc[0]
        m[latex.macro_name("comp", "flip", "b", b)] = _pct(r["flip_rate"])
        m[latex.macro_name("comp", "flip", "low", "b", b)] = _pct(r["flip_rate_ci_low"])
        m[latex.macro_name("comp", "flip", "high", "b", b)] = _pct(r["flip_rate_ci_high"])
        (
            m[latex.macro_name("comp", "acc", "b", b)],
            m[latex.macro_name("comp", "acc", "ci", "b", b)],
        ) = _value_and_interval(
            r["train_mode_accuracy"], r["train_mode_accuracy_ci_low"], r["train_mode_accuracy_ci_high"], False
        )
        (
            m[latex.macro_name("comp", "ever", "b", b)],
            m[latex.macro_name("comp", "ever", "ci", "b", b)],
        ) = _value_and_interval(r["ever_flipped"], r["ever_flipped_ci_low"], r["ever_flipped_ci_high"])
        net = dep_networks[(dep_networks["design"] == "random") & (dep_networks["batch_size"] == b)]
        for measure in MEASURES:
            row = net[net["measure"] == measure]
            if len(row):
                row = row.iloc[0]
                (
                    m[latex.macro_name("comp", "net", measure, "b", b)],
                    m[latex.macro_name("comp", "net", measure, "ci", "b", b)],
                ) = _value_and_interval(row["mean"], row.ci_low, row.ci_high, measure != "train_mode_accuracy")
    return m


def grid_macros(probes: pd.DataFrame, over_seeds: pd.DataFrame, sizes: list[int]) -> dict:
    """The grid's probes: controls (no batch statistics) must never flip; the batch normalisers'
    lowest and highest mean flip rate over training batch sizes."""
    m = {}
    controls = probes[~probes["normaliser"].isin(BATCH_KINDS)]  # no batch statistics: must never flip
    grid = probes[probes["network"] == "grid"]
    m["compControlNetworks"] = str(len(controls.groupby(["normaliser", "train_batch_size", "seed"])))
    m["compControlProbes"] = latex.fmt(int(controls["batches"].sum()))
    m["compControlFlips"] = latex.fmt(int(controls["flips"].sum()))
    m["compGridNetworks"] = str(len(grid.groupby(["normaliser", "train_batch_size", "seed"])))
    flips = over_seeds[(over_seeds["measure"] == "flip_rate") & (over_seeds["design"] == "random")]
    for norm in ("batchnorm", "batchrenorm"):
        for b in (sizes[0], sizes[-1]):
            cell = flips[(flips["normaliser"] == norm) & (flips["batch_size"] == b)]
            if len(cell):
                m[latex.macro_name("comp", "grid", norm, "min", "b", b)] = _pct(cell["mean"].min())
                m[latex.macro_name("comp", "grid", norm, "max", "b", b)] = _pct(cell["mean"].max())
    return m


def macros(probes, dep0, dep_networks, over_seeds, published, params) -> dict:
    """Every number the section quotes. ``dep0``: the first dependence network's summary rows;
    ``dep_networks``: :func:`over_networks` of all dependence networks."""
    result = companions.dependence_json(dep0)
    sizes = sorted(int(b) for b in dep0.loc[dep0["design"] == "random", "batch_size"])
    m = setting_macros(probes, dep0, dep_networks, result, published, params)
    m |= size_macros(dep0, dep_networks, sizes)
    # Exact b = 2 rate against the sampled interval, and the largest gap to the published rates.
    if 2 in sizes and result["exact_flip_rate_b2"] is not None:
        lo, hi = result["2"]["flip_ci"]
        m["compExactInInterval"] = "inside" if lo <= result["exact_flip_rate_b2"] <= hi else "outside"
    m |= published_ratio_macros(probes, published, sizes, params["confidence"])
    m |= grid_macros(probes, over_seeds, sizes)
    return m


def ratio_words(ours: float, theirs: float) -> str:
    """Our rate as a multiple of theirs with the digits that tell it from 1: ``1.7 times theirs``,
    ``1.04 times theirs`` (never ``1.0 times``), ``equal to theirs to two decimals``; ``theirs zero``."""
    if theirs <= 0:
        return "theirs zero"
    r = ours / theirs
    if latex.fmt(r, 1) not in ("1.0", "0.9", "1.1"):
        return f"{latex.fmt(r, 1)} times theirs"
    if latex.fmt(r, 2) == "1.00":
        return "equal to theirs to two decimals"
    return f"{latex.fmt(r, 2)} times theirs"


def crossed_interval(probes: pd.DataFrame, network: str, b: int, confidence: float, count: str = "flips"):
    """A share over networks and examples together: ``network``'s networks (one per seed) with
    random companions of ``b``, each example's ``count / batches`` (``count``: ``flips`` for the
    flip rate, ``correct`` for the training-mode accuracy) as a networks x examples table (both
    ascending), and :func:`bnstudy.base.stats.crossed_components` of it: the mean with the
    interval over new networks and new examples, and the variance components. ``None`` with fewer
    than two networks or two examples (no crossed design)."""
    g = probes[(probes["network"] == network) & (probes["design"] == "random") & (probes["batch_size"] == b)]
    if g["seed"].nunique() < 2 or g["example"].nunique() < 2:
        return None
    table = (
        g.assign(rate=g[count] / g["batches"])
        .pivot_table(index="seed", columns="example", values="rate", aggfunc="first")
        .sort_index(axis=0)
        .sort_index(axis=1)
    )
    return stats.crossed_components(table.to_numpy(), confidence)


def published_place(theirs: float, lo: float, hi: float) -> str:
    """Where a published value lies against an interval: ``inside``, ``below`` or ``above``."""
    return "inside" if lo <= theirs <= hi else ("below" if theirs < lo else "above")


def published_ratio_macros(probes: pd.DataFrame, published: dict, sizes, confidence: float) -> dict:
    """Our flip rates against the published ones, size by size, as ratios and against our intervals.

    The published rates come from one network, other examples and another split, so each is set
    against the interval over the dependence networks and the examples together
    (:func:`crossed_interval`), not the one over networks alone; the words are
    :func:`published_comparison`'s. A size without a published rate, or with one network (no
    crossed interval), is left out."""
    cells = {}
    for b in sizes:
        theirs = published["flip_rate"].get(b)
        c = crossed_interval(probes, "dependence", b, confidence)
        if theirs is not None and c is not None:
            cells[b] = (float(theirs), c["mean"], c["ci_low"], c["ci_high"])
    return published_comparison(cells)


def published_comparison(cells: dict[int, tuple[float, float, float, float]]) -> dict:
    """``cells[b] = (published, our mean, interval low, interval high)``, sizes ascending:

    - ``compPublishedComparison``: per size, the published rate, whether it lies inside, below or
      above our interval, and the ratio of our mean to it (``at $b=16$ the published 3.2\\% lies
      below our interval [...] (ours 4.8\\%, 1.5 times theirs)``), joined by semicolons; ``n/a``
      for no size;
    - ``compPublishedOutside``: the sizes whose published rate lies outside our interval, in words.
    """
    clauses, outside = [], []
    for b in sorted(cells):
        theirs, mean, lo, hi = cells[b]
        where = published_place(theirs, lo, hi)
        if where != "inside":
            outside.append(f"$b={b}$")
        clauses.append(
            f"at $b={b}$ the published {_pct(theirs)} lies {where} our interval {_interval(lo, hi)}"
            f" (ours {_pct(mean)}, {ratio_words(mean, theirs)})"
        )
    return {
        "compPublishedComparison": "; ".join(clauses) if clauses else "n/a",
        "compPublishedOutside": f"at {words(outside)}" if outside else "at no size",
    }


def driven_macros(dep: pd.DataFrame, sizes) -> dict:
    """``compNetFlipRateDrivenB<size>``: the words that follow the mean flip rate over the dependence
    networks with random companions where one network drives it (every network's rate and the
    median: :func:`bnstudy.studies.companions.driven.driven_clause`); empty where none does."""
    m = {}
    for b in sizes:
        g = dep[(dep["design"] == "random") & (dep["batch_size"] == b)].sort_values("seed")
        m[latex.macro_name("comp net flip_rate driven", "b", b)] = driven.driven_clause(
            g["flip_rate"].tolist(), g["seed"].tolist(), _pct
        )
    return m


def components_macros(probes: pd.DataFrame, sizes, confidence: float) -> dict:
    """The headline flip rate's variance over networks and over examples (crossed design).

    For the random design at the smallest and the largest probe size, the dependence
    networks' per-example flip rates form a networks x examples table;
    :func:`bnstudy.base.stats.crossed_components` gives the mean with an interval that counts
    both sources (``compNetFlipRateCombinedCi<End>``), each source's standard deviation in
    points (``compSdNetworks<End>``, ``compSdExamples<End>``) and each one's share of the
    mean's variance (``compShareNetworks<End>``...)."""
    m = {}
    for end, b in (("min", sizes[0]), ("max", sizes[-1])):
        c = crossed_interval(probes, "dependence", b, confidence)
        if c is None:
            continue
        name = lambda *parts: latex.macro_name("comp", *parts, end)  # noqa: E731
        m[name("net flip rate combined ci")] = _interval(c["ci_low"], c["ci_high"])
        m[name("sd networks")] = latex.points(math.sqrt(c["var_network"]))
        m[name("sd examples")] = latex.points(math.sqrt(c["var_example"]))
        m[name("share networks")] = latex.fmt(c["share_networks"], 0, percent=True)
        m[name("share examples")] = latex.fmt(c["share_examples"], 0, percent=True)
        m[name("share residual")] = latex.fmt(1 - c["share_networks"] - c["share_examples"], 0, percent=True)
        m[name("components df")] = latex.fmt(c["df"], 0)
    return m


# Per-size macros that the text also quotes at the smallest and the largest probe size, so
# that the prose names no size: ``compFlipBTwo`` -> ``compFlipMin`` when 2 is the smallest.
END_STEMS = (
    "comp flip",
    "comp flip ci",
    "comp acc",
    "comp acc ci",
    "comp ever",
    "comp ever ci",
    "comp net flip_rate",
    "comp net flip_rate ci",
    "comp net flip_rate driven",
    "comp net train_mode_accuracy",
    "comp net train_mode_accuracy ci",
    "comp net ever_flipped",
    "comp net ever_flipped ci",
    "comp keep flip",
    "comp keep flip ci",
)


def end_macros(m: dict, dep0: pd.DataFrame, over_seeds: pd.DataFrame, one_class_size: int) -> dict:
    """Macros that name no probe size, from the per-size ones in ``m``.

    - ``compSizeMin``/``compSizeMax``: the smallest and largest random probe size, and each
      stem of :data:`END_STEMS` at those sizes (``compFlipMin``, ``compNetFlipRateCiMax``...);
      ``compFlipCiMin``: the bootstrap interval of the flip rate as one ``[low, high]``;
    - ``compSizeWords`` and ``compFlipList``: every random size and its flip rate, as words
      (``2, 4, 16 and 64``; ``45.3\\%, ... and 1.4\\%``), in the same order;
    - ``compExactSize``: the batch size of the every-companion design;
    - ``compRandomFlipOneClass``: the flip rate with random companions at the one-class batch size
      (``n/a`` if that size is not probed);
    - ``compGrid<Norm>Lowest<End>``/``Highest<End>``: lowest and highest grid flip rate over
      training batch sizes (mean over seeds) at the smallest/largest probe size, and
      ``compGrid<Norm>Range<End>`` the two as the text quotes them (:func:`flip_range`).
    """
    random = dep0[dep0["design"] == "random"].sort_values("batch_size")
    sizes = [int(b) for b in random["batch_size"]]
    out = {"compSizeMin": str(sizes[0]), "compSizeMax": str(sizes[-1])}
    out["compSizeWords"] = words([str(b) for b in sizes])
    out["compFlipList"] = words([_pct(v) for v in random["flip_rate"]])
    for r in random.itertuples(index=False):
        ci = _interval(r.flip_rate_ci_low, r.flip_rate_ci_high)
        out[latex.macro_name("comp flip ci b", int(r.batch_size))] = ci
    m = m | out
    for end, b in (("min", sizes[0]), ("max", sizes[-1])):
        for stem in END_STEMS:
            source = latex.macro_name(stem, "b", b)
            if source in m:
                out[latex.macro_name(stem, end)] = m[source]
    exact = dep0[dep0["design"] == "exact"]
    out["compExactSize"] = str(int(exact["batch_size"].iloc[0])) if len(exact) else "n/a"
    at = random[random["batch_size"] == one_class_size]
    out["compRandomFlipOneClass"] = _pct(float(at["flip_rate"].iloc[0])) if len(at) else "n/a"
    flips = over_seeds[(over_seeds["measure"] == "flip_rate") & (over_seeds["design"] == "random")]
    for norm in ("batchnorm", "batchrenorm"):
        for end, b in (("min", sizes[0]), ("max", sizes[-1])):
            cell = flips[(flips["normaliser"] == norm) & (flips["batch_size"] == b)]
            if len(cell):
                low, high = _pct(cell["mean"].min()), _pct(cell["mean"].max())
                out[latex.macro_name("comp grid", norm, "lowest", end)] = low
                out[latex.macro_name("comp grid", norm, "highest", end)] = high
                out[latex.macro_name("comp grid", norm, "range", end)] = flip_range(
                    cell["mean"].min(), cell["mean"].max()
                )
    return out


def flip_range(low: float, high: float) -> str:
    """The grid's flip rates over training batch sizes as the text quotes them: ``low--high``;
    one value where both print alike; ``none`` where no probe of any network flipped (both 0),
    as the Methods promise for a nil share."""
    if low == high == 0.0:
        return "none"
    a, b = _pct(low), _pct(high)
    return a if a == b else f"{a}--{b}"


def keep_macros(keep: pd.DataFrame) -> dict:
    """The first dependence network retrained with the leftover rows kept: flip rate with its
    interval per random size, exact rate at b = 2, inference accuracy."""
    m = {}
    for r in keep.to_dict("records"):
        b = int(r["batch_size"])
        if r["design"] == "random":
            m[latex.macro_name("comp", "keep", "flip", "b", b)] = _pct(r["flip_rate"])
            m[latex.macro_name("comp", "keep", "flip", "ci", "b", b)] = _interval(
                r["flip_rate_ci_low"], r["flip_rate_ci_high"]
            )
        elif r["design"] == "exact":
            m["compKeepExactFlip"] = _pct(r["flip_rate"])
        m["compKeepInferenceAcc"] = latex.fmt(r["inference_accuracy"])
    return m


def dependence_table(dep0, published, exact: str = "every companion") -> tuple:
    """The first dependence network beside the published values, every estimate with its interval
    (``exact``: the exact design's row label, :func:`exact_label`)."""

    def theirs(key, b, percent):
        v = published.get(key, {}).get(b)
        return "--" if v is None else (_pct(v) if percent else latex.fmt(v))

    def ours(r):
        return [
            _with_interval(r["flip_rate"], r["flip_rate_ci_low"], r["flip_rate_ci_high"]),
            _with_interval(
                r["train_mode_accuracy"],
                r["train_mode_accuracy_ci_low"],
                r["train_mode_accuracy_ci_high"],
                percent=False,
            ),
            _with_interval(r["ever_flipped"], r["ever_flipped_ci_low"], r["ever_flipped_ci_high"]),
        ]

    rows = []
    for r in dep0[dep0["design"] == "random"].sort_values("batch_size").to_dict("records"):
        b = int(r["batch_size"])
        f, a, e = ours(r)
        rows.append(
            [
                f"random, $b={b}$",
                f,
                theirs("flip_rate", b, True),
                a,
                theirs("train_mode_accuracy", b, False),
                e,
                theirs("ever_flipped", b, True),
            ]
        )
    for r in dep0[dep0["design"] == "exact"].to_dict("records"):
        rows.append(
            [
                f"{exact}, $b=2$",
                _pct(r["flip_rate"]),
                "--",
                latex.fmt(r["train_mode_accuracy"]),
                "--",
                _pct(r["ever_flipped"]),
                "--",
            ]
        )
    published_one_class = _pct(1 - published["one_class_same_label_b16"])
    for design, label in ONE_CLASS:
        for r in dep0[dep0["design"] == design].to_dict("records"):
            b = int(r["batch_size"])
            f, a, e = ours(r)
            pub = published_one_class if design == "any_class" and b == 16 else "--"
            rows.append([f"{label}, $b={b}$", f, pub, a, "--", e, "--"])
    return (
        ["companions", "flip rate [CI]", "publ.", "train-mode acc. [CI]", "publ.", "ever flipped [CI]", "publ."],
        rows,
        "lllllll",
        "Study 1: first dependence network, ours beside the published values",
    )


def networks_table(dep_networks, exact: str = "every companion") -> tuple:
    """Mean over the dependence networks with a t interval over networks, per design and size."""
    rows = []
    order = {d: i for i, d in enumerate(companions.DESIGNS)}
    keys = dep_networks[["design", "batch_size"]].drop_duplicates()
    keys = keys.assign(_o=keys["design"].map(order)).sort_values(["_o", "batch_size"])
    labels = {"random": "random", "exact": exact} | dict(ONE_CLASS)
    for k in keys.itertuples(index=False):
        cells = []
        for measure in MEASURES:
            r = dep_networks[
                (dep_networks["design"] == k.design)
                & (dep_networks["batch_size"] == k.batch_size)
                & (dep_networks["measure"] == measure)
            ].iloc[0]
            cells.append(_with_interval(r["mean"], r["ci_low"], r["ci_high"], measure != "train_mode_accuracy"))
        rows.append([f"{labels[k.design]}, $b={int(k.batch_size)}$", *cells])
    return (
        ["companions", "flip rate [CI]", "train-mode acc. [CI]", "ever flipped [CI]"],
        rows,
        "llll",
        "Study 1: mean over the dependence networks, t interval over networks",
    )


def network_accuracy_macros(dep: pd.DataFrame, confidence: float) -> dict:
    """The dependence networks' inference-mode accuracy, mean over networks with its interval
    (logit scale; ``compNetInferenceAcc``, ``compNetInferenceAccCi``), as fractions: the value the
    text quotes beside the other means over networks (the first network's alone is in its table)."""
    per_network = dep.groupby("seed", sort=True)["inference_accuracy"].first()
    if len(per_network) < 2:
        return {}
    mean, _, lo, hi = stats.share_interval(per_network.tolist(), confidence)
    value, ci = _value_and_interval(mean, lo, hi, percent=False)
    return {"compNetInferenceAcc": value, "compNetInferenceAccCi": ci}


def summarise_all(probes: pd.DataFrame, published: dict, params: dict) -> dict:
    """Everything the rule writes. ``params``: seed, resamples, confidence, examples_per_class,
    batches_per_example, one_class_batch_size."""
    summary = pd.DataFrame(companions.summarise(probes, params["resamples"], params["confidence"], params["seed"]))
    over_seeds = over_networks(summary[summary["network"] == "grid"], params["confidence"])
    dep = summary[summary["network"] == "dependence"]
    dep0 = dep[dep["seed"] == dep["seed"].min()]
    dep_networks = over_networks(dep, params["confidence"])
    keep = summary[summary["network"] == "dependence_keep"]
    result = companions.dependence_json(dep0)
    result["networks"] = {
        f"{r.design}_b{int(r.batch_size)}_{r.measure}": {
            "mean": r.mean,
            "ci": [r.ci_low, r.ci_high],
            "networks": int(r.seeds),
        }
        for r in dep_networks.itertuples(index=False)
    }
    all_macros = macros(probes, dep0, dep_networks, over_seeds, published, params) | keep_macros(keep)
    sizes = sorted(int(b) for b in dep0.loc[dep0["design"] == "random", "batch_size"])
    all_macros |= components_macros(probes, sizes, params["confidence"])
    all_macros |= driven_macros(dep, sizes)
    all_macros |= network_accuracy_macros(dep, params["confidence"])
    all_macros |= end_macros(all_macros, dep0, over_seeds, int(params["one_class_batch_size"]))
    return {
        "summary_table": summary,
        "grid_table": over_seeds,
        "networks_table": dep_networks,
        "summary": result,
        "macros": all_macros,
        "tables": {
            "table": dependence_table(dep0, published, exact_label(params)),
            "networks_latex": networks_table(dep_networks, exact_label(params)),
        },
    }
